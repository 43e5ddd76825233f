"""The portable stage (`portable=True`, `--portable`): forms every ONNX consumer reads, not only onnxruntime.

Each pass rewrites one form that is valid ONNX but that some runtime or tool does not read into an equivalent one
that they do (OpenVINO's ONNX frontend, onnx's reference implementation, onnx2torch, onnxsim, onnxslim), where that
is provably the same computation; a form kept because it is needed (a Reshape whose shape may hold a 0) stays. With
`portable` the pipeline also leaves out the stages that tune the model for onnxruntime's CPU kernels (the Scan forms
of RNN and GRU, time chunks): the model is device-neutral. docs/passes.md#portable-output says what each consumer
refused before.
"""

from ir2onnx.passes.portable.body_shapes import BodyInputShapesPass
from ir2onnx.passes.portable.cast_like import CastLikeAsCastPass
from ir2onnx.passes.portable.empty_constants import EmptyConstantsPass
from ir2onnx.passes.portable.known_ifs import KnownIfsPass
from ir2onnx.passes.portable.opset import LowestOpsetPass
from ir2onnx.passes.portable.pads import ExplicitPadsPass
from ir2onnx.passes.portable.reshape_zero import ReshapeWithoutAllowZeroPass
from ir2onnx.passes.portable.scan_axes import ForwardScanAxesPass
from ir2onnx.passes.portable.scan_captures import ScanCapturesAsStatesPass

__all__ = ["BodyInputShapesPass", "CastLikeAsCastPass", "EmptyConstantsPass", "ExplicitPadsPass", "ForwardScanAxesPass",
           "KnownIfsPass", "LowestOpsetPass", "ReshapeWithoutAllowZeroPass", "ScanCapturesAsStatesPass"]

"""OpenVINO as the reference executor of the original IR (always in f32: no bf16 on capable CPUs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ir2onnx.errors import CheckError
from ir2onnx.verify.worker import F32_CONFIG, from_openvino, port_name, to_openvino


def openvino_available() -> bool:
    try:
        import openvino  # noqa: F401
    except ImportError:
        return False
    return True


def run_openvino(xml_path: str, inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray],
                 bin_path: str | None = None) -> list[np.ndarray]:
    """Outputs of OpenVINO's CPU plugin on the IR, in model output order; inputs by position or by name."""
    try:
        import openvino as ov
    except ImportError as e:
        raise CheckError("openvino is not installed: pip install openvino") from e
    core = ov.Core()
    model = core.read_model(xml_path, bin_path) if bin_path else core.read_model(xml_path)
    compiled = core.compile_model(model, "CPU", F32_CONFIG)
    if isinstance(inputs, Mapping):
        feed = [np.asarray(inputs[port_name(port)]) for port in compiled.inputs]
    else:
        feed = [np.asarray(v) for v in inputs]
    request = compiled.create_infer_request()  # fresh request: reused ones keep stale Loop output shapes
    request.infer([to_openvino(a) for a in feed])
    return [from_openvino(request.get_output_tensor(i)) for i in range(len(compiled.outputs))]

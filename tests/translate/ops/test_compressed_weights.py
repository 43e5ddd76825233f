"""Weight decompression subgraphs as OpenVINO's weight compression writes them: low-precision Const -> Convert ->
Subtract(zero point) -> Multiply(scale) [-> Reshape for group-wise scales] -> MatMul. The weights stay in their
low precision in the ONNX file (4-bit ones packed as ONNX INT4/UINT4) and are decompressed by DequantizeLinear
(passes/compressed_weights.py) in the form onnxruntime fuses with the MatMul into MatMulNBits at load, per output
channel and by groups of 16 and more: the weight is then held packed and never dequantized per call. The sessions
run with the check's options (accuracy level 1: f32 compute; onnxruntime's default, 4, quantizes the activations to
int8, which moved results by 0.28 on 16-wide products)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import openvino as ov
import openvino.opset13 as ops
import pytest

from ir2onnx.verify.onnxruntime_run import ACCURATE_SESSION_CONFIG
from tests.utils import assert_equivalent, rng_inputs, save_ir

F, F16 = np.float32, np.float16
RNG = np.random.default_rng(21)
N, K, GROUP = 6, 32, 16


def _const(et: str, values: np.ndarray) -> Any:
    t = getattr(ov.Type, et)
    if et in ("u3", "u4", "i4", "u6"):
        return ov.op.Constant(t, ov.Shape(list(values.shape)), values.astype(np.float64).reshape(-1).tolist())
    return ops.constant(values.astype(t.to_dtype()))


def _decompressed(et: str, zero_point: bool, group: bool, mid: Any = F16) -> Any:
    """The decompressed [N, K] f32 weight."""
    lo, hi = {"u8": (0, 256), "i8": (-128, 128), "u4": (0, 16), "i4": (-8, 8), "u3": (0, 8), "u6": (0, 64)}[et]
    shape = (N, K // GROUP, GROUP) if group else (N, K)
    qshape = (N, K // GROUP, 1) if group else (N, 1)
    w = ops.convert(_const(et, RNG.integers(lo, hi, shape)), mid)
    if zero_point:
        zp = ops.convert(_const(et, RNG.integers(lo, hi, qshape)), mid)
        w = ops.subtract(w, zp)
    w = ops.multiply(w, ops.constant((RNG.random(qshape) * 0.1 + 0.01).astype(mid)))
    if group:
        w = ops.reshape(w, ops.constant(np.array([N, K], np.int64)), False)
    return ops.convert(w, F) if mid != F else w


CASES = [  # name, type, zero point, groups, the chain's float type, whether onnxruntime fuses it into MatMulNBits
    ("u8-asym-per-channel", "u8", True, False, F16, True),
    ("i8-sym-per-channel", "i8", False, False, F16, True),
    ("i8-sym-f32", "i8", False, False, F, True),
    ("u4-asym-group", "u4", True, True, F16, True),
    ("u4-sym-per-channel", "u4", False, False, F16, True),
    ("i4-sym-group", "i4", False, True, F16, True),
    ("i4-asym-group-f32", "i4", True, True, F, True),
    # 3- and 6-bit weights (OpenVINO's u3/u6: 3-byte groups of 8 / 4 values) are unpacked to uint8; 8-bit blocks need
    # opset 21, which such a model does not otherwise need (the opset is not raised): per call
    ("u3-asym-group", "u3", True, True, F16, False),
    ("u6-asym-per-channel", "u6", True, False, F16, True),
]


def _model(et: str, zp: bool, group: bool, mid: Any) -> Any:
    x = ops.parameter([2, K], F, name="x")
    y = ops.matmul(x, _decompressed(et, zp, group, mid), False, True)
    return ov.Model([y], [x])


def _optimized(proto: onnx.ModelProto, tmp_path: Path) -> onnx.ModelProto:
    """The model as onnxruntime runs it with the check's options, after its graph optimisations."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    for key, value in ACCURATE_SESSION_CONFIG.items():
        options.add_session_config_entry(key, value)
    ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return onnx.load(str(tmp_path / "optimized.onnx"))


@pytest.mark.parametrize(("name", "et", "zp", "group", "mid", "fused"), CASES, ids=[c[0] for c in CASES])
def test_decompression_matches_openvino_and_stays_compact(tmp_path: Path, name: str, et: str, zp: bool, group: bool,
                                                          mid: Any, fused: bool) -> None:
    xml = save_ir(_model(et, zp, group, mid), tmp_path)
    proto = assert_equivalent(xml, rng_inputs([((2, K), F)]), rtol=1e-3, atol=1e-3)
    want = {"u8": onnx.TensorProto.UINT8, "i8": onnx.TensorProto.INT8, "u4": onnx.TensorProto.UINT4,
            "i4": onnx.TensorProto.INT4, "u3": onnx.TensorProto.UINT8, "u6": onnx.TensorProto.UINT8}[et]
    weights = [t for t in proto.graph.initializer if t.dims and int(np.prod(t.dims)) == N * K]
    assert [t.data_type for t in weights] == [want]
    optimized = _optimized(proto, tmp_path).graph.node
    ops = [n.op_type for n in optimized]
    if fused:  # one MatMulNBits computing in f32: nothing dequantized per call
        assert ops.count("MatMulNBits") == 1 and "DequantizeLinear" not in ops and "MatMul" not in ops, ops
        assert [a.i for n in optimized for a in n.attribute if a.name == "accuracy_level"] == [1]
    else:
        assert "MatMulNBits" not in ops and ops.count("DequantizeLinear") == 1, ops
    if et in ("u4", "i4"):
        assert len(weights[0].raw_data) == N * K // 2
        assert proto.opset_import[0].version >= 21


def test_forced_older_opset_unpacks_4bit_weights(tmp_path: Path) -> None:
    xml = save_ir(_model("u4", True, True, F16), tmp_path)
    proto = assert_equivalent(xml, rng_inputs([((2, K), F)]), rtol=1e-3, atol=1e-3, opset=17)
    dtypes = {t.data_type for t in proto.graph.initializer if t.dims and int(np.prod(t.dims)) == N * K}
    assert dtypes == {onnx.TensorProto.UINT8}


def test_4bit_const_with_several_converts_is_packed_once(tmp_path: Path) -> None:
    x = ops.parameter([3], np.uint8, name="x")
    c = ov.op.Constant(ov.Type.u4, ov.Shape([3]), [1, 7, 15])
    y = ops.add(x, ops.convert(c, np.uint8))
    z = ops.concat([ops.convert(c, np.uint8), y], 0)
    proto = assert_equivalent(save_ir(ov.Model([z], [x]), tmp_path), [np.array([1, 2, 3], np.uint8)])
    assert [t.data_type for t in proto.graph.initializer if t.data_type == onnx.TensorProto.UINT4] == [onnx.TensorProto.UINT4]

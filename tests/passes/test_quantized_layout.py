"""passes/quantized_layout.py: quantized groups onnxruntime runs in integers. A Conv's bias becomes int32 on the
grid of x_scale * w_scale (QLinearConv), a grouped convolution's weight reaches its Conv straight from its
DequantizeLinear, and values that only move (MaxPool, a channel shuffle) are quantized again on their own grid (bit
for bit the same values). Judged by what onnxruntime fuses and by the check against OpenVINO."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import openvino.opset13 as ops
import pytest

import ir2onnx
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from ir2onnx.verify.quantized import nudged
from tests.utils import count_ops, ov, save_ir

RNG = np.random.default_rng(11)


def _fq(x, lo: float, hi: float):  # type: ignore[no-untyped-def]
    """256 levels from lo to hi: a u8 grid (zero point integer for the ranges used here)."""
    c = [ops.constant(np.float32(v)) for v in (lo, hi, lo, hi)]
    return ops.fake_quantize(x, *c, 256)


def _weight(shape: tuple[int, ...]):  # type: ignore[no-untyped-def]
    """int8 weights per output channel as openvino.save_model stores NNCF's: Const i8 -> Convert -> Multiply."""
    q = RNG.integers(-127, 128, shape).astype(np.int8)
    scale = RNG.uniform(0.002, 0.01, (shape[0],) + (1,) * (len(shape) - 1)).astype(np.float32)
    return ops.multiply(ops.convert(ops.constant(q), np.float32), ops.constant(scale))


def _conv_block(x, cin: int, cout: int, relu: bool, group: int = 1):  # type: ignore[no-untyped-def]
    if group == 1:
        y = ops.convolution(x, _weight((cout, cin, 3, 3)), [1, 1], [1, 1], [1, 1], [1, 1])
    else:
        w = ops.reshape(_weight((cout, cin // group, 3, 3)), ops.constant(np.array(
            [group, cout // group, cin // group, 3, 3], np.int64)), False)
        y = ops.group_convolution(x, w, [1, 1], [1, 1], [1, 1], [1, 1])
    y = ops.add(y, ops.constant(RNG.uniform(-0.5, 0.5, (1, cout, 1, 1)).astype(np.float32)))
    return ops.relu(y) if relu else y


def _network() -> ov.Model:
    """FQ -> Conv+bias+Relu -> FQ -> MaxPool -> Conv+bias -> FQ -> channel shuffle -> grouped Conv+bias -> FQ."""
    x = ops.parameter([1, 4, 12, 12], np.float32, name="x")
    y = _fq(_conv_block(_fq(x, -2.0, 2.0 * 127 / 128), 4, 8, relu=True), 0.0, 4.0)
    y = ops.max_pool(y, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2]).output(0)
    y = _fq(_conv_block(y, 8, 8, relu=False), -4.0, 4.0 * 127 / 128)
    y = ops.reshape(y, ops.constant(np.array([1, 2, 4, 6, 6], np.int64)), False)
    y = ops.reshape(ops.transpose(y, ops.constant(np.array([0, 2, 1, 3, 4], np.int64))),
                    ops.constant(np.array([1, 8, 6, 6], np.int64)), False)
    y = _fq(_conv_block(y, 8, 8, relu=True, group=2), 0.0, 4.0)
    return ov.Model([y], [x], "quantized")


def _fused(proto: onnx.ModelProto, tmp_path: Path) -> list[str]:
    """The ops onnxruntime runs after its optimisations."""
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return [n.op_type for n in onnx.load(str(tmp_path / "optimized.onnx")).graph.node]


def test_convolutions_run_in_integers_and_the_check_passes(tmp_path: Path) -> None:
    xml = save_ir(_network(), tmp_path)
    proto = ir2onnx.convert(xml)
    onnx.checker.check_model(proto, full_check=True)
    plain = ir2onnx.convert(xml, skip_passes=["QuantizedLayoutPass"])
    assert _fused(plain, tmp_path).count("QLinearConv") == 0
    ops_run = _fused(proto, tmp_path)
    assert ops_run.count("QLinearConv") == 3 and "Conv" not in ops_run and "FusedConv" not in ops_run, ops_run
    biases = [t for t in proto.graph.initializer if t.data_type == onnx.TensorProto.INT32]
    assert len(biases) == 3 and count_ops(proto, "Add") == 0
    x = RNG.uniform(-2, 2, (1, 4, 12, 12)).astype(np.float32)
    for seed in range(2):
        report = ir2onnx.check(xml, proto, seed=seed)
        assert report.passed, report
    report = ir2onnx.check(xml, proto, inputs={"x": x}, layerwise=True)
    assert report.passed and report.layerwise is not None
    assert report.layerwise.innermost_divergence() is None  # (a biased Conv is no longer the IR's Convolution)


def test_requantizing_moved_values_changes_no_value(tmp_path: Path) -> None:
    """Without the biases (left to the Add), the pass's other rewrites give onnxruntime's outputs bit for bit."""
    import ir2onnx.passes.quantized_layout as layout

    xml = save_ir(_network(), tmp_path)
    plain = ir2onnx.convert(xml, skip_passes=["QuantizedLayoutPass"])
    keep = layout._bias_into_conv
    layout._bias_into_conv = lambda *a: False  # type: ignore[assignment]
    try:
        moved = ir2onnx.convert(xml)
    finally:
        layout._bias_into_conv = keep  # type: ignore[assignment]
    assert count_ops(moved, "QuantizeLinear") > count_ops(plain, "QuantizeLinear")
    for seed in range(4):
        x = np.random.default_rng(seed).uniform(-3, 3, (1, 4, 12, 12)).astype(np.float32)
        np.testing.assert_array_equal(run_onnxruntime(moved, {"x": x})[0], run_onnxruntime(plain, {"x": x})[0])


def test_a_bias_whose_result_is_not_quantized_stays_an_add(tmp_path: Path) -> None:
    x = ops.parameter([1, 4, 8, 8], np.float32, name="x")
    y = ops.sigmoid(_conv_block(_fq(x, -2.0, 2.0 * 127 / 128), 4, 4, relu=False))
    xml = save_ir(ov.Model([y], [x], "float_after"), tmp_path)
    proto = ir2onnx.convert(xml)
    assert count_ops(proto, "Add") == 1
    assert not [t for t in proto.graph.initializer if t.data_type == onnx.TensorProto.INT32]


@pytest.mark.parametrize("sign", [1, -1])
def test_the_checks_nudged_runs_compute_the_irs_bias(tmp_path: Path, sign: int) -> None:
    """The nudged copies the check runs give each Conv with an int32 bias the IR's own bias (kept in its metadata):
    within half a step of the int32 one, and not equal to it."""
    proto = ir2onnx.convert(save_ir(_network(), tmp_path))
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    producers = {o: n for n in proto.graph.node for o in n.output}
    copy = nudged(proto, sign)
    consts = {n.output[0]: onnx.numpy_helper.to_array(n.attribute[0].t) for n in copy.graph.node
              if n.op_type == "Constant"}
    convs = [(a, b) for a, b in zip(proto.graph.node, [n for n in copy.graph.node if n.op_type != "Constant"
                                                        and not n.output[0].startswith("ir2onnx_tie_nudged")])
             if a.op_type == "Conv"]
    assert len(convs) == 3
    for conv, nudged_conv in convs:
        dq = producers[conv.input[2]]
        step = inits[dq.input[1]]
        rounded = inits[dq.input[0]].astype(np.float64) * step
        exact = consts[nudged_conv.input[2]]
        assert np.all(np.abs(exact - rounded) <= step / 2 * (1 + 1e-6)) and not np.array_equal(exact, rounded)

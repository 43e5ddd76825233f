"""FakeQuantize in ONNX's quantized form (`quantization="onnx"`): QuantizeLinear + DequantizeLinear where its grid is
an 8-bit integer one, DequantizeLinear of stored integers on constant inputs, today's exact composition elsewhere.
Outputs are judged in quantization steps against OpenVINO computing the IR's math."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
import openvino.opset13 as ops
import pytest

import ir2onnx
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.utils import count_ops, ov, save_ir

EXACT_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "LP_TRANSFORMS_MODE": False,
                "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"}


def _ov(xml: Path, x: np.ndarray) -> np.ndarray:
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), "CPU", EXACT_CONFIG)
    return compiled([x])[compiled.outputs[0]]


def _fq(x, lo, hi, levels, out=None):  # type: ignore[no-untyped-def]
    out_lo, out_hi = out if out is not None else (lo, hi)
    c = [ops.constant(np.asarray(v, np.float32)) for v in (lo, hi, out_lo, out_hi)]
    return ops.fake_quantize(x, *c, levels)


def _activation(shape: tuple[int, ...], lo, hi, levels: int, out=None):  # type: ignore[no-untyped-def]
    x = ops.parameter(list(shape), np.float32, name="x")
    return ov.Model([_fq(x, lo, hi, levels, out)], [x], "fq")


def _conv_with_quantized_weights() -> ov.Model:
    """A Convolution whose input and weights pass FakeQuantize: u8 activations (256 levels), i8-like weights per
    output channel (255 levels, symmetric)."""
    rng = np.random.default_rng(3)
    x = ops.parameter([1, 3, 8, 8], np.float32, name="x")
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    amax = np.abs(w).max(axis=(1, 2, 3), keepdims=True)
    xq = _fq(x, -2.0, 2.0 * 127 / 128, 256)  # zero point 128: an integer grid
    wq = _fq(ops.constant(w), -amax, amax, 255)
    y = ops.convolution(xq, wq, [1, 1], [1, 1], [1, 1], [1, 1])
    return ov.Model([y], [x], "conv")


STEP_2 = 2.0 / 255  # the activation grid of -1..1 over 256 levels


@pytest.mark.parametrize(("name", "build", "qdq", "step"), [
    ("per-tensor u8", lambda: _activation((2, 16), -1.0, 1.0 * 127 / 128, 256), (1, 1), 1.0 / 128),
    ("per-tensor, output grid shifted", lambda: _activation((2, 16), 0.0, 2.55, 256, (-1.28, 1.27)), (1, 1), 0.01),
    ("per-channel u8", lambda: _activation((2, 3, 4), np.array([-1, -2, -0.5], np.float32).reshape(3, 1) * 128 / 128,
                                           np.array([1, 2, 0.5], np.float32).reshape(3, 1) * 127 / 128, 256),
     (1, 1), 2.0 / 128),
    ("255 levels on a run-time input: exact", lambda: _activation((4, 8), -1.27, 1.27, 255), (0, 0), 0.0),
    ("conv, quantized weights", _conv_with_quantized_weights, (1, 2), None),
    ("16 levels as uint4", lambda: _activation((2, 16), -1.0, 0.875, 16), (1, 1), 0.125),
    ("16 levels, no integer zero point: exact", lambda: _activation((2, 16), -1.0, 1.0, 16), (0, 0), 0.0),
    ("no integer zero point: exact", lambda: _activation((2, 16), -0.3, 1.0, 256), (0, 0), 0.0),
], ids=lambda v: v if isinstance(v, str) else "")
def test_fake_quantize_as_qdq(tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str, build, qdq, step) -> None:  # type: ignore[no-untyped-def]
    xml = save_ir(build(), tmp_path)
    with caplog.at_level(logging.INFO, logger="ir2onnx"):
        proto = ir2onnx.convert(xml, quantization="onnx")
    assert (count_ops(proto, "QuantizeLinear"), count_ops(proto, "DequantizeLinear")) == qdq
    assert "FakeQuantize layers:" in caplog.text
    shape = [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(0).uniform(-3, 3, shape).astype(np.float32)
    got = run_onnxruntime(proto, {proto.graph.input[0].name: x})[0]
    want = _ov(xml, x)
    assert got.shape == want.shape and got.dtype == want.dtype
    if step is None:  # through a Convolution: one step of the input grid times the weights' sum, at most
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=0.05)
    elif step == 0.0:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    else:
        err = np.abs(got - want) / step
        assert err.max() <= 1.0 + 1e-3, f"{err.max():.3f} quantization steps off"
        assert (err > 1e-3).mean() < 0.01, "more than 1% of the values off by a step"


def test_quantized_weights_are_stored_as_8_bit_integers(tmp_path: Path) -> None:
    xml = save_ir(_conv_with_quantized_weights(), tmp_path)
    proto = ir2onnx.convert(xml, quantization="onnx")
    weights = [i for i in proto.graph.initializer if len(i.dims) == 4]
    assert [w.data_type for w in weights] == [3]  # INT8
    exact = ir2onnx.convert(xml, quantization="exact")
    assert count_ops(exact, "QuantizeLinear") == count_ops(exact, "DequantizeLinear") == 0


def test_4_bit_grids_as_int4_and_uint4(tmp_path: Path) -> None:
    """16 levels (activations) and 15 (narrow, weights) as ONNX's 4-bit types, at opset 21 (chosen for them); at a
    lower opset the user asks for, OpenVINO's arithmetic."""
    rng = np.random.default_rng(5)
    x = ops.parameter([2, 16], np.float32, name="x")
    w = rng.standard_normal((4, 16)).astype(np.float32)
    amax = np.abs(w).max(axis=1, keepdims=True)
    y = ops.matmul(_fq(x, -1.0, 0.875, 16), _fq(ops.constant(w), -amax, amax, 15), False, True)
    xml = save_ir(ov.Model([y], [x], "fq4"), tmp_path)
    proto = ir2onnx.convert(xml)
    assert proto.opset_import[0].version == 21
    assert (count_ops(proto, "QuantizeLinear"), count_ops(proto, "DequantizeLinear")) == (1, 2)
    types = {t.data_type for t in proto.graph.initializer}
    assert {onnx.TensorProto.INT4, onnx.TensorProto.UINT4} <= types
    feed = rng.uniform(-1.5, 1.5, (2, 16)).astype(np.float32)
    assert ir2onnx.check(xml, proto, inputs={"x": feed}).passed
    lower = ir2onnx.convert(xml, opset=17)
    assert count_ops(lower, "QuantizeLinear") == count_ops(lower, "DequantizeLinear") == 0
    np.testing.assert_allclose(run_onnxruntime(lower, {"x": feed})[0], _ov(xml, feed), rtol=1e-5, atol=1e-5)


def test_an_unknown_quantization_is_refused(tmp_path: Path) -> None:
    xml = save_ir(_activation((2, 4), -1.0, 1.0, 256), tmp_path)
    with pytest.raises(ir2onnx.ConversionError, match="unknown quantization 'int4'"):
        ir2onnx.convert(xml, quantization="int4")


def test_the_check_judges_a_quantized_output_in_steps(tmp_path: Path) -> None:
    """An output a DequantizeLinear produces is compared in steps of its scale: a value at a rounding tie, where
    QuantizeLinear and OpenVINO's formula round apart, is one step off and the check still passes, saying so."""
    step = 1.0 / 128
    xml = save_ir(_activation((1, 4), -1.0, 1.0 * 127 / 128, 256), tmp_path)
    proto = ir2onnx.convert(xml, quantization="onnx")
    # just past a tie: x / step is 20.5 and -7.5 plus one f32 ulp, where x * 128 + 128 rounds to the tie itself
    ties = np.array([[0.16015626, -0.050781254, 0.5 * step, 0.25]], np.float32)
    report = ir2onnx.check(xml, proto, inputs={"x": ties})
    (row,) = report.outputs
    assert report.passed and row.passed
    assert row.quantization_steps is not None and 0.5 < row.quantization_steps <= 1.0 + 1e-3  # one step apart
    assert "quantization steps" in row.message
    dq = next(n for n in proto.graph.node if n.op_type == "DequantizeLinear")
    proto.graph.initializer.append(onnx.numpy_helper.from_array(np.float32(step * 1.25), "wrong_scale"))
    dq.input[1] = "wrong_scale"  # a wrong conversion: the output grid 1.25 times too coarse
    report = ir2onnx.check(xml, proto, inputs={"x": ties})
    (row,) = report.outputs
    assert not report.passed and row.quantization_steps is not None and row.quantization_steps > 1


def test_info_and_the_log_count_the_forms(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from ir2onnx.cli import run as main

    xml = save_ir(_conv_with_quantized_weights(), tmp_path)
    assert main(["info", str(xml)]) == 0
    said = capsys.readouterr().out
    assert ("FakeQuantize with --quantization onnx: 1 as DequantizeLinear of stored integers; "
            "1 as QuantizeLinear/DequantizeLinear") in said.replace("\n", " ")
    with caplog.at_level(logging.INFO, logger="ir2onnx"):
        ir2onnx.convert(xml, quantization="onnx")
    assert "FakeQuantize layers: 1 as DequantizeLinear of stored integers, 1 as QuantizeLinear/DequantizeLinear" \
        in caplog.text
    xml = save_ir(_activation((2, 16), -1.0, 1.0, 16), tmp_path / "other")
    assert main(["info", str(xml)]) == 0
    assert "1 kept exact: no integer zero point" in capsys.readouterr().out


def test_the_check_explains_a_tie_flip_downstream_and_still_catches_a_wrong_weight(tmp_path: Path) -> None:
    """A quantized input past a rounding tie moves a MatMul's output by a step times its weights: the check judges
    that against how far rounding at ties moves the output (nudged runs) and passes; a changed weight still fails."""
    w = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    x = ops.parameter([1, 4], np.float32, name="x")
    y = ops.matmul(_fq(x, -1.0, 1.0 * 127 / 128, 256), ops.constant(w), False, False)
    xml = save_ir(ov.Model([y], [x], "fq_matmul"), tmp_path)
    proto = ir2onnx.convert(xml)  # the default: quantization="onnx"
    assert count_ops(proto, "QuantizeLinear") == 1
    feed = {"x": np.array([[0.16015626, -0.050781254, 0.3, -0.7]], np.float32)}  # two values just past a tie
    got = run_onnxruntime(proto, feed)[0]
    assert np.abs(got - _ov(xml, feed["x"])).max() > 1e-3, "no tie flip: the test shows nothing"
    report = ir2onnx.check(xml, proto, inputs=feed)
    assert report.passed, report.outputs
    assert "rounding at quantization ties" in report.outputs[0].message
    weight = next(t for t in proto.graph.initializer if list(t.dims) == [4, 3])
    weight.CopyFrom(onnx.numpy_helper.from_array(w * np.float32(1.01), weight.name))  # a wrong conversion
    assert not ir2onnx.check(xml, proto, inputs=feed).passed


def test_layerwise_names_no_divergence_on_a_tie_flip(tmp_path: Path) -> None:
    w = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    x = ops.parameter([1, 4], np.float32, name="x")
    y = ops.relu(ops.matmul(_fq(x, -1.0, 1.0 * 127 / 128, 256), ops.constant(w), False, False))
    xml = save_ir(ov.Model([y], [x], "fq_matmul"), tmp_path)
    feed = {"x": np.array([[0.16015626, -0.050781254, 0.3, -0.7]], np.float32)}
    report = ir2onnx.check(xml, inputs=feed, layerwise=True)
    assert report.passed and report.layerwise is not None
    assert report.layerwise.first_divergence is None
    assert {lc.type for lc in report.layerwise.layers} >= {"FakeQuantize", "MatMul"}

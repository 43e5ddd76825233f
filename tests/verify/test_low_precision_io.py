"""The check runs models whose inputs or outputs are bfloat16: both runtimes' Python bindings take such arrays only
as raw bytes of their type (onnxruntime refuses ml_dtypes arrays, OpenVINO reads them as numbers to convert and
shows its results as float16 bits), default inputs are random numbers, and an .npz stores them as raw bytes."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import openvino as ov
import openvino.opset13 as ops

import ir2onnx
from ir2onnx.ir import load
from ir2onnx.verify.compare import compare_output
from ir2onnx.verify.inputs import default_inputs
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.utils import save_ir

BF16 = ml_dtypes.bfloat16


def _bf16_in(tmp_path: Path) -> Path:
    x = ops.parameter([2, 3], ov.Type.bf16, name="x")
    return save_ir(ov.Model([ops.tanh(x)], [x]), tmp_path)


def _bf16_out(tmp_path: Path) -> Path:
    x = ops.parameter([2, 3], np.float32, name="x")
    return save_ir(ov.Model([ops.convert(ops.tanh(x), ov.Type.bf16)], [x]), tmp_path)


def test_bf16_input_default_values_are_random_and_the_check_passes(tmp_path: Path) -> None:
    xml = _bf16_in(tmp_path)
    model, weights = load(str(xml))
    proto = ir2onnx.convert(xml)
    feed, infos, _ = default_inputs(proto, model, weights, 0)
    assert feed["x"].dtype == BF16 and np.unique(feed["x"].astype(np.float32)).size == 6
    assert infos[0].source == "random normal"
    report = ir2onnx.check(xml, proto)
    assert report.passed, report
    # tanh rounded once to bf16 in both; OpenVINO's own rounding on CPUs without bf16 instructions: a unit apart
    assert report.outputs[0].max_abs_error <= 2.0**-8


def test_bf16_output_is_numpys_rounding_and_openvinos_within_a_unit(tmp_path: Path) -> None:
    """tanh(0.640625) = 0.565325: numpy's round-to-nearest bf16 is 0.56640625; OpenVINO's CPU plugin gives that or,
    with its own rounding where the CPU has no bf16 instructions, 0.5625. The model must give numpy's value."""
    xml = _bf16_in(tmp_path)
    x = np.array([[0.640625, -0.53515625, 0.125], [1.5, -3.0, 0.0]], np.float32).astype(BF16)
    got = run_onnxruntime(ir2onnx.convert(xml), {"x": x})[0]
    exact = np.tanh(x.astype(np.float64)).astype(np.float32).astype(BF16)
    assert got.dtype == BF16 and got.view(np.uint16).tolist() == exact.view(np.uint16).tolist()
    assert ir2onnx.check(xml, inputs={"x": x}).passed
    wrong = compare_output("y", exact, (exact.astype(np.float32) + 2 * 2.0**-8).astype(BF16), 1e-5, 1e-6)
    assert not wrong.passed  # two units apart


def test_bf16_outputs_are_compared_as_bf16(tmp_path: Path) -> None:
    xml = _bf16_out(tmp_path)
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    report = ir2onnx.check(xml, inputs={"x": x})
    assert report.passed, report
    assert report.outputs[0].dtype == "bfloat16" and report.outputs[0].max_abs_error <= 2.0**-8  # a unit below 1
    got = run_onnxruntime(ir2onnx.convert(xml), {"x": x})[0]
    assert got.tobytes() == np.tanh(x).astype(BF16).tobytes()  # rounded to nearest, as numpy does


def test_bf16_inputs_from_an_npz(tmp_path: Path) -> None:
    """np.savez keeps bfloat16 as raw 2-byte records ('V2'); they are read back as bfloat16."""
    xml = _bf16_in(tmp_path)
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3).astype(BF16)
    np.savez(tmp_path / "in.npz", x=x)
    with np.load(tmp_path / "in.npz") as data:
        assert data["x"].dtype.kind == "V"
    report = ir2onnx.check(xml, inputs=tmp_path / "in.npz")
    assert report.passed, report
    assert report.inputs[0].dtype == "bfloat16"


def test_float8_outputs_keep_their_type(tmp_path: Path) -> None:
    """Conversions to f8e4m3 / f8e5m2 (held in f32 inside the model) are outputs of their own ONNX type; float8_e5m2
    arrays even claim numpy's kind 'f' and must still travel as raw bytes."""
    x = ops.parameter([2, 3], np.float32, name="x")
    xml = save_ir(ov.Model([ops.convert(ops.tanh(x), ov.Type.f8e4m3), ops.convert(x, ov.Type.f8e5m2)], [x]), tmp_path)
    report = ir2onnx.check(xml)
    assert report.passed, report
    assert [o.dtype for o in report.outputs] == ["float8_e4m3fn", "float8_e5m2"]
    assert [o.max_abs_error for o in report.outputs] == [0.0, 0.0]

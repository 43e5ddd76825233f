"""Static shapes on request (`--input NAME[1,3,224,224]`, `input_shapes=`): IRs with free dimensions, converted for
given shapes, give models whose inputs and outputs are static, whose shape arithmetic is folded (no Shape node,
no If that chose a form by size), and whose outputs are OpenVINO's on the IR reshaped to those shapes; bad spellings,
unknown inputs and contradictions are one clear error (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import ir2onnx
from ir2onnx import cli
from ir2onnx.errors import ConversionError
from ir2onnx.verify.compare import compare_output
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from ir2onnx.verify.worker import F32_CONFIG
from tests.fixture_paths import fixture_dir
from tests.utils import ATOL, ov, rng_inputs, save_ir

ops = pytest.importorskip("openvino.opset13")
ROOT = Path(__file__).resolve().parents[2]
SHAPE_OPS = ("Shape", "Size", "If")


def _cnn() -> object:
    """[?,3,?,?] image -> Conv -> Relu, then OpenVINO's shape arithmetic: ShapeOf -> Gather -> ReduceProd -> Concat
    -> Reshape to [N, 8, H*W], an adaptive pooling to (1, W) whose size is ShapeOf -> Gather -> Concat (its ONNX form
    chooses at run time), a special-zero Reshape [0, -1]."""
    rng = np.random.default_rng(0)
    x = ops.parameter([-1, 3, -1, -1], np.float32, name="image")
    r = ops.relu(ops.convolution(x, ops.constant(rng.standard_normal((8, 3, 3, 3)).astype(np.float32)),
                                 [1, 1], [1, 1], [1, 1], [1, 1]))
    s = ops.shape_of(r)
    n = ops.gather(s, ops.constant(np.array([0], np.int64)), ops.constant(np.int64(0)))
    hw = ops.reduce_prod(ops.gather(s, ops.constant(np.array([2, 3], np.int64)), ops.constant(np.int64(0))),
                         ops.constant(np.array([0], np.int64)), keep_dims=True)
    flat = ops.reshape(r, ops.concat([n, ops.constant(np.array([8], np.int64)), hw], 0), special_zero=False)
    m = ops.reduce_mean(flat, ops.constant(np.array([2], np.int64)), keep_dims=False)
    probs = ops.softmax(ops.matmul(m, ops.constant(rng.standard_normal((8, 5)).astype(np.float32)), False, False), 1)
    width = ops.gather(s, ops.constant(np.array([3], np.int64)), ops.constant(np.int64(0)))
    pooled = ops.adaptive_avg_pool(r, ops.concat([ops.constant(np.array([1], np.int64)), width], 0))
    features = ops.reshape(pooled, ops.constant(np.array([0, -1], np.int64)), special_zero=True)
    probs.output(0).get_tensor().set_names({"probs"})
    features.output(0).get_tensor().set_names({"features"})
    return ov.Model([probs, features], [x], "cnn")


def _ti_lstm() -> object:
    """samples/ti_lstm (TensorIterator over LSTMCell) with a free batch and sequence length."""
    model = ov.Core().read_model(str(ROOT / "samples" / "ti_lstm" / "model.xml"))
    model.reshape({p: ov.PartialShape([-1, -1, 64] if p.get_partial_shape().rank.get_length() == 3 else [-1, 32])
                   for p in model.inputs})
    return model


def _torch_for_loop() -> object:
    """A PyTorch for loop over the second dimension (a Loop whose trip count is that dimension, read at run time)."""
    return ov.Core().read_model(str(fixture_dir("torch_for_loop") / "model.xml"))


def _openvino_reshaped(xml: Path, shapes: dict[str, list[int]], inputs: list[np.ndarray]) -> list[np.ndarray]:
    core = ov.Core()
    model = core.read_model(str(xml))
    model.reshape({name: ov.PartialShape(dims) for name, dims in shapes.items()})
    assert all(p.get_partial_shape().is_static for p in model.outputs)
    request = core.compile_model(model, "CPU", F32_CONFIG).create_infer_request()
    request.infer(inputs)
    return [np.array(request.get_output_tensor(i).data) for i in range(len(model.outputs))]


def _static_dims(vi: onnx.ValueInfoProto) -> list[int] | None:
    dims = vi.type.tensor_type.shape.dim
    return [d.dim_value for d in dims] if all(d.HasField("dim_value") for d in dims) else None


CASES = {  # name: (model, given shapes (None: the IR's dims), the resulting shapes, ONNX ops the conversion keeps)
    "cnn": (_cnn, {"image": [2, None, 16, 12]}, {"image": [2, 3, 16, 12]}, {"Conv": 1}),
    "torch_for_loop": (_torch_for_loop, [[2, 5, 3]], {"x.1": [2, 5, 3]}, {"Loop": 1}),
    "ti_lstm": (_ti_lstm, {"X": [1, 7, 64], "H0": [1, 32], "C0": [1, 32]},
                {"X": [1, 7, 64], "H0": [1, 32], "C0": [1, 32]}, {"LSTM": 1}),
}


@pytest.mark.parametrize("optimize", [True, False], ids=["optimized", "plain"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_static_model_equals_reshaped_openvino(tmp_path: Path, case: str, optimize: bool) -> None:
    make, given, shapes, kept = CASES[case]
    xml = save_ir(make(), tmp_path)
    proto = ir2onnx.convert(xml, input_shapes=given, optimize=optimize, fuse=optimize)
    onnx.checker.check_model(proto, full_check=True)
    assert {i.name: _static_dims(i) for i in proto.graph.input} == shapes
    assert all(_static_dims(o) is not None for o in proto.graph.output), [str(o.type) for o in proto.graph.output]
    ops_left = [n.op_type for n in proto.graph.node]
    assert not set(ops_left) & set(SHAPE_OPS), ops_left  # the arithmetic became constants, the If its branch
    if optimize:
        assert all(ops_left.count(op) == n for op, n in kept.items()), ops_left
    inputs = rng_inputs([(tuple(d), np.float32) for d in shapes.values()])
    ref = _openvino_reshaped(xml, shapes, inputs)
    got = run_onnxruntime(proto, dict(zip(shapes, inputs)))
    for out, g, r in zip(proto.graph.output, got, ref):
        assert list(g.shape) == _static_dims(out)
        c = compare_output(out.name, g, r, 1e-5, ATOL)
        assert c.passed, f"{out.name}: {c.message} (max abs {c.max_abs_error})"
    if case == "cnn" and optimize:  # without the shapes the model computes them at run time
        assert {"Shape", "If"} <= {n.op_type for n in ir2onnx.convert(xml).graph.node}


def test_command_line_static_model_and_check(tmp_path: Path) -> None:
    xml = save_ir(_ti_lstm(), tmp_path)
    out = tmp_path / "m.onnx"
    r = subprocess.run([sys.executable, "-m", "ir2onnx", "convert", str(xml), "-o", str(out), "--input",
                        "X[1,5,64]", "--input", "H0[1,32],C0[1,?]", "--check", "-q"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[1, 5, 64]" in r.stdout and "check passed" in r.stdout
    proto = onnx.load(str(out), load_external_data=False)
    assert [_static_dims(v) for v in (*proto.graph.input, *proto.graph.output)] == [[1, 5, 64], [1, 32], [1, 32],
                                                                                    [1, 5, 32]]


def test_unnamed_shape_and_dimensions_kept(tmp_path: Path) -> None:
    xml = save_ir(_cnn(), tmp_path)
    proto = ir2onnx.convert(xml, input_shapes=[[1, 3, None, 9]], optimize=False, fuse=False)
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_value if d.HasField("dim_value") else None for d in dims] == [1, 3, None, 9]


@pytest.mark.parametrize(("argv", "message"), [
    (["image[1,3,8"], "'[' without its ']'"),
    (["image=1,3,8,8"], "no shape in brackets"),
    (["in.npz"], "given with --inputs"),
    (["image[1..4,3,8,8]"], "'1..4' is a range"),
    (["image[1,x,8,8]"], "'x' is not a dimension"),
    (["image[1,3,8,8]", "[1,3,8,8]"], "either every shape names its input"),
    (["photo[1,3,8,8]"], "no input of that name (its inputs: image[?,3,?,?])"),
    (["image[1,4,8,8]"], "dimension 1 is 3 in the IR"),
    (["image[1,3,8]"], "the input has rank 4"),
    (["[1,3,8,8]", "[1,3,8,8]"], "2 shape(s) without names, for a model of 1 input(s)"),
], ids=["unclosed", "no-brackets", "npz", "range", "not-a-dim", "mixed", "unknown", "contradiction", "rank",
        "count"])
def test_bad_input_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                      message: str) -> None:
    xml = save_ir(_cnn(), tmp_path)
    code = cli.run(["convert", str(xml), "-o", str(tmp_path / "m.onnx"), *(a for s in argv for a in ("--input", s))])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == cli.EXIT_BAD_INPUT
    assert len(err) == 1 and err[0].startswith("error: --input") and message in err[0], err
    assert not (tmp_path / "m.onnx").exists()


def test_api_refuses_bounds_and_bad_values(tmp_path: Path) -> None:
    model = ov.Model([ops.relu(p := ops.parameter(ov.PartialShape("[1..4,3]"), np.float32, name="x"))], [p], "m")
    xml = save_ir(model, tmp_path)
    with pytest.raises(ConversionError, match=r"dimension 0 is bounded to 1\.\.4"):
        ir2onnx.convert(xml, input_shapes={"x": [5, 3]})
    with pytest.raises(ConversionError, match="not a dimension"):
        ir2onnx.convert(xml, input_shapes={"x": [2.5, 3]})
    proto = ir2onnx.convert(xml, input_shapes={"x": [np.int64(4), -1]})  # numpy's ints; -1 as ? (ovc's spelling)
    assert _static_dims(proto.graph.input[0]) == [4, 3]


def test_check_runs_the_ir_as_it_is_where_openvino_fails_on_it_reshaped() -> None:
    """OpenVINO 2026.4's CPU plugin fails on a Keras encoder-decoder's Loop once the IR is reshaped to static shapes
    ("object is not initialized"); the check then runs the IR as it is on inputs of the model's shapes, and says so."""
    xml = fixture_dir("tf_lstm_seq2seq") / "model.xml"
    inputs = dict(np.load(fixture_dir("tf_lstm_seq2seq") / "inputs.npz"))
    proto = ir2onnx.convert(xml, input_shapes={name: list(a.shape) for name, a in inputs.items()})
    report = ir2onnx.check(xml, proto, inputs=inputs)
    assert report.passed, report.to_dict()
    assert any("could not run the IR reshaped" in note for note in report.notes), report.notes

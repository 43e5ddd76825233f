"""Default check inputs exercise the model: dynamic sizes the weights accept, loops that run several iterations,
indices in range, boolean scalars that both runtimes take, and a note for inputs no default suits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

import ir2onnx
from ir2onnx.ir import load
from ir2onnx.verify.inputs import default_inputs
from tests.fixture_paths import fixture_dir
from tests.translate.control_flow.builders import loop_model
from tests.utils import save_ir


def _inputs(xml: Path, seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, str], list[str]]:
    model, weights = load(str(xml))
    feed, infos, notes = default_inputs(ir2onnx.convert(xml), model, weights, seed)
    return feed, {i.name: i.source for i in infos}, notes


def rnn_all_dynamic() -> ov.Model:
    """TensorIterator over LSTMCell whose input is dynamic in every dimension: the weights need 8 features."""
    rng = np.random.default_rng(0)
    X = ops.parameter([-1, -1, -1], np.float32, name="X")
    H = ops.parameter([-1, 5], np.float32, name="H0")
    C = ops.parameter([-1, 5], np.float32, name="C0")
    bx = ops.parameter([-1, 1, -1], np.float32, name="x_t")
    bh = ops.parameter([-1, 5], np.float32, name="h")
    bc = ops.parameter([-1, 5], np.float32, name="c")
    w = ops.constant(rng.standard_normal((20, 8)).astype(np.float32))
    r = ops.constant(rng.standard_normal((20, 5)).astype(np.float32))
    b = ops.constant(rng.standard_normal(20).astype(np.float32))
    cell = ops.lstm_cell(ops.squeeze(bx, [1]), bh, bc, w, r, b, 5)
    r_h, r_c = ops.result(cell.output(0)), ops.result(cell.output(1))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_h, r_c], [bx, bh, bc]))
    ti.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(bh, H.output(0), r_h.output(0))
    ti.set_merged_input(bc, C.output(0), r_c.output(0))
    return ov.Model([ti.get_iter_value(r_h.output(0), -1)], [X, H, C])


def matmul_dynamic() -> ov.Model:
    X = ops.parameter([-1, -1], np.float32, name="X")
    return ov.Model([ops.relu(ops.matmul(X, ops.constant(np.ones((7, 2), np.float32)), False, False))], [X])


def loop_bound_in_body() -> ov.Model:
    """Loop without trip count: the body runs while `i < n`, n an integer model input (a for loop from PyTorch)."""
    X = ops.parameter([2], np.float32, name="X")
    N = ops.parameter([], np.int32, name="n")
    it = ops.parameter([], np.int32, name="i")
    bn = ops.parameter([], np.int32, name="bn")
    bs = ops.parameter([2], np.float32, name="bs")
    ns = ops.add(ops.multiply(bs, ops.constant(np.float32(0.5))), ops.constant(np.float32(1)))
    cond = ops.less(ops.add(it, ops.constant(np.int32(1))), bn)
    r_c, r_s, r_y = ops.result(cond), ops.result(ns), ops.result(ops.unsqueeze(ns, 0))
    loop = ops.loop(ops.constant(np.int64(-1)), ops.constant(True))
    loop.set_function(ov.Model([r_c, r_s, r_y], [it, bn, bs]))
    loop.set_special_body_ports([0, 0])
    loop.set_invariant_input(bn, N.output(0))
    loop.set_merged_input(bs, X.output(0), r_s.output(0))
    return ov.Model([loop.get_iter_value(r_s.output(0), -1), loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0)],
                    [X, N])


def gather_topk_range_divide() -> ov.Model:
    X = ops.parameter([6, 4], np.float32, name="X")
    idx = ops.parameter([5], np.int64, name="idx")
    k = ops.parameter([], np.int64, name="k")
    start = ops.parameter([], np.int64, name="start")
    stop = ops.parameter([], np.int64, name="stop")
    num = ops.parameter([3], np.int32, name="num")
    den = ops.parameter([3], np.int32, name="den")
    g = ops.gather(X, idx, ops.constant(np.int64(0)))
    top = ops.topk(X, k, 1, "max", "value")
    rng = ops.range(start, stop, ops.constant(np.int64(1)), "i64")
    div = ops.divide(num, den)
    return ov.Model([g.output(0), top.output(0), rng.output(0), div.output(0)], [X, idx, k, start, stop, num, den])


def lstm_sequence_lengths() -> ov.Model:
    rng = np.random.default_rng(1)
    X = ops.parameter([2, 5, 3], np.float32, name="X")
    H = ops.parameter([2, 1, 4], np.float32, name="H0")
    C = ops.parameter([2, 1, 4], np.float32, name="C0")
    L = ops.parameter([2], np.int32, name="lens")
    w = [ops.constant(rng.standard_normal(s).astype(np.float32)) for s in ((1, 16, 3), (1, 16, 4), (1, 16))]
    seq = ops.lstm_sequence(X, H, C, L, *w, 4, "forward")
    return ov.Model([seq.output(1)], [X, H, C, L])


def test_feature_dimension_from_the_weights(tmp_path: Path) -> None:
    xml = save_ir(rnn_all_dynamic(), tmp_path)
    feed, _, notes = _inputs(xml)
    batch, steps, features = feed["X"].shape
    assert features == 8 and steps >= 3 and batch > 1
    assert feed["H0"].shape == (batch, 5) == feed["C0"].shape
    assert not notes
    assert ir2onnx.check(xml).passed


def test_matmul_fixes_the_inner_dimension(tmp_path: Path) -> None:
    xml = save_ir(matmul_dynamic(), tmp_path)
    feed, _, _ = _inputs(xml)
    assert feed["X"].shape[1] == 7 and feed["X"].shape[0] > 1
    assert ir2onnx.check(xml).passed


def test_bounded_dimensions_stay_in_their_bounds(tmp_path: Path) -> None:
    """An IR's `lo..hi` dims (OpenVINO refuses an input outside them): the default inputs are chosen inside."""
    x = ops.parameter(ov.PartialShape("[1,3,100..200,..4,2..]"), np.float32, name="X")
    xml = save_ir(ov.Model([ops.relu(x)], [x]), tmp_path)
    feed, _, notes = _inputs(xml)
    _, _, h, w, d = feed["X"].shape
    assert 100 <= h <= 200 and 1 <= w <= 4 and d >= 2
    assert not notes
    assert ir2onnx.check(xml).passed


def test_boolean_scalar_and_trip_count_inputs(tmp_path: Path) -> None:
    xml = save_ir(loop_model(None, None), tmp_path)
    feed, sources, _ = _inputs(xml)
    assert feed["cond"].dtype == np.bool_ and feed["cond"].shape == () and bool(feed["cond"])
    assert 3 <= int(feed["trip"]) <= 7 and "trip" in sources["trip"]
    report = ir2onnx.check(xml)
    assert report.passed
    assert report.outputs[1].onnx_shape[0] == int(feed["trip"])


@pytest.mark.parametrize("seed", range(4))
def test_loop_bound_inside_the_body(tmp_path: Path, seed: int) -> None:
    xml = save_ir(loop_bound_in_body(), tmp_path)
    feed, sources, _ = _inputs(xml, seed)
    assert 3 <= int(feed["n"]) <= 7 and "bound" in sources["n"]
    report = ir2onnx.check(xml, seed=seed)
    assert report.passed and report.outputs[1].onnx_shape == (int(feed["n"]), 2)


@pytest.mark.parametrize("seed", range(4))
def test_indices_k_range_and_divisors_in_range(tmp_path: Path, seed: int) -> None:
    xml = save_ir(gather_topk_range_divide(), tmp_path)
    feed, sources, _ = _inputs(xml, seed)
    assert feed["idx"].min() >= 0 and feed["idx"].max() <= 5
    assert 1 <= int(feed["k"]) <= 4
    assert 0 <= int(feed["start"]) <= 2 and 5 <= int(feed["stop"]) <= 9
    assert feed["den"].min() >= 1
    assert "index" in sources["idx"] and "k" in sources["k"]
    assert ir2onnx.check(xml, seed=seed).passed


def test_sequence_lengths_are_the_full_length(tmp_path: Path) -> None:
    xml = save_ir(lstm_sequence_lengths(), tmp_path)
    feed, _, _ = _inputs(xml)
    assert feed["lens"].tolist() == [5, 5]
    assert ir2onnx.check(xml).passed


def test_shape_inputs_are_named_for_inputs_file(tmp_path: Path) -> None:
    X = ops.parameter([2, 6], np.float32, name="X")
    S = ops.parameter([2], np.int64, name="target")
    xml = save_ir(ov.Model([ops.reshape(X, S, False)], [X, S]), tmp_path)
    _, _, notes = _inputs(xml)
    assert any("input target" in n and "--inputs" in n for n in notes)


@pytest.mark.parametrize(("make", "fixed"), [(matmul_dynamic, {"X": {1: 7}})], ids=["matmul"])
def test_onnx_shape_inference_without_openvino(tmp_path: Path, make: Callable[[], ov.Model],
                                               fixed: dict[str, dict[int, int]]) -> None:
    """Without OpenVINO to ask, ONNX shape inference in strict mode picks sizes onnxruntime accepts: the sizes the
    model fixes (`fixed`: input -> axis -> size, e.g. a MatMul's inner dimension from its weights), any other size
    positive. The outputs on those inputs are OpenVINO's on the IR."""
    from ir2onnx.verify.inputs import random_inputs
    from ir2onnx.verify.onnxruntime_run import run_onnxruntime
    from ir2onnx.verify.openvino_ref import run_openvino

    xml = save_ir(make(), tmp_path)
    proto = ir2onnx.convert(xml)
    feed = random_inputs(proto)
    assert list(feed) == [i.name for i in proto.graph.input]
    shapes = {name: a.shape for name, a in feed.items()}
    assert all(d > 0 for shape in shapes.values() for d in shape), shapes
    assert all(shapes[name][axis] == size for name, sizes in fixed.items() for axis, size in sizes.items()), shapes
    got = run_onnxruntime(proto, feed)
    want = run_openvino(str(xml), feed)
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_ports_without_names() -> None:
    """A TensorIterator slicing axis 2 whose ports carry no tensor names (as in OpenVINO's own IR frontend tests):
    OpenVINO gives its input no name, so the check feeds it by its Parameter's layer name, as ir2onnx names it."""
    report = ir2onnx.check(fixture_dir("ov_ti_unnamed_ports") / "model.xml")
    assert report.passed and [o.name for o in report.outputs] == ["columns"]

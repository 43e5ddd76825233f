"""TensorIterator and Loop nested in each other, to depth three."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

import ir2onnx
from ir2onnx.errors import InvalidModelError
from tests.utils import check_model, count_loops, count_ops, rng_inputs, save_ir


def inner_ti(x: ov.Output, h: ov.Output) -> ov.Node:
    """TI over axis 0 of x [T, 3], state h [3]: h = tanh(h + x_t)."""
    bx = ops.parameter([1, 3], np.float32, name="ibx")
    bh = ops.parameter([3], np.float32, name="ibh")
    nh = ops.tanh(ops.add(bh, ops.squeeze(bx, [0])))
    r_h = ops.result(nh)
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_h], [bx, bh]))
    ti.set_sliced_input(bx, x, 0, 1, 1, -1, 0)
    ti.set_merged_input(bh, h, r_h.output(0))
    ti.get_iter_value(r_h.output(0), -1)
    return ti


def inner_loop(x: ov.Output, h: ov.Output, trip: int = 3) -> ov.Node:
    """Loop: h = h * 0.5 + x, stopping early once sum(h) > 4."""
    it = ops.parameter([], np.int64, name="lit")
    bx = ops.parameter([3], np.float32, name="lbx")
    bh = ops.parameter([3], np.float32, name="lbh")
    nh = ops.add(ops.multiply(bh, ops.constant(np.float32(0.5))), bx)
    cond = ops.less(ops.reduce_sum(nh, [0], False), ops.constant(np.float32(4.0)))
    r_c, r_h = ops.result(cond), ops.result(nh)
    loop = ops.loop(ops.constant(np.int64(trip)), ops.constant(True))
    loop.set_function(ov.Model([r_c, r_h], [it, bx, bh]))
    loop.set_special_body_ports([0, 0])
    loop.set_invariant_input(bx, x)
    loop.set_merged_input(bh, h, r_h.output(0))
    loop.get_iter_value(r_h.output(0), -1)
    return loop


def outer_ti(make_inner, matrix_input: bool) -> ov.Model:  # type: ignore[no-untyped-def]
    """Outer TI over axis 0 of X [N, T, 3]; the inner op runs on each slice with the carried state."""
    X = ops.parameter([4, 5, 3], np.float32, name="X")
    H = ops.parameter([3], np.float32, name="H")
    bx = ops.parameter([1, 5, 3], np.float32, name="obx")
    bh = ops.parameter([3], np.float32, name="obh")
    x_slice = ops.squeeze(bx, [0])
    x_in = x_slice.output(0) if matrix_input else ops.reduce_mean(x_slice, [0], False).output(0)
    inner = make_inner(x_in, bh.output(0))
    r_h = ops.result(inner.output(0))
    r_y = ops.result(ops.unsqueeze(inner.output(0), 0))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_h, r_y], [bx, bh]))
    ti.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 0)
    ti.set_merged_input(bh, H.output(0), r_h.output(0))
    return ov.Model([ti.get_iter_value(r_h.output(0), -1), ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0)],
                    [X, H])


def outer_loop(make_inner, trip: int = 3) -> ov.Model:  # type: ignore[no-untyped-def]
    """Outer Loop (trip count input) whose body runs the inner op on the invariant X and the carried state."""
    X = ops.parameter([5, 3], np.float32, name="X")
    H = ops.parameter([3], np.float32, name="H")
    T = ops.parameter([], np.int64, name="trip")
    it = ops.parameter([], np.int64, name="oit")
    bx = ops.parameter([5, 3], np.float32, name="obx")
    bh = ops.parameter([3], np.float32, name="obh")
    scaled = ops.multiply(bx, ops.convert(ops.add(it, ops.constant(np.int64(1))), np.float32))
    x_in = scaled.output(0) if make_inner is inner_ti else ops.reduce_mean(scaled, [0], False).output(0)
    inner = make_inner(x_in, bh.output(0))
    r_c = ops.result(ops.constant(True))
    r_h = ops.result(inner.output(0))
    r_y = ops.result(ops.unsqueeze(inner.output(0), 0))
    loop = ops.loop(T, ops.constant(True))
    loop.set_function(ov.Model([r_c, r_h, r_y], [it, bx, bh]))
    loop.set_special_body_ports([0, 0])
    loop.set_invariant_input(bx, X.output(0))
    loop.set_merged_input(bh, H.output(0), r_h.output(0))
    outs = [loop.get_iter_value(r_h.output(0), -1), loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0)]
    return ov.Model(outs, [X, H, T])


@pytest.mark.parametrize("inner", [inner_loop], ids=["loop-in-ti"])  # OpenVINO forbids a TI directly in a TI
def test_inside_tensor_iterator(tmp_path: Path, inner) -> None:  # type: ignore[no-untyped-def]
    proto = check_model(outer_ti(inner, inner is inner_ti), rng_inputs([((4, 5, 3), np.float32), ((3,), np.float32)]), tmp_path)
    assert count_loops(proto) == 2


@pytest.mark.parametrize(("inner", "trips"), [(inner_ti, [3, 0, 1]), (inner_loop, [3, 1])],
                         ids=["ti-in-loop", "loop-in-loop"])
def test_inside_loop(tmp_path: Path, inner, trips: list[int]) -> None:  # type: ignore[no-untyped-def]
    x, h = rng_inputs([((5, 3), np.float32), ((3,), np.float32)])
    for i, trip in enumerate(trips):
        d = tmp_path / str(i)
        d.mkdir()
        check_model(outer_loop(inner), [x, h, np.array(trip, np.int64)], d)


def test_three_levels(tmp_path: Path) -> None:
    """TI > Loop > TI: the innermost body reads a value captured two levels up."""

    def middle(x: ov.Output, h: ov.Output) -> ov.Node:
        it = ops.parameter([], np.int64, name="mit")
        bx = ops.parameter([5, 3], np.float32, name="mbx")
        bh = ops.parameter([3], np.float32, name="mbh")
        inner = inner_ti(bx.output(0), bh.output(0))
        r_c, r_h = ops.result(ops.constant(True)), ops.result(inner.output(0))
        loop = ops.loop(ops.constant(np.int64(2)), ops.constant(True))
        loop.set_function(ov.Model([r_c, r_h], [it, bx, bh]))
        loop.set_special_body_ports([0, 0])
        loop.set_invariant_input(bx, x)
        loop.set_merged_input(bh, h, r_h.output(0))
        loop.get_iter_value(r_h.output(0), -1)
        return loop

    model = outer_ti(middle, True)
    proto = check_model(model, rng_inputs([((4, 5, 3), np.float32), ((3,), np.float32)]), tmp_path)
    assert count_ops(proto, "Scan") == 2 and count_ops(proto, "Loop") == 1


def nested_ifs(depth: int) -> ov.Model:
    """`depth` Ifs each in the previous one's then-branch (OpenVINO's IR frontend tests nest 64)."""
    import openvino.opset8 as ops8

    def body(level: int) -> ov.Model:
        p = ops8.parameter([1], np.float32)
        out = p if level == 0 else wrap(p.output(0), level)
        return ov.Model([ops8.result(out)], [p])

    def wrap(x: ov.Output, level: int) -> ov.Output:
        node = ops8.if_op(ops8.constant(np.array(True)))
        then_body, else_body = body(level - 1), body(0)
        node.set_then_body(then_body)
        node.set_else_body(else_body)
        node.set_input(x, then_body.get_parameters()[0], else_body.get_parameters()[0])
        return node.set_output(then_body.get_results()[0], else_body.get_results()[0])

    x = ops8.parameter([1], np.float32, name="x")
    return ov.Model([ops8.result(wrap(x.output(0), depth))], [x])


def test_nesting_past_what_protobuf_reads_is_refused_clearly(tmp_path: Path) -> None:
    """40 nested Ifs: protobuf cannot read such an ONNX model back (about 33 subgraph levels at most), so neither
    onnx's checker nor onnxruntime can load it: one clear error, no file (and 8 levels convert)."""
    assert ir2onnx.convert(save_ir(nested_ifs(8), tmp_path / "8")).graph.output[0].name
    xml = save_ir(nested_ifs(40), tmp_path / "40")
    with pytest.raises(InvalidModelError, match="nests 41 levels of subgraphs"):
        ir2onnx.convert_file(xml, tmp_path / "out.onnx")
    r = subprocess.run([sys.executable, "-m", "ir2onnx", "convert", str(xml), "-o", str(tmp_path / "out.onnx")],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 2 and "nests 41 levels" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "out.onnx").exists()

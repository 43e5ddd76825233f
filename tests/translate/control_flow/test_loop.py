"""Loop-5: trip count / condition forms, zero iterations, current iteration, concatenation, changing shapes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import openvino as ov
import openvino.opset13 as ops
import pytest
from onnx import TensorProto, helper

from tests.translate.control_flow.builders import loop_model
from tests.utils import assert_equivalent, check_model, count_ops, rng_inputs

X = np.arange(6, dtype=np.float32).reshape(2, 3) / 10


# (trip constant or None=input, cond constant or None=input, body condition, run-time trip, run-time cond)
FORMS = [
    pytest.param(3, True, "true", None, None, id="for-const"),
    pytest.param(-1, True, "data", None, None, id="while-unbounded"),
    pytest.param(5, True, "data", None, None, id="for-and-while"),
    pytest.param(2, True, "data", None, None, id="trip-stops-before-condition"),
    pytest.param(-1, True, "false", None, None, id="do-while-once"),
    pytest.param(4, None, "true", None, True, id="runtime-cond-true"),
    pytest.param(None, True, "true", 3, None, id="runtime-trip"),
    pytest.param(None, True, "data", -1, None, id="runtime-trip-unbounded"),
    pytest.param(None, None, "data", 7, True, id="runtime-both"),
    pytest.param(None, True, "true", 0, None, id="zero-trip-runtime"),
    pytest.param(None, None, "true", 4, False, id="false-cond-runtime"),
]


@pytest.mark.parametrize(("trip", "cond", "body_cond", "rt_trip", "rt_cond"), FORMS)
def test_trip_count_and_condition_forms(tmp_path: Path, trip: Any, cond: Any, body_cond: str, rt_trip: Any,
                                        rt_cond: Any) -> None:
    zero = trip == 0 or rt_trip == 0 or cond is False or rt_cond is False
    model = loop_model(trip, cond, body_cond=body_cond, limit=6.0, plain_last_value=not zero)
    inputs: list[np.ndarray] = [X]
    if trip is None:
        inputs.append(np.array(rt_trip, dtype=np.int64))
    if cond is None:
        inputs.append(np.array(rt_cond, dtype=np.bool_))
    proto = check_model(model, inputs, tmp_path)
    assert count_ops(proto, "Loop") == 1


@pytest.mark.parametrize("trip_dtype", [np.int32, np.int64])
def test_runtime_trip_count_types(tmp_path: Path, trip_dtype: Any) -> None:
    model = loop_model(None, True, trip_dtype=trip_dtype)
    check_model(model, [X, np.array(4, dtype=trip_dtype)], tmp_path)


@pytest.mark.parametrize(("iter_dtype", "iter_rank"), [(np.int64, 0), (np.int32, 0), (np.int32, 1), (np.int64, 1)])
def test_current_iteration_parameter(tmp_path: Path, iter_dtype: Any, iter_rank: int) -> None:
    check_model(loop_model(4, True, iter_dtype=iter_dtype, iter_rank=iter_rank), [X], tmp_path)


@pytest.mark.parametrize("axis", [0, 1, 2])  # OpenVINO's CPU plugin fails on a negative concat axis in Loop
def test_concatenated_output_axes(tmp_path: Path, axis: int) -> None:
    check_model(loop_model(3, True, concat_axis=axis), [X], tmp_path)


def test_concat_slices_larger_than_one(tmp_path: Path) -> None:
    """Each iteration contributes a [2, 3] block (no unsqueeze in the body). OpenVINO's CPU plugin refuses to run
    this ("1 is expected" on the concat axis), so the result is checked against the specification with numpy."""
    import ir2onnx
    from ir2onnx.verify.onnxruntime_run import run_onnxruntime
    from tests.utils import save_ir

    Xp = ops.parameter([2, 3], np.float32, name="X")
    it = ops.parameter([], np.int64, name="it")
    bx = ops.parameter([2, 3], np.float32, name="bx")
    y = ops.multiply(bx, ops.convert(it, np.float32))
    r_c, r_y = ops.result(ops.constant(True)), ops.result(y)
    body = ov.Model([r_c, r_y], [it, bx])
    loop = ops.loop(ops.constant(np.int64(3)), ops.constant(True))
    loop.set_function(body)
    loop.set_special_body_ports([0, 0])
    loop.set_invariant_input(bx, Xp.output(0))
    outs = [loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0),
            loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1)]
    proto = ir2onnx.convert(save_ir(ov.Model(outs, [Xp]), tmp_path))
    y0, y1 = run_onnxruntime(proto, {"X": X})
    steps = [X * i for i in range(3)]
    np.testing.assert_array_equal(y0, np.concatenate(steps, axis=0))
    np.testing.assert_array_equal(y1, np.concatenate(steps, axis=1))


def test_sliced_input(tmp_path: Path) -> None:
    """A Loop iterating over the rows of an input (sliced on axis 1) until the trip count."""
    Xp = ops.parameter([2, 4, 3], np.float32, name="X")
    S = ops.parameter([2, 3], np.float32, name="S")
    it = ops.parameter([], np.int64, name="it")
    bx = ops.parameter([2, 1, 3], np.float32, name="bx")
    bs = ops.parameter([2, 3], np.float32, name="bs")
    ns = ops.add(bs, ops.squeeze(bx, [1]))
    r_c, r_s, r_y = ops.result(ops.constant(True)), ops.result(ns), ops.result(ops.unsqueeze(ns, 1))
    body = ov.Model([r_c, r_s, r_y], [it, bx, bs])
    loop = ops.loop(ops.constant(np.int64(4)), ops.constant(True))
    loop.set_function(body)
    loop.set_special_body_ports([0, 0])
    loop.set_sliced_input(bx, Xp.output(0), 0, 1, 1, -1, 1)
    loop.set_merged_input(bs, S.output(0), r_s.output(0))
    outs = [loop.get_iter_value(r_s.output(0), -1), loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1)]
    check_model(ov.Model(outs, [Xp, S]), rng_inputs([((2, 4, 3), np.float32), ((2, 3), np.float32)]), tmp_path)


def test_state_shape_changes_across_iterations(tmp_path: Path) -> None:
    """The carried value grows by one row per iteration (OpenVINO relaxes its shape to [?, 3])."""
    Xp = ops.parameter([1, 3], np.float32, name="X")
    T = ops.parameter([], np.int64, name="trip")
    it = ops.parameter([], np.int64, name="it")
    bs = ops.parameter([-1, 3], np.float32, name="bs")
    ns = ops.concat([bs, ops.multiply(ops.gather(bs, ops.constant(np.int64([-1])), 0), ops.constant(np.float32(2)))], 0)
    r_c, r_s = ops.result(ops.constant(True)), ops.result(ns)
    body = ov.Model([r_c, r_s], [it, bs])
    loop = ops.loop(T, ops.constant(True))
    loop.set_function(body)
    loop.set_special_body_ports([0, 0])
    loop.set_merged_input(bs, Xp.output(0), r_s.output(0))
    model = ov.Model([loop.get_iter_value(r_s.output(0), -1)], [Xp, T])
    for i, trip in enumerate([3, 0, 1]):
        d = tmp_path / str(i)
        d.mkdir()
        check_model(model, [np.ones((1, 3), np.float32), np.array(trip, np.int64)], d)


def _onnx_loop_model(path: Path, cond_from_body: bool) -> Path:
    """An ONNX Loop (y = y * 2 + x while sum(y) < 50), imported by OpenVINO's ONNX frontend and saved as IR."""
    body_nodes = [
        helper.make_node("Mul", ["y_in", "two"], ["y2"]),
        helper.make_node("Add", ["y2", "x"], ["y_out"]),
        helper.make_node("ReduceSum", ["y_out"], ["s"], keepdims=0),
        helper.make_node("Less", ["s", "limit"], ["cond_out"]) if cond_from_body
        else helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        helper.make_node("Identity", ["y_out"], ["scan_y"]),
    ]
    body = helper.make_graph(
        body_nodes, "body",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_in", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_out", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("scan_y", TensorProto.FLOAT, [2])],
        [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]), helper.make_tensor("limit", TensorProto.FLOAT, [], [50.0])],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "cond", "y0"], ["y_final", "ys"], body=body)], "g",
        [helper.make_tensor_value_info("M", TensorProto.INT64, []), helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y0", TensorProto.FLOAT, [2]), helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y_final", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("ys", TensorProto.FLOAT, [None, 2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx_path = path / "src.onnx"
    onnx.save(model, str(onnx_path))
    xml = path / "model.xml"
    ov.save_model(ov.Core().read_model(str(onnx_path)), str(xml), compress_to_fp16=False)
    return xml


@pytest.mark.parametrize("cond_from_body", [True, False])
def test_ir_made_from_onnx_routes_condition_through_port_map(tmp_path: Path, cond_from_body: bool) -> None:
    xml = _onnx_loop_model(tmp_path, cond_from_body)
    text = xml.read_text()
    assert 'type="Loop"' in text
    for trip, cond in [(10, True), (3, True), (0, True), (5, False)]:
        inputs = [np.array(trip, np.int64), np.array(cond), np.array([1.0, 2.0], np.float32),
                  np.array([0.5, -1.0], np.float32)]
        assert_equivalent(xml, inputs)


def test_scalar_body_values_concatenated(tmp_path: Path) -> None:
    """Scalar body values concatenate as shape [1] each (the iteration number, and a reduced state)."""
    Xp = ops.parameter([3], np.float32, name="X")
    it = ops.parameter([], np.int64, name="it")
    bs = ops.parameter([3], np.float32, name="bs")
    ns = ops.multiply(bs, ops.constant(np.float32(1.5)))
    r_c, r_s = ops.result(ops.constant(True)), ops.result(ns)
    r_i, r_sum = ops.result(it), ops.result(ops.reduce_sum(ns, [0], False))
    loop = ops.loop(ops.constant(np.int64(4)), ops.constant(True))
    loop.set_function(ov.Model([r_c, r_s, r_i, r_sum], [it, bs]))
    loop.set_special_body_ports([0, 0])
    loop.set_merged_input(bs, Xp.output(0), r_s.output(0))
    outs = [loop.get_concatenated_slices(r_i.output(0), 0, 1, 1, -1, 0),
            loop.get_concatenated_slices(r_sum.output(0), 0, 1, 1, -1, 0)]
    check_model(ov.Model(outs, [Xp]), [np.array([1.0, 2.0, -1.0], np.float32)], tmp_path)


@pytest.mark.parametrize(("start", "stride", "end", "axis"), [(0, 1, -1, 1), (-1, -1, 0, 1), (0, 1, -1, 0),
                                                               (-1, -1, 0, 0)])
def test_sliced_input_directions(tmp_path: Path, start: int, stride: int, end: int, axis: int) -> None:
    """Loop iterating over an input forward or from its end, on axis 0 or 1."""
    shape = [2, 4, 3] if axis == 1 else [4, 2, 3]
    chunk = [2, 1, 3] if axis == 1 else [1, 2, 3]
    Xp = ops.parameter(shape, np.float32, name="X")
    S = ops.parameter([2, 3], np.float32, name="S")
    it = ops.parameter([], np.int64, name="it")
    bx = ops.parameter(chunk, np.float32, name="bx")
    bs = ops.parameter([2, 3], np.float32, name="bs")
    ns = ops.add(ops.multiply(bs, ops.constant(np.float32(0.5))), ops.squeeze(bx, [axis]))
    r_c, r_s = ops.result(ops.constant(True)), ops.result(ns)
    loop = ops.loop(ops.constant(np.int64(4)), ops.constant(True))
    loop.set_function(ov.Model([r_c, r_s], [it, bx, bs]))
    loop.set_special_body_ports([0, 0])
    loop.set_sliced_input(bx, Xp.output(0), start, stride, 1, end, axis)
    loop.set_merged_input(bs, S.output(0), r_s.output(0))
    model = ov.Model([loop.get_iter_value(r_s.output(0), -1)], [Xp, S])
    check_model(model, rng_inputs([(tuple(shape), np.float32), ((2, 3), np.float32)]), tmp_path)

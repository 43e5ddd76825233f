"""TensorIterator-1: every port-map feature against OpenVINO's CPU plugin."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from tests.translate.control_flow.builders import ti_accumulate, ti_lstm
from tests.utils import check_model, count_ops, rng_inputs

# (x shape, axis, start, end, stride, part_size)
SLICING = [
    pytest.param([2, 6, 3], 1, 0, -1, 1, 1, id="axis1-forward"),
    pytest.param([2, 6, 3], 1, -1, 0, -1, 1, id="axis1-reverse"),
    pytest.param([6, 2, 3], 0, 0, -1, 1, 1, id="axis0-forward"),
    pytest.param([2, 3, 6], 2, 0, -1, 1, 1, id="axis-last-forward"),
    pytest.param([2, 3, 6], 2, -1, 0, -1, 1, id="axis-last-reverse"),
    pytest.param([2, 6, 3], 1, 0, -1, 2, 2, id="part2-forward"),
    pytest.param([2, 6, 3], 1, -1, 0, -2, 2, id="part2-reverse"),
    pytest.param([2, 6, 3], 1, 0, -1, 3, 3, id="part3-forward"),
    pytest.param([2, 6, 3], 1, 1, -1, 1, 1, id="partial-start"),
    pytest.param([2, 6, 3], 1, 0, -2, 1, 1, id="partial-negative-end"),
    pytest.param([2, 6, 3], 1, -2, 0, -1, 1, id="partial-reverse"),
    pytest.param([2, 6, 3], 1, -1, 1, -1, 1, id="partial-reverse-positive-end"),
]


@pytest.mark.parametrize(("shape", "axis", "start", "end", "stride", "part"), SLICING)
def test_sliced_input_concat_and_last_values(tmp_path: Path, shape: list[int], axis: int, start: int, end: int,
                                             stride: int, part: int) -> None:
    model = ti_accumulate(shape, axis, start, end, stride, part)
    h_shape = [d for i, d in enumerate(shape) if i != axis % len(shape)]
    proto = check_model(model, rng_inputs([(tuple(shape), np.float32), (tuple(h_shape), np.float32)]), tmp_path)
    assert count_ops(proto, "Scan") == 1
    assert count_ops(proto, "Loop") == 0


def test_reverse_output_of_forward_input(tmp_path: Path) -> None:
    model = ti_accumulate([2, 5, 3], 1, 0, -1, 1, 1, out_cfg=(-1, -1, 0))
    check_model(model, rng_inputs([((2, 5, 3), np.float32), ((2, 3), np.float32)]), tmp_path)


def _ti(body: ov.Model, wire) -> ops.tensor_iterator:  # type: ignore[no-untyped-def]
    ti = ops.tensor_iterator()
    ti.set_body(body)
    wire(ti)
    return ti


def _two_sliced_model(with_a: bool) -> ov.Model:
    """B sliced on axis 2 in reverse, optionally A sliced on axis 0; invariant W; concat outputs on axes 0 and 2."""
    A = ops.parameter([4, 2, 3], np.float32, name="A")
    B = ops.parameter([2, 3, 4], np.float32, name="B")
    W = ops.parameter([3, 3], np.float32, name="W")
    S = ops.parameter([2, 3], np.float32, name="S")
    ba = ops.parameter([1, 2, 3], np.float32, name="ba")
    bb = ops.parameter([2, 3, 1], np.float32, name="bb")
    bw = ops.parameter([3, 3], np.float32, name="bw")
    bs = ops.parameter([2, 3], np.float32, name="bs")
    x = ops.squeeze(bb, [2])
    if with_a:
        x = ops.add(ops.squeeze(ba, [0]), x)
    ns = ops.tanh(ops.add(ops.matmul(bs, bw, False, False), x))
    r_s = ops.result(ns)
    r_y0 = ops.result(ops.unsqueeze(ns, 0))
    r_y2 = ops.result(ops.unsqueeze(ops.multiply(ns, ns), 2))
    body = ov.Model([r_s, r_y0, r_y2], ([ba] if with_a else []) + [bb, bw, bs])

    def wire(ti):  # type: ignore[no-untyped-def]
        if with_a:
            ti.set_sliced_input(ba, A.output(0), 0, 1, 1, -1, 0)
        ti.set_sliced_input(bb, B.output(0), -1, -1, 1, 0, 2)
        ti.set_invariant_input(bw, W.output(0))
        ti.set_merged_input(bs, S.output(0), r_s.output(0))

    ti = _ti(body, wire)
    outs = [ti.get_concatenated_slices(r_y0.output(0), 0, 1, 1, -1, 0),
            ti.get_iter_value(r_s.output(0), -1),
            ti.get_concatenated_slices(r_y2.output(0), -1, -1, 1, 0, 2)]
    return ov.Model(outs, ([A] if with_a else []) + [B, W, S])


def test_invariant_and_concat_outputs_on_several_axes(tmp_path: Path) -> None:
    inputs = rng_inputs([((2, 3, 4), np.float32), ((3, 3), np.float32), ((2, 3), np.float32)])
    check_model(_two_sliced_model(with_a=False), inputs, tmp_path)


def test_two_sliced_inputs_against_the_specification(tmp_path: Path) -> None:
    """OpenVINO's CPU plugin (2026.4) miscomputes TensorIterators with two sliced inputs from the second iteration on;
    this case is checked against the specification's semantics computed with numpy instead."""
    import ir2onnx
    from ir2onnx.verify.onnxruntime_run import run_onnxruntime
    from tests.utils import save_ir

    A, B, W, S = rng_inputs([((4, 2, 3), np.float32), ((2, 3, 4), np.float32), ((3, 3), np.float32),
                             ((2, 3), np.float32)])
    proto = ir2onnx.convert(save_ir(_two_sliced_model(with_a=True), tmp_path))
    y0, last, y2 = run_onnxruntime(proto, dict(zip([i.name for i in proto.graph.input], [A, B, W, S])))
    s, states = S, []
    for t in range(4):
        s = np.tanh(s @ W + A[t] + B[:, :, 3 - t])
        states.append(s)
    np.testing.assert_allclose(y0, np.stack(states), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(last, s, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y2, np.stack([v * v for v in states[::-1]], axis=2), rtol=1e-5, atol=1e-6)


def test_sliced_input_the_body_does_not_read_against_the_specification(tmp_path: Path) -> None:
    """The sliced input sets the number of iterations even when the body never reads its slice. OpenVINO's CPU
    plugin (2026.4) runs such a TensorIterator once (its concatenated output [2, 1, 3] where the IR declares
    [2, 3, 3]); checked against numpy instead."""
    import ir2onnx
    from ir2onnx.verify.onnxruntime_run import run_onnxruntime
    from tests.utils import save_ir

    X = ops.parameter([2, 3, 4], np.float32, name="X")
    S = ops.parameter([2, 3], np.float32, name="S")
    bx = ops.parameter([2, 1, 4], np.float32)
    bs = ops.parameter([2, 3], np.float32)
    new = ops.tanh(ops.add(ops.multiply(bs, ops.constant(np.float32(0.5))), ops.constant(np.float32(1.0))))
    r_s, r_y = ops.result(new), ops.result(ops.unsqueeze(new, ops.constant(np.int64(1))))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_s, r_y], [bx, bs]))
    ti.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(bs, S.output(0), r_s.output(0))
    model = ov.Model([ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1), ti.get_iter_value(r_s.output(0), -1)],
                     [X, S])
    x, s = rng_inputs([((2, 3, 4), np.float32), ((2, 3), np.float32)])
    proto = ir2onnx.convert(save_ir(model, tmp_path))
    ys, last = run_onnxruntime(proto, dict(zip([i.name for i in proto.graph.input], [x, s])))
    states = []
    for _ in range(3):
        s = np.tanh(s * 0.5 + 1.0)
        states.append(s)
    np.testing.assert_allclose(ys, np.stack(states, axis=1), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(last, s, rtol=1e-6, atol=1e-6)


def test_concat_output_with_slices_larger_than_one(tmp_path: Path) -> None:
    """Each iteration contributes 2 rows on the concat axis (body value [2, 2, 3] concatenated on axis 1)."""
    X = ops.parameter([2, 4, 3], np.float32, name="X")
    bx = ops.parameter([2, 1, 3], np.float32, name="bx")
    y = ops.concat([bx, ops.negative(bx)], 1)
    r = ops.result(y)
    body = ov.Model([r], [bx])
    ti = _ti(body, lambda t: t.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 1))
    model = ov.Model([ti.get_concatenated_slices(r.output(0), 0, 2, 2, -1, 1)], [X])
    check_model(model, rng_inputs([((2, 4, 3), np.float32)]), tmp_path)


def test_integer_state_and_boolean_output(tmp_path: Path) -> None:
    X = ops.parameter([5, 3], np.int32, name="X")
    S = ops.parameter([3], np.int32, name="S")
    bx = ops.parameter([1, 3], np.int32, name="bx")
    bs = ops.parameter([3], np.int32, name="bs")
    ns = ops.add(bs, ops.squeeze(bx, [0]))
    r_s = ops.result(ns)
    r_b = ops.result(ops.unsqueeze(ops.greater(ns, ops.constant(np.int32(0))), 0))
    body = ov.Model([r_s, r_b], [bx, bs])

    def wire(ti):  # type: ignore[no-untyped-def]
        ti.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 0)
        ti.set_merged_input(bs, S.output(0), r_s.output(0))

    ti = _ti(body, wire)
    model = ov.Model([ti.get_iter_value(r_s.output(0), -1), ti.get_concatenated_slices(r_b.output(0), 0, 1, 1, -1, 0)],
                     [X, S])
    check_model(model, rng_inputs([((5, 3), np.int32), ((3,), np.int32)]), tmp_path)


def test_dynamic_batch_and_time(tmp_path: Path) -> None:
    X = ops.parameter([-1, -1, 3], np.float32, name="X")
    H = ops.parameter([-1, 3], np.float32, name="H")
    bx = ops.parameter([-1, 1, 3], np.float32, name="bx")
    bh = ops.parameter([-1, 3], np.float32, name="bh")
    nh = ops.tanh(ops.add(bh, ops.squeeze(bx, [1])))
    r_h = ops.result(nh)
    r_y = ops.result(ops.unsqueeze(nh, 1))
    body = ov.Model([r_h, r_y], [bx, bh])

    def wire(ti):  # type: ignore[no-untyped-def]
        ti.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 1)
        ti.set_merged_input(bh, H.output(0), r_h.output(0))

    ti = _ti(body, wire)
    model = ov.Model([ti.get_iter_value(r_h.output(0), -1), ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1)],
                     [X, H])
    xml_dir = tmp_path
    for i, (b, t) in enumerate([(2, 5), (3, 1), (1, 7)]):
        d = xml_dir / str(i)
        d.mkdir()
        proto = check_model(model, rng_inputs([((b, t, 3), np.float32), ((b, 3), np.float32)], seed=i), d)
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert [bool(d.dim_param) for d in dims] == [True, True, False]


def test_lstm_cell_body(tmp_path: Path) -> None:
    model = ti_lstm(2, 7, 5, 4)
    check_model(model, rng_inputs([((2, 7, 5), np.float32), ((2, 4), np.float32), ((2, 4), np.float32)]), tmp_path)


def test_f16_network(tmp_path: Path) -> None:
    """A network in f16 throughout: onnxruntime's LSTM computes in f32 between casts, as OpenVINO does (f32 hint)."""
    model = ti_lstm(2, 6, 5, 4, dtype=np.float16)
    inputs = rng_inputs([((2, 6, 5), np.float16), ((2, 4), np.float16), ((2, 4), np.float16)])
    check_model(model, inputs, tmp_path, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("cell", ["gru", "rnn"])
def test_gru_and_rnn_cell_bodies(tmp_path: Path, cell: str) -> None:
    rng = np.random.default_rng(2)
    gates = 3 if cell == "gru" else 1
    X = ops.parameter([3, 6, 5], np.float32, name="X")
    H = ops.parameter([3, 4], np.float32, name="H")
    bx = ops.parameter([3, 1, 5], np.float32, name="bx")
    bh = ops.parameter([3, 4], np.float32, name="bh")
    w = ops.constant(rng.standard_normal((gates * 4, 5)).astype(np.float32))
    r = ops.constant(rng.standard_normal((gates * 4, 4)).astype(np.float32))
    bias = ops.constant(rng.standard_normal(gates * 4).astype(np.float32))
    x = ops.squeeze(bx, [1])
    step = ops.gru_cell(x, bh, w, r, bias, 4) if cell == "gru" else ops.rnn_cell(x, bh, w, r, bias, 4, ["tanh"], [], [])
    r_h = ops.result(step.output(0))
    r_y = ops.result(ops.unsqueeze(step.output(0), 1))
    body = ov.Model([r_h, r_y], [bx, bh])

    def wire(ti):  # type: ignore[no-untyped-def]
        ti.set_sliced_input(bx, X.output(0), -1, -1, 1, 0, 1)
        ti.set_merged_input(bh, H.output(0), r_h.output(0))

    ti = _ti(body, wire)
    model = ov.Model([ti.get_concatenated_slices(r_y.output(0), -1, -1, 1, 0, 1), ti.get_iter_value(r_h.output(0), -1)],
                     [X, H])
    check_model(model, rng_inputs([((3, 6, 5), np.float32), ((3, 4), np.float32)]), tmp_path)


def test_stride_different_from_part_size_is_refused(tmp_path: Path) -> None:
    import ir2onnx
    from tests.utils import save_ir

    model = ti_accumulate([2, 6, 3], 1, 0, -1, 1, 2)
    xml = save_ir(model, tmp_path)
    with pytest.raises(ir2onnx.LayerConversionError, match="part_size"):
        ir2onnx.convert(xml)

"""A Loop-carried buffer written one row per iteration (TensorFlow's TensorArray as OpenVINO writes it) becomes a
Loop scan output when the loop provably runs once per row; every other buffer stays. Results stay OpenVINO's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from tests.fixture_paths import FIXTURES
from tests.passes.loop_models import body_of
from tests.utils import assert_equivalent, count_loops, count_ops, rng_inputs, save_ir

N, B, W = 5, 2, 3


def buffer_loop(*, trip: int = N, rows: int = N, by_condition: bool = False, reads_buffer: bool = False,
                data_condition: bool = False, row_zero: bool = False) -> ov.Model:
    """s' = tanh(s + x[i]) over X [N, B, W] read by Gather at the iteration i, each s' written to row i of a carried
    [rows, B, W] buffer (ScatterUpdate after a Broadcast of the buffer, as the TensorFlow frontend writes
    TensorListSetItem). `by_condition`: the trip count is -1 and a carried counter bounds the loop (i + 1 < trip);
    `reads_buffer`: the step also adds the buffer's sum; `data_condition`: the loop also stops once s' sums past 4;
    `row_zero`: every step writes row 0."""
    X = ops.parameter([N, B, W], np.float32, name="X")
    S0 = ops.parameter([B, W], np.float32, name="S0")
    it = ops.parameter([], np.int64, name="it")
    bx = ops.parameter([N, B, W], np.float32, name="x")
    bs = ops.parameter([B, W], np.float32, name="s")
    buf = ops.parameter([rows, -1, -1], np.float32, name="buf")
    counter = ops.parameter([], np.int64, name="counter")
    x = ops.gather(bx, it, ops.constant(np.int64(0)))
    pre = ops.add(bs, x)
    if reads_buffer:
        pre = ops.add(pre, ops.reduce_sum(buf, ops.constant(np.array([0], np.int64))))
    s = ops.tanh(pre)
    full = ops.broadcast(buf, ops.constant(np.array([rows, B, W], np.int64)))
    at = ops.constant(np.array([0], np.int64)) if row_zero else ops.reshape(it, ops.constant(np.array([1], np.int64)),
                                                                            False)
    new_buf = ops.scatter_update(full, at, ops.unsqueeze(s, ops.constant(np.int64(0))), ops.constant(np.int64(0)))
    next_counter = ops.add(counter, ops.constant(np.int64(1)))
    cond = ops.less(next_counter, ops.constant(np.int64(trip))) if by_condition else ops.constant(True)
    if data_condition:
        cond = ops.logical_and(cond, ops.less(ops.reduce_sum(s, ops.constant(np.array([0, 1], np.int64))),
                                              ops.constant(np.float32(4))))
    r_cond, r_s, r_buf, r_counter = ops.result(cond), ops.result(s), ops.result(new_buf), ops.result(next_counter)
    loop = ops.loop(ops.constant(np.int64(-1 if by_condition else trip)), ops.constant(True))
    loop.set_function(ov.Model([r_cond, r_s, r_buf, r_counter], [it, bx, bs, buf, counter]))
    loop.set_special_body_ports([0, 0])
    loop.set_invariant_input(bx, X.output(0))
    loop.set_merged_input(bs, S0.output(0), r_s.output(0))
    loop.set_merged_input(buf, ops.constant(np.zeros((rows, 1, 1), np.float32)).output(0), r_buf.output(0))
    loop.set_merged_input(counter, ops.constant(np.int64(0)).output(0), r_counter.output(0))
    return ov.Model([loop.get_iter_value(r_buf.output(0), -1), loop.get_iter_value(r_s.output(0), -1)], [X, S0])


def _scatters(xml: Path) -> tuple[int, int]:
    """(ScatterND in the Loop body, Loops) of the default conversion, after checking it (and fuse=False with no
    passes) against OpenVINO."""
    inputs = rng_inputs([((N, B, W), np.float32), ((B, W), np.float32)])
    assert_equivalent(xml, inputs, fuse=False, optimize=False)
    proto = assert_equivalent(xml, inputs)
    return count_ops(body_of(proto, "Loop"), "ScatterND"), count_loops(proto)


@pytest.mark.parametrize("by_condition", [False, True], ids=["trip_count", "counter_condition"])
def test_buffer_becomes_a_scan_output(tmp_path: Path, by_condition: bool) -> None:
    assert _scatters(save_ir(buffer_loop(by_condition=by_condition), tmp_path)) == (0, 1)


@pytest.mark.parametrize("kw", [{"trip": N - 2}, {"reads_buffer": True}, {"data_condition": True}, {"row_zero": True},
                                {"by_condition": True, "trip": N - 1}],
                         ids=["fewer_iterations_than_rows", "body_reads_the_buffer", "data_dependent_condition",
                              "one_row_overwritten", "counter_stops_early"])
def test_other_buffers_stay(tmp_path: Path, kw: dict) -> None:
    assert _scatters(save_ir(buffer_loop(**kw), tmp_path)) == (1, 1)


@pytest.mark.parametrize("name", ["tf_scan", "tf_map_fn", "tf_for_loop_columns", "tf_lstm_masking",
                                  "tf_v1_lstm_cell_projection", "tf_conv_lstm_2d"])
def test_tensorflow_loops(name: str) -> None:
    """The TensorFlow frontend's tf.scan, tf.map_fn, an autograph loop, a Keras LSTM behind a Masking layer (which
    stays a loop: masked steps keep the state), TensorFlow 1's dynamic_rnn over a cell with a projection (a loop
    too) and a Keras ConvLSTM2D (its NCHW row transposed to the NHWC buffer after the Unsqueeze) write their outputs
    to TensorLists or growing TensorArrays: scan outputs now."""
    d = FIXTURES / name
    stored = np.load(d / "inputs.npz")
    proto = assert_equivalent(d / "model.xml", [stored[n] for n in stored.files], rtol=1e-4)
    assert count_ops(proto, "ScatterND") == 0 and count_loops(proto) == 1


@pytest.mark.parametrize("name", ["tf_lstm_masking_run_time_length", "tf_conv_lstm_2d_run_time_length"])
@pytest.mark.parametrize("steps", [0, 1, 3, 6])
def test_run_time_length(name: str, steps: int) -> None:
    """A Keras LSTM behind a Masking layer, or a ConvLSTM2D (its write clipped, its row transposed), over a sequence
    of run-time length: the buffer becomes a scan output, and when no step runs the initial buffer is returned, of its
    own shape, as OpenVINO does."""
    d = FIXTURES / name
    x = np.load(d / "inputs.npz")["x"][:, :steps]
    proto = assert_equivalent(d / "model.xml", [x], rtol=1e-4)
    # the LSTM's loop also gets the fused alternative its masks allow when they are prefixes (prefix_mask.py): an
    # If more, whose else-branch holds the loop (these inputs mask a step inside a row)
    masked = name == "tf_lstm_masking_run_time_length"
    assert count_ops(proto, "ScatterND") == 0 and count_loops(proto) == 1 and count_ops(proto, "If") == 1 + masked


@pytest.mark.parametrize("name", ["tf_lite_lstm_seq", "tf_lite_gru_seq"])
def test_tensorflow_lite_list_writes(name: str) -> None:
    """TensorFlow Lite writes its TensorList as Concat(the rows before k, the row, the rows after k): left a loop
    (fuse=False), the buffer becomes a scan output all the same."""
    d = FIXTURES / name
    stored = np.load(d / "inputs.npz")
    plain = assert_equivalent(d / "model.xml", [stored[n] for n in stored.files], rtol=1e-4, fuse=False,
                              optimize=False)
    assert count_ops(body_of(plain, "Loop"), "Concat") == 3  # the write and its two slices' bounds
    proto = assert_equivalent(d / "model.xml", [stored[n] for n in stored.files], rtol=1e-4, fuse=False)
    assert count_ops(body_of(proto, "Loop"), "Concat") == 0 and count_loops(proto) == 1

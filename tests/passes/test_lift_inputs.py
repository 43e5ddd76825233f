"""Per-slice work on sliced loop inputs (input projections, biases, squeezes) runs once, batched, before the loop.

The recurrences here are spelled-out RNN cells, which recurrent fusion would turn into ONNX RNN nodes: fusion is
turned off to look at the loops."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx_ir as oir
import openvino as ov
import openvino.opset13 as ops
import pytest

from ir2onnx.passes import lift_inputs
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.fixture_paths import FIXTURES
from tests.passes.loop_models import body_of, ops_in, recurrence
from tests.utils import assert_equivalent, convert_checked, rng_inputs, save_ir

IN = [((2, 5, 8), np.float32), ((2, 8), np.float32)]


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_input_projection_becomes_a_scan_input(tmp_path: Path, reverse: bool) -> None:
    xml = save_ir(recurrence("ti", reverse=reverse), tmp_path)
    assert ops_in(convert_checked(xml, optimize=False, fuse=False).graph, "MatMul", bodies=True) == 2
    lean = assert_equivalent(xml, rng_inputs(IN), fuse=False)
    body = body_of(lean, "Scan")
    assert ops_in(lean.graph, "MatMul", bodies=True) == 1  # only h @ U is left per step
    assert ops_in(lean.graph, "MatMul", bodies=False) == 1  # X @ W^T for all steps at once
    assert ops_in(lean.graph, "Squeeze", bodies=True) == 0
    scan = next(n for n in lean.graph.node if n.op_type == "Scan")
    producer = {o: n for n in lean.graph.node for o in n.output}
    assert producer[scan.input[-1]].op_type == "MatMul"  # the projection is the scan input
    assert [i.name for i in body.input][-1] in {i for n in body.node for i in n.input}


def test_loop_slice_becomes_gather_of_the_projection(tmp_path: Path) -> None:
    xml = save_ir(recurrence("loop"), tmp_path)  # (OpenVINO's Loop-5 slices forward only)
    plain = convert_checked(xml, optimize=False, fuse=False)
    assert ops_in(plain.graph, "Slice", bodies=True) == 1 and ops_in(plain.graph, "MatMul", bodies=True) == 2
    lean = assert_equivalent(xml, rng_inputs(IN), fuse=False)
    assert ops_in(lean.graph, "Slice", bodies=True) == 0 and ops_in(lean.graph, "Squeeze", bodies=True) == 0
    assert ops_in(lean.graph, "Gather", bodies=True) == 1
    assert ops_in(lean.graph, "MatMul", bodies=True) == 1 and ops_in(lean.graph, "MatMul", bodies=False) == 1
    body = body_of(lean, "Loop")
    gather = next(n for n in body.node if n.op_type == "Gather")
    assert gather.input[1] == body.input[0].name  # the Gather reads the iteration number itself


@pytest.mark.parametrize("kind", ["ti", "loop"])
def test_projection_over_the_last_axis_stays(tmp_path: Path, kind: str) -> None:
    """Slicing the last axis: x_t @ W contracts what is the sliced axis of X, so nothing can be batched."""
    xml = save_ir(recurrence(kind, axis=2), tmp_path)
    lean = assert_equivalent(xml, rng_inputs([((2, 8, 5), np.float32), ((2, 8), np.float32)]), fuse=False)
    assert ops_in(lean.graph, "MatMul", bodies=True) == 2 and ops_in(lean.graph, "MatMul", bodies=False) == 0


@pytest.mark.parametrize("kind", ["ti", "loop"])
@pytest.mark.parametrize("bias_shape", [(8,), (2, 8)])
def test_bias_is_lifted_only_when_it_broadcasts_past_the_sliced_axis(tmp_path: Path, kind: str,
                                                                     bias_shape: tuple[int, ...]) -> None:
    """tanh(x_t @ W + bias + h @ U): Squeeze -> MatMul -> Add(bias) move out as one chain when the bias lines up
    with x_t's last axis ([8]); a [2, 8] bias would line up with X's [steps, size] instead, so its Add stays."""
    w = np.linspace(-0.5, 0.5, 64, dtype=np.float32).reshape(8, 8)
    bias = np.linspace(-1, 1, int(np.prod(bias_shape)), dtype=np.float32).reshape(bias_shape)

    def step(x, h):  # type: ignore[no-untyped-def]
        projected = ops.add(ops.matmul(x, ops.constant(w), False, False), ops.constant(bias))
        return ops.tanh(ops.add(projected, ops.matmul(h, ops.constant(w[::-1].copy()), False, False)))

    xml = save_ir(recurrence(kind, step=step), tmp_path)
    lean = assert_equivalent(xml, rng_inputs(IN), fuse=False)
    lifted = bias.ndim == 1
    assert ops_in(lean.graph, "MatMul", bodies=False) == 1 and ops_in(lean.graph, "MatMul", bodies=True) == 1
    assert ops_in(lean.graph, "Add", bodies=False) == int(lifted)
    assert ops_in(lean.graph, "Add", bodies=True) == 2 - int(lifted)


@pytest.mark.parametrize("kind", ["ti", "loop"])
@pytest.mark.parametrize("optimize", [False, True])
def test_elementwise_recurrence_against_numpy(tmp_path: Path, kind: str, optimize: bool) -> None:
    """h' = relu(x_t + h). OpenVINO's CPU plugin miscomputes this body (from the second step on it returns
    relu(x_t + x_t): the state's buffer is overwritten by the slice), so numpy is the reference here."""
    xml = save_ir(recurrence(kind, step=lambda x, h: ops.relu(ops.add(x, h))), tmp_path)
    x, h0 = rng_inputs(IN)
    proto = convert_checked(xml, optimize=optimize, fuse=False)
    y, last = run_onnxruntime(proto, {"X": x, "H0": h0})
    h, ys = h0, []
    for t in range(x.shape[1]):
        h = np.maximum(x[:, t] + h, 0)
        ys.append(h)
    np.testing.assert_allclose(y, np.stack(ys, 1), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(last, h, rtol=1e-6, atol=1e-6)
    if optimize:
        assert ops_in(proto.graph, "Squeeze", bodies=True) == 0 and ops_in(proto.graph, "Slice", bodies=True) == 0


def _reshape(target: list[int], allowzero: int = 0) -> oir.Node:
    shape = oir.Value(name="shape", const_value=oir.tensor(np.array(target, np.int64)))
    return oir.Node("", "Reshape", [oir.Value(name="x"), shape], [oir.AttrInt64("allowzero", allowzero)])


@pytest.mark.parametrize("dims,target,allowzero,axes", [
    ([2, 1, 4], [-1, 4], 1, [1]),  # the TensorIterator slice of a batch-first sequence
    ([None, 1, 4], [-1, 4], 0, [1]),  # dynamic batch: -1 takes it
    ([None, 1, 4], [0, 4], 0, [1]),  # a 0 copies dim 0
    ([None, 1, 4], [0, 4], 1, None),  # ... unless allowzero makes it a 0
    ([1, None, 4], [0, 4], 0, None),  # a 0 at position 0 copies the unit dim, not the batch
    ([1, 2, 1, 4], [2, 4], 0, [0, 2]),
    ([1, 2, 1, 4], [2, -1], 0, [0, 2]),
    ([2, 1, 4], [2, 1, 4], 0, []),  # nothing dropped
    ([2, 1, 4], [8], 0, None),  # merges dims
    ([2, 4, 1], [4, 2], 0, None),  # reorders
    ([None, 1, None], [-1, 4], 0, None),  # two unknown dims: the -1 is not one of them alone
    ([2, 1, 4], [-1, -1], 0, None),
])
def test_reshape_that_only_drops_unit_dims(dims: list[int | None], target: list[int], allowzero: int,
                                           axes: list[int] | None) -> None:
    assert lift_inputs._reshape_as_squeeze(_reshape(target, allowzero), dims) == axes


@pytest.mark.parametrize("x_rank,axis,axes", [
    (3, 0, [2]), (3, 1, [2]), (3, 1, [0]), (3, 2, [1, 3]), (3, 3, [-1]), (2, 0, [0, 1, 2]), (2, 1, [-4, 2]),
])
def test_unsqueeze_of_a_slice_against_numpy(x_rank: int, axis: int, axes: list[int]) -> None:
    """Unsqueeze(whole, lifted axes) sliced at the new slicing axis is Unsqueeze(slice, axes), for slices cut on any
    axis."""
    node = oir.Node("", "Unsqueeze", [oir.Value(name="x"), oir.Value(name="axes")], outputs=[oir.Value(name="y")])
    lifted = lift_inputs._lift_unsqueeze(node, axes, axis, x_rank, oir.Value(name="whole"))
    assert lifted is not None
    lifted_axes = list(lifted.nodes[0].attributes["value"].as_tensor().numpy())
    whole = np.random.default_rng(0).standard_normal([2, 3, 4, 5][:x_rank + 1])
    for k in range(whole.shape[axis]):
        expected = np.expand_dims(np.take(whole, k, axis=axis), axes)
        np.testing.assert_array_equal(np.take(np.expand_dims(whole, lifted_axes), k, axis=lifted.axis), expected)


def _image_recurrence(kind: str, op: str) -> ov.Model:
    """h' = tanh(f(x_t) + h conv U) over X [2, 5, 3, 6, 6] sliced on axis 1, f a per-sample op of the image x_t;
    for "conv1d_as_2d", X [2, 5, 3, 6] and f a 1-D convolution written as a 2-D one between Unsqueeze and Squeeze."""
    rng = np.random.default_rng(0)
    c = 3

    def w(*shape: int) -> ov.Output:
        return ops.constant((rng.standard_normal(shape) * 0.3).astype(np.float32))

    if op == "conv1d_as_2d":
        def step1d(x_t: Any, h: Any) -> Any:
            two_d = ops.convolution(ops.unsqueeze(x_t, ops.constant(np.int64(2))), w(c, c, 1, 3), [1, 1], [0, 1],
                                    [0, 1], [1, 1])
            f = ops.squeeze(two_d, ops.constant(np.array([2], np.int64)))
            return ops.tanh(ops.add(f, ops.convolution(h, w(c, c, 3), [1], [1], [1], [1])))

        return recurrence(kind, steps=5, image=(c, 6), step=step1d)

    def f(x_t: Any) -> Any:
        if op == "conv":
            return ops.add(ops.convolution(x_t, w(c, c, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1]), w(1, c, 1, 1))
        if op == "group_conv":
            return ops.group_convolution(x_t, w(c, 1, 1, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1])
        return ops.convolution_backprop_data(x_t, w(c, c, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1])

    def step(x_t: Any, h: Any) -> Any:
        return ops.tanh(ops.add(f(x_t), ops.convolution(h, w(c, c, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1])))

    return recurrence(kind, steps=5, image=(c, 6, 6), step=step)


@pytest.mark.parametrize("kind", ["ti", "loop"])
@pytest.mark.parametrize("op", ["conv", "group_conv", "conv_transpose", "conv1d_as_2d"])
def test_per_sample_ops_of_the_slice_run_once_for_all_steps(tmp_path: Path, kind: str, op: str) -> None:
    """A convolution of the sliced image (behind an Unsqueeze too) runs once, over every step's samples merged into
    its batch."""
    xml = save_ir(_image_recurrence(kind, op), tmp_path)
    image = (3, 6) if op == "conv1d_as_2d" else (3, 6, 6)
    lean = assert_equivalent(xml, rng_inputs([((2, 5, *image), np.float32), ((2, *image), np.float32)]), fuse=False)
    onnx_op = "ConvTranspose" if op == "conv_transpose" else "Conv"
    assert ops_in(lean.graph, onnx_op, bodies=False) == 1  # f over all steps
    assert ops_in(lean.graph, onnx_op, bodies=True) == (1 if onnx_op == "Conv" else 0)  # only h conv U per step


def test_keras_conv_lstm_input_convolutions_leave_the_loop() -> None:
    """OpenVINO's TensorFlow frontend writes Keras' ConvLSTM2D as a Loop with four convolutions of the step's image
    (one per gate) and four of the state: the first four run before the loop, over every step at once."""
    d = FIXTURES / "tf_conv_lstm_2d"
    stored = np.load(d / "inputs.npz")
    proto = assert_equivalent(d / "model.xml", [stored[n] for n in stored.files], rtol=1e-4)
    assert ops_in(proto.graph, "Conv", bodies=False) == 4
    gathers = [n for n in body_of(proto, "Loop").node if n.op_type == "Gather"]
    assert len(gathers) == 4  # each gate's convolution at the step

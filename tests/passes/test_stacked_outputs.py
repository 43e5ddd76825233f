"""Per-iteration outputs are stacked without the unit slice axis, which is added once after the loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.passes.loop_models import ops_in, recurrence
from tests.utils import assert_equivalent, convert_checked, rng_inputs, save_ir

B = np.linspace(-0.5, 0.5, 8, dtype=np.float32)


def _elementwise(x_t: Any, h: Any) -> Any:
    return ops.tanh(ops.add(ops.multiply(x_t, h), ops.constant(B)))


@pytest.mark.parametrize("kind,reverse", [("ti", False), ("ti", True), ("loop", False)])
@pytest.mark.parametrize("axis", [1, 2])
def test_no_unsqueeze_per_iteration(tmp_path: Path, kind: str, reverse: bool, axis: int) -> None:
    """TensorIterator -> Scan (stacked on the slice axis, forward or reverse) and Loop -> Loop (stacked on 0)."""
    xml = save_ir(recurrence(kind, reverse=reverse, axis=axis), tmp_path)
    plain = convert_checked(xml, optimize=False, fuse=False)
    assert ops_in(plain.graph, "Unsqueeze", bodies=True) == 1
    shape = (2, 5, 8) if axis == 1 else (2, 8, 5)
    lean = assert_equivalent(xml, rng_inputs([(shape, np.float32), ((2, 8), np.float32)]), fuse=False)
    assert ops_in(lean.graph, "Unsqueeze", bodies=True) == 0


@pytest.mark.parametrize("kind", ["ti", "loop"])
def test_elementwise_body_against_numpy(tmp_path: Path, kind: str) -> None:
    """h' = tanh(x_t * h + b). Judged by numpy: OpenVINO's CPU plugin computes this recurrence wrongly (from the
    second step on, the state it reads is the current input slice: for h' = x_t + h it returns 2 x_t)."""
    xml = save_ir(recurrence(kind, step=_elementwise), tmp_path)
    lean = convert_checked(xml, fuse=False)
    assert ops_in(lean.graph, "Unsqueeze", bodies=True) == 0
    x, h0 = rng_inputs([((2, 5, 8), np.float32), ((2, 8), np.float32)])
    h, ys = h0, []
    for t in range(5):
        h = np.tanh(x[:, t] * h + B)
        ys.append(h)
    got = run_onnxruntime(lean, {"X": x, "H0": h0})
    np.testing.assert_allclose(got[0], np.stack(ys, 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], h, rtol=1e-5, atol=1e-6)


def test_stacked_value_that_is_no_state(tmp_path: Path) -> None:
    """The stacked value (h * h_prev: per-step work on two per-step values, which stays in the loop) is no other body
    output: the body returns it directly, no Identity."""
    X = ops.parameter([3, 4, 5], np.float32, name="X")
    H0 = ops.parameter([3, 5], np.float32, name="H0")
    bx, bh = ops.parameter([3, 1, 5], np.float32), ops.parameter([3, 5], np.float32)
    h = ops.tanh(ops.add(ops.matmul(ops.squeeze(bx, [1]), ops.constant(np.eye(5, dtype=np.float32) * 0.5), False,
                                    False), bh))
    r_h, r_y = ops.result(h), ops.result(ops.unsqueeze(ops.multiply(h, bh), 1))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_h, r_y], [bx, bh]))
    ti.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(bh, H0.output(0), r_h.output(0))
    model = ov.Model([ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1)], [X, H0])
    lean = assert_equivalent(save_ir(model, tmp_path), rng_inputs([((3, 4, 5), np.float32), ((3, 5), np.float32)]),
                             fuse=False)
    assert ops_in(lean.graph, "Unsqueeze", bodies=True) == 0
    assert ops_in(lean.graph, "Identity", bodies=True) == 0


@pytest.mark.parametrize("kind", ["ti", "loop"])
def test_concatenated_output_needs_no_copy(tmp_path: Path, kind: str) -> None:
    """A concatenated output on axis 1 with a run-time batch: the graph output is the Scan's own output (stacked on
    axis 1), or the Loop's stack moved there by one rank-3 Transpose. No Reshape writes it (onnxruntime copies a graph
    output a Reshape writes) and no rank-4 Transpose of [T, B, 1, W] moves it."""
    xml = save_ir(recurrence(kind, batch=-1), tmp_path)
    lean = assert_equivalent(xml, rng_inputs([((3, 5, 8), np.float32), ((3, 8), np.float32)]), fuse=False)
    producers = {o: n for n in lean.graph.node for o in n.output}
    y = producers[lean.graph.output[0].name]
    if kind == "ti":
        assert y.op_type == "Scan"
    else:
        assert y.op_type == "Transpose" and list(y.attribute[0].ints) == [1, 0, 2]
    assert ops_in(lean.graph, "Reshape", bodies=False) == 0
    assert all(len(n.attribute[0].ints) < 4 for n in lean.graph.node if n.op_type == "Transpose")

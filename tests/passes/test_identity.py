"""No Identity chains: Identity nodes stay only where a graph returns an input or an outer value, or returns one
value twice (onnxruntime's Scan mishandles a value listed as two outputs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import openvino.opset13 as ops
import pytest

from tests.passes.loop_models import recurrence
from tests.utils import assert_equivalent, ov, rng_inputs, save_ir


def identities(graph: onnx.GraphProto) -> list[tuple[onnx.GraphProto, onnx.NodeProto]]:
    found = [(graph, n) for n in graph.node if n.op_type == "Identity"]
    for n in graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                found += identities(a.g)
    return found


def assert_only_needed_identities(proto: onnx.ModelProto) -> None:
    for graph, node in identities(proto.graph):
        produced = {o for n in graph.node for o in n.output}
        assert node.output[0] in {o.name for o in graph.output}, f"Identity {node.name} is no graph output"
        outputs = [o.name for o in graph.output]
        assert node.input[0] not in produced or node.input[0] in outputs, \
            f"Identity {node.name} copies a value its own graph computes and does not return itself"


@pytest.mark.parametrize("kind", ["ti", "loop"])
def test_recurrences_keep_only_needed_identities(tmp_path: Path, kind: str) -> None:
    xml = save_ir(recurrence(kind), tmp_path)
    inputs = rng_inputs([((2, 5, 8), np.float32), ((2, 8), np.float32)])
    assert_only_needed_identities(assert_equivalent(xml, inputs, fuse=False))


def test_state_passed_through_and_output_twice(tmp_path: Path) -> None:
    """A state the body returns unchanged, and one body value returned as two outputs (state and concat)."""
    X = ops.parameter([3, 4], np.float32, name="X")
    S = ops.parameter([4], np.float32, name="S")
    T = ops.parameter([4], np.float32, name="T")
    bx, bs, bt = ops.parameter([1, 4], np.float32), ops.parameter([4], np.float32), ops.parameter([4], np.float32)
    new_t = ops.add(bt, ops.squeeze(bx, [0]))
    r_s, r_t, r_y = ops.result(bs), ops.result(new_t), ops.result(ops.unsqueeze(new_t, 0))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_s, r_t, r_y], [bx, bs, bt]))
    ti.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 0)
    ti.set_merged_input(bs, S.output(0), r_s.output(0))
    ti.set_merged_input(bt, T.output(0), r_t.output(0))
    model = ov.Model([ti.get_iter_value(r_s.output(0), -1), ti.get_iter_value(r_t.output(0), -1),
                      ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0)], [X, S, T])
    xml = save_ir(model, tmp_path)
    inputs = rng_inputs([((3, 4), np.float32), ((4,), np.float32), ((4,), np.float32)])
    lean = assert_equivalent(xml, inputs, fuse=False)
    assert_only_needed_identities(lean)

"""Scans that read and stack forward along axis 0: other axes and reverse directions moved outside the node.

The translation gives a Scan the TensorIterator's own slicing: its axis (`scan_input_axes`, `scan_output_axes`) and
its direction (a negative stride: `scan_input_directions`, `scan_output_directions`). onnx's reference implementation
refuses any axis but 0 and any reverse direction, and other consumers implement only Scan-8's forward, leading-axis
form well. Outside the node the same is a Transpose bringing the axis to the front and a reversal (a Slice with step
-1) before a scan input, and the reversal and the Transpose back after a scan output: the body sees the same slices
in the same order, and the outputs are the same tensors.
"""

from __future__ import annotations

from collections.abc import MutableSet

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_nodes, carried_count, is_default_domain, scan_ints
from ir2onnx.passes.analysis.shapes import infer_shapes
from ir2onnx.passes.analysis.values import rank_of
from ir2onnx.passes.rewrite import Emitter, all_names, inherit_meta, take_place

_AXES = ("scan_input_axes", "scan_input_directions", "scan_output_axes", "scan_output_directions")


class ForwardScanAxesPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        scans = [n for n in all_nodes(model.graph) if n.op_type == "Scan" and is_default_domain(n) and _moving(n)]
        if not scans:
            return oir.passes.PassResult(model, modified=False)
        infer_shapes(model)  # ranks of the inputs and the body's outputs
        names = all_names(model.graph)
        modified = False
        for node in scans:
            modified |= _forward(node, model.graph, names)
        return oir.passes.PassResult(model, modified=modified)


def _moving(node: oir.Node) -> bool:
    return any(any(v != 0 for v in node.attributes[a].as_ints()) for a in _AXES if a in node.attributes)


def _forward(node: oir.Node, root: oir.Graph, names: MutableSet[str]) -> bool:
    """Move `node`'s axes and directions out, where the ranks are known (all of them, or nothing changes)."""
    body = node.attributes["body"].as_graph()
    states = carried_count(node)
    n_in, n_out = len(node.inputs) - states, len(body.outputs) - states
    in_axes, in_dirs = scan_ints(node, _AXES[0], n_in), scan_ints(node, _AXES[1], n_in)
    out_axes, out_dirs = scan_ints(node, _AXES[2], n_out), scan_ints(node, _AXES[3], n_out)
    in_ranks = [rank_of(node.inputs[states + j]) for j in range(n_in)]
    out_ranks = [_stacked_rank(node, body, states + k) for k in range(n_out)]
    if any(r is None for r, a in zip(in_ranks, in_axes) if a) or \
            any(r is None for r, a in zip(out_ranks, out_axes) if a):
        return False
    before = Emitter(node, root, names)
    for j, (axis, reverse, rank) in enumerate(zip(in_axes, in_dirs, in_ranks)):
        x = node.inputs[states + j]
        y = before.to0(x, axis % rank, rank) if axis else x  # type: ignore[arg-type, operator]
        y = before.reverse(y, 0) if reverse else y
        if y is not x:
            node.replace_input_with(states + j, y)
    before.commit()
    after = Emitter(node, root, names)
    for k, (axis, reverse, rank) in enumerate(zip(out_axes, out_dirs, out_ranks)):
        if not (axis or reverse):
            continue
        stacked = node.outputs[states + k]
        first = len(after.nodes)
        y = after.reverse(stacked, 0) if reverse else stacked
        y = after.move0(y, axis % rank, rank) if axis else y  # type: ignore[arg-type, operator]
        take_place(stacked, y)  # readers and the graph output (with its name) take the rearranged stack
        after.nodes[first].replace_input_with(0, stacked)
        stacked.name, stacked.shape = after.fresh("stacked"), None  # (its declared shape was the output's)
    for n in after.nodes:
        inherit_meta(n, node)
    if after.nodes:
        node.graph.insert_after(node, after.nodes)  # type: ignore[union-attr]
    for a in _AXES:
        node.attributes.pop(a, None)  # (every axis 0, every direction forward: ONNX's defaults)
    return True


def _stacked_rank(node: oir.Node, body: oir.Graph, i: int) -> int | None:
    """The rank of the Scan's output i (its body output's, plus the stacking axis)."""
    r = rank_of(body.outputs[i])
    if r is not None:
        return r + 1
    return rank_of(node.outputs[i])

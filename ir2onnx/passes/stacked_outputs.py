"""Stack a loop's per-iteration outputs without adding an axis to each of them inside the body.

A TensorIterator's or Loop's concatenated output is the body value with a unit axis for the slice ([B, 1, W] for a
[B, W] step); translated, the body ends in an Unsqueeze per iteration and the Loop/Scan stacks the [B, 1, W]
values. Stacking the [B, W] values instead and adding the unit axis once, outside, to the stacked [T, B, W] gives
the same tensor and one op less per iteration (a value the body also returns as a state goes through an Identity, as
in a hand-written loop: onnxruntime's Scan mishandles one value listed as two outputs). Loop and Scan outputs stacked on axis 0, Unsqueeze with
one constant axis.
"""

from __future__ import annotations

from collections.abc import MutableSet

import onnx_ir as ir

from ir2onnx.passes.fuse_rnn_util import all_names, distinct_output, fresh_name
from ir2onnx.passes.loop_utils import (
    const_ints,
    inherit_meta,
    is_default_domain,
    loops_innermost_first,
    stacked_outputs,
)


class StackedOutputsPass(ir.passes.InPlacePass):
    def call(self, model: ir.Model) -> ir.passes.PassResult:
        names = all_names(model.graph)
        modified = False
        for loop, body, outer in loops_innermost_first(model.graph):
            modified |= _rewrite(loop, body, outer, names)
        return ir.passes.PassResult(model, modified=modified)


def _rewrite(loop: ir.Node, body: ir.Graph, outer: ir.Graph, names: MutableSet[str]) -> bool:
    modified = False
    new_axes: list[int] = []
    for i, axis in stacked_outputs(loop, body):
        new_axes.append(axis)
        v = body.outputs[i]
        node = v.producer()
        if axis < 0 or node is None or node.op_type != "Unsqueeze" or not is_default_domain(node) \
                or node.graph is not body:
            continue
        axes = const_ints(node.inputs[1]) if len(node.inputs) > 1 else None
        x = node.inputs[0]
        if axes is None or len(axes) != 1 or axes[0] < 0 or x is None:
            continue
        k = axes[0]
        # v = x with a unit axis at k, stacked on `axis`: x stacked on `axis` (or axis - 1 past k), unit axis after
        new_axes[-1] = axis if axis <= k else axis - 1
        unit = k + 1 if axis <= k else k
        body.outputs[i] = distinct_output(x, body, names, str(v.name), node)
        _restack(loop, outer, loop.outputs[i - 1 if loop.op_type == "Loop" else i], unit, names)
        modified = True
    if modified and loop.op_type == "Scan" and "scan_output_axes" in loop.attributes:
        loop.attributes["scan_output_axes"] = ir.AttrInt64s("scan_output_axes", new_axes)
    return modified


def _restack(loop: ir.Node, outer: ir.Graph, out: ir.Value, axis: int, names: MutableSet[str]) -> None:
    """The loop now stacks values without the unit axis: its readers read `out` with that axis added back."""
    hint = out.name or "stacked"
    axes = ir.Value(name=fresh_name(names, f"{hint}/unit_axis"))
    const = ir.Node("", "Constant", [], [ir.AttrTensor("value", ir.tensor([axis], ir.DataType.INT64))], outputs=[axes],
                    name=fresh_name(names, f"{hint}/unit_axis_node"))
    full = ir.Value(name=fresh_name(names, f"{hint}/with_unit_axis"), type=out.type, shape=out.shape)
    out.replace_all_uses_with(full, replace_graph_outputs=True)  # before the Unsqueeze reads `out`
    if full.is_graph_output():
        full.name, out.name = out.name, fresh_name(names, f"{hint}/stacked")
    dims = list(out.shape) if out.shape is not None and 0 <= axis < len(out.shape) else None
    if dims is not None:
        del dims[axis]  # the unit axis
    out.shape = ir.Shape(dims) if dims is not None else None
    unsqueeze = ir.Node("", "Unsqueeze", [out, axes], outputs=[full], name=fresh_name(names, f"{hint}/unsqueeze"))
    for n in (const, unsqueeze):
        inherit_meta(n, loop)
    outer.insert_after(loop, [const, unsqueeze])

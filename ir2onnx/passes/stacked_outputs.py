"""Stack a loop's per-iteration outputs without adding an axis to each of them inside the body.

A TensorIterator's or Loop's concatenated output is the body value with a unit axis for the slice ([B, 1, W] for a
[B, W] step); translated, the body ends in an Unsqueeze per iteration and the Loop/Scan stacks the [B, 1, W]
values. Stacking the [B, W] values instead and adding the unit axis once, outside, to the stacked [T, B, W] gives
the same tensor and one op less per iteration (a value the body also returns as a state goes through an Identity, as
in a hand-written loop: onnxruntime's Scan mishandles one value listed as two outputs). Loop and Scan outputs stacked on axis 0, Unsqueeze with
one constant axis.

Where the stacked value's one reader is a Transpose (a Loop's output concatenated on axis 1 is its stack moved
there), the Transpose moves the stack and the unit axis is added after it: onnxruntime transposes a [T, B, 1, W]
tensor about half as fast as the same data as [T, B, W] (batch 16, width 256, 250 steps: 0.32 against 0.15 ms).
And where the translation then merges the unit axis into its neighbour (the concatenated output's Reshape of
control_flow/common.py merge_axes, built from Shape reads of the same tensor), that Reshape is the tensor without its
unit axis: the value before the Unsqueeze is read instead. A Reshape writing a graph output is a copy in onnxruntime:
for a Loop's [B, T, 256] output at batch 16 it cost 3 us an iteration, 1.27x a hand-written Loop's time per
iteration (scripts/bench/bench_loop_overhead.py --batch 16 --size 256), 0.98x without it.
"""

from __future__ import annotations

from collections.abc import MutableSet

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import is_default_domain, loops_innermost_first, stacked_outputs
from ir2onnx.passes.analysis.values import const_ints
from ir2onnx.passes.rewrite import (
    all_names,
    distinct_output,
    fresh_name,
    inherit_meta,
    read_instead,
    record,
    take_place,
)


class StackedOutputsPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        names = all_names(model.graph)
        modified = False
        for loop, body, outer in loops_innermost_first(model.graph):
            modified |= _rewrite(loop, body, outer, names)
        return oir.passes.PassResult(model, modified=modified)


def _rewrite(loop: oir.Node, body: oir.Graph, outer: oir.Graph, names: MutableSet[str]) -> bool:
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
        loop.attributes["scan_output_axes"] = oir.AttrInt64s("scan_output_axes", new_axes)
    return modified


def _restack(loop: oir.Node, outer: oir.Graph, out: oir.Value, axis: int, names: MutableSet[str]) -> None:
    """The loop now stacks values without the unit axis: its readers read `out` with that axis added back."""
    hint = out.name or "stacked"
    full = oir.Value(name=fresh_name(names, f"{hint}/with_unit_axis"), type=out.type, shape=out.shape)
    record(out, full)
    out.replace_all_uses_with(full, replace_graph_outputs=True)  # before the Unsqueeze reads `out`
    if full.is_graph_output():
        full.name, out.name = out.name, fresh_name(names, f"{hint}/stacked")
    out.shape = _without_axis(out.shape, axis)
    nodes = _unsqueeze(out, axis, full, hint, names, loop)
    outer.insert_after(loop, nodes)
    unsqueeze, axis = _past_transpose(nodes[-1], axis, outer, names)
    _skip_merges(unsqueeze, axis, outer)


def _without_axis(shape: oir.Shape | None, axis: int) -> oir.Shape | None:
    """`shape` with its (unit) axis `axis` dropped; None where it is unknown or has no such axis."""
    if shape is None or not 0 <= axis < len(shape):
        return None
    dims = list(shape)
    del dims[axis]
    return oir.Shape(dims)


def _unsqueeze(x: oir.Value, axis: int, result: oir.Value, hint: str, names: MutableSet[str],
               like: oir.Node) -> list[oir.Node]:
    """A Constant [axis] and Unsqueeze(x, it) -> result, standing for `like` (its layer)."""
    axes = oir.Value(name=fresh_name(names, f"{hint}/unit_axis"))
    nodes = [oir.Node("", "Constant", [], [oir.AttrTensor("value", oir.tensor([axis], oir.DataType.INT64))],
                     outputs=[axes], name=fresh_name(names, f"{hint}/unit_axis_node")),
             oir.Node("", "Unsqueeze", [x, axes], outputs=[result], name=fresh_name(names, f"{hint}/unsqueeze"))]
    for n in nodes:
        inherit_meta(n, like)
    return nodes


def _past_transpose(unsqueeze: oir.Node, axis: int, outer: oir.Graph, names: MutableSet[str]) -> tuple[oir.Node, int]:
    """Unsqueeze(x, axis) read only by Transpose(perm) becomes Transpose(x, perm without the unit axis) and an
    Unsqueeze where perm puts the unit axis: the same tensor, the Transpose moving a tensor of one rank less. The
    Unsqueeze that adds the unit axis in the end, and where."""
    full = unsqueeze.outputs[0]
    uses = list(full.uses())
    if len(uses) != 1 or full.is_graph_output():
        return unsqueeze, axis
    node = uses[0].node
    if node.op_type != "Transpose" or not is_default_domain(node) or node.graph is not outer \
            or "perm" not in node.attributes:
        return unsqueeze, axis
    perm = [int(p) for p in node.attributes["perm"].as_ints()]
    if sorted(perm) != list(range(len(perm))) or not 0 <= axis < len(perm):
        return unsqueeze, axis
    x, y = unsqueeze.inputs[0], node.outputs[0]
    assert x is not None
    at = perm.index(axis)
    hint = y.name or "transposed"
    moved = oir.Value(name=fresh_name(names, f"{hint}/without_unit_axis"), type=y.type,
                     shape=_without_axis(y.shape, at) if y.shape is not None and len(y.shape) == len(perm) else None)
    result = oir.Value(name=fresh_name(names, f"{hint}/with_unit_axis"), type=y.type, shape=y.shape)
    transpose = oir.Node("", "Transpose", [x], [oir.AttrInt64s("perm", [p - (p > axis) for p in perm if p != axis])],
                        outputs=[moved], name=fresh_name(names, f"{hint}/transpose"))
    new = [inherit_meta(transpose, node), *_unsqueeze(moved, at, result, hint, names, node)]
    outer.insert_after(node, new)
    take_place(y, result)
    const = unsqueeze.inputs[1].producer() if len(unsqueeze.inputs) > 1 and unsqueeze.inputs[1] is not None else None
    outer.remove([node, unsqueeze], safe=True)
    if const is not None and not const.outputs[0].uses():
        outer.remove(const, safe=True)
    return new[-1], at


def _skip_merges(unsqueeze: oir.Node, axis: int, outer: oir.Graph) -> None:
    """Readers of Unsqueeze(x, axis) that merge the unit axis into a neighbour read x instead."""
    x, full = unsqueeze.inputs[0], unsqueeze.outputs[0]
    assert x is not None
    for use in list(full.uses()):
        node = use.node
        if use.idx != 0 or node.graph is not outer or not _merges(node, full, axis):
            continue
        if read_instead(node.outputs[0], x, outer):
            outer.remove(node, safe=True)


def _merges(node: oir.Node, v: oir.Value, unit: int) -> bool:
    """Whether `node` is merge_axes(v, k) for k = unit - 1 or unit (control_flow/common.py):
    Reshape(v, Concat(Shape(v, 0, k), Mul(Shape(v, k, k + 1), Shape(v, k + 1, k + 2)), Shape(v, k + 2)))."""
    if node.op_type != "Reshape" or not is_default_domain(node) or len(node.inputs) != 2 or node.inputs[1] is None:
        return False
    concat = node.inputs[1].producer()
    if concat is None or concat.op_type != "Concat" or not is_default_domain(concat) or len(concat.inputs) != 3:
        return False
    before, merged, after = concat.inputs
    mul = merged.producer() if merged is not None else None
    if mul is None or mul.op_type != "Mul" or not is_default_domain(mul) or len(mul.inputs) != 2:
        return False
    spans = [_span(before, v), _span(mul.inputs[0], v), _span(mul.inputs[1], v), _span(after, v)]
    k = spans[1][0] if spans[1] is not None else None
    return k is not None and spans == [(0, k), (k, k + 1), (k + 1, k + 2), (k + 2, None)] and unit in (k, k + 1)


def _span(value: oir.Value | None, v: oir.Value) -> tuple[int, int | None] | None:
    """(start, end) of Shape(v, start, end) when that is what computes `value` (non-negative bounds only)."""
    node = value.producer() if value is not None else None
    if node is None or node.op_type != "Shape" or not is_default_domain(node) or node.inputs[0] is not v:
        return None
    start, end = node.attributes.get("start"), node.attributes.get("end")
    bounds = (0 if start is None else start.as_int(), None if end is None else end.as_int())
    return None if bounds[0] < 0 or (bounds[1] is not None and bounds[1] < 0) else bounds

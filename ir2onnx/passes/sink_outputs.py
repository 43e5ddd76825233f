"""Move per-step work that only feeds a loop's stacked output out of the loop, onto the stacked tensor.

A body that computes y_t = f(v_t) for its per-iteration output only (a projection and an activation of the new
hidden state: tanh(h_t @ W_o)) runs f once per step. When f is a chain of ops that act on every slice alike (unary
elementwise ops, broadcasting binary ops and a MatMul with a loop-invariant operand, Unsqueeze/Squeeze/Reshape/
Transpose/Softmax with their axes moved past the new leading axis), the loop stacks v_t instead and f runs once, after
it, on the stacked [T, ...] tensor; a Transpose puts the stacked axis where the output had it. Besides saving the
per-step ops, this leaves a recurrent cell alone in its body, so that the fusion can take it.

v_t must be computed in the body (not one of its inputs); a v_t the body also returns as a state is stacked through
an Identity (onnxruntime's Scan mishandles one value listed as two outputs). Chains of reshapes alone are left to
StackedOutputsPass.
"""

from __future__ import annotations

from collections.abc import MutableSet
from typing import NamedTuple

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import (
    BROADCASTING_BINARY,
    NONDETERMINISTIC,
    UNARY_ELEMENTWISE,
    attr,
    defined_in,
    input_at,
    is_default_domain,
    loops_innermost_first,
    stacked_outputs,
)
from ir2onnx.passes.analysis.values import const_ints, rank_of
from ir2onnx.passes.rewrite import all_names, distinct_output, fresh_name, inherit_meta

_GLUE = frozenset({"Identity", "Unsqueeze", "Squeeze", "Reshape", "Transpose"})


class SinkStepOutputsPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        names = all_names(model.graph)
        modified = False
        for loop, body, outer in loops_innermost_first(model.graph):
            for index, axis in stacked_outputs(loop, body):
                chain = _chain(body, body.outputs[index])
                if chain is not None:
                    _sink(loop, body, outer, index, axis, chain, names)
                    modified = True
        return oir.passes.PassResult(model, modified=modified)


class _Step(NamedTuple):
    node: oir.Node
    varying: int  # which input carries the per-step value
    rank_in: int  # per-step rank of that input


def _chain(body: oir.Graph, out: oir.Value) -> tuple[oir.Value, list[_Step]] | None:
    """(the per-step value v_t, the ops from it to `out` in order) when everything between is sinkable."""
    if list(body.outputs).count(out) != 1 or out.uses() or out.is_graph_input():
        return None
    steps: list[_Step] = []
    v = out
    while True:
        node = v.producer()
        if node is None or node.graph is not body or not is_default_domain(node) or len(node.outputs) != 1:
            break
        varying = [i for i, x in enumerate(node.inputs) if x is not None and _per_step(x, body)]
        if len(varying) != 1 or not _batchable(node, varying[0]):
            break
        if any(x is not None and defined_in(x, body) for i, x in enumerate(node.inputs) if i != varying[0]):
            break  # a constant of the body's own: not visible after the loop (hoisting moves such constants out)
        x = node.inputs[varying[0]]
        assert x is not None
        if x.is_graph_input() or x.producer() is None:
            break  # a body input (the slice, a state): its stack is not at hand
        r = rank_of(x)
        if r is None:
            break
        steps.append(_Step(node, varying[0], r))
        v = x
        if v.is_graph_output() or len(v.uses()) != 1:
            break  # v_t is needed in the body as well: stack it
    steps.reverse()
    misfits = [i for i, s in enumerate(steps) if not _fits(s)]
    if misfits:  # only the ops after the last one that cannot take the stacked value move
        steps = steps[misfits[-1] + 1:]
    if not steps or all(s.node.op_type in _GLUE for s in steps):
        return None
    first = steps[0]
    start = first.node.inputs[first.varying]
    assert start is not None
    return start, steps


def _per_step(v: oir.Value, body: oir.Graph) -> bool:
    """Whether `v` may change from one iteration to the next (computed in the body from its inputs)."""
    if not defined_in(v, body):
        return False
    node = v.producer()
    if node is None:
        return v not in body.initializers.values()
    return not (node.op_type == "Constant" and not node.inputs)


def _batchable(node: oir.Node, varying: int) -> bool:
    op = node.op_type
    if op in NONDETERMINISTIC:
        return False
    if op in UNARY_ELEMENTWISE or op == "Clip":
        return varying == 0
    if op in BROADCASTING_BINARY:
        return len(node.inputs) == 2
    if op == "MatMul":
        return varying == 0 and rank_of(node.inputs[1]) == 2
    if op in ("Unsqueeze", "Squeeze"):
        return varying == 0 and const_ints(input_at(node, 1)) is not None
    if op == "Reshape":
        shape = const_ints(input_at(node, 1))
        # no -1: after a loop that ran no iteration the stacked value is empty and a -1 could not be inferred
        return varying == 0 and shape is not None and -1 not in shape and not (attr(node, "allowzero", 0) and 0 in shape)
    if op in ("Transpose", "Softmax", "LogSoftmax"):
        return varying == 0
    return False


def _fits(step: _Step) -> bool:
    """Whether the op gives slice t of its result when given the stacked [T, ...] value (its invariant operands
    broadcast against the slice's own dims)."""
    node = step.node
    if node.op_type in BROADCASTING_BINARY:
        other = node.inputs[1 - step.varying]
        r = rank_of(other)
        return r is not None and r <= step.rank_in
    if node.op_type == "MatMul":
        return step.rank_in >= 1
    return True


def _sink(loop: oir.Node, body: oir.Graph, outer: oir.Graph, index: int, axis: int,
          chain: tuple[oir.Value, list[_Step]], names: MutableSet[str]) -> None:
    start, steps = chain
    old = loop.outputs[index - 1 if loop.op_type == "Loop" else index]
    hint = old.name or "stacked"
    new_nodes: list[oir.Node] = []

    def emit(op: str, inputs: list[oir.Value | None], attrs: list[oir.Attr], like: oir.Node) -> oir.Value:
        out = oir.Value(name=fresh_name(names, f"{hint}/{op}"))
        new_nodes.append(inherit_meta(oir.Node("", op, inputs, attrs, outputs=[out],
                                              name=fresh_name(names, f"{hint}/{op}_node")), like))
        return out

    def ints(values: list[int], like: oir.Node) -> oir.Value:
        return emit("Constant", [], [oir.AttrTensor("value", oir.tensor(values, oir.DataType.INT64))], like)

    # the body stacks v_t itself, on axis 0
    body.outputs[index] = distinct_output(start, body, names, hint, loop)
    if loop.op_type == "Scan":
        axes = [0 if i == index else a for i, a in stacked_outputs(loop, body)]
        loop.attributes["scan_output_axes"] = oir.AttrInt64s("scan_output_axes", axes)
    uses = list(old.uses())
    # ... and the chain runs once on the stacked value, every per-step axis one further
    x: oir.Value = old
    for step in steps:
        node = step.node
        inputs = list(node.inputs)
        inputs[step.varying] = x
        attrs = list(node.attributes.values())
        op = node.op_type
        r = step.rank_in
        if op in ("Unsqueeze", "Squeeze"):
            given = const_ints(input_at(node, 1)) or []
            full = r + len(given) if op == "Unsqueeze" else r
            inputs[1] = ints([(a + full if a < 0 else a) + 1 for a in given], node)
        elif op == "Reshape":
            inputs[1] = ints([0, *(const_ints(input_at(node, 1)) or [])], node)
            attrs = [oir.AttrInt64("allowzero", 0)]
        elif op == "Transpose":
            perm = attr(node, "perm")
            perm = list(range(r))[::-1] if perm is None else [int(p) for p in perm]  # type: ignore[union-attr]
            attrs = [oir.AttrInt64s("perm", [0, *(p + 1 for p in perm)])]
        elif op in ("Softmax", "LogSoftmax"):
            a = int(attr(node, "axis", -1))  # type: ignore[arg-type]
            attrs = [oir.AttrInt64("axis", (a + r if a < 0 else a) + 1)]
        x = emit(op, inputs, attrs, node)
    if axis != 0:  # the stacked axis back where the output had it
        out_rank = _out_rank(steps[-1])
        a = axis + out_rank + 1 if axis < 0 else axis
        perm = list(range(1, out_rank + 1))
        perm.insert(a, 0)
        x = emit("Transpose", [x], [oir.AttrInt64s("perm", perm)], loop)
    x.type, x.shape = old.type, old.shape
    old.type, old.shape = start.type, None
    outer.insert_after(loop, new_nodes)
    for use in uses:
        use.node.replace_input_with(use.idx, x)
    if old.is_graph_output():
        for i, o in enumerate(outer.outputs):
            if o is old:
                outer.outputs[i] = x
        x.name, old.name = old.name, fresh_name(names, f"{hint}/stacked_steps")
    for step in reversed(steps):
        if not any(o.uses() or o.is_graph_output() for o in step.node.outputs):
            body.remove(step.node, safe=True)


def _out_rank(step: _Step) -> int:
    """The per-step rank of the step's result."""
    node, r = step.node, step.rank_in
    given = len(const_ints(input_at(node, 1)) or []) if len(node.inputs) > 1 else 0
    if node.op_type == "Unsqueeze":
        return r + given
    if node.op_type == "Squeeze":
        return r - given
    if node.op_type == "Reshape":
        return given
    return r  # elementwise ops keep the rank (invariant operands are no higher), so does MatMul by a matrix

"""A Scan body reads nothing from the graphs around it: each outer value it reads is carried through it as a state.

ONNX lets a body read the values of its enclosing graphs (the translation reads a TensorIterator's invariant inputs
so, and hoisting moves loop-invariant work out of bodies that then read its results). onnxruntime and onnx's
reference implementation follow those reads; OpenVINO's ONNX frontend does not for Scan: it matches the body's
inputs to the node's ("Number of Scan node inputs (2) is less than required (3) based on body graph parameters") and
its outputs to the states ("body outputs (2) is less than num_initial_values (4)"). A constant (an initializer, a
Constant node) becomes the body's own (moved where only the body reads it, else sharing its tensor); any other outer
value is carried unchanged (the body returns each such state through an Identity), a state whose final value nothing
reads: the Scan computes what it did. Values read in the body's own subgraphs count too (an If inside the body).
Innermost Scans first, so that what an inner Scan now takes as an input is seen as a read of the outer body.
"""

from __future__ import annotations

from collections.abc import MutableSet

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_graphs, all_nodes, carried_count, is_default_domain, loops_innermost_first
from ir2onnx.passes.analysis.shapes import infer_shapes
from ir2onnx.passes.rewrite import all_names, fresh_name, inherit_meta, replace_node


class ScanCapturesAsStatesPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        scans = [(node, body) for node, body, _ in loops_innermost_first(model.graph) if node.op_type == "Scan"]
        if not any(outer_reads(body) for _, body in scans):
            return oir.passes.PassResult(model, modified=False)
        if any(v.type is None for _, body in scans for v in outer_reads(body)):
            infer_shapes(model)  # a body input needs a type
        names = all_names(model.graph)
        modified = False
        for node, body in scans:
            captured = outer_reads(body)
            if captured and all(v.type is not None for v in captured):
                _carry(node, body, captured, names)
                modified = True
        return oir.passes.PassResult(model, modified=modified)


def outer_reads(body: oir.Graph) -> list[oir.Value]:
    """The values of enclosing graphs that `body` or its subgraphs read or return, in the order first read."""
    inside = set(all_graphs(body))
    found: dict[oir.Value, None] = {}
    for n in all_nodes(body):
        for v in n.inputs:
            if v is not None and v.graph not in inside:
                found.setdefault(v)
    for v in body.outputs:
        if v.graph not in inside:
            found.setdefault(v)
    return list(found)


def _carry(node: oir.Node, body: oir.Graph, captured: list[oir.Value], names: MutableSet[str]) -> None:
    inside = set(all_graphs(body))
    constants = [v for v in captured if _constant(v)]
    for v in constants:
        _own_constant(v, body, inside, names)
    captured = [v for v in captured if not _constant(v)]
    if not captured:
        return
    states = carried_count(node)
    params, returned = [], []
    for v in captured:
        hint = v.name or "outer"
        p = oir.Value(name=fresh_name(names, f"{hint}/carried"), type=v.type, shape=v.shape)
        for use in list(v.uses()):
            if use.node.graph in inside:
                use.node.replace_input_with(use.idx, p)
        for i, out in enumerate(body.outputs):  # a body output that was the outer value itself
            if out is v:
                body.outputs[i] = _identity(body, p, names, node)
        params.append(p)
        returned.append(_identity(body, p, names, node))
    for j, (p, r) in enumerate(zip(params, returned)):
        body.inputs.insert(states + j, p)
        body.outputs.insert(states + j, r)
    k = len(captured)
    old = list(node.outputs)
    carried = oir.Node("", "Scan", [*node.inputs[:states], *captured, *node.inputs[states:]],
                       list(node.attributes.values()), num_outputs=len(old) + k, name=node.name)
    for i, out in enumerate(carried.outputs):
        out.name = fresh_name(names, f"{node.name or 'scan'}/out_{i}")
        if states <= i < states + k:
            out.type, out.shape = captured[i - states].type, captured[i - states].shape
    inherit_meta(carried, node)
    node.graph.insert_before(node, carried)  # type: ignore[union-attr]
    replace_node(node, [(o, carried.outputs[i if i < states else i + k]) for i, o in enumerate(old)], "carrying")


def _constant(v: oir.Value) -> bool:
    """An initializer (not one a graph input may override) or a Constant node's output."""
    if v.const_value is not None:
        return not v.is_graph_input()
    p = v.producer()
    return p is not None and p.op_type == "Constant" and is_default_domain(p)


def _own_constant(v: oir.Value, body: oir.Graph, inside: set[oir.Graph], names: MutableSet[str]) -> None:
    """The body reads a constant of its own instead of `v`: `v` itself (moved) where only the body reads it, else an
    initializer sharing its tensor (no copy in memory), or a copy of its Constant node. A state would do too, but
    OpenVINO's frontend then no longer sees the constant (the axes of an Unsqueeze: a result of unknown rank)."""
    readers = list(v.uses())
    if v.const_value is not None and v.graph is not None and v.name in v.graph.initializers \
            and all(u.node.graph in inside for u in readers) and not v.is_graph_output():
        del v.graph.initializers[v.name]
        body.register_initializer(v)
        return
    if v.const_value is not None:
        own = oir.Value(name=fresh_name(names, f"{v.name or 'constant'}/own"), const_value=v.const_value,
                        type=v.type, shape=v.shape)
        body.register_initializer(own)
    else:
        p = v.producer()
        assert p is not None
        own = oir.Value(name=fresh_name(names, f"{v.name or 'constant'}/own"), type=v.type, shape=v.shape)
        made = inherit_meta(oir.Node("", "Constant", [], list(p.attributes.values()), outputs=[own],
                                     name=fresh_name(names, f"{p.name or 'constant'}/own")), p)
        first = next(iter(body), None)
        if first is not None:
            body.insert_before(first, made)
        else:
            body.append(made)
    for use in readers:
        if use.node.graph in inside:
            use.node.replace_input_with(use.idx, own)
    for i, out in enumerate(body.outputs):
        if out is v:
            body.outputs[i] = own


def _identity(body: oir.Graph, x: oir.Value, names: MutableSet[str], like: oir.Node) -> oir.Value:
    out = oir.Value(name=fresh_name(names, f"{x.name}/same"), type=x.type, shape=x.shape)
    body.append(inherit_meta(oir.Node("", "Identity", [x], outputs=[out], name=fresh_name(names, f"{x.name}/same")),
                             like))
    return out

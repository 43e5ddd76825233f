"""Move loop-invariant nodes out of ONNX Loop and Scan bodies.

A body node whose inputs all come from outside the body (enclosing graphs, initializers) or from other such nodes
computes the same value in every iteration: weight transposes, reshapes of constants, shape arithmetic on outer
values. It is computed once, before the loop, instead. Inner loops are handled first, so a value invariant in both
an inner and an outer loop moves out of both. Not moved: nodes with subgraphs, non-deterministic ops, ops of other
domains, and Identity nodes (they only rename; the Identity pass handles them). An invariant value that is a body
output stays one through an Identity in the body.

Like any loop-invariant code motion, a moved node is evaluated even when the loop runs zero times.
"""

from __future__ import annotations

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import (
    NONDETERMINISTIC,
    defined_in,
    is_default_domain,
    loops_innermost_first,
    subgraphs,
)
from ir2onnx.passes.rewrite import inherit_meta


class HoistLoopInvariantsPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        modified = False
        for loop, body, outer in loops_innermost_first(model.graph):
            modified |= hoist(loop, body, outer)
        return oir.passes.PassResult(model, modified=modified)


def _movable(node: oir.Node) -> bool:
    return (is_default_domain(node) and node.op_type not in NONDETERMINISTIC and node.op_type != "Identity"
            and not any(True for _ in subgraphs(node)))


def hoist(loop: oir.Node, body: oir.Graph, outer: oir.Graph) -> bool:
    """Move the invariant nodes of `body` into `outer`, just before `loop` (their order kept)."""
    moved: list[oir.Node] = []
    moved_values: set[oir.Value] = set()
    for node in body:
        if _movable(node) and all(v is None or v in moved_values or not defined_in(v, body) for v in node.inputs):
            moved.append(node)
            moved_values.update(node.outputs)
    if not moved:
        return False
    body.remove(moved)
    outer.insert_before(loop, moved)
    for i, out in enumerate(body.outputs):
        if out in moved_values:  # a body output must be a value of the body
            copy = oir.Value(name=f"{out.name}/body_output", type=out.type, shape=out.shape)
            node = oir.Node("", "Identity", [out], outputs=[copy], name=f"{out.name}/body_output_node")
            body.append(inherit_meta(node, out.producer()))
            body.outputs[i] = copy
    return True

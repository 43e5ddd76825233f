"""Remove Identity nodes (main graph and bodies) without changing graph inputs or outputs.

y = Identity(x) goes away when y is no graph output (its readers read x), or when y is an output of the graph
that computes x and x is neither an input nor an output of that graph (x then takes y's place and name). The
others stay: a graph output must be a distinct value of its own graph (an input, or a value from an enclosing
graph, is returned through one Identity).
"""

from __future__ import annotations

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_nodes, is_default_domain
from ir2onnx.passes.rewrite import record, take_place


class RemoveIdentityPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        modified = False
        for node in list(all_nodes(model.graph)):
            modified |= _remove(node)
        return oir.passes.PassResult(model, modified=modified)


def _remove(node: oir.Node) -> bool:
    if node.op_type != "Identity" or not is_default_domain(node) or len(node.inputs) != 1:
        return False
    x, y = node.inputs[0], node.outputs[0]
    graph = node.graph
    if x is None or graph is None:
        return False
    if y.is_graph_output():
        if x.producer() is None or x.graph is not graph or x.is_graph_output() or x.is_graph_input():
            return False
        take_place(y, x)
    else:
        record(y, x)
        y.replace_all_uses_with(x)
    graph.remove(node, safe=True)
    return True

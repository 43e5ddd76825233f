"""Initializers of subgraphs (If branches, loop bodies) that nothing reads any more, removed.

onnx_ir's RemoveUnusedNodesPass removes the main graph's unused initializers only. A branch's own initializers
(prefix_mask.py moves a fused node's weights into its branch) can lose their last reader to a later pass, e.g.
gru_scan.py rewriting that node; onnxruntime then removes them itself, with a warning at every session.
"""

from __future__ import annotations

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_nodes


class RemoveUnusedSubgraphInitializersPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        removed = 0
        for node in all_nodes(model.graph):
            for attr in node.attributes.values():
                if attr.type == oir.AttributeType.GRAPH:
                    removed += _remove_unused(attr.as_graph())
                elif attr.type == oir.AttributeType.GRAPHS:
                    removed += sum(_remove_unused(g) for g in attr.as_graphs())
        return oir.passes.PassResult(model, modified=bool(removed))


def _remove_unused(graph: oir.Graph) -> int:
    kept = frozenset(graph.inputs) | frozenset(graph.outputs)
    unused = [name for name, v in graph.initializers.items() if not v.uses() and v not in kept]
    for name in unused:
        del graph.initializers[name]
    return len(unused)

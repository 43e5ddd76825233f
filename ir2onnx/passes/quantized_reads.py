"""A quantized value a subgraph reads from its enclosing graph reaches it through Max(x, x).

onnxruntime (1.32) aborts the process while loading a model where a DequantizeLinear's output, moved on by ops its
QDQ propagation crosses (Reshape, Squeeze, Transpose, ...), is read by a subgraph as an outer value: the
QDQPropagationTransformer indexes the reading If/Loop/Scan's explicit inputs with the implicit input's position
(an assertion in a debug-checked build, a wild read otherwise); a DequantizeLinear's own output read from outside
loads. A quantized CRNN does this: its LSTM runs behind empty_inputs.py's If, which reads the sequence (a Transpose
of a Squeeze of a Reshape of a DequantizeLinear) from outside. Such a read goes through Max(x, x), which is x
(NaN included), which the propagation does not cross and no onnxruntime optimisation removes (an Identity is
removed, and the crash comes back). Only a model holding a DequantizeLinear is touched.
"""

from __future__ import annotations

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_nodes, subgraphs
from ir2onnx.passes.rewrite import all_names, fresh_name

# ops QDQ propagation moves a DequantizeLinear across
_CARRIES = frozenset({"Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten",
                      "Slice", "Gather", "MaxPool", "Resize", "Expand", "Split", "Concat", "DepthToSpace",
                      "SpaceToDepth", "Tile"})


class QuantizedImplicitReadsPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        if not any(n.op_type == "DequantizeLinear" for n in all_nodes(model.graph)):
            return oir.passes.PassResult(model, False)
        names = all_names(model.graph)
        modified = False
        for graph in _graphs(model.graph):
            for node in list(graph):
                for sub in subgraphs(node):
                    for v in _outer_reads(sub, graph):
                        if not _moved_dequantized(v):
                            continue
                        guard = oir.Node("", "Max", [v, v], name=fresh_name(names, f"{v.name}/outer_read"))
                        out = guard.outputs[0]
                        out.name, out.type, out.shape = fresh_name(names, f"{v.name}_outer"), v.type, v.shape
                        graph.insert_before(node, guard)
                        for use in list(v.uses()):
                            if use.node is not guard and use.node.graph is not graph:
                                use.node.replace_input_with(use.idx, out)
                        modified = True
        return oir.passes.PassResult(model, modified)


def _moved_dequantized(v: oir.Value) -> bool:
    """Whether `v` is a DequantizeLinear's output moved on by at least one op the propagation crosses (a
    DequantizeLinear's own output read from outside loads)."""
    node, crossed = v.producer(), False
    while node is not None and node.op_type in _CARRIES and node.inputs and node.inputs[0] is not None:
        node, crossed = node.inputs[0].producer(), True
    return crossed and node is not None and node.op_type == "DequantizeLinear"


def _graphs(graph: oir.Graph) -> list[oir.Graph]:
    out = [graph]
    for node in graph:
        for sub in subgraphs(node):
            out += _graphs(sub)
    return out


def _outer_reads(sub: oir.Graph, outer: oir.Graph) -> list[oir.Value]:
    """Values of `outer` that nodes of `sub` (or of its own subgraphs) read."""
    found: dict[int, oir.Value] = {}
    for node in all_nodes(sub):
        for v in node.inputs:
            if v is not None and v.graph is outer:
                found.setdefault(id(v), v)
    return list(found.values())

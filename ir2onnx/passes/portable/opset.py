"""The model's ONNX opset lowered to the lowest at which every node it holds means the same.

The translation picks the lowest opset, from 17, that expresses every layer (translate/model.py). Each op of the
model has, at that opset, the schema introduced at some version (Cast-13, Scan-16, Reshape-14, ...); every opset from
the newest of those up to the chosen one gives each node that same schema, so the model is the same model there.
Runtimes and tools that stop at an older opset (or that look converters up by op version, as onnx2torch does) read
it. Only the standard domain moves; bodies and branches count.
"""

from __future__ import annotations

import onnx
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_nodes, is_default_domain


class LowestOpsetPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        current = model.opset_imports.get("", None)
        if current is None:
            return oir.passes.PassResult(model, modified=False)
        needed = lowest_opset(model.graph, current)
        if needed is None or needed >= current:
            return oir.passes.PassResult(model, modified=False)
        model.opset_imports[""] = needed
        return oir.passes.PassResult(model, modified=True)


def lowest_opset(graph: oir.Graph, current: int) -> int | None:
    """The newest version, at opset `current`, of the standard ops the graph holds (None: an op onnx does not know
    there)."""
    versions: dict[str, int] = {}
    for node in all_nodes(graph):
        if not is_default_domain(node) or node.op_type in versions:
            continue
        try:
            versions[node.op_type] = onnx.defs.get_schema(node.op_type, current, "").since_version
        except onnx.defs.SchemaError:
            return None
    return max(versions.values(), default=1)

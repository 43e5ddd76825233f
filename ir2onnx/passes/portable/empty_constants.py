"""Constants with no elements as ConstantOfShape of their shape.

A loop's output over no iteration, an empty buffer or state, a size-0 slice of a weight: the translation and the
passes keep such values as initializers (or Constant nodes) of their own shape, [1, 0, 8] say. OpenVINO's ONNX
frontend (2026.4) reads an initializer without elements as a scalar: an Identity of a [1, 0, 8] initializer returns
shape (), and an If with such a branch has an output of dynamic rank, which its CPU plugin refuses ("doesn't support
If operation with dynamic rank"). ConstantOfShape of the shape (a non-empty int64 vector) is the same tensor, and
every consumer reads it. String tensors (which ConstantOfShape cannot make) stay.
"""

from __future__ import annotations

import math
from collections.abc import MutableSet

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_graphs, attr, is_default_domain
from ir2onnx.passes.rewrite import all_names, fresh_name, take_place


class EmptyConstantsPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        names = all_names(model.graph)
        modified = False
        for graph in list(all_graphs(model.graph)):
            for name, init in list(graph.initializers.items()):
                t = init.const_value
                if t is None or not _empty(t) or init.is_graph_input() or not (init.uses() or init.is_graph_output()):
                    continue
                del graph.initializers[name]
                shape, zero = _shape_and_zero(model.graph, t, names, name)
                out = oir.Value(name=fresh_name(names, f"{name}/empty"), type=oir.TensorType(t.dtype),
                                shape=oir.Shape([int(d) for d in t.shape]))
                made = oir.Node("", "ConstantOfShape", [shape], [zero], outputs=[out],
                                name=fresh_name(names, f"{name}/empty"))
                first = next(iter(graph), None)
                if first is not None:
                    graph.insert_before(first, made)
                else:
                    graph.append(made)
                take_place(init, out)
                modified = True
            for node in list(graph):
                t = attr(node, "value") if node.op_type == "Constant" and is_default_domain(node) else None
                if isinstance(t, oir.TensorProtocol) and _empty(t):
                    shape, zero = _shape_and_zero(model.graph, t, names, node.name or "constant")
                    node.op_type = "ConstantOfShape"
                    node.attributes.clear()
                    node.attributes["value"] = zero
                    node.resize_inputs(1)
                    node.replace_input_with(0, shape)
                    modified = True
        return oir.passes.PassResult(model, modified=modified)


def _empty(t: oir.TensorProtocol) -> bool:
    return t.dtype != oir.DataType.STRING and math.prod(int(d) for d in t.shape) == 0


def _shape_and_zero(root: oir.Graph, t: oir.TensorProtocol, names: MutableSet[str],
                    hint: str) -> tuple[oir.Value, oir.Attr]:
    """An int64 initializer of t's shape (in the main graph) and ConstantOfShape's `value` of t's element type."""
    shape = oir.Value(name=fresh_name(names, f"{hint}/shape"),
                      const_value=oir.tensor(np.asarray([int(d) for d in t.shape], np.int64)))
    shape.const_value.name = shape.name  # type: ignore[union-attr]
    shape.type, shape.shape = oir.TensorType(oir.DataType.INT64), oir.Shape([len(t.shape)])
    root.register_initializer(shape)
    return shape, oir.AttrTensor("value", oir.tensor(np.zeros(1, t.dtype.numpy())))

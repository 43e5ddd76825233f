"""Reshape/transpose glue with static shapes reduced to what moves data (main graph and bodies, default domain).

Translation and recurrent fusion leave chains of Squeeze/Unsqueeze/Reshape around Transposes of tensors with size-1
axes (e.g. a batch-major sequence turned time-major through a rank-4 Transpose, then squeezed into an LSTM). Where
every shape involved is static (see static_shapes.py):

1. Shape of a value with a static shape becomes a constant, so that shape arithmetic no longer reads the tensor.
2. A Transpose whose non-unit axes keep their order moves no data: it becomes a Reshape. One that does move data,
   where a reshape-only op is next to it, becomes Reshape (unit axes dropped) -> Transpose of the remaining axes ->
   Reshape, so that the Reshapes merge with their neighbours in step 3.
3. A maximal chain of reshape-only ops (Squeeze, Unsqueeze, Reshape, Flatten, Identity) whose intermediate values
   have one reader each and are no graph outputs becomes one Reshape to the final shape, or nothing when that is
   the chain's input shape. A chain ending in a graph output keeps the output's name, type and shape; where the
   output would then be the graph's own input or an outer value, one Identity returns it (as in identity.py).

4. Whatever the shapes, Squeeze(Unsqueeze(x, axes), axes) is x (the one-direction axis of a sequence op's output,
   added by its translation and removed by the IR's Squeeze).

These ops only move data, so values are unchanged bit for bit; Squeeze/Unsqueeze/Reshape of a value that is no
graph output cost nothing in onnxruntime (they alias their input), whereas a graph output is copied.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_graphs, is_default_domain
from ir2onnx.passes.analysis.shapes import Shape, StaticShapes, transpose_perm
from ir2onnx.passes.analysis.values import const_ints
from ir2onnx.passes.rewrite import all_names, attributes, fresh_name, inherit_meta, read_instead, record, take_place

RESHAPE_ONLY = frozenset({"Squeeze", "Unsqueeze", "Reshape", "Flatten", "Identity"})


class CollapseReshapeChainsPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        rewriter = _Rewriter(model.graph)
        modified = False
        for graph in list(all_graphs(model.graph)):
            modified |= rewriter.fold_shapes(graph)
            modified |= rewriter.reduce_transposes(graph)
            modified |= rewriter.collapse_chains(graph)
            modified |= rewriter.cancel_pairs(graph)
        return oir.passes.PassResult(model, modified=modified)


class _Rewriter:
    def __init__(self, root: oir.Graph) -> None:
        self.root = root
        self.shapes = StaticShapes()
        self.names = all_names(root)

    # helpers

    def _fresh(self, hint: str) -> str:
        return fresh_name(self.names, hint)

    def _i64(self, values: Shape | list[int], hint: str) -> oir.Value:
        """An int64 initializer of the main graph (bodies read it as an outer value)."""
        name = self._fresh(hint)
        v = oir.Value(name=name, const_value=oir.tensor(np.asarray(values, np.int64), name=name),
                     type=oir.TensorType(oir.DataType.INT64), shape=oir.Shape([len(values)]))
        self.root.register_initializer(v)
        return v

    def _node(self, op_type: str, inputs: list[oir.Value], like: oir.Node, shape: Shape, dtype_of: oir.Value,
              attrs: dict[str, object] | None = None) -> oir.Node:
        name = self._fresh(f"{like.name or op_type}/{op_type.lower()}")
        out = oir.Value(name=self._fresh(f"{name}_out"), type=_type_of(dtype_of), shape=oir.Shape(shape))
        node = oir.Node("", op_type, inputs, attributes(attrs), outputs=[out], name=name)
        return inherit_meta(node, like)

    def _reshape(self, x: oir.Value, shape: Shape, like: oir.Node) -> oir.Node:
        return self._node("Reshape", [x, self._i64(shape, f"{like.name or 'reshape'}/shape")], like, shape, x)

    def _chainable(self, node: oir.Node) -> bool:
        return (node.op_type in RESHAPE_ONLY and is_default_domain(node) and len(node.outputs) == 1
                and len(node.inputs) > 0 and _nonempty(self.shapes(node.inputs[0]))
                and _nonempty(self.shapes(node.outputs[0])))

    def _sole_reader(self, value: oir.Value, graph: oir.Graph) -> oir.Node | None:
        """The reshape-only node of `graph` that is the one reader of `value` (as its data input), if so."""
        if value.is_graph_output():
            return None
        uses = list(value.uses())
        if len(uses) != 1:
            return None
        node, index = uses[0]
        return node if index == 0 and node.graph is graph and self._chainable(node) else None

    # 1. Shape of a static shape

    def fold_shapes(self, graph: oir.Graph) -> bool:
        modified = False
        for node in list(graph):
            if node.op_type != "Shape" or not is_default_domain(node) or not node.inputs:
                continue
            shape = self.shapes(node.inputs[0])
            if shape is None:
                continue
            start, end = node.attributes.get("start"), node.attributes.get("end")
            dims = shape[slice(0 if start is None else start.as_int(), None if end is None else end.as_int())]
            out = node.outputs[0]
            const = self._i64(list(dims), f"{node.name or 'shape'}/value")
            _replace(out, const, graph, self, node)
            graph.remove(node, safe=True)
            modified = True
        return modified

    # 2. Transposes of tensors with size-1 axes

    def reduce_transposes(self, graph: oir.Graph) -> bool:
        modified = False
        for node in list(graph):
            if node.op_type != "Transpose" or not is_default_domain(node) or not node.inputs:
                continue
            x, y = node.inputs[0], node.outputs[0]
            shape = self.shapes(x)
            if not _nonempty(shape) or 1 not in shape or y.is_graph_output():  # type: ignore[operator]
                continue
            perm = transpose_perm(node, len(shape))
            if sorted(perm) != list(range(len(shape))):
                continue
            out_shape = tuple(shape[p] for p in perm)
            kept = [p for p in perm if shape[p] != 1]
            if kept == sorted(kept):  # only unit axes move: no data moves
                new = [self._reshape(x, out_shape, node)]
            elif self._beside_reshape(x, y, graph) and len(kept) > 1:
                axes = sorted(kept)
                squeezed = self._reshape(x, tuple(shape[a] for a in axes), node)
                moved = self._node("Transpose", [squeezed.outputs[0]], node, tuple(shape[p] for p in kept), x,
                                   {"perm": [axes.index(p) for p in kept]})
                new = [squeezed, moved, self._reshape(moved.outputs[0], out_shape, node)]
            else:
                continue
            graph.insert_before(node, new)
            record(y, new[-1].outputs[0])
            y.replace_all_uses_with(new[-1].outputs[0])
            graph.remove(node, safe=True)
            modified = True
        return modified

    def _beside_reshape(self, x: oir.Value, y: oir.Value, graph: oir.Graph) -> bool:
        """Whether a reshape-only op writes `x` for this Transpose alone, or is the one reader of `y`."""
        producer = x.producer()
        before = (producer is not None and producer.graph is graph and self._chainable(producer)
                  and not x.is_graph_output() and len(x.uses()) == 1)
        return before or self._sole_reader(y, graph) is not None

    # 3. Chains of reshape-only ops

    def collapse_chains(self, graph: oir.Graph) -> bool:
        chains: list[list[oir.Node]] = []
        for node in graph:
            if not self._chainable(node):
                continue
            producer = node.inputs[0].producer()  # type: ignore[union-attr]
            if producer is not None and producer.graph is graph and self._chainable(producer) \
                    and self._sole_reader(producer.outputs[0], graph) is node:
                continue  # not the head of its chain
            chain = [node]
            while (nxt := self._sole_reader(chain[-1].outputs[0], graph)) is not None:
                chain.append(nxt)
            chains.append(chain)
        modified = False
        for chain in chains:
            modified |= self._collapse(chain, graph)
        return modified

    def _collapse(self, chain: list[oir.Node], graph: oir.Graph) -> bool:
        x, y = chain[0].inputs[0], chain[-1].outputs[0]
        assert x is not None
        if len(chain) == 1 and chain[0].op_type == "Identity" and y.is_graph_output():
            return False  # what identity.py leaves is needed
        final = self.shapes(y)
        assert final is not None
        if final == self.shapes(x):
            target = x
        elif len(chain) > 1:
            reshape = self._reshape(x, final, chain[-1])
            graph.insert_before(chain[-1], reshape)
            target = reshape.outputs[0]
        else:
            return False  # one op already: nothing to merge
        _replace(y, target, graph, self, chain[-1])
        graph.remove(chain, safe=True)
        return True

    # 4. Unsqueeze then Squeeze of the same axes

    def cancel_pairs(self, graph: oir.Graph) -> bool:
        modified = False
        for node in list(graph):
            if node.op_type != "Squeeze" or not is_default_domain(node) or len(node.inputs) != 2 \
                    or node.inputs[0] is None:
                continue
            inner = node.inputs[0].producer()
            if inner is None or inner.op_type != "Unsqueeze" or not is_default_domain(inner) \
                    or inner.graph is not graph or len(inner.inputs) != 2:
                continue
            added, removed = const_ints(inner.inputs[1]), const_ints(node.inputs[1])
            if added is None or removed is None or sorted(added) != sorted(removed) or len(set(added)) != len(added):
                continue
            x = inner.inputs[0]
            assert x is not None
            if not read_instead(node.outputs[0], x, graph):
                continue
            graph.remove(node, safe=True)
            if not inner.outputs[0].uses() and not inner.outputs[0].is_graph_output():
                graph.remove(inner, safe=True)
            modified = True
        return modified


def _type_of(value: oir.Value | None) -> oir.TypeProtocol | None:
    """A value's type, else that of the data it was reshaped, transposed or (LSTM/GRU/RNN) computed from."""
    while value is not None and value.type is None:
        node = value.producer()
        if node is None or not is_default_domain(node) or not node.inputs \
                or node.op_type not in (*RESHAPE_ONLY, "Transpose", "LSTM", "GRU", "RNN"):
            return None
        value = node.inputs[0]
    return None if value is None else value.type


def _nonempty(shape: Shape | None) -> bool:
    """A static shape without 0 dims (a 0 in a Reshape's target would copy the input's dim)."""
    return shape is not None and 0 not in shape


def _replace(old: oir.Value, new: oir.Value, graph: oir.Graph, rewriter: _Rewriter, anchor: oir.Node) -> None:
    """Readers of `old` read `new`; where `old` is an output of `graph`, `new` (or an Identity of it, when `new` is
    no value that `graph` computes itself) takes its place, name, type and shape."""
    if not old.is_graph_output():
        record(old, new)
        old.replace_all_uses_with(new)
        return
    if new.producer() is None or new.graph is not graph or new.is_graph_output() or new.is_graph_input():
        shape = rewriter.shapes(new)
        assert shape is not None
        copy = rewriter._node("Identity", [new], anchor, shape, old)
        graph.insert_before(anchor, copy)
        new = copy.outputs[0]
    take_place(old, new)

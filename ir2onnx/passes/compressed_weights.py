"""Compressed weights stay compressed: an integer weight's decompression chain becomes one DequantizeLinear.

OpenVINO IRs with NNCF weight compression hold integer weights (u8/i8 per output channel, u4/i4 group-wise) as a
Const followed by Convert to f16 or f32, an optional Subtract of a zero point, a Multiply by a scale, an optional
Reshape (group-wise: [out, in/group, group] back to [out, in]) and an optional Convert f16 -> f32. The translation
spells that chain literally: Cast(int initializer) -> [Sub(zero point)] -> Mul(scale) [-> Reshape] [-> Cast].
onnxruntime's CPU has no f16 Sub/Mul kernels, so it cannot fold the chain at load: it holds the weights expanded to
f16 or f32 and runs Sub and Mul over every weight on every call.

This pass finds each such chain (bodies included) whose weight is an INT8/UINT8/INT4/UINT4 initializer and whose
zero point and scale are constants (initializers, Constant outputs, or those behind Casts), and computes it from the
integer initializer, kept at its bit width (4-bit weights stay packed), in the form its reader needs. The weight's
bytes are read with another shape where a form needs one (a view: no copy, the file holds them once).

* A MatMul's weight B (directly, or through the Transpose of OpenVINO's transpose_b): one DequantizeLinear of the
  [K, N] weight in the form onnxruntime (1.32) fuses with the MatMul into one MatMulNBits at load, which holds the
  weight packed at its bit width: nothing that depends only on the weights runs per call. Per output channel (or per
  tensor, its scale repeated per channel) with axis 1; by groups of g inputs (g a power of two from 16, opset 21) by
  blocks with axis 0. A transpose_b weight [N, K] is stored transposed as integers (a new initializer, computed
  as the model is written: DequantizeLinear of [N, K] with axis 0 before the Transpose is fused only with a zero
  point, and for signed 8 bits from opset 21; a Transpose node of the .bin's integers, which onnxruntime would fold,
  makes it hold one more copy of every weight while loading, and glibc keeps that memory: 2.3x the .bin instead of
  1.35-1.6x) and the result transposed back before the MatMul's own Transpose (a pair onnxruntime cancels). The fused MatMulNBits computes at the accuracy level of the session option
  `session.qdq_matmulnbits_accuracy_level`: onnxruntime's default (4) quantizes the activations to int8 (about 5e-3
  relative error), 1 computes in f32, as the check and the tests run (verify/worker.py). A scale read by another
  node keeps onnxruntime from fusing: a chain with several readers gives each form a scale of its own. OpenVINO's
  ONNX frontend reads these forms back.
* A Gather's table (axis 0: embeddings): the Gather reads the integer rows, and one DequantizeLinear decompresses
  them alone, per tensor or per row of their 2-D view (rows, the axes the scale is constant along; the gathered rows
  of scales and zero points as its 1-D scale and zero point), then the chain's shape: gathering then decompressing
  is decompressing then gathering, value for value, and a call decompresses the rows it reads instead of the table.
  ONNX's Gather takes no 4-bit tensor: a 4-bit table is read through a Cast to 8 bits, which onnxruntime folds at
  load (the table then held at 8 bits).
* Any other reader (and a MatMul weight whose scales have no fusable layout, e.g. groups of 8): one DequantizeLinear
  then a Reshape to the chain's shape (the chain's own Reshape taken in), run per call: per tensor the flat weight,
  per channel a rank-3 view (before, channels, after) with axis 1 (a 2-D weight per row: (rows, 1, columns) with axis
  0, as OpenVINO's ONNX frontend mis-reads (1, rows, columns) with axis 1), groups along the last axis (NNCF's [out,
  in/group, group]) a [groups, group] view per channel with axis 0 (one row per group; no block_size, so 8-bit groups
  need no opset 21), groups along another axis by blocks (opset 21).

In each form the zero point is in the weight's integer type (a chain whose zero point the type cannot hold exactly
stays as it is; an all-zero one is left out), and the scale in the chain's float type, or in f32 where the chain's f16
result is cast to f32 (see below): an f16 scale that is read as f32 stays f16 in the file, read through a Cast that
onnxruntime folds at load.

Exactness: q - zp is an integer of at most 9 bits, exact in f16 and f32, and DequantizeLinear rounds the product
(q - zp) * scale once, as Mul does: an f32 chain, and an f16 chain whose result stays f16, are computed bit for bit
(a fused MatMulNBits with accuracy level 1 computes the product in f32 in its own order: equal within f32 rounding).
An f16 chain cast to f32 is computed without the product's rounding to f16: (q - zp) * scale is exact in f32 (9 by
11 significant bits), which is what OpenVINO's CPU plugin computes for such a chain (it decompresses in f32) and
what onnxruntime computed for the literal chain where nothing sat between the Mul and the Cast (it runs f16 Sub and
Mul in f32 and drops the pair of casts between them); that Cast goes.

DequantizeLinear takes 8-bit weights with an f32 scale at the opsets the translation uses (13+), an f16 scale from
opset 19, and 4-bit weights or blocks from opset 21 (the translation already uses 21 for packed 4-bit weights). The
model's opset is not raised: a reader whose form needs more gets the generic form, and a chain whose generic form needs
more stays as it is. onnxruntime's CPU kernel (1.32) runs all these forms: INT8/UINT8/INT4/UINT4 with f16 or f32
scales, per tensor, per axis and blocked. (Its fused 8-bit MatMulNBits has no f32 kernel on x86: with accuracy level 1
it dequantizes the weight in each call, slower than the unfused DequantizeLinear and MatMul; see
docs/performance.md#llm-decoding.)

It runs when the model is optimised, before the types stage (OrtTypesPass computes in a wider type the nodes that
lack CPU kernels, which would hide the chain) and after "f16 as f32" (whose f32 chains read f16 scales through
Casts). Recurrent fusion, later, reads a cell's weights as constants (analysis/values.py's const_array): it must
fold DequantizeLinear for a cell with compressed weights to fuse.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx_ir as oir

from ir2onnx.passes import compressed_forms as cf
from ir2onnx.passes.analysis.graph import all_graphs, attr, is_default_domain, through
from ir2onnx.passes.analysis.values import const_array
from ir2onnx.passes.replacing import ReplacingPass
from ir2onnx.passes.rewrite import all_names, fresh_name, inherit_meta, read_instead


class DequantizeWeightsPass(ReplacingPass):
    """Decompression chains of integer initializers as DequantizeLinear nodes (or, under a Gather, the gathered rows
    decompressed), in place."""

    def call(self, model: oir.Model) -> oir.passes.PassResult:
        self._opset = model.opset_imports.get("", model.opset_imports.get("ai.onnx", 1))
        self._main = model.graph  # new constants are its initializers (bodies read them as outer values)
        self._names = all_names(model.graph)
        self._views: dict[tuple[int, object], oir.Value] = {}
        self._read: set[oir.Value] = set()  # initializers whose readers the rewrite changed
        self._own_scale = False  # a new scale initializer even where the chain's own holds it
        modified = False
        for graph in list(all_graphs(model.graph)):
            for node in list(graph):
                if node.graph is not graph or node.op_type != "Cast" or not is_default_domain(node):
                    continue  # (a node an earlier rewrite removed)
                chain = cf.match(node)
                if chain is not None and self._rewrite(chain, graph):
                    modified = True
        for v in self._read:  # the weights and constants that only the chains read
            owner = v.graph
            if owner is not None and v.name and owner.initializers.get(v.name) is v and not v.uses() \
                    and not v.is_graph_output() and not v.is_graph_input():
                del owner.initializers[v.name]
        return oir.passes.PassResult(model, modified=modified)

    # the rewrite

    def _rewrite(self, c: cf.Chain, graph: oir.Graph) -> bool:
        w = self._weight(c)
        if w is None:
            return False
        like = next(n for n in c.nodes if n.op_type == "Mul")
        readers: list[tuple[oir.Node, int, str, tuple | None]] = []  # node, input index, kind, form
        if not c.end.is_graph_output():
            for node, index in list(c.end.uses()):
                kind, form = self._reader_form(node, index, graph, w)
                readers.append((node, index, kind, form))
        others = c.end.is_graph_output() or not readers or any(kind == "other" for _, _, kind, _ in readers)
        generic = cf.form(w.wshape, w.params) if others else None
        generic = cf.channel_first(w, generic) if generic is not None else None
        if others and (generic is None or self._opset < cf.generic_opset(w, generic)):
            return False

        result = None  # a value computing the chain's weight (the layer map follows the chain's end to it)
        anchor = c.nodes[-1]  # after everything the chain reads: weight-only nodes go before it
        self._own_scale = False  # onnxruntime fuses no MatMulNBits whose scale another node reads: one form each
        for node, index, kind, form in readers:
            if kind == "matmul":
                value = self._emit_matmul(w, form, c, like, graph, anchor)  # type: ignore[arg-type]
                node.replace_input_with(index, value)
                result = value if result is None else result
                self._own_scale = True
            elif kind == "gather":
                out = self._emit_gather(w, node, c, like, graph)
                self._own_scale = True
                if not read_instead(node.outputs[0], out, graph):
                    raise AssertionError("a Gather's output that is no graph output is always replaceable")
                self.replaced[node.outputs[0]] = out
                graph.remove(node, safe=True)
        if generic is not None:
            value, new = self._emit_generic(w, generic, c, like, graph, anchor)
            if not read_instead(c.end, value, graph):  # (only a graph output: then no reader was rewritten)
                for n in reversed(new):
                    graph.remove(n, safe=True)
                return False
            result = value
        if result is not None:
            self.replaced[c.end] = result
        for n in reversed(c.nodes):
            graph.remove(n, safe=True)
        self._read.update(v for v in (c.weight, through(c.scale, "Cast"),
                                      c.zero_point and through(c.zero_point, "Cast"))
                          if v is not None and v.is_initializer())
        return True

    def _weight(self, c: cf.Chain) -> cf.Weight | None:
        q = c.weight
        wshape = tuple(int(d) for d in q.const_value.shape)  # type: ignore[union-attr]
        if not wshape or 0 in wshape:
            return None
        scale = const_array(c.scale)
        zp = const_array(c.zero_point) if c.zero_point is not None else None
        if scale is None or scale.dtype != c.float_type.numpy() or (c.zero_point is not None and zp is None):
            return None
        params = cf.broadcast(wshape, [a.shape for a in (scale, zp) if a is not None])
        if params is None:
            return None
        qtype = q.const_value.dtype  # type: ignore[union-attr]
        zp_int = cf.exact_ints(zp, qtype) if zp is not None else None
        if zp is not None and zp_int is None:
            return None
        final = cf.reshape_target(c.reshape, wshape) if c.reshape is not None else wshape
        if final is None:
            return None
        out = cf.DT.FLOAT if c.to_f32 is not None else c.float_type
        return cf.Weight(q, wshape, qtype, scale, zp_int if zp_int is not None and zp_int.any() else None, params,
                       final, out)

    def _reader_form(self, node: oir.Node, index: int, graph: oir.Graph, w: cf.Weight) -> tuple[str, tuple | None]:
        """How the chain is computed for one reader: ("matmul", form) for a MatMul's weight whose form onnxruntime
        fuses, ("gather", None) for a Gather's table, else ("other", None)."""
        if node.graph is not graph or not is_default_domain(node):
            return "other", None
        if len(w.final) == 2 and node.op_type in ("MatMul", "Transpose"):
            transposed = node.op_type == "Transpose"
            if transposed:
                perm = list(attr(node, "perm", [1, 0]))  # type: ignore[arg-type]
                if perm != [1, 0] or node.outputs[0].is_graph_output():
                    return "other", None
                uses = list(node.outputs[0].uses())
                if len(uses) != 1 or uses[0][0].graph is not graph or uses[0][0].op_type != "MatMul" \
                        or uses[0][1] != 1 or not is_default_domain(uses[0][0]):
                    return "other", None
            elif index != 1:
                return "other", None
            form = cf.matmul_form(w, transposed)
            if form is not None and self._opset >= cf.matmul_opset(w, form):
                return "matmul", form
            return "other", None
        if node.op_type == "Gather" and index == 0 and cf.gather_fits(w, node) \
                and self._opset >= (21 if w.qtype in (cf.DT.INT4, cf.DT.UINT4) else 13):
            return "gather", None
        return "other", None

    def _node(self, new: list[oir.Node], op: str, inputs: list[oir.Value | None], dtype: oir.DataType,
              shape: Sequence[object] | None, hint: str, attrs: Sequence[oir.Attr] = ()) -> oir.Value:
        name = self._fresh(hint)
        out = oir.Value(name=self._fresh(f"{name}_out"), type=oir.TensorType(dtype),
                        shape=oir.Shape(list(shape)) if shape is not None else None)
        new.append(oir.Node("", op, inputs, list(attrs), outputs=[out], name=name))
        return out

    def _insert(self, new: list[oir.Node], like: oir.Node, graph: oir.Graph, before: oir.Node) -> None:
        for n in new:
            inherit_meta(n, like)
        graph.insert_before(before, new)

    def _emit_generic(self, w: cf.Weight, form: cf.Form, c: cf.Chain, like: oir.Node, graph: oir.Graph,
                      anchor: oir.Node) -> tuple[oir.Value, list[oir.Node]]:
        """One DequantizeLinear of the weight read with the form's view, then a Reshape to the chain's shape."""
        new: list[oir.Node] = []
        scale_t = w.spread(w.scale, w.out.numpy()).reshape(form.params)
        inputs = [self._view(w.q, form.view, "weight"), self._scale(c.scale, scale_t, like, new)]
        if w.zero_point is not None:
            inputs.append(self._zero_point(c.zero_point, w.spread(w.zero_point, np.int64).reshape(form.params),
                                           w.qtype))
        attrs: list[oir.Attr] = []
        if form.axis is not None:
            attrs.append(oir.AttrInt64("axis", form.axis))
        if form.block:
            attrs.append(oir.AttrInt64("block_size", form.block))
        name = f"{like.name or 'weights'}/dequantize"
        result = self._node(new, "DequantizeLinear", inputs, w.out, form.view, name, attrs)
        if form.view != w.final:
            shape = self._initializer(oir.Tensor(np.array(w.final, np.int64)), self._main, f"{name}/shape")
            result = self._node(new, "Reshape", [result, shape], w.out, w.final, f"{name}/reshape")
        self._insert(new, like, graph, anchor)
        return result, new

    def _emit_matmul(self, w: cf.Weight, form: tuple, c: cf.Chain, like: oir.Node, graph: oir.Graph,
                     anchor: oir.Node) -> oir.Value:
        """The weight (of the chain's shape) as the DequantizeLinear onnxruntime fuses with its MatMul."""
        transposed, block, scale_t, zp_t = form
        rows, cols = w.final
        new: list[oir.Node] = []
        name = f"{like.name or 'weights'}/dequantize"
        q = self._view(w.q, w.final, "weight")
        inputs: list[oir.Value | None] = [q, self._scale(c.scale, scale_t.astype(w.out.numpy()), like, new)]
        if zp_t is not None:
            inputs.append(self._zero_point(c.zero_point, zp_t, w.qtype))
        attrs = [oir.AttrInt64("axis", 0), oir.AttrInt64("block_size", block)] if block else [oir.AttrInt64("axis", 1)]
        if not transposed:  # per output channel (axis 1) or by blocks along K (axis 0) of [K, N]
            return self._done(new, like, graph, anchor,
                              self._node(new, "DequantizeLinear", inputs, w.out, w.final, name, attrs))
        perm = [oir.AttrInt64s("perm", [1, 0])]
        inputs[0] = self._transposed(q, "weight")
        kn = self._node(new, "DequantizeLinear", inputs, w.out, (cols, rows), name, attrs)
        return self._done(new, like, graph, anchor,
                          self._node(new, "Transpose", [kn], w.out, w.final, f"{name}/transpose", perm))

    def _done(self, new: list[oir.Node], like: oir.Node, graph: oir.Graph, anchor: oir.Node,
              value: oir.Value) -> oir.Value:
        self._insert(new, like, graph, anchor)
        return value

    def _emit_gather(self, w: cf.Weight, gather: oir.Node, c: cf.Chain, like: oir.Node, graph: oir.Graph) -> oir.Value:
        """The Gather's output as one DequantizeLinear of the gathered integer rows: per tensor, or per row of their
        2-D view (rows, the axes the scale does not vary along), the scale and zero point gathered alike."""
        ids = gather.inputs[1]
        assert ids is not None and ids.shape is not None
        lead = list(ids.shape)
        static = all(isinstance(d, int) for d in lead)
        j = cf.gather_split(w)
        assert j is not None
        new: list[oir.Node] = []
        name = f"{like.name or 'weights'}/gathered"
        narrow = {cf.DT.UINT4: cf.DT.UINT8, cf.DT.INT4: cf.DT.INT8}
        qtype = narrow.get(w.qtype, w.qtype)  # ONNX's Gather takes no 4-bit tensor: 8 bits, folded at load

        def rows(v: oir.Value, shape: Sequence[int], hint: str) -> oir.Value:
            if w.qtype in narrow:
                v = self._node(new, "Cast", [v], qtype, shape, f"{hint}/8bit", [oir.AttrInt64("to", qtype)])
            return self._node(new, "Gather", [v, ids], qtype, lead + list(shape[1:]), hint, [oir.AttrInt64("axis", 0)])

        def flat(v: oir.Value, dims: list[int], dtype: oir.DataType, hint: str) -> oir.Value:
            shape = self._initializer(oir.Tensor(np.array(dims, np.int64)), self._main, f"{hint}/shape")
            return self._node(new, "Reshape", [v, shape], dtype, None, hint)

        pshape = w.wshape[:j]
        scale = self._scale(c.scale, w.spread(w.scale, w.out.numpy()).reshape(pshape), like, new)
        zp = self._zero_point(c.zero_point, w.spread(w.zero_point, np.int64).reshape(pshape), w.qtype) \
            if w.zero_point is not None else None
        values = rows(w.q, w.wshape, f"{name}/weight")
        attrs: list[oir.Attr] = []
        direct = len(lead) == 1 and j == 1  # gathered per-row rows that are already (rows, columns)
        if j:  # per row: the rows gathered from the scale and zero point too, all flattened to (rows, columns)
            scale = self._node(new, "Gather", [scale, ids], w.out, lead + list(pshape[1:]), f"{name}/scale",
                               [oir.AttrInt64("axis", 0)])
            zp = rows(zp, pshape, f"{name}/zero_point") if zp is not None else None
            if not direct:
                values = flat(values, [-1, math.prod(w.wshape[j:])], qtype, f"{name}/rows")
                scale = flat(scale, [-1], w.out, f"{name}/scale_rows")
                zp = flat(zp, [-1], qtype, f"{name}/zero_point_rows") if zp is not None else None
            attrs.append(oir.AttrInt64("axis", 0))
        elif zp is not None and w.qtype in narrow:
            zp = self._node(new, "Cast", [zp], qtype, (), f"{name}/zero_point/8bit", [oir.AttrInt64("to", qtype)])
        inputs = [values, scale] + ([zp] if zp is not None else [])
        out = self._node(new, "DequantizeLinear", inputs, w.out, None, f"{name}/dequantize", attrs)
        target = lead + list(w.final[1:])
        if (j and not direct) or w.final != w.wshape:
            if static or not j:  # 0 copies a gathered axis where there is no flattening
                dims = target if static else [0] * len(lead) + list(w.final[1:])
                out = flat(out, dims, w.out, f"{name}/reshape")  # type: ignore[arg-type]
            else:
                ish = self._node(new, "Shape", [ids], cf.DT.INT64, (len(lead),), f"{name}/ids_shape")
                rest = self._initializer(oir.Tensor(np.array(w.final[1:], np.int64)), self._main, f"{name}/rest")
                shape = self._node(new, "Concat", [ish, rest], cf.DT.INT64, (len(w.final) - 1 + len(lead),),
                                   f"{name}/shape", [oir.AttrInt64("axis", 0)])
                out = self._node(new, "Reshape", [out, shape], w.out, None, f"{name}/reshape")
        out.shape = oir.Shape(target)
        self._insert(new, like, graph, gather)
        return out

    def _fresh(self, hint: str) -> str:
        return fresh_name(self._names, hint)

    def _initializer(self, tensor: oir.TensorProtocol, owner: oir.Graph, hint: str) -> oir.Value:
        name = self._fresh(hint)
        tensor.name = name
        v = oir.Value(name=name, const_value=tensor, type=oir.TensorType(tensor.dtype), shape=oir.Shape(tensor.shape))
        owner.register_initializer(v)
        return v

    def _view(self, source: oir.Value, shape: tuple[int, ...], hint: str) -> oir.Value:
        """The initializer `source` read with another shape: its own value when the shape is its own, else an
        initializer of the same graph viewing the same memory (the bytes the file holds once; for a packed 4-bit
        tensor the same packed bytes)."""
        t = source.const_value
        assert t is not None and source.graph is not None
        if tuple(int(d) for d in t.shape) == shape:
            return source
        key = (id(source), shape)
        if key not in self._views:
            if isinstance(t, oir.PackedTensor):
                view: oir.TensorProtocol = oir.PackedTensor(t.raw, t.dtype, shape=list(shape))
            else:
                view = oir.Tensor(t.numpy().reshape(shape), dtype=t.dtype)
            self._views[key] = self._initializer(view, source.graph, f"{source.name or hint}/{hint}")
        return self._views[key]

    def _transposed(self, source: oir.Value, hint: str) -> oir.Value:
        """A 2-D integer initializer `source` transposed, as a new initializer of the same graph (one per source),
        computed when the model is written (so the conversion holds one transposed weight at a time)."""
        t = source.const_value
        assert t is not None and source.graph is not None and len(t.shape) == 2
        key = (id(source), "transposed")
        if key not in self._views:
            shape = oir.Shape(list(t.shape)[::-1])

            def compute() -> oir.TensorProtocol:
                moved = cf.transpose_matrix(t)  # type: ignore[arg-type]
                packed = isinstance(t, oir.PackedTensor)
                return oir.PackedTensor(moved, t.dtype, shape=shape) if packed else oir.Tensor(moved, dtype=t.dtype)

            lazy = oir.LazyTensor(compute, dtype=t.dtype, shape=shape)
            self._views[key] = self._initializer(lazy, source.graph, f"{source.name or hint}/transposed")
        return self._views[key]

    def _scale(self, value: oir.Value, target: np.ndarray, like: oir.Node, new: list[oir.Node]) -> oir.Value:
        """The scale DequantizeLinear reads: the initializer behind `value` when it holds
        `target` (an f16 one read as f32 through a Cast), else a new initializer of `target` (f16 read through a
        Cast where the chain's scale is f16 and f16 holds `target`: a layout of its own keeps the scale's size)."""
        root = through(value, "Cast")
        name = f"{like.name or 'w'}/scale"
        if root is not None and root.is_initializer() and root.const_value is not None:
            held = root.const_value.numpy()
            same = held.size == target.size and not self._own_scale
            if held.dtype == target.dtype and same and cf.same_bits(held.reshape(target.shape), target):
                return self._view(root, target.shape, "scale")
            if held.dtype == np.float16 and target.dtype == np.float32:
                t16 = np.ascontiguousarray(target.astype(np.float16))
                if cf.same_bits(t16.astype(np.float32), target):
                    f16 = self._view(root, target.shape, "scale") \
                        if same and cf.same_bits(held.reshape(target.shape), t16) \
                        else self._initializer(oir.Tensor(t16), self._main, name)
                    return self._node(new, "Cast", [f16], cf.DT.FLOAT, target.shape, f"{f16.name}/f32",
                                      [oir.AttrInt64("to", cf.DT.FLOAT)])
        return self._initializer(oir.Tensor(np.ascontiguousarray(target)), self._main, name)

    def _zero_point(self, value: oir.Value | None, target: np.ndarray, qtype: oir.DataType) -> oir.Value:
        """The zero point DequantizeLinear reads, of the weight's type: the initializer behind `value` when it is
        of that type and holds `target`, else a new initializer."""
        root = through(value, "Cast") if value is not None else None
        if root is not None and root.is_initializer() and root.const_value is not None \
                and root.const_value.dtype == qtype and math.prod(root.const_value.shape) == target.size \
                and np.array_equal(root.const_value.numpy().astype(np.int64).reshape(target.shape), target):
            return self._view(root, target.shape, "zero_point")
        tensor = oir.Tensor(np.ascontiguousarray(target).astype(qtype.numpy()), dtype=qtype)
        return self._initializer(tensor, self._main, f"{(value.name if value else None) or 'w'}/zero_point")

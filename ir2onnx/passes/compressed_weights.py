"""Compressed weights stay compressed: an integer weight's decompression chain becomes one DequantizeLinear.

OpenVINO IRs with NNCF weight compression hold integer weights (u8/i8 per output channel, u4/i4 group-wise) as a
Const followed by Convert to f16 or f32, an optional Subtract of a zero point, a Multiply by a scale, an optional
Reshape (group-wise: [out, in/group, group] back to [out, in]) and an optional Convert f16 -> f32. The translation
spells that chain literally: Cast(int initializer) -> [Sub(zero point)] -> Mul(scale) [-> Reshape] [-> Cast].
onnxruntime's CPU has no f16 Sub/Mul kernels, so it cannot fold the chain at load: it holds the weights expanded to
f16 or f32 and runs Sub and Mul over every weight on every call.

This pass finds each such chain (bodies included) whose weight is an INT8/UINT8/INT4/UINT4 initializer and whose
zero point and scale are constants (initializers, Constant outputs, or those behind Casts), and computes it with one
DequantizeLinear of the integer initializer, kept at its bit width (4-bit weights stay packed), then a Reshape to the
chain's shape (the chain's own Reshape taken in):

* the DequantizeLinear reads the weight's bytes with another shape (a view: no copy, the file holds them once): per
  tensor the flat weight, per channel a rank-3 view (before, channels, after) with axis 1, groups along the last axis
  (NNCF's [out, in/group, group]) a [groups, group] view per channel with axis 0 (one row per group; no block_size,
  so 8-bit groups need no opset 21), groups along another axis by blocks (opset 21). Not the weight's own [out, in]:
  onnxruntime's default optimisations fuse a rank-2 DequantizeLinear feeding a MatMul (through the Transpose of
  MatMul's transpose_b, or a Cast) into MatMulNBits, which by default (accuracy level 4) quantizes the activations
  to int8: measured 5e-3 relative error on a 1024-wide product, 0.28 absolute on a 16-wide one. A blocked rank-3
  DequantizeLinear -> Reshape -> Transpose -> MatMul is fused likewise when a session enables
  `session.enable_dq_matmulnbits_fusion`; the per-channel forms here are never fused, so onnxruntime computes the
  IR's arithmetic with its default options;
* the zero point in the weight's integer type (a chain whose zero point the type cannot hold exactly stays as it
  is; an all-zero one is left out);
* the scale in the chain's float type, or in f32 where the chain's f16 result is cast to f32 (see below). An f16
  scale that DequantizeLinear reads as f32 stays f16 in the file, read through a Cast that onnxruntime folds at load.

Exactness: q - zp is an integer of at most 9 bits, exact in f16 and f32, and DequantizeLinear rounds the product
(q - zp) * scale once, as Mul does: an f32 chain, and an f16 chain whose result stays f16, are computed bit for bit.
An f16 chain cast to f32 is computed without the product's rounding to f16: (q - zp) * scale is exact in f32 (9 by
11 significant bits), which is what OpenVINO's CPU plugin computes for such a chain (it decompresses in f32) and
what onnxruntime computed for the literal chain where nothing sat between the Mul and the Cast (it runs f16 Sub and
Mul in f32 and drops the pair of casts between them); that Cast goes.

DequantizeLinear takes 8-bit weights with an f32 scale at the opsets the translation uses (13+), an f16 scale from
opset 19, and 4-bit weights or blocks from opset 21 (the translation already uses 21 for packed 4-bit weights). The
model's opset is not raised: a chain needing more stays as it is. onnxruntime's CPU kernel (1.32) runs all these
forms: INT8/UINT8/INT4/UINT4 with f16 or f32 scales, per tensor, per axis and blocked.

It runs when the model is optimised, before the types stage (OrtTypesPass computes in a wider type the nodes that
lack CPU kernels, which would hide the chain) and after "f16 as f32" (whose f32 chains read f16 scales through
Casts). Recurrent fusion, later, reads a cell's weights as constants (analysis/values.py's const_array): it must
fold DequantizeLinear for a cell with compressed weights to fuse.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_graphs, attr, is_default_domain, through
from ir2onnx.passes.analysis.values import const_array, const_ints
from ir2onnx.passes.replacing import ReplacingPass
from ir2onnx.passes.rewrite import all_names, fresh_name, inherit_meta, read_instead

DT = oir.DataType
_INT_RANGE = {DT.INT8: (-128, 127), DT.UINT8: (0, 255), DT.INT4: (-8, 7), DT.UINT4: (0, 15)}
_FLOATS = (DT.FLOAT, DT.FLOAT16)
_BITS = {DT.FLOAT: np.uint32, DT.FLOAT16: np.uint16}


@dataclass
class _Chain:
    """A matched decompression chain: its nodes, in order, and what they read."""

    nodes: list[oir.Node]
    weight: oir.Value  # the integer initializer
    float_type: oir.DataType  # the type the chain computes in
    zero_point: oir.Value | None  # the Sub's constant
    scale: oir.Value  # the Mul's constant
    reshape: oir.Node | None
    to_f32: oir.Node | None  # the Cast of the f16 result to f32
    end: oir.Value  # what the chain computes


@dataclass(frozen=True)
class _Form:
    """How one DequantizeLinear computes the chain: on the weight's bytes read with the shape `view`, per tensor
    (`axis` None), per `axis`, or by blocks of `block` along `axis`; its scale and zero point of shape `params`."""

    view: tuple[int, ...]
    axis: int | None
    block: int
    params: tuple[int, ...]
    spread: tuple[int, ...]  # the params over the weight's axes (1 where they do not vary)


class DequantizeWeightsPass(ReplacingPass):
    """Decompression chains of integer initializers as DequantizeLinear nodes, in place."""

    def call(self, model: oir.Model) -> oir.passes.PassResult:
        self._opset = model.opset_imports.get("", model.opset_imports.get("ai.onnx", 1))
        self._main = model.graph  # new constants are its initializers (bodies read them as outer values)
        self._names = all_names(model.graph)
        self._views: dict[tuple[int, tuple[int, ...]], oir.Value] = {}
        self._read: set[oir.Value] = set()  # initializers whose readers the rewrite changed
        modified = False
        for graph in list(all_graphs(model.graph)):
            for node in list(graph):
                if node.graph is not graph or node.op_type != "Cast" or not is_default_domain(node):
                    continue  # (a node an earlier rewrite removed)
                chain = _match(node)
                if chain is not None and self._rewrite(chain, graph):
                    modified = True
        for v in self._read:  # the weights and constants that only the chains read
            owner = v.graph
            if owner is not None and v.name and owner.initializers.get(v.name) is v and not v.uses() \
                    and not v.is_graph_output() and not v.is_graph_input():
                del owner.initializers[v.name]
        return oir.passes.PassResult(model, modified=modified)

    # the rewrite

    def _rewrite(self, c: _Chain, graph: oir.Graph) -> bool:
        q = c.weight
        wshape = tuple(int(d) for d in q.const_value.shape)  # type: ignore[union-attr]
        if not wshape or 0 in wshape:
            return False
        scale = const_array(c.scale)
        zp = const_array(c.zero_point) if c.zero_point is not None else None
        if scale is None or scale.dtype != c.float_type.numpy() or (c.zero_point is not None and zp is None):
            return False
        params = _broadcast(wshape, [a.shape for a in (scale, zp) if a is not None])
        form = _form(wshape, params) if params is not None else None
        if form is None:
            return False
        qtype = q.const_value.dtype  # type: ignore[union-attr]
        zp_int = _exact_ints(zp, qtype) if zp is not None else None
        if zp is not None and zp_int is None:
            return False
        final = _reshape_target(c.reshape, wshape) if c.reshape is not None else wshape
        if final is None:
            return False
        out_type = DT.FLOAT if c.to_f32 is not None else c.float_type
        need = 13
        if out_type == DT.FLOAT16:
            need = 19
        if qtype in (DT.INT4, DT.UINT4) or form.block:
            need = 21
        if self._opset < need:
            return False

        # the chain's last node is after everything it reads: the new nodes go before it
        anchor = c.nodes[-1]
        like = next(n for n in c.nodes if n.op_type == "Mul")
        new: list[oir.Node] = []
        scale_t = _spread(scale, wshape, form).astype(out_type.numpy())
        inputs = [self._view(q, form.view, "weight"), self._scale(c.scale, scale_t, like, new)]
        if zp_int is not None and zp_int.any():
            inputs.append(self._zero_point(c.zero_point, _spread(zp_int, wshape, form), qtype))
        attrs: list[oir.Attr] = []
        if form.axis is not None:
            attrs.append(oir.AttrInt64("axis", form.axis))
        if form.block:
            attrs.append(oir.AttrInt64("block_size", form.block))
        name = self._fresh(f"{like.name or 'weights'}/dequantize")
        result = oir.Value(name=self._fresh(f"{name}_out"), type=oir.TensorType(out_type), shape=oir.Shape(form.view))
        new.append(oir.Node("", "DequantizeLinear", inputs, attrs, outputs=[result], name=name))
        if form.view != final:
            shape = self._initializer(oir.Tensor(np.array(final, np.int64)), self._main, f"{name}/shape")
            out = oir.Value(name=self._fresh(f"{name}/reshape_out"), type=oir.TensorType(out_type),
                            shape=oir.Shape(final))
            new.append(oir.Node("", "Reshape", [result, shape], outputs=[out], name=self._fresh(f"{name}/reshape")))
            result = out
        for n in new:
            inherit_meta(n, like)
        graph.insert_before(anchor, new)
        if not read_instead(c.end, result, graph):
            for n in new:
                graph.remove(n)
            return False
        self.replaced[c.end] = result
        for n in reversed(c.nodes):
            graph.remove(n, safe=True)
        self._read.update(v for v in (q, through(c.scale, "Cast"), c.zero_point and through(c.zero_point, "Cast"))
                          if v is not None and v.is_initializer())
        return True

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

    def _scale(self, value: oir.Value, target: np.ndarray, like: oir.Node, new: list[oir.Node]) -> oir.Value:
        """The scale DequantizeLinear reads: the initializer behind `value` when it holds `target` (f16 read as
        f32 through a Cast), else a new initializer of `target`."""
        root = through(value, "Cast")
        if root is not None and root.is_initializer() and root.const_value is not None \
                and math.prod(root.const_value.shape) == target.size:
            held = root.const_value.numpy().reshape(target.shape)
            if held.dtype == target.dtype and _same_bits(held, target):
                return self._view(root, target.shape, "scale")
            if held.dtype == np.float16 and target.dtype == np.float32 and _same_bits(held.astype(np.float32), target):
                f16 = self._view(root, target.shape, "scale")
                name = self._fresh(f"{f16.name}/f32")
                out = oir.Value(name=self._fresh(f"{name}_out"), type=oir.TensorType(DT.FLOAT),
                               shape=oir.Shape(target.shape))
                new.append(oir.Node("", "Cast", [f16], [oir.AttrInt64("to", DT.FLOAT)], outputs=[out], name=name))
                return out
        return self._initializer(oir.Tensor(np.ascontiguousarray(target)), self._main, f"{like.name or 'w'}/scale")

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


# matching

def _sole_reader(v: oir.Value, graph: oir.Graph) -> tuple[oir.Node, int] | None:
    """The one node of `graph` (standard domain) reading `v`, with the input index, where `v` is no graph output."""
    if v.is_graph_output():
        return None
    uses = list(v.uses())
    if len(uses) != 1:
        return None
    node, index = uses[0]
    if node.graph is not graph or not is_default_domain(node):
        return None
    return node, index


def _match(cast: oir.Node) -> _Chain | None:
    graph = cast.graph
    q = cast.inputs[0] if cast.inputs else None
    if graph is None or q is None or q.const_value is None or not q.is_initializer() \
            or q.const_value.dtype not in _INT_RANGE:
        return None
    to = attr(cast, "to")
    if to is None or DT(to) not in _FLOATS:  # type: ignore[arg-type]
        return None
    float_type = DT(to)  # type: ignore[arg-type]
    nodes = [cast]
    v = cast.outputs[0]
    zero_point = None
    step = _sole_reader(v, graph)
    if step is not None and step[0].op_type == "Sub" and step[1] == 0 and len(step[0].inputs) == 2:
        zero_point = step[0].inputs[1]
        if zero_point is None or const_array(zero_point) is None:
            return None
        nodes.append(step[0])
        v = step[0].outputs[0]
        step = _sole_reader(v, graph)
    if step is None or step[0].op_type != "Mul" or len(step[0].inputs) != 2:
        return None
    mul = step[0]
    scale = mul.inputs[1 - step[1]]
    if scale is None or mul.inputs[0] is mul.inputs[1] or const_array(scale) is None:
        return None
    nodes.append(mul)
    v = mul.outputs[0]
    reshape = to_f32 = None
    while (step := _sole_reader(v, graph)) is not None and step[1] == 0:
        n = step[0]
        if n.op_type == "Reshape" and reshape is None and len(n.inputs) == 2 and const_ints(n.inputs[1]) is not None:
            reshape = n
        elif n.op_type == "Cast" and to_f32 is None and float_type == DT.FLOAT16 and attr(n, "to") == DT.FLOAT:
            to_f32 = n
        else:
            break
        nodes.append(n)
        v = n.outputs[0]
    return _Chain(nodes, q, float_type, zero_point, scale, reshape, to_f32, v)


# layouts

def _aligned(shape: Sequence[int], rank: int) -> tuple[int, ...]:
    return (1,) * (rank - len(shape)) + tuple(int(d) for d in shape)


def _broadcast(wshape: tuple[int, ...], shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The shape the scale and zero point broadcast to, aligned to the weight's rank, where broadcasting them with
    the weight leaves its shape (else None)."""
    r = len(wshape)
    if any(len(s) > r for s in shapes):
        return None
    try:
        params = np.broadcast_shapes(*(_aligned(s, r) for s in shapes))
    except ValueError:
        return None
    if any(p not in (1, w) for p, w in zip(params, wshape)):
        return None
    return tuple(int(p) for p in params)


def _form(wshape: tuple[int, ...], params: tuple[int, ...]) -> _Form | None:
    """The DequantizeLinear for a weight of `wshape` whose scale and zero point broadcast from `params`: per tensor on
    the flat weight; per channel on a rank-3 view (before, channels, after) with axis 1 (a 2-D weight per row:
    (rows, 1, columns) with axis 0, which OpenVINO's ONNX frontend reads right); groups along the last axis
    as per channel on a [groups, group] view (one row per group); groups along another axis by blocks (opset 21).
    Never the weight's own shape: a DequantizeLinear of rank 2 feeding a MatMul (through a Transpose or a Cast) is
    what onnxruntime fuses into MatMulNBits, which by default quantizes the activations to int8."""
    full = [i for i, p in enumerate(params) if p != 1]
    if not full:
        return _Form((math.prod(wshape),), None, 0, (), (1,) * len(wshape))
    if len(full) == 1:
        a = full[0]
        spread = tuple(w if i == a else 1 for i, w in enumerate(wshape))
        if a == 0 and len(wshape) == 2:  # MatMul and Gather weights: OpenVINO's ONNX reader mis-reads (1, N, K), axis 1
            return _Form((wshape[0], 1, wshape[1]), 0, 0, (wshape[0],), spread)
        return _Form((math.prod(wshape[:a]), wshape[a], math.prod(wshape[a + 1:])), 1, 0, (wshape[a],), spread)
    reduced = [i for i, (p, w) in enumerate(zip(params, wshape)) if p == 1 and w > 1]
    if len(reduced) != 1:
        return None
    k = reduced[0]
    before, after = math.prod(wshape[:k]), math.prod(wshape[k + 1:])
    spread = wshape[:k] + (1,) + wshape[k + 1:]
    if after == 1:
        return _Form((before, wshape[k]), 0, 0, (before,), spread)
    return _Form((before, wshape[k], after), 1, wshape[k], (before, 1, after), spread)


def _spread(values: np.ndarray, wshape: tuple[int, ...], form: _Form) -> np.ndarray:
    """A scale's or zero point's values as `form` reads them."""
    aligned = values.reshape(_aligned(values.shape, len(wshape)))
    return np.ascontiguousarray(np.broadcast_to(aligned, form.spread)).reshape(form.params)


def _reshape_target(reshape: oir.Node, wshape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The Reshape's output shape for an input of `wshape` (0 and -1 resolved)."""
    dims = const_ints(reshape.inputs[1])
    if dims is None:
        return None
    if not attr(reshape, "allowzero", 0):
        if any(d == 0 and i >= len(wshape) for i, d in enumerate(dims)):
            return None
        dims = [wshape[i] if d == 0 else d for i, d in enumerate(dims)]
    size = math.prod(wshape)
    if dims.count(-1) == 1:
        rest = math.prod(d for d in dims if d != -1)
        if rest <= 0 or size % rest:
            return None
        dims = [size // rest if d == -1 else d for d in dims]
    if any(d < 0 for d in dims) or math.prod(dims) != size:
        return None
    return tuple(dims)


def _exact_ints(values: np.ndarray, qtype: oir.DataType) -> np.ndarray | None:
    """`values` as int64 when each is an integer the weight's type holds, else None."""
    lo, hi = _INT_RANGE[qtype]
    wide = values.astype(np.float64)
    if not np.all(np.isfinite(wide)) or np.any(wide != np.round(wide)) or np.any(wide < lo) or np.any(wide > hi):
        return None
    return wide.astype(np.int64)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    bits = _BITS[DT.FLOAT16 if a.dtype == np.float16 else DT.FLOAT]
    return a.shape == b.shape and bool(np.array_equal(np.ascontiguousarray(a).view(bits),
                                                      np.ascontiguousarray(b).view(bits)))

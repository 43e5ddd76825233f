"""The arithmetic of DequantizeWeightsPass (compressed_weights.py): which decompression chains it matches, and the
DequantizeLinear form (view, axis, block) that computes each exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import attr, is_default_domain
from ir2onnx.passes.analysis.values import const_array, const_ints

DT = oir.DataType
INT_RANGE = {DT.INT8: (-128, 127), DT.UINT8: (0, 255), DT.INT4: (-8, 7), DT.UINT4: (0, 15)}
FLOATS = (DT.FLOAT, DT.FLOAT16)
BITS = {DT.FLOAT: np.uint32, DT.FLOAT16: np.uint16}


@dataclass
class Chain:
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
class Form:
    """How one DequantizeLinear computes the chain: on the weight's bytes read with the shape `view`, per tensor
    (`axis` None), per `axis`, or by blocks of `block` along `axis`; its scale and zero point of shape `params`."""

    view: tuple[int, ...]
    axis: int | None
    block: int
    params: tuple[int, ...]


@dataclass(frozen=True)
class Weight:
    """What every form of one chain shares: the integer initializer `q` of shape `wshape` and type `qtype`, the
    scale and the exact integer zero point (None where all zero) as arrays, the shape `params` they broadcast to
    (aligned to `wshape`), the chain's shape `final` and the type `out` it computes."""

    q: oir.Value
    wshape: tuple[int, ...]
    qtype: oir.DataType
    scale: np.ndarray
    zero_point: np.ndarray | None
    params: tuple[int, ...]
    final: tuple[int, ...]
    out: oir.DataType

    def spread(self, values: np.ndarray, dtype: object) -> np.ndarray:
        """A scale's or zero point's values broadcast to `params` (aligned to the weight's axes)."""
        aligned = values.reshape(_aligned(values.shape, len(self.wshape)))
        return np.ascontiguousarray(np.broadcast_to(aligned, self.params)).astype(dtype)


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


def match(cast: oir.Node) -> Chain | None:
    graph = cast.graph
    q = cast.inputs[0] if cast.inputs else None
    if graph is None or q is None or q.const_value is None or not q.is_initializer() \
            or q.const_value.dtype not in INT_RANGE:
        return None
    to = attr(cast, "to")
    if to is None or DT(to) not in FLOATS:  # type: ignore[arg-type]
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
    return Chain(nodes, q, float_type, zero_point, scale, reshape, to_f32, v)


# forms

def generic_opset(w: Weight, form: Form) -> int:
    """The opset DequantizeLinear needs: 8-bit with an f32 scale 13, an f16 scale 19, 4-bit or blocks 21."""
    if w.qtype in (DT.INT4, DT.UINT4) or form.block:
        return 21
    return 19 if w.out == DT.FLOAT16 else 13


def matmul_opset(w: Weight, form: tuple) -> int:
    if w.qtype in (DT.INT4, DT.UINT4) or form[1]:
        return 21
    return 19 if w.out == DT.FLOAT16 else 13


def _grid(w: Weight) -> tuple[int, int] | None:
    """For a 2-D chain (rows, columns), the blocks of rows and of columns over which its scale and zero point are
    constant, where they tile the weight (their values then read as a (rows / block, columns / block) array), or
    None. The chain's own weight, or NNCF's groups: [rows, groups, group] -> [rows, columns] (groups along the
    columns) and [groups, group, columns] -> [rows, columns] (along the rows)."""
    (rows, cols), ws, p = w.final, w.wshape, w.params
    if ws == w.final:
        return (1 if p[0] == rows else rows), (1 if p[1] == cols else cols)
    if len(ws) == 3 and p[2] == 1 and ws[0] == rows and ws[1] * ws[2] == cols:
        return (1 if p[0] == rows else rows), (ws[2] if p[1] == ws[1] else cols)
    if len(ws) == 3 and p[1] == 1 and ws[2] == cols and ws[0] * ws[1] == rows:
        return (ws[1] if p[0] == ws[0] else rows), (1 if p[2] == cols else cols)
    return None


def matmul_form(w: Weight, transposed: bool) -> tuple | None:
    """(transposed, block, scale, zero point) of the DequantizeLinear onnxruntime fuses with a MatMul reading the
    2-D chain as its weight B (`transposed`: through a Transpose, so B is [K, N] = the chain's [N, K] transposed):
    per output channel (block 0; scale and zero point [N], a tensor's repeated) or by blocks of K (a power of two
    from 16, as onnxruntime's fusion requires; [K / block, N]); None for other layouts (e.g. one scale per input)."""
    grid = _grid(w)
    if grid is None:
        return None
    (rows, cols), (rb, cb) = w.final, grid
    k, n = (cols, rows) if transposed else (rows, cols)
    kb, nb = (cb, rb) if transposed else (rb, cb)
    if nb not in (1, n):
        return None
    if kb == k:
        block = 0
    elif kb >= 16 and kb & (kb - 1) == 0 and k % kb == 0:
        block = kb
    else:
        return None

    def arrange(values: np.ndarray, dtype: object) -> np.ndarray:
        g = w.spread(values, dtype).reshape(rows // rb, cols // cb)
        kn = np.ascontiguousarray(np.broadcast_to(g.T if transposed else g, (k // kb, n)))
        return kn.reshape(n) if not block else kn

    zp = arrange(w.zero_point, np.int64) if w.zero_point is not None else None
    return transposed, block, arrange(w.scale, w.scale.dtype), zp


def gather_fits(w: Weight, gather: oir.Node) -> bool:
    """Whether a Gather reading the chain can gather its integer rows: along axis 0, which the chain's Reshape keeps,
    with indices of a known rank (the gathered rows' Reshape keeps their axes)."""
    r = len(w.final)
    axis = attr(gather, "axis", 0)
    ids = gather.inputs[1] if len(gather.inputs) > 1 else None
    return isinstance(axis, int) and -r <= axis < r and axis % r == 0 and ids is not None and ids.shape is not None \
        and w.final[0] == w.wshape[0] and gather_split(w) is not None


def gather_split(w: Weight) -> int | None:
    """j where the scale and zero point vary along the weight's first j axes only, and there fully (the gathered rows
    then read as (rows, the other axes) with one scale a row; 0: per tensor), else None."""
    j = max((i + 1 for i, d in enumerate(w.params) if d != 1), default=0)
    return j if all(w.params[i] == w.wshape[i] for i in range(j)) else None


# layouts

def _aligned(shape: Sequence[int], rank: int) -> tuple[int, ...]:
    return (1,) * (rank - len(shape)) + tuple(int(d) for d in shape)


def broadcast(wshape: tuple[int, ...], shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
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


def form(wshape: tuple[int, ...], params: tuple[int, ...]) -> Form | None:
    """The DequantizeLinear for a weight of `wshape` whose scale and zero point broadcast from `params`: per tensor on
    the flat weight; per channel on a rank-3 view (before, channels, after) with axis 1 (a 2-D weight per row:
    (rows, 1, columns) with axis 0, which OpenVINO's ONNX frontend reads right); groups along the last axis
    as per channel on a [groups, group] view (one row per group); groups along another axis by blocks (opset 21).
    The generic form, for readers that are neither a MatMul in a form onnxruntime fuses nor a Gather."""
    full = [i for i, p in enumerate(params) if p != 1]
    if not full:
        return Form((math.prod(wshape),), None, 0, ())
    if len(full) == 1:
        a = full[0]
        if a == 0 and len(wshape) == 2:  # MatMul and Gather weights: OpenVINO's ONNX reader mis-reads (1, N, K), axis 1
            return Form((wshape[0], 1, wshape[1]), 0, 0, (wshape[0],))
        return Form((math.prod(wshape[:a]), wshape[a], math.prod(wshape[a + 1:])), 1, 0, (wshape[a],))
    reduced = [i for i, (p, w) in enumerate(zip(params, wshape)) if p == 1 and w > 1]
    if len(reduced) != 1:
        return None
    k = reduced[0]
    before, after = math.prod(wshape[:k]), math.prod(wshape[k + 1:])
    if after == 1:
        return Form((before, wshape[k]), 0, 0, (before,))
    return Form((before, wshape[k], after), 1, wshape[k], (before, 1, after))


def channel_first(w: Weight, generic: Form) -> Form:
    """`generic` (a form of `form`), or where it is per channel along the first axis that is not 1 and the chain's
    shape (rank 3 or more) starts with that axis: per channel on the chain's own shape with axis 0, as ONNX
    quantizes convolution weights. onnxruntime then fuses the DequantizeLinear with the Conv reading it (QLinearConv;
    a Reshape between them, the rank-3 view's, keeps it a float Conv); no Reshape runs."""
    full = [i for i, p in enumerate(w.params) if p != 1]
    if generic.axis is None or generic.block or len(full) != 1 or len(w.final) < 3:
        return generic
    a = full[0]
    if math.prod(w.wshape[:a]) != 1 or w.final[0] != w.wshape[a]:
        return generic
    return Form(w.final, 0, 0, (w.wshape[a],))


def reshape_target(reshape: oir.Node, wshape: tuple[int, ...]) -> tuple[int, ...] | None:
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


def exact_ints(values: np.ndarray, qtype: oir.DataType) -> np.ndarray | None:
    """`values` as int64 when each is an integer the weight's type holds, else None."""
    lo, hi = INT_RANGE[qtype]
    wide = values.astype(np.float64)
    if not np.all(np.isfinite(wide)) or np.any(wide != np.round(wide)) or np.any(wide < lo) or np.any(wide > hi):
        return None
    return wide.astype(np.int64)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    bits = BITS[DT.FLOAT16 if a.dtype == np.float16 else DT.FLOAT]
    return a.shape == b.shape and bool(np.array_equal(np.ascontiguousarray(a).view(bits),
                                                      np.ascontiguousarray(b).view(bits)))


def transpose_matrix(tensor: oir.TensorProtocol) -> np.ndarray:
    """The 2-D integer `tensor` transposed: an array of its values, or for a 4-bit tensor its packed bytes (two
    values a byte, the first in the low nibble, as ONNX and OpenVINO store them; the bits moved, not the values, so
    signed and unsigned alike)."""
    rows, cols = (int(d) for d in tensor.shape)
    if not isinstance(tensor, oir.PackedTensor):
        return np.ascontiguousarray(tensor.numpy().T)
    packed = np.asarray(tensor.raw).reshape(-1)
    nibbles = np.empty(packed.size * 2, np.uint8)
    nibbles[0::2] = packed & 15
    nibbles[1::2] = packed >> 4
    moved = nibbles[:rows * cols].reshape(rows, cols).T.reshape(-1)
    if moved.size % 2:
        moved = np.append(moved, np.uint8(0))
    return moved[0::2] | (moved[1::2] << 4)

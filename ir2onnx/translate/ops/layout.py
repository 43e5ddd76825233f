"""Layout ops: DepthToSpace, SpaceToDepth, ShuffleChannels, BatchToSpace, SpaceToBatch, Pad.

Each is the Reshape / Transpose / Reshape of OpenVINO's specification (any rank, any element type), with the
intermediate shapes computed from the input's shape at run time where they are not known at conversion time.
"""

from __future__ import annotations

from collections.abc import Sequence

import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder
from ir2onnx.translate.context import LayerContext, has_runtime_dims, runtime_axes
from ir2onnx.translate.registry import converter

Dim = "int | oir.Value"  # a static size, or a 1-element int64 value (a string: see window.Vec)
_I64_MAX = 2**63 - 1
_I64_MIN = -(2**63)


def input_dims(ctx: LayerContext, i: int) -> list[Dim]:
    """Every dim of input i: an int where the IR knows it (known_dim), else a slice of Shape(x)."""
    rank = ctx.input_rank(i)
    shape: oir.Value | None = None
    out: list[Dim] = []
    for a in range(rank):
        d = known_dim(ctx, i, a)
        if d is not None:
            out.append(d)
        else:
            if shape is None:
                shape = ctx.b.shape_of(ctx.inputs[i])
            out.append(ctx.b.slice(shape, [a], [a + 1], [0]))
    return out


def known_dim(ctx: LayerContext, i: int, axis: int) -> int | None:
    """Dim `axis` (non-negative) of input i where the IR knows it: a constant's, or the IR's in the main graph unless
    marked as data-dependent (a Loop's iterations, NMS rows; mark_runtime_dims). A body's declared dims may be
    stale."""
    dims = ctx.input_dims(i)
    d = dims[axis] if dims is not None and axis < len(dims) else None
    if d is None or d < 0:
        return None
    if ctx.const(i) is not None:
        return int(d)
    x = ctx.inputs[i]
    if ctx.b.parent is not None or has_runtime_dims(x) or axis in runtime_axes(x):
        return None
    return int(d)


def shape_value(b: GraphBuilder, parts: Sequence[Dim]) -> oir.Value:
    """A 1-D int64 shape from sizes, consecutive static ones folded into one constant."""
    pieces: list[oir.Value] = []
    run: list[int] = []
    for p in parts:
        if isinstance(p, oir.Value):
            if run:
                pieces.append(b.i64(run))
                run = []
            pieces.append(p)
        else:
            run.append(int(p))
    if run:
        pieces.append(b.i64(run))
    return b.concat(pieces, 0)


def dim_op(b: GraphBuilder, op: str, x: Dim, y: Dim) -> Dim:
    if isinstance(x, int) and isinstance(y, int):
        fold = {"Mul": int.__mul__, "Div": int.__floordiv__, "Add": int.__add__, "Sub": int.__sub__}[op]
        return fold(x, y)
    xv = x if isinstance(x, oir.Value) else b.i64([x])
    yv = y if isinstance(y, oir.Value) else b.i64([y])
    return b.op(op, [xv, yv])


def _reshape(b: GraphBuilder, x: oir.Value, parts: Sequence[Dim]) -> oir.Value:
    return b.reshape(x, shape_value(b, parts), allowzero=False)


def _block_mode(ctx: LayerContext) -> bool:
    mode = ctx.attr_str("mode").lower()
    if mode not in ("blocks_first", "depth_first"):
        raise ctx.error(f"mode='{mode}' is not blocks_first or depth_first")
    return mode == "blocks_first"


@converter("DepthToSpace", "opset1")
def depth_to_space(ctx: LayerContext) -> oir.Value:
    """[N, C*b^K, D1..DK] -> [N, C, D1*b, .., DK*b]; blocks_first takes the block offsets from the outer part of
    the channel axis, depth_first from the inner part."""
    b = ctx.b
    bs = ctx.attr_count("block_size", 1)
    d = input_dims(ctx, 0)
    k = len(d) - 2
    blocks_first = _block_mode(ctx)
    ctx.check_divides(f"block_size {bs} ({bs}^{k} channels a block)", bs**k, d[1], "channels")
    c = dim_op(b, "Div", d[1], bs**k)
    if blocks_first:
        split = [d[0]] + [bs] * k + [c] + d[2:]
        perm = [0, k + 1] + [i for j in range(k) for i in (k + 2 + j, 1 + j)]
    else:
        split = [d[0], c] + [bs] * k + d[2:]
        perm = [0, 1] + [i for j in range(k) for i in (k + 2 + j, 2 + j)]
    y = b.op("Transpose", [_reshape(b, ctx.inputs[0], split)], {"perm": perm})
    return _reshape(b, y, [d[0], c] + [dim_op(b, "Mul", s, bs) for s in d[2:]])


@converter("SpaceToDepth", "opset1")
def space_to_depth(ctx: LayerContext) -> oir.Value:
    """[N, C, D1..DK] -> [N, C*b^K, D1/b, .., DK/b]; blocks_first puts the block offsets outside the channels,
    depth_first inside."""
    b = ctx.b
    bs = ctx.attr_count("block_size", 1)
    d = input_dims(ctx, 0)
    k = len(d) - 2
    blocks_first = _block_mode(ctx)
    for s in d[2:]:
        ctx.check_divides(f"block_size {bs}", bs, s, "elements of a spatial axis")
    small = [dim_op(b, "Div", s, bs) for s in d[2:]]
    split = [d[0], d[1]] + [p for s in small for p in (s, bs)]
    offsets = [3 + 2 * j for j in range(k)]
    inner = [2 + 2 * j for j in range(k)]
    perm = [0] + offsets + [1] + inner if blocks_first else [0, 1] + offsets + inner
    y = b.op("Transpose", [_reshape(b, ctx.inputs[0], split)], {"perm": perm})
    return _reshape(b, y, [d[0], dim_op(b, "Mul", d[1], bs**k)] + small)


@converter("ShuffleChannels", "opset1")
def shuffle_channels(ctx: LayerContext) -> oir.Value:
    """Axis `axis` split into [group, size/group], the two swapped, merged again."""
    b = ctx.b
    rank = ctx.input_rank(0)
    axis = ctx.normalize_axis(ctx.attr_int("axis", 1), rank)
    group = ctx.attr_count("group", 1)
    d = input_dims(ctx, 0)
    ctx.check_divides(f"group {group}", group, d[axis], "elements of the axis")
    y = _reshape(b, ctx.inputs[0], d[:axis] + [group, dim_op(b, "Div", d[axis], group)] + d[axis + 1:])
    perm = list(range(rank + 1))
    perm[axis], perm[axis + 1] = axis + 1, axis
    y = b.op("Transpose", [y], {"perm": perm})
    return _reshape(b, y, d)


def _vector(ctx: LayerContext, i: int, n: int) -> list[Dim]:
    """A 1-D integer input of length n as per-element sizes (ints when constant)."""
    c = ctx.const(i)
    if c is not None:
        return [int(v) for v in c.reshape(-1)]
    v = ctx.b.cast(ctx.inputs[i], oir.DataType.INT64)
    return [ctx.b.slice(v, [a], [a + 1], [0]) for a in range(n)]


def _product(b: GraphBuilder, xs: Sequence[Dim]) -> Dim:
    out: Dim = 1
    for x in xs:
        out = dim_op(b, "Mul", out, x)
    return out


@converter("BatchToSpace", "opset2")
def batch_to_space(ctx: LayerContext) -> oir.Value:
    """Batch split into [B1..B_{N-1}, batch/prod(B)], each block interleaved into its axis, then cropped."""
    b = ctx.b
    d = input_dims(ctx, 0)
    n = len(d)
    block = _vector(ctx, 1, n)[1:]
    batch = dim_op(b, "Div", d[0], _product(b, block))
    x = _reshape(b, ctx.inputs[0], block + [batch] + d[1:])
    perm = [n - 1] + [i for j in range(1, n) for i in (n - 1 + j, j - 1)]
    x = b.op("Transpose", [x], {"perm": perm})
    full = [batch] + [dim_op(b, "Mul", s, bl) for s, bl in zip(d[1:], block)]
    x = _reshape(b, x, full)
    begin, end = _vector(ctx, 2, n), _vector(ctx, 3, n)
    if all(isinstance(v, int) and v == 0 for v in begin + end):
        return x
    ends = [dim_op(b, "Sub", f, e) for f, e in zip(full, end)]
    return b.slice(x, shape_value(b, begin), shape_value(b, ends), list(range(n)))


@converter("SpaceToBatch", "opset2")
def space_to_batch(ctx: LayerContext) -> oir.Value:
    """Zero padding, each axis split into [D/B, B], the block offsets moved in front of the batch."""
    b = ctx.b
    n = ctx.input_rank(0)
    pads_begin, pads_end = _vector(ctx, 2, n), _vector(ctx, 3, n)
    x = ctx.inputs[0]
    d = input_dims(ctx, 0)
    if not all(isinstance(v, int) and v == 0 for v in pads_begin + pads_end):
        x = b.op("Pad", [x, shape_value(b, pads_begin + pads_end)])
        d = [dim_op(b, "Add", dim_op(b, "Add", s, pb), pe) for s, pb, pe in zip(d, pads_begin, pads_end)]
    block = _vector(ctx, 1, n)[1:]
    small = [dim_op(b, "Div", s, bl) for s, bl in zip(d[1:], block)]
    x = _reshape(b, x, [d[0]] + [p for s, bl in zip(small, block) for p in (s, bl)])
    perm = [2 * j for j in range(1, n)] + [0] + [2 * j - 1 for j in range(1, n)]
    x = b.op("Transpose", [x], {"perm": perm})
    return _reshape(b, x, [dim_op(b, "Mul", d[0], _product(b, block))] + small)


@converter("Pad", "opset1", "opset12")
def pad(ctx: LayerContext) -> oir.Value:
    """pads_begin/pads_end -> ONNX pads; negative pads (opset12) crop first, then the rest is padded from the
    cropped tensor (as OpenVINO does). symmetric (the edge element repeated, unlike reflect) is a concatenation of
    reversed slices along each axis."""
    mode = ctx.attr_str("pad_mode", "constant").lower()
    if mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ctx.error(f"pad_mode '{mode}' is not supported")
    b = ctx.b
    if mode != "symmetric":
        pads = b.concat([ctx.int64_vector(1), ctx.int64_vector(2)], 0)
        ins = [ctx.inputs[0], pads]
        if mode == "constant" and len(ctx.inputs) > 3:
            ins.append(b.reshape(ctx.inputs[3], []))
        return b.op("Pad", ins, {"mode": mode})
    rank = ctx.input_rank(0)
    begin, end = _vector(ctx, 1, rank), _vector(ctx, 2, rank)
    x = ctx.inputs[0]
    negative = any(not isinstance(v, int) or v < 0 for v in begin + end)
    if negative:  # crop by the negative parts, keep the positive ones
        crop = b.op("Min", [shape_value(b, begin + end), b.i64(0)])
        x = b.op("Pad", [x, crop])
        begin, end = ([max(v, 0) if isinstance(v, int) else b.op("Max", [v, b.i64([0])]) for v in vs]
                      for vs in (begin, end))
    for axis in range(rank):
        pb, pe = begin[axis], end[axis]
        parts = []
        if not (isinstance(pb, int) and pb == 0):
            head = b.slice(x, shape_value(b, [0]), shape_value(b, [pb]), [axis])
            parts.append(b.slice(head, [-1], [_I64_MIN], [axis], [-1]))
        parts.append(x)
        if not (isinstance(pe, int) and pe == 0):
            size = b.shape_of(x, axis, axis + 1)
            tail = b.slice(x, b.op("Sub", [size, shape_value(b, [pe])]), [_I64_MAX], [axis])
            parts.append(b.slice(tail, [-1], [_I64_MIN], [axis], [-1]))
        x = b.concat(parts, axis) if len(parts) > 1 else x
    return x if x is not ctx.inputs[0] else b.identity(x)

"""Data movement: Reverse (Slice with step -1 on each axis) and Roll (two Slices and a Concat per axis)."""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter

_I64_MIN = -(2**63)
_I64_MAX = 2**63 - 1


def _int_input(ctx: LayerContext, i: int) -> oir.Value:
    """Input i as a 1-D int64 tensor."""
    return ctx.b.reshape(ctx.b.cast(ctx.inputs[i], oir.DataType.INT64), [-1])


def _normalized(b: GraphBuilder, axes: oir.Value, rank: int) -> oir.Value:
    return b.op("Where", [b.op("Less", [axes, b.i64(0)]), b.op("Add", [axes, b.i64(rank)]), axes])


@converter("Reverse", "opset1")
def reverse(ctx: LayerContext) -> oir.Value:
    """mode=index: the listed axes (a repeated axis is reversed once); mode=mask: the axes whose flag is set."""
    b = ctx.b
    rank = ctx.input_rank(0)
    mode = ctx.attr_str("mode").lower()
    if mode not in ("index", "mask"):
        raise ctx.error(f"unknown mode '{mode}'")
    c = ctx.const(1)
    if c is not None:
        flags = c.reshape(-1).astype(bool)
        if mode == "mask":
            if flags.size != rank:
                raise ctx.error(f"the mask has {flags.size} entries for a rank-{rank} input")
            axes = [a for a in range(rank) if flags[a]]
        else:
            axes = sorted({ctx.normalize_axis(int(a), rank) for a in c.reshape(-1)})
        if not axes:
            return b.identity(ctx.inputs[0])
        n = len(axes)
        return b.slice(ctx.inputs[0], [-1] * n, [_I64_MIN] * n, axes, [-1] * n)
    if mode == "mask":
        mask = b.reshape(b.cast(ctx.inputs[1], oir.DataType.BOOL), [rank])
    else:  # which of the rank's axes are listed
        listed = b.unsqueeze(_normalized(b, _int_input(ctx, 1), rank), [0])
        hits = b.op("Equal", [b.i64([[a] for a in range(rank)]), listed])
        mask = b.cast(b.reduce("ReduceSum", b.cast(hits, oir.DataType.INT64), [1], keepdims=False), oir.DataType.BOOL)
    # every axis is sliced: step -1 where flagged, a full forward slice elsewhere (an empty axes list is a no-op)
    steps = b.op("Where", [mask, b.i64(-1), b.i64(1)])
    starts = b.op("Where", [mask, b.i64(-1), b.i64(0)])
    ends = b.op("Where", [mask, b.i64(_I64_MIN), b.i64(_I64_MAX)])
    return b.op("Slice", [ctx.inputs[0], starts, ends, b.i64(list(range(rank))), steps])


def _roll_axis(b: GraphBuilder, x: oir.Value, axis: int, shift: oir.Value | int, size: int | None) -> oir.Value:
    """x rolled by `shift` along `axis`: x[n - s:] ++ x[:n - s] with s = shift mod n."""
    if isinstance(shift, int) and size is not None:
        s = shift % size if size else 0
        if s == 0:
            return x
        first = b.slice(x, [size - s], [_I64_MAX], [axis])
        second = b.slice(x, [0], [size - s], [axis])
        return b.concat([first, second], axis)
    n = b.shape_of(x, axis, axis + 1)
    sh = b.i64([shift]) if isinstance(shift, int) else shift
    s = b.op("Mod", [sh, b.op("Max", [n, b.i64([1])])])
    split = b.op("Sub", [n, s])
    first = b.op("Slice", [x, split, b.i64([_I64_MAX]), b.i64([axis])])
    second = b.op("Slice", [x, b.i64([0]), split, b.i64([axis])])
    return b.concat([first, second], axis)


@converter("Roll", "opset7")
def roll(ctx: LayerContext) -> oir.Value:
    """Shifts of a repeated axis add up; a scalar shift applies to every listed axis. Shifts and axes may be run-time
    inputs (constant axes roll only those axes; run-time axes compute a shift for every axis of the rank)."""
    b = ctx.b
    x = ctx.inputs[0]
    rank = ctx.input_rank(0)
    dims = ctx.input_dims(0)
    axes_c, shift_c = ctx.const(2), ctx.const(1)
    if axes_c is not None:
        axes = [ctx.normalize_axis(int(a), rank) for a in axes_c.reshape(-1)]
        if shift_c is not None:
            shifts = np.broadcast_to(shift_c.reshape(-1), (len(axes),)).astype(np.int64)
            total: dict[int, int] = {}
            for a, s in zip(axes, shifts):
                total[a] = total.get(a, 0) + int(s)
            for a, s in total.items():
                x = _roll_axis(b, x, a, s, dims[a] if a < len(dims) else None)
            return x if x is not ctx.inputs[0] else b.identity(x)
        shift = b.op("Expand", [_int_input(ctx, 1), b.i64([len(axes)])])
        for a in sorted(set(axes)):
            picks = [k for k, ax in enumerate(axes) if ax == a]
            s = b.reduce("ReduceSum", b.op("Gather", [shift, b.i64(picks)]), [0], keepdims=True)
            x = _roll_axis(b, x, a, s, None)
        return x
    axes_v = _normalized(b, _int_input(ctx, 2), rank)
    shift = b.op("Expand", [_int_input(ctx, 1), b.shape_of(axes_v)])
    for a in range(rank):
        s = b.reduce("ReduceSum", b.op("Where", [b.op("Equal", [axes_v, b.i64(a)]), shift, b.i64(0)]), [0],
                     keepdims=True)
        x = _roll_axis(b, x, a, s, None)
    return x

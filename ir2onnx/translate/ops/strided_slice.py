"""StridedSlice-1 -> ONNX Slice, then Squeeze (shrink axes) and Unsqueeze (new axes).

The masks are attributes, so which axes are sliced, shrunk, inserted or skipped by the ellipsis is known at conversion
time; begin, end and strides may be run-time tensors (TensorFlow loops index their arrays that way). Per sliced axis
the ONNX starts/ends/steps are picked element-wise from the IR values and the fills that the masks ask for, folded
when the inputs are constant and emitted as Where nodes otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter

_MAX = np.iinfo(np.int64).max
_MIN = np.iinfo(np.int64).min

Vec = "np.ndarray | oir.Value"  # an int64 vector, constant or computed


@dataclass(frozen=True)
class _Plan:
    index: list[int]  # begin/end/strides entries that select an input axis
    axes: list[int]  # the input axis of each selected entry
    shrink: list[bool]  # whether that axis is removed (a single element, the axis squeezed)
    begin_masked: list[bool]
    end_masked: list[bool]
    new_axes: list[int]  # output positions of inserted axes


def _mask(ctx: LayerContext, name: str, n: int) -> list[bool]:
    m = ctx.attr_ints(name, [])
    return [bool(v) for v in (m + [0] * n)[:n]]


def _plan(ctx: LayerContext, n: int, rank: int) -> _Plan:
    """Walk the entries as OpenVINO does: an ellipsis spans the axes no other entry takes; a new axis takes none."""
    begin_mask, end_mask = _mask(ctx, "begin_mask", n), _mask(ctx, "end_mask", n)
    new_axis, shrink, ellipsis = (_mask(ctx, m, n) for m in ("new_axis_mask", "shrink_axis_mask", "ellipsis_mask"))
    if sum(ellipsis) > 1:
        raise ctx.error("StridedSlice has more than one ellipsis in ellipsis_mask")
    real = sum(1 for i in range(n) if not ellipsis[i] and not new_axis[i])
    if real > rank:
        raise ctx.error(f"StridedSlice selects {real} axes of a rank-{rank} input")
    p = _Plan([], [], [], [], [], [])
    in_axis = out_axis = 0
    for i in range(n):
        if ellipsis[i]:
            in_axis += rank - real
            out_axis += rank - real
        elif new_axis[i]:
            p.new_axes.append(out_axis)
            out_axis += 1
        else:
            p.index.append(i)
            p.axes.append(in_axis)
            p.shrink.append(shrink[i])
            p.begin_masked.append(begin_mask[i])
            p.end_masked.append(end_mask[i])
            in_axis += 1
            out_axis += 0 if shrink[i] else 1
    return p


def _vector(ctx: LayerContext, i: int) -> Vec:
    c = ctx.const(i)
    if c is not None:
        return np.asarray(c, dtype=np.int64).reshape(-1)
    return ctx.b.reshape(ctx.b.cast(ctx.inputs[i], oir.DataType.INT64), [-1])


def _tensor(b: GraphBuilder, v: Vec) -> oir.Value:
    return b.i64([int(x) for x in v]) if isinstance(v, np.ndarray) else v


def _take(b: GraphBuilder, v: Vec, index: list[int], n: int) -> Vec:
    if isinstance(v, np.ndarray):
        return v[index]
    return v if index == list(range(n)) else b.op("Gather", [v, b.i64(index)], {"axis": 0})


def _where(b: GraphBuilder, cond: list[bool], x: Vec, y: Vec) -> Vec:
    """Element-wise `x if cond else y`, folded when possible."""
    if not any(cond):
        return y
    if all(cond):
        return x
    if isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
        return np.where(cond, x, y)
    return b.op("Where", [b.const(np.array(cond)), _tensor(b, x), _tensor(b, y)])


def _by_sign(b: GraphBuilder, steps: Vec, negative: int, positive: int) -> Vec:
    """Per axis `negative` where the step is below 0, else `positive`."""
    if isinstance(steps, np.ndarray):
        return np.where(steps < 0, negative, positive).astype(np.int64)
    return b.op("Where", [b.op("Less", [steps, b.i64(0)]), b.i64(negative), b.i64(positive)])


def _after(b: GraphBuilder, begin: Vec) -> Vec:
    """The end of a one-element slice at `begin` (begin -1 means the last element: its end is the axis end)."""
    if isinstance(begin, np.ndarray):
        return np.where(begin == -1, _MAX, begin + 1).astype(np.int64)
    return b.op("Where", [b.op("Equal", [begin, b.i64(-1)]), b.i64(_MAX), b.op("Add", [begin, b.i64(1)])])


def _length(ctx: LayerContext) -> int:
    for i in range(1, min(len(ctx.inputs), 4)):
        c = ctx.const(i)
        if c is not None:
            return int(c.size)
        dims = ctx.input_dims(i)
        if len(dims) == 1 and dims[0] is not None:
            return int(dims[0])
    raise ctx.error("StridedSlice needs begin/end/strides of static length")


@converter("StridedSlice", "opset1")
def strided_slice(ctx: LayerContext) -> oir.Value:
    """OpenVINO masks: begin_mask/end_mask bit 1 = IGNORE that bound; new_axis, shrink_axis, ellipsis as in numpy."""
    b = ctx.b
    n = _length(ctx)
    rank = ctx.input_rank(0)
    p = _plan(ctx, n, rank)
    x = ctx.inputs[0]
    y = x
    if p.index:
        begin = _take(b, _vector(ctx, 1), p.index, n)
        end = _take(b, _vector(ctx, 2), p.index, n)
        strides: Vec = _take(b, _vector(ctx, 3), p.index, n) if len(ctx.inputs) > 3 else np.ones(len(p.index), np.int64)
        steps = _where(b, p.shrink, np.ones(len(p.index), np.int64), strides)
        # A shrunk axis takes element `begin` whatever the stride, or element 0 when begin_mask is set.
        begin = _where(b, [m and s for m, s in zip(p.begin_masked, p.shrink)], np.zeros(len(p.index), np.int64), begin)
        starts = _where(b, [m and not s for m, s in zip(p.begin_masked, p.shrink)], _by_sign(b, steps, _MAX, 0), begin)
        ends = _where(b, p.shrink, _after(b, begin),
                      _where(b, p.end_masked, _by_sign(b, steps, _MIN, _MAX), end))
        unit = isinstance(steps, np.ndarray) and bool(np.all(steps == 1))
        ins = [x, _tensor(b, starts), _tensor(b, ends), b.i64(p.axes)] + ([] if unit else [_tensor(b, steps)])
        y = b.op("Slice", ins)
    squeeze = [a for a, s in zip(p.axes, p.shrink) if s]
    if squeeze:
        y = b.squeeze(y, squeeze)
    if p.new_axes:
        y = b.unsqueeze(y, p.new_axes)
    return y if y is not x else b.op("Identity", [x])

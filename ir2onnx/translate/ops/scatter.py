"""Scatter family: ScatterUpdate, ScatterNDUpdate (reductions), ScatterElementsUpdate (reductions, use_init_val),
SliceScatter.

OpenVINO applies duplicate indices one after the other in index order; onnxruntime's ScatterND/ScatterElements do
the same (reduction "none": the last update wins; add/mul/min/max accumulate). Reductions ONNX lacks are composed:
`mean` is a sum divided by a count, `sub` adds negated updates, use_init_val=false first puts the reduction's
identity at every updated position. Boolean data reduces as bytes, wrapping, as OpenVINO's CPU plugin does.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.axis_switch import per_axis
from ir2onnx.translate.registry import converter

_ONNX_REDUCTION = {"sum": "add", "prod": "mul", "min": "min", "max": "max"}
# onnxruntime reduces these types only in "none" mode: they are reduced in float32 and cast back
_WIDENED = {"f16", "bf16"}


def _fill(b: GraphBuilder, like: oir.Value, value: np.ndarray) -> oir.Value:
    """A tensor shaped like `like` filled with the one-element `value` (its dtype)."""
    return b.op("ConstantOfShape", [b.shape_of(like)], {"value": value.reshape(1)})


def _identity(reduction: str, dtype: np.dtype) -> np.ndarray:
    """The value that leaves an element unchanged under `reduction`."""
    if reduction in ("sum", "mean", "sub"):
        return np.zeros(1, dtype)
    if reduction == "prod":
        return np.ones(1, dtype)
    big = np.array(np.inf, dtype) if dtype.kind == "f" else np.array(np.iinfo(dtype).max, dtype)
    small = np.array(-np.inf, dtype) if dtype.kind == "f" else np.array(np.iinfo(dtype).min, dtype)
    return (big if reduction == "min" else small).reshape(1)


class _Scatter:
    """Emits one ONNX scatter kind (ScatterND, or ScatterElements on an axis) with a reduction."""

    def __init__(self, ctx: LayerContext, b: GraphBuilder, op: str, idx: oir.Value, axis: int | None) -> None:
        self.ctx, self.b, self.op, self.idx = ctx, b, op, idx
        self.attrs = {"axis": axis} if axis is not None else {}

    def __call__(self, data: oir.Value, upd: oir.Value, reduction: str = "none") -> oir.Value:
        attrs = dict(self.attrs)
        if reduction != "none":
            if reduction in ("min", "max"):
                self.ctx.require_opset(18, f"{self.op} with reduction '{reduction}'")
            attrs["reduction"] = reduction
        return self.b.op(self.op, [data, self.idx, upd], attrs)

    def touched(self, data: oir.Value, upd: oir.Value) -> oir.Value:
        """Boolean mask of the positions some update writes."""
        b = self.b
        marks = self(_fill(b, data, np.zeros(1, np.uint8)), _fill(b, upd, np.ones(1, np.uint8)))
        return b.cast(marks, oir.DataType.BOOL)


def _reduce(ctx: LayerContext, sc: _Scatter, data: oir.Value, upd: oir.Value, reduction: str,
            use_init_val: bool = True) -> oir.Value:
    b = sc.b
    if reduction == "none":
        return sc(data, upd)
    et = ctx.input_type(0)
    dt = et.numpy
    cast_back = et.name in _WIDENED or et.name == "boolean"
    if et.name == "boolean":  # OpenVINO reduces booleans as bytes (wrapping) and reads any non-zero byte as true
        work = np.dtype(np.uint8)
        data_w, upd_w = b.cast(data, oir.DataType.UINT8), b.cast(upd, oir.DataType.UINT8)
    elif et.name in _WIDENED:
        work = np.dtype(np.float32)
        data_w, upd_w = b.cast(data, oir.DataType.FLOAT), b.cast(upd, oir.DataType.FLOAT)
    elif dt.kind not in "fiu":
        raise ctx.error(f"reduction '{reduction}' of {et.name} data is not supported")
    else:
        work, data_w, upd_w = dt, data, upd
    if reduction == "sub":
        upd_w = b.op("Sub", [b.const(np.zeros((), work)), upd_w])
        reduction = "sum"
    touched = sc.touched(data, upd) if (not use_init_val or reduction == "mean") else None
    base = data_w
    if not use_init_val:
        base = b.op("Where", [touched, b.const(_identity(reduction, work)), data_w])
    if reduction == "mean":
        sums = sc(base, upd_w, "add")
        counts = sc(_fill(b, data_w, np.zeros(1, work)), _fill(b, upd_w, np.ones(1, work)), "add")
        if use_init_val:
            counts = b.op("Add", [counts, b.const(np.ones((), work))])
        counts = b.op("Max", [counts, b.const(np.ones((), work))])  # untouched positions keep their value below
        y = b.op("Where", [touched, b.op("Div", [sums, counts]), data_w])  # integer division truncates (as OV)
    else:
        y = sc(base, upd_w, _ONNX_REDUCTION[reduction])
    return b.cast(y, onnx_dtype(et)) if cast_back else y


def _skip_when_empty(b: GraphBuilder, data: oir.Value, idx: oir.Value, upd: oir.Value) -> tuple[oir.Value, ...]:
    """ScatterND inputs writing `upd` at rows `idx` of `data`, or nothing when data has no rows (onnxruntime
    refuses indices into an empty dimension; OpenVINO ignores them): indices flattened to [M, 1], updates to
    [M, *data.shape[1:]], both cut to their first M * min(rows, 1) entries."""
    rows = b.shape_of(data, 0, 1)
    count = b.op("Mul", [b.reshape(b.op("Size", [idx]), [1]), b.op("Min", [rows, b.i64([1])])])
    flat_idx = b.slice(b.reshape(idx, [-1, 1]), [0], count, [0])
    flat_upd = b.slice(b.reshape(upd, b.concat([b.i64([-1]), b.shape_of(data, 1)], 0)), [0], count, [0])
    return data, flat_idx, flat_upd


@converter("ScatterUpdate", "opset3")
def scatter_update(ctx: LayerContext) -> oir.Value:
    """data[..., indices, ...] = updates along `axis`: ScatterND on the axis moved to the front. A run-time axis
    selects among the per-axis forms with an If chain."""
    rank = ctx.input_rank(0)
    return per_axis(ctx, 3, rank, onnx_dtype(ctx.input_type(0)), lambda b, axis: _scatter_update(ctx, b, axis, rank))


def _scatter_update(ctx: LayerContext, b: GraphBuilder, axis: int, rank: int) -> oir.Value:
    data, idx, upd = ctx.inputs[0], b.cast(ctx.inputs[1], oir.DataType.INT64), ctx.inputs[2]
    perm = [axis] + [a for a in range(rank) if a != axis]
    if axis:
        data = b.op("Transpose", [data], {"perm": perm})
        irank = ctx.input_rank(1)
        urank = ctx.input_rank(2)
        # updates: [data[:axis], idx..., data[axis+1:]] -> [idx..., data[:axis], data[axis+1:]]
        uperm = list(range(axis, axis + irank)) + list(range(axis)) + list(range(axis + irank, urank))
        upd = b.op("Transpose", [upd], {"perm": uperm})
    dims = ctx.input_dims(0)
    if axis < len(dims) and dims[axis] is not None and dims[axis] > 0:
        y = b.op("ScatterND", [data, b.unsqueeze(idx, [-1]), upd])
    else:  # the axis may be empty (a TensorList buffer before its first write): then OpenVINO returns data as is
        y = b.op("ScatterND", list(_skip_when_empty(b, data, idx, upd)))
    if axis:
        y = b.op("Transpose", [y], {"perm": [perm.index(a) for a in range(rank)]})
    return y


@converter("ScatterNDUpdate", "opset3", "opset15")
def scatter_nd_update(ctx: LayerContext) -> oir.Value:
    """opset15 adds `reduction` (none, sum, sub, prod, min, max)."""
    sc = _Scatter(ctx, ctx.b, "ScatterND", ctx.b.cast(ctx.inputs[1], oir.DataType.INT64), None)
    reduction = ctx.attr_str("reduction", "none").lower()
    if reduction not in ("none", "sum", "sub", "prod", "min", "max"):
        raise ctx.error(f"unknown reduction '{reduction}'")
    return _reduce(ctx, sc, ctx.inputs[0], ctx.inputs[2], reduction)


@converter("ScatterElementsUpdate", "opset3", "opset12")
def scatter_elements_update(ctx: LayerContext) -> oir.Value:
    """opset12 adds `reduction` (none, sum, prod, min, max, mean) and `use_init_val`. A run-time axis selects
    among the per-axis forms with an If chain."""
    idx = ctx.b.cast(ctx.inputs[1], oir.DataType.INT64)
    reduction = ctx.attr_str("reduction", "none").lower()
    if reduction not in ("none", "sum", "prod", "min", "max", "mean"):
        raise ctx.error(f"unknown reduction '{reduction}'")
    use_init_val = ctx.attr_bool("use_init_val", True)

    def emit(b: GraphBuilder, axis: int) -> oir.Value:
        sc = _Scatter(ctx, b, "ScatterElements", idx, axis)
        return _reduce(ctx, sc, ctx.inputs[0], ctx.inputs[2], reduction, use_init_val)

    return per_axis(ctx, 3, ctx.input_rank(0), onnx_dtype(ctx.input_type(0)), emit)


@converter("SliceScatter", "opset15")
def slice_scatter(ctx: LayerContext) -> oir.Value:
    """The flat positions of the slice (Slice of an iota shaped like data) receive the updates (ScatterElements)."""
    b = ctx.b
    data, upd = ctx.inputs[0], ctx.inputs[1]
    i64 = oir.DataType.INT64
    starts, ends, steps = (b.reshape(b.cast(ctx.inputs[i], i64), [-1]) for i in (2, 3, 4))
    if len(ctx.inputs) > 5:
        axes = b.reshape(b.cast(ctx.inputs[5], i64), [-1])
    else:
        axes = b.op("Range", [b.i64(0), b.op("Size", [starts]), b.i64(1)])
    positions = b.reshape(b.op("Range", [b.i64(0), b.op("Size", [data]), b.i64(1)]), b.shape_of(data))
    targets = b.op("Slice", [positions, starts, ends, axes, steps])
    flat = b.op("ScatterElements", [b.reshape(data, [-1]), b.reshape(targets, [-1]), b.reshape(upd, [-1])],
                {"axis": 0})
    return b.reshape(flat, b.shape_of(data))

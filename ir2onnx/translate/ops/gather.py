"""Indexing: Gather, TopK, OneHot, CumSum."""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.axis_switch import per_axis
from ir2onnx.translate.registry import converter


@converter("Gather", "opset1", "opset7", "opset8")
def gather(ctx: LayerContext) -> oir.Value:
    """batch_dims b > 0: the axis is moved next to the batch dims and GatherND(batch_dims=b) indexes it. A run-time
    axis selects among the per-axis forms with an If chain.

    OpenVINO's CPU plugin gives zeros for an index out of range, and Gather-1/-7 count negative indices as out of
    range (Gather-8 counts them from the end, as ONNX does); onnxruntime refuses an index out of range. Such
    indices are read as 0 and their rows zeroed, unless they are constants provably in range, or Gather-8 indices
    known only at run time (there onnxruntime's error stands: TensorFlow's loops read their steps with them)."""
    rank = ctx.input_rank(0)
    written = ctx.attr_int("batch_dims", 0)
    bd = written + ctx.input_rank(1) if written < 0 else written
    if not 0 <= bd <= min(ctx.input_rank(1), rank - 1):  # (OpenVINO's range)
        raise ctx.error(f"batch_dims {written} is out of range for data of rank {rank} and indices of rank "
                        f"{ctx.input_rank(1)}")
    return per_axis(ctx, 2, rank, onnx_dtype(ctx.input_type(0)), lambda b, axis: _gather(ctx, b, axis, rank, bd),
                    lowest=bd)  # the axis is never below batch_dims


def _gather(ctx: LayerContext, b: GraphBuilder, axis: int, rank: int, bd: int) -> oir.Value:
    x = ctx.inputs[0]
    if _all_read(ctx, axis):
        return _gather_in_range(ctx, b, x, ctx.inputs[1], axis, rank, bd)
    # the indices OpenVINO reads, against the run-time size (a body's declared dims may be stale: a wrong constant
    # mask would be silent); the size a scalar, so that the mask has the indices' shape
    idx = _int64(ctx, b)
    size = b.reshape(b.shape_of(x, axis, axis + 1), [])
    low = b.op("Neg", [size]) if _wraps(ctx) else b.i64(0)
    valid = b.op("And", [b.op("GreaterOrEqual", [idx, low]), b.op("Less", [idx, size])])
    y = _gather_in_range(ctx, b, x, b.op("Where", [valid, idx, b.i64(0)]), axis, rank, bd)
    k = ctx.input_rank(1) - bd  # y: [batch, M..., K..., N...]; valid: [batch, K...]
    axes = list(range(bd, axis)) + list(range(axis + k, rank - 1 + k))
    zero = b.cast(b.const(np.array(0, np.float32)), onnx_dtype(ctx.input_type(0)))
    return b.op("Where", [b.unsqueeze(valid, axes) if axes else valid, y, zero])


def _wraps(ctx: LayerContext) -> bool:
    """Whether negative indices count from the end (Gather-8), rather than being out of range."""
    return ctx.version == 8


def _all_read(ctx: LayerContext, axis: int) -> bool:
    """Whether every index is known to be one OpenVINO reads (constants in range), or is left to onnxruntime's own
    range check (Gather-8 indices known only at run time)."""
    c = ctx.const(1)
    if c is None:
        return _wraps(ctx)
    dim = ctx.input_dims(0)[axis] if ctx.input_rank(0) > axis else None
    return dim is not None and bool(np.all((c >= (-dim if _wraps(ctx) else 0)) & (c < dim)))


def _int64(ctx: LayerContext, b: GraphBuilder) -> oir.Value:
    return ctx.inputs[1] if ctx.input_type(1).name == "i64" else b.cast(ctx.inputs[1], oir.DataType.INT64)


def _gather_in_range(ctx: LayerContext, b: GraphBuilder, x: oir.Value, idx: oir.Value, axis: int, rank: int,
                     bd: int) -> oir.Value:
    if bd == 0:
        return b.op("Gather", [x, idx], {"axis": axis})
    idx = b.cast(idx, oir.DataType.INT64)
    dim = b.shape_of(x, axis, axis + 1)
    idx = b.op("Where", [b.op("Less", [idx, b.i64(0)]), b.op("Add", [idx, dim]), idx])
    if axis != bd:  # bring the gathered axis right after the batch dims
        perm = list(range(bd)) + [axis] + [a for a in range(bd, rank) if a != axis]
        x = b.op("Transpose", [x], {"perm": perm})
    y = b.op("GatherND", [x, b.unsqueeze(idx, [-1])], {"batch_dims": bd})
    if axis != bd:  # y: [batch, K..., M..., N...] -> [batch, M..., K..., N...]
        k = ctx.input_rank(1) - bd
        m = axis - bd
        out_rank = bd + k + (rank - bd - 1)
        perm = list(range(bd)) + list(range(bd + k, bd + k + m)) + list(range(bd, bd + k)) + \
            list(range(bd + k + m, out_rank))
        y = b.op("Transpose", [y], {"perm": perm})
    return y


@converter("TopK", "opset1", "opset3", "opset11")
def topk(ctx: LayerContext) -> list[oir.Value]:
    """ONNX TopK sorts by value; sort=index re-sorts the k results by index (ascending)."""
    b = ctx.b
    axis = ctx.normalize_axis(ctx.attr_int("axis"), ctx.input_rank(0))
    k = b.reshape(b.cast(ctx.inputs[1], oir.DataType.INT64), [1])
    largest = int(ctx.attr_str("mode", "max").lower() == "max")
    values, indices = b.op_multi("TopK", [ctx.inputs[0], k], {"axis": axis, "largest": largest, "sorted": 1},
                                 outputs=2)
    if ctx.attr_str("sort", "value").lower() == "index":
        indices, order = b.op_multi("TopK", [indices, k], {"axis": axis, "largest": 0, "sorted": 1}, outputs=2)
        values = b.op("GatherElements", [values, order], {"axis": axis})
    et = ctx.output_type(1) if len(ctx.layer.outputs) > 1 else None
    if et is not None and et.name != "i64":
        indices = b.cast(indices, onnx_dtype(et))
    return [values, indices]


@converter("OneHot", "opset1", "opset16")
def one_hot(ctx: LayerContext) -> oir.Value:
    """Negative indices: all-off rows (opset1, and opset16's default `ignore_negative`: moved out of range, as ONNX
    would wrap them) or counted from the end (`negative_indices_mode="normalize"`, ONNX's own rule)."""
    b = ctx.b
    depth = b.reshape(b.cast(ctx.inputs[1], oir.DataType.INT64), [])
    idx = b.cast(ctx.inputs[0], oir.DataType.INT64)
    mode = ctx.attr_str("negative_indices_mode", "ignore_negative").lower()
    if mode not in ("ignore_negative", "normalize"):
        raise ctx.error(f"negative_indices_mode='{mode}' is not a OneHot mode")
    if mode == "ignore_negative":
        idx = b.op("Where", [b.op("Less", [idx, b.i64(0)]), depth, idx])
    values = b.concat([b.reshape(ctx.inputs[3], [1]), b.reshape(ctx.inputs[2], [1])], 0)
    et = ctx.output_type(0)
    # onnxruntime implements OneHot for float32 and int64 values: compute in one of those, then cast back
    wide = oir.DataType.FLOAT if et.is_float else oir.DataType.INT64
    direct = onnx_dtype(et) == wide
    axis = ctx.attr_axis("axis", ctx.input_rank(0) + 1, -1)  # an axis of the output, one rank above the indices'
    y = b.op("OneHot", [idx, depth, values if direct else b.cast(values, wide)], {"axis": axis})
    return y if direct else b.cast(y, onnx_dtype(et))


@converter("CumSum", "opset3")
def cum_sum(ctx: LayerContext) -> oir.Value:
    """Booleans: a running or (OpenVINO sums them as numbers and any nonzero sum is true)."""
    axis = ctx.inputs[1] if len(ctx.inputs) > 1 else ctx.b.i64(0)
    x = ctx.inputs[0]
    boolean = ctx.input_type(0).name == "boolean"
    if boolean:
        x = ctx.b.cast(x, oir.DataType.INT64)
    y = ctx.b.op("CumSum", [x, axis], {"exclusive": int(ctx.attr_bool("exclusive", False)),
                                       "reverse": int(ctx.attr_bool("reverse", False))})
    return ctx.b.cast(y, oir.DataType.BOOL) if boolean else y


@converter("GatherElements", "opset6")
def gather_elements(ctx: LayerContext) -> oir.Value:
    return ctx.b.op("GatherElements", [ctx.inputs[0], ctx.b.cast(ctx.inputs[1], oir.DataType.INT64)],
                    {"axis": ctx.attr_axis("axis", ctx.input_rank(0))})


@converter("GatherND", "opset5", "opset8")
def gather_nd(ctx: LayerContext) -> oir.Value:
    """opset8 keeps the batch dims (as ONNX does); opset5 flattens them into one leading axis."""
    b = ctx.b
    bd = ctx.attr_int("batch_dims", 0)
    if not 0 <= bd < min(ctx.input_rank(0), ctx.input_rank(1)):  # (OpenVINO's and ONNX's range)
        raise ctx.error(f"batch_dims {bd} is out of range for data of rank {ctx.input_rank(0)} and indices of rank "
                        f"{ctx.input_rank(1)}")
    y = b.op("GatherND", [ctx.inputs[0], b.cast(ctx.inputs[1], oir.DataType.INT64)], {"batch_dims": bd})
    if bd > 1 and ctx.version == 5:
        y = b.reshape(y, b.concat([b.i64([-1]), b.shape_of(y, bd)], 0))
    return y


@converter("NonZero", "opset3")
def non_zero(ctx: LayerContext) -> oir.Value:
    """f64 is tested in f32, as the CPU plugin holds f64 values (onnxruntime has no f64 NonZero)."""
    x = ctx.inputs[0]
    if ctx.input_type(0).name == "f64":
        x = ctx.b.cast(x, oir.DataType.FLOAT)
    y = ctx.b.op("NonZero", [x])
    et = ctx.output_type(0)
    return y if et.name == "i64" else ctx.b.cast(y, onnx_dtype(et))

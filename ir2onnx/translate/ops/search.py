"""Searching and counting: Bucketize, SearchSorted (comparison counts) and Unique (ONNX Unique)."""

from __future__ import annotations

import onnx_ir as oir

from ir2onnx.ir.element_types import ElementType
from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext, mark_runtime_dims
from ir2onnx.translate.registry import converter


def _comparable(b: GraphBuilder, x: oir.Value, xt: ElementType, y: oir.Value, yt: ElementType) -> tuple[oir.Value, oir.Value]:
    """Both operands in one type that holds every value of each (ints: int64; otherwise float64)."""
    if xt.name == yt.name:
        return x, y
    wide = oir.DataType.INT64 if not (xt.is_float or yt.is_float) else oir.DataType.DOUBLE
    return b.cast(x, wide), b.cast(y, wide)


def _count(b: GraphBuilder, items: oir.Value, probes: oir.Value, inclusive: bool) -> oir.Value:
    """For each probe, how many of `items` (broadcast along the last axis) are < it (<= when `inclusive`)."""
    hit = b.op("LessOrEqual" if inclusive else "Less", [items, probes])
    return b.reduce("ReduceSum", b.cast(hit, oir.DataType.INT64), [-1], keepdims=False)


def _as(b: GraphBuilder, x: oir.Value, et: ElementType) -> oir.Value:
    return x if et.name == "i64" else b.cast(x, onnx_dtype(et))


@converter("Bucketize", "opset3")
def bucketize(ctx: LayerContext) -> oir.Value:
    """with_right_bound: bucket i holds buckets[i-1] < x <= buckets[i], i.e. the number of boundaries < x;
    otherwise buckets[i-1] <= x < buckets[i], the number of boundaries <= x."""
    b = ctx.b
    x, bounds = _comparable(b, ctx.inputs[0], ctx.input_type(0), ctx.inputs[1], ctx.input_type(1))
    y = _count(b, bounds, b.unsqueeze(x, [-1]), inclusive=not ctx.attr_bool("with_right_bound", True))
    return _as(b, y, ctx.output_type(0))


@converter("SearchSorted", "opset15")
def search_sorted(ctx: LayerContext) -> oir.Value:
    """Index of each value in its row of the sorted sequence: the number of entries < value (right_mode: <=). A 1-D
    sequence serves every value; otherwise the leading dims pair rows of the sequence with rows of values."""
    b = ctx.b
    seq, vals = _comparable(b, ctx.inputs[0], ctx.input_type(0), ctx.inputs[1], ctx.input_type(1))
    if ctx.input_rank(0) > 1:
        seq = b.unsqueeze(seq, [-2])  # [..., 1, S] against values [..., V, 1]
    y = _count(b, seq, b.unsqueeze(vals, [-1]), inclusive=ctx.attr_bool("right_mode", False))
    return _as(b, y, ctx.output_type(0))


# onnxruntime's Unique takes float, double, int8 and int64; other types go through one that keeps values and order
_UNIQUE_NATIVE = {"f32", "f64", "i8", "i64"}
_UNIQUE_WIDEN = {"f16": "FLOAT", "bf16": "FLOAT", "i32": "INT64", "i16": "INT64", "u8": "INT64", "u16": "INT64",
                 "u32": "INT64", "boolean": "INT64"}


@converter("Unique", "opset10")
def unique(ctx: LayerContext) -> list[oir.Value]:
    """ONNX Unique has OpenVINO's semantics: sorted ascending (slices lexicographically along an axis) or in order of
    first occurrence; indices of first occurrences, the inverse mapping and counts. The axis is an ONNX attribute."""
    b = ctx.b
    et = ctx.input_type(0)
    x = ctx.inputs[0]
    if et.name not in _UNIQUE_NATIVE:
        if et.name not in _UNIQUE_WIDEN:
            raise ctx.error(f"Unique of {et.name} data is not supported")
        x = b.cast(x, oir.DataType[_UNIQUE_WIDEN[et.name]])
    attrs: dict[str, int] = {"sorted": int(ctx.attr_bool("sorted", True))}
    if len(ctx.inputs) > 1:
        axis = ctx.require_const(1, "the axis (an attribute of ONNX Unique)")
        attrs["axis"] = ctx.normalize_axis(int(axis.reshape(-1)[0]), ctx.input_rank(0))
    y, first, inverse, counts = b.op_multi("Unique", [x], attrs, outputs=4)
    if et.name not in _UNIQUE_NATIVE:
        y = b.cast(y, onnx_dtype(et))
    return [mark_runtime_dims(y), mark_runtime_dims(_as(b, first, ctx.output_type(1))),
            _as(b, inverse, ctx.output_type(2)), mark_runtime_dims(_as(b, counts, ctx.output_type(3)))]

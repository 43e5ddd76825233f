"""Embedding bags: EmbeddingBagOffsetsSum-3 / EmbeddingBagOffsets-15, EmbeddingSegmentsSum-3,
EmbeddingBagPackedSum-3 / EmbeddingBagPacked-15.

The looked-up rows (Gather), scaled by per_sample_weights, are summed per bag with ScatterND(reduction=add), in
index order as OpenVINO sums them; `mean` divides by the bag's size. An empty bag gets the row at default_index, or
zeros when there is none or it is negative. Packed bags have one row of indices each: a ReduceSum/ReduceMean.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter

# onnxruntime's ScatterND sums no 16-bit floats: they are summed in float32 and cast back
_WIDENED = {"f16", "bf16"}


def _rows(ctx: LayerContext, weights_input: int) -> tuple[oir.Value, oir.Value]:
    """(table in the working type, looked-up rows scaled by the per-sample weights when given)."""
    b = ctx.b
    table = ctx.inputs[0]
    if ctx.input_type(0).name in _WIDENED:
        table = b.cast(table, oir.DataType.FLOAT)
    idx = b.cast(ctx.inputs[1], oir.DataType.INT64)
    rows = b.op("Gather", [table, idx], {"axis": 0})
    if len(ctx.inputs) > weights_input and ctx.inputs[weights_input] is not None:
        w = ctx.inputs[weights_input]
        if ctx.input_type(weights_input).name in _WIDENED:
            w = b.cast(w, oir.DataType.FLOAT)
        extra = ctx.input_rank(0) - 1
        rows = b.op("Mul", [rows, b.unsqueeze(w, list(range(-extra, 0))) if extra else w])
    return table, rows


def _finish(ctx: LayerContext, y: oir.Value) -> oir.Value:
    et = ctx.input_type(0)
    return ctx.b.cast(y, onnx_dtype(et)) if et.name in _WIDENED else y


def _bags(ctx: LayerContext, table: oir.Value, rows: oir.Value, bag: oir.Value, n_bags: oir.Value,
          default_input: int, mean: bool) -> oir.Value:
    """Sum (or average) `rows` into `n_bags` bags by the bag id of each row; empty bags get the default row."""
    b = ctx.b
    i64 = oir.DataType.INT64
    out_shape = b.concat([n_bags, b.shape_of(table, 1)], 0)
    zeros = b.op("ConstantOfShape", [out_shape], {"value": np.zeros(1, _numpy(ctx))})
    y = b.op("ScatterND", [zeros, b.unsqueeze(bag, [-1]), rows], {"reduction": "add"})
    counts = b.op("ScatterElements", [b.op("ConstantOfShape", [n_bags], {"value": np.zeros(1, np.int64)}), bag,
                                      b.op("ConstantOfShape", [b.shape_of(bag)], {"value": np.ones(1, np.int64)})],
                  {"axis": 0, "reduction": "add"})
    extra = ctx.input_rank(0) - 1
    counts = b.unsqueeze(counts, list(range(1, extra + 1))) if extra else counts
    if mean:
        y = b.op("Div", [y, b.cast(b.op("Max", [counts, b.i64(1)]), _dtype(ctx))])
    if len(ctx.inputs) > default_input and ctx.inputs[default_input] is not None:
        di = b.reshape(b.cast(ctx.inputs[default_input], i64), [])
        row = b.op("Gather", [table, b.op("Max", [di, b.i64(0)])], {"axis": 0})
        row = b.op("Where", [b.op("Less", [di, b.i64(0)]), b.const(np.zeros((), _numpy(ctx))), row])
        y = b.op("Where", [b.op("Equal", [counts, b.i64(0)]), row, y])
    return y


def _dtype(ctx: LayerContext) -> oir.DataType:
    return oir.DataType.FLOAT if ctx.input_type(0).name in _WIDENED else onnx_dtype(ctx.input_type(0))


def _numpy(ctx: LayerContext) -> np.dtype:
    return np.dtype(np.float32) if ctx.input_type(0).name in _WIDENED else ctx.input_type(0).numpy


def _reduction(ctx: LayerContext) -> bool:
    """True for mean, False for sum."""
    r = ctx.attr_str("reduction", "sum").lower()
    if r not in ("sum", "mean"):
        raise ctx.error(f"unknown reduction '{r}'")
    return r == "mean"


def _bag_of_offsets(b: GraphBuilder, offsets: oir.Value, n_indices: oir.Value) -> oir.Value:
    """Bag id of every index position: a 1 at each bag start (repeated for empty bags), cumulated, minus 1."""
    starts = b.op("ScatterElements", [b.op("ConstantOfShape", [n_indices], {"value": np.zeros(1, np.int64)}),
                                      offsets, b.op("ConstantOfShape", [b.shape_of(offsets)],
                                                    {"value": np.ones(1, np.int64)})],
                  {"axis": 0, "reduction": "add"})
    return b.op("Sub", [b.op("CumSum", [starts, b.i64(0)]), b.i64(1)])


@converter(["EmbeddingBagOffsetsSum", "EmbeddingBagOffsets"], "opset3", "opset15")
def embedding_bag_offsets(ctx: LayerContext) -> oir.Value:
    b = ctx.b
    table, rows = _rows(ctx, 4)
    offsets = b.cast(ctx.inputs[2], oir.DataType.INT64)
    bag = _bag_of_offsets(b, offsets, b.shape_of(ctx.inputs[1]))
    return _finish(ctx, _bags(ctx, table, rows, bag, b.shape_of(offsets), 3, _reduction(ctx)))


@converter("EmbeddingSegmentsSum", "opset3")
def embedding_segments_sum(ctx: LayerContext) -> oir.Value:
    b = ctx.b
    table, rows = _rows(ctx, 5)
    n = b.reshape(b.cast(ctx.inputs[3], oir.DataType.INT64), [1])
    bag = b.cast(ctx.inputs[2], oir.DataType.INT64)
    return _finish(ctx, _bags(ctx, table, rows, bag, n, 4, False))


@converter(["EmbeddingBagPackedSum", "EmbeddingBagPacked"], "opset3", "opset15")
def embedding_bag_packed(ctx: LayerContext) -> oir.Value:
    _, rows = _rows(ctx, 2)
    op = "ReduceMean" if _reduction(ctx) else "ReduceSum"
    return _finish(ctx, ctx.b.reduce(op, rows, [1], keepdims=False))

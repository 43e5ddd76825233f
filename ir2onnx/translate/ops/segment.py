"""SegmentMax-16: the maximum of the data rows that share a segment id.

What OpenVINO's CPU plugin computes (established by experiment): the output has num_segments rows (when the input
is given; rows whose id is at or past it are dropped), else max(segment_ids) + 1; every segment starts at the
type's lowest finite value and takes `max(acc, x)` row by row, so NaN and -inf elements never replace it; a segment
no row falls in gets 0 (fill_mode ZERO) or the lowest value (LOWEST). The plugin reduces f32, i32, i8 and u8 data
as it is and converts the other types first: f16, bf16 and f64 to f32 (whose lowest value becomes -inf in f16),
i64, u64, u32, i16 and u16 to i32 keeping the low 32 bits (so i64 values wrap, and the lowest i32 value becomes 0
in i16/u16 and is sign-extended in u64), converting the result back; the composition does the same casts.

The composition: ScatterElements (reduction "max", which keeps the accumulator unless the update is larger, as the
plugin does) into rows initialised to the lowest value, NaN elements replaced by that value, plus one spare row taking the dropped ids; a second
ScatterElements counts the rows of every segment to find the empty ones.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.ir.element_types import ELEMENT_TYPES
from ir2onnx.translate.builder import onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter

# element types the plugin reduces in another type
_WORK = {"f16": "f32", "bf16": "f32", "f64": "f32", "i64": "i32", "u64": "i32", "u32": "i32", "i16": "i32",
         "u16": "i32"}


@converter("SegmentMax", "opset16", onnx_opset=18, onnx="ScatterElements (reduction max, add), Where")
def segment_max(ctx: LayerContext) -> oir.Value:
    b = ctx.b
    i64 = oir.DataType.INT64
    et = ctx.input_type(0)
    fill_mode = ctx.attr_str("fill_mode").upper()
    if fill_mode not in ("ZERO", "LOWEST"):
        raise ctx.error(f"fill_mode=\"{fill_mode}\" is not ZERO or LOWEST")
    data = ctx.inputs[0]
    if et.name not in _WORK and et.name not in ("f32", "i32", "i8", "u8"):
        raise ctx.error(f"SegmentMax of {et.name} data is not supported")
    work_et = ELEMENT_TYPES[_WORK.get(et.name, et.name)]
    work = work_et.numpy
    if et.name in _WORK:
        data = b.cast(data, onnx_dtype(work_et))
    rank = ctx.input_rank(0)
    ids = b.reshape(b.cast(ctx.inputs[1], i64), [-1])
    if len(ctx.inputs) > 2 and ctx.inputs[2] is not None:
        count = b.reshape(b.cast(ctx.inputs[2], i64), [1])
        ids = b.op("Min", [ids, count])  # ids past the end go to the spare row
    else:
        # max id + 1 (0 for no ids)
        count = b.op("Add", [b.reduce("ReduceMax", b.concat([ids, b.i64([-1])], 0), [0], keepdims=True),
                             b.i64([1])])
    rows = b.op("Add", [count, b.i64([1])])
    lowest = np.array(np.finfo(work).min if work.kind == "f" else np.iinfo(work).min, work)
    init = b.op("ConstantOfShape", [b.concat([rows, b.shape_of(data, 1)], 0)], {"value": lowest.reshape(1)})
    if work.kind == "f":  # a NaN never replaces the accumulator (onnxruntime's max would propagate it)
        data = b.op("Where", [b.op("IsNaN", [data]), b.const(lowest), data])
    idx = b.op("Expand", [b.reshape(ids, [-1] + [1] * (rank - 1)), b.shape_of(data)])
    out = b.op("ScatterElements", [init, idx, data], {"axis": 0, "reduction": "max"})
    out = b.slice(out, [0], count, [0])
    if fill_mode == "ZERO":
        zeros = b.op("ConstantOfShape", [rows], {"value": np.zeros(1, np.int64)})
        ones = b.op("ConstantOfShape", [b.shape_of(ids)], {"value": np.ones(1, np.int64)})
        hits = b.slice(b.op("ScatterElements", [zeros, ids, ones], {"axis": 0, "reduction": "add"}), [0], count,
                       [0])
        empty = b.reshape(b.op("Equal", [hits, b.i64(0)]), [-1] + [1] * (rank - 1))
        out = b.op("Where", [empty, b.const(np.zeros((), work)), out])
    return b.cast(out, onnx_dtype(et)) if et.name in _WORK else out

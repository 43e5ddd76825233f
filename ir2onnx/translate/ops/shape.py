"""Type conversion and shape manipulation."""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.ir.element_types import ElementType
from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext, set_value_type
from ir2onnx.translate.ops.layout import known_dim, shape_value
from ir2onnx.translate.registry import converter

# 8-bit floats are held in f32 (builder.py); a conversion to one rounds to its values
_F8 = {"f8e4m3": oir.DataType.FLOAT8E4M3FN, "f8e5m2": oir.DataType.FLOAT8E5M2}


# run-time conversions to these OpenVINO's CPU plugin cannot run (u1: the process aborts; u3, u6: refused at
# compilation), so no result is known to match
_NO_RUNTIME_CONVERSION = ("u1", "u3", "u6")


@converter("Convert", "opset1")
def convert(ctx: LayerContext) -> oir.Value:
    """To u2: the 8-bit conversion's low two bits (OpenVINO 2026.4's CPU plugin, from every source type: 7 -> 3,
    -3 -> 253 -> 1, 300 -> 44 -> 0); to u4/i4: the 8-bit conversion, unmasked, as the plugin holds them."""
    et = ctx.attr_type("destination_type")
    x = ctx.inputs[0]
    round_trip = _bf16_round_trip(ctx, et)
    if round_trip is not None:
        return round_trip
    if et.name in _NO_RUNTIME_CONVERSION and ctx.input_type(0).name != et.name:
        raise ctx.error(f"a run-time conversion to {et.name} (OpenVINO's CPU plugin cannot run one either)")
    if ctx.input_type(0).name == "f64" and et.numpy.kind in "iu":
        out = _f64_to_int(ctx, x, et)
    elif et.name in _F8 and ctx.input_type(0).name != et.name:
        out = _to_f8(ctx, x, _F8[et.name])
    else:
        if ctx.input_type(0).name == "f64" and et.name != "f64":  # the CPU plugin holds f64 values in f32
            x = ctx.b.cast(x, oir.DataType.FLOAT)
        out = ctx.b.cast(x, onnx_dtype(et))
    if et.name == "u2" and ctx.input_type(0).name != "u2":
        out = ctx.b.op("Mod", [out, ctx.b.const(np.uint8(4))])
    set_value_type(out, et)
    return out


def _bf16_round_trip(ctx: LayerContext, et: ElementType) -> oir.Value | None:
    """The f32 value of an f32 -> bf16 -> f32 pair of Converts (this layer the second), which computes nothing.

    optimum-intel leaves such pairs on an LLM's KV inputs and outputs (`past_key_values.*`, `present.*`) when it saves
    a model it loaded in bf16 precision. The f32 source model does not round there; OpenVINO's CPU plugin does not on
    CPUs without AVX-512 (it computes bf16 in f32), and on AVX-512 ones rounds with its own conversion, which is not to
    nearest (it ignores the bits below the rounding bit: 0x3dd6d5df becomes 0x3dd6 where nearest is 0x3dd7). The
    check compares with OpenVINO computing the pair as the identity (verify/worker.py). Only the pair: the bf16 value,
    where another layer reads it, is still rounded."""
    if et.name != "f32" or ctx.input_type(0).name != "bf16":
        return None
    first = ctx.graph.source(ctx.layer, 0).layer
    if first.type != "Convert" or first.data.get("destination_type", "").strip() != "bf16":
        return None
    src = ctx.graph.source(first, 0)
    node = ctx.inputs[0].producer()
    if src.layer.outputs[src.output].element_type is None or \
            src.layer.outputs[src.output].element_type.name != "f32" or node is None or node.op_type != "Cast":
        return None
    return node.inputs[0]


def _to_f8(ctx: LayerContext, x: oir.Value, f8: oir.DataType) -> oir.Value:
    """The values of an 8-bit float type, held in f32, as the CPU plugin converts (checked by experiment on 200,000
    values and the edges): through f16, then to the nearest 8-bit value, ties to even, without saturation (beyond
    the largest finite value: NaN in f8e4m3, an infinity in f8e5m2)."""
    b = ctx.b
    ctx.require_opset(19, "ONNX Cast to an 8-bit float")
    if ctx.input_type(0).name != "f16":
        x = b.cast(x, oir.DataType.FLOAT16)
    y = b.cast(b.op("Cast", [x], {"to": int(f8), "saturate": 0}), oir.DataType.FLOAT)
    # onnxruntime rounds the ties above the largest value differently (480 to 448 in f8e4m3, 61440 to NaN in
    # f8e5m2): beyond the tie with the next power (464, 61440) every value overflows, the e4m3 tie itself rounds down
    a = b.op("Abs", [x])
    if f8 == oir.DataType.FLOAT8E4M3FN:
        return b.op("Where", [b.op("Greater", [a, b.const(np.float16(464))]), b.const(np.float32(np.nan)), y])
    inf = b.op("Mul", [b.cast(b.op("Sign", [x]), oir.DataType.FLOAT), b.const(np.float32(np.inf))])
    return b.op("Where", [b.op("GreaterOrEqual", [a, b.const(np.float16(61440))]), inf, y])


def _f64_to_int(ctx: LayerContext, x: oir.Value, et: ElementType) -> oir.Value:
    """f64 to an integer type as the CPU plugin converts it (checked by experiment): truncated in f64 and saturated
    into int32 (NaN gives int32's minimum, 0 in i8/u8), then saturated into i8/u8 and wrapped into the other types
    (-3.7 gives 0 in u8, 65533 in u16; 3e9 gives 127 in i8, -1 in i16, 2^31 - 1 in i64)."""
    b = ctx.b
    x = b.op("Clip", [x, b.const(-2.0**31, np.float64), b.const(2.0**31 - 1, np.float64)])
    nan = 0.0 if et.bits == 8 else -2.0**31
    x = b.cast(b.op("Where", [b.op("IsNaN", [x]), b.const(nan, np.float64), x]), oir.DataType.INT32)
    if et.bits == 8:
        info = np.iinfo(et.numpy)
        x = b.op("Clip", [x, b.const(int(info.min), np.int32), b.const(int(info.max), np.int32)])
    return b.cast(x, onnx_dtype(et))


@converter("ConvertLike", "opset1")
def convert_like(ctx: LayerContext) -> oir.Value:
    et = ctx.input_type(1)
    out = ctx.b.cast(ctx.inputs[0], onnx_dtype(et))
    set_value_type(out, et)
    return out


@converter("Squeeze", "opset1", "opset15")
def squeeze(ctx: LayerContext) -> oir.Value:
    """No axes, or an empty constant axes list: every size-1 dim goes (ONNX: Squeeze without the axes input).
    opset15 `allow_axis_skip`: listed axes whose size is not 1 stay (a Reshape to the shape without the others)."""
    axes = ctx.const(1)
    if len(ctx.inputs) < 2 or (axes is not None and axes.size == 0):
        return ctx.b.op("Squeeze", [ctx.inputs[0]])
    if not ctx.attr_bool("allow_axis_skip", False):
        return ctx.b.op("Squeeze", [ctx.inputs[0], ctx.int64_vector(1)])
    b, x, rank = ctx.b, ctx.inputs[0], ctx.input_rank(0)
    listed = b.op("Equal", [b.unsqueeze(b.op("Range", [b.i64(0), b.i64(rank), b.i64(1)]), [1]),
                            b.unsqueeze(b.op("Mod", [b.op("Add", [ctx.int64_vector(1), b.i64(rank)]), b.i64(rank)]), [0])])
    listed = b.cast(b.reduce("ReduceMax", b.cast(listed, oir.DataType.INT64), [1], False), oir.DataType.BOOL)
    shape = b.shape_of(x)
    drop = b.op("And", [listed, b.op("Equal", [shape, b.i64(1)])])
    return b.reshape(x, b.op("Compress", [shape, b.op("Not", [drop])], {"axis": 0}))


@converter("Unsqueeze", "opset1")
def unsqueeze(ctx: LayerContext) -> oir.Value:
    return ctx.b.op("Unsqueeze", [ctx.inputs[0], ctx.int64_vector(1)])


@converter("Reshape", "opset1")
def reshape(ctx: LayerContext) -> oir.Value:
    """special_zero=true: 0 copies the input dim (ONNX allowzero=0); false: 0 is a zero dim (allowzero=1).

    With special_zero, OpenVINO infers a -1 from the input dims that are not copied; ONNX from the whole size over
    the other output dims, which fails where a copied dim is empty (a PyTorch bidirectional RNN's [0, 0, -1] of
    [batch, 0 steps, 2, hidden], PyTorch's flatten(2) as [0, C, -1] of an empty batch). So a constant pattern's -1
    is written out where those dims are static and the output port agrees, and otherwise computed OpenVINO's way
    from the input's shape at run time (a few shape nodes, only for patterns with both a copy and a -1). A run-time
    pattern is ONNX's Reshape as it is: an empty copied dim fails there in onnxruntime."""
    special_zero = ctx.attr_bool("special_zero", False)
    pattern = ctx.const(1)
    if not special_zero or pattern is None:
        return ctx.b.reshape(ctx.inputs[0], ctx.int64_vector(1), allowzero=not special_zero)
    dims = _inferred_dim(ctx, [int(p) for p in pattern.reshape(-1)])
    rank = ctx.input_rank(0)
    copied = [i for i, p in enumerate(dims) if p == 0 and i < rank]
    known = ctx.input_dims(0) if ctx.b.parent is None else None  # (a body's declared dims may be stale)
    if dims.count(-1) != 1 or not copied or (known is not None and all(i < len(known) and (known[i] or 0) > 0 for i in copied)):
        return ctx.b.reshape(ctx.inputs[0], dims)  # no copied dim can be empty: ONNX's -1 is OpenVINO's
    return ctx.b.reshape(ctx.inputs[0], _runtime_pattern(ctx.b, ctx.inputs[0], dims, copied, rank), allowzero=True)


def _runtime_pattern(b: GraphBuilder, x: oir.Value, dims: list[int], copied: list[int], rank: int) -> oir.Value:
    """The target shape OpenVINO derives from a pattern with copies (0) and a -1: copied dims from x's shape, the -1
    as the product of x's dims that are not copied over the pattern's other sizes (both may be 0)."""
    rest = [i for i in range(rank) if i not in copied]
    if not rest:
        size = b.i64([1])
    elif rest == list(range(rest[0], rest[-1] + 1)):
        size = b.reduce("ReduceProd", b.shape_of(x, rest[0], rest[-1] + 1), [0], True)
    else:
        size = b.reduce("ReduceProd", b.op("Gather", [b.shape_of(x), b.i64(rest)], {"axis": 0}), [0], True)
    known = int(np.prod([p for i, p in enumerate(dims) if i not in copied and p != -1], dtype=np.int64))
    inferred = size if known == 1 else b.op("Div", [size, b.i64([known])])
    parts: list[int | oir.Value] = []
    i = 0
    while i < len(dims):
        end = i
        while end in copied:  # a run of copies: one slice of the shape
            end += 1
        parts.append(b.shape_of(x, i, end) if end > i else inferred if dims[i] == -1 else dims[i])
        i = max(end, i + 1)
    return shape_value(b, parts)


def _inferred_dim(ctx: LayerContext, dims: list[int]) -> list[int]:
    copied = [i for i, p in enumerate(dims) if p == 0]
    in_dims = ctx.input_dims(0)
    if dims.count(-1) != 1 or not copied or max(copied) >= len(in_dims):
        return dims
    rest = [d for i, d in enumerate(in_dims) if i not in copied]
    known = int(np.prod([p for i, p in enumerate(dims) if i not in copied and p != -1], dtype=np.int64))
    if known <= 0 or any(d is None or d < 0 for d in rest):
        return dims
    size, k = int(np.prod(rest, dtype=np.int64)), dims.index(-1)
    out = ctx.layer.outputs[0].dims if ctx.layer.outputs else ()
    if size % known or size == 0 or k >= len(out) or out[k] != size // known:  # (a 0 would copy)
        return dims
    return [size // known if i == k else p for i, p in enumerate(dims)]


@converter("Concat", "opset1")
def concat(ctx: LayerContext) -> oir.Value:
    return ctx.b.op("Concat", ctx.inputs, {"axis": ctx.attr_axis("axis", ctx.input_rank(0))})


@converter("ShapeOf", "opset1", "opset3")
def shape_of(ctx: LayerContext) -> oir.Value:
    out = ctx.b.shape_of(ctx.inputs[0])
    et = ctx.output_type(0)
    return out if et.name == "i64" else ctx.b.cast(out, onnx_dtype(et))


@converter("Transpose", "opset1")
def transpose(ctx: LayerContext) -> oir.Value:
    """An empty order reverses the axes. A run-time order (ONNX takes it as an attribute) is applied by gathering
    the flattened input at the permuted positions."""
    rank = ctx.input_rank(0)
    perm = ctx.const(1)
    if perm is not None:
        order = [int(p) for p in perm.reshape(-1)] or list(range(rank - 1, -1, -1))
        return ctx.b.op("Transpose", [ctx.inputs[0]], {"perm": [p % rank for p in order]})
    if ctx.input_dims(1) == (0,):
        return ctx.b.op("Transpose", [ctx.inputs[0]], {"perm": list(range(rank - 1, -1, -1))})
    return _transpose_runtime(ctx, rank)


def _transpose_runtime(ctx: LayerContext, rank: int) -> oir.Value:
    """y[j_0..j_r-1] = x.flat[sum_k j_k * stride(perm[k])], y's shape = shape(x)[perm]."""
    b, x = ctx.b, ctx.inputs[0]
    perm = b.cast(ctx.inputs[1], oir.DataType.INT64)
    perm = b.op("Where", [b.op("Less", [perm, b.i64(0)]), b.op("Add", [perm, b.i64(rank)]), perm])
    shape = b.shape_of(x)
    strides = [b.i64([1])]
    for k in range(rank - 1, 0, -1):  # stride(k) = prod(shape[k+1:])
        strides.insert(0, b.op("Mul", [strides[0], b.shape_of(x, k, k + 1)]))
    out_shape = b.op("Gather", [shape, perm], {"axis": 0})
    taken = b.op("Gather", [b.concat(strides, 0), perm], {"axis": 0})
    flat = None
    for k in range(rank):
        n = b.reshape(b.op("Gather", [out_shape, b.i64(k)], {"axis": 0}), [])
        along = b.op("Mul", [b.op("Range", [b.i64(0), n, b.i64(1)]), b.op("Gather", [taken, b.i64(k)], {"axis": 0})])
        along = b.reshape(along, [1] * k + [-1] + [1] * (rank - k - 1))
        flat = along if flat is None else b.op("Add", [flat, along])
    if flat is None:  # rank 0
        return b.identity(x)
    return b.op("Gather", [b.reshape(x, [-1]), flat], {"axis": 0})


@converter("Identity", "opset16")
def identity(ctx: LayerContext) -> oir.Value:
    return ctx.b.op("Identity", [ctx.inputs[0]])


@converter("Range", "opset1", "opset4")
def range_(ctx: LayerContext) -> oir.Value:
    """Scalars start/stop/step in the output type (opset4 `output_type`; opset1 follows the inputs)."""
    et = ctx.output_type(0)
    wide = _RANGE_TYPE.get(et.name)  # ONNX Range takes float, double and int16/32/64 only
    dtype = oir.DataType[wide] if wide else onnx_dtype(et)
    args = [ctx.b.reshape(ctx.b.cast(v, dtype), []) for v in ctx.inputs[:3]]
    out = ctx.b.op("Range", args)
    if wide:
        out = ctx.b.cast(out, onnx_dtype(et))
    set_value_type(out, et)
    return out


_RANGE_TYPE = {"f16": "FLOAT", "bf16": "FLOAT", "i8": "INT16", "u8": "INT16", "u16": "INT32", "u32": "INT64",
               "u64": "INT64"}


def _ints(ctx: LayerContext, i: int, what: str) -> list[int]:
    return [int(v) for v in ctx.require_const(i, what).reshape(-1)]


@converter("Slice", "opset8")
def slice8(ctx: LayerContext) -> oir.Value:
    ins = [ctx.inputs[0]] + [ctx.int64_vector(i) for i in (1, 2)]
    ins.append(ctx.int64_vector(4) if len(ctx.inputs) > 4 else ctx.b.op("Range", [ctx.b.i64(0), ctx.b.op(
        "Size", [ins[1]]), ctx.b.i64(1)]))
    ins.append(ctx.int64_vector(3))
    return ctx.b.op("Slice", ins)


def _split(ctx: LayerContext, x: oir.Value, axis: int, sizes: oir.Value | None, n: int) -> list[oir.Value]:
    if sizes is None and ctx.opset >= 18:
        return list(ctx.b.op_multi("Split", [x], {"axis": axis, "num_outputs": n}, outputs=n))
    return list(ctx.b.op_multi("Split", [x] if sizes is None else [x, sizes], {"axis": axis}, outputs=n))


def _slices(ctx: LayerContext, x: oir.Value, axis: oir.Value, sizes: oir.Value, n: int) -> list[oir.Value]:
    """Split along a run-time axis (ONNX Split takes the axis as an attribute): one Slice per part, the run-time
    axis given as Slice's axes input."""
    b = ctx.b
    ends = b.op("CumSum", [sizes, b.i64(0)])
    starts = b.op("Sub", [ends, sizes])
    return [b.op("Slice", [x, b.slice(starts, [k], [k + 1], [0]), b.slice(ends, [k], [k + 1], [0]), axis])
            for k in range(n)]


def _axis_dim(ctx: LayerContext, x: oir.Value, axis: oir.Value) -> oir.Value:
    """The size of a run-time axis (negative counts from the end) as an int64 [1]."""
    return ctx.b.op("Gather", [ctx.b.shape_of(x), axis], {"axis": 0})


@converter("Split", "opset1")
def split(ctx: LayerContext) -> list[oir.Value]:
    """OpenVINO's checks first: num_splits at least 1, and dividing a static axis (ONNX makes one node output per
    part, so a count no axis could hold is refused here rather than built)."""
    n = ctx.attr_count("num_splits")
    if ctx.const(1) is not None:
        axis = _ints(ctx, 1, "the axis")[0]
        dims = ctx.input_dims(0)
        dim = dims[ctx.normalize_axis(axis, len(dims))] if dims else None
        if ctx.b.parent is None:  # (a body's declared dims may be stale)
            ctx.check_divides(f"num_splits {n}", n, dim, f"elements of axis {axis}")
        if isinstance(dim, int) and n > max(dim, len(ctx.layer.outputs)):  # (a body's dims may be stale, not so far)
            raise ctx.error(f"num_splits={n} is more than the {dim} elements of axis {axis}")
        return _split(ctx, ctx.inputs[0], axis, None, n)
    b = ctx.b
    axis = ctx.int64_vector(1)
    part = b.op("Div", [_axis_dim(ctx, ctx.inputs[0], axis), b.i64([n])])
    return _slices(ctx, ctx.inputs[0], axis, b.op("Expand", [part, b.i64([n])]), n)


@converter("VariadicSplit", "opset1")
def variadic_split(ctx: LayerContext) -> list[oir.Value]:
    """A -1 length takes what the others leave (computed at run time from the input's shape). Lengths and axis
    may be run-time values; which length is -1 is then found at run time too, from the axis size the IR gives where
    it gives one (layout.known_dim): the sizes then depend on the lengths alone. PyTorch's chunk in a cell traced
    over many steps splits every step's product by the same run-time lengths, which onnxruntime then computes once
    for all steps instead of reading each product's Shape."""
    b = ctx.b
    x = ctx.inputs[0]
    n = len(ctx.layer.outputs)
    const_axis = ctx.const(1) is not None
    lengths_c = ctx.const(2)
    if const_axis and lengths_c is not None:
        axis = _ints(ctx, 1, "the axis")[0]
        lengths = [int(v) for v in lengths_c.reshape(-1)]
        if -1 in lengths:
            rest = b.op("Sub", [b.shape_of(x, axis, axis + 1 if axis != -1 else None),
                                b.i64([sum(v for v in lengths if v != -1)])])
            k = lengths.index(-1)
            sizes = b.concat([b.i64(lengths[:k]), rest, b.i64(lengths[k + 1:])], 0) if len(lengths) > 1 else rest
        else:
            sizes = b.i64(lengths)
        return _split(ctx, x, axis, sizes, len(lengths))
    axis_v = ctx.int64_vector(1)
    lengths_v = ctx.int64_vector(2)
    axis = _ints(ctx, 1, "the axis")[0] if const_axis else None
    size = None if axis is None else known_dim(ctx, 0, ctx.normalize_axis(axis, ctx.input_rank(0)))
    dim = _axis_dim(ctx, x, axis_v) if size is None else b.i64([size])
    unknown = b.op("Equal", [lengths_v, b.i64(-1)])
    known = b.op("Where", [unknown, b.i64(0), lengths_v])
    rest = b.op("Sub", [dim, b.reduce("ReduceSum", known, [0], keepdims=True)])
    sizes = b.op("Where", [unknown, rest, lengths_v])
    if axis is not None:
        return _split(ctx, x, axis, sizes, n)
    return _slices(ctx, x, axis_v, sizes, n)


@converter("Broadcast", "opset1", "opset3")
def broadcast(ctx: LayerContext) -> oir.Value:
    """numpy and bidirectional map to Expand; explicit places the input dims at axes_mapping first."""
    mode = ctx.attr_str("mode", "numpy").lower()
    b = ctx.b
    shape = ctx.int64_vector(1)
    x = ctx.inputs[0]
    if mode in ("numpy", "bidirectional"):
        return b.op("Expand", [x, shape])
    if mode in ("explicit", "none"):  # Broadcast-1 writes explicit as "none" (the same AutoBroadcastType)
        target_rank = ctx.input_dims(1)[0]
        if target_rank is None:
            raise ctx.error("Broadcast explicit needs a target shape of static length")
        if ctx.const(2) is None:  # x's dims put at the (increasing) run-time axes of a shape of ones
            ones = b.op("ConstantOfShape", [b.i64([target_rank])], {"value": np.ones(1, np.int64)})
            placed = b.op("ScatterElements", [ones, ctx.int64_vector(2), b.shape_of(x)], {"axis": 0})
            return b.op("Expand", [b.reshape(x, placed, allowzero=True), shape])
        mapping = _ints(ctx, 2, "axes_mapping")
        keep = [a for a in range(target_rank) if a not in mapping]
        return b.op("Expand", [b.unsqueeze(x, keep) if keep else x, shape])
    raise ctx.error(f"Broadcast mode '{mode}' is not supported")


@converter("Tile", "opset1")
def tile(ctx: LayerContext) -> oir.Value:
    """Repeats shorter than the rank are padded with 1 in front; longer ones add leading axes to the input."""
    b = ctx.b
    x = ctx.inputs[0]
    rank = ctx.input_rank(0)
    reps = ctx.const(1)
    if reps is not None:
        r = [int(v) for v in reps.reshape(-1)]
        if len(r) > rank:
            x = b.unsqueeze(x, list(range(len(r) - rank)))
        r = [1] * (rank - len(r)) + r
        return b.op("Tile", [x, b.i64(r)])
    n = ctx.input_dims(1)[0]
    if n is None:
        raise ctx.error("Tile needs repeats of static length")
    repeats = ctx.int64_vector(1)
    if n > rank:
        x = b.unsqueeze(x, list(range(n - rank)))
    elif n < rank:
        repeats = b.concat([b.i64([1] * (rank - n)), repeats], 0)
    return b.op("Tile", [x, repeats])



"""Type conversion and shape manipulation."""

from __future__ import annotations

import onnx_ir as ir

from ir2onnx.convert.builder import onnx_dtype
from ir2onnx.convert.context import LayerContext, set_value_type
from ir2onnx.convert.registry import converter


@converter("Convert", "opset1")
def convert(ctx: LayerContext) -> ir.Value:
    et = ctx.attr_type("destination_type")
    out = ctx.b.cast(ctx.inputs[0], onnx_dtype(et))
    set_value_type(out, et)
    return out


@converter("ConvertLike", "opset1")
def convert_like(ctx: LayerContext) -> ir.Value:
    et = ctx.input_type(1)
    out = ctx.b.cast(ctx.inputs[0], onnx_dtype(et))
    set_value_type(out, et)
    return out


def _axes(ctx: LayerContext, i: int) -> ir.Value:
    """An axes/shape input as 1-D int64 (folded when constant)."""
    c = ctx.const(i)
    if c is not None:
        return ctx.b.i64([int(v) for v in c.reshape(-1)])
    return ctx.b.reshape(ctx.b.cast(ctx.inputs[i], ir.DataType.INT64), [-1])


@converter("Squeeze", "opset1")
def squeeze(ctx: LayerContext) -> ir.Value:
    """No axes, or an empty constant axes list: every size-1 dim goes (ONNX: Squeeze without the axes input)."""
    axes = ctx.const(1)
    if len(ctx.inputs) < 2 or (axes is not None and axes.size == 0):
        return ctx.b.op("Squeeze", [ctx.inputs[0]])
    return ctx.b.op("Squeeze", [ctx.inputs[0], _axes(ctx, 1)])


@converter("Unsqueeze", "opset1")
def unsqueeze(ctx: LayerContext) -> ir.Value:
    return ctx.b.op("Unsqueeze", [ctx.inputs[0], _axes(ctx, 1)])


@converter("Reshape", "opset1")
def reshape(ctx: LayerContext) -> ir.Value:
    """special_zero=true: 0 copies the input dim (ONNX allowzero=0); false: 0 is a zero dim (allowzero=1)."""
    special_zero = ctx.attr_bool("special_zero", False)
    return ctx.b.reshape(ctx.inputs[0], _axes(ctx, 1), allowzero=not special_zero)


@converter("Concat", "opset1")
def concat(ctx: LayerContext) -> ir.Value:
    return ctx.b.op("Concat", ctx.inputs, {"axis": ctx.attr_int("axis")})


@converter("ShapeOf", "opset1", "opset3")
def shape_of(ctx: LayerContext) -> ir.Value:
    out = ctx.b.shape_of(ctx.inputs[0])
    et = ctx.output_type(0)
    return out if et.name == "i64" else ctx.b.cast(out, onnx_dtype(et))


@converter("Transpose", "opset1")
def transpose(ctx: LayerContext) -> ir.Value:
    perm = ctx.require_const(1, "the permutation")
    order = [int(p) for p in perm.reshape(-1)]
    rank = ctx.input_rank(0)
    if not order:
        order = list(range(rank - 1, -1, -1))
    return ctx.b.op("Transpose", [ctx.inputs[0]], {"perm": [p % rank for p in order]})


@converter("Identity", "opset16")
def identity(ctx: LayerContext) -> ir.Value:
    return ctx.b.op("Identity", [ctx.inputs[0]])


@converter("Range", "opset1", "opset4")
def range_(ctx: LayerContext) -> ir.Value:
    """Scalars start/stop/step in the output type (opset4 `output_type`; opset1 follows the inputs)."""
    et = ctx.output_type(0)
    args = [ctx.b.reshape(ctx.b.cast(v, onnx_dtype(et)), []) for v in ctx.inputs[:3]]
    out = ctx.b.op("Range", args)
    set_value_type(out, et)
    return out


_I64_MAX = 2**63 - 1
_I64_MIN = -(2**63)


def _ints(ctx: LayerContext, i: int, what: str) -> list[int]:
    return [int(v) for v in ctx.require_const(i, what).reshape(-1)]


def _mask(ctx: LayerContext, name: str, n: int) -> list[int]:
    m = ctx.attr_ints(name, [])
    return (m + [0] * n)[:n]


@converter("StridedSlice", "opset1")
def strided_slice(ctx: LayerContext) -> ir.Value:
    """OpenVINO masks: begin_mask/end_mask bit 1 = IGNORE that bound; new_axis, shrink_axis, ellipsis as in numpy."""
    b = ctx.b
    n = ctx.input_dims(1)[0] if ctx.const(1) is None else ctx.const(1).size  # type: ignore[union-attr]
    if n is None:
        raise ctx.error("StridedSlice needs begin of static length")
    begin_mask, end_mask = _mask(ctx, "begin_mask", n), _mask(ctx, "end_mask", n)
    new_axis, shrink, ellipsis = (_mask(ctx, m, n) for m in ("new_axis_mask", "shrink_axis_mask", "ellipsis_mask"))
    strides = _ints(ctx, 3, "strides") if len(ctx.inputs) > 3 else [1] * n
    begin_c, end_c = ctx.const(1), ctx.const(2)
    simple = not any(new_axis + shrink + ellipsis)
    if begin_c is None or end_c is None:
        if not simple or any(begin_mask + end_mask):
            raise ctx.error("StridedSlice with run-time begin/end needs all masks zero")
        starts = b.cast(ctx.inputs[1], ir.DataType.INT64)
        ends = b.cast(ctx.inputs[2], ir.DataType.INT64)
        return b.slice(ctx.inputs[0], starts, ends, list(range(n)), strides)
    begin, end = [int(v) for v in begin_c.reshape(-1)], [int(v) for v in end_c.reshape(-1)]
    rank = ctx.input_rank(0)
    consumed = sum(1 for i in range(n) if not new_axis[i] and not ellipsis[i])
    starts, ends, axes, steps, squeeze_axes, unsqueeze_at = [], [], [], [], [], []
    in_axis = out_axis = 0
    for i in range(n):
        if ellipsis[i]:
            span = rank - consumed
            in_axis += span
            out_axis += span
            continue
        if new_axis[i]:
            unsqueeze_at.append(out_axis)
            out_axis += 1
            continue
        step = strides[i]
        if shrink[i]:
            s = begin[i]
            starts.append(s)
            ends.append(_I64_MAX if s == -1 else s + 1)
            steps.append(1)
            squeeze_axes.append(in_axis)
        else:
            starts.append((0 if step > 0 else _I64_MAX) if begin_mask[i] else begin[i])
            ends.append((_I64_MAX if step > 0 else _I64_MIN) if end_mask[i] else end[i])
            steps.append(step)
            out_axis += 1
        axes.append(in_axis)
        in_axis += 1
    y = b.slice(ctx.inputs[0], starts, ends, axes, steps) if axes else ctx.inputs[0]
    if squeeze_axes:
        y = b.squeeze(y, squeeze_axes)
    if unsqueeze_at:
        y = b.unsqueeze(y, unsqueeze_at)
    return y if y is not ctx.inputs[0] else b.op("Identity", [y])


@converter("Slice", "opset8")
def slice8(ctx: LayerContext) -> ir.Value:
    ins = [ctx.inputs[0]] + [_axes(ctx, i) for i in (1, 2)]
    ins.append(_axes(ctx, 4) if len(ctx.inputs) > 4 else ctx.b.op("Range", [ctx.b.i64(0), ctx.b.op(
        "Size", [ins[1]]), ctx.b.i64(1)]))
    ins.append(_axes(ctx, 3))
    return ctx.b.op("Slice", ins)


def _split(ctx: LayerContext, x: ir.Value, axis: int, sizes: ir.Value | None, n: int) -> list[ir.Value]:
    if sizes is None and ctx.opset >= 18:
        return list(ctx.b.op_multi("Split", [x], {"axis": axis, "num_outputs": n}, outputs=n))
    return list(ctx.b.op_multi("Split", [x] if sizes is None else [x, sizes], {"axis": axis}, outputs=n))


@converter("Split", "opset1")
def split(ctx: LayerContext) -> list[ir.Value]:
    axis = _ints(ctx, 1, "the axis")[0]
    return _split(ctx, ctx.inputs[0], axis, None, ctx.attr_int("num_splits"))


@converter("VariadicSplit", "opset1")
def variadic_split(ctx: LayerContext) -> list[ir.Value]:
    """A -1 length takes what the others leave (computed at run time from the input's shape)."""
    axis = _ints(ctx, 1, "the axis")[0]
    lengths = _ints(ctx, 2, "split_lengths")
    b = ctx.b
    if -1 in lengths:
        rest = b.op("Sub", [b.shape_of(ctx.inputs[0], axis, axis + 1 if axis != -1 else None),
                            b.i64([sum(v for v in lengths if v != -1)])])
        k = lengths.index(-1)
        sizes = b.concat([b.i64(lengths[:k]), rest, b.i64(lengths[k + 1:])], 0) if len(lengths) > 1 else rest
    else:
        sizes = b.i64(lengths)
    return _split(ctx, ctx.inputs[0], axis, sizes, len(lengths))


@converter("Broadcast", "opset1", "opset3")
def broadcast(ctx: LayerContext) -> ir.Value:
    """numpy and bidirectional map to Expand; explicit places the input dims at axes_mapping first."""
    mode = ctx.attr_str("mode", "numpy").lower()
    b = ctx.b
    shape = _axes(ctx, 1)
    x = ctx.inputs[0]
    if mode in ("numpy", "bidirectional"):
        return b.op("Expand", [x, shape])
    if mode == "explicit":
        mapping = _ints(ctx, 2, "axes_mapping")
        target_rank = ctx.input_dims(1)[0]
        if target_rank is None:
            raise ctx.error("Broadcast explicit needs a target shape of static length")
        keep = [a for a in range(target_rank) if a not in mapping]
        return b.op("Expand", [b.unsqueeze(x, keep) if keep else x, shape])
    raise ctx.error(f"Broadcast mode '{mode}' is not supported")


@converter("Tile", "opset1")
def tile(ctx: LayerContext) -> ir.Value:
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
    repeats = _axes(ctx, 1)
    if n > rank:
        x = b.unsqueeze(x, list(range(n - rank)))
    elif n < rank:
        repeats = b.concat([b.i64([1] * (rank - n)), repeats], 0)
    return b.op("Tile", [x, repeats])


@converter("ScatterUpdate", "opset3")
def scatter_update(ctx: LayerContext) -> ir.Value:
    """data[..., indices, ...] = updates along `axis`: ScatterND on the axis moved to the front."""
    b = ctx.b
    axis = ctx.normalize_axis(int(ctx.require_const(3, "the axis").reshape(-1)[0]), ctx.input_rank(0))
    rank = ctx.input_rank(0)
    data, idx, upd = ctx.inputs[0], b.cast(ctx.inputs[1], ir.DataType.INT64), ctx.inputs[2]
    if axis:
        perm = [axis] + [a for a in range(rank) if a != axis]
        data = b.op("Transpose", [data], {"perm": perm})
        irank = ctx.input_rank(1)
        urank = ctx.input_rank(2)
        # updates: [data[:axis], idx..., data[axis+1:]] -> [idx..., data[:axis], data[axis+1:]]
        uperm = list(range(axis, axis + irank)) + list(range(axis)) + list(range(axis + irank, urank))
        upd = b.op("Transpose", [upd], {"perm": uperm})
    y = b.op("ScatterND", [data, b.unsqueeze(idx, [-1]), upd])
    if axis:
        inv = [0] * rank
        for i, p in enumerate(perm):
            inv[p] = i
        y = b.op("Transpose", [y], {"perm": inv})
    return y


@converter("ScatterNDUpdate", "opset3")
def scatter_nd_update(ctx: LayerContext) -> ir.Value:
    return ctx.b.op("ScatterND", [ctx.inputs[0], ctx.b.cast(ctx.inputs[1], ir.DataType.INT64), ctx.inputs[2]])


@converter("ScatterElementsUpdate", "opset3")
def scatter_elements_update(ctx: LayerContext) -> ir.Value:
    axis = int(ctx.require_const(3, "the axis").reshape(-1)[0])
    return ctx.b.op("ScatterElements", [ctx.inputs[0], ctx.b.cast(ctx.inputs[1], ir.DataType.INT64), ctx.inputs[2]],
                    {"axis": axis})

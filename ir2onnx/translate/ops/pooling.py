"""MaxPool (1, 8, 14), AvgPool (1, 14, 16), AdaptiveAvgPool/AdaptiveMaxPool (8).

OpenVINO's output size per spatial axis (checked by experiment), with dk = (k - 1) * dilation + 1:
floor: (in + pb + pe - dk) // s + 1; ceil: ceil((in + pb + pe - dk) / s) + 1 (windows may start in, or past,
the end padding); ceil_torch: as ceil, one less when the last window would start at or past in + pb.
Each is emitted as ONNX floor-mode pooling over an end padding that holds exactly that many windows. AvgPool with
padding included divides every window by the kernel size (also where it overhangs the padding); with padding
excluded by the number of input elements in the window.
"""

from __future__ import annotations

import itertools

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext, set_value_type
from ir2onnx.translate.ops.precision import float_function, from_f32
from ir2onnx.translate.ops.window import Arith, Vec, Window, dilated, spatial_dims
from ir2onnx.translate.registry import converter

_ONNX_MAXPOOL_TYPES = {"f32", "f16", "f64", "i8", "u8"}
_SLICED = {"i64", "u64"}  # pooled exactly by slices (_max_pool_by_slices)
_EXACT_IN_F64 = {"i16", "u16", "i32", "u32"}
_AVGPOOL_TYPES = {"f32", "f16"}


def _rounding(ctx: LayerContext) -> str:
    mode = ctx.attr_str("rounding_type", "floor").lower()
    if mode not in ("floor", "ceil", "ceil_torch"):
        raise ctx.error(f"rounding_type='{mode}' is not supported")
    return mode


def _geometry(ctx: LayerContext, ar: Arith, nsp: int, kernel: list[int],
              win: Window) -> tuple[Vec, Vec, Vec, Vec, Vec]:
    """(input dims, pads_begin, end padding, output dims, the layer's own pads_end after auto_pad): with these pads
    ONNX floor-mode pooling yields OpenVINO's output size and every window lies inside the padded input."""
    dims = spatial_dims(ctx, 0, nsp)
    dk = dilated(kernel, win.dilations)
    s = np.asarray(win.strides, np.int64)
    pb, pe = win.resolve_pads(ar, dims, dk)
    span = ar.sub(ar.add(ar.add(dims, pb), pe), dk)
    rounding = _rounding(ctx)
    if rounding == "floor":
        out = ar.add(ar.floordiv(span, s), 1)
    else:
        out = ar.add(ar.ceildiv(span, s), 1)
        if rounding == "ceil_torch":
            out = ar.sub(out, ar.ge(ar.mul(ar.sub(out, 1), s), ar.add(dims, pb)))
    end = ar.max(ar.sub(ar.add(ar.mul(ar.sub(out, 1), s), dk), ar.add(dims, pb)), 0)
    if rounding == "floor" and not Arith.static(end) and Arith.static(pe):
        # Floor mode over the layer's own padding is ONNX's formula too, and no window reaches past it: pooling
        # over all of it gives the same windows, with pads known here (a run-time width or height then keeps the
        # plain pooling node rather than an explicit Pad and a mask of the windows)
        end = pe
    return dims, pb, end, out, pe


def _native_pads(pb: Vec, pe: Vec, kernel: list[int]) -> list[int] | None:
    """Pads for the ONNX attribute when known and accepted (onnxruntime wants each pad below the kernel)."""
    if not (Arith.static(pb) and Arith.static(pe)):
        return None
    k = np.asarray(kernel)
    if np.any(pb >= k) or np.any(pe >= k):  # type: ignore[operator]
        return None
    return [int(v) for v in pb] + [int(v) for v in pe]  # type: ignore[union-attr]


def _native_auto_pad(ctx: LayerContext, win: Window, kernel: list[int], pb: Vec) -> str | None:
    """ONNX's SAME_UPPER / SAME_LOWER for OpenVINO's same_upper / same_lower over run-time spatial dims in floor mode
    (Keras' padding="same" on a run-time image size), or None. With every kernel at least its stride and no dilation,
    both give ceil(in / stride) windows over the same padding, the odd one at the end or the beginning, each pad
    below the kernel; otherwise (and where the pads are known) the pads are computed as for explicit padding."""
    if win.auto_pad not in ("same_upper", "same_lower") or _rounding(ctx) != "floor" or Arith.static(pb):
        return None
    if any(d != 1 for d in win.dilations) or any(k < s for k, s in zip(kernel, win.strides)):
        return None
    return win.auto_pad.upper()


def _native_ceil_pads(ctx: LayerContext, win: Window, kernel: list[int]) -> list[int] | None:
    """The layer's pads for ONNX's ceil_mode=1 where that is OpenVINO's ceil_torch (onnxruntime, like PyTorch, drops
    a last window that would start in the end padding; its windows may overhang the end padding, and max pooling and
    averages that exclude padding count only input elements there), or None."""
    if _rounding(ctx) != "ceil_torch" or win.auto_pad != "explicit":
        return None
    return _native_pads(np.asarray(win.pads_begin, np.int64), np.asarray(win.pads_end, np.int64), kernel)


def _pad(ctx: LayerContext, ar: Arith, x: oir.Value, pb: Vec, pe: Vec, value: oir.Value | None) -> oir.Value:
    """Explicit Pad of the spatial axes (N and C untouched)."""
    zeros2 = ctx.b.i64([0, 0])
    full = ctx.b.concat([zeros2, ar.value(pb), zeros2, ar.value(pe)], 0)
    return ctx.b.op("Pad", [x, full] + ([value] if value is not None else []), {"mode": "constant"})


def _zeros_around(ctx: LayerContext, ar: Arith, x: oir.Value, pb: Vec, pe: Vec, zero: oir.Value) -> oir.Value:
    """x with zeros before (pb) and after (pe) its spatial axes, by Concat rather than Pad: onnxruntime 1.31 folds
    a zero Pad into the AveragePool after it, whose kernel then refuses the pads it got where one reaches the
    kernel's size ("Pad should be smaller than kernel"; 1.32 no longer folds those)."""
    b = ctx.b
    for i in range(ctx.input_rank(0) - 2):
        axis = 2 + i
        for amount, before in ((pb, True), (pe, False)):
            if Arith.static(amount) and int(amount[i]) == 0:  # type: ignore[index]
                continue
            n = b.i64([int(amount[i])]) if Arith.static(amount) else \
                b.slice(ar.value(amount), [i], [i + 1], [0])  # type: ignore[index]
            zeros = b.op("Expand", [zero, b.concat([b.shape_of(x, 0, axis), n, b.shape_of(x, axis + 1)], 0)])
            x = b.concat([zeros, x] if before else [x, zeros], axis)
    return x


@converter("MaxPool", "opset1", "opset8", "opset14")
def max_pool(ctx: LayerContext) -> list[oir.Value] | oir.Value:
    """Values and (opset8+) indices: flat positions in the input from axis `axis` on, in index_element_type."""
    b, ar = ctx.b, Arith(ctx.b)
    rank = ctx.input_rank(0)
    nsp = rank - 2
    kernel = ctx.attr_ints("kernel")
    win = Window.read(ctx, nsp, dilations=ctx.version != 1)
    et = ctx.input_type(0)
    want_indices = len(ctx.layer.outputs) > 1
    x = ctx.inputs[0]
    sliced = et.name in _SLICED
    if et.name in _EXACT_IN_F64:
        x = b.cast(x, oir.DataType.DOUBLE)
    elif et.name == "u64":
        x = _flip_u64(b, x)
    elif et.name == "boolean":
        x = b.cast(x, oir.DataType.UINT8)
    elif not sliced and et.name not in _ONNX_MAXPOOL_TYPES:
        raise ctx.error(f"MaxPool on {et.name} has no exact ONNX form (onnxruntime pools floats, i8 and u8)")
    _, pb, pe, out, _ = _geometry(ctx, ar, nsp, kernel, win)
    attrs: dict[str, object] = {"kernel_shape": kernel, "strides": win.strides, "dilations": win.dilations}
    pads = _native_pads(pb, pe, kernel)
    auto_pad = _native_auto_pad(ctx, win, kernel, pb)
    ceil_pads = _native_ceil_pads(ctx, win, kernel) if pads is None and auto_pad is None else None
    nout = 2 if want_indices else 1
    if not sliced and (pads is not None or auto_pad is not None or ceil_pads is not None):
        if pads is not None:
            attrs["pads"] = pads
        elif auto_pad is not None:
            attrs["auto_pad"] = auto_pad
        else:
            attrs.update(pads=ceil_pads, ceil_mode=1)
        outs = list(b.op_multi("MaxPool", [x], attrs, outputs=nout))  # type: ignore[arg-type]
    else:
        # Explicit -inf padding; a window holding no input element gives the lowest finite value and index 0.
        np_t = np.dtype(np.float64) if et.name in _EXACT_IN_F64 else \
            np.dtype(np.int64) if sliced else np.dtype(np.uint8) if et.name == "boolean" else et.numpy
        low, lowest = (-np.inf, np.finfo(np_t).min) if np_t.kind == "f" else (np.iinfo(np_t).min,) * 2
        padded = _pad(ctx, ar, x, pb, pe, b.const(np.asarray(low, np_t)))
        outs = _max_pool_by_slices(ctx, ar, padded, kernel, win, out, want_indices) if sliced else \
            list(b.op_multi("MaxPool", [padded], attrs, outputs=nout))  # type: ignore[arg-type]
        marks = b.op("ConstantOfShape", [b.shape_of(x)], {"value": np.zeros(1, np.float32)})
        inside = b.op("MaxPool", [_pad(ctx, ar, marks, pb, pe, b.const(np.asarray(-1, np.float32)))], attrs)
        inside = b.op("Equal", [inside, b.const(np.asarray(0, np.float32))])  # type: ignore[arg-type]
        outs[0] = b.op("Where", [inside, outs[0], b.const(np.asarray(lowest, np_t))])
        if want_indices:  # OpenVINO points an empty window at the first element of its (n, c) plane
            idx, plane = _unpad_indices(ctx, ar, outs[1], b.shape_of(padded, 2), pb, nsp)
            outs[1] = b.op("Where", [inside, idx, plane])
    y = outs[0]
    if et.name in _EXACT_IN_F64 or et.name == "boolean":
        y = b.cast(y, onnx_dtype(et))
    elif et.name == "u64":
        y = b.cast(_flip_u64(b, y, back=True), oir.DataType.UINT64)
    if not want_indices:
        return y
    idx = outs[1]
    axis = ctx.attr_int("axis", 0)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise ctx.error(f"axis {ctx.attr_int('axis', 0)} is out of range for rank {rank}")
    if axis > 0:
        inner = b.op("ReduceProd", [b.shape_of(ctx.inputs[0], axis)], {"keepdims": 1})
        idx = b.op("Mod", [idx, inner])
    if not et.is_float and et.name != "i64":
        x = b.cast(x, onnx_dtype(et))
    out_et = ctx.output_type(1)
    if out_et.name != "i64":
        idx = b.cast(idx, onnx_dtype(out_et))
    set_value_type(idx, out_et)
    return [y, idx]


def _flip_u64(b: GraphBuilder, x: oir.Value, back: bool = False) -> oir.Value:
    """u64 values as int64 with the top bit flipped, which keeps their order (`back`: int64 so flipped, still
    int64 afterwards, to be cast to u64). int64 Add of the lowest int64 wraps as the xor would."""
    x = x if back else b.cast(x, oir.DataType.INT64)
    return b.op("Add", [x, b.const(np.iinfo(np.int64).min, np.int64)])


def _max_pool_by_slices(ctx: LayerContext, ar: Arith, padded: oir.Value, kernel: list[int], win: Window, out: Vec,
                        want_indices: bool) -> list[oir.Value]:
    """Max pooling of int64 values exactly (onnxruntime pools no 64-bit integers; in f64 values past 2^53 would
    merge): the elementwise Max of one strided slice of the padded input per kernel position, every window inside
    it. Indices (flat, into the padded input) of the first largest value in row-major window order, as onnxruntime's
    MaxPool reports them."""
    b = ctx.b
    nsp = len(kernel)
    axes, steps = list(range(2, 2 + nsp)), list(win.strides)
    last = ar.mul(ar.sub(out, 1), np.asarray(steps, np.int64))  # the last window's start, per axis
    grid = b.reshape(b.op("Range", [b.i64(0), b.op("Size", [padded]), b.i64(1)]), b.shape_of(padded)) \
        if want_indices else None
    best = index = None
    for offsets in itertools.product(*(range(k) for k in kernel)):
        starts = np.asarray([o * d for o, d in zip(offsets, win.dilations)], np.int64)
        ends = ar.value(ar.add(last, starts + 1))
        v = b.slice(padded, starts.tolist(), ends, axes, steps)
        at = b.slice(grid, starts.tolist(), ends, axes, steps) if grid is not None else None
        if best is None:
            best, index = v, at
            continue
        if at is not None:
            index = b.op("Where", [b.op("Greater", [v, best]), at, index])
        best = b.op("Max", [best, v])
    assert best is not None
    return [best] if index is None else [best, index]


def _unpad_indices(ctx: LayerContext, ar: Arith, idx: oir.Value, padded: oir.Value, pb: Vec,
                   nsp: int) -> tuple[oir.Value, oir.Value]:
    """Flat indices into the explicitly padded input -> (flat indices into the input, flat index of the first
    element of the same (n, c) plane)."""
    b = ctx.b
    spatial = b.shape_of(ctx.inputs[0], 2)
    rest = idx
    coords = []
    for i in reversed(range(nsp)):
        size = b.slice(padded, [i], [i + 1], [0])
        coords.append(b.op("Mod", [rest, size]))
        rest = b.op("Div", [rest, size])
    coords.reverse()
    pb_v = ar.value(pb)
    plane = b.op("Mul", [rest, b.op("ReduceProd", [spatial], {"keepdims": 1})])
    flat = rest  # n * C + c
    for i in range(nsp):
        real = b.op("Sub", [coords[i], b.slice(pb_v, [i], [i + 1], [0])])
        flat = b.op("Add", [b.op("Mul", [flat, b.slice(spatial, [i], [i + 1], [0])]), real])
    return flat, plane


@converter("AvgPool", "opset1", "opset14", "opset16")
def avg_pool(ctx: LayerContext) -> oir.Value:
    """Padding excluded: ONNX count_include_pad=0 (or the quotient of two zero-padded pools when the padding is
    explicit); included: zero padding counted up to the kernel size (ONNX count_include_pad=1 over an end padding
    that holds every window whole). Dilations (AvgPool-16) need ONNX opset 19."""
    b, ar = ctx.b, Arith(ctx.b)
    nsp = ctx.input_rank(0) - 2
    kernel = ctx.attr_ints("kernel")
    win = Window.read(ctx, nsp, dilations=ctx.version == 16)
    et = ctx.input_type(0)
    if et.name not in _AVGPOOL_TYPES and et.numpy.kind not in "iufb" and et.name != "bf16":
        raise ctx.error(f"AvgPool on {et.name} is not supported")
    x = ctx.inputs[0]
    if et.name not in _AVGPOOL_TYPES:
        # OpenVINO's CPU plugin averages bf16, f64, integers and booleans in f32 (integer results rounded half to
        # even, booleans true above one half, checked by experiment): the same here, exact for integers while
        # window sums stay below 2^22
        y = _avg_pool_of(ctx, b.cast(x, oir.DataType.FLOAT), np.dtype(np.float32), ar, kernel, win)
        if et.name == "boolean":
            return from_f32(ctx, y, et)
        if et.numpy.kind in "iu":
            y = b.op("Round", [y])
        return b.cast(y, onnx_dtype(et))
    return _avg_pool_of(ctx, x, et.numpy, ar, kernel, win)


def _avg_pool_of(ctx: LayerContext, x: oir.Value, dtype: np.dtype, ar: Arith, kernel: list[int],
                 win: Window) -> oir.Value:
    b = ctx.b
    nsp = len(kernel)
    exclude = ctx.attr_bool("exclude-pad", False)
    dims, pb, pe, out, declared_end = _geometry(ctx, ar, nsp, kernel, win)
    attrs: dict[str, object] = {"kernel_shape": kernel, "strides": win.strides}
    if any(d != 1 for d in win.dilations):
        ctx.require_opset(19, "AveragePool with dilations")
        attrs["dilations"] = win.dilations
    auto_pad = _native_auto_pad(ctx, win, kernel, pb)
    if auto_pad is not None:  # floor mode: no window overhangs the padding, so included pads count up to the kernel
        return b.op("AveragePool", [x], {**attrs, "auto_pad": auto_pad, "count_include_pad": int(not exclude)})
    ceil_pads = _native_ceil_pads(ctx, win, kernel) if exclude else None
    if ceil_pads is not None and not (Arith.static(pe) and Arith.static(pb)):  # (included padding: OpenVINO counts
        # the kernel's size where a window overhangs the end padding, onnxruntime the window's part up to its end)
        return b.op("AveragePool", [x], {**attrs, "pads": ceil_pads, "ceil_mode": 1, "count_include_pad": 0})
    if exclude:
        return _avg_pool(ctx, x, dtype, ar, attrs, kernel, win, dims, pb, pe, out, True)
    # Without any padding OpenVINO counts only the input elements of a window (also where it overhangs the end)
    if Arith.static(pb) and Arith.static(declared_end):
        unpadded = not (np.any(pb) or np.any(declared_end))  # type: ignore[arg-type]
        return _avg_pool(ctx, x, dtype, ar, attrs, kernel, win, dims, pb, pe, out, unpadded)
    unpadded_v = b.op("Equal", [b.op("ReduceMax", [b.op("Concat", [ar.value(pb), ar.value(declared_end)], {"axis": 0})],
                                     {"keepdims": 0}), b.i64(0)])
    return b.op("Where", [unpadded_v, _avg_pool(ctx, x, dtype, ar, attrs, kernel, win, dims, pb, pe, out, True),
                          _avg_pool(ctx, x, dtype, ar, attrs, kernel, win, dims, pb, pe, out, False)])


def _avg_pool(ctx: LayerContext, x: oir.Value, dtype: np.dtype, ar: Arith, attrs: dict[str, object], kernel: list[int],
              win: Window, dims: Vec, pb: Vec, pe: Vec, out: Vec, exclude: bool) -> oir.Value:
    b = ctx.b
    nsp = len(kernel)
    attrs = dict(attrs)
    pads = _native_pads(pb, pe, kernel)
    if pads is not None:
        attrs["pads"] = pads
        attrs["count_include_pad"] = int(not exclude)
        return b.op("AveragePool", [x], attrs)  # type: ignore[arg-type]
    attrs["count_include_pad"] = 1
    zero = b.const(np.asarray(0, dtype))
    total = b.op("AveragePool", [_zeros_around(ctx, ar, x, pb, pe, zero)], attrs)  # type: ignore[arg-type]
    if not exclude:
        return total
    ones = b.op("ConstantOfShape", [b.shape_of(x)], {"value": np.ones(1, dtype)})
    share = b.op("AveragePool", [_zeros_around(ctx, ar, ones, pb, pe, zero)], attrs)  # type: ignore[arg-type]
    y = b.op("Div", [total, share])
    # A window without input elements: OpenVINO divides 0 by the product over the axes of
    # min(start + dk, in) - max(start, 0), which is 0 (NaN result) or negative (a zero result).
    nan_at = None
    dk = dilated(kernel, win.dilations)
    for i in range(nsp):
        def at(v: Vec, i: int = i) -> oir.Value:
            return b.slice(ar.value(v), [i], [i + 1], [0]) if isinstance(v, oir.Value) else b.i64([int(v[i])])
        start = b.op("Sub", [b.op("Mul", [b.op("Range", [b.i64(0), b.reshape(at(out), []), b.i64(1)]),
                                           b.i64(win.strides[i])]), at(pb)])
        factor = b.op("Sub", [b.op("Min", [b.op("Add", [start, b.i64(int(dk[i]))]), at(dims)]),
                              b.op("Max", [start, b.i64(0)])])
        zero_i = b.reshape(b.op("Equal", [factor, b.i64(0)]), [-1] + [1] * (nsp - 1 - i))
        nan_at = zero_i if nan_at is None else b.op("Or", [nan_at, zero_i])
    empty = b.op("Equal", [share, zero])
    fill = b.op("Where", [nan_at, b.const(np.asarray(np.nan, dtype)), zero])  # type: ignore[list-item]
    return b.op("Where", [empty, fill, y])


def _bin_mask(b: GraphBuilder, n: oir.Value, out: oir.Value) -> tuple[oir.Value, oir.Value]:
    """mask[o, j] = j lies in output bin o of an axis of length n pooled to `out` bins, and the bin sizes [o, 1]:
    OpenVINO's bins are [floor(o * n / out), ceil((o + 1) * n / out)) (checked by experiment). n and out are int64
    scalars (read at run time)."""
    o = b.unsqueeze(b.op("Range", [b.i64(0), out, b.i64(1)]), [1])
    start = b.op("Div", [b.op("Mul", [o, n]), out])
    end = b.op("Div", [b.op("Sub", [b.op("Add", [b.op("Mul", [b.op("Add", [o, b.i64(1)]), n]), out]), b.i64(1)]), out])
    j = b.unsqueeze(b.op("Range", [b.i64(0), n, b.i64(1)]), [0])
    mask = b.op("And", [b.op("GreaterOrEqual", [j, start]), b.op("Less", [j, end])])
    return mask, b.op("Sub", [end, start])


def _axis_sizes(ctx: LayerContext, axis: int, i: int) -> tuple[oir.Value, oir.Value, int | None]:
    """(the input's length on `axis`, the output size i as int64 scalars, that size when it is a constant)."""
    b = ctx.b
    n = b.reshape(b.shape_of(ctx.inputs[0], axis, axis + 1), [])
    size = ctx.const(1)
    if size is not None:
        known = int(np.asarray(size).reshape(-1)[i])
        return n, b.i64(known), known
    out = b.reshape(b.slice(b.cast(b.reshape(ctx.inputs[1], [-1]), oir.DataType.INT64), [i], [i + 1], [0]), [])
    return n, out, None


def _to_last(b: GraphBuilder, x: oir.Value, axis: int, rank: int) -> tuple[oir.Value, list[int] | None]:
    if axis == rank - 1:
        return x, None
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return b.op("Transpose", [x], {"perm": perm}), perm


def _back(b: GraphBuilder, x: oir.Value, perm: list[int] | None) -> oir.Value:
    return x if perm is None else b.op("Transpose", [x], {"perm": perm})


@converter("AdaptiveAvgPool", "opset8")
def adaptive_avg_pool(ctx: LayerContext) -> oir.Value:
    """Axis by axis (the mean of a box is the mean of its per-axis means). An axis pooled to the constant size 1 is
    a ReduceMean; otherwise an If at run time: the axis unchanged where the output size equals its length (PyTorch's
    adaptive pooling to (1, None) keeps the width: an identity that cost a W x W MatMul), a ReduceMean where the
    size is 1, else a MatMul with the bins' averaging matrix, built from the input's length and the output size.
    Integers are averaged in f32, then rounded half to even, as the CPU plugin does."""
    rank = ctx.input_rank(0)
    et = ctx.input_type(0)

    def pool(x: oir.Value, to: oir.DataType) -> oir.Value:
        for i in range(rank - 2):
            x = _mean_axis(ctx, x, 2 + i, i, to, rank)
        return x

    if et.is_float:
        return pool(ctx.inputs[0], onnx_dtype(et))
    return float_function(ctx, ctx.inputs[0], et, lambda v: pool(v, oir.DataType.FLOAT))


def _mean_axis(ctx: LayerContext, x: oir.Value, axis: int, i: int, to: oir.DataType, rank: int) -> oir.Value:
    b = ctx.b
    n, out, known = _axis_sizes(ctx, axis, i)

    def mean(cb: GraphBuilder) -> oir.Value:
        return cb.reduce("ReduceMean", x, [axis], True)

    def binned(cb: GraphBuilder) -> oir.Value:
        mask, count = _bin_mask(cb, n, out)
        weights = cb.op("Div", [cb.cast(mask, to), cb.cast(count, to)])
        moved, perm = _to_last(cb, x, axis, rank)
        return _back(cb, cb.op("MatMul", [moved, cb.op("Transpose", [weights], {"perm": [1, 0]})]), perm)

    if known == 1:
        return mean(b)
    spec = [(to, rank)]

    def other(cb: GraphBuilder) -> oir.Value:  # the size differs from the length
        if known is not None:
            return binned(cb)
        return cb.op("If", [cb.op("Equal", [out, cb.i64(1)])],
                     {"then_branch": cb.branch(f"{b.hint}/mean", spec, lambda bb: [mean(bb)]),
                      "else_branch": cb.branch(f"{b.hint}/bins", spec, lambda bb: [binned(bb)])})

    return b.op("If", [b.op("Equal", [out, n])],
                {"then_branch": b.branch(f"{b.hint}/same", spec, lambda bb: [x]),
                 "else_branch": b.branch(f"{b.hint}/pooled", spec, lambda bb: [other(bb)])})


@converter("AdaptiveMaxPool", "opset8")
def adaptive_max_pool(ctx: LayerContext) -> list[oir.Value]:
    """Axis by axis from the last: the max over each bin (other positions masked to -inf) and its first position;
    the indices are flat positions in the input's spatial plane (h * W + w), first maximum in row-major order."""
    b = ctx.b
    rank = ctx.input_rank(0)
    et = ctx.input_type(0)
    x = ctx.inputs[0]
    if et.is_float:
        low = b.const(np.asarray(-np.inf, et.numpy))
    else:  # integers in int64, outside positions below every narrower value (int64's own minimum excepted)
        x = x if et.name == "i64" else b.cast(x, oir.DataType.INT64)
        low = b.const(np.asarray(np.iinfo(np.int64).min, np.int64))
    index: oir.Value | None = None  # flat index within the axes already pooled
    inner: oir.Value = b.i64(1)  # their input extent
    for axis in reversed(range(2, rank)):
        mask, _ = _bin_mask(b, *_axis_sizes(ctx, axis, axis - 2)[:2])
        moved, perm = _to_last(b, x, axis, rank)
        spread = b.op("Where", [mask, b.unsqueeze(moved, [-2]), low])  # [..., out, n]
        x = _back(b, b.reduce("ReduceMax", spread, [-1], False), perm)
        pos = b.op("ArgMax", [spread, ], {"axis": -1, "keepdims": 0})  # [..., out]
        if index is not None:
            index_moved, _ = _to_last(b, index, axis, rank)
            index = b.op("GatherElements", [index_moved, pos], {"axis": -1})
            index = b.op("Add", [b.op("Mul", [pos, inner]), index])
        else:
            index = pos
        index = _back(b, index, perm)
        inner = b.op("Mul", [inner, b.shape_of(ctx.inputs[0], axis, axis + 1)])
    if not et.is_float and et.name != "i64":
        x = b.cast(x, onnx_dtype(et))
    out_et = ctx.output_type(1)
    idx = index if out_et.name == "i64" else b.cast(index, onnx_dtype(out_et))  # type: ignore[arg-type]
    set_value_type(idx, out_et)
    return [x, idx]

"""Convolutions: Convolution, GroupConvolution, ConvolutionBackpropData, GroupConvolutionBackpropData,
BinaryConvolution."""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.ir.weights import needed_bytes
from ir2onnx.translate.builder import onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.window import Arith, Vec, Window, dilated, spatial_dims
from ir2onnx.translate.registry import converter

_AUTO_PAD = {"same_upper": "SAME_UPPER", "same_lower": "SAME_LOWER", "valid": "VALID"}


def _window_attrs(ctx: LayerContext, spatial: int, with_dilations: bool = True) -> dict[str, object]:
    """strides/dilations/pads/auto_pad: explicit pads are begins then ends; auto_pad modes map by name."""
    attrs: dict[str, object] = {"strides": ctx.attr_ints("strides", [1] * spatial)}
    if with_dilations:
        attrs["dilations"] = ctx.attr_ints("dilations", [1] * spatial)
    auto = ctx.attr_str("auto_pad", "explicit").lower()
    if auto in _AUTO_PAD:
        attrs["auto_pad"] = _AUTO_PAD[auto]
    elif auto in ("explicit", "notset", ""):
        attrs["pads"] = ctx.attr_ints("pads_begin", [0] * spatial) + ctx.attr_ints("pads_end", [0] * spatial)
    else:
        raise ctx.error(f"auto_pad='{auto}' is not supported")
    return attrs


def _float_conv(ctx: LayerContext, x: oir.Value, w: oir.Value, attrs: dict[str, object]) -> oir.Value:
    """Conv; on integer tensors OpenVINO's CPU plugin convolves in f32 and saturates to the element type
    (checked by experiment: i32 9 * 2^20 * 2^12 gives 2147483520, 9 * 3001 * 4097 the nearest f32), so does this."""
    b = ctx.b
    et = ctx.input_type(0)
    if et.is_float:
        return b.op("Conv", [x, w], attrs)  # type: ignore[arg-type]
    if et.name not in ("i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"):
        raise ctx.error(f"Convolution on {et.name} is not supported")
    y = b.op("Conv", [b.cast(x, oir.DataType.FLOAT), b.cast(w, oir.DataType.FLOAT)], attrs)  # type: ignore[arg-type]
    info = np.iinfo(et.numpy)
    lo = np.float32(info.min)
    hi = np.nextafter(np.float32(info.max), np.float32(0)) if float(np.float32(info.max)) > info.max else \
        np.float32(info.max)
    y = b.op("Clip", [y, b.const(lo), b.const(np.float32(hi))])
    return b.cast(y, onnx_dtype(et))


@converter("Convolution", "opset1")
def convolution(ctx: LayerContext) -> oir.Value:
    spatial = ctx.input_rank(0) - 2
    return _float_conv(ctx, ctx.inputs[0], ctx.inputs[1], _window_attrs(ctx, spatial))


@converter("GroupConvolution", "opset1")
def group_convolution(ctx: LayerContext) -> oir.Value:
    """Weights [G, O/G, I/G, k...] -> ONNX [O, I/G, k...] with group=G (a free reshape of constant weights)."""
    spatial = ctx.input_rank(0) - 2
    weights, groups = _group_weights(ctx, 1, "GroupConvolution")
    attrs = _window_attrs(ctx, spatial)
    attrs["group"] = groups
    return _float_conv(ctx, ctx.inputs[0], weights, attrs)


def _group_weights(ctx: LayerContext, i: int, what: str) -> tuple[oir.Value, int]:
    """Grouped weights [G, A, B, k...] -> [G*A, B, k...] and G (a free reshape of constant weights)."""
    b = ctx.b
    w = ctx.const(i)
    if w is not None:
        # a view of the weights where they are contiguous (as in the .bin): referenced or copied from there
        flat = b.derived_initializer(w, "groups merged", lambda a: np.ascontiguousarray(a).reshape(
            (a.shape[0] * a.shape[1],) + a.shape[2:]), "weights")
        return flat, int(w.shape[0])
    dims = ctx.input_dims(i)
    if dims[0] is None or dims[0] < 0:
        raise ctx.error(f"{what} needs a static group count")
    return b.reshape(ctx.inputs[i], b.concat([b.i64([-1]), b.shape_of(ctx.inputs[i], 2)], 0)), int(dims[0])


def _backprop(ctx: LayerContext, weights: oir.Value, group: int, shape_input: int | None) -> oir.Value:
    """ConvTranspose over the full footprint s*(n-1) + dk, then OpenVINO's window of it, [pb, pb + len) with
    zeros beyond. Checked by experiment: with an output shape, pb is pads_begin (explicit), 0 (valid), or
    ceil / floor of half the surplus s*(n-1) + dk + output_padding - len, at least 0 (same_upper / same_lower);
    without one,
    len = s*(n-1) + dk + output_padding - pb - pe where only explicit padding counts."""
    b, ar = ctx.b, Arith(ctx.b)
    nsp = ctx.input_rank(0) - 2
    win = Window.read(ctx, nsp)
    out_pad = np.asarray(ctx.attr_ints("output_padding", [0] * nsp), np.int64)
    dims = spatial_dims(ctx, 0, nsp)
    kdims = spatial_dims(ctx, 1, nsp)
    s = np.asarray(win.strides, np.int64)
    dk = ar.add(ar.mul(ar.sub(kdims, 1), np.asarray(win.dilations, np.int64)), 1)
    full = ar.add(ar.mul(ar.sub(dims, 1), s), dk)  # footprint of the plain transposed convolution
    explicit = win.auto_pad == "explicit"
    if shape_input is not None:
        c = ctx.const(shape_input)
        length: Vec = np.asarray(c, np.int64).reshape(-1) if c is not None else \
            b.reshape(b.cast(ctx.inputs[shape_input], oir.DataType.INT64), [-1])
        surplus = ar.sub(ar.add(full, out_pad), length)
        plain: list[int] | None = None  # the output shape decides the pads
        if explicit:
            begin: Vec = np.asarray(win.pads_begin, np.int64)
        elif win.auto_pad == "valid":
            begin = np.zeros(nsp, np.int64)
        elif win.auto_pad == "same_upper":
            begin = ar.max(ar.ceildiv(surplus, 2), 0)
        else:
            begin = ar.max(ar.floordiv(surplus, 2), 0)
    else:
        begin = np.asarray(win.pads_begin if explicit else [0] * nsp, np.int64)
        end = np.asarray(win.pads_end if explicit else [0] * nsp, np.int64)
        length = ar.sub(ar.sub(ar.add(full, out_pad), begin), end)
        # without an output shape the length is ONNX's own, s*(n-1) + dk + output_padding - pads, whatever n is: the
        # layer's pads and output_padding as they are (a run-time height or width keeps the plain node)
        ok = np.all(begin >= 0) and np.all(end >= 0) and np.all(out_pad < np.maximum(s, win.dilations))
        plain = [int(v) for v in begin] + [int(v) for v in end] if ok else None
    attrs: dict[str, object] = {"strides": win.strides, "dilations": win.dilations}
    if group != 1:
        attrs["group"] = group
    if Arith.static(full) and Arith.static(begin) and Arith.static(length):
        extra = np.maximum(length + begin - full, 0)  # type: ignore[operator]
        pads_end = full + extra - begin - length  # type: ignore[operator]
        if np.all(begin >= 0) and np.all(pads_end >= 0) and np.all(extra < np.maximum(s, win.dilations)):  # type: ignore[operator]
            attrs["pads"] = [int(v) for v in begin] + [int(v) for v in pads_end]  # type: ignore[union-attr]
            if np.any(extra):
                attrs["output_padding"] = [int(v) for v in extra]
            return b.op("ConvTranspose", [ctx.inputs[0], weights], attrs)  # type: ignore[arg-type]
    if plain is not None:
        attrs["pads"] = plain
        if np.any(out_pad):
            attrs["output_padding"] = [int(v) for v in out_pad]
        return b.op("ConvTranspose", [ctx.inputs[0], weights], attrs)  # type: ignore[arg-type]
    y = b.op("ConvTranspose", [ctx.inputs[0], weights], attrs)  # type: ignore[arg-type]
    # window [begin, begin + length) of y (length `full`), zeros outside
    lo = ar.max(begin, 0)
    hi = ar.min(ar.add(begin, length), full)
    axes = list(range(2, 2 + nsp))
    y = b.slice(y, ar.value(lo), ar.value(ar.max(hi, lo)), axes)
    before = ar.max(ar.sub(0, begin), 0)
    after = ar.sub(ar.sub(length, before), ar.sub(ar.max(hi, lo), lo))
    zeros2 = b.i64([0, 0])
    return b.op("Pad", [y, b.concat([zeros2, ar.value(before), zeros2, ar.value(after)], 0)])


@converter("ConvolutionBackpropData", "opset1")
def convolution_backprop_data(ctx: LayerContext) -> oir.Value:
    """Weights [C_in, C_out, k...], the layout of ONNX ConvTranspose; the output shape (input 2) may be a run-time
    value."""
    return _backprop(ctx, ctx.inputs[1], 1, 2 if len(ctx.inputs) > 2 else None)


@converter("GroupConvolutionBackpropData", "opset1")
def group_convolution_backprop_data(ctx: LayerContext) -> oir.Value:
    """Weights [G, C_in/G, C_out/G, k...] -> ONNX ConvTranspose [C_in, C_out/G, k...] with group=G."""
    weights, groups = _group_weights(ctx, 1, "GroupConvolutionBackpropData")
    return _backprop(ctx, weights, groups, 2 if len(ctx.inputs) > 2 else None)


def _binary_weights(ctx: LayerContext) -> np.ndarray:
    """The +/-1 filter of a u1 Const as OpenVINO's CPU plugin reads it: element i of the [O, C, kh, kw] filter is
    bit i % 8 (least significant first) of byte i // 8 of the stored bytes (checked by experiment; OpenVINO's own
    u1 order, and ir2onnx's reader, put the first element in the most significant bit)."""
    src = ctx.graph.source(ctx.layer, 1).layer
    weights = ctx.translator.weights
    if src.const is None or weights is None or src.const.element_type.name != "u1":
        raise ctx.error("BinaryConvolution weights must be a u1 Const (as OpenVINO's CPU plugin requires)")
    c = src.const
    count = int(np.prod(c.shape, dtype=np.int64))
    raw = weights.raw(c.offset, needed_bytes(c.element_type, c.shape))
    bits = np.unpackbits(raw, bitorder="little")[:count]
    return (bits.astype(np.float32) * 2 - 1).reshape(c.shape)


@converter("BinaryConvolution", "opset1", onnx="Where (x > 0 -> +1 else -1), Pad, Conv on +/-1 values")
def binary_convolution(ctx: LayerContext) -> oir.Value:
    """mode xnor-popcount: 2 * popcount(xnor(x, w)) - bits = the convolution of the +/-1 values, x read as +1 where
    x > 0 (NaN and zeros as -1). Padding, as the CPU plugin does it: pad_value 0 leaves padded taps out (a zero
    term), 1 pads with +1, any other value with -1. Sums are integers below 2^24, exact in f32."""
    b, ar = ctx.b, Arith(ctx.b)
    mode = ctx.attr_str("mode").lower()
    if mode != "xnor-popcount":
        raise ctx.error(f"mode '{mode}' is not supported (OpenVINO defines xnor-popcount only)")
    if ctx.input_rank(0) != 4:
        raise ctx.error("only 2-D binary convolution (4-D data) is supported, as in OpenVINO's CPU plugin")
    pad_value = np.float32(ctx.attr_float("pad_value"))
    w = _binary_weights(ctx)
    et = ctx.input_type(0)
    x = ctx.inputs[0]
    zero = b.const(np.zeros((), et.numpy))
    xs = b.op("Where", [b.op("Greater", [x, zero]), b.const(np.float32(1)), b.const(np.float32(-1))])
    win = Window.read(ctx, 2)
    attrs: dict[str, object] = {"strides": win.strides, "dilations": win.dilations}
    if pad_value == 0:
        attrs.update({k: v for k, v in _window_attrs(ctx, 2).items() if k in ("auto_pad", "pads")})
    else:
        begin, end = win.resolve_pads(ar, spatial_dims(ctx, 0, 2), dilated(list(w.shape[2:]), win.dilations))
        pads = ar.value(np.concatenate([[0, 0], begin, [0, 0], end]) if Arith.static(begin) and Arith.static(end)
                        else b.concat([b.i64([0, 0]), ar.value(begin), b.i64([0, 0]), ar.value(end)], 0))
        fill = b.const(np.float32(1.0 if pad_value == 1 else -1.0))
        xs = b.op("Pad", [xs, pads, fill])
    y = b.op("Conv", [xs, b.initializer(w, "binary_weights")], attrs)  # type: ignore[arg-type]
    out = ctx.output_type(0)
    return y if out.name == "f32" else b.cast(y, onnx_dtype(out))

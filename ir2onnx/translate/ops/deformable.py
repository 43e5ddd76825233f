"""Deformable convolution: DeformableConvolution-1/8, composed as sampling + a 1x1 convolution.

Every output position p = (oh, ow) and kernel tap k = (kh, kw) samples the input at
(oh * stride - pad_begin + kh * dilation + offset_y, ow * stride - pad_begin + kw * dilation + offset_x), the
offsets of deformable group g being channels g*2*K + 2*k (y) and g*2*K + 2*k + 1 (x) of input 1. The samples, as
OpenVINO's CPU plugin computes them (checked by experiment):
- without bilinear_interpolation_pad (v1 always) a point counts when 0 <= y < H and 0 <= x < W; its taps are
  floor and min(ceil, H-1), so a point in [H-1, H) takes row H-1 whole;
- with it a point counts when -1 < y < H and -1 < x < W; taps are floor and floor + 1, and taps outside the map
  weigh 0 (zero padding);
- points that do not count contribute 0; the mask (v8 input 3, channel g*K + k) multiplies the tap weights.
The sampled columns [N, C*K, OH, OW] (channel c*K + k) then meet the weights [O, C/G*K, 1, 1] in a grouped Conv.
onnxruntime's DeformConv (ONNX opset 19) samples as bilinear_interpolation_pad=true does, but not as the default,
so one composition serves both.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.window import Arith, Window, dilated, spatial_dims
from ir2onnx.translate.registry import converter

F32 = oir.DataType.FLOAT


def _f(b: GraphBuilder, v: float) -> oir.Value:
    return b.const(np.array(v, np.float32))


def _base(b: GraphBuilder, ar: Arith, n_out, stride: int, pad, kernel: int, dil: int):  # type: ignore[no-untyped-def]
    """[kernel, n_out] float: o * stride - pad + k * dil (numpy when sizes are known, else an ONNX value)."""
    if Arith.static(n_out) and Arith.static(pad):
        o = np.arange(int(n_out), dtype=np.int64)
        return (o[None, :] * stride - int(pad) + np.arange(kernel, dtype=np.int64)[:, None] * dil).astype(np.float32)
    o = b.op("Range", [b.i64(0), b.reshape(ar.value(n_out), []), b.i64(1)])
    start = b.op("Sub", [b.op("Mul", [o, b.i64(stride)]), b.reshape(ar.value(pad), [])])
    v = b.op("Add", [b.unsqueeze(start, [0]), b.i64(np.arange(kernel).reshape(kernel, 1) * dil)])
    return b.cast(v, F32)


class _Taps:
    """Bilinear taps along one axis: low/high indices (int64) and weights, for sample coordinates `m`."""

    def __init__(self, b: GraphBuilder, m: oir.Value, size: oir.Value, pad: bool) -> None:
        size_f = b.cast(size, F32)
        last = b.op("Sub", [size_f, _f(b, 1.0)])
        if pad:
            self.valid = b.op("And", [b.op("Greater", [m, _f(b, -1.0)]), b.op("Less", [m, size_f])])
        else:
            self.valid = b.op("And", [b.op("GreaterOrEqual", [m, _f(b, 0.0)]), b.op("Less", [m, size_f])])
        m = b.op("Where", [self.valid, m, _f(b, 0.0)])  # points that do not count: any finite coordinate
        low = b.op("Floor", [m])
        high = b.op("Add", [low, _f(b, 1.0)]) if pad else b.op("Min", [b.op("Ceil", [m]), last])
        frac_high = b.op("Sub", [m, low])
        frac_low = b.op("Sub", [_f(b, 1.0), frac_high])
        zero = _f(b, 0.0)
        self.w_low = b.op("Where", [b.op("GreaterOrEqual", [low, zero]), frac_low, zero])
        self.w_high = b.op("Where", [b.op("Less", [high, size_f]), frac_high, zero])
        self.low = b.cast(b.op("Max", [low, zero]), oir.DataType.INT64)
        self.high = b.cast(b.op("Min", [high, last]), oir.DataType.INT64)


@converter("DeformableConvolution", "opset1", "opset8",
           onnx="GatherElements (bilinear taps: Floor, Ceil, Where), ReduceSum, Conv (1x1, grouped)")
def deformable_convolution(ctx: LayerContext) -> oir.Value:
    b, ar = ctx.b, Arith(ctx.b)
    if ctx.input_rank(0) != 4:
        raise ctx.error("only 2-D deformable convolution (4-D data) is supported, as in OpenVINO")
    group = ctx.attr_int("group", 1)
    dg = ctx.attr_int("deformable_group", 1)
    pad_mode = ctx.version != 1 and ctx.attr_bool("bilinear_interpolation_pad", False)
    win = Window.read(ctx, 2)
    wdims = ctx.input_dims(2)
    if any(d is None or d < 0 for d in wdims[2:]):
        raise ctx.error("the kernel size (weights' spatial dims) must be static")
    kh, kw = int(wdims[2]), int(wdims[3])
    kk = kh * kw
    et = ctx.input_type(0)
    data, offsets, weights = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    mask = ctx.inputs[3] if len(ctx.inputs) > 3 else None
    if et.name != "f32":
        data, offsets, weights = (b.cast(v, F32) for v in (data, offsets, weights))
        mask = b.cast(mask, F32) if mask is not None else None
    in_dims = spatial_dims(ctx, 0, 2)
    out_dims = spatial_dims(ctx, 1, 2)
    pads_begin, _ = win.resolve_pads(ar, in_dims, dilated([kh, kw], win.dilations))

    def item(v, i: int):  # type: ignore[no-untyped-def]
        """Element i of a size vector: a numpy integer, or a [1] ONNX value."""
        return v[i] if Arith.static(v) else b.slice(v, [i], [i + 1], [0])

    h, w = (b.reshape(ar.value(item(in_dims, i)), []) for i in (0, 1))  # int64 scalars
    # sample coordinates [N, DG, K, P] over the flattened output positions P = OH * OW
    by = _base(b, ar, item(out_dims, 0), win.strides[0], item(pads_begin, 0), kh, win.dilations[0])  # [kh, OH]
    bx = _base(b, ar, item(out_dims, 1), win.strides[1], item(pads_begin, 1), kw, win.dilations[1])  # [kw, OW]
    if isinstance(by, np.ndarray) and isinstance(bx, np.ndarray):
        base_y = b.const(np.broadcast_to(by[:, None, :, None], (kh, kw, by.shape[1], bx.shape[1]))
                         .reshape(kk, -1).astype(np.float32))
        base_x = b.const(np.broadcast_to(bx[None, :, None, :], (kh, kw, by.shape[1], bx.shape[1]))
                         .reshape(kk, -1).astype(np.float32))
    else:
        by = by if isinstance(by, oir.Value) else b.const(by)
        bx = bx if isinstance(bx, oir.Value) else b.const(bx)
        grid = b.concat([b.i64([kh, kw]), b.shape_of(by, 1, 2), b.shape_of(bx, 1, 2)], 0)  # [kh, kw, OH, OW]
        base_y = b.reshape(b.op("Expand", [b.reshape(by, [kh, 1, -1, 1]), grid]), [kk, -1])
        base_x = b.reshape(b.op("Expand", [b.reshape(bx, [1, kw, 1, -1]), grid]), [kk, -1])
    off = b.reshape(offsets, [0, dg, kk, 2, -1])
    my = b.op("Add", [base_y, b.op("Gather", [off, b.i64(0)], {"axis": 3})])
    mx = b.op("Add", [base_x, b.op("Gather", [off, b.i64(1)], {"axis": 3})])
    ty, tx = _Taps(b, my, h, pad_mode), _Taps(b, mx, w, pad_mode)
    valid = b.op("And", [ty.valid, tx.valid])
    scale = b.reshape(mask, [0, dg, kk, -1]) if mask is not None else None
    taps = []  # (flat index, weight), OpenVINO's order of the weight products: (wy * wx) * mask
    for iy, wy in ((ty.low, ty.w_low), (ty.high, ty.w_high)):
        for ix, wx in ((tx.low, tx.w_low), (tx.high, tx.w_high)):
            wt = b.op("Mul", [wy, wx])
            if scale is not None:
                wt = b.op("Mul", [wt, scale])
            taps.append((b.op("Add", [b.op("Mul", [iy, w]), ix]), b.op("Where", [valid, wt, _f(b, 0.0)])))
    idx = b.concat([b.unsqueeze(t[0], [2]) for t in taps], 2)  # [N, DG, 4, K, P]
    wts = b.concat([b.unsqueeze(t[1], [2]) for t in taps], 2)
    # data [N, DG, C/DG, H*W]; gather every tap for every channel of its deformable group
    hw = b.reshape(b.op("Mul", [h, w]), [1])
    x = b.reshape(data, b.concat([b.shape_of(data, 0, 1), b.i64([dg, -1]), hw], 0))
    flat_idx = b.unsqueeze(b.reshape(idx, [0, 0, -1]), [2])
    flat_idx = b.op("Expand", [flat_idx, b.concat([b.shape_of(x, 0, 3), b.shape_of(flat_idx, 3, 4)], 0)])
    g = b.op("GatherElements", [x, flat_idx], {"axis": 3})
    g = b.reshape(g, [0, 0, 0, 4, kk, -1])  # [N, DG, C/DG, 4, K, P]
    cols = b.reduce("ReduceSum", b.op("Mul", [g, b.unsqueeze(wts, [2])]), [3], keepdims=False)
    cols = b.reshape(cols, b.concat([b.shape_of(offsets, 0, 1), b.i64([-1]), b.shape_of(offsets, 2, 4)], 0))
    wmat = b.reshape(weights, [0, -1, 1, 1])
    attrs: dict[str, object] = {"group": group} if group != 1 else {}
    y = b.op("Conv", [cols, wmat], attrs)  # type: ignore[arg-type]
    return y if et.name == "f32" else b.cast(y, onnx_dtype(et))

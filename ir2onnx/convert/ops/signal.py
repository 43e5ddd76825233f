"""DFT, IDFT, RDFT, IRDFT, STFT and ISTFT with ONNX DFT/STFT (complex numbers as a last dim of 2, as in both).

One ONNX DFT per transformed axis (the transforms along different axes commute). OpenVINO's negative axes count
from the last signal dim (the complex dim is not counted); `signal_size` pads with zeros or trims at the end of each
axis, -1 keeping the dim, as ONNX's dft_length does. IDFT and IRDFT divide by the product of the lengths, as ONNX's
inverse DFT does per axis."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from ir2onnx.convert.builder import GraphBuilder, onnx_dtype
from ir2onnx.convert.context import LayerContext
from ir2onnx.convert.registry import converter


def _float_in(ctx: LayerContext, i: int) -> ir.Value:
    """Input i in f32 (onnxruntime's DFT/STFT take f32 and f64; f16/bf16 are computed in f32)."""
    x = ctx.inputs[i]
    return x if ctx.input_type(i).name in ("f32", "f64") else ctx.b.cast(x, ir.DataType.FLOAT)


def _float_out(ctx: LayerContext, y: ir.Value) -> ir.Value:
    et = ctx.output_type(0)
    return y if et.name in ("f32", "f64") else ctx.b.cast(y, onnx_dtype(et))


def _axes(ctx: LayerContext, signal_rank: int) -> list[int]:
    axes = ctx.const(1)
    if axes is None:
        raise ctx.error("run-time axes are not supported: the axes decide which ONNX DFTs are emitted")
    out = [ctx.normalize_axis(int(a), signal_rank) for a in axes.reshape(-1)]
    if len(set(out)) != len(out):
        raise ctx.error(f"repeated axes {axes.reshape(-1).tolist()}")
    return out


def _lengths(ctx: LayerContext, x: ir.Value, axes: list[int]) -> list[ir.Value | None]:
    """Per axis: the dft_length (None where the dim is kept)."""
    b = ctx.b
    if len(ctx.inputs) < 3 or ctx.inputs[2] is None:
        return [None] * len(axes)
    sizes = ctx.const(2)
    if sizes is not None:
        return [None if int(s) == -1 else b.i64(int(s)) for s in sizes.reshape(-1)]
    raw = b.cast(b.reshape(ctx.inputs[2], [-1]), ir.DataType.INT64)
    out: list[ir.Value | None] = []
    for i, a in enumerate(axes):
        s = b.op("Gather", [raw, b.i64(i)], {"axis": 0})
        dim = b.reshape(b.shape_of(x, a, a + 1), [])
        out.append(b.op("Where", [b.op("Equal", [s, b.i64(-1)]), dim, s]))
    return out


def _complex_dfts(b: GraphBuilder, x: ir.Value, axes: list[int], lengths: list[ir.Value | None],
                  inverse: bool) -> ir.Value:
    for a, n in zip(axes, lengths):
        x = b.dft(x, a, n, inverse=inverse)
    return x


@converter("DFT", "opset7")
def dft(ctx: LayerContext) -> ir.Value:
    x = _float_in(ctx, 0)
    axes = _axes(ctx, ctx.input_rank(0) - 1)
    return _float_out(ctx, _complex_dfts(ctx.b, x, axes, _lengths(ctx, x, axes), inverse=False))


@converter("IDFT", "opset7")
def idft(ctx: LayerContext) -> ir.Value:
    x = _float_in(ctx, 0)
    axes = _axes(ctx, ctx.input_rank(0) - 1)
    return _float_out(ctx, _complex_dfts(ctx.b, x, axes, _lengths(ctx, x, axes), inverse=True))


@converter("RDFT", "opset9")
def rdft(ctx: LayerContext) -> ir.Value:
    """Real-to-complex along the last listed axis (which keeps n//2 + 1 bins), then full DFTs along the others."""
    b = ctx.b
    x = b.unsqueeze(_float_in(ctx, 0), [-1])
    axes = _axes(ctx, ctx.input_rank(0))
    lengths = _lengths(ctx, x, axes)
    y = b.dft(x, axes[-1], lengths[-1], onesided=True)
    return _float_out(ctx, _complex_dfts(b, y, axes[:-1], lengths[:-1], inverse=False))


@converter("IRDFT", "opset9")
def irdft(ctx: LayerContext) -> ir.Value:
    """Inverse DFTs along all listed axes but the last, then complex-to-real along the last: the n//2 + 1 bins
    (input trimmed or zero-padded to that) are completed by Hermitian symmetry X[n-k] = conj(X[k]) and the real part
    of the inverse DFT is kept (imaginary parts of the zero and Nyquist bins drop out, as in numpy.fft.irfftn).
    n is the last signal_size, else 2 * (dim - 1)."""
    b = ctx.b
    x = _float_in(ctx, 0)
    rank = ctx.input_rank(0)
    axes = _axes(ctx, rank - 1)
    lengths = _lengths(ctx, x, axes)
    x = _complex_dfts(b, x, axes[:-1], lengths[:-1], inverse=True)
    a = axes[-1]
    m = b.reshape(b.shape_of(x, a, a + 1), [])
    n = lengths[-1] if lengths[-1] is not None else b.op("Mul", [b.op("Sub", [m, b.i64(1)]), b.i64(2)])
    half = b.op("Add", [b.op("Div", [n, b.i64(2)]), b.i64(1)])  # bins used
    pad = b.op("Max", [b.op("Sub", [half, m]), b.i64(0)])
    zeros = b.i64([0] * rank)
    pads = b.concat([zeros, b.op("ScatterElements", [zeros, b.i64([a]), b.unsqueeze(pad, [0])])], 0)
    x = b.op("Pad", [x, pads])
    x = b.slice(x, b.i64([0]), b.unsqueeze(half, [0]), [a])
    k = b.op("Range", [b.i64(0), n, b.i64(1)])
    direct = b.op("Less", [k, half])
    idx = b.op("Where", [direct, k, b.op("Sub", [n, k])])
    full = b.op("Gather", [x, idx], {"axis": a})
    one = b.op("CastLike", [b.const(1.0, np.float32), x])
    sign = b.op("Where", [direct, one, b.op("Neg", [one])])  # [n]
    conj = b.concat([b.op("Expand", [b.unsqueeze(one, [0]), b.shape_of(sign)]), sign], 0)  # [2 * n]: re, im signs
    conj = b.op("Transpose", [b.reshape(conj, [2, -1])], {"perm": [1, 0]})  # [n, 2]
    conj = b.reshape(conj, b.i64([-1] + [1] * (rank - 2 - a) + [2]))
    y = b.dft(b.op("Mul", [full, conj]), a, None, inverse=True)
    y = b.squeeze(b.slice(y, [0], [1], [rank - 1]), [rank - 1])
    return _float_out(ctx, y)

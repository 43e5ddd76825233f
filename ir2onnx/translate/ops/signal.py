"""DFT, IDFT, RDFT, IRDFT, STFT and ISTFT with ONNX DFT/STFT (complex numbers as a last dim of 2, as in both).

One ONNX DFT per transformed axis (the transforms along different axes commute). OpenVINO's negative axes count
from the last signal dim (the complex dim is not counted); `signal_size` pads with zeros or trims at the end of each
axis, -1 keeping the dim, as ONNX's dft_length does. IDFT and IRDFT divide by the product of the lengths, as ONNX's
inverse DFT does per axis."""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.precision import to_output_type, wide_input
from ir2onnx.translate.registry import converter


def _axes(ctx: LayerContext, signal_rank: int) -> list[int]:
    axes = ctx.const(1)
    if axes is None:
        raise ctx.error("run-time axes are not supported: the axes decide which ONNX DFTs are emitted")
    out = [ctx.normalize_axis(int(a), signal_rank) for a in axes.reshape(-1)]
    if len(set(out)) != len(out):
        raise ctx.error(f"repeated axes {axes.reshape(-1).tolist()}")
    return out


def _lengths(ctx: LayerContext, x: oir.Value, axes: list[int]) -> list[oir.Value | None]:
    """Per axis: the dft_length (None where the dim is kept)."""
    b = ctx.b
    if len(ctx.inputs) < 3 or ctx.inputs[2] is None:
        return [None] * len(axes)
    sizes = ctx.const(2)
    if sizes is not None:
        return [None if int(s) == -1 else b.i64(int(s)) for s in sizes.reshape(-1)]
    raw = b.cast(b.reshape(ctx.inputs[2], [-1]), oir.DataType.INT64)
    out: list[oir.Value | None] = []
    for i, a in enumerate(axes):
        s = b.op("Gather", [raw, b.i64(i)], {"axis": 0})
        dim = b.reshape(b.shape_of(x, a, a + 1), [])
        out.append(b.op("Where", [b.op("Equal", [s, b.i64(-1)]), dim, s]))
    return out


def _complex_dfts(b: GraphBuilder, x: oir.Value, axes: list[int], lengths: list[oir.Value | None],
                  inverse: bool) -> oir.Value:
    for a, n in zip(axes, lengths):
        x = b.dft(x, a, n, inverse=inverse)
    return x


@converter("DFT", "opset7")
def dft(ctx: LayerContext) -> oir.Value:
    x = wide_input(ctx, 0)
    axes = _axes(ctx, ctx.input_rank(0) - 1)
    return to_output_type(ctx, _complex_dfts(ctx.b, x, axes, _lengths(ctx, x, axes), inverse=False))


@converter("IDFT", "opset7")
def idft(ctx: LayerContext) -> oir.Value:
    x = wide_input(ctx, 0)
    axes = _axes(ctx, ctx.input_rank(0) - 1)
    return to_output_type(ctx, _complex_dfts(ctx.b, x, axes, _lengths(ctx, x, axes), inverse=True))


@converter("RDFT", "opset9")
def rdft(ctx: LayerContext) -> oir.Value:
    """Real-to-complex along the last listed axis (which keeps n//2 + 1 bins), then full DFTs along the others."""
    b = ctx.b
    x = b.unsqueeze(wide_input(ctx, 0), [-1])
    axes = _axes(ctx, ctx.input_rank(0))
    lengths = _lengths(ctx, x, axes)
    y = b.dft(x, axes[-1], lengths[-1], onesided=True)
    return to_output_type(ctx, _complex_dfts(b, y, axes[:-1], lengths[:-1], inverse=False))


@converter("IRDFT", "opset9")
def irdft(ctx: LayerContext) -> oir.Value:
    """Inverse DFTs along all listed axes but the last, then complex-to-real along the last: the n//2 + 1 bins
    (input trimmed or zero-padded to that) are completed by Hermitian symmetry X[n-k] = conj(X[k]) and the real part
    of the inverse DFT is kept (imaginary parts of the zero and Nyquist bins drop out, as in numpy.fft.irfftn).
    n is the last signal_size, else 2 * (dim - 1)."""
    b = ctx.b
    x = wide_input(ctx, 0)
    rank = ctx.input_rank(0)
    axes = _axes(ctx, rank - 1)
    lengths = _lengths(ctx, x, axes)
    x = _complex_dfts(b, x, axes[:-1], lengths[:-1], inverse=True)
    a = axes[-1]
    if lengths[-1] is not None:
        n = lengths[-1]
    else:
        m = b.reshape(b.shape_of(x, a, a + 1), [])
        n = b.op("Mul", [b.op("Sub", [m, b.i64(1)]), b.i64(2)])
    return to_output_type(ctx, complex_to_real(b, x, a, n, rank))


def complex_to_real(b: GraphBuilder, x: oir.Value, a: int, n: oir.Value, rank: int) -> oir.Value:
    """Real inverse DFT of length n (scalar int64) along axis a of complex x ([..., 2], `rank` dims) holding the
    first bins of a Hermitian-symmetric spectrum; the complex dim is removed."""
    m = b.reshape(b.shape_of(x, a, a + 1), [])
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
    return b.squeeze(b.slice(y, [0], [1], [rank - 1]), [rank - 1])


def _scalar_i64(ctx: LayerContext, i: int) -> oir.Value:
    c = ctx.const(i)
    if c is not None:
        return ctx.b.i64(int(c.reshape(-1)[0]))
    return ctx.b.reshape(ctx.b.cast(ctx.inputs[i], oir.DataType.INT64), [])


def _padded_window(ctx: LayerContext, window: oir.Value, frame_size: oir.Value) -> oir.Value:
    """The window centred in frame_size samples (left padding (frame_size - length) // 2)."""
    b = ctx.b
    extra = b.op("Sub", [frame_size, b.reshape(b.shape_of(window), [])])
    left = b.op("Div", [extra, b.i64(2)])
    pads = b.concat([b.unsqueeze(left, [0]), b.unsqueeze(b.op("Sub", [extra, left]), [0])], 0)
    return b.op("Pad", [window, pads])


@converter("STFT", "opset15")
def stft(ctx: LayerContext) -> oir.Value:
    """ONNX STFT (one-sided) on [batch, time, 1]; OpenVINO's window may be shorter than frame_size and is then
    centred in it. transpose_frames puts the bins before the frames."""
    b = ctx.b
    x, window = wide_input(ctx, 0), wide_input(ctx, 1)
    frame_size, frame_step = _scalar_i64(ctx, 2), _scalar_i64(ctx, 3)
    batched = ctx.input_rank(0) == 2
    sig = b.unsqueeze(x, [-1] if batched else [0, -1])
    y = b.op("STFT", [sig, frame_step, _padded_window(ctx, window, frame_size), frame_size], {"onesided": 1})
    if ctx.attr_bool("transpose_frames", False):
        y = b.op("Transpose", [y], {"perm": [0, 2, 1, 3]})
    return to_output_type(ctx, y if batched else b.squeeze(y, [0]))


@converter("ISTFT", "opset16")
def istft(ctx: LayerContext) -> oir.Value:
    """Per frame a real inverse DFT of frame_size samples, times the centred window, overlap-added (ScatterElements
    with add, frame by frame as OpenVINO sums) and divided by the overlap-added squared window where that is not 0
    (else 0); `normalized` multiplies by sqrt(frame_size) first. `center` drops frame_size // 2 samples at the start;
    the length is signal_length when given (> 0), else the full length less frame_size rounded down to even with
    `center`; samples past the end are zeros."""
    b = ctx.b
    x, window = wide_input(ctx, 0), wide_input(ctx, 1)
    fs, step = _scalar_i64(ctx, 2), _scalar_i64(ctx, 3)
    batched = ctx.input_rank(0) == 4
    if not batched:
        x = b.unsqueeze(x, [0])
    x = b.op("Transpose", [x], {"perm": [0, 2, 1, 3]})  # [batch, frames, bins, 2]
    frames = complex_to_real(b, x, 2, fs, 4)  # [batch, frames, fs]
    w = _padded_window(ctx, window, fs)
    nf = b.reshape(b.shape_of(x, 1, 2), [])
    full = b.op("Add", [b.op("Mul", [b.op("Sub", [nf, b.i64(1)]), step]), fs])
    starts = b.op("Mul", [b.op("Range", [b.i64(0), nf, b.i64(1)]), step])
    idx = b.reshape(b.op("Add", [b.unsqueeze(starts, [1]), b.op("Range", [b.i64(0), fs, b.i64(1)])]), [1, -1])
    zero = b.op("CastLike", [b.const(0.0, np.float32), x])
    batch = b.shape_of(x, 0, 1)
    y = b.op("Expand", [zero, b.concat([batch, b.unsqueeze(full, [0])], 0)])
    updates = b.reshape(b.op("Mul", [frames, w]), b.i64([0, -1]))
    y = b.op("ScatterElements", [y, b.op("Expand", [idx, b.shape_of(updates)]), updates],
             {"axis": 1, "reduction": "add"})
    env = b.op("Expand", [zero, b.concat([b.i64([1]), b.unsqueeze(full, [0])], 0)])
    w2 = b.op("Expand", [b.unsqueeze(b.op("Mul", [w, w]), [0]), b.concat([b.unsqueeze(nf, [0]), b.unsqueeze(fs, [0])], 0)])
    env = b.op("ScatterElements", [env, idx, b.reshape(w2, [1, -1])], {"axis": 1, "reduction": "add"})
    if ctx.attr_bool("normalized", False):
        y = b.op("Mul", [y, b.op("Sqrt", [b.op("CastLike", [fs, y])])])
    is_zero = b.op("Equal", [env, zero])
    safe = b.op("Where", [is_zero, b.op("CastLike", [b.const(1.0, np.float32), y]), env])
    y = b.op("Where", [is_zero, zero, b.op("Div", [y, safe])])
    center = ctx.attr_bool("center", False)
    margin = b.op("Div", [fs, b.i64(2)]) if center else b.i64(0)
    length = b.op("Sub", [full, b.op("Mul", [margin, b.i64(2)])]) if center else full
    if len(ctx.inputs) > 4 and ctx.inputs[4] is not None:
        given = _scalar_i64(ctx, 4)
        length = b.op("Where", [b.op("Greater", [given, b.i64(0)]), given, length])
    count = b.op("Min", [length, b.op("Sub", [full, margin])])
    y = b.op("Slice", [y, b.unsqueeze(margin, [0]), b.unsqueeze(b.op("Add", [margin, count]), [0]), b.i64([1])])
    y = b.op("Pad", [y, b.concat([b.i64([0, 0, 0]), b.unsqueeze(b.op("Sub", [length, count]), [0])], 0)])
    return to_output_type(ctx, y if batched else b.squeeze(y, [0]))

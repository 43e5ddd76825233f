"""ExtractImagePatches-3: every sizes[0] x sizes[1] patch (taken every `rates` pixels, moved by `strides`) of an
NCHW image, laid out as channels: output [N, sizes[0] * sizes[1] * C, out_h, out_w], channel ((i * sizes[1] + j) * C
+ c) holding pixel (i, j) of the patch in channel c.

Output sizes, with k = (size - 1) * rate + 1 the patch's extent: "valid" takes out = floor((H - k) / stride) + 1
patches (none when the image is smaller than k) and no padding; "same_upper"/"same_lower" take out = ceil(H /
stride) and pad with zeros by total = max((out - 1) * stride + k - H, 0), total // 2 before (same_upper) or after
(same_lower) and the rest on the other side.

The composition pads, then takes each patch pixel (i, j) for all patches at once with one strided Slice starting
at (i * rate_h, j * rate_w), and concatenates the sizes[0] * sizes[1] slices on the channel axis. The output sizes
and pads are computed from the image's run-time shape, so dynamic spatial dims need nothing more.
"""

from __future__ import annotations

import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter


def _axis(b: GraphBuilder, extent: oir.Value, size: int, stride: int, rate: int,
          pad: str) -> tuple[oir.Value, oir.Value, oir.Value]:
    """One spatial axis of run-time extent [1]: (patches along it, pad before, pad after), each an int64 [1]."""
    k = (size - 1) * rate + 1
    if pad == "valid":
        count = b.op("Div", [b.op("Max", [b.op("Sub", [extent, b.i64([k - stride])]), b.i64([0])]),
                             b.i64([stride])])
        return count, b.i64([0]), b.i64([0])
    count = b.op("Div", [b.op("Add", [extent, b.i64([stride - 1])]), b.i64([stride])])
    need = b.op("Sub", [b.op("Add", [b.op("Mul", [b.op("Sub", [count, b.i64([1])]), b.i64([stride])]),
                                     b.i64([k])]), extent])
    total = b.op("Max", [need, b.i64([0])])
    half = b.op("Div", [total, b.i64([2])])
    rest = b.op("Sub", [total, half])
    return (count, half, rest) if pad == "same_upper" else (count, rest, half)


# Positions in a patch (sizes[0] x sizes[1]) the ONNX form takes one Slice each for (real patches: up to a few hundred).
_MAX_PATCH_POSITIONS = 1 << 16


@converter("ExtractImagePatches", "opset3", onnx="Pad, Slice (strided), Concat")
def extract_image_patches(ctx: LayerContext) -> oir.Value:
    b = ctx.b
    sizes, strides, rates = ctx.attr_ints("sizes"), ctx.attr_ints("strides"), ctx.attr_ints("rates")
    pad = ctx.attr_str("auto_pad").lower()
    for name, v in (("sizes", sizes), ("strides", strides), ("rates", rates)):
        if len(v) != 2 or min(v) < 1:
            raise ctx.error(f"attribute {name}={v} is not two positive integers")
    if sizes[0] * sizes[1] > _MAX_PATCH_POSITIONS:
        raise ctx.error(f"sizes={sizes}: the ONNX form slices the image once per position in a patch, and "
                        f"{sizes[0] * sizes[1]} positions are more than the {_MAX_PATCH_POSITIONS} it builds")
    if pad not in ("valid", "same_upper", "same_lower"):
        raise ctx.error(f"auto_pad=\"{pad}\" is not valid, same_upper or same_lower")
    if ctx.input_rank(0) != 4:
        raise ctx.error(f"the image has rank {ctx.input_rank(0)}, not 4 (NCHW)")
    x = ctx.inputs[0]
    axes = [_axis(b, b.shape_of(x, 2 + a, 3 + a), sizes[a], strides[a], rates[a], pad) for a in range(2)]
    if pad != "valid":
        pads = b.concat([b.i64([0, 0]), axes[0][1], axes[1][1], b.i64([0, 0]), axes[0][2], axes[1][2]], 0)
        x = b.op("Pad", [x, pads])  # zeros
    counts = [axes[a][0] for a in range(2)]
    parts = []
    for i in range(sizes[0]):
        for j in range(sizes[1]):
            starts = [i * rates[0], j * rates[1]]
            # end = start + (count - 1) * stride + 1: the last patch's pixel is included, nothing after it; at
            # least 0, as a negative end would count from the back
            ends = [b.op("Max", [b.op("Add", [b.op("Mul", [b.op("Sub", [counts[a], b.i64([1])]),
                                                           b.i64([strides[a]])]), b.i64([starts[a] + 1])]),
                                 b.i64([0])]) for a in range(2)]
            parts.append(b.slice(x, starts, b.concat(ends, 0), [2, 3], strides))
    return b.concat(parts, 1)

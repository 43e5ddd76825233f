"""Col2Im-15: sums sliding blocks back into an image (PyTorch's `fold`), the adjoint of taking the blocks.

Data [N, C * kh * kw, L] (or unbatched [C * kh * kw, L]) holds, in row (c * kh + i) * kw + j and column bh * nw + bw,
the pixel (i, j) of block (bh, bw) of channel c; block (bh, bw) starts at (bh * stride - pad_begin, bw * stride -
pad_begin) and its pixel (i, j) lies `dilation` apart. The output [N, C, H, W] (H, W = output_size) is the sum of
every block pixel that falls inside it; blocks per axis nb = floor((size + pads - dilation * (kernel - 1) - 1) /
stride) + 1.

What OpenVINO's CPU plugin computes (established by experiment, compiled with f32 inference precision): it adds the
block pixels in data order, one after another, into a zeroed image, in the data's type for f32, i32, i8 and u8
(integers wrap); it converts the other types first and converts the result back: f16 and f64 to f32, i16, u16,
u32, i64 and u64 to i32 (keeping the low 32 bits, so the sums wrap modulo 2^32 and come back sign-extended),
booleans to u8 (a sum that wraps to 0 is false). bf16 data is summed in bf16 with OpenVINO's own float-to-bf16
conversion after every addition, which is not round-to-nearest (it truncates when the kept last bit is even:
1 + 0.9 ulp gives 1); the composition computes bf16 in f32 and rounds once, to nearest even. With no blocks (L = 0)
the plugin leaves the output uninitialised; the composition gives zeros.

The composition: ScatterElements (reduction "add", which applies the updates in index order, as the plugin adds
them) of the data, viewed as [N, C, kh * kw * L], into a zeroed [N, C, Hp * Wp] image padded by the pads (every
block pixel lies inside it), then the unpadded [H, W] window. The flat target of each block pixel is computed from
output_size and kernel_size (constants or run-time inputs) by Range arithmetic.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.window import Arith, Vec
from ir2onnx.translate.registry import converter

# element types the plugin sums in another type
_WORK = {"f16": "f32", "bf16": "f32", "f64": "f32", "i16": "i32", "u16": "i32", "u32": "i32", "i64": "i32",
         "u64": "i32", "boolean": "u8"}
_NATIVE = {"f32", "i32", "i8", "u8"}
_WORK_ONNX = {"f32": oir.DataType.FLOAT, "i32": oir.DataType.INT32, "i8": oir.DataType.INT8, "u8": oir.DataType.UINT8}
_WORK_NUMPY = {"f32": np.float32, "i32": np.int32, "i8": np.int8, "u8": np.uint8}


def _part(ar: Arith, v: Vec, i: int) -> Vec:
    """Element i of a 2-vector, as a 1-element vector."""
    return v[i:i + 1] if Arith.static(v) else ar.b.slice(v, [i], [i + 1], [0])  # type: ignore[index,arg-type]


def _scalar(ar: Arith, v: Vec, i: int) -> oir.Value:
    """Element i of a 2-vector, as an int64 scalar."""
    part = _part(ar, v, i)
    return ar.b.i64(int(part[0])) if Arith.static(part) else ar.b.reshape(part, [])  # type: ignore[index,arg-type]


def _positions(ar: Arith, axis: int, kernel: Vec, blocks: Vec, stride: int, dilation: int) -> Vec:
    """[kernel, blocks] int64: the padded-image coordinate along `axis` of pixel k of block n."""
    if Arith.static(kernel) and Arith.static(blocks):
        k, n = int(kernel[axis]), int(blocks[axis])  # type: ignore[index]
        return np.arange(k, dtype=np.int64)[:, None] * dilation + np.arange(n, dtype=np.int64)[None, :] * stride
    b = ar.b
    zero, one = b.i64(0), b.i64(1)
    starts = b.op("Mul", [b.op("Range", [zero, _scalar(ar, blocks, axis), one]), b.i64(stride)])
    offsets = b.op("Mul", [b.op("Range", [zero, _scalar(ar, kernel, axis), one]), b.i64(dilation)])
    return b.op("Add", [b.unsqueeze(offsets, [1]), b.unsqueeze(starts, [0])])


def _spread(ar: Arith, v: Vec, axes: list[int]) -> oir.Value:
    """A [k, n] position table with unit axes inserted at `axes` (for broadcasting to [kh, kw, nh, nw])."""
    if Arith.static(v):
        return ar.b.const(np.expand_dims(v, axes), np.int64)  # type: ignore[arg-type]
    return ar.b.unsqueeze(v, axes)  # type: ignore[arg-type]


@converter("Col2Im", "opset15", onnx="ScatterElements (reduction add), Range, Slice")
def col2im(ctx: LayerContext) -> oir.Value:
    b = ctx.b
    et = ctx.input_type(0)
    work = _WORK.get(et.name, et.name)
    if work not in _NATIVE:
        raise ctx.error(f"Col2Im of {et.name} data is not supported")
    strides, dilations = ctx.attr_ints("strides", [1, 1]), ctx.attr_ints("dilations", [1, 1])
    pads_begin, pads_end = ctx.attr_ints("pads_begin", [0, 0]), ctx.attr_ints("pads_end", [0, 0])
    for name, v, low in (("strides", strides, 1), ("dilations", dilations, 1), ("pads_begin", pads_begin, 0),
                         ("pads_end", pads_end, 0)):
        if len(v) != 2 or min(v) < low:
            raise ctx.error(f"attribute {name}={v} is not two integers >= {low}")
    rank = ctx.input_rank(0)
    if rank not in (2, 3):
        raise ctx.error(f"the data has rank {rank}, not 3 ([N, C * kh * kw, L]) or 2 (unbatched)")

    ar = Arith(b)
    size, kernel = (v if isinstance(v, oir.Value) else np.asarray(v, np.int64)
                    for v in (ctx.ints_or_value(1), ctx.ints_or_value(2)))
    padded = ar.add(size, np.add(pads_begin, pads_end))
    extent = ar.add(ar.mul(ar.sub(kernel, 1), dilations), 1)
    blocks = ar.max(ar.add(ar.floordiv(ar.sub(padded, extent), strides), 1), 0)

    # the flat position in the padded image of every block pixel, in data order (i, j, bh, bw)
    rows = ar.mul(_positions(ar, 0, kernel, blocks, strides[0], dilations[0]), _part(ar, padded, 1))
    cols = _positions(ar, 1, kernel, blocks, strides[1], dilations[1])
    flat = b.op("Add", [_spread(ar, rows, [1, 3]), _spread(ar, cols, [0, 2])])  # [kh, kw, nh, nw]
    flat = b.reshape(flat, [1, 1, -1])

    x = ctx.inputs[0]
    if rank == 2:
        x = b.unsqueeze(x, [0])
    if work != et.name:
        x = b.cast(x, _WORK_ONNX[work])
    dims = b.shape_of(x)  # [N, C * kh * kw, L]
    batch = b.slice(dims, [0], [1], [0])
    area = ar.value(ar.mul(_part(ar, kernel, 0), _part(ar, kernel, 1)))
    channels = b.op("Div", [b.slice(dims, [1], [2], [0]), area])
    x = b.reshape(x, b.concat([batch, channels, b.op("Mul", [area, b.slice(dims, [2], [3], [0])])], 0))
    idx = b.op("Expand", [flat, b.shape_of(x)])
    canvas_len = ar.value(ar.mul(_part(ar, padded, 0), _part(ar, padded, 1)))
    zero = np.zeros(1, _WORK_NUMPY[work])
    canvas = b.op("ConstantOfShape", [b.concat([batch, channels, canvas_len], 0)], {"value": zero})
    y = b.op("ScatterElements", [canvas, idx, x], {"axis": 2, "reduction": "add"})
    y = b.reshape(y, b.concat([batch, channels, ar.value(padded)], 0))
    y = b.slice(y, pads_begin, ar.value(ar.add(size, pads_begin)), [2, 3])
    if rank == 2:
        y = b.squeeze(y, [0])
    if work != et.name:
        y = b.cast(y, onnx_dtype(et))
    return y

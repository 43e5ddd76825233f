"""FakeQuantize and FakeConvert as exact compositions of ONNX ops; FakeQuantize also in ONNX's quantized form
(QuantizeLinear + DequantizeLinear) where its grid is an 8-bit integer one and the conversion asks for it."""

from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np
import onnx_ir as oir

from ir2onnx.ir.fake_quantize import FOUR_BIT, integer_grid, levels_of
from ir2onnx.translate.builder import onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.precision import f32_input
from ir2onnx.translate.registry import converter


def _in_f32(ctx: LayerContext, idx: Sequence[int]) -> list[oir.Value]:
    return [f32_input(ctx, i) for i in idx]


def _back(ctx: LayerContext, y: oir.Value) -> oir.Value:
    et = ctx.output_type(0)
    return y if et.name == "f32" else ctx.b.cast(y, onnx_dtype(et))


@converter("FakeQuantize", "opset1")
def fake_quantize(ctx: LayerContext) -> oir.Value:
    """x <= min(il, ih) -> ol; x > max(il, ih) -> oh; otherwise `levels` evenly spaced values, rounded half to even.

    The in-range value follows OpenVINO's CPU plugin, which computes it two ways: with constant ranges it
    precomputes scale = (levels-1)/(ih-il) and shift = -il*scale and takes round(x*scale + shift) * (oh-ol)/(levels-1)
    + ol; when any range is a run-time input it takes the specification's
    round((x-il)/(ih-il)*(levels-1)) / (levels-1) * (oh-ol) + ol. The two differ in the last bit, which moves values
    near a rounding tie by a whole step, so each form is kept. (With constant ranges and il > ih the plugin returns
    ol everywhere; the specification's form is used there.)"""
    mode = ctx.attr_str("auto_broadcast", "numpy").lower()
    if mode not in ("numpy", "none"):
        raise ctx.error(f"FakeQuantize with auto_broadcast='{mode}' is not supported")
    levels = ctx.attr_int("levels")
    if levels < 2:
        raise ctx.error(f"FakeQuantize with levels={levels} (at least 2 are needed)")
    b = ctx.b
    consts = [ctx.const(i) for i in range(1, 5)]
    if b.quantization == "onnx":
        form = _qdq(ctx, levels, consts)
        why = form if isinstance(form, str) else form[1]
        b.quantized[why] = b.quantized.get(why, 0) + 1
        if not isinstance(form, str):
            return form[0]
    x, il, ih, ol, oh = _in_f32(ctx, range(5))
    if all(c is not None for c in consts):
        cil, cih, col, coh = (np.asarray(c, np.float32) for c in consts)  # type: ignore[union-attr]
        if np.all(cil < cih):
            return _back(ctx, _fq_constant(ctx, x, cil, cih, col, coh, levels))
    n = b.const(np.float32(levels - 1))
    q = b.op("Round", [b.op("Mul", [b.op("Div", [b.op("Sub", [x, il]), b.op("Sub", [ih, il])]), n])])
    y = b.op("Add", [b.op("Mul", [b.op("Div", [q, n]), b.op("Sub", [oh, ol])]), ol])
    return _back(ctx, _bounds(ctx, x, il, ih, ol, oh, y))


def _qdq(ctx: LayerContext, levels: int, consts: list[np.ndarray | None]) -> tuple[oir.Value, str] | str:
    """FakeQuantize as QuantizeLinear + DequantizeLinear (on a constant input, DequantizeLinear of the integers
    OpenVINO's formula gives), or why not (ir/fake_quantize.py). QuantizeLinear rounds x / scale half to even where
    OpenVINO rounds its own formula: the two stay within one quantization step. Returns the value and its form's
    name (as `ir2onnx info` names it)."""
    dims = ctx.input_dims(0)
    x_const = ctx.const(0)
    grid = integer_grid(levels, consts, len(dims) if dims is not None else None, x_const is not None)
    if isinstance(grid, str):
        return f"kept exact: {grid}"
    b = ctx.b
    if levels in FOUR_BIT and ctx.opset < 21:
        if b.opset_forced:
            return "kept exact: 4-bit grids need opset 21"
        b.require_opset(21, f"FakeQuantize with {levels} levels as 4-bit QuantizeLinear/DequantizeLinear")
    attrs = {"axis": grid.axis} if grid.axis is not None else {}
    dq_inputs = [b.const(grid.scale_out), b.const(grid.zero_out)]
    if x_const is not None:  # weights: the integers OpenVINO's formula gives, stored at 8 bits
        q = b.const(levels_of(x_const, levels, consts))  # type: ignore[arg-type]
        form = "as DequantizeLinear of stored integers"
    else:
        q = b.op("QuantizeLinear", [f32_input(ctx, 0), b.const(grid.scale_in), b.const(grid.zero_in)], attrs)
        form = "as QuantizeLinear/DequantizeLinear"
    return _back(ctx, b.op("DequantizeLinear", [q, *dq_inputs], attrs)), form


def _fq_constant(ctx: LayerContext, x: oir.Value, il: np.ndarray, ih: np.ndarray, ol: np.ndarray, oh: np.ndarray,
                 levels: int) -> oir.Value:
    b = ctx.b
    with np.errstate(divide="ignore", invalid="ignore"):
        in_scale = np.float32(levels - 1) / (ih - il)
        in_shift = -il * in_scale
        out_scale = (oh - ol) / np.float32(levels - 1)
    q = b.op("Round", [b.op("Add", [b.op("Mul", [x, b.const(in_scale)]), b.const(in_shift)])])
    y = b.op("Add", [b.op("Mul", [q, b.const(out_scale)]), b.const(ol)])
    return _bounds(ctx, x, b.const(il), b.const(ih), b.const(ol), b.const(oh), y)


def _bounds(ctx: LayerContext, x: oir.Value, il: oir.Value, ih: oir.Value, ol: oir.Value, oh: oir.Value,
            y: oir.Value) -> oir.Value:
    b = ctx.b
    lo, hi = b.op("Min", [il, ih]), b.op("Max", [il, ih])
    y = b.op("Where", [b.op("Greater", [x, hi]), oh, y])
    return b.op("Where", [b.op("LessOrEqual", [x, lo]), ol, y])


_F8 = {"f8e4m3": ("FLOAT8E4M3FN", ml_dtypes.float8_e4m3fn), "f8e5m2": ("FLOAT8E5M2", ml_dtypes.float8_e5m2)}


@converter("FakeConvert", "opset13", onnx_opset=19)
def fake_convert(ctx: LayerContext) -> oir.Value:
    """(to_f8(x * scale - shift) + shift) / scale, emulated as OpenVINO does: the value is rounded to f16 first,
    then to the 8-bit type (round half to even), saturating at the type's largest finite value (infinities too).
    NaN stays NaN (OpenVINO's CPU plugin returns the negative largest value for it)."""
    b = ctx.b
    dest = ctx.attr_str("destination_type", "f8e4m3").lower()
    if dest not in _F8:
        raise ctx.error(f"FakeConvert to '{dest}' is not supported (f8e4m3 and f8e5m2 are)")
    onnx_name, np_t = _F8[dest]
    onnx_t = oir.DataType[onnx_name]
    has_shift = len(ctx.inputs) > 2 and ctx.inputs[2] is not None
    x, scale, *shift = _in_f32(ctx, range(3 if has_shift else 2))
    y = b.op("Mul", [x, scale])
    if shift:
        y = b.op("Sub", [y, shift[0]])
    h = b.cast(y, oir.DataType.FLOAT16)
    fmax = float(ml_dtypes.finfo(np_t).max)
    clipped = b.op("Min", [b.op("Max", [h, b.const(np.float16(-fmax))]), b.const(np.float16(fmax))])
    clipped = b.op("Where", [b.op("IsNaN", [h]), h, clipped])
    z = b.cast(b.cast(b.cast(clipped, onnx_t), oir.DataType.FLOAT16), oir.DataType.FLOAT)
    if shift:
        z = b.op("Add", [z, shift[0]])
    return _back(ctx, b.op("Div", [z, scale]))

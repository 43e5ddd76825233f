"""Computing precision of converters, as OpenVINO's CPU plugin computes (with f32 inference precision):

* f16/bf16 data is computed in f32 between casts and rounded once at the end (not once per ONNX node):
  `wide_input`/`to_output_type` inside a converter, or `in_f32` around a whole converter;
* float functions of integers (Exp, Sqrt, Sin, Sigmoid, ... of an i32) are computed in f32, rounded half to even
  and saturated to the integer type: `float_function`;
* 8-bit integer arithmetic saturates (i8/u8 Add, Subtract, Multiply, Power, PRelu): `saturating`;
* layers of float arithmetic (SoftMax, MVN, Elu, ...) on integers or booleans run in f32, their results converted
  back as `float_function` converts (booleans as u8, then != 0): `in_f32_rounded` around a whole converter.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import onnx_ir as oir

from ir2onnx.ir.element_types import ElementType, parse_element_type
from ir2onnx.translate.builder import onnx_dtype
from ir2onnx.translate.context import LayerContext, set_value_type, value_type
from ir2onnx.translate.registry import ConverterResult

_HALF = ("f16", "bf16")
_WIDE = ("f32", "f64")


def wide_input(ctx: LayerContext, i: int) -> oir.Value:
    """Input i as is when f32/f64, else cast to f32."""
    x = ctx.inputs[i]
    return x if ctx.input_type(i).name in _WIDE else ctx.b.cast(x, oir.DataType.FLOAT)


def f32_input(ctx: LayerContext, i: int) -> oir.Value:
    """Input i in f32 (for ONNX ops that onnxruntime runs in f32 only)."""
    x = ctx.inputs[i]
    return x if ctx.input_type(i).name == "f32" else ctx.b.cast(x, oir.DataType.FLOAT)


def to_output_type(ctx: LayerContext, y: oir.Value, port: int = 0) -> oir.Value:
    """`y` (computed by wide_input's rule) cast back to output `port`'s type where that is narrower (integers and
    booleans as `from_f32` converts them)."""
    et = ctx.output_type(port)
    if et.name in _WIDE:
        return y
    out = from_f32(ctx, y, et)
    set_value_type(out, et)
    return out


_F32 = parse_element_type("f32")
_U8 = parse_element_type("u8")


def in_f32(fn: Callable[[LayerContext], ConverterResult]) -> Callable[[LayerContext], ConverterResult]:
    """Run converter `fn` with its f16/bf16 inputs cast to f32, and cast its f16/bf16 outputs back."""
    return _around_f32(
        fn, lambda ctx: [i for i in range(len(ctx.inputs))
                         if ctx.inputs[i] is not None and ctx.input_type(i).name in _HALF],
        lambda et, v: et.name in _HALF and (value_type(v) is None or value_type(v).name == "f32"))


def _around_f32(fn: Callable[[LayerContext], ConverterResult], chosen: Callable[[LayerContext], list[int]],
                back: Callable[[ElementType, oir.Value], bool]) -> Callable[[LayerContext], ConverterResult]:
    """`fn` run with the `chosen` inputs cast to f32, each output whose type and value `back` picks converted to that
    type (`from_f32`: for floats a cast)."""

    @functools.wraps(fn)
    def convert(ctx: LayerContext) -> ConverterResult:
        inputs = chosen(ctx)
        if not inputs:
            return fn(ctx)
        for i in inputs:
            v = ctx.b.cast(ctx.inputs[i], oir.DataType.FLOAT)
            set_value_type(v, _F32)
            ctx.inputs[i] = v
        out = fn(ctx)
        outs = [out] if isinstance(out, oir.Value) else list(out)
        converted = []
        for port, v in zip(ctx.layer.outputs, outs):
            et = port.element_type
            if et is not None and back(et, v):
                v = from_f32(ctx, v, et)
                set_value_type(v, et)
            converted.append(v)
        return converted[0] if isinstance(out, oir.Value) else converted

    return convert


def float_function(ctx: LayerContext, x: oir.Value, et: ElementType,
                   compute: Callable[[oir.Value], oir.Value]) -> oir.Value:
    """`compute` (ONNX nodes on a float32 value) applied to `x` of type `et`. Integers: computed in f32, rounded
    half to even and saturated into `et` (NaN gives the type's minimum, as the CPU plugin's conversion does; u16
    to u64 are saturated into int32 and wrapped, as that conversion does);
    f16/bf16 in f32 and rounded once; f32/f64 as they are."""
    if et.name in ("f32", "f64"):
        return compute(x)
    return from_f32(ctx, compute(ctx.b.cast(x, oir.DataType.FLOAT)), et)


def from_f32(ctx: LayerContext, y: oir.Value, et: ElementType) -> oir.Value:
    """An f32 result in type `et` as the CPU plugin converts it: floats rounded once; integers rounded half to
    even and saturated (u16 to u64 through int32, wrapped); booleans as u8, then != 0 (0.5 and below are false)."""
    b = ctx.b
    if et.is_float:
        return b.cast(y, onnx_dtype(et))
    if et.name == "boolean":
        return b.cast(from_f32(ctx, y, _U8), oir.DataType.BOOL)
    y = b.cast(b.op("Round", [y]), oir.DataType.DOUBLE)
    if et.name in ("u16", "u32", "u64"):  # converted through int32, then wrapped: -1 becomes 65535
        y = b.op("Clip", [y, b.const(-2.0**31, np.float64), b.const(2.0**31 - 1, np.float64)])
        y = b.op("Where", [b.op("IsNaN", [y]), b.const(-2.0**31, np.float64), y])
        return b.cast(b.cast(y, oir.DataType.INT64), onnx_dtype(et))
    info = np.iinfo(et.numpy)
    # the largest doubles inside the type (2^63 - 1 is not a double)
    hi = float(info.max) if et.bits < 64 else float(np.nextafter(np.float64(info.max), 0))
    y = b.op("Clip", [y, b.const(float(info.min), np.float64), b.const(hi, np.float64)])
    y = b.op("Where", [b.op("IsNaN", [y]), b.const(float(info.min), np.float64), y])
    return b.cast(y, onnx_dtype(et))


def in_f32_rounded(fn: Callable[[LayerContext], ConverterResult]) -> Callable[[LayerContext], ConverterResult]:
    """Run a converter of float arithmetic with its data input (input 0) in f32 when that is f16, bf16, an integer
    or boolean, and convert each output of such a type back once (`from_f32`): OpenVINO's CPU plugin runs such
    layers (SoftMax, MVN, Elu, ... of an i32) in f32. Other inputs (axes) are left alone."""
    return _around_f32(fn, lambda ctx: [] if ctx.input_type(0).name in _WIDE else [0],
                       lambda et, v: et.name not in _WIDE)


_SATURATED = ("i8", "u8")


def saturating(ctx: LayerContext, et: ElementType, inputs: list[oir.Value],
               compute: Callable[[list[oir.Value]], oir.Value]) -> oir.Value:
    """`compute` on `inputs` of type `et`; for i8/u8 computed in int32 (exact for these ops' 8-bit operands) and
    clipped into the type, as the CPU plugin's 8-bit arithmetic saturates."""
    if et.name not in _SATURATED:
        return compute(inputs)
    b = ctx.b
    y = compute([b.cast(v, oir.DataType.INT32) for v in inputs])
    info = np.iinfo(et.numpy)
    y = b.op("Clip", [y, b.const(int(info.min), np.int32), b.const(int(info.max), np.int32)])
    return b.cast(y, onnx_dtype(et))

"""Bitwise And/Or/Xor/Not (booleans as logical ops) and shifts of signed and unsigned integers."""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.elementwise import broadcast_inputs
from ir2onnx.translate.registry import register_made


def _bitwise(logical: str, bitwise: str):  # type: ignore[no-untyped-def]
    def convert(ctx: LayerContext) -> oir.Value:
        ins = [ctx.inputs[0]] if logical == "Not" else list(broadcast_inputs(ctx, ctx.inputs[0], ctx.inputs[1]))
        if ctx.input_type(0).name == "boolean":
            return ctx.b.op(logical, ins)
        ctx.require_opset(18, f"ONNX {bitwise} (integers)")
        return ctx.b.op(bitwise, ins)

    return convert


for _ir_type, _logical, _bitwise_op in (("BitwiseAnd", "And", "BitwiseAnd"), ("BitwiseOr", "Or", "BitwiseOr"),
                                        ("BitwiseXor", "Xor", "BitwiseXor"), ("BitwiseNot", "Not", "BitwiseNot")):
    register_made(_bitwise(_logical, _bitwise_op), _ir_type, "opset13")


def _shift(direction: str):  # type: ignore[no-untyped-def]
    """ONNX BitShift takes unsigned integers only: work in 64 bits. Types of 32 bits or less are widened (sign or
    zero extension) and the shift count is taken modulo 32 (modulo 64 for 64-bit types), as x86 and OpenVINO's CPU
    plugin do; the result is wrapped back into the type. Signed right shifts are arithmetic:
    x >> s == ~(~x >> s) for negative x."""

    def convert(ctx: LayerContext) -> oir.Value:
        b = ctx.b
        et = ctx.input_type(0)
        x, s = broadcast_inputs(ctx, ctx.inputs[0], ctx.inputs[1])
        if et.numpy.kind not in "iu" or et.bits < 8:
            raise ctx.error(f"{ctx.layer.type} of {et.name} is not supported (integer types only)")
        width = 64 if et.bits == 64 else 32
        count = b.cast(b.op("Mod", [b.cast(s, oir.DataType.INT64), b.const(width, np.int64)]), oir.DataType.UINT64)
        signed = et.numpy.kind == "i"
        if direction == "LEFT" or not signed:
            y = b.op("BitShift", [b.cast(x, oir.DataType.UINT64), count], {"direction": direction})
        else:
            xi = b.cast(x, oir.DataType.INT64)
            neg = b.op("Less", [xi, b.const(0, np.int64)])
            minus_one = b.const(-1, np.int64)
            mag = b.op("Where", [neg, b.op("Sub", [minus_one, xi]), xi])
            r = b.cast(b.op("BitShift", [b.cast(mag, oir.DataType.UINT64), count], {"direction": "RIGHT"}), oir.DataType.INT64)
            y = b.op("Where", [neg, b.op("Sub", [minus_one, r]), r])
        if signed and et.bits < 64 and direction == "LEFT":
            y = _wrap_signed(ctx, b.cast(y, oir.DataType.INT64), et.bits)
        return b.cast(y, onnx_dtype(et))

    return convert


def _wrap_signed(ctx: LayerContext, y: oir.Value, bits: int) -> oir.Value:
    """An int64 reduced modulo 2^bits into the signed range (explicit, not left to a narrowing Cast)."""
    b = ctx.b
    m, half = b.const(1 << bits, np.int64), b.const(1 << (bits - 1), np.int64)
    low = b.op("Mod", [b.op("Add", [y, half]), m])
    return b.op("Sub", [low, half])


for _ir_type, _direction in (("BitwiseLeftShift", "LEFT"), ("BitwiseRightShift", "RIGHT")):
    register_made(_shift(_direction), _ir_type, "opset15")

"""Element-wise arithmetic, comparison and logical ops with OpenVINO's broadcast modes, and the unary float functions
(Exp, Log, trigonometric and hyperbolic functions and their inverses, Sigmoid, Tanh)."""

from __future__ import annotations

import onnx_ir as oir

from ir2onnx.translate.builder import onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.precision import float_function, in_f32, saturating
from ir2onnx.translate.registry import converter, register_made


def broadcast_inputs(ctx: LayerContext, a: oir.Value, b: oir.Value) -> tuple[oir.Value, oir.Value]:
    """Apply `auto_broadcast`: numpy/none map to ONNX's multidirectional broadcast; pdpd aligns b at `axis`."""
    mode = ctx.attr_str("auto_broadcast", "numpy").lower()
    if mode in ("numpy", "none", "explicit"):
        return a, b
    if mode == "pdpd":
        axis = ctx.attr_int("axis", -1)
        ra, rb = ctx.input_rank(0), ctx.input_rank(1)
        if axis == -1:
            axis = ra - rb
        trailing = ra - axis - rb
        if trailing > 0:
            b = ctx.b.unsqueeze(b, list(range(rb, rb + trailing)))
        return a, b
    raise ctx.error(f"auto_broadcast='{mode}' is not supported")


def _binary(onnx_op: str):  # type: ignore[no-untyped-def]
    def convert(ctx: LayerContext) -> oir.Value:
        a, b = broadcast_inputs(ctx, ctx.inputs[0], ctx.inputs[1])
        return ctx.b.op(onnx_op, [a, b])

    return convert


def _saturating_binary(onnx_op: str):  # type: ignore[no-untyped-def]
    def convert(ctx: LayerContext) -> oir.Value:
        a, b = broadcast_inputs(ctx, ctx.inputs[0], ctx.inputs[1])
        return saturating(ctx, ctx.input_type(0), [a, b], lambda ab: ctx.b.op(onnx_op, ab))

    return convert


for _ir_type, _onnx_op in (("Add", "Add"), ("Multiply", "Mul"), ("Subtract", "Sub")):
    register_made(_saturating_binary(_onnx_op), _ir_type, "opset1")


@converter("Power", "opset1")
def power(ctx: LayerContext) -> oir.Value:
    """ONNX Pow takes floats, int32 and int64: 16-bit and unsigned integers are raised in int64 and wrapped back;
    8-bit ones saturate (see precision.py)."""
    a, b = broadcast_inputs(ctx, ctx.inputs[0], ctx.inputs[1])
    et = ctx.input_type(0)
    if et.name in ("i16", "u16", "u32", "u64"):
        y = ctx.b.op("Pow", [ctx.b.cast(a, oir.DataType.INT64), ctx.b.cast(b, oir.DataType.INT64)])
        return ctx.b.cast(y, onnx_dtype(et))
    return saturating(ctx, et, [a, b], lambda ab: ctx.b.op("Pow", ab))


for _ir_type, _onnx_op in (("Maximum", "Max"), ("Minimum", "Min")):
    register_made(_binary(_onnx_op), _ir_type, "opset1")


for _ir_type, _onnx_op in (
    ("Equal", "Equal"), ("Less", "Less"), ("LessEqual", "LessOrEqual"), ("Greater", "Greater"),
    ("GreaterEqual", "GreaterOrEqual"), ("LogicalAnd", "And"), ("LogicalOr", "Or"), ("LogicalXor", "Xor"),
    ("Xor", "Xor"),  # opset1's legacy spelling of LogicalXor
):
    register_made(_binary(_onnx_op), _ir_type, "opset1")


@converter("NotEqual", "opset1")
def not_equal(ctx: LayerContext) -> oir.Value:
    a, b = broadcast_inputs(ctx, ctx.inputs[0], ctx.inputs[1])
    return ctx.b.op("Not", [ctx.b.op("Equal", [a, b])])


@converter("SquaredDifference", "opset1")
@in_f32
def squared_difference(ctx: LayerContext) -> oir.Value:
    a, b = broadcast_inputs(ctx, ctx.inputs[0], ctx.inputs[1])

    def square(ab: list[oir.Value]) -> oir.Value:
        d = ctx.b.op("Sub", ab)
        return ctx.b.op("Mul", [d, d])

    return saturating(ctx, ctx.input_type(0), [a, b], square)


@converter("Divide", "opset1")
def divide(ctx: LayerContext) -> oir.Value:
    """ONNX Div truncates integers, as OpenVINO's CPU plugin does (its spec asks for floor with m_pythondiv)."""
    a, b = broadcast_inputs(ctx, ctx.inputs[0], ctx.inputs[1])
    return ctx.b.op("Div", [a, b])


@converter("Select", "opset1")
def select(ctx: LayerContext) -> oir.Value:
    mode = ctx.attr_str("auto_broadcast", "numpy").lower()
    if mode not in ("numpy", "none"):
        raise ctx.error(f"Select with auto_broadcast='{mode}' is not supported")
    return ctx.b.op("Where", ctx.inputs[:3])


@converter("LogicalNot", "opset1")
def logical_not(ctx: LayerContext) -> oir.Value:
    return ctx.b.op("Not", [ctx.inputs[0]])


def _unary(onnx_op: str):  # type: ignore[no-untyped-def]
    def convert(ctx: LayerContext) -> oir.Value:
        return ctx.b.op(onnx_op, [ctx.inputs[0]])

    return convert


for _ir_type, _onnx_op in (("Negative", "Neg"), ("Abs", "Abs"), ("Sign", "Sign")):
    register_made(_unary(_onnx_op), _ir_type, "opset1")


def _float_unary(onnx_op: str):  # type: ignore[no-untyped-def]
    """An ONNX op defined for floats only; integer inputs as OpenVINO computes them (see precision.py)."""

    def convert(ctx: LayerContext) -> oir.Value:
        return float_function(ctx, ctx.inputs[0], ctx.input_type(0), lambda x: ctx.b.op(onnx_op, [x]))

    return convert


def _integral_identity(onnx_op: str):  # type: ignore[no-untyped-def]
    """Floor/Ceil: integers are their own floor and ceiling (ONNX defines the ops for floats only)."""

    def convert(ctx: LayerContext) -> oir.Value:
        if not ctx.input_type(0).is_float:
            return ctx.b.identity(ctx.inputs[0])
        return ctx.b.op(onnx_op, [ctx.inputs[0]])

    return convert


register_made(_integral_identity("Floor"), "Floor", "opset1")
register_made(_integral_identity("Ceil"), "Ceiling", "opset1")
for _ir_type, _onnx_op in (("Exp", "Exp"), ("Log", "Log"), ("Sqrt", "Sqrt"), ("Erf", "Erf"), ("Sin", "Sin"),
                           ("Cos", "Cos")):
    register_made(_float_unary(_onnx_op), _ir_type, "opset1")


@converter("FloorMod", "opset1")
@in_f32
def floor_mod(ctx: LayerContext) -> oir.Value:
    """Result has the divisor's sign (ONNX Mod with fmod=0; floats need fmod=1 in ONNX, so emulate)."""
    a, b = broadcast_inputs(ctx, ctx.inputs[0], ctx.inputs[1])
    if ctx.input_type(0).numpy.kind in "iu":
        return ctx.b.op("Mod", [a, b])
    return ctx.b.op("Sub", [a, ctx.b.op("Mul", [ctx.b.op("Floor", [ctx.b.op("Div", [a, b])]), b])])


@converter("Mod", "opset1")
def mod(ctx: LayerContext) -> oir.Value:
    """Result has the dividend's sign: ONNX Mod with fmod=1."""
    a, b = broadcast_inputs(ctx, ctx.inputs[0], ctx.inputs[1])
    return ctx.b.op("Mod", [a, b], {"fmod": 1})


@converter("Round", "opset5")
@in_f32
def round_(ctx: LayerContext) -> oir.Value:
    """half_to_even is ONNX Round; half_away_from_zero is sign(x) * floor(|x| + 0.5)."""
    x = ctx.inputs[0]
    if ctx.input_type(0).numpy.kind in "iub":
        return ctx.b.op("Identity", [x])
    if ctx.attr_str("mode", "half_to_even").lower() == "half_to_even":
        return ctx.b.op("Round", [x])
    half = ctx.b.const(0.5, ctx.input_type(0).numpy)
    mag = ctx.b.op("Floor", [ctx.b.op("Add", [ctx.b.op("Abs", [x]), half])])
    return ctx.b.op("Mul", [ctx.b.op("Sign", [x]), mag])


for _ir_type, _onnx_op in (("Tan", "Tan"), ("Asin", "Asin"), ("Acos", "Acos"), ("Atan", "Atan"), ("Sinh", "Sinh"),
                           ("Cosh", "Cosh"), ("Sigmoid", "Sigmoid"), ("Tanh", "Tanh")):
    register_made(_float_unary(_onnx_op), _ir_type, "opset1")
for _ir_type, _onnx_op in (("Acosh", "Acosh"), ("Asinh", "Asinh"), ("Atanh", "Atanh")):
    register_made(_float_unary(_onnx_op), _ir_type, "opset4")

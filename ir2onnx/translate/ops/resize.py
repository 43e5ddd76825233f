"""Interpolate (1, 4, 11).

Interpolate-1 is read as OpenVINO reads it (as Interpolate-4 with sizes, nearest_mode simple, and an asymmetric,
align_corners or half_pixel coordinate mode chosen from align_corners, the padding and the axes); mode 'area' is
refused (OpenVINO cannot run it either).

ONNX Resize computes nearest (four of the five nearest modes), linear_onnx, linear and cubic with the four
coordinate modes ONNX shares; scales, sizes and axes may then be run-time values. OpenVINO's CPU plugin ignores
`antialias` for linear (its reference implementation widens the triangle filter instead): ir2onnx follows the
plugin. Nearest on types onnxruntime cannot resize (i64) resizes the elements' flat positions and gathers.
Everything else (tf_half_pixel_for_nn, nearest_mode simple, bilinear/bicubic_pillow (which the plugin computes with
half_pixel coordinates whatever the attribute says)) is computed from per-axis source indices (Gather) or weight
matrices (MatMul), which needs the input and output sizes at conversion time.

The plugin computes f64, f16 and bf16 in f32 and casts back, and integers (but for nearest, a copy) in f32, then
rounds half to even and saturates: the converted graph does the same around Resize or the per-axis form. Pillow
modes on 8-bit integers round and saturate after each axis too, from the last axis to the first (as Pillow does).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.ir.element_types import ELEMENT_TYPES, ElementType
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.precision import float_function
from ir2onnx.translate.ops.resize_weights import AxisSpec, nearest_indices, pillow_matrix, weight_matrix
from ir2onnx.translate.registry import converter

_ONNX_COORDS = {"half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners"}
_ONNX_NEAREST = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}
_MODES = {"nearest", "linear", "linear_onnx", "cubic", "bilinear_pillow", "bicubic_pillow"}
_COORDS = _ONNX_COORDS | {"tf_half_pixel_for_nn"}
_NEARESTS = _ONNX_NEAREST | {"simple"}
_RESIZE_TYPES = {"nearest": {"f32", "f16", "i32", "i8", "u8"}, "other": {"f32", "f16"}}
_INTS = {"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"}
_SIZE_EPS = 1e-5  # OpenVINO's output length in scales mode: floor(length * scale + 1e-5)


class _Attrs:
    def __init__(self, ctx: LayerContext) -> None:
        rank = ctx.input_rank(0)
        self.v1 = ctx.version == 1
        if self.v1:
            self._read_v1(ctx, rank)
        else:
            self.mode = ctx.attr_str("mode").lower()
            self.coord = ctx.attr_str("coordinate_transformation_mode", "half_pixel").lower()
            self.nearest = ctx.attr_str("nearest_mode", "round_prefer_floor").lower()
            self.by_scales = ctx.attr_str("shape_calculation_mode").lower() == "scales"
            self.cube_coeff = ctx.attr_float("cube_coeff", -0.75)
            self.pads_begin = (ctx.attr_ints("pads_begin", []) + [0] * rank)[:rank]
            self.pads_end = (ctx.attr_ints("pads_end", []) + [0] * rank)[:rank]
        if self.mode not in _MODES or self.coord not in _COORDS or self.nearest not in _NEARESTS:
            raise ctx.error(f"Interpolate mode={self.mode}, coordinate_transformation_mode={self.coord}, "
                            f"nearest_mode={self.nearest} is not supported")

    def _read_v1(self, ctx: LayerContext, rank: int) -> None:
        mode = ctx.attr_str("mode").lower()
        self.axes_attr = [a % rank for a in ctx.attr_ints("axes")]
        self.pads_begin = (ctx.attr_ints("pads_begin", []) + [0] * rank)[:rank]
        self.pads_end = (ctx.attr_ints("pads_end", []) + [0] * rank)[:rank]
        if mode == "linear":
            if rank > 5:
                raise ctx.error("Interpolate-1 linear supports inputs up to rank 5")
            mode = "linear_onnx" if rank < 5 else "linear"
        elif mode not in ("nearest", "cubic", "linear_onnx"):
            raise ctx.error(f"Interpolate-1 mode '{mode}' is not supported (OpenVINO cannot run it either)")
        self.mode, self.nearest, self.by_scales, self.cube_coeff = mode, "simple", False, -0.75
        self.coord = "asymmetric"
        if ctx.attr_bool("align_corners", False):
            self.coord = "align_corners"
        elif mode in ("linear", "linear_onnx") and not any(self.pads_begin + self.pads_end) and \
                not (rank == 4 and sorted(self.axes_attr) == [2, 3]):
            self.coord = "half_pixel"


def _float_vector(ctx: LayerContext, i: int) -> oir.Value:
    return ctx.b.reshape(ctx.b.cast(ctx.inputs[i], oir.DataType.FLOAT), [-1])


def _int_vector(ctx: LayerContext, i: int) -> oir.Value:
    return ctx.b.reshape(ctx.b.cast(ctx.inputs[i], oir.DataType.INT64), [-1])


@converter("Interpolate", "opset1", "opset4", "opset11")
def interpolate(ctx: LayerContext) -> oir.Value:
    b = ctx.b
    at = _Attrs(ctx)
    rank = ctx.input_rank(0)
    x = ctx.inputs[0]
    # inputs: which holds the target, which the axes
    if at.v1:
        target_i, axes_i = 1, None
    elif ctx.version == 4:
        target_i, axes_i = (2 if at.by_scales else 1), (3 if len(ctx.inputs) > 3 else None)
    else:
        target_i, axes_i = 1, (2 if len(ctx.inputs) > 2 else None)
    if at.v1:
        axes_c: np.ndarray | None = np.asarray(at.axes_attr, np.int64)
    elif axes_i is None:
        axes_c = np.arange(rank, dtype=np.int64)
    else:
        axes_c = ctx.const(axes_i)
    axes = None if axes_c is None else [int(a) % rank for a in axes_c.reshape(-1)]
    if any(at.pads_begin + at.pads_end):
        x = b.op("Pad", [x, b.i64(at.pads_begin + at.pads_end)])
    target = ctx.const(target_i)
    in_dims = _static_dims(ctx, at)
    et = ctx.input_type(0)
    via_f32 = _via_float32(at, et)
    ct = ELEMENT_TYPES["f32"] if via_f32 else et
    kind = "nearest" if at.mode == "nearest" else "other"
    resize_ok = ct.name in _RESIZE_TYPES[kind] and at.coord in _ONNX_COORDS and \
        (at.mode == "nearest" and at.nearest in _ONNX_NEAREST or at.mode in ("linear", "linear_onnx", "cubic"))
    plan = None
    if axes is not None and target is not None and in_dims is not None:
        plan = _static_plan(at, axes, target.reshape(-1), in_dims)
    if not resize_ok and plan is None and at.mode == "nearest" and at.nearest in _ONNX_NEAREST and \
            at.coord in _ONNX_COORDS:
        # nearest copies elements: Resize the elements' flat positions (int32) and gather
        flat = b.reshape(b.cast(b.op("Range", [b.i64(0), b.op("Size", [x]), b.i64(1)]), oir.DataType.INT32),
                         b.shape_of(x))
        src = _resize(ctx, at, flat, rank, axes, axes_i, target_i, plan)
        return b.op("Gather", [b.reshape(x, [-1]), src], {"axis": 0})
    if not resize_ok and plan is None:
        raise ctx.error(f"Interpolate mode={at.mode}, coordinate_transformation_mode={at.coord}, "
                        f"nearest_mode={at.nearest} on {et.name} has no ONNX Resize equivalent; its per-axis form "
                        "needs constant axes, target and input dims")

    def compute(v: oir.Value) -> oir.Value:
        if resize_ok:
            return _resize(ctx, at, v, rank, axes, axes_i, target_i, plan)
        if et.name in _INTS and et.bits == 8 and at.mode in ("bilinear_pillow", "bicubic_pillow"):
            # in f64: a pass's sum can lie within an f32 step of a tie, where onnxruntime's f32 MatMul and the
            # plugin's sum may round apart
            wide = b.cast(v, oir.DataType.DOUBLE)
            y = _separable(ctx, at, wide, plan, np.dtype(np.float64), et)  # type: ignore[arg-type]
            return b.cast(y, oir.DataType.FLOAT)
        return _separable(ctx, at, v, plan, ct.numpy)  # type: ignore[arg-type]

    if not via_f32:
        return compute(x)
    if et.name == "f64":
        return b.cast(compute(b.cast(x, oir.DataType.FLOAT)), oir.DataType.DOUBLE)
    return float_function(ctx, x, et, compute)  # f16/bf16 cast back; integers rounded half to even, saturated


def _via_float32(at: _Attrs, et: ElementType) -> bool:
    """Whether the plugin computes this Interpolate in f32 and converts the result back.

    It does for f64, f16 and bf16 in every mode, and for integers in every mode but nearest (which copies
    elements; a float round trip would lose large integers).
    """
    return et.name in ("f64", "f16", "bf16") or et.name in _INTS and at.mode != "nearest"


def _static_dims(ctx: LayerContext, at: _Attrs) -> list[int] | None:
    dims = ctx.input_dims(0)
    if ctx.b.parent is not None and ctx.const(0) is None:
        return None
    if dims is None or any(d is None or d < 0 for d in dims):
        return None
    return [int(d) + pb + pe for d, pb, pe in zip(dims, at.pads_begin, at.pads_end)]


def _static_plan(at: _Attrs, axes: list[int], target: np.ndarray, in_dims: list[int]) -> list[tuple[int, int, int, float]]:
    """(axis, input length, output length, scale) per interpolated axis, as OpenVINO computes them."""
    plan = []
    for a, t in zip(axes, target):
        n = in_dims[a]
        if at.by_scales:
            s = float(np.float32(t))
            m = int(np.floor(n * s + _SIZE_EPS))
        else:
            m = int(t)
            s = float(np.float32(m) / np.float32(n)) if n else 1.0
        plan.append((a, n, m, s))
    return plan


def _resize(ctx: LayerContext, at: _Attrs, x: oir.Value, rank: int, axes: list[int] | None, axes_i: int | None,
            target_i: int, plan: list[tuple[int, int, int, float]] | None) -> oir.Value:
    """ONNX Resize with full-rank scales or sizes; run-time targets and axes are scattered into place."""
    b = ctx.b
    mode = {"nearest": "nearest", "cubic": "cubic"}.get(at.mode, "linear")
    attrs: dict[str, object] = {"mode": mode, "coordinate_transformation_mode": at.coord}
    if at.mode == "nearest":
        attrs["nearest_mode"] = at.nearest
    if at.mode == "cubic":
        attrs["cubic_coeff_a"] = at.cube_coeff
    axes_v = b.i64(axes) if axes is not None else _int_vector(ctx, axes_i)  # type: ignore[arg-type]
    if at.by_scales:
        if plan is not None:
            # OpenVINO keeps an axis whose length does not change, whatever its scale
            scales = np.ones(rank, np.float32)
            for a, n, m, s in plan:
                scales[a] = 1.0 if m == n else s
            scales_v = b.const(scales)
        else:
            scales_v = b.op("ScatterElements", [b.const(np.ones(rank, np.float32)), axes_v, _float_vector(ctx, target_i)],
                            {"axis": 0})
        return b.op("Resize", [x, None, scales_v], attrs)  # type: ignore[list-item]
    sizes = b.op("ScatterElements", [b.shape_of(x), axes_v, _int_vector(ctx, target_i)], {"axis": 0})
    return b.op("Resize", [x, None, None, sizes], attrs)  # type: ignore[list-item]


def _separable(ctx: LayerContext, at: _Attrs, x: oir.Value, plan: list[tuple[int, int, int, float]],
               dtype: np.dtype, passes_in: ElementType | None = None) -> oir.Value:
    """Per axis: Gather of source indices (nearest) or MatMul with a weight matrix. With `passes_in` (pillow modes
    on 8-bit integers) the plugin goes from the last axis to the first and rounds half to even and saturates
    into that type after each axis, as Pillow does."""
    b = ctx.b
    if passes_in is not None:
        plan = sorted(plan, reverse=True)
    rank = ctx.input_rank(0)
    spec = AxisSpec(at.mode, at.coord, at.nearest, False, at.cube_coeff)
    if at.mode != "nearest" and dtype.kind != "f":
        raise ctx.error(f"Interpolate {at.mode} on integers is not supported")
    for a, n, m, s in plan:
        if at.mode == "nearest":
            if m == n:
                continue
            x = b.op("Gather", [x, b.i64(nearest_indices(n, m, s, spec).tolist())], {"axis": a})
            continue
        if m == n and at.mode in ("linear", "linear_onnx", "cubic"):
            continue
        if at.mode in ("bilinear_pillow", "bicubic_pillow"):
            # the plugin scales pillow modes by output / input length and half_pixel coordinates, whatever is given
            w = pillow_matrix(n, m, float(np.float32(m) / np.float32(n)), "half_pixel", at.mode == "bicubic_pillow")
        else:
            w = weight_matrix(n, m, s, spec, False)
        wt = b.const(np.ascontiguousarray(w.T).astype(dtype))
        if a == rank - 1:
            x = b.op("MatMul", [x, wt])
        else:
            perm = list(range(rank))
            perm[a], perm[-1] = perm[-1], perm[a]
            x = b.op("Transpose", [b.op("MatMul", [b.op("Transpose", [x], {"perm": perm}), wt])], {"perm": perm})
        if passes_in is not None:
            info = np.iinfo(passes_in.numpy)
            lo, hi = b.const(np.asarray(info.min, dtype)), b.const(np.asarray(info.max, dtype))
            x = b.op("Clip", [b.op("Round", [x]), lo, hi])
    return x if x is not ctx.inputs[0] else b.identity(x)

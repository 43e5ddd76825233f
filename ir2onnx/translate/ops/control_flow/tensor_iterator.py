"""TensorIterator-1 -> ONNX Scan (sliced inputs) or ONNX Loop (no sliced input).

OpenVINO's CPU plugin (the judge) takes a sliced input's chunks from the start of the axis (forward) or from its end
(reverse); `start`/`end` only set the iteration count: with negative values counted as `dim + 1 + value`, the count is
`(dst - src) // |stride|` where (src, dst) = (start, end), swapped when stride < 0. Each chunk holds `part_size` elements
on the axis and keeps the axis in the body. Concatenated outputs are written forward, or from the end when stride < 0.
"""

from __future__ import annotations

import onnx_ir as oir

from ir2onnx.ir.element_types import ElementType
from ir2onnx.ir.model import PortMapEntry
from ir2onnx.translate.builder import onnx_dtype
from ir2onnx.translate.context import LayerContext, set_value_type, value_type
from ir2onnx.translate.graph import body_output, declare_type
from ir2onnx.translate.ops.control_flow.common import dim, merge_axes, split_axis
from ir2onnx.translate.ops.control_flow.loop import emit_loop
from ir2onnx.translate.ops.control_flow.port_map import (
    BodyInput,
    PortMapPlan,
    analyse,
    bind_unmapped,
    check_chunking,
    complete_outputs,
    param_dims,
    param_rank,
    param_type,
    result_rank,
)
from ir2onnx.translate.registry import converter


def _norm(v: int) -> tuple[int, int]:
    """An index as (coefficient of dim, constant): negative indices count from `dim + 1`."""
    return (1, v + 1) if v < 0 else (0, v)


def iteration_span(e: PortMapEntry) -> tuple[int, int]:
    """The number of elements the iterations cover on the axis, as `coef * dim + const`."""
    src, dst = (e.end, e.start) if e.stride < 0 else (e.start, e.end)
    (cs, ks), (cd, kd) = _norm(src), _norm(dst)
    return cd - cs, kd - ks


def prepare_sliced(ctx: LayerContext, x: oir.Value, e: PortMapEntry, axis: int) -> oir.Value:
    """Cut x to the chunks the iterations visit and split `axis` into (count, part_size) for Scan."""
    b = ctx.b
    coef, const = iteration_span(e)
    if (coef, const) != (1, 0):
        d = dim(b, x, axis)
        span = b.op("Add", [b.op("Mul", [d, b.i64([coef])]), b.i64([const])]) if coef else b.i64([const])
        count = b.op("Div", [b.op("Max", [span, b.i64([0])]), b.i64([abs(e.stride)])])
        take = b.op("Mul", [count, b.i64([e.part_size])])
        if e.stride > 0:
            x = b.slice(x, b.i64([0]), take, [axis])
        else:
            x = b.slice(x, b.op("Sub", [d, take]), d, [axis])
    return split_axis(b, x, axis, e.part_size)


@converter("TensorIterator", "opset1")
def tensor_iterator(ctx: LayerContext) -> list[oir.Value]:
    plan = analyse(ctx)
    if not plan.of_kind("sliced"):
        return _as_loop(ctx, plan)
    return _as_scan(ctx, plan)


def _as_scan(ctx: LayerContext, plan: PortMapPlan) -> list[oir.Value]:
    b = ctx.b
    cb = b.child()
    bindings: dict[str, oir.Value] = {}
    merged = plan.of_kind("merged")
    sliced = plan.of_kind("sliced")

    def body_input(inp: BodyInput) -> oir.Value:
        et = param_type(inp.param)
        v = cb.add_input(cb.names.fresh(f"{ctx.layer.name}/{inp.param.name or inp.param.id}"), _dtype(ctx, et),
                         param_dims(inp.param))
        set_value_type(v, et)
        bindings[inp.param.id] = v
        return v

    for inp in merged:
        body_input(inp)
    scan_in: list[oir.Value] = []
    in_axes: list[int] = []
    in_dirs: list[int] = []
    for inp in sliced:
        e = inp.entry
        check_chunking(ctx, e)
        assert inp.outer is not None
        axis = ctx.normalize_axis(e.axis or 0, ctx.input_rank(e.external_port_id))
        scan_in.append(prepare_sliced(ctx, inp.outer, e, axis))
        in_axes.append(axis)
        in_dirs.append(1 if e.stride < 0 else 0)
        body_input(inp)
    for inp in plan.of_kind("invariant"):
        assert inp.outer is not None
        bindings[inp.param.id] = inp.outer  # outer-scope capture: no per-iteration copy
    bind_unmapped(ctx, plan.body, bindings)
    results = ctx.translator.translate(plan.body.graph, cb, bindings)

    taken: set[oir.Value] = set()
    body_outs: list[oir.Value] = []
    for inp in merged:
        assert inp.back_edge_result is not None
        v = body_output(cb, results[inp.back_edge_result.id], taken)
        declare_type(v, param_type(inp.param), param_rank(inp.param))
        body_outs.append(v)
    state_of = {inp.back_edge_result.id: i for i, inp in enumerate(merged) if inp.back_edge_result is not None}
    # Scan outputs: concatenated outputs, then last values of Results that carry no state (stacked, last taken).
    stacked = [o for o in plan.outputs if o.kind == "concat" or o.result.id not in state_of]
    out_axes: list[int] = []
    out_dirs: list[int] = []
    for o in stacked:
        v = body_output(cb, results[o.result.id], taken)
        rank = result_rank(o.result)
        declare_type(v, value_type(results[o.result.id]), rank)
        body_outs.append(v)
        if o.kind == "concat":
            out_axes.append(ctx.normalize_axis(o.entry.axis or 0, rank))
            out_dirs.append(1 if o.entry.stride < 0 else 0)
        else:
            out_axes.append(0)
            out_dirs.append(0)
    body = cb.build(body_outs, b.names.fresh(f"{ctx.layer.name}/body"))
    outs = b.op_multi(
        "Scan",
        [inp.outer for inp in merged] + scan_in,  # type: ignore[misc]
        {
            "body": body,
            "num_scan_inputs": len(scan_in),
            "scan_input_axes": in_axes,
            "scan_input_directions": in_dirs,
            "scan_output_axes": out_axes or None,
            "scan_output_directions": out_dirs or None,
        },
        outputs=len(body_outs),
    )
    finals, scans = outs[: len(merged)], outs[len(merged):]
    result: list[oir.Value | None] = [None] * len(ctx.layer.outputs)
    for o in plan.outputs:
        if o.kind == "last" and o.result.id in state_of:
            result[o.index] = finals[state_of[o.result.id]]
    for o, y, axis in zip(stacked, scans, out_axes):
        dims = list(ctx.layer.outputs[o.index].dims)
        if o.kind == "concat" and result_rank(o.result) and (y.shape is None or len(y.shape) == len(dims) + 1):
            dims[axis:axis + 1] = [None, o.entry.part_size]  # the IR's static dims (also for no step: empty_inputs.py)
            declare_type(y, value_type(results[o.result.id]), len(dims))
            y.shape = oir.Shape(dims)
        if o.kind == "concat":  # a scalar body value is concatenated as shape [1]: the stacked [N] is the result
            result[o.index] = merge_axes(b, y, axis) if result_rank(o.result) else y
        else:
            last = b.op("Gather", [y, b.i64(-1)], {"axis": 0})
            result[o.index] = last
    return complete_outputs(ctx, result)


def _as_loop(ctx: LayerContext, plan: PortMapPlan) -> list[oir.Value]:
    """No sliced input: the iteration count comes from the first concatenated output's declared size; with no
    concatenated output either, OpenVINO runs the body once."""
    b = ctx.b
    concat = plan.outputs_of_kind("concat")
    if not concat:
        return emit_loop(ctx, plan, b.i64(1), b.const(True))
    o = concat[0]
    rank = len(ctx.layer.outputs[o.index].dims)
    axis = ctx.normalize_axis(o.entry.axis or 0, rank)
    size = ctx.layer.outputs[o.index].dims[axis]
    if size is None:
        raise ctx.error("TensorIterator without sliced inputs needs a static size on its concatenated output axis")
    coef, const = iteration_span(o.entry)
    count = max(coef * size + const, 0) // abs(o.entry.stride)
    return emit_loop(ctx, plan, b.i64(count), b.const(True))


def _dtype(ctx: LayerContext, et: ElementType | None) -> oir.DataType:
    if et is None:
        raise ctx.error("a body Parameter has no element type")
    return onnx_dtype(et)

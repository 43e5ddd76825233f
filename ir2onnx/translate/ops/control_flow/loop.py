"""Loop-5 -> ONNX Loop (also used for TensorIterators that have no sliced input).

Inputs: trip count (negative = unbounded; a run-time negative becomes INT64_MAX) and the initial condition. Body:
ONNX gives (iteration number, condition, carried values...) and expects (condition, carried values..., scan values...).
Merged inputs are carried values; invariant inputs are outer-scope captures; sliced inputs are cut per iteration from
the outer tensor; the current-iteration Parameter gets the iteration number in its own type and rank. ONNX only returns
final values of carried values, so a last-value output of a Result without back edge is carried too (its initial value,
returned after zero iterations, is zeros as OpenVINO's CPU plugin returns). ONNX stacks scan values on a new axis 0;
OpenVINO concatenates them on an existing axis: the stacked axis is moved there and merged with it.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.ir.element_types import ELEMENT_TYPES
from ir2onnx.ir.model import PortMapEntry
from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext, mark_runtime_dims, set_value_type, value_type
from ir2onnx.translate.graph import body_output, declare_type
from ir2onnx.translate.ops.control_flow.common import dim, merge_axes, move_axis0_to, reverse_axis
from ir2onnx.translate.ops.control_flow.port_map import (
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

_INT64_MAX = np.iinfo(np.int64).max


@converter("Loop", "opset5")
def loop(ctx: LayerContext) -> list[oir.Value]:
    plan = analyse(ctx)
    if plan.condition is None:
        raise ctx.error("Loop has no port_map output with purpose=\"execution_condition\"")
    return emit_loop(ctx, plan, _trip_count(ctx), _initial_condition(ctx))


def _scalar(ctx: LayerContext, i: int, to: oir.DataType) -> oir.Value:
    """Input i as a scalar of type `to` (OpenVINO accepts rank 0 or 1 with one element)."""
    b = ctx.b
    x = ctx.inputs[i]
    if onnx_dtype(ctx.input_type(i)) != to:
        x = b.cast(x, to)
    return b.reshape(x, [])


def _trip_count(ctx: LayerContext) -> oir.Value | None:
    b = ctx.b
    c = ctx.const(0)
    if c is not None:
        t = int(np.asarray(c).reshape(-1)[0])
        return None if t < 0 else b.i64(t)
    x = _scalar(ctx, 0, oir.DataType.INT64)
    return b.op("Where", [b.op("Less", [x, b.i64(0)]), b.i64(_INT64_MAX), x])


def _initial_condition(ctx: LayerContext) -> oir.Value:
    c = ctx.const(1)
    if c is not None:
        return ctx.b.const(bool(np.asarray(c).reshape(-1)[0]))
    return _scalar(ctx, 1, oir.DataType.BOOL)


def emit_loop(ctx: LayerContext, plan: PortMapPlan, trip: oir.Value | None, cond: oir.Value) -> list[oir.Value]:
    """Emit an ONNX Loop for `plan`; returns the layer's outputs in port order."""
    b = ctx.b
    cb = b.child()
    name = ctx.layer.name or f"loop_{ctx.layer.id}"
    it = cb.add_input(cb.names.fresh(f"{name}/iteration"), oir.DataType.INT64, [])
    cond_in = cb.add_input(cb.names.fresh(f"{name}/condition"), oir.DataType.BOOL, [])
    bindings: dict[str, oir.Value] = {}
    merged = plan.of_kind("merged")
    for inp in merged:
        et = param_type(inp.param)
        if et is None:
            raise ctx.error(f"body {inp.param.where()} has no element type")
        v = cb.add_input(cb.names.fresh(f"{name}/{inp.param.name or inp.param.id}"), onnx_dtype(et),
                         param_dims(inp.param))
        set_value_type(v, et)
        bindings[inp.param.id] = v
    for inp in plan.of_kind("current_iteration"):
        et = param_type(inp.param) or ELEMENT_TYPES["i64"]
        v = it if et.name == "i64" else cb.cast(it, onnx_dtype(et))
        if param_rank(inp.param):
            v = cb.unsqueeze(v, [0])
        set_value_type(v, et)
        bindings[inp.param.id] = v
    for inp in plan.of_kind("sliced"):
        bindings[inp.param.id] = _slice_per_iteration(ctx, cb, it, inp.outer, inp.entry)  # type: ignore[arg-type]
    for inp in plan.of_kind("invariant"):
        assert inp.outer is not None
        bindings[inp.param.id] = inp.outer
    bind_unmapped(ctx, plan.body, bindings)
    results = ctx.translator.translate(plan.body.graph, cb, bindings)

    taken: set[oir.Value] = set()
    if plan.condition is not None:
        c = results[plan.condition.id]
        et = value_type(c)
        if et is None or et.name != "boolean":
            c = cb.cast(c, oir.DataType.BOOL)
        if result_rank(plan.condition) != 0:
            c = cb.reshape(c, [])
        cond_out = body_output(cb, c, taken)
    else:
        cond_out = body_output(cb, cond_in, taken)
    declare_type(cond_out, ELEMENT_TYPES["boolean"], 0)
    body_outs = [cond_out]
    initial: list[oir.Value] = []
    for inp in merged:
        assert inp.back_edge_result is not None and inp.outer is not None
        v = body_output(cb, results[inp.back_edge_result.id], taken)
        declare_type(v, param_type(inp.param), param_rank(inp.param))
        body_outs.append(v)
        initial.append(inp.outer)
    state_of = {inp.back_edge_result.id: i for i, inp in enumerate(merged) if inp.back_edge_result is not None}
    # Last values of Results without back edge are carried too; a dummy body input receives the previous value.
    extra = [o for o in plan.outputs if o.kind == "last" and o.result.id not in state_of]
    for o in extra:
        v = results[o.result.id]
        et = value_type(v) or ctx.output_type(o.index)
        rank = result_rank(o.result)
        cb.add_input(cb.names.fresh(f"{name}/{o.result.name}_previous"), onnx_dtype(et), [None] * rank)
        out = body_output(cb, v, taken)
        declare_type(out, et, rank)
        body_outs.append(out)
        dims = ctx.layer.outputs[o.index].dims
        zeros = np.zeros([d if d is not None else 0 for d in dims], dtype=et.numpy)
        initial.append(b.const(zeros))
    concat = plan.outputs_of_kind("concat")
    for o in concat:
        v = body_output(cb, results[o.result.id], taken)
        declare_type(v, value_type(results[o.result.id]), result_rank(o.result))
        body_outs.append(v)
    body = cb.build(body_outs, b.names.fresh(f"{name}/body"))
    outs = b.op_multi("Loop", [trip, cond, *initial], {"body": body}, outputs=len(body_outs) - 1)
    # the outputs' types and ranks, as the body declares them (ONNX inference leaves a carried value whose shape
    # changes between iterations without any): the passes that fuse a loop reading another's output need the rank
    for i, (out, inner) in enumerate(zip(outs, body_outs[1:])):
        if isinstance(inner.type, oir.TensorType) and inner.shape is not None:
            out.type, out.shape = inner.type, oir.Shape([None] * (len(inner.shape) + (i >= len(initial))))
    carried = outs[: len(initial)]
    scans = outs[len(initial):]
    result: list[oir.Value | None] = [None] * len(ctx.layer.outputs)
    for o in plan.outputs:
        if o.kind == "last":
            pos = state_of[o.result.id] if o.result.id in state_of else len(merged) + extra.index(o)
            result[o.index] = carried[pos]
            dims = ctx.layer.outputs[o.index].dims
            if carried[pos].shape is not None and len(carried[pos].shape) == len(dims):
                carried[pos].shape = oir.Shape(dims)  # the IR's static dims (a Keras layer's length, for one)
    fixed = _runs_every_trip(plan, results, bindings, trip, cond)
    for o, y in zip(concat, scans):
        rank = result_rank(o.result)
        if o.entry.stride < 0:
            y = reverse_axis(b, y, 0)
        if rank == 0:  # a scalar body value is concatenated as shape [1]: the stacked [N] is the result
            result[o.index] = y if fixed else mark_runtime_dims(y, [0])
            continue
        axis = ctx.normalize_axis(o.entry.axis or 0, rank)
        result[o.index] = merge_axes(b, move_axis0_to(b, y, axis, rank + 1), axis)
        if not fixed:  # the IR's size there is not to be trusted (Model Optimizer wrote one iteration's)
            mark_runtime_dims(result[o.index], [axis])
    return complete_outputs(ctx, result)


def _runs_every_trip(plan: PortMapPlan, results: dict[str, oir.Value], bindings: dict[str, oir.Value],
                     trip: oir.Value | None, cond: oir.Value) -> bool:
    """The loop runs a constant trip count, whatever the data: a constant count, a constant true initial condition,
    and a body condition that is constant true or carries that initial one unchanged (OpenVINO's shape inference
    then gives the concatenated outputs static sizes too)."""
    if trip is None or trip.const_value is None or not _const_true(cond):
        return False
    if plan.condition is None:
        return True
    c = results[plan.condition.id]
    if _const_true(c):
        return True
    return any(bindings.get(inp.param.id) is c and inp.back_edge_result is plan.condition
               for inp in plan.of_kind("merged"))


def _const_true(v: oir.Value) -> bool:
    return v.const_value is not None and bool(np.all(v.const_value.numpy()))


def _slice_per_iteration(ctx: LayerContext, cb: GraphBuilder, it: oir.Value, outer: oir.Value,
                         e: PortMapEntry) -> oir.Value:
    """Chunk `it` of the outer tensor: from the start of the axis, or from its end when stride < 0."""
    check_chunking(ctx, e)
    b = ctx.b
    axis = ctx.normalize_axis(e.axis or 0, ctx.input_rank(e.external_port_id))
    p = cb.i64([e.part_size])
    offset = cb.op("Mul", [cb.reshape(it, [1]), p])
    if e.stride > 0:
        start = offset
    else:
        start = cb.op("Sub", [cb.op("Sub", [dim(b, outer, axis), offset]), p])  # dim computed outside the loop
    return cb.slice(outer, start, cb.op("Add", [start, p]), [axis])

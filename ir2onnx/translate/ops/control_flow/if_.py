"""If-8 -> ONNX If: each branch reads its inputs from the enclosing graph (outer-scope captures)."""

from __future__ import annotations

import onnx_ir as oir

from ir2onnx.ir.model import Body
from ir2onnx.translate.context import LayerContext, value_type
from ir2onnx.translate.graph import body_output, declare_type
from ir2onnx.translate.ops.control_flow.port_map import bind_unmapped
from ir2onnx.translate.registry import converter


def _branch(ctx: LayerContext, body: Body, name: str) -> oir.Graph:
    cb = ctx.b.child()
    bindings = {e.internal_layer_id: ctx.inputs[e.external_port_id] for e in body.inputs}
    bind_unmapped(ctx, body, bindings)
    results = ctx.translator.translate(body.graph, cb, bindings)
    by_id = body.graph.by_id
    taken: set[oir.Value] = set()
    outs = []
    for e in sorted((o for o in body.outputs if o.external_port_id >= 0), key=lambda o: o.external_port_id):
        v = body_output(cb, results[e.internal_layer_id], taken)
        declare_type(v, value_type(results[e.internal_layer_id]), len(by_id[e.internal_layer_id].inputs[0].dims))
        outs.append(v)
    if len(outs) != len(ctx.layer.outputs):
        raise ctx.error(f"the {name} branch maps {len(outs)} outputs, the layer has {len(ctx.layer.outputs)}")
    return cb.build(outs, ctx.b.names.fresh(f"{ctx.layer.name}/{name}"))


@converter("If", "opset8")
def if_(ctx: LayerContext) -> list[oir.Value]:
    then_body, else_body = ctx.layer.branches
    cond = ctx.inputs[0]
    if ctx.input_rank(0) != 0:
        cond = ctx.b.reshape(cond, [])
    then_g = _branch(ctx, then_body, "then")
    else_g = _branch(ctx, else_body, "else")
    return list(ctx.b.op_multi("If", [cond], {"then_branch": then_g, "else_branch": else_g},
                               outputs=len(ctx.layer.outputs)))

"""Gather family."""

from __future__ import annotations

import onnx_ir as ir

from ir2onnx.convert.context import LayerContext
from ir2onnx.convert.registry import converter


@converter("Gather", "opset1", "opset7", "opset8")
def gather(ctx: LayerContext) -> ir.Value:
    axis = int(ctx.require_const(2, "the axis").reshape(-1)[0])
    if ctx.attr_int("batch_dims", 0) != 0:
        raise ctx.error("Gather with batch_dims != 0 is not supported")
    return ctx.b.op("Gather", [ctx.inputs[0], ctx.inputs[1]], {"axis": axis})

"""ReadValue-3/6 and Assign-3/6 (variables kept between inference calls) -> state inputs and outputs.

An ONNX model keeps nothing between runs, so each variable becomes a pair of model boundary values, the way a
stateful model is driven without its state API:

* an optional input named after the variable id (type `optional(tensor)`): left out, the ReadValue gives its initial
  value (its input, or zeros of `variable_shape` for a ReadValue-6 without one), as OpenVINO does on the first
  inference or after a reset; given, the ReadValue gives that value;
* an output `<variable id>.next`, the value the variable's Assign stores for the next call (feed it back as the
  input). The pairs are listed in the model's metadata (`ir2onnx.states`, JSON: markers.py).

Inputs and outputs of the IR come first, in their order; the state inputs and outputs follow in the order of the
IR's ReadValue / Assign layers. Variables inside loop and If bodies are refused (OpenVINO's model transformations
never put them there).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.ir.xml_reader import parse_shape
from ir2onnx.translate.builder import onnx_dtype
from ir2onnx.translate.context import LayerContext, set_value_type
from ir2onnx.translate.registry import converter

NEXT_SUFFIX = ".next"


def _variable_id(ctx: LayerContext) -> str:
    if ctx.b.parent is not None:
        raise ctx.error(f"{ctx.layer.type} inside a loop or If body: a variable there has no ONNX form (state inputs "
                        "and outputs belong to the model)")
    vid = ctx.attr_str("variable_id")
    if not vid:
        raise ctx.error(f"{ctx.layer.type} without a variable_id")
    return vid


@converter("ReadValue", "opset3", "opset6",
           onnx="optional state input; If(OptionalHasElement, OptionalGetElement, initial value)")
def read_value(ctx: LayerContext) -> oir.Value:
    vid = _variable_id(ctx)
    states = ctx.translator.states
    et = ctx.output_type(0)
    dtype = onnx_dtype(et)
    dims = ctx.layer.outputs[0].dims
    # the variable's declared shape (ReadValue-6) may be more relaxed than this call's initial value: the state
    # input takes any value that fits it
    try:
        declared = parse_shape(ctx.layer.data["variable_shape"]) if "variable_shape" in ctx.layer.data else dims
    except ValueError as e:
        raise ctx.error(f"variable_shape: {e}") from None
    if declared is not None and len(declared) != len(dims):
        raise ctx.error(f"variable_shape {list(declared)} and the output's rank {len(dims)} differ")
    if vid in states.inputs:  # a second reader of the same variable reads the same input
        state = states.inputs[vid]
    else:
        name = ctx.b.names.claim(vid)
        shape = None if declared is None else \
            oir.Shape([d if d is not None else f"{name}_d{i}" for i, d in enumerate(declared)])
        state = oir.Value(name=name, type=oir.OptionalType(oir.TensorType(dtype)), shape=shape)
        ctx.b.inputs.append(state)  # the main graph's builder (_variable_id)
        states.inputs[vid] = state
    if len(ctx.layer.inputs) > 0:
        initial = ctx.inputs[0]
    else:
        if any(d is None for d in dims):
            raise ctx.error(f"ReadValue without an initial value and variable_shape {list(dims)} with dynamic dims: "
                            "the zeros it starts from have no shape")
        initial = ctx.b.op("ConstantOfShape", [ctx.b.i64(list(dims))], {"value": np.zeros(1, et.numpy)})
    rank = len(dims)
    has = ctx.b.op("OptionalHasElement", [state])
    then_g = ctx.b.branch(f"{ctx.layer.name}/state", [(dtype, rank)],
                          lambda cb: [cb.op("OptionalGetElement", [state])])
    else_g = ctx.b.branch(f"{ctx.layer.name}/initial", [(dtype, rank)], lambda cb: [initial])
    out = ctx.b.op("If", [has], {"then_branch": then_g, "else_branch": else_g})
    set_value_type(out, et)
    return out


@converter("Assign", "opset3", "opset6", onnx="the stored value becomes the output `<variable id>.next`")
def assign(ctx: LayerContext) -> oir.Value:
    vid = _variable_id(ctx)
    states = ctx.translator.states
    if vid in states.outputs:
        raise ctx.error(f"a second Assign to variable '{vid}' (OpenVINO allows one per variable)")
    states.outputs[vid] = ctx.inputs[0]
    return ctx.inputs[0]

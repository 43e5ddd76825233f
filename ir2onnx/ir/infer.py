"""What OpenVINO re-derives when it reads an IR, derived here too, so that stale XML is never trusted.

OpenVINO's reader ignores the `precision` of output ports: it infers every output's element type from the op. It
also gives each TensorIterator/Loop/If body Parameter the element type and shape of the outer tensor that feeds it
(the chunk shape for a sliced input), whatever the Parameter declares. `resolve(model)` returns the model with exactly that applied: output port precisions replaced by the
inferred types (where the op's rule is known), body Parameters typed by their outer input, and their declared shape
kept only where it agrees with the outer port (disagreeing dims become dynamic, a disagreeing rank dynamic rank).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from ir2onnx.ir.element_types import ELEMENT_TYPES, ElementType, parse_element_type
from ir2onnx.ir.model import Body, Graph, IRModel, Layer, PortMapEntry
from ir2onnx.ir.xml_reader import parameter_shape, parameter_type

_BOOLEAN = ("equal", "notequal", "less", "lessequal", "greater", "greaterequal", "logicaland", "logicalor",
            "logicalxor", "logicalnot", "reducelogicaland", "reducelogicalor", "isnan", "isinf", "isfinite")
# ops whose outputs all have the element type of their first input (other ops keep their ports' precisions)
_SAME_AS_INPUT0 = frozenset((
    "abs", "acos", "asin", "atan", "acosh", "asinh", "atanh", "ceiling", "clamp", "cos", "cosh", "erf", "exp",
    "floor", "log", "negative", "relu", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "elu", "gelu",
    "hsigmoid", "hswish", "mish", "softplus", "softsign", "softmax", "logsoftmax", "swish", "prelu", "add",
    "subtract", "multiply", "divide", "maximum", "minimum", "power", "floormod", "mod", "squareddifference",
    "avgpool", "broadcast", "concat", "convolution", "convolutionbackpropdata", "groupconvolution", "cumsum",
    "depthtospace", "spacetodepth", "einsum", "gather", "gatherelements", "gathernd", "interpolate", "matmul", "mvn",
    "normalizel2", "pad", "reducel1", "reducel2", "reducemax", "reducemean", "reducemin", "reduceprod", "reducesum",
    "reshape", "round", "scatterelementsupdate", "scatterndupdate", "scatterupdate", "slice", "split", "squeeze",
    "stridedslice", "tile", "transpose", "unsqueeze", "variadicsplit", "identity", "grucell", "lstmcell", "rnncell",
    "grusequence", "lstmsequence", "rnnsequence",
))
Types = list[ElementType | None]


def resolve(model: IRModel) -> IRModel:
    """The model with OpenVINO's re-derived output types and body Parameter types/shapes (see the module doc)."""
    return replace(model, graph=_graph(model.graph, {}))


def _graph(g: Graph, bound: Mapping[str, tuple[ElementType | None, tuple[int | None, ...] | None]]) -> Graph:
    """Resolve `g`; `bound` gives body Parameter ids the (type, outer chunk dims) of the tensor that feeds them."""
    out_types: dict[str, Types] = {}
    new: dict[str, Layer] = {}
    for layer in g.topological_order():
        ins: Types = []
        for i in range(len(layer.inputs)):
            src = g.sources.get((layer.id, i))
            ins.append(out_types[src.layer.id][src.output] if src is not None else None)
        if layer.type_key == "parameter" and layer.id in bound:
            layer = _bind_parameter(layer, *bound[layer.id])
        layer = _with_bodies(layer, ins)
        types = _output_types(layer, ins)
        out_types[layer.id] = types
        new[layer.id] = _with_output_types(layer, types)
    if len(new) != len(g.layers):  # a cycle: validation reports it; leave the graph as it is
        return g
    return Graph(tuple(new[layer.id] for layer in g.layers), g.edges)


def _bind_parameter(p: Layer, et: ElementType | None, outer: tuple[int | None, ...] | None) -> Layer:
    data = dict(p.data)
    if et is not None:
        data["element_type"] = et.name
    declared = parameter_shape(p)
    if outer is not None and declared is not None:
        if len(outer) != len(declared):
            data["shape"] = "..."
        else:
            data["shape"] = ",".join("?" if d is None or d != o else str(d) for d, o in zip(declared, outer))
    return replace(p, data=data)


def _outer_dims(layer: Layer, e: PortMapEntry) -> tuple[int | None, ...] | None:
    """The shape a body Parameter gets from outer port `e.external_port_id` (the chunk when sliced)."""
    if not 0 <= e.external_port_id < len(layer.inputs):
        return None
    dims = list(layer.inputs[e.external_port_id].dims)
    if e.axis is not None and dims:
        if not -len(dims) <= e.axis < len(dims):
            return None
        dims[e.axis % len(dims)] = e.part_size
    return tuple(dims)


def _with_bodies(layer: Layer, ins: Types) -> Layer:
    if layer.body is not None and layer.type_key in ("tensoriterator", "loop"):
        return replace(layer, body=_body(layer, layer.body, ins))
    if layer.branches and layer.type_key == "if":
        return replace(layer, branches=tuple(_body(layer, b, ins) for b in layer.branches))
    return layer


def _body(layer: Layer, body: Body, ins: Types) -> Body:
    bound: dict[str, tuple[ElementType | None, tuple[int | None, ...] | None]] = {}
    for e in body.inputs:
        if e.purpose == "current_iteration" or not 0 <= e.external_port_id < len(ins):
            continue
        bound[e.internal_layer_id] = (ins[e.external_port_id], _outer_dims(layer, e))
    return replace(body, graph=_graph(body.graph, bound))


def _with_output_types(layer: Layer, types: Types) -> Layer:
    if all(t is None or t == p.element_type for t, p in zip(types, layer.outputs)):
        return layer
    ports = tuple(p if t is None else p._replace(element_type=t) for p, t in zip(layer.outputs, types))
    return replace(layer, outputs=ports)


def _attr_type(layer: Layer, name: str, default: str) -> ElementType | None:
    return parse_element_type(layer.data.get(name, default))


def _body_result_types(layer: Layer, body: Body) -> Types:
    """Output types of a TI/Loop/If: the types of the body Results its port map reads, in port order."""
    results = {r.id: r for r in body.graph.results}
    mapped = sorted((o for o in body.outputs if o.external_port_id >= 0 and o.purpose != "execution_condition"),
                    key=lambda o: o.external_port_id)
    types: Types = []
    for o in mapped:
        r = results.get(o.internal_layer_id)
        src = body.graph.sources.get((r.id, 0)) if r is not None else None
        types.append(src.layer.outputs[src.output].element_type if src is not None else None)
    return types + [None] * (len(layer.outputs) - len(types))


_RULES: dict[str, Callable[[Layer, Types], Types]] = {
    "parameter": lambda layer, ins: [parameter_type(layer)],
    "const": lambda layer, ins: [layer.const.element_type if layer.const else None],
    "convert": lambda layer, ins: [_attr_type(layer, "destination_type", "")],
    "convertlike": lambda layer, ins: [ins[1] if len(ins) > 1 else None],
    "shapeof": lambda layer, ins: [_attr_type(layer, "output_type", "i64") if layer.version != "opset1"
                                   else ELEMENT_TYPES["i64"]],
    "nonzero": lambda layer, ins: [_attr_type(layer, "output_type", "i64")],
    "range": lambda layer, ins: [_attr_type(layer, "output_type", "") if layer.version == "opset4"
                                 else (ins[0] if ins else None)],
    "topk": lambda layer, ins: [ins[0] if ins else None, _attr_type(layer, "index_element_type", "i32")],
    "maxpool": lambda layer, ins: [ins[0] if ins else None, _attr_type(layer, "index_element_type", "i64")],
    "adaptivemaxpool": lambda layer, ins: [ins[0] if ins else None, _attr_type(layer, "index_element_type", "i64")],
    "select": lambda layer, ins: [ins[1] if len(ins) > 1 else None],
    "onehot": lambda layer, ins: [ins[2] if len(ins) > 2 else None],
    "tensoriterator": lambda layer, ins: _body_result_types(layer, layer.body) if layer.body else [],
    "loop": lambda layer, ins: _body_result_types(layer, layer.body) if layer.body else [],
    "if": lambda layer, ins: _body_result_types(layer, layer.branches[0]) if layer.branches else [],
    "eye": lambda layer, ins: [_attr_type(layer, "output_type", "")],
}


def _output_types(layer: Layer, ins: Sequence[ElementType | None]) -> Types:
    """Each output's element type as OpenVINO infers it; None where the rule is not known here."""
    key = layer.type_key
    if key == "constant":
        key = "const"
    if key == "result":
        return []
    if key in _RULES:
        types = _RULES[key](layer, list(ins))
    elif key in _BOOLEAN:
        types = [ELEMENT_TYPES["boolean"]]
    elif key in _SAME_AS_INPUT0:
        types = [ins[0] if ins else None] * len(layer.outputs)
    else:  # a rule not known here: the port precisions stand
        types = []
    return (list(types) + [None] * len(layer.outputs))[: len(layer.outputs)]


__all__ = ["resolve"]

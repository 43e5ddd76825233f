"""Static shapes of a Loop's outputs, which ONNX inference leaves unknown: its carried values where every iteration
keeps their shapes, its stacked outputs where it also runs a constant number of iterations.

ONNX shape inference types a Loop body's carried values without their shapes (they may change from one iteration to
the next), so nothing the body computes from them has a shape, and neither have the Loop's outputs. Where the loop
provably runs exactly M iterations (M a constant, its initial condition absent or constant true, its body's
condition constant true or the condition input passed on unchanged: a PyTorch for loop, or a TensorFlow while loop
over a dimension once the shapes are known) and the carried values have static initial shapes S, the body is
inferred alone with its carried inputs of shapes S. If every carried output then has shape S, by induction every
iteration sees S: the carried outputs have shapes S (also after no iteration), and each scan output the shape
[M, *its per-iteration shape]. The carried outputs' shapes hold whatever the number of iterations (a while loop
over a run-time count, a Keras layer's masked steps): only the scan outputs need the constant count.
"""

from __future__ import annotations

import onnx
from onnx import numpy_helper

_TRUE_CONSTANT = ("Constant",)


def loop_output_shapes(graph: onnx.GraphProto, opset: int, found: dict[str, onnx.ValueInfoProto]) -> bool:
    """Add to `found` the shapes of the outputs of the Loops of `graph` (an inferred main graph of that ONNX opset):
    the carried ones where the body keeps their initial static shapes, the stacked ones where the Loop also runs a
    constant number of iterations; whether any was added."""
    constants = {t.name: t for t in graph.initializer}
    constants.update({n.output[0]: a.t for n in graph.node if n.op_type == "Constant" and n.domain in ("", "ai.onnx")
                      for a in n.attribute if a.name == "value"})
    types = {t.name: onnx.helper.make_tensor_type_proto(t.data_type, list(t.dims)) for t in graph.initializer}
    types.update({vi.name: vi.type for vi in (*graph.input, *graph.value_info, *graph.output)})
    added = False
    for node in graph.node:
        if node.op_type != "Loop" or node.domain not in ("", "ai.onnx") or all(o in found for o in node.output if o):
            continue
        body = next((a.g for a in node.attribute if a.name == "body"), None)
        shapes = _body_shapes(node, body, graph, types, opset) if body is not None else None
        if shapes is None:
            continue
        carried, scans = shapes
        trips = _scalar(constants.get(node.input[0])) if node.input and node.input[0] else None
        if trips is None or trips < 0 or not _runs_every_trip(node, body, constants):  # type: ignore[arg-type]
            scans = []  # their length depends on the data
        for name, dims, elem in [*carried, *((n, [int(trips), *d], e) for n, d, e in scans)]:  # type: ignore[arg-type]
            if name and name not in found:
                found[name] = onnx.helper.make_tensor_value_info(name, elem, dims)
                added = True
    return added


def _scalar(t: onnx.TensorProto | None) -> int | bool | None:
    if t is None:
        return None
    a = numpy_helper.to_array(t)
    return a.reshape(-1)[0].item() if a.size == 1 else None


def _runs_every_trip(node: onnx.NodeProto, body: onnx.GraphProto, constants: dict[str, onnx.TensorProto]) -> bool:
    """The initial condition is absent or constant true, and the body's condition is constant true or its condition
    input passed on unchanged."""
    if len(node.input) > 1 and node.input[1] and _scalar(constants.get(node.input[1])) is not True:
        return False
    if len(body.input) < 2 or not body.output:
        return False
    cond_in, cond_out = body.input[1].name, body.output[0].name
    local = {t.name: t for t in body.initializer}
    made = {o: n for n in body.node for o in n.output}
    while cond_out in made and made[cond_out].op_type == "Identity":
        cond_out = made[cond_out].input[0]
    if cond_out == cond_in:
        return True
    if cond_out in made and made[cond_out].op_type in _TRUE_CONSTANT:
        value = next((a.t for a in made[cond_out].attribute if a.name == "value"), None)
        return _scalar(value) is True
    return _scalar(local.get(cond_out, constants.get(cond_out))) is True


def _static(t: onnx.TypeProto | None) -> list[int] | None:
    if t is None or not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    dims = t.tensor_type.shape.dim
    return [d.dim_value for d in dims] if all(d.HasField("dim_value") for d in dims) else None


def _body_shapes(node: onnx.NodeProto, body: onnx.GraphProto, graph: onnx.GraphProto,
                 types: dict[str, onnx.TypeProto], opset: int) -> tuple[list, list] | None:
    """((name, dims, elem) of the carried outputs, (name, per-iteration dims, elem) of the scan outputs), where the
    body inferred alone with its carried inputs of their initial shapes keeps those shapes; else None."""
    n_carried = len(node.input) - 2
    initial = [types.get(name) for name in node.input[2:]]
    shapes = [_static(t) for t in initial]
    if len(body.input) != n_carried + 2 or any(s is None for s in shapes):
        return None
    alone = onnx.GraphProto()
    alone.CopyFrom(body)
    del alone.value_info[:]
    for out in alone.output:
        if out.type.HasField("tensor_type"):
            out.type.tensor_type.ClearField("shape")
    for vi, t in zip(alone.input[2:], initial):
        vi.type.CopyFrom(t)
    outer = _outer_names(body)
    constants = {t.name: t for t in graph.initializer}
    for name in sorted(outer):
        if name in constants:
            alone.initializer.append(constants[name])
        elif name in types:
            alone.input.append(onnx.helper.make_value_info(name, types[name]))
        else:
            return None  # a value of unknown type: nothing to say
    model = onnx.helper.make_model(alone, opset_imports=[onnx.helper.make_opsetid("", opset)])
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True).graph
    except Exception:  # noqa: BLE001  best effort
        return None
    outs = list(inferred.output)
    carried_out = [_static(o.type) for o in outs[1:1 + n_carried]]
    if carried_out != shapes:
        return None
    scans = [(name, dims, o.type.tensor_type.elem_type)
             for name, o in zip(node.output[n_carried:], outs[1 + n_carried:])
             if (dims := _static(o.type)) is not None and o.type.tensor_type.elem_type]
    carried = [(name, s, t.tensor_type.elem_type) for name, s, t in zip(node.output, shapes, initial)]
    return carried, scans


def _outer_names(body: onnx.GraphProto) -> set[str]:
    """The names `body` (its nested graphs included) reads from enclosing graphs."""
    defined = {i.name for i in body.input} | {t.name for t in body.initializer}
    defined |= {o for n in body.node for o in n.output}
    read: set[str] = set()
    for n in body.node:
        read.update(i for i in n.input if i)
        for a in n.attribute:
            for g in [a.g] if a.type == onnx.AttributeProto.GRAPH else a.graphs:
                read |= _outer_names(g)
    return read - defined

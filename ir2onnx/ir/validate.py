"""Structural checks of a parsed IR before any conversion; every problem names its layer and XML line."""

from __future__ import annotations

from ir2onnx.errors import IRReadError, IRValidationError
from ir2onnx.ir.element_types import parse_element_type
from ir2onnx.ir.model import Body, Edge, Graph, IRModel, Layer
from ir2onnx.ir.weights import Weights, needed_bytes
from ir2onnx.ir.xml_reader import parameter_shape, parse_shape

_LOOP_TYPES = ("tensoriterator", "loop")
# element types OpenVINO keeps only as compressed weights: their values mean something only through a Convert
_WEIGHT_ONLY = ("nf4", "f4e2m1")
# inputs that OpenVINO requires to be integer numbers (axes, shapes, indices, counts): op type -> input indices
_INTEGER_INPUTS: dict[str, tuple[int, ...]] = {
    "reshape": (1,), "squeeze": (1,), "unsqueeze": (1,), "transpose": (1,), "tile": (1,), "split": (1,),
    "variadicsplit": (1, 2), "gather": (1, 2), "gatherelements": (1,), "gathernd": (1,), "broadcast": (1, 2),
    "stridedslice": (1, 2, 3), "slice": (1, 2, 3, 4), "pad": (1, 2), "topk": (1,), "cumsum": (1,), "onehot": (0, 1),
    "scatterupdate": (1, 3), "scatterelementsupdate": (1, 3), "scatterndupdate": (1,), "reducesum": (1,),
    "reducemean": (1,), "reducemax": (1,), "reducemin": (1,), "reduceprod": (1,), "reducel1": (1,),
    "reducel2": (1,), "reducelogicaland": (1,), "reducelogicalor": (1,), "mvn": (1,), "normalizel2": (1,),
    "loop": (0,),
}


# the ops that take string tensors: those OpenVINO's CPU plugin runs on strings (moving them, not computing with
# them), and the graph's ends
_STRING_OPS = {"parameter", "result", "const", "concat", "gather", "reshape", "squeeze", "unsqueeze", "transpose",
               "split", "variadicsplit", "shapeof"}


def validate_types(model: IRModel) -> None:
    """After element types are resolved (ir.infer): inputs that must be integers are integers, strings go only into
    ops that move them. Raises IRValidationError listing every offending input."""
    problems: list[str] = []
    for g in model.graph.graphs():
        for (lid, i), src in g.sources.items():
            et, layer = src.layer.outputs[src.output].element_type, g.by_id[lid]
            if et is not None and et.name == "string" and layer.type_key not in _STRING_OPS:
                problems.append(f"{layer.where()}: input {i} is a string tensor, which only data movement ops take "
                                f"(from {src.layer.where()})")
        for layer in g.layers:
            for i in _INTEGER_INPUTS.get(layer.type_key, ()):
                src = g.sources.get((layer.id, i))
                et = src.layer.outputs[src.output].element_type if src is not None else None
                if et is not None and (et.is_float or et.name == "boolean"):
                    problems.append(f"{layer.where()}: input {i} must be an integer tensor (axes, shape, indices "
                                    f"or count), not {et.name} (from {src.layer.where()})")  # type: ignore[union-attr]
    if problems:
        raise IRValidationError(problems)


def validate(model: IRModel, bin_size: int | None) -> None:
    """Raise IRValidationError listing every problem found (graph, bodies, port maps, Const ranges)."""
    problems: list[str] = []
    _check_graph(model.graph, bin_size, problems)
    if problems:
        raise IRValidationError(problems)


def _check_graph(g: Graph, bin_size: int | None, problems: list[str]) -> None:
    seen: dict[str, Layer] = {}
    for layer in g.layers:
        if layer.id in seen:
            problems.append(f"{layer.where()}: duplicate layer id {layer.id} (first at line {seen[layer.id].line})")
        else:
            seen[layer.id] = layer
    if len(seen) != len(g.layers):
        return  # the rest of the checks key on ids

    filled: dict[tuple[str, int], int] = {}
    scope = g.layers[0].scope if g.layers else ""

    def where(e: Edge) -> str:  # (made only for a problem: a network has thousands of edges)
        return f"{scope}edge {e.from_layer}:{e.from_port} -> {e.to_layer}:{e.to_port} (line {e.line})"

    for e in g.edges:
        src, dst = seen.get(e.from_layer), seen.get(e.to_layer)
        if src is None or dst is None:
            missing = e.from_layer if src is None else e.to_layer
            problems.append(f"{where(e)}: layer {missing} does not exist")
            continue
        if src.output_index(e.from_port) is None or src.type_key == "result":
            problems.append(f"{where(e)}: {src.where()} has no output port {e.from_port}")
        ii = dst.input_index(e.to_port)
        if ii is None:
            problems.append(f"{where(e)}: {dst.where()} has no input port {e.to_port}")
            continue
        key = (dst.id, ii)
        if key in filled:
            problems.append(f"{where(e)}: input port {e.to_port} of {dst.where()} is already fed by the edge at line "
                            f"{filled[key]}")
        filled[key] = e.line
    if problems:
        return
    outside: list[tuple[Layer, int, int]] = []  # Consts whose bytes lie past the .bin's end: their byte ranges
    for layer in g.layers:
        for i, p in enumerate(layer.inputs):
            if (layer.id, i) not in filled:
                problems.append(f"{layer.where()}: input port {p.id} is not connected")
        if layer.const is not None and bin_size is not None:
            c = layer.const
            need = needed_bytes(c.element_type, c.shape)
            if c.size < need:
                problems.append(
                    f"{layer.where()}: size {c.size} is too small for {c.element_type.name}{list(c.shape)} ({need} bytes)")
            elif c.offset + c.size > bin_size:
                outside.append((layer, c.offset, c.offset + c.size))
        if layer.const is not None and layer.const.element_type.name in _WEIGHT_ONLY:
            for e in g.edges:
                dst = seen[e.to_layer]
                if e.from_layer == layer.id and dst.type_key != "convert":
                    problems.append(f"{layer.where()}: a {layer.const.element_type.name} Const holds compressed "
                                    f"weights, read only through a Convert, but it feeds {dst.where()}")
                    break
        raw_type = layer.data.get("element_type") if layer.type_key == "parameter" else None
        if raw_type is not None and raw_type.strip() != "dynamic" and parse_element_type(raw_type) is None:
            problems.append(f"{layer.where()}: unknown element type '{raw_type}'")
        if layer.type_key == "parameter" and "shape" in layer.data:
            try:
                parse_shape(layer.data["shape"])
            except ValueError as e:
                problems.append(f"{layer.where()}: {e}")
        if layer.const is not None and not layer.outputs:
            problems.append(f"{layer.where()}: Const has no output port")
        if (layer.type_key == "parameter" or layer.const is not None) and (layer.inputs or len(layer.outputs) > 1):
            problems.append(f"{layer.where()}: a {layer.type} has no inputs and one output, this one "
                            f"{len(layer.inputs)} input(s) and {len(layer.outputs)} output(s)")
        if layer.type_key in _LOOP_TYPES:
            _check_body(layer, bin_size, problems)
        elif layer.type_key == "if":
            _check_branches(layer, bin_size, problems)
        else:
            for body in layer.bodies:
                _check_graph(body.graph, bin_size, problems)
    if outside:
        problems.append(_outside(outside, bin_size))
    _check_acyclic(g, problems)


def _outside(outside: list[tuple[Layer, int, int]], bin_size: int | None) -> str:
    """One problem for the Consts whose bytes lie past the .bin's end (a truncated .bin names every later Const):
    how many, the size they need, the first few."""
    if len(outside) == 1:
        layer, start, end = outside[0]
        return f"{layer.where()}: bytes [{start}, {end}) lie outside the {bin_size}-byte .bin"
    need = max(end for _, _, end in outside)
    first = ", ".join(layer.where() for layer, _, _ in outside[:3])
    more = f" and {len(outside) - 3} more" if len(outside) > 3 else ""
    return (f"{len(outside)} Consts lie outside the {bin_size}-byte .bin, which is truncated or another IR's (they "
            f"need {need} bytes): {first}{more}")


def _check_acyclic(g: Graph, problems: list[str]) -> None:
    order = g.topological_order()
    if len(order) != len(g.layers):
        placed = {layer.id for layer in order}
        stuck = [layer for layer in g.layers if layer.id not in placed]
        names = ", ".join(layer.where() for layer in stuck[:5])
        problems.append(f"the graph has a cycle through {len(stuck)} layer(s): {names}")


def _check_body(layer: Layer, bin_size: int | None, problems: list[str]) -> None:
    body = layer.body
    where = layer.where()
    if body is None:
        problems.append(f"{where}: {layer.type} has no <body>")
        return
    before = len(problems)
    _check_graph(body.graph, bin_size, problems)
    if len(problems) > before:
        return
    by_id = body.graph.by_id
    is_loop = layer.type_key == "loop"
    for e in body.inputs:
        target = by_id.get(e.internal_layer_id)
        if target is None or target.type_key != "parameter":
            what = "does not exist" if target is None else f"is a {target.type}, not a Parameter"
            problems.append(f"{where}: port_map input (line {e.line}) internal_layer_id {e.internal_layer_id} {what}")
        if e.external_port_id >= len(layer.inputs):
            problems.append(f"{where}: port_map input (line {e.line}) external_port_id {e.external_port_id} "
                            f"is not one of the {len(layer.inputs)} inputs")
        if e.external_port_id < 0 and not (is_loop and e.purpose == "current_iteration"):
            problems.append(f"{where}: port_map input (line {e.line}) has a negative external_port_id")
        if e.sliced and (e.part_size < 1 or e.stride == 0):
            problems.append(f"{where}: port_map input (line {e.line}) needs part_size >= 1 and stride != 0")
        if is_loop and e.purpose == "current_iteration" and e.external_port_id >= 0:
            problems.append(f"{where}: port_map input (line {e.line}) is the current iteration and also reads "
                            f"input {e.external_port_id}: a body Parameter gets one or the other")
    n_out = len(layer.outputs)
    for e in body.outputs:
        target = by_id.get(e.internal_layer_id)
        if target is None or target.type_key != "result":
            what = "does not exist" if target is None else f"is a {target.type}, not a Result"
            problems.append(f"{where}: port_map output (line {e.line}) internal_layer_id {e.internal_layer_id} {what}")
        if e.sliced and (e.part_size < 1 or e.stride == 0):
            problems.append(f"{where}: port_map output (line {e.line}) needs part_size >= 1 and stride != 0")
        elif e.sliced and target is not None and target.type_key == "result" and target.inputs:
            dims = target.inputs[0].dims
            axis = e.axis + len(dims) if e.axis is not None and e.axis < 0 else e.axis
            if axis is None or not 0 <= axis < max(len(dims), 1):
                problems.append(f"{where}: port_map output (line {e.line}) axis {e.axis} is out of range for the "
                                f"rank-{len(dims)} body Result {target.id}")
        if e.external_port_id >= 0 and e.purpose != "execution_condition":
            rank = sorted({o.external_port_id for o in body.outputs if o.external_port_id >= 0}).index(e.external_port_id)
            if rank >= n_out:
                problems.append(f"{where}: port_map output (line {e.line}) external_port_id {e.external_port_id} "
                                f"has no matching output port ({n_out} outputs)")
    mapped_out = [o.external_port_id for o in body.outputs if o.external_port_id >= 0]
    if len(set(mapped_out)) != len(mapped_out):
        problems.append(f"{where}: two port_map outputs share an external_port_id")
    if len(set(mapped_out)) < n_out:
        problems.append(f"{where}: {n_out} outputs but only {len(set(mapped_out))} port_map outputs")
    for be in body.back_edges:
        src, dst = by_id.get(be.from_layer), by_id.get(be.to_layer)
        if src is None or src.type_key != "result":
            problems.append(f"{where}: back edge (line {be.line}) from-layer {be.from_layer} is not a body Result")
        if dst is None or dst.type_key != "parameter":
            problems.append(f"{where}: back edge (line {be.line}) to-layer {be.to_layer} is not a body Parameter")
    targets = [be.to_layer for be in body.back_edges]
    for t in set(targets):
        if targets.count(t) > 1:
            problems.append(f"{where}: Parameter {t} is the target of {targets.count(t)} back edges")
    _check_unmapped(where, "body", body, problems)
    if is_loop:
        conds = [o for o in body.outputs if o.purpose == "execution_condition"]
        if len(conds) != 1:
            problems.append(f"{where}: Loop needs exactly one port_map output with purpose=\"execution_condition\"")
        if len(layer.inputs) < 2:
            problems.append(f"{where}: Loop needs trip count and execution condition inputs (ports 0 and 1)")


def _check_branches(layer: Layer, bin_size: int | None, problems: list[str]) -> None:
    where = layer.where()
    if len(layer.branches) != 2:
        problems.append(f"{where}: If needs <then_body> and <else_body>")
        return
    for name, body in zip(("then", "else"), layer.branches):
        before = len(problems)
        _check_graph(body.graph, bin_size, problems)
        if len(problems) > before:
            continue
        by_id = body.graph.by_id
        for e in body.inputs:
            target = by_id.get(e.internal_layer_id)
            if target is None or target.type_key != "parameter":
                problems.append(f"{where}: {name}_port_map input (line {e.line}) internal_layer_id "
                                f"{e.internal_layer_id} is not a {name} body Parameter")
            elif not 0 < e.external_port_id < len(layer.inputs):
                problems.append(f"{where}: {name}_port_map input (line {e.line}) external_port_id "
                                f"{e.external_port_id} is not one of the data inputs")
        for e in body.outputs:
            target = by_id.get(e.internal_layer_id)
            if target is None or target.type_key != "result":
                problems.append(f"{where}: {name}_port_map output (line {e.line}) internal_layer_id "
                                f"{e.internal_layer_id} is not a {name} body Result")
        _check_unmapped(where, f"{name} body", body, problems)


def _check_unmapped(where: str, what: str, body: Body, problems: list[str]) -> None:
    """A body Parameter without a port_map input gets zeros of its declared shape (on every iteration; back edges to
    it are ignored), as OpenVINO's CPU plugin runs it; with a dynamic shape OpenVINO cannot run it either."""
    mapped = {e.internal_layer_id for e in body.inputs}
    read = {e.from_layer for e in body.graph.edges}
    for p in body.graph.parameters:
        shape = parameter_shape(p)
        if p.id not in mapped and p.id in read and (shape is None or None in shape):
            problems.append(f"{where}: {what} {p.where()} has no port_map input and a dynamic shape: OpenVINO feeds "
                            "such a Parameter zeros of its declared shape and cannot run this one either")


def check_strings(graph: Graph, weights: Weights) -> None:
    """String Consts' blocks (count, offsets, bytes) are whole: a broken one is named like any bad layer."""
    problems = []
    for layer in graph.walk():
        if layer.const is not None and layer.const.element_type.name == "string":
            try:
                weights.array(layer.const)
            except IRReadError as e:
                problems.append(f"{layer.where()}: {e}")
    if problems:
        raise IRValidationError(problems)

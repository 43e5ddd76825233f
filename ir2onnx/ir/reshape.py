"""Given input shapes applied to an IR before translation (`--input NAME[1,3,224,224]`, ir2onnx/input_shapes.py).

Each given input is a main-graph Parameter, found by any name OpenVINO accepts for it (its tensor's names, its layer
name). Its partial shape becomes the given one, dimension by dimension: a size replaces a free dimension, `None`
keeps the IR's. The readers of the Parameter see the same dims on their input ports, so that converters that emit a
static form where the dims are known do so. Refused, naming the input: a size that contradicts a static dimension of
the IR or lies outside the IR's bounds (`1..8`), a rank other than the IR's, an unknown or ambiguous name (the
inputs are listed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ir2onnx.errors import ConversionError
from ir2onnx.input_shapes import spelling as _spelling
from ir2onnx.ir.model import Graph, IRModel, Layer, Port
from ir2onnx.ir.xml_reader import parameter_shape

_LISTED = 8  # inputs named in an error; the rest are counted

Dims = tuple[int | None, ...]


def with_input_shapes(model: IRModel, shapes: Mapping[str, Sequence[int | None]] | Sequence[Sequence[int | None]]
                      ) -> IRModel:
    """`model` with the given Parameters' shapes fixed (see the module doc). `shapes`: name -> dims, or dims by
    position in the model's input order (then one per input)."""
    params = model.graph.parameters
    fixed: dict[str, Dims] = {}
    for p, dims in _match(params, shapes):
        if p.id in fixed:
            raise ConversionError(f"--input: input '{_shown_name(p)}' is given twice (under two of its names)")
        fixed[p.id] = _fix(p, tuple(dims))
    if not fixed:
        return model
    readers: dict[str, dict[int, Dims]] = {}  # layer id -> input port id -> the Parameter's new dims
    for e in model.graph.edges:
        if e.from_layer in fixed:
            readers.setdefault(e.to_layer, {})[e.to_port] = fixed[e.from_layer]
    layers = []
    for layer in model.graph.layers:
        if layer.id in fixed:
            layer = _with_shape(layer, fixed[layer.id])
        if layer.id in readers:
            layer = replace(layer, inputs=_ports(layer.inputs, readers[layer.id]))
        layers.append(layer)
    return replace(model, graph=Graph(tuple(layers), model.graph.edges))


def _shown_name(p: Layer) -> str:
    """The input's name in messages: its layer name where that is one of its tensor's names, else the smallest."""
    names = p.outputs[0].names if p.outputs else ()
    return p.name if p.name in names or not names else min(names)


def _match(params: list[Layer], shapes: Mapping[str, Sequence[int | None]] | Sequence[Sequence[int | None]]
           ) -> list[tuple[Layer, Sequence[int | None]]]:
    """(Parameter, dims) for each given shape; ConversionError for a name no input or several inputs have."""
    if not isinstance(shapes, Mapping):
        if len(shapes) != len(params):
            raise ConversionError(f"--input: {len(shapes)} shape(s) without names, for a model of {len(params)} "
                                  f"input(s) ({_listing(params)}); name them: --input NAME[dims]")
        return list(zip(params, shapes))
    out = []
    for name, dims in shapes.items():
        found = [p for p in params if name in (p.outputs[0].names if p.outputs else ())] or \
                [p for p in params if name == p.name]
        if not found:
            raise ConversionError(f"--input {name}: the model has no input of that name (its inputs: "
                                  f"{_listing(params)})")
        if len(found) > 1:
            raise ConversionError(f"--input {name}: the name of {len(found)} inputs "
                                  f"({', '.join(p.where() for p in found[:_LISTED])})")
        out.append((found[0], dims))
    return out


def _listing(params: list[Layer]) -> str:
    names = [_shown_name(p) + _spelling(parameter_shape(p)) for p in params[:_LISTED]]
    more = f" and {len(params) - _LISTED} more" if len(params) > _LISTED else ""
    return (", ".join(names) or "none") + more


def _fix(p: Layer, given: Dims) -> Dims:
    """The Parameter's dims with `given` applied; ConversionError naming the input where they disagree."""
    what = f"--input {_shown_name(p)}{_spelling(given)}"
    declared = parameter_shape(p)
    if declared is None:  # dynamic rank: the given shape sets it
        return given
    if len(given) != len(declared):
        raise ConversionError(f"{what}: the input has rank {len(declared)} ({_spelling(declared)}), "
                              f"not {len(given)}")
    bounds = _bounds(p.data.get("shape", ""), len(declared))
    out: list[int | None] = []
    for axis, (g, d) in enumerate(zip(given, declared)):
        if g is None:
            out.append(d)
            continue
        if d is not None and d != g:
            raise ConversionError(f"{what}: dimension {axis} is {d} in the IR ({_spelling(declared)})")
        lo, hi = bounds[axis]
        if g < lo or (hi is not None and g > hi):
            raise ConversionError(f"{what}: dimension {axis} is bounded to {lo}..{'' if hi is None else hi} in "
                                  f"the IR")
        out.append(g)
    return tuple(out)


def _bounds(text: str, rank: int) -> list[tuple[int, int | None]]:
    """Each dimension's (lowest, highest) size from a Parameter's `shape` attribute (`2..8`, `..8`, `2..`); (0,
    None) where it has none."""
    parts = [p.strip() for p in text.strip().strip("[]{}").split(",")] if text.strip() else []
    out: list[tuple[int, int | None]] = []
    for part in parts if len(parts) == rank else [""] * rank:
        lo, sep, hi = part.partition("..")
        free = ("", "?", "-1")
        if not sep:
            out.append((0, None))
            continue
        out.append((int(lo) if lo not in free else 0, int(hi) if hi not in free else None))
    return out


def _with_shape(p: Layer, dims: Dims) -> Layer:
    data = dict(p.data)
    data["shape"] = ",".join("?" if d is None else str(d) for d in dims)
    outputs = p.outputs
    if outputs:
        outputs = (outputs[0]._replace(dims=dims), *outputs[1:])
    return replace(p, data=data, outputs=outputs)


def _ports(ports: tuple[Port, ...], dims_by_port: dict[int, Dims]) -> tuple[Port, ...]:
    """Input ports fed by a fixed Parameter get its dims (where their rank agrees: the XML's dims are informational)."""
    return tuple(port._replace(dims=dims_by_port[port.id])
                 if port.id in dims_by_port and len(port.dims) == len(dims_by_port[port.id]) else port
                 for port in ports)


__all__ = ["with_input_shapes"]

"""What each model input is used for, from the IR: trip counts, loop bounds, indices, sequence lengths, divisors,
shapes. Default check inputs are chosen from these uses so that loops run several iterations and indices stay in
range (see inputs.py).

An input's value is followed forward through layers that pass it on (Convert, Reshape, Concat, arithmetic, ...)
and into TensorIterator/Loop/If bodies through their port maps, up to the layers that give it a meaning.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ir2onnx.ir.model import Graph, Layer
from ir2onnx.ir.weights import Weights

# Layers that pass a value on with the same meaning: type -> input indices that do (None: every input).
_PASS_ON: dict[str, tuple[int, ...] | None] = {
    "convert": None, "convertlike": (0,), "reshape": (0,), "squeeze": (0,), "unsqueeze": (0,), "concat": None,
    "gather": (0,), "gatherelements": (0,), "gathernd": (0,), "stridedslice": (0,), "slice": (0,),
    "broadcast": (0,), "add": None, "subtract": None, "multiply": None, "minimum": None, "maximum": None,
    "identity": None, "split": (0,), "variadicsplit": (0,), "select": (1, 2), "tile": (0,), "transpose": (0,),
    "abs": None, "reducemax": (0,), "reducemin": (0,), "reducesum": (0,), "clamp": (0,),
}
_COMPARISONS = ("less", "lessequal", "greater", "greaterequal", "equal", "notequal")
# Inputs read as shapes, axes or sizes: no default value is known to be safe.
_SHAPE_PORTS: dict[str, tuple[int, ...]] = {
    "reshape": (1,), "broadcast": (1, 2), "tile": (1,), "pad": (1, 2), "stridedslice": (1, 2, 3),
    "slice": (1, 2, 3, 4), "interpolate": (1, 2, 3), "squeeze": (1,), "unsqueeze": (1,), "transpose": (1,),
    "split": (1,), "variadicsplit": (1, 2), "reducesum": (1,), "reducemean": (1,), "reducemax": (1,),
    "reducemin": (1,), "reduceprod": (1,), "reducel1": (1,), "reducel2": (1,), "reducelogicaland": (1,),
    "reducelogicalor": (1,), "cumsum": (1,), "mvn": (1,), "normalizel2": (1,),
}


@dataclass(frozen=True)
class Use:
    """One meaningful use of an input. `limit` is the exclusive index bound, the largest k or the sequence length
    (None: unknown until dynamic sizes are chosen), or for a trip count the most iterations the loop's sliced
    inputs allow (None: no limit; -1: set by a dynamic size)."""

    role: str  # trip | bound | index | k | range_start | range_stop | range_step | seq_len | condition | divisor | shape
    layer: Layer
    limit: int | None = None

    def where(self) -> str:
        return self.layer.where()


class _Analysis:
    def __init__(self, weights: Weights | None) -> None:
        self.weights = weights
        self._consumers: dict[int, dict[tuple[str, int], list[tuple[Layer, int]]]] = {}

    def consumers(self, graph: Graph, layer_id: str, port: int) -> list[tuple[Layer, int]]:
        table = self._consumers.get(id(graph))
        if table is None:
            table = {}
            for (lid, i), src in graph.sources.items():
                table.setdefault((src.layer.id, src.output), []).append((graph.by_id[lid], i))
            self._consumers[id(graph)] = table
        return table.get((layer_id, port), [])

    def const_int(self, graph: Graph, layer: Layer, i: int) -> int | None:
        if i >= len(layer.inputs) or self.weights is None:
            return None
        src = graph.source(layer, i).layer
        if src.const is None:
            return None
        try:
            return int(np.asarray(self.weights.array(src.const)).reshape(-1)[0])
        except (ValueError, IndexError, TypeError):
            return None

    def uses(self, graph: Graph, param: Layer) -> list[Use]:
        found: list[Use] = []
        seen: set[tuple[int, str, int]] = set()
        todo = [(graph, param.id, 0)]
        while todo:
            g, lid, port = todo.pop()
            if (id(g), lid, port) in seen:
                continue
            seen.add((id(g), lid, port))
            for layer, i in self.consumers(g, lid, port):
                found.extend(self._use(g, layer, i, todo))
        return found

    def _use(self, g: Graph, layer: Layer, i: int, todo: list[tuple[Graph, str, int]]) -> list[Use]:
        t = layer.type_key
        if t in ("loop", "tensoriterator", "if"):
            if t == "loop" and i == 0:
                return [Use("trip", layer, _slice_count(layer))]
            if (t == "loop" and i == 1) or (t == "if" and i == 0):
                return [Use("condition", layer)]
            port_id = layer.inputs[i].id
            for body in layer.bodies:
                for e in body.inputs:
                    if e.external_port_id == port_id:
                        todo.append((body.graph, e.internal_layer_id, 0))
            return []
        passes = _PASS_ON.get(t, ())
        if passes is None or i in passes:
            todo.extend((g, layer.id, o) for o in range(len(layer.outputs)))
            return []
        if t in _COMPARISONS:
            return [Use("bound", layer)]
        if t in ("divide", "floormod", "mod") and i == 1:
            return [Use("divisor", layer)]
        use = self._index_use(g, layer, t, i)
        if use is not None:
            return [use]
        if i in _SHAPE_PORTS.get(t, ()):
            return [Use("shape", layer)]
        return []

    def _index_use(self, g: Graph, layer: Layer, t: str, i: int) -> Use | None:
        dims = layer.inputs[0].dims if layer.inputs else ()

        def dim(axis: int | None) -> int | None:
            if axis is None or not dims:
                return None
            return dims[axis % len(dims)]

        if t == "gather" and i == 1:
            axis = self.const_int(g, layer, 2) if len(layer.inputs) > 2 else 0
            return Use("index", layer, dim(axis))
        if t in ("gatherelements",) and i == 1:
            return Use("index", layer, dim(int(layer.data.get("axis", "0"))))
        if t in ("scatterupdate", "scatterelementsupdate") and i == 1:
            return Use("index", layer, dim(self.const_int(g, layer, 3)))
        if t in ("gathernd", "scatterndupdate") and i == 1:
            static = [d for d in dims if d is not None]
            return Use("index", layer, min(static) if static and len(static) == len(dims) else None)
        if t == "onehot" and i == 0:
            return Use("index", layer, self.const_int(g, layer, 1))
        if t == "topk" and i == 1:
            return Use("k", layer, dim(int(layer.data.get("axis", "-1"))))
        if t == "range":
            return Use(("range_start", "range_stop", "range_step")[i], layer) if i < 3 else None
        if (t == "lstmsequence" and i == 3) or (t in ("grusequence", "rnnsequence") and i == 2):
            return Use("seq_len", layer, dim(1))
        return None


def _slice_count(loop: Layer) -> int | None:
    """The fewest chunks any sliced input of a Loop offers (a trip count above it would read past the end): None
    when nothing is sliced, -1 when a sliced axis is dynamic."""
    assert loop.body is not None
    counts = []
    for e in loop.body.inputs:
        if not e.sliced:
            continue
        idx = loop.input_index(e.external_port_id)
        dims = loop.inputs[idx].dims if idx is not None else ()
        d = dims[(e.axis or 0) % len(dims)] if dims else None
        if d is None:
            return -1
        counts.append(d // max(abs(e.stride), 1))
    return min(counts) if counts else None


def input_uses(graph: Graph, weights: Weights | None) -> dict[str, list[Use]]:
    """Main-graph Parameter id -> its meaningful uses."""
    a = _Analysis(weights)
    return {p.id: a.uses(graph, p) for p in graph.parameters}

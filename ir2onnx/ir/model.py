"""A small typed model of an OpenVINO IR graph: layers, ports, edges and nested bodies (no ONNX here).

All are immutable: NamedTuples, or frozen dataclasses where they cache derived lookups or are rebuilt with
`dataclasses.replace` (Python 3.11 compiles each method a dataclass generates on its own, about 1 ms a class, a
start-up cost of every conversion)."""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from ir2onnx.ir.element_types import ElementType

# A partial shape: None = dynamic rank; a None dim = dynamic dimension (bounds are dropped).
Shape = tuple[int | None, ...] | None


class Port(NamedTuple):
    """One `<port>` of a layer. `dims` are informational except on Parameter/Const layers."""

    id: int
    dims: tuple[int | None, ...]
    element_type: ElementType | None
    names: tuple[str, ...]
    line: int


class PortMapEntry(NamedTuple):
    """One `<input>`/`<output>` of a TensorIterator/Loop port map."""

    external_port_id: int
    internal_layer_id: str
    axis: int | None
    start: int
    end: int
    stride: int
    part_size: int
    purpose: str | None
    line: int

    @property
    def sliced(self) -> bool:
        return self.axis is not None


class BackEdge(NamedTuple):
    """Value of body Result `from_layer` flows into body Parameter `to_layer` for the next iteration."""

    from_layer: str
    to_layer: str
    line: int


@dataclass(frozen=True)
class Body:
    """The body of a TensorIterator/Loop with its port map and back edges."""

    graph: Graph
    inputs: tuple[PortMapEntry, ...]
    outputs: tuple[PortMapEntry, ...]
    back_edges: tuple[BackEdge, ...]


class ConstData(NamedTuple):
    """Where a Const's bytes lie in the .bin and how to read them."""

    element_type: ElementType
    shape: tuple[int, ...]
    offset: int
    size: int


def _first_positions(ports: tuple[Port, ...]) -> dict[int, int]:
    positions: dict[int, int] = {}
    for i, p in enumerate(ports):
        positions.setdefault(p.id, i)
    return positions


@dataclass(frozen=True)
class Layer:
    """One `<layer>`; `scope` names the enclosing TensorIterator/Loop layers, for messages."""

    id: str
    name: str
    type: str
    version: str
    data: Mapping[str, str]
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    line: int
    scope: str = ""
    body: Body | None = None
    branches: tuple[Body, ...] = ()  # If: (then, else)
    const: ConstData | None = None

    def where(self) -> str:
        """`layer 7 'name' (Type, line N)`, prefixed with the enclosing loops."""
        return f"{self.scope}layer {self.id} '{self.name}' ({self.type}, line {self.line})"

    def input_index(self, port_id: int) -> int | None:
        return self._input_indices.get(port_id)

    def output_index(self, port_id: int) -> int | None:
        return self._output_indices.get(port_id)

    # port id -> position, the first port of that id (a Split or Concat of thousands of ports is looked up per edge)
    @cached_property
    def _input_indices(self) -> dict[int, int]:
        return _first_positions(self.inputs)

    @cached_property
    def _output_indices(self) -> dict[int, int]:
        return _first_positions(self.outputs)

    @property
    def bodies(self) -> tuple[Body, ...]:
        """Every nested graph: the TensorIterator/Loop body, or the If branches."""
        return ((self.body,) if self.body is not None else ()) + self.branches

    @cached_property
    def type_key(self) -> str:
        return self.type.lower()


class Edge(NamedTuple):
    from_layer: str
    from_port: int
    to_layer: str
    to_port: int
    line: int


class Source(NamedTuple):
    """The producer of a layer input: layer and output index."""

    layer: Layer
    output: int


@dataclass(frozen=True)
class Graph:
    """Layers in XML order plus edges. Parameters and Results keep XML order (it defines I/O order)."""

    layers: tuple[Layer, ...]
    edges: tuple[Edge, ...]

    @cached_property
    def by_id(self) -> dict[str, Layer]:
        return {layer.id: layer for layer in self.layers}

    @property
    def parameters(self) -> list[Layer]:
        return [layer for layer in self.layers if layer.type_key == "parameter"]

    @property
    def results(self) -> list[Layer]:
        return [layer for layer in self.layers if layer.type_key == "result"]

    @cached_property
    def sources(self) -> dict[tuple[str, int], Source]:
        """(layer id, input index) -> producer. Assumes a validated graph."""
        out: dict[tuple[str, int], Source] = {}
        for e in self.edges:
            src, dst = self.by_id[e.from_layer], self.by_id[e.to_layer]
            oi, ii = src.output_index(e.from_port), dst.input_index(e.to_port)
            assert oi is not None and ii is not None
            out[(dst.id, ii)] = Source(src, oi)
        return out

    def source(self, layer: Layer, input_index: int) -> Source:
        return self.sources[(layer.id, input_index)]

    def topological_order(self) -> list[Layer]:
        """Layers so that producers come first; ties keep XML order (fewer than all layers: there is a cycle)."""
        return list(self._order)

    @cached_property
    def _order(self) -> tuple[Layer, ...]:
        indeg = {layer.id: 0 for layer in self.layers}
        succ: dict[str, list[str]] = {layer.id: [] for layer in self.layers}
        for (lid, _), src in self.sources.items():
            indeg[lid] += 1
            succ[src.layer.id].append(lid)
        pos = {layer.id: i for i, layer in enumerate(self.layers)}
        ready = [(pos[i], i) for i, d in indeg.items() if d == 0]
        heapq.heapify(ready)
        order: list[Layer] = []
        while ready:
            _, lid = heapq.heappop(ready)
            order.append(self.by_id[lid])
            for nxt in succ[lid]:
                indeg[nxt] -= 1
                if indeg[nxt] == 0:
                    heapq.heappush(ready, (pos[nxt], nxt))
        return tuple(order)

    def graphs(self) -> list[Graph]:
        """This graph and every nested body and branch, outer first."""
        out: list[Graph] = [self]
        for layer in self.layers:
            for body in layer.bodies:
                out.extend(body.graph.graphs())
        return out

    def walk(self) -> list[Layer]:
        """Every layer of this graph and of all nested bodies, outer first."""
        out: list[Layer] = []
        for layer in self.layers:
            out.append(layer)
            for body in layer.bodies:
                out.extend(body.graph.walk())
        return out


class Mean(NamedTuple):
    """One channel's entry of a `<pre-process>` block: a value, or a mean image in the weights file."""

    channel: int
    value: float | None
    blob: tuple[int, int] | None  # (offset, size) in bytes
    line: int


class PreProcess(NamedTuple):
    """An IR's `<pre-process>` block: per-channel means that OpenVINO's reader subtracts from an input."""

    input_name: str  # the Parameter's layer name; "" = the first 4-D input, else the first input
    means: tuple[Mean, ...]
    line: int


@dataclass(frozen=True)
class IRModel:
    """A whole IR: the main graph, the IR version and where it came from."""

    name: str
    ir_version: int
    graph: Graph
    xml_path: str
    bin_path: str | None
    pre_process: PreProcess | None = None

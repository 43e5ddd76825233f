"""The one translation loop: IR graph (main or body) -> nodes in a GraphBuilder."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import onnx_ir as oir

from ir2onnx.errors import ConversionError, LayerConversionError, UnsupportedOp, UnsupportedOpsError
from ir2onnx.ir.element_types import ElementType
from ir2onnx.ir.model import Graph, Layer
from ir2onnx.ir.weights import Weights, needed_bytes
from ir2onnx.translate import registry
from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext, States, copy_runtime_dims, set_value_type, value_type

STRUCTURAL_TYPES = ("parameter", "result", "const", "constant")
# 4-bit integer weights that only feed Convert layers (weight decompression) stay packed in ONNX INT4/UINT4
_PACKED = {"u4": "UINT4", "i4": "INT4"}
_PACKED_OPSET = 21


def find_unsupported(graph: Graph) -> list[UnsupportedOp]:
    """Every (type, version) without a converter, bodies included, with counts and example locations."""
    found: dict[tuple[str, str], list[Layer]] = {}
    for layer in graph.walk():
        if layer.type_key in STRUCTURAL_TYPES:  # no converter to look up, but a version OpenVINO must know
            if layer.version and registry.opset_problem(layer.type, layer.version) is not None:
                found.setdefault((layer.type, layer.version), []).append(layer)
        elif registry.lookup_layer(layer) is None:
            found.setdefault((layer.type, layer.version or "no version"), []).append(layer)
    return [UnsupportedOp(t, v, len(ls), tuple(layer.where() for layer in ls[:3]), _reason(t, v))
            for (t, v), ls in sorted(found.items())]


def _reason(op_type: str, version: str) -> str:
    """Why a (type, version) is refused: a version OpenVINO would not read, or an op with no exact ONNX form."""
    problem = registry.opset_problem(op_type, version) if version != "no version" else None
    if problem:
        return problem
    why = registry.refusal_reason(op_type)
    return f"not convertible: {why}" if why else ""


def check_supported(graph: Graph) -> None:
    missing = find_unsupported(graph)
    if missing:
        raise UnsupportedOpsError(missing)


class Translator:
    """Shared state of one conversion (the weights, the variables). Bodies are translated by the same loop.
    (Converters see it as context.BodyTranslator.)"""

    def __init__(self, weights: Weights | None) -> None:
        self.weights = weights
        self._consts: dict[tuple[object, ...], oir.Value] = {}  # Const layers sharing bytes share one initializer
        self._consumer_map: dict[int, dict[str, list[Layer]]] = {}
        # "PATH:PORT" -> the value carrying that layer output (see layer_map.py), and the loops being translated
        self.layer_values: dict[str, oir.Value] = {}
        self._scopes: list[tuple[Layer, str]] = []
        self.states = States()

    def _scope(self, graph: Graph) -> str:
        """The id path of the bodies enclosing `graph` (`7/3/` inside body 3 of body 7; `""` for the main graph)."""
        if not self._scopes:
            return ""
        owner, outer = self._scopes[-1]
        bodies = owner.bodies
        index = next((i for i, body in enumerate(bodies) if body.graph is graph), 0)
        return f"{outer}{owner.id}{'' if len(bodies) == 1 else f'.{index}'}/"

    def consumers(self, graph: Graph, layer: Layer) -> list[Layer]:
        """The layers of `graph` that read an output of `layer` (once each)."""
        key = id(graph)
        if key not in self._consumer_map:
            self._consumer_map[key] = _consumer_index(graph)
        return self._consumer_map[key].get(layer.id, [])

    def translate(self, graph: Graph, b: GraphBuilder, bindings: Mapping[str, oir.Value]) -> dict[str, oir.Value]:
        """Emit `graph` into `b`. `bindings` gives each Parameter id its value; returns Result id -> value."""
        values: dict[tuple[str, int], oir.Value] = {}
        results: dict[str, oir.Value] = {}
        scope = self._scope(graph)
        for layer in graph.topological_order():
            key = layer.type_key
            if key == "parameter":
                values[(layer.id, 0)] = self.layer_values[f"{scope}{layer.id}:0"] = bindings[layer.id]
                continue
            if key in ("const", "constant"):
                values[(layer.id, 0)] = self._const(layer, b, graph)
                continue
            inputs = [values[(s.layer.id, s.output)] for s in (graph.source(layer, i) for i in range(len(layer.inputs)))]
            if key == "result":
                results[layer.id] = inputs[0]
                continue
            self._scopes.append((layer, scope))
            try:
                produced = self._convert_layer(layer, graph, inputs, b)
            finally:
                self._scopes.pop()
            values.update(produced)
            self.layer_values.update({f"{scope}{lid}:{port}": v for (lid, port), v in produced.items()})
        return results

    def _const(self, layer: Layer, b: GraphBuilder, graph: Graph) -> oir.Value:
        c = layer.const
        assert c is not None and self.weights is not None
        packed = c.element_type.name in _PACKED and {x.type_key for x in self.consumers(graph, layer)} == {"convert"}
        if packed and b.opset < _PACKED_OPSET:
            packed = False
            if not b.opset_forced:  # worth a newer opset: 4-bit weights would take a byte each
                b.where = layer.where()
                b.require_opset(_PACKED_OPSET, f"{c.element_type.name} weights stay packed (ONNX INT4/UINT4)")
        key = (c.offset, c.size, c.element_type.name, c.shape, packed)
        if key not in self._consts:
            hint = layer.name or f"const_{layer.id}"
            if packed:
                raw = self.weights.raw(c.offset, needed_bytes(c.element_type, c.shape))
                v = b.packed_initializer(raw, oir.DataType[_PACKED[c.element_type.name]], c.shape, hint)
            else:
                v = b.initializer(self.weights.array(c), hint)
            set_value_type(v, c.element_type)
            self._consts[key] = v
        return self._consts[key]

    def _convert_layer(self, layer: Layer, graph: Graph, inputs: Sequence[oir.Value],
                       b: GraphBuilder) -> dict[tuple[str, int], oir.Value]:
        fn = registry.lookup_layer(layer)
        if fn is None:  # check_supported() runs first; this guards direct use of translate()
            raise UnsupportedOpsError([UnsupportedOp(layer.type, layer.version, 1, (layer.where(),))])
        saved = b.hint, b.layer, b.where
        b.hint, b.layer, b.where = layer.name or f"{layer.type}_{layer.id}", layer, layer.where()
        b.require_opset(registry.min_onnx_opset(fn), f"{layer.type} is expressed with ONNX ops of that opset")
        ctx = LayerContext(layer, graph, inputs, b, self, registry.layer_opset(layer.type, layer.version))
        try:
            out = fn(ctx)
        except ConversionError:
            raise
        except MemoryError as e:  # attributes asking for more than the machine holds (a pooled grid of 2^40 cells)
            raise LayerConversionError(f"{layer.where()}: converting this layer needs more memory than there is "
                                       f"({e or 'MemoryError'}): check its attributes") from e
        except Exception as e:  # a converter bug must still name the layer
            raise LayerConversionError(f"{layer.where()}: internal error in the converter: {type(e).__name__}: {e}") from e
        finally:
            b.hint, b.layer, b.where = saved  # nodes emitted after a body's translation belong to the enclosing layer
        outs = [out] if isinstance(out, oir.Value) else list(out)
        if len(outs) < len(layer.outputs):
            raise LayerConversionError(
                f"{layer.where()}: converter produced {len(outs)} outputs for {len(layer.outputs)} ports")
        produced: dict[tuple[str, int], oir.Value] = {}
        for i, port in enumerate(layer.outputs):
            if value_type(outs[i]) is None:
                set_value_type(outs[i], port.element_type)
            produced[(layer.id, i)] = outs[i]
        return produced


def _consumer_index(graph: Graph) -> dict[str, list[Layer]]:
    """Layer id -> the layers that read its outputs."""
    out: dict[str, list[Layer]] = {}
    for (lid, _), src in sorted(graph.sources.items()):
        readers = out.setdefault(src.layer.id, [])
        if graph.by_id[lid] not in readers:
            readers.append(graph.by_id[lid])
    return out


def body_output(b: GraphBuilder, value: oir.Value, taken: set[oir.Value]) -> oir.Value:
    """A value usable as a graph output of `b` (main graph or body): produced there and not already an output,
    else an Identity of it."""
    if not b.owns(value) or value in taken:
        copy = b.identity(value)
        set_value_type(copy, value_type(value))
        copy_runtime_dims(value, copy)
        value = copy
    taken.add(value)
    return value


def declare_type(value: oir.Value, et: ElementType | None, rank: int | None) -> None:
    """Give a subgraph/graph boundary value its ONNX type (dims left unknown: ONNX inference fills them)."""
    if et is not None:
        value.type = oir.TensorType(onnx_dtype(et))
    if rank is not None:
        value.shape = oir.Shape([None] * rank)

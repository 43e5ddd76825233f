"""A readable summary of an IR: op counts, the structure of every TensorIterator/Loop, and the form its
FakeQuantize layers take in ONNX."""

from __future__ import annotations

from collections import Counter

import numpy as np

from ir2onnx.ir.fake_quantize import integer_grid
from ir2onnx.ir.model import Graph, Layer
from ir2onnx.ir.weights import Weights

_LOOPS = ("tensoriterator", "loop")


def op_counts(graph: Graph) -> Counter[str]:
    return Counter(f"{layer.type}-{layer.version or '?'}" for layer in graph.walk())


def describe_loops(graph: Graph, indent: int = 0) -> list[str]:
    """One block per TensorIterator/Loop: port map classified, back edges, body ops; nested loops indented."""
    lines: list[str] = []
    pad = "  " * indent
    for layer in graph.layers:
        if layer.type_key == "if":
            for name, branch in zip(("then", "else"), layer.branches):
                inner = describe_loops(branch.graph, indent + 1)
                if inner:
                    lines.append(f"{pad}If {layer.id} '{layer.name}' {name} branch (line {layer.line})")
                    lines.extend(inner)
            continue
        if layer.type_key not in _LOOPS or layer.body is None:
            continue
        body = layer.body
        by_id = body.graph.by_id
        back = {be.to_layer: be.from_layer for be in body.back_edges}
        lines.append(f"{pad}{layer.type} {layer.id} '{layer.name}' (line {layer.line})")
        for e in sorted(body.inputs, key=lambda e: e.external_port_id):
            p = by_id.get(e.internal_layer_id)
            pname = f"{e.internal_layer_id} '{p.name}'" if p else e.internal_layer_id
            if e.purpose == "current_iteration":
                kind = "current iteration"
            elif e.sliced:
                kind = f"sliced axis={e.axis} start={e.start} end={e.end} stride={e.stride} part_size={e.part_size}"
            elif e.internal_layer_id in back:
                kind = f"merged (back edge from Result {back[e.internal_layer_id]})"
            else:
                kind = "invariant"
            src = "" if e.external_port_id < 0 else f"input {e.external_port_id} -> "
            lines.append(f"{pad}  in  {src}Parameter {pname}: {kind}")
        for e in sorted(body.outputs, key=lambda e: e.external_port_id):
            r = by_id.get(e.internal_layer_id)
            rname = f"{e.internal_layer_id} '{r.name}'" if r else e.internal_layer_id
            if e.purpose == "execution_condition":
                kind = "execution condition"
            elif e.sliced:
                kind = f"concatenated axis={e.axis} start={e.start} end={e.end} stride={e.stride} part_size={e.part_size}"
            else:
                kind = "last value"
            dst = "" if e.external_port_id < 0 else f" -> output {e.external_port_id}"
            lines.append(f"{pad}  out Result {rname}{dst}: {kind}")
        for be in body.back_edges:
            lines.append(f"{pad}  back edge Result {be.from_layer} -> Parameter {be.to_layer}")
        counts = Counter(layer.type for layer in body.graph.layers if layer.type_key not in ("parameter", "result"))
        lines.append(f"{pad}  body ops: " + ", ".join(f"{t} x{n}" for t, n in sorted(counts.items())))
        lines.extend(describe_loops(body.graph, indent + 1))
    return lines



def fake_quantize_forms(graph: Graph, weights: Weights | None) -> Counter[str]:
    """How the FakeQuantize layers (bodies included) convert with `--quantization onnx`: "as QuantizeLinear/
    DequantizeLinear" (or "as DequantizeLinear of stored integers" on a constant input), else why they keep the
    exact composition (ir/fake_quantize.py). Ranges are read where they are Const layers (through Converts)."""
    forms: Counter[str] = Counter()
    for g in graph.graphs():
        for layer in g.layers:
            if layer.type != "FakeQuantize":
                continue
            x = _constant(g, layer, 0, weights)
            ranges = [_constant(g, layer, i, weights) for i in range(1, 5)]
            dims = layer.inputs[0].dims if layer.inputs else None
            grid = integer_grid(int(layer.data.get("levels", "0")), ranges, len(dims) if dims is not None else None,
                                x is not None)
            forms["kept exact: " + grid if isinstance(grid, str) else
                  "as DequantizeLinear of stored integers" if x is not None else "as QuantizeLinear/DequantizeLinear"] += 1
    return forms


def _constant(graph: Graph, layer: Layer, port: int, weights: Weights | None) -> np.ndarray | None:
    """The value of a layer's input where a Const (behind Converts) gives it."""
    if weights is None or port >= len(layer.inputs):
        return None
    src = graph.source(layer, port).layer
    while src.type == "Convert" and src.inputs:
        src = graph.source(src, 0).layer
    if src.type != "Const" or src.const is None:
        return None
    try:
        return np.asarray(weights.array(src.const), np.float32)
    except Exception:  # noqa: BLE001  a Const past the .bin's end: validation says so; here it is only not known
        return None

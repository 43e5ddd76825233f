"""A readable summary of an IR: op counts and the structure of every TensorIterator/Loop."""

from __future__ import annotations

from collections import Counter

from ir2onnx.ir.model import Graph

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


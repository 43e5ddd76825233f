"""Layer by layer: every IR layer's output (OpenVINO, all layer outputs exposed) against the ONNX value that
carries it (the layer map written at conversion, values exposed as extra outputs), in topological order. When the
first layer that differs is a TensorIterator/Loop, its body is run alone in both runtimes on the inputs of the
first iteration (taken from OpenVINO's values of the loop's inputs) and compared the same way, descending further
into nested loops."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from ir2onnx.ir.model import Graph, IRModel, Layer
from ir2onnx.translate import layer_map
from ir2onnx.verify.compare import compare_output
from ir2onnx.verify.isolate import RuntimeFailure, run_jobs
from ir2onnx.verify.jobs import (
    OnnxFile,
    finish,
    input_dims,
    model_states,
    ort_job,
    ov_job,
    reference_failure,
    tie_slack,
)
from ir2onnx.verify.onnx_edit import defined_names, expose, find_body, standalone_body
from ir2onnx.verify.quantized import MOVES, holds_quantizers
from ir2onnx.verify.report import CheckReport, LayerComparison, LayerwiseReport

_SKIP = ("parameter", "const", "constant", "result")
_LOOPS = ("tensoriterator", "loop")
MAX_DEPTH = 8
# An intermediate layer also passes within PEAK_RTOL * sqrt(its depth) of its tensor's largest magnitude (f32
# rounding accumulates along the layers; the model's outputs keep the check's own tolerances)
PEAK_RTOL = 2e-5
# The default passes move work out of loop bodies (hoisting, lifting per-slice work): such a body reads values
# that have no IR counterpart, and cannot be run alone on the IR's first-iteration inputs.
_NO_OPTIMIZE = (" (an ONNX body rewritten by the optimisation passes; convert with --no-optimize to compare loop "
                "bodies layer by layer)")


class _Level:
    """One graph compared: the IR graph, its key prefix in the layer map, and the id prefix in reports."""

    def __init__(self, graph: Graph, prefix: str) -> None:
        self.graph = graph
        self.prefix = prefix
        counts = Counter(layer.name for layer in graph.layers)
        self.ambiguous = {n for n, c in counts.items() if c > 1}
        self.depth = _depths(graph)

    def ports(self, lmap: Mapping[str, str], defined: set[str]) -> list[tuple[Layer, int, str]]:
        """(layer, port, ONNX value) for every comparable layer output, in topological order."""
        out = []
        for layer in self.graph.topological_order():
            if layer.type_key in _SKIP or layer.name in self.ambiguous:
                continue
            for port in range(len(layer.outputs)):
                name = lmap.get(layer_map.key(f"{self.prefix}{layer.id}", port))
                if name is not None and name in defined:
                    out.append((layer, port, name))
        return out

    def compare(self, ports: list[tuple[Layer, int, str]], got: list[np.ndarray], ov: Mapping[tuple[str, int], np.ndarray],
                rtol: float, atol: float, ties: list[np.ndarray | None] | None = None,
                strict: bool = False) -> list[LayerComparison]:
        """Each port's comparison; `strict`: with the outputs' tolerances alone (no allowance for depth)."""
        rows = []
        for i, ((layer, port, name), g) in enumerate(zip(ports, got)):
            ref = ov.get((layer.name, port))
            if ref is None:
                continue
            peak = 0.0 if strict else PEAK_RTOL * float(np.sqrt(self.depth.get(layer.id, 1)))
            c = compare_output(name, g, ref, rtol, atol, scaled=True, peak_rtol=peak,
                               ties=ties[i] if ties is not None and i < len(ties) else None)
            rows.append(LayerComparison(f"{self.prefix}{layer.id}", layer.name, layer.type, layer.line, port, name, c))
        return rows


def _ov_layers(info: dict, arrays: list[np.ndarray]) -> dict[tuple[str, int], np.ndarray]:
    n = info["outputs"]
    return {(k[0], int(k[1])): a for k, a in zip(info["layers"], arrays[n:n + len(info["layers"])])}


def run_layerwise(ir_model: IRModel, onnx_file: OnnxFile, feed: Mapping[str, np.ndarray], notes: list[str],
                  common: dict, *, given: bool, rtol: float, atol: float, timeout: float | None,
                  bin_path: str | None) -> CheckReport:
    proto = onnx_file.proto
    device = common["device"]
    lmap = layer_map.read({p.key: p.value for p in proto.metadata_props})
    level = _Level(ir_model.graph, "")
    ports = level.ports(lmap, defined_names(proto.graph)) if lmap else []
    lw_notes: list[str] = []
    if not lmap:
        lw_notes.append("the ONNX model carries no IR layer map (it was not written by this ir2onnx): only the "
                        "outputs were compared")
    if level.ambiguous:
        lw_notes.append(f"layers sharing a name were not compared: {', '.join(sorted(level.ambiguous))}")
    ref = run_jobs([ov_job(ir_model.xml_path, bin_path, feed, timeout, layers=True,
                           states=model_states(proto), shapes=input_dims(proto))])[0]
    if isinstance(ref, RuntimeFailure):
        raise reference_failure(ref, notes, given)
    exposed, _ = expose(onnx_file.full(), [name for _, _, name in ports])
    got = run_jobs([ort_job(onnx_file.write(exposed), feed, device, timeout)])[0]
    n_out = len(proto.graph.output)
    if isinstance(got, RuntimeFailure):
        return finish(proto, got, ref, notes, common, rtol, atol)
    ties = out_ties = None
    if holds_quantizers(proto):  # what rounding at quantization ties explains, layer by layer (verify/quantized.py)
        slack = tie_slack(exposed, onnx_file, feed, got, device, timeout)
        if slack is not None:
            out_ties, ties = slack[:n_out], slack[n_out:]
    layers = _ov_layers(ref.info, ref.arrays)
    rows = level.compare(ports, got.arrays[n_out:], layers, rtol, atol, ties)
    outputs = finish(proto, got, ref, notes, common, rtol, atol, ties=out_ties)
    if not outputs.passed and all(r.comparison.passed for r in rows):  # name a divergence all the same
        rows = level.compare(ports, got.arrays[n_out:], layers, rtol, atol, ties, strict=True)
        lw_notes.append("the outputs differ, but no layer beyond the allowance for f32 rounding in deep networks: "
                        "layers were judged with the outputs' tolerances alone")
    report = LayerwiseReport("", tuple(rows), notes=tuple(lw_notes))
    first = report.first_divergence
    if first is not None:
        layer = ir_model.graph.by_id[first.id]
        if layer.type_key in _LOOPS:
            report = LayerwiseReport("", tuple(rows), _descend(ir_model, onnx_file, feed, [layer], lmap, device,
                                                               rtol, atol, timeout, bin_path), tuple(lw_notes))
    return finish(proto, got, ref, notes, common, rtol, atol, layerwise=report, ties=out_ties)


def _descend(ir_model: IRModel, onnx_file: OnnxFile, feed: Mapping[str, np.ndarray], path: list[Layer],
             lmap: Mapping[str, str], device: str, rtol: float, atol: float, timeout: float | None,
             bin_path: str | None) -> LayerwiseReport:
    """Run the body of path[-1] alone in both runtimes on its first iteration's inputs and compare its layers."""
    loop = path[-1]
    assert loop.body is not None
    scope = "/".join(layer.id for layer in path)
    level = _Level(loop.body.graph, scope + "/")

    def stop(reason: str) -> LayerwiseReport:
        return LayerwiseReport(scope, (), notes=(reason + _NO_OPTIMIZE,))

    fused = _fused_into(onnx_file.proto, lmap, scope)
    if fused is not None:
        cells = [layer.where() for layer in loop.body.graph.topological_order() if layer.type_key not in _SKIP]
        listed = ", ".join(cells[:6]) + (f" and {len(cells) - 6} more" if len(cells) > 6 else "")
        note = (f"the body of {loop.where()} was fused into the ONNX {fused[0]} node '{fused[1]}', which implements "
                f"its layers {listed}: the difference lies in them (convert with --no-fuse --no-optimize to compare "
                "them one by one)")
        return LayerwiseReport(scope, (), notes=(note,))
    ref = run_jobs([ov_job(ir_model.xml_path, bin_path, feed, timeout, layers=True,
                           body_path=[layer.name for layer in path], shapes=input_dims(onnx_file.proto))])[0]
    if isinstance(ref, RuntimeFailure):
        return stop(f"OpenVINO could not run the body of {loop.where()} alone: {ref.reason}")
    info, arrays = ref.info, ref.arrays
    body_feed = dict(zip(info["body_parameters"], arrays[len(arrays) - info["body_feeds"]:]))
    full = onnx_file.full()
    feeds: dict[str, np.ndarray] = {}
    for p in loop.body.graph.parameters:
        name = lmap.get(layer_map.key(f"{scope}/{p.id}", 0))
        if name is None or p.name not in body_feed or p.name in level.ambiguous:
            return stop(f"body {p.where()} has no counterpart in the ONNX model: the body was not run alone")
        feeds[name] = body_feed[p.name]
    candidates = level.ports(lmap, _all_names(full.graph))
    found = find_body(full, [name for _, _, name in candidates])
    if found is None:
        return stop(f"no ONNX body computes the layers of {loop.where()} (fused or optimised away)")
    owner, body, enclosing = found
    local = defined_names(body)
    ports = [(layer, port, name) for layer, port, name in candidates if name in local and name not in feeds]
    try:
        alone, alone_feed = standalone_body(full, owner, body, enclosing, feeds, [name for _, _, name in ports])
    except ValueError as e:
        return stop(f"the ONNX body of {loop.where()} cannot run alone: {e}")
    got = run_jobs([ort_job(onnx_file.write(alone), alone_feed, device, timeout)])[0]
    if isinstance(got, RuntimeFailure):
        return stop(f"onnxruntime could not run the body of {loop.where()} alone: {got.reason}")
    rows = level.compare(ports, got.arrays, _ov_layers(info, arrays), rtol, atol)
    notes: list[str] = []
    body_report = None
    first = next((r for r in rows if not r.comparison.passed), None)
    if first is None:
        notes.append(f"the body of {loop.where()} computes the same on its first iteration: the difference lies in "
                     "how iterations are chained (back edges, slicing, concatenation, iteration count, condition)")
    else:
        layer = loop.body.graph.by_id[first.id.rsplit("/", 1)[-1]]
        if layer.type_key in _LOOPS and len(path) < MAX_DEPTH:
            body_report = _descend(ir_model, onnx_file, feed, [*path, layer], lmap, device, rtol, atol, timeout,
                                   bin_path)
    return LayerwiseReport(scope, tuple(rows), body_report, tuple(notes))


_FUSED = ("LSTM", "GRU", "RNN")
_MOVES = MOVES | {"Cast", "If"}  # and a guarding If's branches


def _fused_into(proto: Any, lmap: Mapping[str, str], scope: str) -> tuple[str, str] | None:
    """The ONNX LSTM/GRU/RNN node a loop layer's outputs come from (through ops that move values), where the loop
    was fused into one: (op type, node name)."""
    producer: dict[str, Any] = {}

    def index(graph: Any) -> None:
        for node in graph.node:
            for out in node.output:
                producer.setdefault(out, node)
            for a in node.attribute:
                if a.type == a.GRAPH:
                    index(a.g)

    index(proto.graph)
    for key, value in lmap.items():
        if key.rpartition(":")[0] != scope:
            continue
        todo, seen = [value], set()
        while todo:
            node = producer.get(todo.pop())
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if node.op_type in _FUSED:
                return node.op_type, node.name
            if node.op_type in _MOVES:
                todo.extend(node.input)
                for a in node.attribute:  # an If's branch outputs
                    if a.type == a.GRAPH:
                        todo.extend(o.name for o in a.g.output)
    return None


def _depths(graph: Graph) -> dict[str, int]:
    """Each layer's depth: the most layers on a path from the graph's inputs to it, itself included."""
    sources = graph.sources
    depth: dict[str, int] = {}
    for layer in graph.topological_order():
        ins = [sources[(layer.id, i)].layer.id for i in range(len(layer.inputs)) if (layer.id, i) in sources]
        depth[layer.id] = 1 + max((depth.get(i, 0) for i in ins), default=0)
    return depth


def _all_names(graph) -> set[str]:  # type: ignore[no-untyped-def]
    from ir2onnx.verify.onnx_edit import subgraphs

    names = defined_names(graph)
    for _, g in subgraphs(graph):
        names |= defined_names(g)
    return names

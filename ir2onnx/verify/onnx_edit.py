"""ONNX model surgery for the layer-by-layer check: values exposed as extra outputs, a loop body cut out to run
alone."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ir2onnx.markers import EQUIVALENT_BRANCHES

EXPOSED_PREFIX = "ir2onnx.exposed."


def subgraphs(graph: onnx.GraphProto) -> Iterator[tuple[onnx.NodeProto, onnx.GraphProto]]:
    """(owner node, body) for every nested graph, outer first."""
    for node in graph.node:
        for a in node.attribute:
            bodies = [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)
            for g in bodies:
                yield node, g
                yield from subgraphs(g)


def defined_names(graph: onnx.GraphProto) -> set[str]:
    """Names defined directly in `graph`: inputs, initializers, node outputs."""
    names = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    names |= {o for n in graph.node for o in n.output if o}
    return names


def free_names(graph: onnx.GraphProto) -> set[str]:
    """Names `graph` (with its own bodies) reads but does not define: values of the enclosing graphs."""
    defined = defined_names(graph)
    used: set[str] = set()
    for n in graph.node:
        used.update(i for i in n.input if i)
        for a in n.attribute:
            for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                used |= free_names(g)
    used.update(o.name for o in graph.output)
    return used - defined


def node_reads(node: onnx.NodeProto) -> set[str]:
    reads = {i for i in node.input if i}
    for a in node.attribute:
        for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
            reads |= free_names(g)
    return reads


def expose(model: onnx.ModelProto, names: Sequence[str]) -> tuple[onnx.ModelProto, list[str]]:
    """A copy of `model` whose main graph also outputs `names` (through Identity nodes, after its own outputs)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    exposed = []
    for i, name in enumerate(names):
        new = f"{EXPOSED_PREFIX}{i}"
        out.graph.node.append(helper.make_node("Identity", [name], [new], name=new))
        out.graph.output.append(onnx.ValueInfoProto(name=new))
        exposed.append(new)
    return out, exposed


def find_body(model: onnx.ModelProto, produced: Sequence[str]) -> tuple[onnx.NodeProto, onnx.GraphProto,
                                                                         list[onnx.GraphProto]] | None:
    """The nested graph whose nodes produce any of `produced`: (owner node, body, enclosing graphs outer first)."""
    wanted = set(produced)

    def search(graph: onnx.GraphProto, chain: list[onnx.GraphProto]):  # type: ignore[no-untyped-def]
        for node in graph.node:
            for a in node.attribute:
                for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                    if wanted & {o for n in g.node for o in n.output}:
                        return node, g, chain + [graph]
                    hit = search(g, chain + [graph])
                    if hit:
                        return hit
        return None

    return search(model.graph, [])


def standalone_body(model: onnx.ModelProto, owner: onnx.NodeProto, body: onnx.GraphProto,
                    enclosing: Sequence[onnx.GraphProto], feeds: Mapping[str, np.ndarray],
                    wanted: Sequence[str]) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """`body` as a model of its own: the values named in `feeds` become its inputs (what computes them is left
    out), `wanted` its outputs. Returns the model and its full feed (a Loop body's iteration number 0 and
    condition true added). Raises ValueError naming a value of the enclosing graphs it would still need."""
    producer = {o: n for n in body.node for o in n.output if o}
    inits = {t.name: t for g in [*enclosing, body] for t in g.initializer}
    formal = [i.name for i in body.input]
    extra: dict[str, np.ndarray] = {}
    if owner.op_type == "Loop" and len(formal) >= 2:
        extra = {formal[0]: np.array(0, dtype=np.int64), formal[1]: np.array(True)}
    keep: set[int] = set()
    need_inits: set[str] = set()
    inputs: dict[str, np.ndarray] = {}
    stack = list(wanted)
    seen: set[str] = set()
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in feeds:
            inputs[name] = np.asarray(feeds[name])
        elif name in producer:
            node = producer[name]
            if id(node) not in keep:
                keep.add(id(node))
                stack.extend(node_reads(node))
        elif name in inits:
            need_inits.add(name)
        elif name in extra:
            inputs[name] = extra[name]
        else:
            raise ValueError(f"the ONNX body reads '{name}', which only the enclosing graph computes")
    nodes = [n for n in body.node if id(n) in keep]
    exposed = [f"{EXPOSED_PREFIX}{i}" for i in range(len(wanted))]
    nodes += [helper.make_node("Identity", [w], [e], name=e) for w, e in zip(wanted, exposed)]
    graph = helper.make_graph(
        nodes, f"{body.name}_alone",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
         for n, v in inputs.items()],
        [onnx.ValueInfoProto(name=e) for e in exposed],
        [inits[n] for n in sorted(need_inits)])
    out = helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    return out, inputs


def all_nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    """The nodes of `graph` and of every nested graph."""
    return list(graph.node) + [n for _, g in subgraphs(graph) for n in g.node]


def equivalent_branch_ifs(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    """The If nodes, at any depth, whose branches compute the same outputs (markers.py)."""
    return [n for n in all_nodes(graph)
            if n.op_type == "If" and any(p.key == EQUIVALENT_BRANCHES for p in n.metadata_props)]


def forced_branches(model: onnx.ModelProto) -> list[tuple[str, onnx.ModelProto]]:
    """Copies of `model` with every If of equivalent_branch_ifs taking its then-branch, then its else-branch
    ([] when there is none)."""
    if not equivalent_branch_ifs(model.graph):
        return []
    variants = []
    for label, value in (("then-branches", True), ("else-branches", False)):
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        name = f"ir2onnx.forced_{label}"
        copy.graph.initializer.append(numpy_helper.from_array(np.array([value]), name))
        for node in equivalent_branch_ifs(copy.graph):
            node.input[0] = name
        variants.append((label, copy))
    return variants

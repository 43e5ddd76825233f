"""What the loop passes share: finding ONNX Loop/Scan nodes and their bodies, scopes, and constant inputs."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import onnx_ir as ir

LOOP_OPS = ("Loop", "Scan")

# Elementwise ops of one input (attributes aside): the result has the input's shape, element by element.
UNARY_ELEMENTWISE = frozenset({
    "Abs", "Ceil", "Cos", "Cast", "Elu", "Erf", "Exp", "Floor", "HardSigmoid", "Identity", "LeakyRelu", "Log", "Neg",
    "Not", "Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sign", "Sin", "Softplus", "Softsign", "Sqrt", "Tanh"})
# Elementwise ops of two inputs that broadcast them (numpy rules).
BROADCASTING_BINARY = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "And", "Or", "Equal", "Greater",
                                 "Less"})

# Ops whose result differs from one evaluation to the next: never moved out of a loop body.
NONDETERMINISTIC = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
                              "Multinomial", "Bernoulli", "Dropout"})


def is_default_domain(node: ir.Node) -> bool:
    return node.domain in ("", "ai.onnx")


def subgraphs(node: ir.Node) -> Iterator[ir.Graph]:
    for attr in node.attributes.values():
        if attr.type == ir.AttributeType.GRAPH:
            yield attr.as_graph()
        elif attr.type == ir.AttributeType.GRAPHS:
            yield from attr.as_graphs()


# The ONNX ops with graph attributes; a node of another domain may have some too.
_GRAPH_HOLDERS = frozenset({"If", "Loop", "Scan", "SequenceMap"})
_DEFAULT_DOMAINS = frozenset({"", "ai.onnx"})


def may_hold_graphs(node: ir.Node) -> bool:
    """Whether `node` can have graph attributes: only those nodes have their attributes read. (Tested before a
    generator is made for a node: every pass walks the whole model, most of whose nodes hold none.)"""
    return node.op_type in _GRAPH_HOLDERS or node.domain not in _DEFAULT_DOMAINS


def all_nodes(graph: ir.Graph) -> Iterator[ir.Node]:
    """Every node of `graph` and of its subgraphs, each node before those of its subgraphs: the order of onnx-ir's
    RecursiveGraphIterator, about 3x faster (every pass walks the whole model, which on a 1,500-layer network cost
    2.5 ms a walk)."""
    for node in graph:
        yield node
        if may_hold_graphs(node):
            for sub in subgraphs(node):
                yield from all_nodes(sub)


def all_graphs(graph: ir.Graph) -> Iterator[ir.Graph]:
    """`graph`, then every subgraph in it at any depth."""
    yield graph
    for node in graph:
        if may_hold_graphs(node):
            for sub in subgraphs(node):
                yield from all_graphs(sub)


def loops_innermost_first(graph: ir.Graph) -> Iterator[tuple[ir.Node, ir.Graph, ir.Graph]]:
    """(loop node, its body, the graph holding the node) for every ONNX Loop/Scan, bodies before the loops that
    hold them, so that what moves out of an inner loop can move on out of the outer one."""
    for node in list(graph):
        if not may_hold_graphs(node):
            continue
        for sub in subgraphs(node):
            yield from loops_innermost_first(sub)
        if node.op_type in LOOP_OPS and is_default_domain(node) and node.graph is graph:
            yield node, node.attributes["body"].as_graph(), graph


def carried_count(loop: ir.Node) -> int:
    """The values a Loop carries (its inputs after the trip count and condition) or a Scan's states."""
    if loop.op_type == "Loop":
        return len(loop.inputs) - 2
    return len(loop.inputs) - loop.attributes["num_scan_inputs"].as_int()


def stacked_outputs(loop: ir.Node, body: ir.Graph) -> list[tuple[int, int]]:
    """(body output index, stacking axis) of each per-iteration output of a Loop (after the condition and the
    carried values, on axis 0) or Scan (after the states, on its scan_output_axes)."""
    if loop.op_type == "Loop":
        return [(i, 0) for i in range(1 + carried_count(loop), len(body.outputs))]
    stacked = range(carried_count(loop), len(body.outputs))
    return list(zip(stacked, scan_ints(loop, "scan_output_axes", len(stacked))))


def explicit_perm(node: ir.Node | None) -> list[int] | None:
    """A Transpose's `perm` attribute as a list, or None without one (then the reversed axes, whose rank a caller
    might not know)."""
    a = node.attributes.get("perm") if node is not None else None
    return [int(p) for p in a.as_ints()] if a is not None else None


def scan_ints(scan: ir.Node, name: str, count: int) -> list[int]:
    """A Scan's per-input or per-output axes or directions attribute (`name`), with ONNX's default of zeros."""
    a = scan.attributes.get(name)
    return [int(v) for v in a.as_ints()] if a is not None else [0] * count


def defined_in(value: ir.Value, graph: ir.Graph) -> bool:
    """Whether `value` is an input, initializer or node output of `graph` itself (not of an enclosing graph)."""
    return value.graph is graph


def const_array(value: ir.Value | None) -> np.ndarray | None:
    """The value of an initializer or of a Constant node's output, else None."""
    if value is None:
        return None
    if value.const_value is not None:
        return value.const_value.numpy()
    node = value.producer()
    if node is not None and node.op_type == "Constant" and is_default_domain(node) and "value" in node.attributes:
        return node.attributes["value"].as_tensor().numpy()
    return None


def const_ints(value: ir.Value | None) -> list[int] | None:
    arr = const_array(value)
    if arr is None or arr.dtype.kind not in "iu":
        return None
    return [int(v) for v in arr.reshape(-1)]


def rank(value: ir.Value | None) -> int | None:
    if value is None:
        return None
    if value.shape is not None:
        return len(value.shape)
    arr = const_array(value)
    return None if arr is None else arr.ndim


def inherit_meta(new: ir.Node, old: ir.Node | None) -> ir.Node:
    """Give a node a pass makes in place of `old` the metadata of `old` (e.g. the IR layer it was converted from,
    which error messages name)."""
    if old is not None:
        for key, value in old.meta.items():
            new.meta[key] = value
    return new


def keep_read_scan_inputs(scan: ir.Node, body: ir.Graph, axes: list[int], directions: list[int]) -> None:
    """Rewrite the Scan's scan inputs (with these axes and directions, which may include ones just appended) to those
    its body reads."""
    n_state = len(scan.inputs) - len(axes)
    keep = [j for j in range(len(axes))
            if body.inputs[n_state + j].uses() or body.inputs[n_state + j].is_graph_output()]
    values = list(scan.inputs[:n_state]) + [scan.inputs[n_state + j] for j in keep]
    params = list(body.inputs[:n_state]) + [body.inputs[n_state + j] for j in keep]
    scan.resize_inputs(0)
    scan.resize_inputs(len(values))
    for i, v in enumerate(values):
        scan.replace_input_with(i, v)
    body.inputs.clear()
    body.inputs.extend(params)
    scan.attributes["num_scan_inputs"] = ir.AttrInt64("num_scan_inputs", len(keep))
    scan.attributes["scan_input_axes"] = ir.AttrInt64s("scan_input_axes", [axes[j] for j in keep])
    scan.attributes["scan_input_directions"] = ir.AttrInt64s("scan_input_directions", [directions[j] for j in keep])


def take_place(old: ir.Value, new: ir.Value) -> None:
    """`new` replaces `old` everywhere, as a graph output too, with its name and declared type and shape."""
    name, declared_type, declared_shape = old.name, old.type, old.shape
    old.replace_all_uses_with(new, replace_graph_outputs=True)
    old.name = None
    new.name = name
    if declared_type is not None:
        new.type = declared_type
    if declared_shape is not None:
        new.shape = declared_shape


def read_instead(old: ir.Value, new: ir.Value, graph: ir.Graph) -> bool:
    """Readers of `old` read `new`; where `old` is an output of `graph`, `new` takes its place (take_place). False,
    changing nothing, where `new` cannot: it is no value `graph` computes, or is an output already."""
    if not old.is_graph_output():
        old.replace_all_uses_with(new)
        return True
    producer = new.producer()
    if producer is None or producer.graph is not graph or new.is_graph_output():
        return False
    take_place(old, new)
    return True

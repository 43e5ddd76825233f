"""Ways converters get TensorIterator/Loop and recurrent conversions wrong, as edits of a correct ONNX model.

Each mutator takes a model and returns a broken copy, or raises NotApplicable when the model has nothing it can
break that way. They work on the ONNX forms ir2onnx emits (Scan, Loop, LSTM/GRU nodes, fused or single-step inside
a body) through the ONNX protobuf API.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import onnx
from onnx import helper, numpy_helper

INT64_MAX = np.iinfo(np.int64).max


class NotApplicable(Exception):
    pass


# ---- helpers
def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    return out


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    yield graph
    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(a.g)


def _find(model: onnx.ModelProto, op_types: tuple[str, ...]) -> tuple[onnx.GraphProto, int, onnx.NodeProto]:
    """The first node of one of `op_types` (outer graphs first): its graph, index and node."""
    for g in _graphs(model.graph):
        for i, n in enumerate(g.node):
            if n.op_type in op_types:
                return g, i, n
    raise NotApplicable(f"no {'/'.join(op_types)} node")


def _body(node: onnx.NodeProto) -> onnx.GraphProto:
    return next(a.g for a in node.attribute if a.name == "body")


_counter = [0]


def _fresh(hint: str) -> str:
    _counter[0] += 1
    return f"mutated_{hint}_{_counter[0]}"


def _const(g: onnx.GraphProto, at: int, value: np.ndarray) -> tuple[str, int]:
    """A Constant node inserted at `at`; returns its output and the next insertion index."""
    name = _fresh("c")
    g.node.insert(at, helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value))))
    return name, at + 1


def _insert(g: onnx.GraphProto, at: int, op: str, inputs: list[str], **attrs: object) -> tuple[str, int]:
    name = _fresh(op.lower())
    g.node.insert(at, helper.make_node(op, inputs, [name], **attrs))
    return name, at + 1


def _roll_or_reverse(g: onnx.GraphProto, at: int, x: str, axis: int, how: str) -> tuple[str, int]:
    """x rolled by one step on `axis` (chunk t becomes chunk t+1), or reversed, or without its last/with its first
    chunk again."""
    zero, at = _const(g, at, np.array([0], np.int64))
    one, at = _const(g, at, np.array([1], np.int64))
    minus1, at = _const(g, at, np.array([-1], np.int64))
    end, at = _const(g, at, np.array([INT64_MAX], np.int64))
    ax, at = _const(g, at, np.array([axis], np.int64))
    if how == "reverse":
        low, at = _const(g, at, np.array([-INT64_MAX], np.int64))
        return _insert(g, at, "Slice", [x, minus1, low, ax, minus1])
    if how == "drop_last":
        return _insert(g, at, "Slice", [x, zero, minus1, ax])
    head, at = _insert(g, at, "Slice", [x, zero, one, ax])
    if how == "repeat_first":
        return _insert(g, at, "Concat", [x, head], axis=axis)
    tail, at = _insert(g, at, "Slice", [x, one, end, ax])
    return _insert(g, at, "Concat", [tail, head], axis=axis)


def _attr(node: onnx.NodeProto, name: str) -> onnx.AttributeProto | None:
    return next((a for a in node.attribute if a.name == name), None)


def _ints(node: onnx.NodeProto, name: str, default: list[int]) -> list[int]:
    a = _attr(node, name)
    return list(a.ints) if a is not None else list(default)


def _set_ints(node: onnx.NodeProto, name: str, values: list[int]) -> None:
    a = _attr(node, name)
    if a is not None:
        node.attribute.remove(a)
    node.attribute.append(helper.make_attribute(name, values))


def _scan_counts(node: onnx.NodeProto) -> tuple[int, int]:
    """(number of states, number of scan inputs) of a Scan node."""
    n_scan = _attr(node, "num_scan_inputs").i  # type: ignore[union-attr]
    return len(node.input) - n_scan, n_scan


def _loop_sliced_input(model: onnx.ModelProto) -> tuple[onnx.GraphProto, int, onnx.NodeProto, onnx.NodeProto, int]:
    """A Loop whose body slices an outer tensor per iteration (a Slice, or the Gather the default passes make of
    it): (outer graph, loop index, loop, body Slice or Gather, axis)."""
    for g in _graphs(model.graph):
        for i, n in enumerate(g.node):
            if n.op_type != "Loop":
                continue
            body = _body(n)
            local = {o for b in body.node for o in b.output} | {x.name for x in body.input}
            for s in body.node:
                if s.op_type == "Slice" and s.input[0] not in local and len(s.input) > 3:
                    axes = _constant_value(model, body, s.input[3])
                    if axes is not None:
                        return g, i, n, s, int(axes.reshape(-1)[0])
                if s.op_type == "Gather" and s.input[0] not in local and s.input[1] in local:
                    axis = _attr(s, "axis")
                    return g, i, n, s, axis.i if axis is not None else 0
    raise NotApplicable("no Loop with a sliced input")


def _constant_value(model: onnx.ModelProto, body: onnx.GraphProto, name: str) -> np.ndarray | None:
    for g in (model.graph, body):
        for t in g.initializer:
            if t.name == name:
                return numpy_helper.to_array(t)
        for n in g.node:
            if n.op_type == "Constant" and n.output[0] == name:
                return numpy_helper.to_array(n.attribute[0].t)
    return None


def _rename_uses(g: onnx.GraphProto, old: str, new: str, skip: onnx.NodeProto | None = None) -> None:
    """Every reader of `old` in g (and its bodies) reads `new` instead, except `skip`."""
    for n in g.node:
        if n is skip:
            continue
        for k, x in enumerate(n.input):
            if x == old:
                n.input[k] = new
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                _rename_uses(a.g, old, new)
    for o in g.output:
        if o.name == old:
            o.name = new


def _fused(model: onnx.ModelProto) -> tuple[onnx.GraphProto, int, onnx.NodeProto, int]:
    """The first LSTM/GRU/RNN node that runs a whole sequence (not a single step inside a loop body; in the main
    graph or an If branch under it, as behind passes/empty_inputs.py's guard): its graph, index, node and sequence
    axis."""
    graphs = [model.graph]
    for g in graphs:
        for i, n in enumerate(g.node):
            if n.op_type in ("LSTM", "GRU", "RNN"):
                layout = _attr(n, "layout")
                return g, i, n, 1 if layout is not None and layout.i == 1 else 0
            if n.op_type == "If":
                graphs += [a.g for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]
    raise NotApplicable("no fused LSTM/GRU/RNN node")


# ---- mutators, one per way of breaking
def gate_order(model: onnx.ModelProto) -> onnx.ModelProto:
    """Gates of the first LSTM/GRU node (fused, or a single-step cell inside a loop body) in the wrong order:
    LSTM input and forget gates swapped, GRU update and reset gates swapped, in W, R and B alike."""
    m = _copy(model)
    g, i, node = _find(m, ("LSTM", "GRU"))
    hidden = _attr(node, "hidden_size").i  # type: ignore[union-attr]
    gates = 4 if node.op_type == "LSTM" else 3
    a, b = (0, 2) if node.op_type == "LSTM" else (0, 1)
    order = list(range(gates))
    order[a], order[b] = order[b], order[a]
    rows = np.concatenate([np.arange(k * hidden, (k + 1) * hidden) for k in order]).astype(np.int64)
    at = i
    for port, perm in ((1, rows), (2, rows), (3, np.concatenate([rows, rows + gates * hidden]))):
        if len(node.input) <= port or not node.input[port]:
            continue
        idx, at = _const(g, at, perm)
        node.input[port], at = _insert(g, at, "Gather", [node.input[port], idx], axis=1)
    return m


def slice_off_by_one(model: onnx.ModelProto) -> onnx.ModelProto:
    """Each iteration reads the next step's chunk of the first sliced input (the last reads the first)."""
    m = _copy(model)
    try:
        g, i, node = _find(m, ("Scan",))
        n_state, _ = _scan_counts(node)
        axis = _ints(node, "scan_input_axes", [0] * (len(node.input) - n_state))[0]
        rolled, _ = _roll_or_reverse(g, i, node.input[n_state], axis, "roll")
        node.input[n_state] = rolled
        return m
    except NotApplicable:
        pass
    try:
        g, i, _, sl, axis = _loop_sliced_input(m)
        sl.input[0], _ = _roll_or_reverse(g, i, sl.input[0], axis, "roll")
        return m
    except NotApplicable:
        pass
    g, i, node, axis = _fused(m)
    node.input[0], _ = _roll_or_reverse(g, i, node.input[0], axis, "roll")
    return m


def scan_direction_flipped(model: onnx.ModelProto) -> onnx.ModelProto:
    """The first sliced input is walked in the opposite direction."""
    m = _copy(model)
    try:
        _, _, node = _find(m, ("Scan",))
        _, n_scan = _scan_counts(node)
        dirs = _ints(node, "scan_input_directions", [0] * n_scan)
        dirs[0] = 1 - dirs[0]
        _set_ints(node, "scan_input_directions", dirs)
        return m
    except NotApplicable:
        pass
    try:
        g, i, loop, sl, axis = _loop_sliced_input(m)
        sl.input[0], _ = _roll_or_reverse(g, i, sl.input[0], axis, "reverse")
        return m
    except NotApplicable:
        pass
    try:
        g, i, loop = _loop_with_scan_output(m)
        _transform_output(g, i, loop, len(loop.input) - 2, lambda g, at, x: _roll_or_reverse(g, at, x, 0, "reverse"))
        return m
    except NotApplicable:
        pass
    _, _, node, _ = _fused(m)
    direction = _attr(node, "direction")
    now = direction.s.decode() if direction is not None else "forward"
    if now == "bidirectional":
        raise NotApplicable("a bidirectional sequence has no single direction to flip")
    if direction is not None:
        node.attribute.remove(direction)
    node.attribute.append(helper.make_attribute("direction", "reverse" if now == "forward" else "forward"))
    return m


def _loop_with_scan_output(m: onnx.ModelProto) -> tuple[onnx.GraphProto, int, onnx.NodeProto]:
    for g in _graphs(m.graph):
        for i, n in enumerate(g.node):
            if n.op_type == "Loop" and len(n.output) > len(n.input) - 2:
                return g, i, n
    raise NotApplicable("no Loop with a concatenated output")


def _transform_output(g: onnx.GraphProto, i: int, node: onnx.NodeProto, k: int,
                      build: Callable[[onnx.GraphProto, int, str], tuple[str, int]]) -> None:
    """Output k of node i passes through the nodes `build` inserts; its readers see the result."""
    out = node.output[k]
    raw = _fresh("raw")
    node.output[k] = raw
    y, at = build(g, i + 1, raw)
    g.node.insert(at, helper.make_node("Identity", [y], [out]))


def concat_axis_wrong(model: onnx.ModelProto) -> onnx.ModelProto:
    """The first concatenated output is stacked along a different axis before it is merged."""
    m = _copy(model)
    try:
        _, _, node = _find(m, ("Scan",))
        n_state, _ = _scan_counts(node)
        n_scan_out = len(node.output) - n_state
        if n_scan_out == 0:
            raise NotApplicable("Scan without scan outputs")
        axes = _ints(node, "scan_output_axes", [0] * n_scan_out)
        axes[0] = 1 if axes[0] == 0 else 0
        _set_ints(node, "scan_output_axes", axes)
        return m
    except NotApplicable:
        pass
    try:
        g, i, loop = _loop_with_scan_output(m)
    except NotApplicable:
        g, i, node, axis = _fused(m)  # Y [seq, directions, batch, hidden]: sequence and batch axes mixed up
        if not node.output or not node.output[0]:
            raise NotApplicable("the fused node's sequence output is not used") from None
        perm = [2, 1, 0, 3] if axis == 0 else [0, 2, 1, 3]
        _transform_output(g, i, node, 0, lambda g, at, x: _insert(g, at, "Transpose", [x], perm=perm))
        return m
    rank = _stacked_rank(loop)
    to = min(2, rank - 1)  # the iteration axis lands behind the first two body axes (or the only one)
    perm = list(range(1, to + 1)) + [0] + list(range(to + 1, rank))
    _transform_output(g, i, loop, len(loop.input) - 2, lambda g, at, x: _insert(g, at, "Transpose", [x], perm=perm))
    return m


def _stacked_rank(loop: onnx.NodeProto) -> int:
    body = _body(loop)
    k = len(loop.input) - 1  # body outputs: cond, carried..., scan...
    rank = len(body.output[k].type.tensor_type.shape.dim) + 1
    if rank < 2:
        raise NotApplicable("a scalar concatenated output has one axis only")
    return rank


def back_edge_dropped(model: onnx.ModelProto) -> onnx.ModelProto:
    """The first state is not carried to the next iteration: the body returns its initial value instead."""
    m = _copy(model)
    _, _, node = _find(m, ("Scan", "Loop"))
    body = _body(node)
    if node.op_type == "Scan":
        n_state, _ = _scan_counts(node)
        if n_state == 0:
            raise NotApplicable("Scan without state")
        k_in, k_out = 0, 0
    else:
        if len(node.input) <= 2:
            raise NotApplicable("Loop without carried values")
        k_in, k_out = 2, 1
    kept, _ = _insert(body, len(body.node), "Identity", [body.input[k_in].name])
    body.output[k_out].name = kept
    return m


def condition_negated(model: onnx.ModelProto) -> onnx.ModelProto:
    """The Loop continues while its condition is false."""
    m = _copy(model)
    _, _, node = _find(m, ("Loop",))
    body = _body(node)
    negated, _ = _insert(body, len(body.node), "Not", [body.output[0].name])
    body.output[0].name = negated
    return m


def _trip(model: onnx.ModelProto, delta: int) -> onnx.ModelProto:
    m = _copy(model)
    for g in _graphs(m.graph):
        for i, n in enumerate(g.node):
            if n.op_type == "Loop" and n.input[0]:
                d, at = _const(g, i, np.array(delta, np.int64))
                n.input[0], _ = _insert(g, at, "Add", [n.input[0], d])
                return m
            if n.op_type == "Scan":
                n_state, n_scan = _scan_counts(n)
                axes = _ints(n, "scan_input_axes", [0] * n_scan)
                at = i
                for k in range(n_scan):
                    how = "repeat_first" if delta > 0 else "drop_last"
                    n.input[n_state + k], at = _roll_or_reverse(g, at, n.input[n_state + k], axes[k], how)
                return m
    g, i, node, axis = _fused(m)
    if len(node.input) > 4 and node.input[4]:
        raise NotApplicable("the fused node's sequence lengths bound its steps")
    node.input[0], _ = _roll_or_reverse(g, i, node.input[0], axis, "repeat_first" if delta > 0 else "drop_last")
    return m


def trip_count_plus_one(model: onnx.ModelProto) -> onnx.ModelProto:
    """One iteration too many (a Loop's trip count + 1; a Scan reads one more chunk)."""
    return _trip(model, 1)


def trip_count_minus_one(model: onnx.ModelProto) -> onnx.ModelProto:
    """One iteration too few (a Loop's trip count - 1; a Scan misses the last chunk)."""
    return _trip(model, -1)


def outputs_swapped(model: onnx.ModelProto) -> onnx.ModelProto:
    """Two loop-body outputs of the same type and rank trade places (states, or concatenated outputs); without a
    loop, two model outputs of the same type and shape trade values."""
    m = _copy(model)
    for g in _graphs(m.graph):
        for node in g.node:
            if node.op_type not in ("Scan", "Loop"):
                continue
            body = _body(node)
            if node.op_type == "Scan":
                n_state, _ = _scan_counts(node)
                groups = [range(n_state), range(n_state, len(body.output))]
            else:
                n_carried = len(node.input) - 2
                groups = [range(1, 1 + n_carried), range(1 + n_carried, len(body.output))]
            for group in groups:
                pair = _same_type_pair([body.output[k] for k in group])
                if pair:
                    a, b = (group[pair[0]], group[pair[1]])
                    body.output[a].name, body.output[b].name = body.output[b].name, body.output[a].name
                    return m
    pair = _same_type_pair(list(m.graph.output), need_static=True)
    if not pair:
        raise NotApplicable("no two outputs of the same type")
    a, b = (m.graph.output[pair[0]].name, m.graph.output[pair[1]].name)
    ra, rb = _fresh("a"), _fresh("b")
    for n in m.graph.node:
        n.output[:] = [ra if o == a else rb if o == b else o for o in n.output]
        n.input[:] = [ra if x == a else rb if x == b else x for x in n.input]
    m.graph.node.extend([helper.make_node("Identity", [rb], [a]), helper.make_node("Identity", [ra], [b])])
    return m


def _same_type_pair(values: list[onnx.ValueInfoProto], need_static: bool = False) -> tuple[int, int] | None:
    def sig(v: onnx.ValueInfoProto) -> tuple[object, ...]:
        t = v.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim)
        return (t.elem_type, dims if need_static else len(dims))

    for i in range(len(values)):
        for j in range(i + 1, len(values)):
            if sig(values[i]) == sig(values[j]):
                return i, j
    return None


MUTATORS: dict[str, Callable[[onnx.ModelProto], onnx.ModelProto]] = {
    "gate_order": gate_order,
    "slice_off_by_one": slice_off_by_one,
    "scan_direction_flipped": scan_direction_flipped,
    "concat_axis_wrong": concat_axis_wrong,
    "back_edge_dropped": back_edge_dropped,
    "condition_negated": condition_negated,
    "trip_count_plus_one": trip_count_plus_one,
    "trip_count_minus_one": trip_count_minus_one,
    "outputs_swapped": outputs_swapped,
}

"""Views of a Scan or Loop node for recurrent fusion: its carried states, sliced inputs and stacked outputs, how
many iterations it runs, and the lengths its rows run for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.affine import Index, Lin, shape_op
from ir2onnx.passes.analysis.graph import NoMatch, attr, producer, through
from ir2onnx.passes.analysis.values import const_array, const_ints, int_scalar, rank_of, shape_of
from ir2onnx.passes.recurrent.buffers import buffer_row
from ir2onnx.passes.recurrent.full_lengths import dim_root
from ir2onnx.passes.recurrent.views import Buffer, LoopView, State, StepOutput
from ir2onnx.passes.rewrite import Emitter


def _body(node: oir.Node) -> oir.Graph:
    g = attr(node, "body")
    if not isinstance(g, oir.Graph):
        raise NoMatch("no body graph")
    return g

def analyse_scan(node: oir.Node) -> LoopView:
    body = _body(node)
    n_scan = int(attr(node, "num_scan_inputs", 0))  # type: ignore[arg-type]
    n_state = len(node.inputs) - n_scan
    if n_scan != 1:
        raise NoMatch(f"Scan has {n_scan} scan inputs (one sequence is fused)")
    seq = node.inputs[n_state]
    if seq is None:
        raise NoMatch("Scan has an empty scan input")
    in_axes = attr(node, "scan_input_axes") or [0]
    in_dirs = attr(node, "scan_input_directions") or [0]
    seq_shape = shape_of(seq)
    rank = len(seq_shape) if seq_shape is not None else None
    axis = int(in_axes[0])  # type: ignore[index]
    if axis < 0:
        if rank is None:
            raise NoMatch("scan input of unknown rank with a negative axis")
        axis += rank
    if axis and rank is None:
        raise NoMatch("scan input of unknown rank")

    def stack_x(em: Emitter) -> oir.Value:
        return em.to0(seq, axis, rank or 1)

    view = LoopView(node, body.inputs[n_state], stack_x, bool(in_dirs[0]))  # type: ignore[index]
    for i in range(n_state):
        s = State(body.inputs[i], body.outputs[i], node.inputs[i], node.outputs[i])  # type: ignore[arg-type]
        start = _counter(s, body)
        if start is None:
            view.states.append(s)
        else:  # a step counter (OpenVINO's sequence-as-TensorIterator form masks by one)
            view.counters.append((s, start))
    # a Scan has no iteration number: its counters are the step
    view.index = Index(None, {s.body_in: start for s, start in view.counters}, body)
    n_out = len(body.outputs) - n_state
    out_axes = list(attr(node, "scan_output_axes") or [0] * n_out)  # type: ignore[call-overload]
    out_dirs = list(attr(node, "scan_output_directions") or [0] * n_out)  # type: ignore[call-overload]
    for j in range(n_out):
        out = node.outputs[n_state + j]
        a = int(out_axes[j])
        if a < 0:
            out_shape = shape_of(body.outputs[n_state + j])
            if out_shape is None:
                raise NoMatch("scan output of unknown rank with a negative axis")
            a += len(out_shape) + 1
        view.outputs.append(StepOutput(body.outputs[n_state + j], out, a, bool(out_dirs[j])))
    if seq_shape is not None:
        view.steps = seq_shape[axis]
    return view

# a comparison of the step t (t = k + c) with per-row lengths L, as (what it says of the step k, c required):
# "past": k >= L (the row's length is reached), "last": k == L - 1 (the row's last step)
_COMPARE = {"GreaterOrEqual": ("past", 0), "Greater": ("past", 1), "Equal": ("last", 1)}

_MIRRORED = {"LessOrEqual": "GreaterOrEqual", "Less": "Greater", "Equal": "Equal"}

def row_lengths(cond: oir.Value | None, view: LoopView) -> tuple[str, oir.Value] | None:
    """(what, lens) when `cond` compares the step k of a forward loop with per-row lengths `lens` ([batch] integers,
    outer), one condition per batch row: "past" for k >= lens (TensorFlow 1's dynamic_rnn: the iteration number
    `>= lens`; OpenVINO's sequence-as-TensorIterator form: a counter from 1 `> lens`), "last" for k == lens - 1 (that
    form's counter from 1 `== lens`). The lengths may be made [batch, 1] by reshapes of unit axes, and broadcast over
    a [batch, ...] value's other axes (Expand to its shape); else None."""
    if view.index is None or view.reverse or cond is None:
        return None
    chain: list[oir.Node] = []
    v = cond
    while (n := producer(v, "Reshape", "Squeeze", "Unsqueeze")) is not None:
        chain.append(n)
        v = n.inputs[0]
    cmp = producer(v, *_COMPARE, *_MIRRORED)
    if cmp is None or len(cmp.inputs) != 2:
        return None
    a, b = cmp.inputs
    if cmp.op_type == "Equal":
        orders = [(a, b, "Equal"), (b, a, "Equal")]
    else:  # t on the left: a >= b, a > b; mirrored: b <= a, b < a
        orders = [(a, b, cmp.op_type)] if cmp.op_type in _COMPARE else [(b, a, _MIRRORED[cmp.op_type])]
    for t, side, op in orders:
        what, c = _COMPARE[op]
        try:
            at = view.index.lin(t)
        except NoMatch:
            continue
        t_shape = shape_of(t)
        if at != Lin(k=1, const=c) or t_shape is None or any(d != 1 for d in t_shape):  # one step for all rows
            continue
        found = _row_vector(side, view.index.body)
        if found is None:
            continue
        lens, dims = found
        dims = [1] * (len(t_shape) - len(dims)) + dims  # broadcast with the step
        for n in reversed(chain):
            dims = _unit_reshape(n, dims, (lens, cmp.outputs[0]))  # type: ignore[arg-type]
            if dims is None:
                return None
        # [batch, 1] or [batch, *..]: one condition per row of a [batch, ...] state (not [batch], which a state's
        # last axis would meet)
        if len(dims) > 1 and dims[0] == "B" and (dims == ["B", 1] or all(d == "*" for d in dims[1:])):
            return what, lens
        return None
    return None

def _row_vector(v: oir.Value | None, body: oir.Graph) -> tuple[oir.Value, list[object]] | None:
    """(lens, the dims of v) when v is an outer vector `lens` ([batch] integers) made [batch, 1, ..] by reshapes of
    unit axes, cast to another integer type, or broadcast (Expand) to the shape of a [batch, ...] value: its dims
    "B" (the batch rows), 1, or "*" (broadcast along that axis)."""
    glue: list[oir.Node] = []
    # through the body's glue, and outer glue hoisted from it, to the first outer vector
    while (n := producer(v, "Reshape", "Squeeze", "Unsqueeze", "Cast", "Expand")) is not None \
            and (v.graph is body or (rank_of(v) != 1 and n.op_type != "Expand")):  # type: ignore[union-attr]
        glue.append(n)
        v = n.inputs[0]
    if v is None or v.graph is body or rank_of(v) != 1 or (v.dtype is not None and not v.dtype.is_integer()):
        return None
    lens = v
    dims: list[object] | None = ["B"]
    for n in reversed(glue):
        if n.op_type == "Cast":
            if not oir.DataType(attr(n, "to")).is_integer():  # type: ignore[arg-type]
                return None
            continue
        if n.op_type == "Expand":
            dims = _expanded(n, dims, lens)
            if dims is None:
                return None
            continue
        dims = _unit_reshape(n, dims, (lens,))
        if dims is None:
            return None
    return lens, dims

def _expanded(n: oir.Node, dims: list[object], lens: oir.Value) -> list[object] | None:
    """The dims after an Expand of [batch, 1, ..] rows to the shape of a [batch, ...] value (run-time shapes) or to
    a constant shape of the same rank (static shapes); None when it would move the batch rows."""
    if dims[0] != "B" or any(d not in (1, "*") for d in dims[1:]):
        return None
    target = const_ints(n.inputs[1])
    if target is not None:  # (a first dim other than the lengths' count would be a broadcast error)
        rows = (shape_of(lens) or (None,))[0]
        if len(target) != len(dims) or (rows not in (None, 1) and target[0] not in (1, rows)):
            return None
        return ["B"] + ["*" if t != 1 or d == "*" else 1 for t, d in zip(target[1:], dims[1:])]
    sh = shape_op(through(n.inputs[1], "Reshape"))  # the shape of a value whose rows are the batch's
    whole = sh is not None and int(attr(sh, "start", 0)) == 0 and attr(sh, "end") is None  # type: ignore[arg-type]
    if not whole or rank_of(sh.inputs[0]) != len(dims):  # type: ignore[union-attr]
        return None
    return ["B"] + ["*"] * (len(dims) - 1)

def _unit_reshape(n: oir.Node, dims: list[object], rows_of: tuple[oir.Value, ...]) -> list[object] | None:
    """The dims after `n` (Squeeze/Unsqueeze of unit axes, or a Reshape to [1, .., the length of a `rows_of` vector,
    .., 1]); None when it would move the batch rows."""
    if n.op_type in ("Squeeze", "Unsqueeze"):
        axes = const_ints(n.inputs[1]) if len(n.inputs) > 1 else None
        if not axes:
            return None
        if n.op_type == "Squeeze":
            axes = [a % len(dims) for a in axes]
            return None if any(dims[a] != 1 for a in axes) else [d for i, d in enumerate(dims) if i not in axes]
        out: list[object] = list(dims)
        for a in sorted(a % (len(dims) + len(axes)) for a in axes):
            out.insert(a, 1)
        return out
    pieces = producer(through(n.inputs[1], "Cast", "Reshape"), "Concat")
    target: list[object] = []
    for p in pieces.inputs if pieces is not None else [n.inputs[1]]:
        c = const_ints(p)
        sh = producer(through(p, "Cast"), "Shape")
        if c is not None:
            target += c
        elif sh is not None and sh.inputs[0] in rows_of and int(attr(sh, "start", 0)) == 0:  # type: ignore[arg-type]
            target.append("B")
        else:
            return None
    if target.count(-1) == 1:
        target[target.index(-1)] = 1 if "B" in target else "B"
    static = shape_of(rows_of[0])
    rows = static[0] if static else None
    target = ["B" if t == rows and isinstance(t, int) and t != 1 else t for t in target]
    return target if target.count("B") == 1 and all(t in (1, "B") for t in target) else None

def _counter(state: State, body: oir.Graph) -> int | None:
    """Start value of a carried integer that grows by one per step, else None."""
    start = int_scalar(state.init)
    add = producer(state.body_out, "Add")
    if start is None or add is None:
        return None
    for a, b in ((add.inputs[0], add.inputs[1]), (add.inputs[1], add.inputs[0])):
        if a is state.body_in and int_scalar(b) == 1:
            return start
    return None

_INF = None

def _bound(cond: oir.Value, body: oir.Graph, index: Index, cond_in: oir.Value) -> Lin | None:
    """Steps after which the condition turns false (None: it never does)."""
    if cond is cond_in:
        return _INF
    c = const_array(cond)
    if c is not None:
        if c.size == 1 and bool(c.reshape(-1)[0]):
            return _INF
        raise NoMatch("the loop condition is constant false")
    n = producer(cond)
    if n is None:
        raise NoMatch("the loop condition is not derived from a counter")
    if n.op_type in ("Identity", "Reshape", "Squeeze", "Unsqueeze"):
        return _bound(n.inputs[0], body, index, cond_in)  # type: ignore[arg-type]
    if n.op_type == "And":
        return _min(_bound(n.inputs[0], body, index, cond_in), _bound(n.inputs[1], body, index, cond_in))  # type: ignore[arg-type]
    if n.op_type in ("Less", "Greater"):
        lhs, rhs = (n.inputs[0], n.inputs[1]) if n.op_type == "Less" else (n.inputs[1], n.inputs[0])
        left, limit = index.lin(lhs), index.lin(rhs)
        if left.k != 1 or left.dim or limit.k:
            raise NoMatch("the loop condition is not `counter < limit`")
        # after step k the loop goes on while k + s < limit: it runs limit - s + 1 steps (at least one)
        steps = limit + Lin(const=1 - left.const)
        if not steps.dim and steps.const < 1:
            raise NoMatch("the loop condition stops it before its first step ends")
        return steps
    raise NoMatch(f"the loop condition is computed by {n.op_type}")

def _min(a: Lin | None, b: Lin | None) -> Lin | None:
    if a is None:
        return b
    if b is None or a == b:
        return a
    if not a.dim and not b.dim:
        return a if a.const <= b.const else b
    raise NoMatch("cannot order the loop's two limits")

def _sequence_read(x: oir.Value, index: Index) -> tuple[oir.Value, int, bool, bool]:
    """x = step k of an outer tensor: (tensor, axis, reverse, keeps the axis as size 1)."""
    n = producer(x, "Gather", "Slice")
    if n is None:
        raise NoMatch("no per-step read of a sequence")
    src = n.inputs[0]
    src_shape = shape_of(src)
    if src is None or src.graph is index.body or src_shape is None:
        raise NoMatch("the sequence is not an outer tensor of known rank")
    rank = len(src_shape)
    if n.op_type == "Gather":
        axis = int(attr(n, "axis", 0)) % rank  # type: ignore[arg-type]
        idx = n.inputs[1]
        at = index.lin(idx)
        shape = shape_of(idx)
        if shape is None:
            raise NoMatch("per-step index of unknown rank")
        keeps = len(shape) == 1
        if len(shape) > 1:
            raise NoMatch("per-step index of rank > 1")
    else:
        axes = const_array(n.inputs[3]) if len(n.inputs) > 3 else None
        steps = const_array(n.inputs[4]) if len(n.inputs) > 4 and n.inputs[4] is not None else np.ones(1)
        if axes is None or axes.size != 1 or steps is None or steps.size != 1 or int(steps[0]) != 1:
            raise NoMatch("per-step slice is not one step on one axis")
        axis = int(axes[0]) % rank
        at = index.lin(n.inputs[1])
        if index.lin(n.inputs[2]) != at + Lin(const=1):
            raise NoMatch("per-step slice is not one element long")
        keeps = True
    size = src_shape[axis]
    if at == Lin(k=1):
        return src, axis, False, keeps
    dim = Lin(const=size) if size is not None else Lin(dim=1, dim_of=dim_root((src, axis)))
    if at == dim + Lin(k=-1, const=-1):
        return src, axis, True, keeps
    raise NoMatch("the per-step read does not walk the sequence from one end")

@dataclass
class LoopIterations:
    """A Loop's carried values, its body's index arithmetic, and how many iterations it runs (None: unbounded)."""

    states: list[State]
    index: Index
    bound: Lin | None
    guards: list[Lin]  # the loop starts only if each is > 0 (a computed initial condition: counter < limit terms)
    capped_by: oir.Value | None = None  # the loop may stop once the longest of these lengths is reached

def starts_when_nonempty(guard: Lin, length: Lin) -> bool:
    """Whether `guard` > 0 whenever the sequence `length` is at least 1 (the loop's computed initial condition then
    lets it start): a positive constant, or length + c with c >= 0."""
    if guard.k:
        return False
    if not guard.dim:
        return guard.const > 0
    return guard.dim == 1 and length.dim == 1 and length.k == 0 and guard.dim_of == length.dim_of \
        and guard.const >= 0

def loop_iterations(node: oir.Node) -> LoopIterations:
    """The number of iterations a Loop runs, from its trip count and a `counter < limit` condition (NoMatch when
    neither bounds it provably)."""
    body = _body(node)
    trip, cond0 = node.inputs[0], node.inputs[1] if len(node.inputs) > 1 else None
    inits = list(node.inputs[2:])
    if len(body.inputs) != 2 + len(inits):
        raise NoMatch("Loop body inputs do not match its carried values")
    iteration, cond_in = body.inputs[0], body.inputs[1]
    states = [State(body.inputs[2 + i], body.outputs[1 + i], v, node.outputs[i])  # type: ignore[arg-type]
              for i, v in enumerate(inits)]
    if any(s.init is None for s in states):
        raise NoMatch("a carried value has no initial value")
    counters = {s.body_in: start for s in states if (start := _counter(s, body)) is not None}
    index = Index(iteration, counters, body)
    guards: list[Lin] = []
    if cond0 is not None:
        c = const_array(cond0)
        if c is None:
            guards = _guards(cond0, index)
        elif c.size != 1 or not bool(c.reshape(-1)[0]):
            raise NoMatch("the initial condition is not constant true")
    bound = _bound(body.outputs[0], body, index, cond_in)
    if trip is not None:
        m = index.lin(trip)
        if m.k:
            raise NoMatch("trip count depends on the iteration")
        bound = _min(bound, m)
    return LoopIterations(states, index, bound, guards, index.capped_by)

def _guards(cond: oir.Value, index: Index) -> list[Lin]:
    """A computed initial condition as terms that must all be > 0: a conjunction of `a < b` over loop-invariant
    integers (TensorFlow's `0 < steps and 0 < maximum_iterations` of a run-time length), each as b - a."""
    n = producer(cond)
    if n is None:
        raise NoMatch("the initial condition is not constant true")
    if n.op_type in ("Identity", "Reshape", "Squeeze", "Unsqueeze"):
        return _guards(n.inputs[0], index)  # type: ignore[arg-type]
    if n.op_type == "And":
        return _guards(n.inputs[0], index) + _guards(n.inputs[1], index)  # type: ignore[arg-type]
    if n.op_type in ("Less", "Greater"):
        lhs, rhs = (n.inputs[0], n.inputs[1]) if n.op_type == "Less" else (n.inputs[1], n.inputs[0])
        d = index.lin(rhs) + index.lin(lhs).scale(-1)
        if d.k:
            raise NoMatch("the initial condition depends on the iteration")
        return [d]
    raise NoMatch(f"the initial condition is computed by {n.op_type}")

def analyse_loop(node: oir.Node) -> LoopView:
    body = _body(node)
    it = loop_iterations(node)
    states, index, bound, counters = it.states, it.index, it.bound, it.index.counters
    # the per-step read: a Gather/Slice of an outer tensor at the iteration
    reads = [n for n in body if n.op_type in ("Gather", "Slice") and n.inputs[0] is not None
             and n.inputs[0].graph is not body]
    candidates = []
    for n in reads:
        try:
            candidates.append((n.outputs[0], _sequence_read(n.outputs[0], index)))
        except NoMatch:
            continue
    if len(candidates) != 1:
        raise NoMatch(f"{len(candidates)} per-step sequence reads (one is fused)")
    x, (src, axis, reverse, keeps) = candidates[0]
    src_shape = shape_of(src)
    assert src_shape is not None
    size = src_shape[axis]
    length = Lin(const=size) if size is not None else Lin(dim=1, dim_of=dim_root((src, axis)))
    if bound is None or bound != length:
        raise NoMatch("cannot prove the loop runs once per element of the sequence")
    if not all(starts_when_nonempty(g, length) for g in it.guards):
        raise NoMatch("the initial condition may stop a non-empty sequence")
    rank = len(src_shape)

    def stack_x(em: Emitter) -> oir.Value:
        s = em.to0(src, axis, rank)
        return em.unsqueeze(s, [axis + 1]) if keeps else s

    view = LoopView(node, x, stack_x, reverse, steps=size, index=index, capped_by=it.capped_by)
    for s in states:
        if s.body_in in counters:
            view.counters.append((s, counters[s.body_in]))
        elif (buf := buffer_row(s, index, length)) is not None:
            view.buffers.append(Buffer(s, *buf))
        else:
            view.states.append(s)
    n_carried = len(states)
    for j, out in enumerate(body.outputs[1 + n_carried:]):
        view.outputs.append(StepOutput(out, node.outputs[n_carried + j], 0, False))
    return view

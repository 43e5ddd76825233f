"""What a Scan or Loop iterates over, stated loop-independently, for the recurrent fusion.

A `LoopView` says: the body reads a per-step value `x` that is step k of a sequence (`stack_x`, the outer sequence
with time on axis 0, read forward or in reverse), carries `states`, stacks `outputs`, and, for Loop, keeps counters
and TensorList-style buffers (a carried [n, ...] tensor whose row k is written at step k). For a Loop the number of
iterations must be proven equal to the sequence length from its trip count and condition; otherwise NoMatch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import onnx_ir as ir

from ir2onnx.passes.full_lengths import dim_root
from ir2onnx.passes.fuse_rnn_util import (
    Emitter,
    NoMatch,
    attr,
    const_array,
    filled_with,
    int_scalar,
    producer,
    rank_of,
    shape_of,
    through,
)
from ir2onnx.passes.loop_utils import const_ints, explicit_perm
from ir2onnx.passes.static_shapes import StaticShapes


class State(NamedTuple):
    body_in: ir.Value
    body_out: ir.Value
    init: ir.Value  # the outer initial value
    final: ir.Value  # the loop's output with the last value


class StepOutput(NamedTuple):
    body_out: ir.Value
    outer: ir.Value  # the loop's stacked output
    axis: int  # where the steps are stacked
    reverse: bool  # stacked from the last step backwards


class Buffer(NamedTuple):
    """A carried tensor, [steps, ...] from the start, whose row k is overwritten with `row` at step k (`last`: a
    one-row tensor whose row 0 is overwritten at every step, as TensorFlow keeps only the last output)."""

    state: State
    row: ir.Value
    last: bool = False


@dataclass
class LoopView:
    node: ir.Node
    x: ir.Value  # the body value holding the current step of the sequence
    stack_x: Callable[[Emitter], ir.Value]  # emits the sequence (outer, time on axis 0, in time order)
    reverse: bool  # step k reads time T-1-k
    states: list[State] = field(default_factory=list)
    outputs: list[StepOutput] = field(default_factory=list)
    buffers: list[Buffer] = field(default_factory=list)
    counters: list[tuple[State, int]] = field(default_factory=list)  # (state, value at step 0), +1 per step
    steps: int | None = None  # the number of steps when known
    index: Index | None = None  # a Loop body's integer arithmetic (the step k)
    capped_by: ir.Value | None = None  # the loop may stop at the longest of these lengths (see Index._min_max)


def _body(node: ir.Node) -> ir.Graph:
    g = attr(node, "body")
    if not isinstance(g, ir.Graph):
        raise NoMatch("no body graph")
    return g


# ---- Scan


def analyse_scan(node: ir.Node) -> LoopView:
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

    def stack_x(em: Emitter) -> ir.Value:
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


# ---- Loop


@dataclass(frozen=True)
class Lin:
    """An integer scalar as `k_coef * k + dim_coef * dim(dim_of) + const` (k: the iteration number)."""

    k: int = 0
    const: int = 0
    dim: int = 0
    dim_of: tuple[ir.Value, int] | None = None

    def __add__(self, o: Lin) -> Lin:
        if self.dim and o.dim and self.dim_of != o.dim_of:
            raise NoMatch("index arithmetic over two different dimensions")
        return Lin(self.k + o.k, self.const + o.const, self.dim + o.dim, self.dim_of or o.dim_of)

    def scale(self, s: int) -> Lin:
        return Lin(self.k * s, self.const * s, self.dim * s, self.dim_of)


class Index:
    """Symbolic integer scalars in a Loop body: constants, the iteration number, counters, outer dims."""

    def __init__(self, iteration: ir.Value | None, counters: dict[ir.Value, int], body: ir.Graph) -> None:
        self.iteration = iteration
        self.counters = counters
        self.body = body
        self.capped_by: ir.Value | None = None  # min(x, the run-time max of these lengths) was taken as x

    def lin(self, v: ir.Value | None) -> Lin:
        if v is None:
            raise NoMatch("missing index")
        c = int_scalar(v)
        if c is not None:
            return Lin(const=c)
        if v is self.iteration:
            return Lin(k=1)
        if v in self.counters:
            return Lin(k=1, const=self.counters[v])
        n = producer(v)
        if n is None:
            raise NoMatch(f"index {v.name} is not derived from the iteration")
        op = n.op_type
        if op in ("Identity", "Cast", "Reshape", "Squeeze", "Unsqueeze"):
            if op == "Cast" and not ir.DataType(attr(n, "to")).is_integer():  # type: ignore[arg-type]
                raise NoMatch("index cast to a non-integer type")
            if op == "Reshape" and (s := const_array(n.inputs[1])) is not None and np.prod(np.abs(s)) != 1:
                raise NoMatch("index reshaped to more than one element")
            return self.lin(n.inputs[0])
        if op in ("Add", "Sub"):
            a, b = self.lin(n.inputs[0]), self.lin(n.inputs[1])
            return a + (b if op == "Add" else b.scale(-1))
        if op in ("Min", "Max") and len(n.inputs) == 2:
            return self._min_max(op, n.inputs[0], n.inputs[1])  # type: ignore[arg-type]
        if op == "Mul":
            for x, y in ((n.inputs[0], n.inputs[1]), (n.inputs[1], n.inputs[0])):
                s = int_scalar(y)
                if s is not None:
                    return self.lin(x).scale(s)
            raise NoMatch("index multiplied by a non-constant")
        if op == "Where":  # the translation's guard of a run-time trip count: negative means unbounded
            less = producer(n.inputs[0], "Less")
            if less is not None and less.inputs[0] is n.inputs[2] and int_scalar(less.inputs[1]) == 0:
                x = self.lin(n.inputs[2])
                if not x.k and x.const >= 0 and x.dim >= 0:  # a dimension: never negative
                    return x
            raise NoMatch("index chosen by Where")
        if op == "Gather" and v.graph is not self.body and (sh := _shape_op(n.inputs[0])) is not None \
                and int(attr(sh, "start", 0)) == 0 and attr(sh, "end") is None and (i := int_scalar(n.inputs[1])) is not None:  # type: ignore[arg-type]
            return self._dim(sh.inputs[0], i)
        if op == "Slice" and v.graph is not self.body and (sh := _shape_op(n.inputs[0])) is not None \
                and int(attr(sh, "start", 0)) == 0 and attr(sh, "end") is None:  # type: ignore[arg-type]
            at = _one_element_slice(n)
            if at is not None:
                return self._dim(sh.inputs[0], at)
        if op == "Shape" and v.graph is not self.body:
            start = int(attr(n, "start", 0))  # type: ignore[arg-type]
            end = attr(n, "end")
            rank = len(shape_of(n.inputs[0]) or ())
            if rank and end is not None and int(end) % rank == (start + 1) % rank:  # type: ignore[call-overload]
                return self._dim(n.inputs[0], start)
        raise NoMatch(f"index computed by {op}")

    def _min_max(self, op: str, a: ir.Value, b: ir.Value) -> Lin:
        """Min/Max of two constants, of a value with itself, and min(a, max(c, a)) = a (TensorFlow 1's
        maximum_iterations = min(steps, max(1, steps))). min(a, max(1, reduce_max(lens))) (TensorFlow 1's bound with
        sequence lengths) is taken as a, the lengths recorded in `capped_by`: whoever relies on it must prove that
        every step from the longest length on changes nothing (fuse_rnn's mask)."""
        if op == "Min":
            for x, y in ((a, b), (b, a)):
                lens = _max_length(y)
                if lens is not None and (self.capped_by is None or self.capped_by is lens):
                    self.capped_by = lens
                    return self.lin(x)
        la, lb = self.lin(a), self.lin(b)
        if la == lb:
            return la
        if not (la.k or la.dim or lb.k or lb.dim):
            return Lin(const=min(la.const, lb.const) if op == "Min" else max(la.const, lb.const))
        inner = "Max" if op == "Min" else "Min"
        for x, y in ((a, b), (b, a)):
            m = producer(y, inner)
            if m is not None and len(m.inputs) == 2 and any(self.lin(i) == self.lin(x) for i in m.inputs):
                return self.lin(x)
        raise NoMatch(f"index computed by {op}")

    @staticmethod
    def _dim(src: ir.Value | None, axis: int) -> Lin:
        shape = shape_of(src)
        if src is None or shape is None or not -len(shape) <= axis < len(shape):
            raise NoMatch("a dimension of unknown rank")
        axis %= len(shape)
        d = shape[axis]
        return Lin(const=d) if d is not None else Lin(dim=1, dim_of=dim_root((src, axis)))


# a comparison of the step t (t = k + c) with per-row lengths L, as (what it says of the step k, c required):
# "past": k >= L (the row's length is reached), "last": k == L - 1 (the row's last step)
_COMPARE = {"GreaterOrEqual": ("past", 0), "Greater": ("past", 1), "Equal": ("last", 1)}
_MIRRORED = {"LessOrEqual": "GreaterOrEqual", "Less": "Greater", "Equal": "Equal"}


def row_lengths(cond: ir.Value | None, view: LoopView) -> tuple[str, ir.Value] | None:
    """(what, lens) when `cond` compares the step k of a forward loop with per-row lengths `lens` ([batch] integers,
    outer), one condition per batch row: "past" for k >= lens (TensorFlow 1's dynamic_rnn: the iteration number
    `>= lens`; OpenVINO's sequence-as-TensorIterator form: a counter from 1 `> lens`), "last" for k == lens - 1 (that
    form's counter from 1 `== lens`). The lengths may be made [batch, 1] by reshapes of unit axes, and broadcast over
    a [batch, ...] value's other axes (Expand to its shape); else None."""
    if view.index is None or view.reverse or cond is None:
        return None
    chain: list[ir.Node] = []
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


def _row_vector(v: ir.Value | None, body: ir.Graph) -> tuple[ir.Value, list[object]] | None:
    """(lens, the dims of v) when v is an outer vector `lens` ([batch] integers) made [batch, 1, ..] by reshapes of
    unit axes, cast to another integer type, or broadcast (Expand) to the shape of a [batch, ...] value: its dims
    "B" (the batch rows), 1, or "*" (broadcast along that axis)."""
    glue: list[ir.Node] = []
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
            if not ir.DataType(attr(n, "to")).is_integer():  # type: ignore[arg-type]
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


def _expanded(n: ir.Node, dims: list[object], lens: ir.Value) -> list[object] | None:
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
    sh = _shape_op(through(n.inputs[1], "Reshape"))  # the shape of a value whose rows are the batch's
    whole = sh is not None and int(attr(sh, "start", 0)) == 0 and attr(sh, "end") is None  # type: ignore[arg-type]
    if not whole or rank_of(sh.inputs[0]) != len(dims):  # type: ignore[union-attr]
        return None
    return ["B"] + ["*"] * (len(dims) - 1)


def _unit_reshape(n: ir.Node, dims: list[object], rows_of: tuple[ir.Value, ...]) -> list[object] | None:
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


def _one_element_slice(n: ir.Node) -> int | None:
    """k when the Slice `n` takes element k (>= 0) of a vector: [k:k+1] on axis 0 with step 1."""
    starts, ends = (const_ints(n.inputs[i]) if len(n.inputs) > i else None for i in (1, 2))
    axes = const_ints(n.inputs[3]) if len(n.inputs) > 3 and n.inputs[3] is not None else [0]
    steps = n.inputs[4] if len(n.inputs) > 4 else None
    ones = filled_with(steps)  # OpenVINO's ONNX frontend writes the steps as Broadcast(1, [axes])
    unit_steps = steps is None or (ones is not None and ones.size == 1 and int(ones.reshape(-1)[0]) == 1)
    if starts is None or ends is None or len(starts) != 1 or len(ends) != 1 or axes not in ([0], [-1]) \
            or not unit_steps or starts[0] < 0 or ends[0] != starts[0] + 1:
        return None
    return starts[0]


def outer_index() -> Index:
    """Integer arithmetic over values outside any loop (constants and dims of tensors)."""
    return Index(None, {}, None)  # type: ignore[arg-type]


def dim_lin(src: ir.Value | None, axis: int) -> Lin:
    """The size of `axis` of `src`: a constant, or that dim followed to its origin."""
    return Index._dim(src, axis)


def _max_length(v: ir.Value | None) -> ir.Value | None:
    """lens when v is max(1, reduce_max(lens)) or reduce_max(lens) over a vector of lengths (through Casts)."""
    m = producer(v, "Max")
    if m is not None and len(m.inputs) == 2:
        for one, other in ((m.inputs[0], m.inputs[1]), (m.inputs[1], m.inputs[0])):
            if int_scalar(one) == 1:
                v = other
                break
        else:
            return None
    r = producer(through(v, "Cast"), "ReduceMax")
    if r is None or r.inputs[0] is None or shape_of(r.inputs[0]) is None or len(shape_of(r.inputs[0])) != 1 \
            or int(attr(r, "keepdims", 1)) != 0:  # type: ignore[arg-type]
        return None
    return r.inputs[0]


def _shape_op(v: ir.Value | None) -> ir.Node | None:
    """The Shape node `v` is the output of, through Casts to integer types."""
    n = producer(v, "Shape", "Cast")
    while n is not None and n.op_type == "Cast" and ir.DataType(attr(n, "to")).is_integer():  # type: ignore[arg-type]
        n = producer(n.inputs[0], "Shape", "Cast")
    return n if n is not None and n.op_type == "Shape" else None


def _counter(state: State, body: ir.Graph) -> int | None:
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


def _bound(cond: ir.Value, body: ir.Graph, index: Index, cond_in: ir.Value) -> Lin | None:
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


def _sequence_read(x: ir.Value, index: Index) -> tuple[ir.Value, int, bool, bool]:
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
    capped_by: ir.Value | None = None  # the loop may stop once the longest of these lengths is reached


def starts_when_nonempty(guard: Lin, length: Lin) -> bool:
    """Whether `guard` > 0 whenever the sequence `length` is at least 1 (the loop's computed initial condition then
    lets it start): a positive constant, or length + c with c >= 0."""
    if guard.k:
        return False
    if not guard.dim:
        return guard.const > 0
    return guard.dim == 1 and length.dim == 1 and length.k == 0 and guard.dim_of == length.dim_of \
        and guard.const >= 0


def loop_iterations(node: ir.Node) -> LoopIterations:
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


def _guards(cond: ir.Value, index: Index) -> list[Lin]:
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


def analyse_loop(node: ir.Node) -> LoopView:
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

    def stack_x(em: Emitter) -> ir.Value:
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


def buffer_row(s: State, index: Index, steps: Lin) -> tuple[ir.Value, bool] | None:
    """(the row written, whether only the last step's row is kept) when `s` is a buffer: a [steps, ...] tensor updated
    at row k in step k (by ScatterND, or by a Concat of the rows before k, the row and the rows after), or a [1, ...]
    tensor updated at row 0 in every step; else None."""
    found = _scatter_write(s, index) or _concat_write(s.body_out, s.body_in, index)
    if found is None:
        return None
    at, row = found
    init_shape, row_shape = shape_of(s.init), shape_of(row)
    # the updates are [1] + the buffer's row shape: the row has the buffer's rank - 1 when the model is valid
    if row is None or init_shape is None or (row_shape is not None and len(init_shape) != len(row_shape) + 1):
        return None
    if at == Lin(k=1) and _dim0(s.init, index) == steps:
        return row, False
    if at == Lin(const=0) and init_shape[0] == 1:
        return row, True
    return None


def _scatter_write(s: State, index: Index) -> tuple[Lin, ir.Value | None] | None:
    """(row index, row) of a ScatterND of one row Unsqueeze(row, 0) into the carried buffer (after an Expand giving
    the placeholder its full shape, clipped on run-time shapes, grown as TensorFlow 1's TensorArray grows)."""
    sc = producer(s.body_out, "ScatterND")
    if sc is None or attr(sc, "reduction", "none") != "none":
        return None
    data, idx, upd = sc.inputs
    idx, upd = _unclipped(idx, data), _unclipped(upd, data)
    try:
        at = index.lin(idx)
    except NoMatch:
        return None
    data = _ungrown(data, at, index)
    ex = producer(data, "Expand")
    if ex is not None:  # broadcast to [its own first dim, the row's shape] (TensorFlow's placeholder [n, 1, 1])
        data = ex.inputs[0]
        first = element0(ex.inputs[1], index)
        if first != ("dim0", data) and not (isinstance(first, Lin) and first == _dim0(s.init, index)):
            return None
    if data is not s.body_in or (shape_of(idx) or StaticShapes()(idx)) != (1, 1):
        return None
    unsq = producer(upd, "Unsqueeze")
    axes = const_array(unsq.inputs[1]) if unsq is not None else None
    if unsq is None or axes is None or list(axes) != [0]:
        return None
    return at, unsq.inputs[0]


def _concat_write(written: ir.Value, data: ir.Value, index: Index) -> tuple[Lin, ir.Value | None] | None:
    """(row index k, row) of Concat(data[:k], row as [1, ...], data[k + 1:]) on axis 0, TensorFlow Lite's
    TensorListSetItem as OpenVINO's frontend writes it: Slices of all of data's axes, ends [k, -1, ...] made full
    by Where(ends < 0, Shape(data), ends), starts [k + 1, 0, ...] to Shape(data)."""
    cat = producer(written, "Concat")
    if cat is None or int(attr(cat, "axis", 0)) != 0 or len(cat.inputs) != 3:  # type: ignore[arg-type]
        return None
    before, one, after = (producer(v) for v in cat.inputs)
    rank = len(shape_of(data) or ())
    if before is None or after is None or one is None or rank == 0 \
            or not _whole_slice(before, data, rank) or not _whole_slice(after, data, rank):
        return None
    # before: starts all 0, ends [k, full...]
    if const_ints(before.inputs[1]) != [0] * rank:
        return None
    ends = _negative_as_full(through(before.inputs[2], "Reshape", "Cast"), data)
    head, tail = _head_tail(ends)
    if head is None or tail is None or any(t >= 0 for t in tail):
        return None
    # after: starts [k + 1, 0...], ends Shape(data)
    start_head, start_tail = _head_tail(through(after.inputs[1], "Reshape", "Cast"))
    shape = producer(through(after.inputs[2], "Reshape", "Cast"), "Shape")
    if start_head is None or start_tail != [0] * (rank - 1) or shape is None or shape.inputs[0] is not data \
            or int(attr(shape, "start", 0)) != 0 or attr(shape, "end") is not None:  # type: ignore[arg-type]
        return None
    try:
        at, next_at = index.lin(head), index.lin(start_head)
    except NoMatch:
        return None
    if next_at != at + Lin(const=1):
        return None
    row = one.inputs[0]
    if one.op_type == "Unsqueeze" and const_ints(one.inputs[1]) == [0]:
        return at, row
    row_shape = StaticShapes()(row)
    if one.op_type == "Reshape" and row_shape is not None and const_ints(one.inputs[1]) == [1, *row_shape]:
        return at, row
    return None


def _whole_slice(n: ir.Node, data: ir.Value, rank: int) -> bool:
    """A Slice of `data` over its axes 0..rank-1 with unit steps."""
    if n.op_type != "Slice" or n.inputs[0] is not data or len(n.inputs) < 3:
        return False
    axes = const_ints(n.inputs[3]) if len(n.inputs) > 3 and n.inputs[3] is not None else list(range(rank))
    steps = const_ints(n.inputs[4]) if len(n.inputs) > 4 and n.inputs[4] is not None else [1] * rank
    return axes == list(range(rank)) and steps == [1] * rank


def _negative_as_full(v: ir.Value | None, data: ir.Value) -> ir.Value | None:
    """e for Where(e < 0, Shape(data), e) (a negative end meaning the whole axis), else None."""
    where = producer(v, "Where")
    less = producer(where.inputs[0], "Less") if where is not None else None
    shape = producer(through(where.inputs[1], "Cast"), "Shape") if where is not None else None
    zero = const_array(less.inputs[1]) if less is not None else None
    if less is None or shape is None or zero is None or np.any(zero != 0) or less.inputs[0] is not where.inputs[2] \
            or shape.inputs[0] is not data or int(attr(shape, "start", 0)) != 0 or attr(shape, "end") is not None:  # type: ignore[union-attr, arg-type]
        return None
    return where.inputs[2]  # type: ignore[union-attr]


def _head_tail(v: ir.Value | None) -> tuple[ir.Value | None, list[int] | None]:
    """(the one-element first part, the constant rest) of Concat(head, rest) (rest: one or more constants)."""
    cat = producer(v, "Concat")
    if cat is None or int(attr(cat, "axis", 0)) != 0 or len(cat.inputs) < 2:  # type: ignore[arg-type]
        return None, None
    rest: list[int] = []
    for part in cat.inputs[1:]:
        c = const_ints(part)
        if c is None:
            return None, None
        rest += c
    return cat.inputs[0], rest


def _unclipped(v: ir.Value | None, data: ir.Value | None) -> ir.Value | None:
    """The TensorFlow frontend's TensorListSetItem on run-time shapes clips the write's indices and updates to
    min(1, rows of the buffer) rows: Slice(w, [0], Size(index) * Min(Shape(buffer)[0:1], [1]), [0]), the updates
    reshaped to [-1, the buffer's row shape] first. With a one-element index and a non-empty buffer (a loop writing
    row k has k < rows) the Slice keeps w whole: w (for the updates, the Unsqueeze(row, 0) before the Reshape, when
    the buffer's rows are the row's shape). Anything else: `v` unchanged."""
    sl = producer(v, "Slice")
    if sl is None or len(sl.inputs) < 4 or const_ints(sl.inputs[1]) != [0] or const_ints(sl.inputs[3]) != [0] \
            or (len(sl.inputs) > 4 and sl.inputs[4] is not None and const_ints(sl.inputs[4]) != [1]) \
            or not _one_row(sl.inputs[2], data):
        return v
    w = sl.inputs[0]
    rs = producer(w, "Reshape")
    unsq = producer(rs.inputs[0], "Unsqueeze") if rs is not None else None
    if rs is None or unsq is None:
        return w  # the indices, [[k]]
    return rs.inputs[0] if _row_shaped(rs, unsq.inputs[0], data) else v


def _ungrown(data: ir.Value | None, at: Lin, index: Index) -> ir.Value | None:
    """TensorFlow 1's TensorArrayWriteV3 grows the array to the row written: Concat(a, Expand(0, [max(n, at + 1) - n,
    row shape])) with n the rows of a's buffer. Writing row k < n of a buffer that keeps its n rows (what buffer_row
    requires), the growth is empty at every step: a. Anything else: `data` unchanged."""
    cat = producer(data, "Concat")
    if cat is None or int(attr(cat, "axis", 0)) != 0 or len(cat.inputs) != 2:  # type: ignore[arg-type]
        return data
    grown, pad = cat.inputs
    ex_pad, ex = producer(pad, "Expand"), producer(grown, "Expand")
    shape = producer(through(ex_pad.inputs[1], "Reshape", "Cast"), "Concat") if ex_pad is not None else None
    sub = producer(shape.inputs[0], "Sub") if shape is not None and shape.inputs else None
    top = producer(sub.inputs[0], "Max") if sub is not None else None
    if ex is None or top is None or const_array(ex_pad.inputs[0]) is None:  # type: ignore[union-attr]
        return data
    rows = ("dim0", ex.inputs[0])
    if element0(sub.inputs[1], index) != rows or element0(top.inputs[0], index) != rows:  # type: ignore[union-attr]
        return data
    try:
        if index.lin(top.inputs[1]) != at + Lin(const=1):
            return data
    except NoMatch:
        return data
    return grown


def _one_row(end: ir.Value | None, data: ir.Value | None) -> bool:
    """end = Size(a one-element tensor) * Min(Shape(data)[0:1], [1]): 1 for a non-empty `data`."""
    mul = producer(end, "Mul")
    if mul is None:
        return False
    size, low = producer(through(mul.inputs[0], "Reshape"), "Size"), producer(mul.inputs[1], "Min")
    single = StaticShapes()(size.inputs[0]) if size is not None else None
    rows = producer(low.inputs[0], "Shape") if low is not None else None
    return single is not None and int(np.prod(single)) == 1 and rows is not None and rows.inputs[0] is data \
        and int(attr(rows, "start", 0)) == 0 and attr(rows, "end") == 1 and const_ints(low.inputs[1]) == [1]  # type: ignore[union-attr, arg-type]


def _row_shaped(rs: ir.Node, row: ir.Value | None, data: ir.Value | None) -> bool:
    """rs reshapes to Concat([-1], Shape(data)[1:]) and data is Expand(buffer, Concat(.., Shape(row))): the rows of
    data have the row's shape, and the Reshape of Unsqueeze(row, 0) changes nothing. The row's shape may also be
    Gather(Shape(r), perm) for a row Transpose(r, perm)."""
    cat = producer(rs.inputs[1], "Concat")
    tail = producer(cat.inputs[-1], "Shape") if cat is not None and len(cat.inputs) == 2 else None
    cat_rows = producer(data, "Concat")  # a TensorArray grown by rows (_ungrown) has the rows of its first part
    ex = producer(data, "Expand") or (producer(cat_rows.inputs[0], "Expand") if cat_rows is not None
                                      and int(attr(cat_rows, "axis", 0)) == 0 else None)  # type: ignore[arg-type]
    ex_cat = producer(through(ex.inputs[1], "Reshape", "Cast"), "Concat") if ex is not None else None
    row_shape = producer(through(ex_cat.inputs[-1], "Cast"), "Shape") if ex_cat is not None else None
    permuted = producer(through(ex_cat.inputs[-1], "Cast"), "Gather") if ex_cat is not None else None
    moved = producer(row, "Transpose")
    if permuted is not None and moved is not None and int(attr(permuted, "axis", 0)) == 0 \
            and const_ints(permuted.inputs[1]) == explicit_perm(moved):
        # Gather(Shape(r), perm) is the shape of a row Transpose(r, perm) (OpenVINO's layout transposes, NCHW -> NHWC)
        row_shape, row = producer(through(permuted.inputs[0], "Cast"), "Shape"), moved.inputs[0]
    return cat is not None and const_ints(cat.inputs[0]) == [-1] and tail is not None and tail.inputs[0] is data \
        and int(attr(tail, "start", 0)) == 1 and attr(tail, "end") is None and row_shape is not None \
        and row_shape.inputs[0] is row and int(attr(row_shape, "start", 0)) == 0 and attr(row_shape, "end") is None  # type: ignore[arg-type]


def _dim0(v: ir.Value, index: Index) -> Lin | None:
    """The first dim of an outer value: static, or that of an Expand (Broadcast) of a one-row tensor to a shape whose
    first element is a run-time dim (TensorFlow's TensorList placeholder for a run-time length)."""
    shape = shape_of(v)
    if shape and isinstance(shape[0], int):
        return Lin(const=shape[0])
    ex = producer(v, "Expand")
    data_shape = shape_of(ex.inputs[0]) if ex is not None else None
    if ex is None or data_shape is None:
        return None
    if data_shape:  # a tensor: its dim 0 is 1 and it has at most the shape's rank
        length = StaticShapes()(ex.inputs[1])
        if data_shape[0] != 1 or length is None or len(data_shape) > length[0]:
            return None
    first = element0(ex.inputs[1], index)
    if isinstance(first, tuple):  # the first dim of an outer tensor
        try:
            return dim_lin(first[1], 0)
        except NoMatch:
            return None
    return first


def element0(v: ir.Value | None, index: Index) -> Lin | tuple[str, ir.Value] | None:
    """Element 0 of an integer vector: a Lin (a constant, a run-time dim, the iteration), or ("dim0", x) when it is
    the first dim of x (a Shape or Slice of a Shape), else None."""
    c = const_array(v)
    if c is not None:
        return Lin(const=int(c.reshape(-1)[0])) if c.size else None
    n = producer(v)
    if n is None:
        return None
    if n.op_type == "Cast" and ir.DataType(attr(n, "to")).is_integer():  # type: ignore[arg-type]
        return element0(n.inputs[0], index)
    if n.op_type == "Concat" and n.inputs:  # what element 0 is found in is not empty
        return element0(n.inputs[0], index)
    if n.op_type == "Shape" and int(attr(n, "start", 0)) == 0 and shape_of(n.inputs[0]) != ():  # type: ignore[arg-type]
        return ("dim0", n.inputs[0])  # type: ignore[return-value]
    if n.op_type == "Slice" and _shape_op(n.inputs[0]) is not None and const_array(n.inputs[1]) is not None \
            and [int(a) for a in const_array(n.inputs[1]).reshape(-1)] == [0] \
            and (len(n.inputs) < 4 or n.inputs[3] is None or list(const_array(n.inputs[3]).reshape(-1)) == [0]):  # type: ignore[union-attr]
        shape_node = _shape_op(n.inputs[0])
        return ("dim0", shape_node.inputs[0]) if int(attr(shape_node, "start", 0)) == 0 else None  # type: ignore[union-attr, arg-type]
    if n.op_type == "Gather" and int(attr(n, "axis", 0)) == 0 and (sh := _shape_op(n.inputs[0])) is not None \
            and int(attr(sh, "start", 0)) == 0 and (i := const_array(n.inputs[1])) is not None \
            and i.size and int(i.reshape(-1)[0]) == 0:  # type: ignore[arg-type]
        return ("dim0", sh.inputs[0])  # type: ignore[return-value]
    if n.op_type in ("Reshape", "Unsqueeze", "Squeeze", "Identity"):  # the first element stays first
        return element0(n.inputs[0], index)
    try:  # a one-element value (a scalar made a vector)
        return index.lin(v)
    except NoMatch:
        return None

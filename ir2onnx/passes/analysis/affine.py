"""Affine index arithmetic over a loop's iteration counter: `Lin` (a + b * i), `Index` (the forms a body reads
its iteration number in), and the first element a value takes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import NoMatch, attr, producer, through
from ir2onnx.passes.analysis.shapes import StaticShapes
from ir2onnx.passes.analysis.values import const_array, const_ints, filled_with, int_scalar, shape_of
from ir2onnx.passes.recurrent.full_lengths import dim_root


@dataclass(frozen=True)
class Lin:
    """An integer scalar as `k_coef * k + dim_coef * dim(dim_of) + const` (k: the iteration number)."""

    k: int = 0
    const: int = 0
    dim: int = 0
    dim_of: tuple[oir.Value, int] | None = None

    def __add__(self, o: Lin) -> Lin:
        if self.dim and o.dim and self.dim_of != o.dim_of:
            raise NoMatch("index arithmetic over two different dimensions")
        return Lin(self.k + o.k, self.const + o.const, self.dim + o.dim, self.dim_of or o.dim_of)

    def scale(self, s: int) -> Lin:
        return Lin(self.k * s, self.const * s, self.dim * s, self.dim_of)

class Index:
    """Symbolic integer scalars in a Loop body: constants, the iteration number, counters, outer dims."""

    def __init__(self, iteration: oir.Value | None, counters: dict[oir.Value, int], body: oir.Graph) -> None:
        self.iteration = iteration
        self.counters = counters
        self.body = body
        self.capped_by: oir.Value | None = None  # min(x, the run-time max of these lengths) was taken as x

    def lin(self, v: oir.Value | None) -> Lin:
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
            if op == "Cast" and not oir.DataType(attr(n, "to")).is_integer():  # type: ignore[arg-type]
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
        if op == "Gather" and v.graph is not self.body and (sh := shape_op(n.inputs[0])) is not None \
                and int(attr(sh, "start", 0)) == 0 and attr(sh, "end") is None and (i := int_scalar(n.inputs[1])) is not None:  # type: ignore[arg-type]
            return self._dim(sh.inputs[0], i)
        if op == "Slice" and v.graph is not self.body and (sh := shape_op(n.inputs[0])) is not None \
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

    def _min_max(self, op: str, a: oir.Value, b: oir.Value) -> Lin:
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
    def _dim(src: oir.Value | None, axis: int) -> Lin:
        shape = shape_of(src)
        if src is None or shape is None or not -len(shape) <= axis < len(shape):
            raise NoMatch("a dimension of unknown rank")
        axis %= len(shape)
        d = shape[axis]
        return Lin(const=d) if d is not None else Lin(dim=1, dim_of=dim_root((src, axis)))

def _one_element_slice(n: oir.Node) -> int | None:
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

def dim_lin(src: oir.Value | None, axis: int) -> Lin:
    """The size of `axis` of `src`: a constant, or that dim followed to its origin."""
    return Index._dim(src, axis)

def _max_length(v: oir.Value | None) -> oir.Value | None:
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

def shape_op(v: oir.Value | None) -> oir.Node | None:
    """The Shape node `v` is the output of, through Casts to integer types."""
    n = producer(v, "Shape", "Cast")
    while n is not None and n.op_type == "Cast" and oir.DataType(attr(n, "to")).is_integer():  # type: ignore[arg-type]
        n = producer(n.inputs[0], "Shape", "Cast")
    return n if n is not None and n.op_type == "Shape" else None

def dim0(v: oir.Value, index: Index) -> Lin | None:
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

def element0(v: oir.Value | None, index: Index) -> Lin | tuple[str, oir.Value] | None:
    """Element 0 of an integer vector: a Lin (a constant, a run-time dim, the iteration), or ("dim0", x) when it is
    the first dim of x (a Shape or Slice of a Shape), else None."""
    c = const_array(v)
    if c is not None:
        return Lin(const=int(c.reshape(-1)[0])) if c.size else None
    n = producer(v)
    if n is None:
        return None
    if n.op_type == "Cast" and oir.DataType(attr(n, "to")).is_integer():  # type: ignore[arg-type]
        return element0(n.inputs[0], index)
    if n.op_type == "Concat" and n.inputs:  # what element 0 is found in is not empty
        return element0(n.inputs[0], index)
    if n.op_type == "Shape" and int(attr(n, "start", 0)) == 0 and shape_of(n.inputs[0]) != ():  # type: ignore[arg-type]
        return ("dim0", n.inputs[0])  # type: ignore[return-value]
    if n.op_type == "Slice" and shape_op(n.inputs[0]) is not None and const_array(n.inputs[1]) is not None \
            and [int(a) for a in const_array(n.inputs[1]).reshape(-1)] == [0] \
            and (len(n.inputs) < 4 or n.inputs[3] is None or list(const_array(n.inputs[3]).reshape(-1)) == [0]):  # type: ignore[union-attr]
        shape_node = shape_op(n.inputs[0])
        return ("dim0", shape_node.inputs[0]) if int(attr(shape_node, "start", 0)) == 0 else None  # type: ignore[union-attr, arg-type]
    if n.op_type == "Gather" and int(attr(n, "axis", 0)) == 0 and (sh := shape_op(n.inputs[0])) is not None \
            and int(attr(sh, "start", 0)) == 0 and (i := const_array(n.inputs[1])) is not None \
            and i.size and int(i.reshape(-1)[0]) == 0:  # type: ignore[arg-type]
        return ("dim0", sh.inputs[0])  # type: ignore[return-value]
    if n.op_type in ("Reshape", "Unsqueeze", "Squeeze", "Identity"):  # the first element stays first
        return element0(n.inputs[0], index)
    try:  # a one-element value (a scalar made a vector)
        return index.lin(v)
    except NoMatch:
        return None

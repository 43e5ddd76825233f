"""What is known of a value without running the model: its constant contents (folded through simple ops),
its shape and rank derived from its producers, and the reshape-only glue around it.

`derivations()` memoises these queries over one walk (a pass that asks about many values opens it once).

Shapes: `shape_of` here and `StaticShapes` in shapes.py are two analyses on purpose; neither can be written through
the other without changing results (shapes.py lists how they differ). `shape_of` is for matching: a partial
shape (None for each unknown dim: a run-time batch, a Slice's cut axes) whose rank and known dims a pattern checks
("[batch, hidden]", "the feature axis is 8"). It derives from the producer first and only then takes the declared
shape, so a shape a pass left stale does not mislead it, and its rules assume a model that runs (a Squeeze drops its
axes, a known dim wins a broadcast) rather than checking it. `rank_of` is its rank, also where only a Transpose's
perm or an LSTM/GRU/RNN output fixes it. `rank` is another thing again: the declared rank, else a constant's, never
derived (what lift_inputs.py trusts).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import numpy as np
import onnx_ir as oir

from ir2onnx.deep import deep_call
from ir2onnx.passes.analysis.graph import attr, is_default_domain, producer, through


def literal_array(value: oir.Value | None) -> np.ndarray | None:
    """The value of an initializer or of a Constant node's output, else None."""
    if value is None:
        return None
    if value.const_value is not None:
        return value.const_value.numpy()
    node = value.producer()
    if node is not None and node.op_type == "Constant" and is_default_domain(node) and "value" in node.attributes:
        return node.attributes["value"].as_tensor().numpy()
    return None

def const_ints(value: oir.Value | None) -> list[int] | None:
    arr = literal_array(value)
    if arr is None or arr.dtype.kind not in "iu":
        return None
    return [int(v) for v in arr.reshape(-1)]

def rank(value: oir.Value | None) -> int | None:
    if value is None:
        return None
    if value.shape is not None:
        return len(value.shape)
    arr = literal_array(value)
    return None if arr is None else arr.ndim

_T = TypeVar("_T")

_derivation = threading.local()

def _once_per_query(derive: Callable[[oir.Value], _T | None]) -> Callable[[oir.Value | None], _T | None]:
    """`derive` (const_array, shape_of) computes each value once per outermost query: both walk producers and call
    each other, and an unrolled recurrence reaches the same values along exponentially many paths (c_t reads c_t-1
    through both of its products). The table lives for one query only (passes change the graph between queries), or
    for a `derivations()` block. The walk recurses once per layer: where a network is deeper than Python allows, the
    query goes on from where it stopped on a deep stack (ir2onnx.deep)."""
    @functools.wraps(derive)
    def query(v: oir.Value | None) -> _T | None:
        if v is None:
            return None
        state = _derivation
        owner = getattr(state, "table", None) is None
        if owner:
            state.table = {}
        depth = getattr(state, "depth", 0)
        state.depth = depth + 1
        try:
            key = (derive, v)
            if key not in state.table:
                state.table[key] = derive(v)
            return state.table[key]
        except RecursionError:
            if depth:
                raise
            return deep_call(functools.partial(_resume, query, v, state.table))
        finally:
            state.depth = depth
            if owner:
                state.table = None
    return query

def _resume(query: Callable[[oir.Value], _T | None], v: oir.Value, table: dict) -> _T | None:
    """`query(v)` on this (deep) thread, with the table of the query that ran out of stack, as a nested query (which
    does not go deeper again)."""
    _derivation.table, _derivation.depth = table, 1
    return query(v)

@contextlib.contextmanager
def derivations() -> Iterator[None]:
    """The queries within the block share one table: for a pass that queries many values before it changes the graph
    (one table per query would walk the same producers once per query: quadratic time on a long network)."""
    if getattr(_derivation, "table", None) is not None:
        yield
        return
    _derivation.table = {}
    try:
        yield
    finally:
        _derivation.table = None

@_once_per_query
def const_array(v: oir.Value) -> np.ndarray | None:
    """The value of `v` when it is a constant: an initializer, a Constant node, or simple ops folded over those."""
    if v.const_value is not None:
        return v.const_value.numpy()
    n = v.producer()
    if n is None or n.domain not in ("", "ai.onnx"):
        return None
    try:
        return _fold(n, n.outputs.index(v))
    except (ValueError, IndexError, TypeError):
        return None

def _fold(n: oir.Node, index: int) -> np.ndarray | None:
    op = n.op_type
    if op == "Constant":
        t = attr(n, "value")
        return None if t is None else t.numpy()  # type: ignore[attr-defined]
    if op == "Shape":  # the dims it reads all known (a feature axis beside a run-time batch)
        shape = shape_of(n.inputs[0])
        dims = None if shape is None else shape[attr(n, "start", 0):attr(n, "end", None)]  # type: ignore[misc]
        return None if dims is None or None in dims else np.array(dims, np.int64)
    ins = [const_array(i) if i is not None else None for i in n.inputs]
    if any(a is None for a, v in zip(ins, n.inputs) if v is not None):
        return None
    return evaluate(n, ins, index)


def evaluate(n: oir.Node, ins: Sequence[np.ndarray | None], index: int = 0) -> np.ndarray | None:
    """Output `index` of `n` computed in numpy from the constant inputs `ins`, for the ops of weight and shape
    arithmetic (DequantizeLinear, moves, Cast, Concat, Split, Add/Sub/Mul, Neg); None for any other op."""
    op = n.op_type
    x = ins[0]
    if op == "DequantizeLinear":  # compressed weights (passes/compressed_weights.py): exact in f64, rounded once
        scale = ins[1]
        s = scale.astype(np.float64)
        zp = ins[2].astype(np.float64) if len(ins) > 2 and ins[2] is not None else np.zeros_like(s)
        if s.ndim:
            axis = int(attr(n, "axis", 1)) % x.ndim
            block = int(attr(n, "block_size", 0))
            if block:
                s, zp = (np.repeat(a, block, axis).take(np.arange(x.shape[axis]), axis) for a in (s, zp))
            else:
                shape = [1] * x.ndim
                shape[axis] = -1
                s, zp = s.reshape(shape), zp.reshape(shape)
        return ((x.astype(np.float64) - zp) * s).astype(scale.dtype)
    if op == "Identity":
        return x
    if op == "Transpose":
        return np.transpose(x, attr(n, "perm"))  # type: ignore[arg-type]
    if op == "Cast":
        return x.astype(oir.DataType(attr(n, "to")).numpy())  # type: ignore[union-attr]
    if op == "Unsqueeze":
        out = x
        axes = sorted(int(a) % (x.ndim + len(ins[1])) for a in ins[1])  # type: ignore[union-attr, arg-type]
        for a in axes:
            out = np.expand_dims(out, a)
        return out
    if op == "Squeeze":
        return np.squeeze(x, tuple(int(a) for a in ins[1]))  # type: ignore[union-attr]
    if op == "Reshape":
        shape = [int(s) for s in ins[1]]  # type: ignore[union-attr]
        if not attr(n, "allowzero", 0):
            shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]  # type: ignore[union-attr]
        return x.reshape(shape)  # type: ignore[union-attr]
    if op == "Concat":
        return np.concatenate(ins, axis=attr(n, "axis"))  # type: ignore[arg-type]
    if op == "Split":
        axis = int(attr(n, "axis", 0))  # type: ignore[arg-type]
        if len(ins) > 1 and ins[1] is not None:
            sizes = [int(s) for s in ins[1]]
        else:
            k = len(n.outputs)
            if x.shape[axis] % k:  # type: ignore[union-attr]
                return None
            sizes = [x.shape[axis] // k] * k  # type: ignore[union-attr]
        return np.split(x, np.cumsum(sizes)[:-1], axis=axis)[index]
    if op in ("Add", "Sub", "Mul"):
        return {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}[op](ins[0], ins[1])
    if op == "Neg":
        return -x  # type: ignore[operator]
    return None

def value_dtype(node: oir.Node) -> oir.DataType | None:
    """The element type of a node's tensors, from the first input that declares one (values a pass created may
    have none; its constant weights do)."""
    for v in node.inputs:
        if v is not None and v.dtype is not None:
            return v.dtype
    return None

def filled_with(v: oir.Value | None) -> np.ndarray | None:
    """The constant `v` is a broadcast of (through reshapes, Casts and an Expand: zeros of a run-time shape, a
    Broadcast of 1), or None."""
    v = through(v, "Squeeze", "Unsqueeze", "Reshape", "Identity", "Cast")
    ex = producer(v, "Expand")
    return const_array(ex.inputs[0] if ex is not None else v)

def int_scalar(v: oir.Value | None) -> int | None:
    """A one-element integer constant as an int."""
    c = const_array(v)
    if c is None or c.size != 1 or c.dtype.kind not in "iu":
        return None
    return int(c.reshape(-1)[0])

_GLUE = ("Reshape", "Squeeze", "Unsqueeze", "Identity")

def _is_glue(n: oir.Node) -> bool:
    """Ops that only change the shape (the elements keep their row-major order), with constant parameters."""
    if n.op_type == "Identity":
        return True
    if n.op_type in ("Squeeze", "Unsqueeze"):
        return len(n.inputs) > 1 and const_array(n.inputs[1]) is not None
    if n.op_type == "Reshape":
        shape = const_array(n.inputs[1])
        return shape is not None and not (attr(n, "allowzero", 0) and np.any(shape == 0))
    return False

def view_root(v: oir.Value) -> tuple[oir.Value, list[oir.Node]]:
    """Walk back through glue: (the value v is a reshape of, the glue nodes from it to v in order)."""
    chain: list[oir.Node] = []
    while (n := producer(v, *_GLUE)) is not None and _is_glue(n):
        chain.append(n)
        v = n.inputs[0]  # type: ignore[assignment]
    return v, chain[::-1]

Dims = tuple[int | None, ...]

def rank_of(v: oir.Value | None) -> int | None:
    """v's rank: from shape_of, else from a Transpose's permutation or a recurrent node's output (Y rank 4, Y_h and
    Y_c rank 3), which fix it whatever the dims."""
    shape = shape_of(v)
    if shape is not None:
        return len(shape)
    node = v.producer() if v is not None else None
    if node is not None and node.domain in ("", "ai.onnx"):
        if node.op_type == "Transpose" and "perm" in node.attributes:
            return len(node.attributes["perm"].as_ints())
        if node.op_type in ("LSTM", "GRU", "RNN"):
            return 4 if v.index() == 0 else 3  # type: ignore[union-attr]
    return None

@_once_per_query
def shape_of(v: oir.Value) -> Dims | None:
    """v's shape (unknown dims None) derived from its producers, else what the model declares, else None."""
    n = v.producer()
    derived = _derive(n, v) if n is not None and n.domain in ("", "ai.onnx") else None
    if derived is not None:
        return derived
    if v.shape is None:
        return None
    return tuple(d if isinstance(d, int) else None for d in v.shape)

def _broadcast(a: Dims, b: Dims) -> Dims:
    """numpy broadcasting of two shapes (a missing leading dim is 1); a known dim other than 1 is the result's,
    whatever the other is (in a model that runs, it is 1 or the same)."""
    r = max(len(a), len(b))
    a, b = (1,) * (r - len(a)) + a, (1,) * (r - len(b)) + b
    out: list[int | None] = []
    for x, y in zip(a, b):
        out.append(x if x not in (None, 1) else y if y not in (None, 1) else 1 if x == y == 1 else None)
    return tuple(out)

def _derive(n: oir.Node, v: oir.Value) -> Dims | None:
    op = n.op_type
    if op in ("Identity", "Cast", "Sigmoid", "Tanh", "Relu", "Neg", "Clip", "HardSigmoid"):  # (Clip's bounds:
        # scalars)
        return shape_of(n.inputs[0])
    if op in ("Add", "Sub", "Mul", "Div", "Min", "Max"):
        shapes = [shape_of(i) for i in n.inputs]
        if not shapes or any(s is None for s in shapes):
            return None
        out = shapes[0]
        for s in shapes[1:]:
            out = _broadcast(out, s)  # type: ignore[arg-type]
        return out
    x = shape_of(n.inputs[0]) if n.inputs else None  # (a Constant has no input)
    if x is None:
        return None
    if op == "MatMul":
        w = shape_of(n.inputs[1])
        if w is None or len(x) < 2 or len(w) != 2:
            return None
        return x[:-1] + (w[1],)
    if op == "Gather":
        idx = shape_of(n.inputs[1])
        axis = int(attr(n, "axis", 0)) % len(x)  # type: ignore[arg-type]
        return None if idx is None else x[:axis] + idx + x[axis + 1:]
    if op == "Slice":
        axes = const_array(n.inputs[3]) if len(n.inputs) > 3 and n.inputs[3] is not None else None
        if axes is None:
            return (None,) * len(x)
        cut = {int(a) % len(x) for a in axes}
        return tuple(None if i in cut else d for i, d in enumerate(x))
    if op == "Split":
        axis = int(attr(n, "axis", 0)) % len(x)  # type: ignore[arg-type]
        sizes = const_array(n.inputs[1]) if len(n.inputs) > 1 and n.inputs[1] is not None else None
        i = n.outputs.index(v)
        d = int(sizes[i]) if sizes is not None else (x[axis] // len(n.outputs) if x[axis] is not None else None)
        return x[:axis] + (d,) + x[axis + 1:]
    if op in ("Unsqueeze", "Squeeze"):
        axes = const_array(n.inputs[1]) if len(n.inputs) > 1 else None
        if axes is None:
            return None
        if op == "Squeeze":
            drop = {int(a) % len(x) for a in axes}
            return tuple(d for i, d in enumerate(x) if i not in drop)
        r = len(x) + axes.size
        ins = {int(a) % r for a in axes}
        it = iter(x)
        return tuple(1 if i in ins else next(it) for i in range(r))
    if op == "Reshape":
        s = const_array(n.inputs[1])
        if s is None:
            return None
        zero_copies = not attr(n, "allowzero", 0)
        dims: list[int | None] = [x[i] if (zero_copies and int(d) == 0 and i < len(x)) else int(d) for i, d in enumerate(s)]
        if -1 in dims:
            known = [d for d in dims if d != -1]
            total = None if any(d is None for d in x) else int(np.prod(x))
            dims[dims.index(-1)] = (total // int(np.prod(known))) if total is not None and None not in known \
                and int(np.prod(known)) else None
        return tuple(dims)
    if op == "Transpose":
        perm = attr(n, "perm") or list(range(len(x)))[::-1]
        return tuple(x[int(p)] for p in perm)  # type: ignore[union-attr]
    return None

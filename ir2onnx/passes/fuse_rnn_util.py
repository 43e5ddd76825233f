"""Helpers of the recurrent fusion: match failures, constant folding, reshape-only glue chains, node emission."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator, MutableSet, Sequence
from typing import TypeVar

import numpy as np
import onnx_ir as ir

from ir2onnx.deep import deep_call
from ir2onnx.passes.loop_utils import all_graphs, all_nodes, inherit_meta


class NoMatch(Exception):
    """Why a loop stays literal (a readable reason, logged at debug level)."""


def producer(v: ir.Value | None, *op_types: str) -> ir.Node | None:
    """The node producing `v` when its type is one of `op_types` (standard domain), else None."""
    if v is None:
        return None
    n = v.producer()
    if n is None or n.domain not in ("", "ai.onnx") or (op_types and n.op_type not in op_types):
        return None
    return n


def through(v: ir.Value | None, *op_types: str) -> ir.Value | None:
    """v, or what it is computed from through a chain of `op_types` (Casts, Reshapes of shape vectors)."""
    while (n := producer(v, *op_types)) is not None:
        v = n.inputs[0]
    return v


def input_at(node: ir.Node, i: int) -> ir.Value | None:
    """The node's i-th input, None when absent or left out (optional inputs)."""
    return node.inputs[i] if len(node.inputs) > i else None


def attr(node: ir.Node, name: str, default: object = None) -> object:
    a = node.attributes.get(name)
    return default if a is None else a.value


# ---- constants

_T = TypeVar("_T")
_derivation = threading.local()


def _once_per_query(derive: Callable[[ir.Value], _T | None]) -> Callable[[ir.Value | None], _T | None]:
    """`derive` (const_array, shape_of) computes each value once per outermost query: both walk producers and call
    each other, and an unrolled recurrence reaches the same values along exponentially many paths (c_t reads c_t-1
    through both of its products). The table lives for one query only (passes change the graph between queries), or
    for a `derivations()` block. The walk recurses once per layer: where a network is deeper than Python allows, the
    query goes on from where it stopped on a deep stack (ir2onnx.deep)."""
    @functools.wraps(derive)
    def query(v: ir.Value | None) -> _T | None:
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


def _resume(query: Callable[[ir.Value], _T | None], v: ir.Value, table: dict) -> _T | None:
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
def const_array(v: ir.Value) -> np.ndarray | None:
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


def _fold(n: ir.Node, index: int) -> np.ndarray | None:
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
    x = ins[0]
    if op == "Identity":
        return x
    if op == "Transpose":
        return np.transpose(x, attr(n, "perm"))  # type: ignore[arg-type]
    if op == "Cast":
        return x.astype(ir.DataType(attr(n, "to")).numpy())  # type: ignore[union-attr]
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


def value_dtype(node: ir.Node) -> ir.DataType | None:
    """The element type of a node's tensors, from the first input that declares one (values a pass created may
    have none; its constant weights do)."""
    for v in node.inputs:
        if v is not None and v.dtype is not None:
            return v.dtype
    return None


def filled_with(v: ir.Value | None) -> np.ndarray | None:
    """The constant `v` is a broadcast of (through reshapes, Casts and an Expand: zeros of a run-time shape, a
    Broadcast of 1), or None."""
    v = through(v, "Squeeze", "Unsqueeze", "Reshape", "Identity", "Cast")
    ex = producer(v, "Expand")
    return const_array(ex.inputs[0] if ex is not None else v)


def int_scalar(v: ir.Value | None) -> int | None:
    """A one-element integer constant as an int."""
    c = const_array(v)
    if c is None or c.size != 1 or c.dtype.kind not in "iu":
        return None
    return int(c.reshape(-1)[0])


# ---- reshape-only glue


_GLUE = ("Reshape", "Squeeze", "Unsqueeze", "Identity")


def _is_glue(n: ir.Node) -> bool:
    """Ops that only change the shape (the elements keep their row-major order), with constant parameters."""
    if n.op_type == "Identity":
        return True
    if n.op_type in ("Squeeze", "Unsqueeze"):
        return len(n.inputs) > 1 and const_array(n.inputs[1]) is not None
    if n.op_type == "Reshape":
        shape = const_array(n.inputs[1])
        return shape is not None and not (attr(n, "allowzero", 0) and np.any(shape == 0))
    return False


def view_root(v: ir.Value) -> tuple[ir.Value, list[ir.Node]]:
    """Walk back through glue: (the value v is a reshape of, the glue nodes from it to v in order)."""
    chain: list[ir.Node] = []
    while (n := producer(v, *_GLUE)) is not None and _is_glue(n):
        chain.append(n)
        v = n.inputs[0]  # type: ignore[assignment]
    return v, chain[::-1]


# ---- emission


class Names(MutableSet[str]):
    """Every value and node name of a model, subgraphs included, collected when first asked: most passes find
    nothing to rewrite and never need a fresh name (collecting took about 5 ms a pass on a 1,500-layer network)."""

    def __init__(self, graph: ir.Graph) -> None:
        self._graph: ir.Graph | None = graph
        self._names: set[str] = set()

    def _all(self) -> set[str]:
        if self._graph is not None:
            graph, self._graph = self._graph, None
            names = self._names
            for g in all_graphs(graph):
                names.update(v.name for v in (*g.inputs, *g.initializers.values()) if v.name)
                for n in g:
                    if n.name:
                        names.add(n.name)
                    names.update(v.name for v in n.outputs if v.name)
        return self._names

    def __contains__(self, name: object) -> bool:
        return name in self._all()

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def add(self, name: str) -> None:
        self._all().add(name)

    def discard(self, name: str) -> None:
        self._all().discard(name)


def all_names(graph: ir.Graph) -> Names:
    """Every value and node name of the model, subgraphs included (an Emitter's new names avoid them), collected
    when first used."""
    return Names(graph)


def fresh_name(names: MutableSet[str], hint: str) -> str:
    """`hint`, or `hint_N` for the first N that makes it new; recorded in `names`."""
    name, n = hint, 0
    while name in names:
        n += 1
        name = f"{hint}_{n}"
    names.add(name)
    return name


def attributes(attrs: dict[str, object] | None) -> list[ir.Attr]:
    """`attrs` as onnx-ir attributes, as `ir.convenience.convert_attributes` makes them; the usual kinds (int, float,
    string, graph, ints) directly: its general conversion took about 0.14 ms a node."""
    out: list[ir.Attr] = []
    for name, value in (attrs or {}).items():
        kind = type(value)
        if kind is int:
            out.append(ir.AttrInt64(name, value))  # type: ignore[arg-type]
        elif kind is float:
            out.append(ir.AttrFloat32(name, value))  # type: ignore[arg-type]
        elif kind is str:
            out.append(ir.AttrString(name, value))  # type: ignore[arg-type]
        elif kind is ir.Graph:
            out.append(ir.AttrGraph(name, value))  # type: ignore[arg-type]
        elif kind in (list, tuple) and value and all(type(v) is int for v in value):  # type: ignore[attr-defined]
            out.append(ir.AttrInt64s(name, value))  # type: ignore[arg-type]
        else:
            out.append(ir.convenience.convert_attribute(name, value))  # type: ignore[arg-type]
    return out


class Emitter:
    """Creates nodes before `anchor` in its graph; constants become initializers of the main graph."""

    def __init__(self, anchor: ir.Node, root: ir.Graph, names: MutableSet[str]) -> None:
        self.anchor = anchor
        self.graph = anchor.graph
        self.root = root
        self.names = names
        self.prefix = anchor.name or "rnn"
        self.nodes: list[ir.Node] = []

    def fresh(self, hint: str) -> str:
        return fresh_name(self.names, f"{self.prefix}/fused/{hint}")

    def const(self, array: np.ndarray, hint: str = "c") -> ir.Value:
        array = np.ascontiguousarray(array) if np.ndim(array) else np.asarray(array)  # (ascontiguousarray makes
        # a scalar [1])
        v = ir.Value(name=self.fresh(hint), const_value=ir.Tensor(array), type=None)
        v.const_value.name = v.name  # type: ignore[union-attr]
        v.type = ir.TensorType(v.const_value.dtype)  # type: ignore[union-attr]
        v.shape = ir.Shape(array.shape)
        self.root.register_initializer(v)
        return v

    def i64(self, values: Sequence[int]) -> ir.Value:
        return self.const(np.asarray(values, np.int64), "axes")

    def op(self, op_type: str, inputs: Sequence[ir.Value | None], attrs: dict[str, object] | None = None,
           outputs: int = 1) -> list[ir.Value]:
        name = self.fresh(op_type)
        outs = [ir.Value(name=f"{name}_{i}" if outputs > 1 else f"{name}_out") for i in range(outputs)]
        for o in outs:
            self.names.add(o.name)  # type: ignore[arg-type]
        node = ir.Node("", op_type, list(inputs), attributes(attrs), outputs=outs,
                       name=name)
        self.nodes.append(node)
        return outs

    def op1(self, op_type: str, inputs: Sequence[ir.Value | None], attrs: dict[str, object] | None = None) -> ir.Value:
        return self.op(op_type, inputs, attrs)[0]

    def squeeze(self, x: ir.Value, axes: Sequence[int]) -> ir.Value:
        return self.op1("Squeeze", [x, self.i64(axes)])

    def arange(self, n: ir.Value) -> ir.Value:
        """0, 1, ..., n - 1 for an int64 scalar n."""
        return self.op1("Range", [self.const(np.array(0, np.int64), "zero"), n, self.const(np.array(1, np.int64), "one")])

    def unsqueeze(self, x: ir.Value, axes: Sequence[int]) -> ir.Value:
        return self.op1("Unsqueeze", [x, self.i64(axes)])

    def reverse(self, x: ir.Value, axis: int = 0) -> ir.Value:
        """x reversed along `axis` (a Slice with step -1)."""
        return self.op1("Slice", [x, self.i64([-1]), self.i64([-(2**63)]), self.i64([axis]), self.i64([-1])])

    def move0(self, x: ir.Value, axis: int, rank: int) -> ir.Value:
        """Move axis 0 of a rank-`rank` tensor to `axis`."""
        if axis == 0:
            return x
        perm = list(range(1, axis + 1)) + [0] + list(range(axis + 1, rank))
        return self.op1("Transpose", [x], {"perm": perm})

    def to0(self, x: ir.Value, axis: int, rank: int) -> ir.Value:
        """Move `axis` of a rank-`rank` tensor to position 0."""
        if axis == 0:
            return x
        perm = [axis] + [i for i in range(rank) if i != axis]
        return self.op1("Transpose", [x], {"perm": perm})

    def replay(self, chain: Sequence[ir.Node], x: ir.Value, lifted: bool) -> ir.Value:
        """Apply the glue `chain` to x; `lifted`: x has an extra leading (time) axis that the glue keeps."""
        for n in chain:
            if n.op_type == "Identity":
                continue
            if n.op_type == "Reshape":
                shape = [int(s) for s in const_array(n.inputs[1])]  # type: ignore[union-attr]
                static = shape_of(n.outputs[0])
                if static is not None and all(d is not None for d in static):
                    shape = [int(d) for d in static]  # type: ignore[arg-type]  # no -1: also right for 0 steps
                x = self.op1("Reshape", [x, self.i64([0, *shape] if lifted else shape)])
                continue
            axes = [int(a) for a in const_array(n.inputs[1])]  # type: ignore[union-attr]
            if lifted:  # negative axes count from the end and stay valid
                axes = [a + 1 if a >= 0 else a for a in axes]
            x = self.op1(n.op_type, [x, self.i64(axes)])
        return x

    def commit(self) -> None:
        """Insert the new nodes before the anchor; they stand for it (the IR layer it came from, for errors)."""
        for n in self.nodes:
            inherit_meta(n, self.anchor)
        if self.nodes:
            self.graph.insert_before(self.anchor, self.nodes)  # type: ignore[union-attr]
        self.nodes = []


class Subgraph(Emitter):
    """Nodes for a graph of their own (an If branch, a Scan body, nodes to insert into a loop body), made and named
    like the Emitter `em`'s; constants still become initializers of the main graph."""

    def __init__(self, em: Emitter) -> None:
        super().__init__(em.anchor, em.root, em.names)
        self.prefix = em.prefix

    def value(self, hint: str, dtype: ir.DataType | None = None) -> ir.Value:
        """A new graph input."""
        return ir.Value(name=self.fresh(hint), type=ir.TensorType(dtype) if dtype is not None else None)

    def add(self, node: ir.Node) -> ir.Node:
        """An existing node (outputs named here when they have no name)."""
        for out in node.outputs:
            if not out.name:
                out.name = self.fresh(f"{node.op_type}_out")
        self.nodes.append(node)
        return node

    def build(self, outputs: Sequence[ir.Value], inputs: Sequence[ir.Value] = (), hint: str = "body") -> ir.Graph:
        """The graph of the nodes made here."""
        return ir.Graph(list(inputs), list(outputs), nodes=self.nodes, name=self.fresh(hint))


def distinct_output(x: ir.Value, body: ir.Graph, names: MutableSet[str], hint: str, like: ir.Node) -> ir.Value:
    """`x` to be listed as a new output of `body`: itself, or an Identity of it when it is already an input or output
    of the body or comes from an enclosing graph (onnxruntime's Scan mishandles one value listed as two outputs)."""
    if not (x.is_graph_output() or x.graph is not body or x.is_graph_input()):
        return x
    step = ir.Value(name=fresh_name(names, f"{hint}/step"), type=x.type, shape=x.shape)
    body.append(inherit_meta(ir.Node("", "Identity", [x], outputs=[step], name=fresh_name(names, f"{hint}/step_node")),
                             like))
    return step


def redirect(pairs: Sequence[tuple[ir.Value | None, ir.Value]], suffix: str) -> None:
    """Readers of each old value read its new value instead (a graph output keeps its name, the old value takes
    `name/suffix`)."""
    for old, new in pairs:
        if old is None or not (old.uses() or old.is_graph_output()):
            continue
        new.type, new.shape = old.type, old.shape
        if old.is_graph_output():
            name, old.name = old.name, f"{old.name}/{suffix}"
            new.name = name
        old.replace_all_uses_with(new, replace_graph_outputs=True)


def own_weight_nodes(branch: ir.Graph, owner: ir.Graph) -> None:
    """Nodes of `owner` (the graph of `branch`'s If) that compute from initializers alone values only `branch` reads,
    its bodies included, move into it. onnxruntime folds them at load into the branch's initializers, which a body in
    the branch reads one level up and prepacks; left in `owner`, a Scan behind the empty-input If (empty_inputs.py) in
    gru_scan.py's branch read them two levels up and ran its Gemms unpacked (measured: the Keras GRU at batch 16 1.1x
    slower)."""
    inside = {branch, *branch.subgraphs()}
    constant: dict[ir.Node, bool] = {}

    def from_initializers(n: ir.Node | None) -> bool:
        if n is None or n.graph is not owner or any(a.type == ir.AttributeType.GRAPH for a in n.attributes.values()):
            return False
        if n not in constant:
            constant[n] = all(v is None or v.const_value is not None or from_initializers(v.producer())
                              for v in n.inputs)
        return constant[n]

    moving: set[ir.Node] = set()
    changed = True
    while changed:  # a node moves once every reader of its outputs is inside or moves
        changed = False
        for n in owner:
            readers = [u.node for o in n.outputs for u in o.uses()]
            if n not in moving and readers and from_initializers(n) and not any(o.is_graph_output() for o in n.outputs) \
                    and all(r.graph in inside or r in moving for r in readers):
                moving.add(n)
                changed = True
    ordered = [n for n in owner if n in moving]
    for n in ordered:
        owner.remove(n)
    first = next(iter(branch), None)
    if ordered and first is not None:
        branch.insert_before(first, ordered)
    elif ordered:
        branch.extend(ordered)


def own_weights(graph: ir.Graph) -> None:
    """Initializers of enclosing graphs that only `graph` (an If branch) reads, its bodies included, become the
    branch's own: onnxruntime prepacks an outer initializer read two If levels down no more (measured: a fused LSTM
    1.4x slower; a Scan's MatMul behind the empty-input If 1.2x slower)."""
    inside = {graph, *graph.subgraphs()}
    for n in all_nodes(graph):
        for v in n.inputs:
            owner = v.graph if v is not None else None
            if v is None or v.const_value is None or owner is None or owner in inside or not v.name \
                    or owner.initializers.get(v.name) is not v or any(u.node.graph not in inside for u in v.uses()):
                continue
            del owner.initializers[v.name]
            graph.register_initializer(v)


def replace_node(node: ir.Node, pairs: Sequence[tuple[ir.Value | None, ir.Value]], suffix: str) -> None:
    """redirect(pairs), then `node` leaves its graph."""
    redirect(pairs, suffix)
    for i in range(len(node.inputs)):
        node.replace_input_with(i, None)
    node.graph.remove(node)  # type: ignore[union-attr]


# ---- static shapes (ONNX inference cannot see through constants captured from the outer graph)

Dims = tuple[int | None, ...]


def rank_of(v: ir.Value | None) -> int | None:
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
def shape_of(v: ir.Value) -> Dims | None:
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


def _derive(n: ir.Node, v: ir.Value) -> Dims | None:
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

"""The rewriting toolkit the passes share: fresh names, an Emitter that builds nodes before a place in a graph,
replacing nodes and values, keeping metadata, and giving a branch its own weights.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, MutableSet, Sequence

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_graphs, all_nodes
from ir2onnx.passes.analysis.values import const_array, shape_of

_recorders: list[dict[oir.Value, oir.Value]] = []


@contextlib.contextmanager
def recording() -> Iterator[dict[oir.Value, oir.Value]]:
    """Every value the toolkit replaces inside (take_place, read_instead, redirect, replace_node), mapped to the value
    replacing it: the pipeline hands that to the layer map, so that a pass built on the toolkit keeps the provenance
    of what it rewrites without saying so."""
    found: dict[oir.Value, oir.Value] = {}
    _recorders.append(found)
    try:
        yield found
    finally:
        _recorders.remove(found)


def _record(old: oir.Value, new: oir.Value) -> None:
    for found in _recorders:
        found[old] = new


def record(old: oir.Value, new: oir.Value) -> None:
    """`new` computes what `old` did, for a pass that rewires readers itself (the layer map follows, see `recording`)."""
    _record(old, new)


def inherit_meta(new: oir.Node, old: oir.Node | None) -> oir.Node:
    """Give a node a pass makes in place of `old` the metadata of `old` (e.g. the IR layer it was converted from,
    which error messages name)."""
    if old is not None:
        for key, value in old.meta.items():
            new.meta[key] = value
    return new

def keep_read_scan_inputs(scan: oir.Node, body: oir.Graph, axes: list[int], directions: list[int]) -> None:
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
    scan.attributes["num_scan_inputs"] = oir.AttrInt64("num_scan_inputs", len(keep))
    scan.attributes["scan_input_axes"] = oir.AttrInt64s("scan_input_axes", [axes[j] for j in keep])
    scan.attributes["scan_input_directions"] = oir.AttrInt64s("scan_input_directions", [directions[j] for j in keep])

def take_place(old: oir.Value, new: oir.Value) -> None:
    """`new` replaces `old` everywhere, as a graph output too, with its name and declared type and shape."""
    name, declared_type, declared_shape = old.name, old.type, old.shape
    _record(old, new)
    old.replace_all_uses_with(new, replace_graph_outputs=True)
    old.name = None
    new.name = name
    if declared_type is not None:
        new.type = declared_type
    if declared_shape is not None:
        new.shape = declared_shape

def read_instead(old: oir.Value, new: oir.Value, graph: oir.Graph) -> bool:
    """Readers of `old` read `new`; where `old` is an output of `graph`, `new` takes its place (take_place). False,
    changing nothing, where `new` cannot: it is no value `graph` computes, or is an output already."""
    if not old.is_graph_output():
        _record(old, new)
        old.replace_all_uses_with(new)
        return True
    producer = new.producer()
    if producer is None or producer.graph is not graph or new.is_graph_output():
        return False
    take_place(old, new)
    return True

class Names(MutableSet[str]):
    """Every value and node name of a model, subgraphs included, collected when first asked: most passes find
    nothing to rewrite and never need a fresh name (collecting took about 5 ms a pass on a 1,500-layer network)."""

    def __init__(self, graph: oir.Graph) -> None:
        self._graph: oir.Graph | None = graph
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

def all_names(graph: oir.Graph) -> Names:
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

def attributes(attrs: dict[str, object] | None) -> list[oir.Attr]:
    """`attrs` as onnx-ir attributes, as `oir.convenience.convert_attributes` makes them; the usual kinds (int, float,
    string, graph, ints) directly: its general conversion took about 0.14 ms a node."""
    out: list[oir.Attr] = []
    for name, value in (attrs or {}).items():
        kind = type(value)
        if kind is int:
            out.append(oir.AttrInt64(name, value))  # type: ignore[arg-type]
        elif kind is float:
            out.append(oir.AttrFloat32(name, value))  # type: ignore[arg-type]
        elif kind is str:
            out.append(oir.AttrString(name, value))  # type: ignore[arg-type]
        elif kind is oir.Graph:
            out.append(oir.AttrGraph(name, value))  # type: ignore[arg-type]
        elif kind in (list, tuple) and value and all(type(v) is int for v in value):  # type: ignore[attr-defined]
            out.append(oir.AttrInt64s(name, value))  # type: ignore[arg-type]
        else:
            out.append(oir.convenience.convert_attribute(name, value))  # type: ignore[arg-type]
    return out

def initializer(graph: oir.Graph, name: str, array: np.ndarray) -> oir.Value:
    """`array` as an initializer of `graph` named `name` (a fresh one), with its type and shape."""
    array = np.ascontiguousarray(array) if np.ndim(array) else np.asarray(array)  # (ascontiguousarray makes a
    # scalar [1])
    v = oir.Value(name=name, const_value=oir.Tensor(array, name=name), type=oir.TensorType(oir.DataType.from_numpy(
        array.dtype)), shape=oir.Shape(array.shape))
    graph.register_initializer(v)
    return v


class Emitter:
    """Creates nodes before `anchor` in its graph; constants become initializers of the main graph."""

    def __init__(self, anchor: oir.Node, root: oir.Graph, names: MutableSet[str]) -> None:
        self.anchor = anchor
        self.graph = anchor.graph
        self.root = root
        self.names = names
        self.prefix = anchor.name or "rnn"
        self.nodes: list[oir.Node] = []

    def fresh(self, hint: str) -> str:
        return fresh_name(self.names, f"{self.prefix}/fused/{hint}")

    def const(self, array: np.ndarray, hint: str = "c") -> oir.Value:
        return initializer(self.root, self.fresh(hint), array)

    def i64(self, values: Sequence[int]) -> oir.Value:
        return self.const(np.asarray(values, np.int64), "axes")

    def op(self, op_type: str, inputs: Sequence[oir.Value | None], attrs: dict[str, object] | None = None,
           outputs: int = 1) -> list[oir.Value]:
        name = self.fresh(op_type)
        outs = [oir.Value(name=f"{name}_{i}" if outputs > 1 else f"{name}_out") for i in range(outputs)]
        for o in outs:
            self.names.add(o.name)  # type: ignore[arg-type]
        node = oir.Node("", op_type, list(inputs), attributes(attrs), outputs=outs,
                       name=name)
        self.nodes.append(node)
        return outs

    def op1(self, op_type: str, inputs: Sequence[oir.Value | None], attrs: dict[str, object] | None = None) -> oir.Value:
        return self.op(op_type, inputs, attrs)[0]

    def squeeze(self, x: oir.Value, axes: Sequence[int]) -> oir.Value:
        return self.op1("Squeeze", [x, self.i64(axes)])

    def arange(self, n: oir.Value) -> oir.Value:
        """0, 1, ..., n - 1 for an int64 scalar n."""
        return self.op1("Range", [self.const(np.array(0, np.int64), "zero"), n, self.const(np.array(1, np.int64), "one")])

    def unsqueeze(self, x: oir.Value, axes: Sequence[int]) -> oir.Value:
        return self.op1("Unsqueeze", [x, self.i64(axes)])

    def reverse(self, x: oir.Value, axis: int = 0) -> oir.Value:
        """x reversed along `axis` (a Slice with step -1)."""
        return self.op1("Slice", [x, self.i64([-1]), self.i64([-(2**63)]), self.i64([axis]), self.i64([-1])])

    def move0(self, x: oir.Value, axis: int, rank: int) -> oir.Value:
        """Move axis 0 of a rank-`rank` tensor to `axis`."""
        if axis == 0:
            return x
        perm = list(range(1, axis + 1)) + [0] + list(range(axis + 1, rank))
        return self.op1("Transpose", [x], {"perm": perm})

    def to0(self, x: oir.Value, axis: int, rank: int) -> oir.Value:
        """Move `axis` of a rank-`rank` tensor to position 0."""
        if axis == 0:
            return x
        perm = [axis] + [i for i in range(rank) if i != axis]
        return self.op1("Transpose", [x], {"perm": perm})

    def replay(self, chain: Sequence[oir.Node], x: oir.Value, lifted: bool) -> oir.Value:
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

    def value(self, hint: str, dtype: oir.DataType | None = None) -> oir.Value:
        """A new graph input."""
        return oir.Value(name=self.fresh(hint), type=oir.TensorType(dtype) if dtype is not None else None)

    def add(self, node: oir.Node) -> oir.Node:
        """An existing node (outputs named here when they have no name)."""
        for out in node.outputs:
            if not out.name:
                out.name = self.fresh(f"{node.op_type}_out")
        self.nodes.append(node)
        return node

    def build(self, outputs: Sequence[oir.Value], inputs: Sequence[oir.Value] = (), hint: str = "body") -> oir.Graph:
        """The graph of the nodes made here."""
        return oir.Graph(list(inputs), list(outputs), nodes=self.nodes, name=self.fresh(hint))

def distinct_output(x: oir.Value, body: oir.Graph, names: MutableSet[str], hint: str, like: oir.Node) -> oir.Value:
    """`x` to be listed as a new output of `body`: itself, or an Identity of it when it is already an input or output
    of the body or comes from an enclosing graph (onnxruntime's Scan mishandles one value listed as two outputs)."""
    if not (x.is_graph_output() or x.graph is not body or x.is_graph_input()):
        return x
    step = oir.Value(name=fresh_name(names, f"{hint}/step"), type=x.type, shape=x.shape)
    body.append(inherit_meta(oir.Node("", "Identity", [x], outputs=[step], name=fresh_name(names, f"{hint}/step_node")),
                             like))
    return step

def redirect(pairs: Sequence[tuple[oir.Value | None, oir.Value]], suffix: str) -> None:
    """Readers of each old value read its new value instead (a graph output keeps its name, the old value takes
    `name/suffix`)."""
    for old, new in pairs:
        if old is None or not (old.uses() or old.is_graph_output()):
            continue
        new.type, new.shape = old.type, old.shape
        if old.is_graph_output():
            name, old.name = old.name, f"{old.name}/{suffix}"
            new.name = name
        _record(old, new)
        old.replace_all_uses_with(new, replace_graph_outputs=True)

def own_weight_nodes(branch: oir.Graph, owner: oir.Graph) -> None:
    """Nodes of `owner` (the graph of `branch`'s If) that compute from initializers alone values only `branch` reads,
    its bodies included, move into it. onnxruntime folds them at load into the branch's initializers, which a body in
    the branch reads one level up and prepacks; left in `owner`, a Scan behind the empty-input If (empty_inputs.py) in
    gru_scan.py's branch read them two levels up and ran its Gemms unpacked (measured: the Keras GRU at batch 16 1.1x
    slower)."""
    inside = {branch, *branch.subgraphs()}
    constant: dict[oir.Node, bool] = {}

    def from_initializers(n: oir.Node | None) -> bool:
        if n is None or n.graph is not owner or any(a.type == oir.AttributeType.GRAPH for a in n.attributes.values()):
            return False
        if n not in constant:
            constant[n] = all(v is None or v.const_value is not None or from_initializers(v.producer())
                              for v in n.inputs)
        return constant[n]

    moving: set[oir.Node] = set()
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

def own_weights(graph: oir.Graph) -> None:
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

def replace_node(node: oir.Node, pairs: Sequence[tuple[oir.Value | None, oir.Value]], suffix: str) -> None:
    """redirect(pairs), then `node` leaves its graph."""
    redirect(pairs, suffix)
    for i in range(len(node.inputs)):
        node.replace_input_with(i, None)
    node.graph.remove(node)  # type: ignore[union-attr]


def inline_branch(node: oir.Node, branch: oir.Graph, names: MutableSet[str], suffix: str = "taken") -> None:
    """The If `node` replaced by `branch`, the branch it takes: its initializers and nodes move before the If in the
    If's graph (a name that graph already holds made fresh), and the If's readers read the branch's outputs (through
    an Identity of their own where the output is a value of an enclosing graph, a value returned twice, or an input
    or initializer that would otherwise take a graph output's name)."""
    graph = node.graph
    assert graph is not None
    held = {v.name for v in (*graph.inputs, *graph.initializers.values(), *(o for n in graph for o in n.outputs))}
    for name, init in list(branch.initializers.items()):
        del branch.initializers[name]
        if name in graph.initializers:
            init.name = fresh_name(names, name)
        graph.register_initializer(init)
    moved = list(branch)
    for n in moved:
        branch.remove(n)
        for v in n.outputs:
            if v.name in held:
                v.name = fresh_name(names, v.name)
    if moved:
        graph.insert_before(node, moved)
    outs = list(branch.outputs)
    branch.outputs.clear()
    results: list[oir.Value] = []
    for old, out in zip(node.outputs, outs):
        if out.graph is not graph or out.is_graph_output() or any(out is r for r in results) \
                or (out.producer() is None and old.is_graph_output()):
            copy = oir.Value(name=fresh_name(names, f"{out.name or 'branch'}/{suffix}"), type=out.type, shape=out.shape)
            graph.insert_before(node, inherit_meta(oir.Node("", "Identity", [out], outputs=[copy], name=fresh_name(
                names, f"{out.name or 'branch'}/{suffix}")), node))
            out = copy
        results.append(out)
    replace_node(node, list(zip(node.outputs, results)), suffix)


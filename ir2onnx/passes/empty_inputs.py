"""LSTM, GRU and Scan nodes over tensors that may be empty run behind an If.

onnxruntime (1.32) fails on some empty inputs that OpenVINO runs, and its CPU kernels end the process on some:
its GRU on a sequence without time steps or a batch of no rows (std::terminate), its LSTM on a batch of no rows,
its Scan on a scan input of length 0 (an error, or a floating point exception that ends the process when the scan
axis is not the first); its RNN kernel, and the LSTM without time steps, return empty outputs. A Keras GRU on
`Input((None, F))`, a TensorIterator over a sequence of run-time length or any of these on an empty batch then
cannot run. So such a node, where the sizes in question are not known to be positive, becomes If(they are) the node,
else what it computes over nothing:
* LSTM/GRU (guarded on its input being non-empty): Y of its (empty) shape [steps, directions, batch, hidden], Y_h and
  Y_c the initial states (zeros without one), which is also what the loop it came from returns after no iteration
  (an LSTM, guarded for a run-time batch, then also keeps its initial states over no step, where onnxruntime's
  kernel returns zeros);
* Scan (guarded on its scan length): the states' initial values; each scan output empty on its stacking axis, its
  other dims those of the state it stacks, read at run time, where it is a state's new value (a recurrent cell's
  step output: the Scans of rnn_scan.py and gru_scan.py), else the body output's where they are static, else 0 (as
  the translation's Loops give after no iteration).

This is not an optimisation: the API applies it to every model it returns, passes on or off. The node's weights
become the branch's own initializers when nothing else reads them (onnxruntime prepacks those; fuse_rnn_util's
own_weights).
"""

from __future__ import annotations

from collections.abc import Callable, MutableSet

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import (
    all_nodes,
    attr,
    carried_count,
    input_at,
    is_default_domain,
    scan_ints,
    stacked_outputs,
)
from ir2onnx.passes.analysis.shapes import infer_shapes
from ir2onnx.passes.analysis.values import derivations, shape_of, value_dtype
from ir2onnx.passes.replacing import ReplacingPass
from ir2onnx.passes.rewrite import Emitter, Subgraph, all_names, own_weight_nodes, own_weights, replace_node

# the axes of X (layout 0: [steps, batch, input]) that must not be empty, per recurrent op
RECURRENT_AXES = {"GRU": (0, 1), "LSTM": (1,)}


class GuardEmptyInputsPass(ReplacingPass):
    """Replaces the guarded nodes' outputs by the If outputs now standing for them."""

    def call(self, model: oir.Model) -> oir.passes.PassResult:
        def candidates() -> list[oir.Node]:
            with derivations():  # one walk over the producers for all the nodes' shapes
                return [n for n in all_nodes(model.graph) if _may_be_empty(n)]

        guarded = candidates()
        if guarded:  # shapes through the nodes the passes made (a fused node's output read by the next one)
            infer_shapes(model)
            guarded = candidates()
        names = all_names(model.graph)
        for node in guarded:
            if node.op_type == "Scan":
                self.replaced |= _guard(node, model.graph, names, _scan_length, _empty_scan)
            else:
                self.replaced |= _guard(node, model.graph, names, _input_size, _empty_recurrent)
        return oir.passes.PassResult(model, modified=bool(guarded))


def _known_positive(v: oir.Value, axis: int) -> bool:
    """Whether v's dim at `axis` is a static positive size (derived, or declared by shape inference)."""
    for shape in (shape_of(v), v.shape):
        if shape is not None and -len(shape) <= axis < len(shape) and isinstance(shape[axis], int) and shape[axis] > 0:
            return True
    return False


def _may_be_empty(node: oir.Node) -> bool:
    if not is_default_domain(node) or not node.inputs or node.inputs[0] is None:
        return False
    if node.op_type in RECURRENT_AXES:
        x = node.inputs[0]
        return attr(node, "layout", 0) == 0 and value_dtype(node) is not None and \
            not all(_known_positive(x, a) for a in RECURRENT_AXES[node.op_type])
    if node.op_type == "Scan":
        x, axis = _first_scan_input(node)
        body = node.attributes["body"].as_graph()
        return not _known_positive(x, axis) and \
            all(_state_of(node, k) is not None or (body.outputs[k].dtype is not None and body.outputs[k].shape is not None)
                for k, _ in stacked_outputs(node, body))
    return False


def _state_of(node: oir.Node, k: int) -> tuple[int, oir.DataType, int] | None:
    """The state whose new value a Scan's body output `k` is (itself or through Identities: a recurrent cell's step
    output, as the Scans of rnn_scan.py and gru_scan.py return it), with its element type and the output's stacking
    axis (from 0), where those are known: each row then has the state's initial run-time shape (a state keeps its
    shape from step to step). Else None."""
    body = node.attributes["body"].as_graph()
    carried = carried_count(node)
    axis = dict(stacked_outputs(node, body))[k]
    v: oir.Value | None = body.outputs[k]
    while v is not None:
        for j, state in enumerate(body.outputs[:carried]):
            initial = node.inputs[j]
            if state is not v or initial is None:
                continue
            dtype = next((t.dtype for t in (initial, body.inputs[j], state) if t.dtype is not None), None)
            if axis < 0:  # counted from the end: the rank is needed
                shape = next((t.shape for t in (initial, body.inputs[j], state) if t.shape is not None), None)
                axis = axis + len(shape) + 1 if shape is not None else -1
            return (j, dtype, axis) if dtype is not None and axis >= 0 else None
        producer = v.producer()
        v = producer.inputs[0] if producer is not None and producer.op_type == "Identity" else None
    return None


def _first_scan_input(node: oir.Node) -> tuple[oir.Value, int]:
    x = node.inputs[carried_count(node)]
    assert x is not None
    return x, scan_ints(node, "scan_input_axes", len(node.inputs) - carried_count(node))[0]


def _input_size(em: Emitter, node: oir.Node) -> oir.Value:
    """An LSTM/GRU runs where its input has elements (then no step and no row are empty)."""
    return em.op1("Greater", [em.op1("Size", [node.inputs[0]]), em.const(np.array(0, np.int64), "zero")])


def _scan_length(em: Emitter, node: oir.Node) -> oir.Value:
    x, axis = _first_scan_input(node)
    length = em.op1("Gather", [em.op1("Shape", [x]), em.i64([axis])], {"axis": 0})
    return em.op1("Greater", [length, em.i64([0])])


def _empty_recurrent(em: Emitter, branch: Subgraph, node: oir.Node, old: oir.Value) -> oir.Value:
    k = old.index()
    initial = input_at(node, 5 if k == 1 else 6) if k else None
    if initial is not None:  # Y_h, Y_c: the initial state
        return branch.op1("Identity", [initial])
    # Y: [steps, directions, batch, hidden]; states: [directions, batch, hidden]
    x = node.inputs[0]
    dims = [branch.op1("Shape", [x], {"start": a, "end": a + 1}) for a in ((0, 1) if k == 0 else (1,))]
    dims.insert(len(dims) - 1, em.i64([2 if attr(node, "direction", "forward") == "bidirectional" else 1]))
    dims.append(em.i64([int(attr(node, "hidden_size"))]))  # type: ignore[arg-type]
    zero = oir.tensor(np.zeros(1, value_dtype(node).numpy()))  # type: ignore[union-attr]
    return branch.op1("ConstantOfShape", [branch.op1("Concat", dims, {"axis": 0})], {"value": zero})


def _empty_scan(em: Emitter, branch: Subgraph, node: oir.Node, old: oir.Value) -> oir.Value:
    k = old.index()
    if k < carried_count(node):  # a state: its initial value
        return branch.op1("Identity", [node.inputs[k]])
    body = node.attributes["body"].as_graph()
    state = _state_of(node, k)
    if state is not None:  # empty on the stacking axis, the state's run-time shape on the others
        j, dtype, axis = state
        initial = node.inputs[j]
        dims = [branch.op1("Shape", [initial], {"end": axis}), em.i64([0]), branch.op1("Shape", [initial], {"start": axis})]
        zero = oir.tensor(np.zeros(1, dtype.numpy()))
        return branch.op1("ConstantOfShape", [branch.op1("Concat", dims, {"axis": 0})], {"value": zero})
    row = body.outputs[k]
    assert row.shape is not None  # (_may_be_empty)
    axis = dict(stacked_outputs(node, body))[k] % (len(row.shape) + 1)
    outer = list(old.shape) if old.shape is not None and len(old.shape) == len(row.shape) + 1 else None
    if outer is not None:
        del outer[axis]
    dims = [d if isinstance(d, int) else o if outer is not None and isinstance(o := outer[i], int) else 0
            for i, d in enumerate(row.shape)]
    dims.insert(axis, 0)
    zeros = np.zeros(dims, row.dtype.numpy())  # type: ignore[union-attr]
    return branch.op1("Identity", [em.const(zeros, "empty")])


def _guard(node: oir.Node, root: oir.Graph, names: MutableSet[str], condition: Callable[[Emitter, oir.Node], oir.Value],
           empty: Callable[[Emitter, Subgraph, oir.Node, oir.Value], oir.Value]) -> dict[oir.Value, oir.Value]:
    em = Emitter(node, root, names)
    outputs = [v for v in node.outputs if v.uses() or v.is_graph_output()]
    then_b = Subgraph(em)
    same = then_b.add(oir.Node("", node.op_type, list(node.inputs), list(node.attributes.values()),
                              num_outputs=len(node.outputs), name=em.fresh(node.op_type)))
    else_b = Subgraph(em)
    nothing = [empty(em, else_b, node, old) for old in outputs]
    branches = {"then_branch": then_b.build([same.outputs[old.index()] for old in outputs], hint="nonempty"),
                "else_branch": else_b.build(nothing, hint="empty")}
    results = em.op("If", [condition(em, node)], branches, outputs=len(outputs))
    owner = node.graph
    assert owner is not None
    em.commit()
    replace_node(node, list(zip(outputs, results)), "unguarded")
    own_weight_nodes(branches["then_branch"], owner)
    own_weights(branches["then_branch"])
    return dict(zip(outputs, results))

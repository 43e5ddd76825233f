"""LSTM and GRU nodes over tensors that may be empty run behind an If.

onnxruntime's CPU kernels end the process (std::terminate, onnxruntime 1.32) on some empty inputs: its GRU on a
sequence without time steps or a batch of no rows, its LSTM on a batch of no rows (its RNN kernel, and the LSTM
without time steps, return empty outputs). OpenVINO runs such models (a Keras GRU on `Input((None, F))` fed a
sequence of length 0, an empty batch). So an LSTM/GRU whose dims in question are not known positive sizes becomes
If(the input is not empty) the node, else what it returns: Y of its (empty) shape [steps, directions, batch,
hidden], Y_h and Y_c the initial states (zeros without one), which is also what the loop it came from returns after
no iteration (an LSTM, which the guard is for on a run-time batch, then also keeps its initial states over no step,
where onnxruntime's kernel returns zeros).

This is not an optimisation: the API applies it to every model it returns, passes on or off. The node's weights
become the branch's own initializers when nothing else reads them (onnxruntime prepacks those; fuse_rnn_util's
own_weights).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from ir2onnx.passes.fuse_rnn_util import (
    Emitter,
    Subgraph,
    all_names,
    attr,
    input_at,
    own_weights,
    replace_node,
    shape_of,
    value_dtype,
)
from ir2onnx.passes.loop_utils import is_default_domain
from ir2onnx.passes.static_shapes import infer_shapes

# the axes of X (layout 0: [steps, batch, input]) that must not be empty, per op
CRASHES_WHEN_EMPTY = {"GRU": (0, 1), "LSTM": (1,)}


class GuardEmptyRecurrentPass(ir.passes.InPlacePass):
    def call(self, model: ir.Model) -> ir.passes.PassResult:
        def candidates() -> list[tuple[ir.Node, list[int]]]:
            return [(n, axes) for n in ir.traversal.RecursiveGraphIterator(model.graph)
                    if n.op_type in CRASHES_WHEN_EMPTY and is_default_domain(n) and (axes := _may_be_empty(n))]

        guarded = candidates()
        if guarded:  # shapes through the nodes the passes made (a fused node's output read by the next one)
            infer_shapes(model)
            guarded = candidates()
        names = all_names(model.graph)
        for node, axes in guarded:
            _guard(node, axes, model.graph, names)
        return ir.passes.PassResult(model, modified=bool(guarded))


def _may_be_empty(node: ir.Node) -> list[int]:
    """The axes of the node's input named in CRASHES_WHEN_EMPTY whose size is not known to be positive."""
    x = node.inputs[0]
    if x is None or attr(node, "layout", 0) != 0 or value_dtype(node) is None:
        return []
    axes = CRASHES_WHEN_EMPTY[node.op_type]
    known = [s for s in (shape_of(x), x.shape) if s is not None and len(s) == 3]  # derived, declared (inferred)
    return [a for a in axes if not any(isinstance(s[a], int) and s[a] > 0 for s in known)]


def _guard(node: ir.Node, axes: list[int], root: ir.Graph, names: set[str]) -> None:
    x = node.inputs[0]
    dtype = value_dtype(node)
    assert x is not None and dtype is not None
    em = Emitter(node, root, names)
    outputs = [v for v in node.outputs if v.uses() or v.is_graph_output()]
    then_b = Subgraph(em)
    same = then_b.add(ir.Node("", node.op_type, list(node.inputs), list(node.attributes.values()),
                              num_outputs=len(node.outputs), name=em.fresh(node.op_type)))
    else_b = Subgraph(em)
    empty = []
    for old in outputs:
        k = old.index()
        initial = input_at(node, 5 if k == 1 else 6) if k else None
        if initial is not None:  # Y_h, Y_c: the initial state
            empty.append(else_b.op1("Identity", [initial]))
            continue
        # Y: [steps, directions, batch, hidden]; states: [directions, batch, hidden]
        d = 2 if attr(node, "direction", "forward") == "bidirectional" else 1
        dims = [else_b.op1("Shape", [x], {"start": a, "end": a + 1}) for a in ((0, 1) if k == 0 else (1,))]
        dims.insert(len(dims) - 1, em.i64([d]))
        dims.append(em.i64([int(attr(node, "hidden_size"))]))  # type: ignore[arg-type]
        value = ir.tensor(np.zeros(1, dtype.numpy()))
        empty.append(else_b.op1("ConstantOfShape", [else_b.op1("Concat", dims, {"axis": 0})], {"value": value}))
    cond = em.op1("Greater", [em.op1("Size", [x]), em.const(np.array(0, np.int64), "zero")])  # no axis empty
    branches = {"then_branch": then_b.build([same.outputs[old.index()] for old in outputs], hint="nonempty"),
                "else_branch": else_b.build(empty, hint="empty")}
    results = em.op("If", [cond], branches, outputs=len(outputs))
    em.commit()
    replace_node(node, list(zip(outputs, results)), "unguarded")
    own_weights(branches["then_branch"])

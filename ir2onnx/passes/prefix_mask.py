"""Keras masking over a loop (Embedding(mask_zero=True), Masking): fused where each row's mask is a prefix.

OpenVINO's TensorFlow frontend writes a masked Keras LSTM/GRU as a Loop whose body keeps its states where the step's
mask is false: Where(mask[t], new, previous) for the hidden state, the cell state and the output carried for the
layer's last output. No ONNX recurrent node computes that for every mask (a masked step in the middle of a row keeps
the state, then the row goes on). Where every row's mask is true up to some length and false after it (sequences
padded at the end), it is what an LSTM/GRU with sequence_lens computes, the lengths being the mask's row sums: the
body then reads as TensorFlow 1's dynamic_rnn(sequence_length) form, Where(t >= lens, previous, new), which the
recurrent fusion takes. So the loop becomes an If on "every row's mask is a prefix" (and there is a step): the fused
node in its then-branch, the loop itself in its else-branch (a mask with holes, or padding at the front, runs the loop
as before).

Only when the rewritten copy of the loop fuses completely; otherwise the loop stays as it was. Measured (Keras 3
Embedding(1000, 128, mask_zero=True) + LSTM(256) over 100 steps, rows of 40-100 tokens, onnxruntime against
OpenVINO): see README. `--check` with its default inputs (integers in [0, 3] and so masks with holes) runs the
else-branch; the tests run both.
"""

from __future__ import annotations

import logging

import onnx_ir as ir
from onnx_ir._cloner import Cloner

from ir2onnx.passes.fuse_rnn import fuse_loop
from ir2onnx.passes.fuse_rnn_util import Emitter, NoMatch, all_names, fresh_name, producer, shape_of
from ir2onnx.passes.loop_utils import LOOP_OPS, is_default_domain

logger = logging.getLogger(__name__)

_INT64_MAX = 2**63 - 1
_KEPT = "prefix_mask.kept"  # a loop already given its fused alternative (in-memory only)


class PrefixMaskPass(ir.passes.InPlacePass):
    def call(self, model: ir.Model) -> ir.passes.PassResult:
        names = all_names(model.graph)
        modified = False
        for node in list(ir.traversal.RecursiveGraphIterator(model.graph)):
            if node.op_type == "Loop" and is_default_domain(node) and node.graph is not None \
                    and not node.meta.get(_KEPT):
                try:
                    _rewrite(node, model.graph, names)
                    modified = True
                except NoMatch as e:
                    logger.debug("masked loop %s stays: %s", node.name, e)
        return ir.passes.PassResult(model, modified=modified)


def _step_mask(body: ir.Graph) -> tuple[ir.Value, ir.Value, list[ir.Node]]:
    """(the outer mask sequence M, the step index t, the Where nodes) when the body's Wheres select by M[t] between a
    new value and a carried one (Where(M[t], new, previous)), and M[t] is read by nothing else."""
    for n in body:
        if n.op_type != "Where" or n.inputs[0] is None:
            continue
        m = n.inputs[0]
        read = producer(m, "Gather")
        if read is None or read.inputs[0] is None or read.inputs[0].graph is body or read.inputs[1] is None \
                or int(read.attributes["axis"].value if "axis" in read.attributes else 0) != 0:
            continue
        users = [u for u, _ in m.uses()]
        if any(u.op_type != "Where" or u.inputs[0] is not m or u.inputs[2] not in body.inputs[2:] for u in users) \
                or any(i != 0 for _, i in m.uses()):
            raise NoMatch("the step's mask is read otherwise than to keep carried values")
        return read.inputs[0], read.inputs[1], users
    raise NoMatch("no step mask")


def _rewrite(node: ir.Node, root: ir.Graph, names: set[str]) -> None:
    before = set(root.initializers)
    try:
        _rewrite_or_raise(node, root, names)
    except NoMatch:
        for name in set(root.initializers) - before:  # constants made for the copy that was given up
            if not root.initializers[name].uses():
                del root.initializers[name]
        raise


def _rewrite_or_raise(node: ir.Node, root: ir.Graph, names: set[str]) -> None:
    mask_seq, _, _ = _step_mask(node.attributes["body"].value)
    dims = shape_of(mask_seq)
    if dims is None or len(dims) not in (2, 3) or (len(dims) == 3 and dims[2] != 1):
        raise NoMatch("the mask is not [steps, batch(, 1)]")
    em = Emitter(node, root, names)
    rows = em.op1("Cast", [mask_seq], {"to": ir.DataType.INT64})
    if len(dims) == 3:
        rows = em.squeeze(rows, [2])  # [T, B]
    lens = em.op1("ReduceSum", [rows, em.i64([0])], {"keepdims": 0})  # [B]
    later = em.op1("Slice", [rows, em.i64([1]), em.i64([_INT64_MAX]), em.i64([0])])
    earlier = em.op1("Slice", [rows, em.i64([0]), em.i64([-1]), em.i64([0])])
    rises = em.op1("ReduceSum", [em.op1("Cast", [em.op1("Greater", [later, earlier])], {"to": ir.DataType.INT64})],
                   {"keepdims": 0})
    steps = em.op1("Shape", [rows], {"start": 0, "end": 1})  # no step: the loop's own results (initial buffers)
    prefix = em.op1("And", [em.op1("Equal", [rises, em.i64([0])]), em.op1("Greater", [steps, em.i64([0])])])

    copy = Cloner(attr_map={}, value_map={}, metadata_props={}, allow_outer_scope_values=True).clone_node(node)
    body = copy.attributes["body"].value
    _, step, wheres = _step_mask(body)
    step_type = step.type.dtype if isinstance(step.type, ir.TensorType) else ir.DataType.INT64
    lens_t = em.op1("Cast", [lens], {"to": step_type})
    lens_t.type, lens_t.shape = ir.TensorType(step_type), ir.Shape([None])  # [batch]: what the fusion checks
    past = ir.Node("", "GreaterOrEqual", [step, lens_t])
    masked = ir.Node("", "Unsqueeze", [past.outputs[0], em.i64([1])])  # [B, 1]: true from the row's length on
    for n in (past, masked):
        n.name = fresh_name(names, f"{em.prefix}/prefix/{n.op_type}")
        n.outputs[0].name = fresh_name(names, f"{n.name}_out")
    body.insert_before(wheres[0], [past, masked])
    read = wheres[0].inputs[0].producer()  # type: ignore[union-attr]
    for w in wheres:
        new, previous = w.inputs[1], w.inputs[2]
        w.replace_input_with(0, masked.outputs[0])
        w.replace_input_with(1, previous)
        w.replace_input_with(2, new)
    assert read is not None and not read.outputs[0].uses()
    body.remove(read, safe=True)  # the mask's own step read: the fusion allows one read of a sequence per step
    used = [o for o in node.outputs if o.uses() or o.is_graph_output()]
    then_graph = ir.Graph([], [copy.outputs[o.index()] for o in used], nodes=[copy],  # type: ignore[index]
                          name=fresh_name(names, f"{em.prefix}/prefix_masks"))
    fuse_loop(copy, root, names)  # NoMatch: the loop stays, nothing of the copy is kept
    if any(n.op_type in LOOP_OPS for n in ir.traversal.RecursiveGraphIterator(then_graph)):
        raise NoMatch("the rewritten loop was fused only in part")
    results = em.op("If", [prefix], {"then_branch": then_graph,
                                     "else_branch": ir.Graph([], [], nodes=[], name=fresh_name(names, f"{em.prefix}/any_masks"))},
                    outputs=len(used))
    em.commit()
    if_node = results[0].producer()
    assert if_node is not None
    for old, new in zip(used, results):
        new.type, new.shape = old.type, old.shape
        if old.is_graph_output():
            name = old.name
            old.name = f"{name}/masked"
            new.name = name
        old.replace_all_uses_with(new, replace_graph_outputs=True)
    graph = node.graph
    assert graph is not None
    graph.remove(node)
    node.meta[_KEPT] = True
    else_graph: ir.Graph = if_node.attributes["else_branch"].value
    else_graph.append(node)
    else_graph.outputs.extend(used)

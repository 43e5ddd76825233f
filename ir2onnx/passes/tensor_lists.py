"""Loop-carried buffers written one row per iteration become Loop scan outputs.

TensorFlow's TensorArray / TensorList, as OpenVINO's frontend writes it, is a carried [n, ...] tensor that the body
overwrites at row k in iteration k (ScatterND, after an Expand that gives the first iteration's placeholder its
full shape). onnxruntime copies the whole buffer at every ScatterND and Expand: 2 x n rows per iteration, O(n^2) for
the loop (a Keras LSTM with masking, T=100, batch 16: the loop's largest cost). When the loop provably runs exactly
n iterations (trip count and `counter < limit` conditions, fuse_rnn_loops.loop_iterations), every row is written
once, in order, and the final buffer is the rows stacked: the Loop returns the row as a scan output instead, and the
buffer, with the body's work on it, goes.

Only buffers of a static length n >= 1 whose body value nothing else reads (the ops computing the write are read by
nothing but the write) are rewritten; a one-row buffer that keeps the last row stays.
"""

from __future__ import annotations

import onnx_ir as ir

from ir2onnx.passes.fuse_rnn_loops import State, buffer_row, loop_iterations
from ir2onnx.passes.fuse_rnn_util import NoMatch, all_names, distinct_output, fresh_name, replace_node
from ir2onnx.passes.loop_utils import inherit_meta, is_default_domain, loops_innermost_first


class TensorListOutputsPass(ir.passes.InPlacePass):
    def call(self, model: ir.Model) -> ir.passes.PassResult:
        names = all_names(model.graph)
        modified = False
        for loop, body, outer in list(loops_innermost_first(model.graph)):
            if loop.op_type == "Loop" and is_default_domain(loop):
                modified |= _rewrite(loop, body, outer, names)
        return ir.passes.PassResult(model, modified=modified)


def _rewrite(loop: ir.Node, body: ir.Graph, outer: ir.Graph, names: set[str]) -> bool:
    try:
        it = loop_iterations(loop)
    except NoMatch:
        return False
    bound = it.bound
    if bound is None or bound.k or bound.dim or bound.const < 1 or not all(g.dim == g.k == 0 and g.const > 0
                                                                          for g in it.guards):
        return False
    rows: dict[int, ir.Value] = {}  # carried value index -> the row its buffer gets at each iteration
    for i, s in enumerate(it.states):
        found = buffer_row(s, it.index, bound)
        if found is not None and not found[1] and _only_written(s, found[0], body):
            rows[i] = found[0]
    if not rows:
        return False
    keep = [i for i in range(len(it.states)) if i not in rows]
    n_carried = len(it.states)
    hint = loop.name or "Loop"
    new_body_outputs = [body.outputs[0], *(body.outputs[1 + i] for i in keep), *body.outputs[1 + n_carried:]]
    new_body_outputs += [distinct_output(rows[i], body, names, f"{hint}/row", loop) for i in rows]
    kept_in = [body.inputs[0], body.inputs[1], *(body.inputs[2 + i] for i in keep)]
    body.outputs.clear()
    body.outputs.extend(new_body_outputs)
    body.inputs.clear()
    body.inputs.extend(kept_in)
    old_outs = [*(loop.outputs[i] for i in keep), *loop.outputs[n_carried:], *(loop.outputs[i] for i in rows)]
    new_outs = [ir.Value(name=fresh_name(names, f"{hint}/{v.name or 'out'}")) for v in old_outs]
    node = ir.Node("", "Loop", [loop.inputs[0], loop.inputs[1], *(loop.inputs[2 + i] for i in keep)],
                   [ir.AttrGraph("body", body)], outputs=new_outs, name=fresh_name(names, hint), version=loop.version)
    loop.attributes.pop("body")
    outer.insert_before(loop, inherit_meta(node, loop))
    replace_node(loop, list(zip(old_outs, new_outs)), "rows")
    return True


def _only_written(s: State, row: ir.Value, body: ir.Graph) -> bool:
    """Whether the buffer's body value feeds nothing but its own write (ops computing the written tensor or its shape,
    read by nothing else), and the row is not computed from it."""
    reached: set[ir.Node] = set()
    work = [s.body_in]
    while work:
        v = work.pop()
        if v.is_graph_output() and v is not s.body_out:
            return False
        for use in v.uses():
            node = use.node
            if node.graph is not body:
                return False  # read inside a nested body
            if node not in reached:
                reached.add(node)
                work.extend(node.outputs)
    write = s.body_out.producer()
    if write is None or write not in reached or s.body_out.uses():
        return False
    produced = {o for n in reached for o in n.outputs}
    return row not in produced and all(
        (u.node in reached) for n in reached if n is not write for o in n.outputs for u in o.uses())

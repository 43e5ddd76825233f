"""Loop-carried buffers written one row per iteration become Loop scan outputs.

TensorFlow's TensorArray / TensorList, as OpenVINO's frontend writes it, is a carried [n, ...] tensor that the body
overwrites at row k in iteration k (ScatterND, after an Expand that gives the first iteration's placeholder its
full shape). onnxruntime copies the whole buffer at every ScatterND and Expand: 2 x n rows per iteration, O(n^2) for
the loop (a Keras LSTM with masking, T=100, batch 16: the loop's largest cost). When the loop provably runs exactly
n iterations (trip count and `counter < limit` conditions, fuse_rnn_loops.loop_iterations), every row is written
once, in order, and the final buffer is the rows stacked: the Loop returns the row as a scan output instead, and the
buffer, with the body's work on it, goes.

Only buffers whose body value nothing else reads (the ops computing the write are read by nothing but the write) are
rewritten; a one-row buffer that keeps the last row stays. A loop that may run no iteration (over a run-time length,
or started by a computed condition) returns the initial buffer then, of another shape than an empty stack:
If(rows stacked) stacked else initial.
"""

from __future__ import annotations

from collections.abc import MutableSet

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import NoMatch, explicit_perm, is_default_domain, loops_innermost_first, producer
from ir2onnx.passes.analysis.values import const_ints
from ir2onnx.passes.recurrent.buffers import buffer_row
from ir2onnx.passes.recurrent.loops import loop_iterations
from ir2onnx.passes.recurrent.views import State
from ir2onnx.passes.rewrite import all_names, distinct_output, fresh_name, inherit_meta, record, replace_node


class TensorListOutputsPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        names = all_names(model.graph)
        modified = False
        for loop, body, outer in list(loops_innermost_first(model.graph)):
            if loop.op_type == "Loop" and is_default_domain(loop):
                modified |= _rewrite(loop, body, outer, names)
        return oir.passes.PassResult(model, modified=modified)


def _rewrite(loop: oir.Node, body: oir.Graph, outer: oir.Graph, names: MutableSet[str]) -> bool:
    try:
        it = loop_iterations(loop)
    except NoMatch:
        return False
    bound = it.bound
    if bound is None or bound.k or (not bound.dim and bound.const < 1) or it.capped_by is not None:
        return False
    rows: dict[int, oir.Value] = {}  # carried value index -> the row its buffer gets at each iteration
    for i, s in enumerate(it.states):
        _unsqueeze_last(s.body_out, body, names)
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
    new_outs = [oir.Value(name=fresh_name(names, f"{hint}/{v.name or 'out'}")) for v in old_outs]
    node = oir.Node("", "Loop", [loop.inputs[0], loop.inputs[1], *(loop.inputs[2 + i] for i in keep)],
                   [oir.AttrGraph("body", body)], outputs=new_outs, name=fresh_name(names, hint), version=loop.version)
    loop.attributes.pop("body")
    outer.insert_before(loop, inherit_meta(node, loop))
    # a run-time length may be 0, a computed initial condition may stop the loop before its first iteration: the
    # buffer is then the initial one, stacking nothing
    if bound.dim or not all(g.dim == g.k == 0 and g.const > 0 for g in it.guards):
        n_out = len(keep) + len(loop.outputs) - n_carried
        for j, i in enumerate(rows):
            new_outs[n_out + j] = _or_initial(new_outs[n_out + j], it.states[i].init, node, outer, names)
    replace_node(loop, list(zip(old_outs, new_outs)), "rows")
    return True


def _or_initial(stacked: oir.Value, init: oir.Value, loop: oir.Node, outer: oir.Graph, names: MutableSet[str]) -> oir.Value:
    """If(stacked has rows) stacked else init: the buffer's value after a loop that may run no iteration (its shape
    then is the initial one's, which a Where would broadcast)."""
    hint = f"{loop.name}/rows"

    def value(label: str) -> oir.Value:
        return oir.Value(name=fresh_name(names, f"{hint}/{label}"))

    def branch(label: str, source: oir.Value) -> oir.Graph:
        out = value(label)
        return oir.Graph([], [out], nodes=[oir.Node("", "Identity", [source], outputs=[out],
                                                  name=fresh_name(names, f"{hint}/{label}_node"))],
                        name=fresh_name(names, f"{hint}/{label}_branch"))

    rows, zero, ran, result = value("count"), value("zero"), value("ran"), value("buffer")
    nodes = [
        oir.Node("", "Shape", [stacked], [oir.AttrInt64("start", 0), oir.AttrInt64("end", 1)], outputs=[rows],
                name=fresh_name(names, f"{hint}/count_node")),
        oir.Node("", "Constant", [], [oir.AttrTensor("value", oir.tensor([0], oir.DataType.INT64))], outputs=[zero],
                name=fresh_name(names, f"{hint}/zero_node")),
        oir.Node("", "Greater", [rows, zero], outputs=[ran], name=fresh_name(names, f"{hint}/ran_node")),
        oir.Node("", "If", [ran], [oir.AttrGraph("then_branch", branch("stacked", stacked)),
                                  oir.AttrGraph("else_branch", branch("initial", init))],
                outputs=[result], name=fresh_name(names, f"{hint}/if")),
    ]
    for n in nodes:
        inherit_meta(n, loop)
    outer.insert_after(loop, nodes)
    return result


def _unsqueeze_last(written: oir.Value, body: oir.Graph, names: MutableSet[str]) -> None:
    """A ScatterND writing Transpose(Unsqueeze(r, [0]), perm) with perm[0] = 0 (OpenVINO moves layout Transposes past
    the Unsqueeze: a Keras ConvLSTM2D's NCHW row to its NHWC buffer; on run-time shapes behind the Reshape and Slice
    that clip the write) writes Unsqueeze(Transpose(r, perm[1:] - 1), [0]): the same tensor, with the row itself a
    body value. Rewritten in place when nothing else reads the two."""
    sc = producer(written, "ScatterND")
    updates = sc.inputs[2] if sc is not None and len(sc.inputs) == 3 else None
    clipped = producer(updates, "Slice")  # on run-time shapes: Slice(Reshape(rows, [-1, row shape]), ...)
    if clipped is not None and producer(clipped.inputs[0], "Reshape") is not None:
        updates = producer(clipped.inputs[0], "Reshape").inputs[0]  # type: ignore[union-attr]
    tr = producer(updates, "Transpose")
    unsq = producer(tr.inputs[0], "Unsqueeze") if tr is not None else None
    perm = explicit_perm(tr) or []
    if unsq is None or perm[:1] != [0] or len(unsq.inputs) != 2 \
            or const_ints(unsq.inputs[1]) != [0] or len(tr.outputs[0].uses()) != 1 \
            or len(unsq.outputs[0].uses()) != 1 or not all(n.graph is body for n in (tr, unsq)):
        return
    row = unsq.inputs[0]
    moved = oir.Value(name=fresh_name(names, f"{tr.name or 'Transpose'}/row"), type=row.type)
    swapped = oir.Node("", "Transpose", [row], [oir.AttrInt64s("perm", [p - 1 for p in perm[1:]])],
                      outputs=[moved], name=fresh_name(names, f"{tr.name or 'Transpose'}/row_node"))
    body.insert_before(unsq, inherit_meta(swapped, tr))
    unsq.replace_input_with(0, moved)
    record(tr.outputs[0], unsq.outputs[0])
    tr.outputs[0].replace_all_uses_with(unsq.outputs[0])
    body.remove(tr, safe=True)


def _only_written(s: State, row: oir.Value, body: oir.Graph) -> bool:
    """Whether the buffer's body value feeds nothing but its own write (ops computing the written tensor or its shape,
    read by nothing else), and the row is not computed from it."""
    reached: set[oir.Node] = set()
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

"""Keras masking over a loop (Embedding(mask_zero=True), Masking): fused where each row's mask is a prefix or, when
only last values are read, a suffix.

OpenVINO's TensorFlow frontend writes a masked Keras LSTM/GRU as a Loop whose body keeps its states where the step's
mask is false: Where(mask[t], new, previous) for the hidden state, the cell state and the output carried for the
layer's last output (or Where(mask[t], new, 0) for a sequence output that is zero at masked steps, as in
Bidirectional). No ONNX recurrent node computes that for every mask (a masked step in the middle of a row keeps
the state, then the row goes on). Where every row's mask is true up to some length and false after it (sequences
padded at the end, or not padded), it is what an LSTM/GRU with sequence_lens computes, the lengths being the mask's
row sums: the body then reads as TensorFlow 1's dynamic_rnn(sequence_length) form, Where(t >= lens, previous, new),
which the recurrent fusion takes (a row's sequence output past its length holds its last value, as Keras does).
Where every row's mask is false up to some step and true after it (padded at the front: Keras' pad_sequences
default) and nothing reads a per-step output, the same node over the rows rolled to start with their first kept
step gives the same final states; a per-step output that is zero at masked steps is that node's output rolled back
(zero past a row's length: at the front once rolled back), which Bidirectional's backward layer needs (it reads the
flipped sequence, so padding at the end comes first). So the loop becomes an If on "prefixes" (and a step to run):
the fused node; else an If on "suffixes" (when it applies): the node over the rolled rows; else the loop itself
(holes).

A masked layer reading another's sequence output (stacked layers, the mask passed on) reads the If's output: the
loop's length, when it is a run-time dim, is recorded on it (full_lengths.DIM_ROOTS) for the next loop's bound.

Only what fuses completely is kept; otherwise the loop stays as it was. The fused nodes' weights are their branch's
own initializers (onnxruntime did not prepack them two If levels down). Measured: see README. `--check` with its
default inputs (integers in [0, 3], so masks with holes) runs the loop; the tests run every branch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, MutableSet

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import LOOP_OPS, NoMatch, all_nodes, attr, is_default_domain, producer
from ir2onnx.passes.analysis.values import const_array, shape_of, view_root
from ir2onnx.passes.recurrent.buffers import buffer_row
from ir2onnx.passes.recurrent.full_lengths import DIM_ROOTS, dim_root
from ir2onnx.passes.recurrent.fuse import all_zeros, fuse_loop
from ir2onnx.passes.recurrent.loops import analyse_loop, loop_iterations
from ir2onnx.passes.rewrite import Emitter, Subgraph, all_names, own_weights, redirect

logger = logging.getLogger(__name__)

_INT64_MAX = 2**63 - 1
_KEPT = "prefix_mask.kept"  # a loop already given its fused alternative (in-memory only)


class PrefixMaskPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        names = all_names(model.graph)
        modified = False
        for node in list(all_nodes(model.graph)):
            if node.op_type == "Loop" and is_default_domain(node) and node.graph is not None \
                    and not node.meta.get(_KEPT):
                try:
                    _rewrite(node, model.graph, names)
                    modified = True
                except NoMatch as e:
                    logger.debug("masked loop %s stays: %s", node.name, e)
        return oir.passes.PassResult(model, modified=modified)


def _step_mask(body: oir.Graph) -> tuple[oir.Value, oir.Value, list[oir.Node]]:
    """(the outer mask sequence M, the step index t, the Where nodes) when the body's Wheres select by M[t] between a
    new value and a carried one (Where(M[t], new, previous)) or zeros (a per-step output zero at masked steps: Keras'
    zero_output_for_mask, as in Bidirectional), and M[t] is read by nothing else."""
    for n in body:
        if n.op_type != "Where" or n.inputs[0] is None:
            continue
        m = n.inputs[0]
        read = producer(m, "Gather")
        if read is None or read.inputs[0] is None or read.inputs[0].graph is body or read.inputs[1] is None \
                or int(read.attributes["axis"].value if "axis" in read.attributes else 0) != 0:
            continue
        users = [u for u, _ in m.uses()]
        if any(u.op_type != "Where" or u.inputs[0] is not m or u.inputs[2] is None
               or (u.inputs[2] not in body.inputs[2:] and not all_zeros(u.inputs[2])) for u in users) \
                or any(i != 0 for _, i in m.uses()):
            raise NoMatch("the step's mask is read otherwise than to keep carried values")
        return read.inputs[0], read.inputs[1], users
    raise NoMatch("no step mask")


def _rewrite(node: oir.Node, root: oir.Graph, names: MutableSet[str]) -> None:
    before = set(root.initializers)
    em = Emitter(node, root, names)
    try:
        _rewrite_or_raise(node, em)
    except NoMatch:
        _unread(em.nodes)  # made, never inserted
        for name in set(root.initializers) - before:  # constants made for the copy that was given up
            if not root.initializers[name].uses():
                del root.initializers[name]
        raise


def _unread(nodes: Iterable[oir.Node]) -> None:
    """Nodes given up stop reading their inputs (their reads would keep those values, initializers included,
    alive: onnxruntime removed such initializers with a warning at every session)."""
    for n in nodes:
        for i in range(len(n.inputs)):
            n.replace_input_with(i, None)


def _rewrite_or_raise(node: oir.Node, em: Emitter) -> None:
    mask_seq, _, _ = _step_mask(node.attributes["body"].value)
    dims = shape_of(mask_seq)
    if dims is None or len(dims) not in (2, 3) or (len(dims) == 3 and dims[2] != 1):
        raise NoMatch("the mask is not [steps, batch(, 1)]")
    rows = em.op1("Cast", [mask_seq], {"to": oir.DataType.INT64})
    if len(dims) == 3:
        rows = em.squeeze(rows, [2])  # [T, B]
    lens = em.op1("ReduceSum", [rows, em.i64([0])], {"keepdims": 0})  # [B]
    later = em.op1("Slice", [rows, em.i64([1]), em.i64([_INT64_MAX]), em.i64([0])])
    earlier = em.op1("Slice", [rows, em.i64([0]), em.i64([-1]), em.i64([0])])
    steps = em.op1("Shape", [rows], {"start": 0, "end": 1})  # no step: the loop's own results (initial buffers)
    some = em.op1("Greater", [steps, em.i64([0])])

    def never(a: oir.Value, b: oir.Value) -> oir.Value:  # a > b nowhere, and a step to run
        count = em.op1("ReduceSum", [em.op1("Cast", [em.op1("Greater", [a, b])], {"to": oir.DataType.INT64})],
                       {"keepdims": 0})
        return em.op1("And", [em.op1("Equal", [count, em.i64([0])]), some])

    used = [o for o in node.outputs if o.uses() or o.is_graph_output()]
    prefix_graph = _fused_branch(node, em, lens, used, False, "prefix_masks")
    loop_graph = oir.Graph([], [], nodes=[], name=em.fresh("any_masks"))
    otherwise = loop_graph
    try:  # padding at the front: the rows shifted to start at step 0, when only last values are read
        suffix_graph = _fused_branch(node, em, lens, used, True, "suffix_masks")
        inner = Subgraph(em)
        shifted = inner.op("If", [never(earlier, later)], {"then_branch": suffix_graph, "else_branch": loop_graph},
                           outputs=len(used))
        for old, new in zip(used, shifted):
            new.type, new.shape = old.type, old.shape
        otherwise = inner.build(shifted, hint="other_masks")
    except NoMatch as e:
        logger.debug("masks padded at the front of %s keep the loop: %s", node.name, e)
    results = em.op("If", [never(later, earlier)], {"then_branch": prefix_graph, "else_branch": otherwise},
                    outputs=len(used))
    em.commit()
    redirect(list(zip(used, results)), "masked")
    _record_lengths(node, used, results)
    graph = node.graph
    assert graph is not None
    graph.remove(node)
    node.meta[_KEPT] = True
    loop_graph.append(node)
    loop_graph.outputs.extend(used)


def _record_lengths(node: oir.Node, used: list[oir.Value], results: Iterable[oir.Value]) -> None:
    """The If's per-step outputs have the loop's length on axis 0: recorded where it is a dim of another value, so
    that a masked layer reading them (its loop bounded by that dim) is seen to run once per step too."""
    try:
        it = loop_iterations(node)
    except NoMatch:
        return
    bound = it.bound
    if bound is None or bound.dim_of is None or (bound.k, bound.const, bound.dim) != (0, 0, 1):
        return
    # scan outputs (one row per iteration run: when the loop may stop early, fewer), then buffers of one row per step
    stacked = set(node.outputs[len(it.states):]) if it.capped_by is None else set()
    stacked |= {s.final for s in it.states if (row := buffer_row(s, it.index, bound)) is not None and not row[1]}
    for old, new in zip(used, results):
        if old in stacked:
            new.meta[DIM_ROOTS] = {0: dim_root(bound.dim_of)}


def _fused_branch(node: oir.Node, em: Emitter, lens: oir.Value, used: list[oir.Value], shifted: bool,
                  hint: str) -> oir.Graph:
    """A graph computing the loop's `used` outputs with one fused node, for masks that are prefixes, or suffixes
    (`shifted`: each row's sequences rolled to start with its first kept step); raises NoMatch when the rewritten
    copy does not fuse completely."""
    copy = _copy(node)
    graph = oir.Graph([], [], nodes=[copy], name=em.fresh(hint))
    try:
        _fuse_copy(copy, graph, em, lens, used, shifted)
    except NoMatch:
        _unread([copy, *all_nodes(copy.attributes["body"].value),
                 *all_nodes(graph)])
        raise
    return graph


def _fuse_copy(copy: oir.Node, graph: oir.Graph, em: Emitter, lens: oir.Value, used: list[oir.Value],
               shifted: bool) -> None:
    """`graph` (holding `copy`) returning the `used` outputs through `copy` rewritten to the sequence_length form and
    fused."""
    body = copy.attributes["body"].value
    _, step, wheres = _step_mask(body)
    step_type = step.type.dtype if isinstance(step.type, oir.TensorType) else oir.DataType.INT64
    lens_t = lens if step_type == oir.DataType.INT64 else em.op1("Cast", [lens], {"to": step_type})
    lens_t.type, lens_t.shape = oir.TensorType(step_type), oir.Shape([None])  # [batch]: what the fusion checks
    sub = Subgraph(em)
    masked = sub.unsqueeze(sub.op1("GreaterOrEqual", [step, lens_t]), [1])  # [B, 1]: true from the row's length on
    body.insert_before(wheres[0], sub.nodes)
    read = wheres[0].inputs[0].producer()  # type: ignore[union-attr]
    for w in wheres:
        new, previous = w.inputs[1], w.inputs[2]
        w.replace_input_with(0, masked)
        w.replace_input_with(1, previous)
        w.replace_input_with(2, new)
    assert read is not None and not read.outputs[0].uses()
    body.remove(read, safe=True)  # the mask's own step read: the fusion allows one read of a sequence per step
    graph.outputs.extend(copy.outputs[o.index()] for o in used)  # type: ignore[index]
    per_step: list[tuple[int, bool]] = []  # (position in graph.outputs, unit axis 1) of per-step outputs, to roll
    # back after the fusion
    if shifted:
        view = analyse_loop(copy)
        # the per-step outputs and their body values (None: stacked otherwise than forward on axis 0)
        rows = {o.outer: o.body_out if o.axis == 0 and not o.reverse else None for o in view.outputs}
        rows |= {b.state.final: b.row for b in view.buffers if not b.last}
        zeroed = {w.outputs[0] for w in wheres if all_zeros(w.inputs[1])}  # (swapped above) zero at masked steps
        for i, out in enumerate(graph.outputs):
            if out in rows:
                if rows[out] is None or view_root(rows[out])[0] not in zeroed:  # type: ignore[arg-type]
                    raise NoMatch("a per-step output is read that is not zero at masked steps (padding at the front)")
                per_step.append((i, _unit_row(rows[out])))  # type: ignore[arg-type]
        _roll_reads(em, graph, copy, body, step, lens)
    fuse_loop(copy, em.root, em.names)  # NoMatch: the loop stays, nothing of the copy is kept
    if per_step:
        _roll_back(em, graph, per_step, lens)
    if lens_t is not lens:
        _skip_round_trip(lens, lens_t)
    if any(n.op_type in LOOP_OPS for n in all_nodes(graph)):
        raise NoMatch("the rewritten loop was fused only in part")
    own_weights(graph)


def _skip_round_trip(lens: oir.Value, lens_t: oir.Value) -> None:
    """The fusion's Cast(lens_t, int64) of lens_t = Cast(lens, int32) read as lens itself: row sums fit any integer
    type. (onnxruntime removes the round trip on its own but warns, at every session, that it cannot rename the
    value inside the If branches.)"""
    for use in list(lens_t.uses()):
        cast = use.node
        if cast.op_type == "Cast" and attr(cast, "to") == oir.DataType.INT64 and \
                not cast.outputs[0].is_graph_output():
            cast.outputs[0].replace_all_uses_with(lens)
            assert cast.graph is not None
            cast.graph.remove(cast, safe=True)


def _copy(loop: oir.Node) -> oir.Node:
    """A new Loop node over the same inputs with a copy of the body (outer values still read from outside)."""
    attrs = [oir.AttrGraph("body", a.value.clone(allow_outer_scope_values=True)) if a.name == "body" else a
             for a in loop.attributes.values()]
    copy = oir.Node(loop.domain, loop.op_type, list(loop.inputs), attrs, num_outputs=len(loop.outputs),
                   name=loop.name)
    for old, new in zip(loop.outputs, copy.outputs):
        new.name, new.type, new.shape = f"{old.name}/copy", old.type, old.shape
    return copy


def _roll_reads(em: Emitter, graph: oir.Graph, loop: oir.Node, body: oir.Graph, step: oir.Value, lens: oir.Value) -> None:
    """The body's per-step reads Gather(seq, step) of outer [T, B, ...] sequences read, in `graph` before the loop,
    seq rolled per row by its padding: row b's step t is seq[(t + T - lens[b]) mod T, b] (its kept steps first)."""
    reads = [n for n in body if n.op_type == "Gather" and n.inputs[1] is step and n.inputs[0] is not None
             and n.inputs[0].graph is not body and int(n.attributes["axis"].value if "axis" in n.attributes else 0) == 0]
    if not reads:
        raise NoMatch("no per-step read to shift")
    sub = Subgraph(em)
    for n in reads:
        seq = n.inputs[0]
        if len(shape_of(seq) or ()) < 2:
            raise NoMatch("a per-step read of unknown rank")
        n.replace_input_with(0, _rolled(sub, seq, lens, back=False))
    graph.insert_before(loop, sub.nodes)


def _unit_row(row: oir.Value) -> bool:
    """Whether a per-step row is [1, B, ...] (Keras 2's Unsqueeze of the masked output: stacked to [T, 1, B, ...])
    rather than [B, ...]; NoMatch for other glue between the row and the masked value."""
    _, chain = view_root(row)
    chain = [n for n in chain if n.op_type != "Identity"]
    if not chain:
        return False
    axes = const_array(chain[0].inputs[1]) if len(chain) == 1 and chain[0].op_type == "Unsqueeze" else None
    if axes is None or [int(a) for a in axes.reshape(-1)] != [0]:
        raise NoMatch("a per-step output reshaped otherwise than on a new first axis (padding at the front)")
    return True


def _roll_back(em: Emitter, graph: oir.Graph, positions: list[tuple[int, bool]], lens: oir.Value) -> None:
    """The fused node's per-step outputs over the rolled rows, rolled back: row b's step t is out[(t + lens[b]) mod T,
    b], zero where t < T - lens[b] (the node's output past a row's length), as the loop's output is at masked steps."""
    sub = Subgraph(em)
    for i, unit in positions:
        out = graph.outputs[i]
        if unit:
            graph.outputs[i] = sub.unsqueeze(_rolled(sub, sub.squeeze(out, [1]), lens, back=True), [1])
        else:
            graph.outputs[i] = _rolled(sub, out, lens, back=True)
    graph.extend(sub.nodes)


def _rolled(sub: Subgraph, seq: oir.Value, lens: oir.Value, back: bool) -> oir.Value:
    """seq [T, B, ...] with each row's steps rotated: by T - lens[b] to put its kept steps first, or `back`."""
    total = sub.op1("Shape", [seq], {"start": 0, "end": 1})  # [1]
    t = sub.unsqueeze(sub.arange(sub.squeeze(total, [0])), [1])  # [T, 1]
    shift = lens if back else sub.op1("Sub", [total, lens])  # [B]
    index = sub.op1("Mod", [sub.op1("Add", [t, sub.unsqueeze(shift, [0])]), total])  # [T, B]
    batch = sub.squeeze(sub.op1("Shape", [seq], {"start": 1, "end": 2}), [0])
    flat = sub.op1("Add", [sub.op1("Mul", [index, batch]), sub.arange(batch)])  # rows of seq as [T * B, ...]
    rows = sub.op1("Gather", [sub.op1("Flatten", [seq], {"axis": 2}), flat], {"axis": 0})  # whole rows
    rolled = sub.op1("Reshape", [rows, sub.op1("Shape", [seq])])
    rolled.type, rolled.shape = seq.type, seq.shape
    return rolled

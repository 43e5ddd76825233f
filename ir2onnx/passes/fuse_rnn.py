"""Recurrent fusion: a Scan or Loop whose body is one recurrent cell step becomes one ONNX LSTM/GRU/RNN node.

Where it lives, and why: an ONNX-level pass over the translated model, not a recognition step on the IR. By the time
it runs, the translation has already reduced every IR cell form (LSTMCell-1 and -4, the legacy five-input LSTMCell
whose W and R are concatenated, GRUCell with or without linear_before_reset, RNNCell) to a one-step ONNX node with
ONNX's gate order and bias layout, and every port map (TensorIterator start/end/stride/axis, Loop slicing, reverse
strides) to Scan/Loop attributes and per-iteration Slice/Gather reads. The pass therefore matches one body shape per
cell instead of one per IR form and port-map variant, reuses the gate conversions of the cell converters, and also
fuses loops in ONNX models that did not come from IR. The emitted nodes are the same either way, so there is nothing
to gain at run time from matching earlier. onnxruntime's CPU LSTM/GRU/RNN kernels refuse layout=1 (batch-major), so
the fused node is time-major (layout 0) with Transposes around it where the sequence is batch-major; those are
cheap next to the recurrence (see scripts/bench_recurrent.py).

Rule shape (as in onnxscript's rewriter): pattern = `analyse_scan`/`analyse_loop` (what the loop iterates over) and
`fuse_rnn_cells` (which cell one step is); check = every loop output must be explained as the cell's new state, a
value stacked per step, a buffer written row by row, a counter or a pass-through, each reached only through
reshape-only glue (Reshape/Squeeze/Unsqueeze/Identity); any failure raises `NoMatch` with a readable reason, logged at
debug level, and the loop stays as it is; rewrite = `_emit`. Because every output is rebuilt from the fused node's
Y / Y_h / Y_c by the same glue, fusion does not change what the model computes (up to float summation order).
"""

from __future__ import annotations

import logging
from collections.abc import MutableSet

import numpy as np
import onnx_ir as ir
from onnx_ir.passes.common.unused_removal import RemoveUnusedNodesPass

from ir2onnx.passes.fuse_rnn_cells import Cell, spelled_gru, spelled_lstm, spelled_rnn, step_node_cell
from ir2onnx.passes.fuse_rnn_loops import LoopView, State, analyse_loop, analyse_scan, row_lengths
from ir2onnx.passes.fuse_rnn_util import (
    Emitter,
    NoMatch,
    Subgraph,
    all_names,
    distinct_output,
    filled_with,
    fresh_name,
    producer,
    rank_of,
    shape_of,
    through,
    view_root,
)
from ir2onnx.passes.loop_utils import all_nodes, inherit_meta, keep_read_scan_inputs, scan_ints
from ir2onnx.passes.static_shapes import infer_shapes

logger = logging.getLogger(__name__)

_LOOPS = ("Scan", "Loop")
_MAX_ROUNDS = 64  # each round fuses a loop or takes a cell out of one: a bound on stacked cells, not a tuning knob


class FuseRecurrentLoopsPass(ir.passes.InPlacePass):
    """Replace Scan/Loop nodes that run one recurrent cell over a sequence with one ONNX LSTM/GRU/RNN node."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        names = all_names(model.graph)
        fused = last = _process(model.graph, model.graph, names)
        rounds = 1
        while last and rounds < _MAX_ROUNDS and any(n.op_type in _LOOPS
                                                   for n in all_nodes(model.graph)):
            # a loop reading a fused one's output sees that output's shape (which its proofs need) only once
            # shapes are inferred through the new node: infer, try the loops left again
            RemoveUnusedNodesPass()(model)  # a peeled cell's nodes, and its step read, leave the body
            infer_shapes(model)
            last = _process(model.graph, model.graph, names)
            fused += last
            rounds += 1
        if fused:  # weights that only the replaced bodies read
            keep = set(model.graph.inputs) | set(model.graph.outputs)
            for name, v in list(model.graph.initializers.items()):
                if not v.uses() and v not in keep:
                    del model.graph.initializers[name]
        return ir.passes.PassResult(model, modified=fused > 0)


def _process(graph: ir.Graph, root: ir.Graph, names: MutableSet[str]) -> int:
    """Fuse inner loops first, then the loops of `graph`; returns the number of loops fused."""
    fused = 0
    for node in list(graph):
        for a in node.attributes.values():
            if a.type == ir.AttributeType.GRAPH:
                fused += _process(a.value, root, names)
            elif a.type == ir.AttributeType.GRAPHS:
                for g in a.value:
                    fused += _process(g, root, names)
        if node.op_type in _LOOPS and node.domain in ("", "ai.onnx"):
            try:
                fuse_loop(node, root, names)
                fused += 1
            except NoMatch as e:
                logger.debug("%s '%s' stays a loop: %s", node.op_type, node.name, e)
    return fused


def match_cell(view: LoopView, mask: _Mask | None = None) -> Cell:
    """The one recurrent cell that a step of the loop computes (NoMatch when there is none); `mask`: states kept past
    each row's length are read through it."""
    body = view.node.attributes["body"].value
    if any(n.op_type in ("LSTM", "GRU", "RNN") for n in body):
        return step_node_cell(body)
    reasons: list[str] = []
    roots = [(s, view_root(mask.unmask(s.body_out, s.body_in)[0] if mask else s.body_out)[0]) for s in view.states]
    for hs, h_new in roots:
        for cs, c_new in roots:
            if cs is not hs:
                try:
                    return spelled_lstm(h_new, c_new, hs.body_in, cs.body_in, view.x)
                except NoMatch as e:
                    reasons.append(f"LSTM: {e}")
        for fn in (spelled_gru, spelled_rnn):
            try:
                return fn(h_new, hs.body_in, view.x)
            except NoMatch as e:
                reasons.append(f"{fn.__name__[8:].upper()}: {e}")
    raise NoMatch("; ".join(dict.fromkeys(reasons)) or "no carried state")


def _copied(view: LoopView, s: State, root: ir.Value) -> State | None:
    """The other state whose new value `s` carries, reshaped (`root`: the root of s's new value, the other's new
    value itself), when nothing in the body reads s's previous value (Keras 2's masked last output, a copy of its
    masked output state): s's final value is that state's, reshaped, after any iteration."""
    if s.body_in.uses():
        return None
    return next((o for o in view.states if o is not s and o.body_out is root), None)


def _kept_state(view: LoopView, row: ir.Value) -> State | None:
    """The carried state whose new value `row` is (Keras' masked output, kept on masked steps), if any."""
    root, _ = view_root(row)
    return next((s for s in view.states if view_root(s.body_out)[0] is root), None)


def _same_start(s: State, other: State | None) -> bool:
    """Both states start from one value: the same one, or zeros (broadcast, through reshapes) both."""
    if other is None:
        return False
    return s.init is other.init or (all_zeros(s.init) and all_zeros(other.init))


def all_zeros(v: ir.Value) -> bool:
    """v is all zeros: a constant, or one broadcast to a run-time shape (Expand), through reshapes."""
    c = filled_with(v)
    return c is not None and not c.any()


def _state_of(view: LoopView, value: ir.Value | None, what: str) -> State | None:
    if value is None:
        return None
    root, _ = view_root(value)
    for s in view.states:
        if s.body_in is root:
            return s
    raise NoMatch(f"the cell's previous {what} is not a carried value")


def _used(v: ir.Value) -> bool:
    return bool(v.uses()) or v.is_graph_output()


def fuse_loop(node: ir.Node, root: ir.Graph, names: MutableSet[str]) -> None:
    """Replace the Scan/Loop `node` by the fused recurrent node (or take its first cell out: _peel); NoMatch, with
    the reason, leaves it as it is."""
    view = analyse_scan(node) if node.op_type == "Scan" else analyse_loop(node)
    if view.steps == 0:
        raise NoMatch("the sequence is empty")
    mask = _Mask(view)
    cell = match_cell(view, mask)
    if view_root(cell.x)[0] is not view.x:
        raise NoMatch("the cell's input is not the current step of the sequence")
    h_state = _state_of(view, cell.h_in, "hidden state")
    c_state = _state_of(view, cell.c_in, "cell state")
    plan: list[tuple[State, str, str | None, list[ir.Node]]] = []  # (state, kind, form, glue)
    copies: list[tuple[State, State, list[ir.Node]]] = []  # (state, the state it copies, glue)
    holders: list[tuple[State, str, str, list[ir.Node]]] = []  # (state, kind, form, glue): held at a row's last step
    unmasked: list[ir.Value] = []  # values read after the loop that no mask explains (wrong if there are lengths)
    for s in view.states:
        new = mask.last(s.body_out, s.body_in)
        if new is not None:
            r, chain = view_root(new)
            kind = "h" if r in cell.h_out else "c" if r in cell.c_out else None
            if kind is None or len(s.body_in.uses()) != 1 or rank_of(s.init) != 2:
                raise NoMatch("a value held at a row's last step is not the cell's new [batch, hidden] state")
            holders.append((s, kind, (cell.h_out if kind == "h" else cell.c_out)[r], chain))
            continue
        r, chain, how = mask.root(s.body_out, s.body_in)
        if r is s.body_in and all(n.op_type == "Identity" for n in chain):  # carried through unchanged
            plan.append((s, "same", None, []))
            continue
        kind = "h" if r in cell.h_out else "c" if r in cell.c_out else None
        src = _copied(view, s, r) if kind is None else None
        if src is not None:
            copies.append((s, src, chain))
            continue
        if kind is None:  # another cell's state, that may read this one's output: computed first, outside
            _peel(Emitter(node, root, names), view, cell, h_state, c_state)
            return
        if (s is h_state and kind != "h") or (s is c_state and kind != "c"):
            raise NoMatch("the state fed back is not the one the cell reads")
        if mask.lens is not None and kind == "h" and s is not h_state and not _same_start(s, h_state):
            raise NoMatch("a masked copy of the hidden state starts elsewhere")  # a row of length 0 keeps its own
        if how == "zeros" and _used(s.final):  # the final value would be zeros for every row shorter than the loop
            raise NoMatch("a state zeroed past a row's length is read after the loop")
        if not how:
            unmasked.append(s.final)
        plan.append((s, kind, (cell.h_out if kind == "h" else cell.c_out)[r], chain))
    # per-step values: the new h, zero past a row's length (TensorFlow 1), or a masked state's value, which holds its
    # last one there (Keras masking: `kept`)
    stacked: list[tuple[ir.Value, str, list[ir.Node], bool, int, int, bool]] = []
    for o in view.outputs:
        kept = _kept_state(view, o.body_out)
        r, chain, how = mask.root(o.body_out, kept.body_in if kept is not None else None)
        if r not in cell.h_out:
            raise NoMatch(f"per-step output {o.body_out.name} is not the cell's new hidden state")
        if not how:
            unmasked.append(o.outer)
        rank = shape_of(o.body_out)
        if o.axis and rank is None:
            raise NoMatch("a stacked output of unknown rank")
        stacked.append((o.outer, cell.h_out[r], chain, view.reverse != o.reverse, o.axis, len(rank or ()) + 1,
                        how == "kept"))
    lasts = []
    for b in view.buffers:
        kept = _kept_state(view, b.row)  # the last row of a masked state is its final value
        r, chain, how = mask.root(b.row, kept.body_in if kept is not None else None)
        if r not in cell.h_out:
            raise NoMatch(f"buffer row {b.row.name} is not the cell's new hidden state")
        if not how:
            unmasked.append(b.state.final)
        if b.last:
            if how == "zeros":  # zeros in every row shorter than the loop: not Y_h
                raise NoMatch("a last row zeroed past a row's length")
            lasts.append((b.state, cell.h_out[r], chain))
        else:
            stacked.append((b.state.final, cell.h_out[r], chain, view.reverse, 0, 0, how == "kept"))
    for s, _ in view.counters:
        if _used(s.final) and view.steps is None:
            raise NoMatch("a counter's final value depends on a dynamic length")
    if mask.lens is not None and (h_state is None or (cell.op == "LSTM" and c_state is None)):
        raise NoMatch("masked steps over states without initial values")
    if mask.lens is not None and any(_used(v) for v in unmasked):  # it goes on past a row's length: not the node's
        raise NoMatch("a value read after the loop is not masked past each row's length")
    if view.capped_by is not None and through(view.capped_by, "Cast") is not through(mask.lens, "Cast"):
        raise NoMatch("the loop may stop before the sequence ends")
    if any(all(p[0] is not src or p[1] not in ("h", "c") for p in plan) for _, src, _ in copies):
        raise NoMatch("a carried value copies a state that is not the cell's")
    _emit(Emitter(node, root, names), view, cell, h_state, c_state, plan, stacked, lasts, mask.lens, copies, holders)


class _Mask:
    """Per-row lengths: from a row's length on, the body keeps its states (TensorFlow 1's dynamic_rnn(sequence_length),
    Where(k >= lens, previous, new)) or zeroes them (OpenVINO's sequence-as-TensorIterator form, where nothing reads
    them after the loop), and its per-step outputs are zeros (Where(k >= lens, 0, new)): what ONNX's recurrent nodes
    do with sequence_lens; a value may also be held at a row's last step (that form's Where(k == lens - 1, new,
    held)). `unmask` and `last` see through those Where nodes (one set of lengths for all), recording the lengths."""

    def __init__(self, view: LoopView) -> None:
        self.view = view
        self.lens: ir.Value | None = None

    def root(self, v: ir.Value, previous: ir.Value | None) -> tuple[ir.Value, list[ir.Node], str]:
        """view_root of v unmasked, the glue after the mask's Where kept (Keras 2 unsqueezes its masked output), and
        how it was masked (see unmask)."""
        inner, outer = view_root(v)
        new, how = self.unmask(inner, previous)
        r, chain = view_root(new)
        return r, chain + outer, how

    def unmask(self, v: ir.Value, previous: ir.Value | None) -> tuple[ir.Value, str]:
        """(the new value `v` selects before a row's length, how it selects past it: "kept" the state `previous`,
        "zeros" zeros), else (v, "")."""
        n = self._where(v)
        if n is None:
            return v, ""
        cond, kept, new = n.inputs
        if previous is not None and view_root(kept)[0] is previous:  # type: ignore[arg-type]
            how = "kept"
        elif all_zeros(kept):  # type: ignore[arg-type]
            how = "zeros"
        else:
            return v, ""
        return (new, how) if self._lengths(cond, "past") else (v, "")  # type: ignore[return-value]

    def last(self, v: ir.Value, held: ir.Value) -> ir.Value | None:
        """The new value `v` takes at each row's last step, when it otherwise keeps `held` (its previous value)."""
        n = self._where(v)
        if n is None:
            return None
        cond, new, kept = n.inputs
        if view_root(kept)[0] is not held:  # type: ignore[arg-type]
            return None
        return new if self._lengths(cond, "last") else None

    @staticmethod
    def _where(v: ir.Value) -> ir.Node | None:
        root, chain = view_root(v)
        n = producer(root, "Where")
        if n is None or len(n.inputs) != 3 or any(i is None for i in n.inputs) \
                or any(g.op_type != "Identity" for g in chain):  # glue would be lost
            return None
        return n

    def _lengths(self, cond: ir.Value | None, what: str) -> bool:
        found = row_lengths(cond, self.view)
        if found is None or found[0] != what:
            return False
        if self.lens is None:
            self.lens = found[1]
        elif found[1] is not self.lens:
            raise NoMatch("two masks")
        return True


def _initial(em: Emitter, cell_in: ir.Value, state: State, rank: int) -> ir.Value:
    _, chain = view_root(cell_in)
    v = em.replay(chain, state.init, lifted=False)
    return em.unsqueeze(v, [0]) if rank == 2 else v


def _from(em: Emitter, base: ir.Value, form: str, time_axis: bool) -> ir.Value:
    """The fused Y ([T, 1, B, H], time_axis) or Y_h/Y_c ([1, B, H]) in the body value's form ("seq", "3", "2")."""
    axis = 1 if time_axis else 0
    if form == "seq":
        return em.unsqueeze(base, [axis])
    if form == "2":
        return em.squeeze(base, [axis])
    return base


def _emit(em: Emitter, view: LoopView, cell: Cell, h_state: State | None, c_state: State | None,
          plan: list[tuple[State, str, str | None, list[ir.Node]]],
          stacked: list[tuple[ir.Value, str, list[ir.Node], bool, int, int, bool]],
          lasts: list[tuple[State, str, list[ir.Node]]], lens: ir.Value | None = None,
          copies: list[tuple[State, State, list[ir.Node]]] = (),  # type: ignore[assignment]
          holders: list[tuple[State, str, str, list[ir.Node]]] = ()) -> None:  # type: ignore[assignment]
    node = view.node
    x, y, y_h, y_c = _emit_node(em, view, cell, h_state, c_state, lens)
    held = _held(em, y, y_h) if lens is not None and any(s[6] for s in stacked) else y
    replacements: dict[ir.Value, ir.Value] = {}
    or_initial = _OrInitial(em, view, x)
    ran: dict[int, ir.Value] = {}  # a state's (by id) final value once an iteration ran

    def final_of(s: State, kind: str, form: str | None, chain: list[ir.Node]) -> ir.Value:
        if id(s) not in ran:
            base = y_h if kind == "h" else y_c
            assert base is not None and form is not None
            ran[id(s)] = em.replay(chain, _from(em, base, form, False), lifted=False)
        return ran[id(s)]

    planned = {id(p[0]): p for p in plan}
    for s, kind, form, chain in plan:
        if not _used(s.final):
            continue
        if kind == "same":
            replacements[s.final] = s.init
            continue
        replacements[s.final] = or_initial(final_of(s, kind, form, chain), s)
    for s, src, chain in copies:
        if _used(s.final):
            replacements[s.final] = or_initial(em.replay(chain, final_of(*planned[id(src)]), lifted=False), s)
    if any(_used(s.final) for s, *_ in holders):
        # a row's last step is one of the loop's when its length is in [1, steps]; else the held value stays
        assert lens is not None
        wide = _int64(em, lens)
        steps = em.op1("Shape", [x], {"start": 0, "end": 1})
        in_range = em.op1("And", [em.op1("GreaterOrEqual", [wide, em.i64([1])]), em.op1("LessOrEqual", [wide, steps])])
        in_range = em.op1("Reshape", [in_range, em.i64([-1, 1])])
        for s, kind, form, chain in holders:
            if _used(s.final):
                replacements[s.final] = em.op1("Where", [in_range, final_of(s, kind, form, chain), s.init])
    for outer, form, chain, flip, axis, rank, kept in stacked:
        if not _used(outer):
            continue
        v = _from(em, held if kept else y, form, True)
        if flip:
            v = em.reverse(v)
        v = em.replay(chain, v, lifted=True)
        v = em.move0(v, axis, rank)
        replacements[outer] = v
    for s, form, chain in lasts:  # a one-row buffer holding the last step's row (the initial row when none ran)
        if _used(s.final):
            last = em.unsqueeze(em.replay(chain, _from(em, y_h, form, False), lifted=False), [0])
            replacements[s.final] = or_initial(last, s)
    for s, start in view.counters:
        if _used(s.final):
            init = s.init.const_value.numpy() if s.init.const_value is not None else np.asarray(start)
            replacements[s.final] = em.const(np.asarray(start + view.steps, init.dtype).reshape(init.shape), "count")  # type: ignore[operator]
    pairs = [(old, em.op1("Identity", [new]) if old.is_graph_output() else new) for old, new in replacements.items()]
    em.commit()
    graph = node.graph
    for old, new in pairs:
        new.type, new.shape = old.type, old.shape  # the same tensor: graph outputs keep their declared type
        if old.is_graph_output():
            name = old.name
            old.name = f"{name}/unfused"
            new.name = name
        old.replace_all_uses_with(new, replace_graph_outputs=True)
    _detach(node)
    graph.remove(node)  # type: ignore[union-attr]


def _peel(em: Emitter, view: LoopView, cell: Cell, h_state: State | None, c_state: State | None) -> None:
    """A loop whose body runs this cell and more (a stacked network in one loop: Keras StackedRNNCells, TensorFlow 1's
    MultiRNNCell): the cell runs before the loop as one node over the sequence, and the body reads its new hidden
    state from that node's output (a Gather at the step read's index) instead of computing it; its carried states
    pass through unchanged, their final values taken from the node. The loop, one cell shorter, is fused again.
    Only a spelled-out cell ([batch, hidden] states) over a Scan's scan input or a step read by Gather or Slice
    (at the time index, which the body's Gather then reads), whose previous states nothing else in the body reads."""
    node = view.node
    body: ir.Graph = node.attributes["body"].value
    read = view.x.producer()
    h_new = next((v for v, form in cell.h_out.items() if form == "2"), None)
    c_new = next((v for v, form in cell.c_out.items() if form == "2"), None)
    states = [(st, new) for st, new in ((h_state, h_new), (c_state, c_new)) if st is not None]
    at = read.inputs[1] if read is not None and read.op_type in ("Gather", "Slice") else None  # the time index
    gathered = at is not None and shape_of(at) in ((), (1,))
    if not (gathered or (node.op_type == "Scan" and view.x in body.inputs)) or h_new is None \
            or any(new is None or view_root(st.body_out)[0] is not new for st, new in states) \
            or _still_read(body, h_new, states):
        raise NoMatch("a carried value is not the cell's new state")
    x, y, y_h, y_c = _emit_node(em, view, cell, h_state, c_state)
    steps = em.squeeze(y, [1])  # [T, B, H] in time order
    or_initial = _OrInitial(em, view, x)
    finals = []
    for (st, _), base in zip(states, (y_h, y_c)):
        assert base is not None
        _, chain = view_root(st.body_out)
        final = or_initial(em.replay(chain, em.squeeze(base, [0]), lifted=False), st)
        finals.append((st.final, em.op1("Identity", [final]) if st.final.is_graph_output() else final))
    em.commit()
    names = em.names
    row = ir.Value(name=fresh_name(names, f"{h_new.name}/fused"), type=h_new.type, shape=h_new.shape)
    if gathered:
        added = []
        if shape_of(at) == (1,):  # a Slice's start, or a one-element Gather index: the scalar time index
            scalar = ir.Value(name=fresh_name(names, f"{h_new.name}/step_index"))
            empty = ir.Value(name=fresh_name(names, f"{h_new.name}/scalar_shape"))
            added += [ir.Node("", "Constant", [], [ir.AttrTensor("value", ir.tensor(np.zeros(0, np.int64)))],
                              outputs=[empty], name=fresh_name(names, f"{h_new.name}/scalar_shape_node")),
                      ir.Node("", "Reshape", [at, empty], outputs=[scalar],
                              name=fresh_name(names, f"{h_new.name}/step_index_node"))]
            at = scalar
        added.append(ir.Node("", "Gather", [steps, at], [ir.AttrInt64("axis", 0)], outputs=[row],
                             name=fresh_name(names, f"{h_new.name}/fused_node")))
        body.insert_after(read, [inherit_meta(n, read) for n in added])  # type: ignore[arg-type]
    else:  # one more scan input, read in the sequence's direction (the old one is dropped below once unread)
        n_scan = int(node.attributes["num_scan_inputs"].value)
        axes = [*scan_ints(node, "scan_input_axes", n_scan), 0]
        directions = [*scan_ints(node, "scan_input_directions", n_scan), 1 if view.reverse else 0]
        node.resize_inputs(len(node.inputs) + 1)
        node.replace_input_with(len(node.inputs) - 1, steps)
        body.inputs.append(row)
    h_new.replace_all_uses_with(row, replace_graph_outputs=True)
    for st, _ in states:  # pass through: nothing in the body reads them any more
        body.outputs[body.outputs.index(row if st.body_out is h_new else st.body_out)] = \
            distinct_output(st.body_in, body, names, f"{st.body_in.name}", node)
    for old, new in finals:
        new.type, new.shape = old.type, old.shape
        if old.is_graph_output():
            new.name, old.name = old.name, f"{old.name}/unfused"
        old.replace_all_uses_with(new, replace_graph_outputs=True)
    if not gathered:
        _remove_dead_nodes(body)
        keep_read_scan_inputs(node, body, axes, directions)


def _remove_dead_nodes(body: ir.Graph) -> None:
    """The peeled cell's nodes, which nothing reads any more (its step read included)."""
    changed = True
    while changed:
        changed = False
        for n in reversed(list(body)):
            if not any(o.uses() or o.is_graph_output() for o in n.outputs):
                body.remove(n, safe=True)
                changed = True


def _still_read(body: ir.Graph, h_new: ir.Value, states: list[tuple[State, ir.Value | None]]) -> bool:
    """Whether, once h_new is read from outside and the cell's states pass through, the body still reads the cell's
    previous states or its new cell state (the cell would stay in the body)."""
    reads = _live_reads(body, h_new, {st.body_out for st, _ in states})
    return any(st.body_in in reads or (new is not None and new is not h_new and new in reads) for st, new in states)


def _live_reads(body: ir.Graph, cut: ir.Value, dropped: set[ir.Value]) -> set[ir.Value]:
    """The values the body's outputs (but `dropped`) are computed from, not looking past `cut`; a node with a
    subgraph counts as reading everything."""
    reads: set[ir.Value] = set()
    seen: set[ir.Node] = set()
    work = [o for o in body.outputs if o not in dropped]
    while work:
        v = work.pop()
        n = v.producer()
        if v is cut or n is None or n.graph is not body or n in seen:
            continue
        seen.add(n)
        if any(a.type in (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS) for a in n.attributes.values()):
            reads.update(body.inputs)
        for i in n.inputs:
            if i is not None:
                reads.add(i)
                work.append(i)
    return reads


def _emit_node(em: Emitter, view: LoopView, cell: Cell, h_state: State | None, c_state: State | None,
               lens: ir.Value | None = None) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value | None]:
    """The fused node over the whole sequence: (its input, Y, Y_h, Y_c). `lens`: per-row lengths (masked steps),
    clipped to [0, steps] (a longer length masks nothing, a negative one everything); a row of length 0 keeps its
    initial states."""
    _, x_chain = view_root(cell.x)
    x = em.replay(x_chain, view.stack_x(em), lifted=True)
    if cell.x_rank == 3:
        x = em.squeeze(x, [1])
    ins: list[ir.Value | None] = [x, em.const(cell.w, "W"), em.const(cell.r, "R"), em.const(cell.b, "B"), None]
    ins.append(_initial(em, cell.h_in, h_state, cell.state_rank) if h_state is not None else None)
    if cell.op == "LSTM":
        ins.append(_initial(em, cell.c_in, c_state, cell.state_rank) if c_state is not None and cell.c_in else None)
    if lens is not None:
        steps = em.op1("Shape", [x], {"start": 0, "end": 1})
        wide = _int64(em, lens)
        clipped = em.op1("Max", [em.op1("Min", [wide, steps]), em.i64([0])])
        rows, lens_rows = (shape_of(x) or ())[1:2], shape_of(lens)
        if not rows or rows != lens_rows or None in rows:  # not provably one length per row (one for all: broadcast)
            clipped = em.op1("Expand", [clipped, em.op1("Shape", [x], {"start": 1, "end": 2})])
        ins[4] = em.op1("Cast", [clipped], {"to": ir.DataType.INT32})
    attrs = {"hidden_size": cell.hidden, "direction": "reverse" if view.reverse else "forward", **cell.attrs}
    outs = em.op(cell.op, ins, attrs, outputs=3 if cell.op == "LSTM" else 2)
    finals: list[ir.Value | None] = [outs[1], outs[2] if cell.op == "LSTM" else None]
    if lens is not None:
        ran = em.op1("Reshape", [em.op1("Greater", [clipped, em.i64([0])]), em.i64([1, -1, 1])])
        inits = [*ins[5:], None]
        finals = [em.op1("Where", [ran, f, inits[i]]) if f is not None else None for i, f in enumerate(finals)]
    return x, outs[0], finals[0], finals[1]  # type: ignore[return-value]


def _int64(em: Emitter, v: ir.Value) -> ir.Value:
    """v as int64 (no Cast to its own type: onnxruntime warns about those)."""
    return v if v.dtype == ir.DataType.INT64 else em.op1("Cast", [v], {"to": ir.DataType.INT64})


def _held(em: Emitter, y: ir.Value, y_h: ir.Value) -> ir.Value:
    """Y with each row's steps past its length holding the row's last value (Y_h) instead of ONNX's zeros."""
    node = y.producer()
    assert node is not None and node.inputs[4] is not None
    lens = em.op1("Cast", [node.inputs[4]], {"to": ir.DataType.INT64})  # the node's clipped sequence_lens
    steps = em.arange(em.squeeze(em.op1("Shape", [y], {"start": 0, "end": 1}), [0]))
    past = em.op1("GreaterOrEqual", [em.op1("Reshape", [steps, em.i64([-1, 1, 1, 1])]),
                                     em.op1("Reshape", [lens, em.i64([1, 1, -1, 1])])])
    return em.op1("Where", [past, y_h, y])  # [T, 1, B, 1] picks between [1, B, H] and [T, 1, B, H]


class _OrInitial:
    """A run-time length may be 0: the loop then returns the initial values (ONNX's LSTM gives zeros)."""

    def __init__(self, em: Emitter, view: LoopView, x: ir.Value) -> None:
        self.em, self.view, self.x = em, view, x
        self.nonempty: ir.Value | None = None

    def __call__(self, final: ir.Value, s: State) -> ir.Value:
        if self.view.steps is not None:
            return final
        em = self.em
        if self.nonempty is None:
            length = em.op1("Shape", [self.x], {"start": 0, "end": 1})
            self.nonempty = em.op1("Greater", [length, em.i64([0])])
        init = s.init.const_value
        if init is None or init.size:
            return em.op1("Where", [self.nonempty, final, s.init])
        # An empty initial value (the translation's zeros for a last value with run-time dims) has another shape
        # than the final one, which a Where would broadcast: an If returns either as it is.
        branches = {}
        for key, v in (("then_branch", final), ("else_branch", s.init)):
            g = Subgraph(em)
            branches[key] = g.build([g.op1("Identity", [v])], hint=key)
        return em.op1("If", [self.nonempty], branches)


def _detach(node: ir.Node) -> None:
    """Drop the inputs of a removed loop and of every node in its bodies (outer values they read lose those uses)."""
    for a in node.attributes.values():
        graphs = [a.value] if a.type == ir.AttributeType.GRAPH else a.value if a.type == ir.AttributeType.GRAPHS else []
        for g in graphs:
            for n in list(g):
                _detach(n)
    for i in range(len(node.inputs)):
        node.replace_input_with(i, None)

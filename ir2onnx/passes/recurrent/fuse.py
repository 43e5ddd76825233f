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
cheap next to the recurrence (see scripts/bench/bench_recurrent.py).

Rule shape (as in onnxscript's rewriter): pattern = `analyse_scan`/`analyse_loop` (what the loop iterates over) and
`fuse_rnn_cells` (which cell one step is); check = every loop output must be explained as the cell's new state, a
value stacked per step, a buffer written row by row, a counter or a pass-through, each reached only through
reshape-only glue (Reshape/Squeeze/Unsqueeze/Identity); any failure raises `NoMatch` with a readable reason, logged at
debug level, and the loop stays as it is; rewrite = `emit` (or `peel`) of the `FusionPlan` that `fuse_loop` builds.
Because every output is rebuilt from the fused node's Y / Y_h / Y_c by the same glue, fusion does not change what the
model computes (up to float summation order).
"""

from __future__ import annotations

import logging
from collections.abc import MutableSet
from dataclasses import replace

import onnx_ir as oir
from onnx_ir.passes.common.unused_removal import RemoveUnusedNodesPass

from ir2onnx.passes.analysis.graph import NoMatch, all_nodes, producer, through
from ir2onnx.passes.analysis.shapes import infer_shapes
from ir2onnx.passes.analysis.values import filled_with, rank_of, shape_of, view_root
from ir2onnx.passes.recurrent.cells import Cell, spelled_gru, spelled_lstm, spelled_rnn, step_node_cell
from ir2onnx.passes.recurrent.emit import Copy, Final, FusionPlan, LastRow, Stacked, emit, peel, used
from ir2onnx.passes.recurrent.loops import analyse_loop, analyse_scan, row_lengths
from ir2onnx.passes.recurrent.views import LoopView, State
from ir2onnx.passes.rewrite import (
    Emitter,
    all_names,
)

logger = logging.getLogger(__name__)

_LOOPS = ("Scan", "Loop")

_MAX_ROUNDS = 64  # each round fuses a loop or takes a cell out of one: a bound on stacked cells, not a tuning knob

class FuseRecurrentLoopsPass(oir.passes.InPlacePass):
    """Replace Scan/Loop nodes that run one recurrent cell over a sequence with one ONNX LSTM/GRU/RNN node."""

    def call(self, model: oir.Model) -> oir.passes.PassResult:
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
        return oir.passes.PassResult(model, modified=fused > 0)

def _process(graph: oir.Graph, root: oir.Graph, names: MutableSet[str]) -> int:
    """Fuse inner loops first, then the loops of `graph`; returns the number of loops fused."""
    fused = 0
    for node in list(graph):
        for a in node.attributes.values():
            if a.type == oir.AttributeType.GRAPH:
                fused += _process(a.value, root, names)
            elif a.type == oir.AttributeType.GRAPHS:
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

def _copied(view: LoopView, s: State, root: oir.Value) -> State | None:
    """The other state whose new value `s` carries, reshaped (`root`: the root of s's new value, the other's new
    value itself), when nothing in the body reads s's previous value (Keras 2's masked last output, a copy of its
    masked output state): s's final value is that state's, reshaped, after any iteration."""
    if s.body_in.uses():
        return None
    return next((o for o in view.states if o is not s and o.body_out is root), None)

def _kept_state(view: LoopView, row: oir.Value) -> State | None:
    """The carried state whose new value `row` is (Keras' masked output, kept on masked steps), if any."""
    root, _ = view_root(row)
    return next((s for s in view.states if view_root(s.body_out)[0] is root), None)

def _same_start(s: State, other: State | None) -> bool:
    """Both states start from one value: the same one, or zeros (broadcast, through reshapes) both."""
    if other is None:
        return False
    return s.init is other.init or (all_zeros(s.init) and all_zeros(other.init))

def all_zeros(v: oir.Value) -> bool:
    """v is all zeros: a constant, or one broadcast to a run-time shape (Expand), through reshapes."""
    c = filled_with(v)
    return c is not None and not c.any()

def _state_of(view: LoopView, value: oir.Value | None, what: str) -> State | None:
    if value is None:
        return None
    root, _ = view_root(value)
    for s in view.states:
        if s.body_in is root:
            return s
    raise NoMatch(f"the cell's previous {what} is not a carried value")

def fuse_loop(node: oir.Node, root: oir.Graph, names: MutableSet[str]) -> None:
    """Replace the Scan/Loop `node` by the fused recurrent node (or take its first cell out: peel); NoMatch, with
    the reason, leaves it as it is."""
    view = analyse_scan(node) if node.op_type == "Scan" else analyse_loop(node)
    if view.steps == 0:
        raise NoMatch("the sequence is empty")
    mask = _Mask(view)
    cell = match_cell(view, mask)
    if view_root(cell.x)[0] is not view.x:
        raise NoMatch("the cell's input is not the current step of the sequence")
    found = FusionPlan(view, cell, _state_of(view, cell.h_in, "hidden state"), _state_of(view, cell.c_in, "cell state"))
    plan = _with_outputs(found, mask)
    if plan is None:  # another cell's state, that may read this one's output: this cell computed first, outside
        peel(Emitter(node, root, names), found)
    else:
        emit(Emitter(node, root, names), plan)

def _with_outputs(found: FusionPlan, mask: _Mask) -> FusionPlan | None:
    """`found` (view, cell, states) completed with how the fused node gives each loop output; None when a carried
    value is another cell's (this cell is peeled); NoMatch when an output is not the cell's."""
    view, cell, h_state, c_state = found.view, found.cell, found.h_state, found.c_state
    finals: list[Final] = []
    copies: list[Copy] = []
    held: list[Final] = []
    unmasked: list[oir.Value] = []  # values read after the loop that no mask explains (wrong if there are lengths)
    for s in view.states:
        new = mask.last(s.body_out, s.body_in)
        if new is not None:
            r, chain = view_root(new)
            kind = "h" if r in cell.h_out else "c" if r in cell.c_out else None
            if kind is None or len(s.body_in.uses()) != 1 or rank_of(s.init) != 2:
                raise NoMatch("a value held at a row's last step is not the cell's new [batch, hidden] state")
            held.append(Final(s, kind, (cell.h_out if kind == "h" else cell.c_out)[r], chain))
            continue
        r, chain, how = mask.root(s.body_out, s.body_in)
        if r is s.body_in and all(n.op_type == "Identity" for n in chain):  # carried through unchanged
            finals.append(Final(s, "same", None, []))
            continue
        kind = "h" if r in cell.h_out else "c" if r in cell.c_out else None
        src = _copied(view, s, r) if kind is None else None
        if src is not None:
            copies.append(Copy(s, src, chain))
            continue
        if kind is None:
            return None
        if (s is h_state and kind != "h") or (s is c_state and kind != "c"):
            raise NoMatch("the state fed back is not the one the cell reads")
        if mask.lens is not None and kind == "h" and s is not h_state and not _same_start(s, h_state):
            raise NoMatch("a masked copy of the hidden state starts elsewhere")  # a row of length 0 keeps its own
        if how == "zeros" and used(s.final):  # the final value would be zeros for every row shorter than the loop
            raise NoMatch("a state zeroed past a row's length is read after the loop")
        if not how:
            unmasked.append(s.final)
        finals.append(Final(s, kind, (cell.h_out if kind == "h" else cell.c_out)[r], chain))
    # per-step values: the new h, zero past a row's length (TensorFlow 1), or a masked state's value, which holds its
    # last one there (Keras masking: `kept`)
    stacked: list[Stacked] = []
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
        stacked.append(Stacked(o.outer, cell.h_out[r], chain, view.reverse != o.reverse, o.axis, len(rank or ()) + 1,
                               how == "kept"))
    lasts: list[LastRow] = []
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
            lasts.append(LastRow(b.state, cell.h_out[r], chain))
        else:
            stacked.append(Stacked(b.state.final, cell.h_out[r], chain, view.reverse, 0, 0, how == "kept"))
    for s, _ in view.counters:
        if used(s.final) and view.steps is None:
            raise NoMatch("a counter's final value depends on a dynamic length")
    if mask.lens is not None and (h_state is None or (cell.op == "LSTM" and c_state is None)):
        raise NoMatch("masked steps over states without initial values")
    if mask.lens is not None and any(used(v) for v in unmasked):  # it goes on past a row's length: not the node's
        raise NoMatch("a value read after the loop is not masked past each row's length")
    if view.capped_by is not None and through(view.capped_by, "Cast") is not through(mask.lens, "Cast"):
        raise NoMatch("the loop may stop before the sequence ends")
    if any(all(f.state is not c.source or f.kind not in ("h", "c") for f in finals) for c in copies):
        raise NoMatch("a carried value copies a state that is not the cell's")
    return replace(found, lens=mask.lens, finals=tuple(finals), copies=tuple(copies), held=tuple(held),
                   stacked=tuple(stacked), lasts=tuple(lasts))

class _Mask:
    """Per-row lengths: from a row's length on, the body keeps its states (TensorFlow 1's dynamic_rnn(sequence_length),
    Where(k >= lens, previous, new)) or zeroes them (OpenVINO's sequence-as-TensorIterator form, where nothing reads
    them after the loop), and its per-step outputs are zeros (Where(k >= lens, 0, new)): what ONNX's recurrent nodes
    do with sequence_lens; a value may also be held at a row's last step (that form's Where(k == lens - 1, new,
    held)). `unmask` and `last` see through those Where nodes (one set of lengths for all), recording the lengths."""

    def __init__(self, view: LoopView) -> None:
        self.view = view
        self.lens: oir.Value | None = None

    def root(self, v: oir.Value, previous: oir.Value | None) -> tuple[oir.Value, list[oir.Node], str]:
        """view_root of v unmasked, the glue after the mask's Where kept (Keras 2 unsqueezes its masked output), and
        how it was masked (see unmask)."""
        inner, outer = view_root(v)
        new, how = self.unmask(inner, previous)
        r, chain = view_root(new)
        return r, chain + outer, how

    def unmask(self, v: oir.Value, previous: oir.Value | None) -> tuple[oir.Value, str]:
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

    def last(self, v: oir.Value, held: oir.Value) -> oir.Value | None:
        """The new value `v` takes at each row's last step, when it otherwise keeps `held` (its previous value)."""
        n = self._where(v)
        if n is None:
            return None
        cond, new, kept = n.inputs
        if view_root(kept)[0] is not held:  # type: ignore[arg-type]
            return None
        return new if self._lengths(cond, "last") else None

    @staticmethod
    def _where(v: oir.Value) -> oir.Node | None:
        root, chain = view_root(v)
        n = producer(root, "Where")
        if n is None or len(n.inputs) != 3 or any(i is None for i in n.inputs) \
                or any(g.op_type != "Identity" for g in chain):  # glue would be lost
            return None
        return n

    def _lengths(self, cond: oir.Value | None, what: str) -> bool:
        found = row_lengths(cond, self.view)
        if found is None or found[0] != what:
            return False
        if self.lens is None:
            self.lens = found[1]
        elif found[1] is not self.lens:
            raise NoMatch("two masks")
        return True

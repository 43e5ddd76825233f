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

import numpy as np
import onnx_ir as ir

from ir2onnx.passes.fuse_rnn_cells import Cell, spelled_gru, spelled_lstm, spelled_rnn, step_node_cell
from ir2onnx.passes.fuse_rnn_loops import LoopView, State, analyse_loop, analyse_scan
from ir2onnx.passes.fuse_rnn_util import Emitter, NoMatch, all_names, shape_of, view_root
from ir2onnx.passes.static_shapes import infer_shapes

logger = logging.getLogger(__name__)

_LOOPS = ("Scan", "Loop")


class FuseRecurrentLoopsPass(ir.passes.InPlacePass):
    """Replace Scan/Loop nodes that run one recurrent cell over a sequence with one ONNX LSTM/GRU/RNN node."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        names = all_names(model.graph)
        fused = last = _process(model.graph, model.graph, names)
        while last and any(n.op_type in _LOOPS for n in ir.traversal.RecursiveGraphIterator(model.graph)):
            # a loop reading a fused one's output sees that output's shape (which its proofs need) only once
            # shapes are inferred through the new node: infer, try the loops left again
            infer_shapes(model)
            last = _process(model.graph, model.graph, names)
            fused += last
        if fused:  # weights that only the replaced bodies read
            keep = set(model.graph.inputs) | set(model.graph.outputs)
            for name, v in list(model.graph.initializers.items()):
                if not v.uses() and v not in keep:
                    del model.graph.initializers[name]
        return ir.passes.PassResult(model, modified=fused > 0)


def _process(graph: ir.Graph, root: ir.Graph, names: set[str]) -> int:
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
                _fuse(node, root, names)
                fused += 1
            except NoMatch as e:
                logger.debug("%s '%s' stays a loop: %s", node.op_type, node.name, e)
    return fused


def match_cell(view: LoopView) -> Cell:
    """The one recurrent cell that a step of the loop computes (NoMatch when there is none)."""
    body = view.node.attributes["body"].value
    if any(n.op_type in ("LSTM", "GRU", "RNN") for n in body):
        return step_node_cell(body)
    reasons: list[str] = []
    roots = [(s, view_root(s.body_out)[0]) for s in view.states]
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


def _fuse(node: ir.Node, root: ir.Graph, names: set[str]) -> None:
    view = analyse_scan(node) if node.op_type == "Scan" else analyse_loop(node)
    if view.steps == 0:
        raise NoMatch("the sequence is empty")
    cell = match_cell(view)
    if view_root(cell.x)[0] is not view.x:
        raise NoMatch("the cell's input is not the current step of the sequence")
    h_state = _state_of(view, cell.h_in, "hidden state")
    c_state = _state_of(view, cell.c_in, "cell state")
    plan: list[tuple[State, str, str | None, list[ir.Node]]] = []  # (state, kind, form, glue)
    for s in view.states:
        if s.body_out is s.body_in:
            plan.append((s, "same", None, []))
            continue
        r, chain = view_root(s.body_out)
        kind = "h" if r in cell.h_out else "c" if r in cell.c_out else None
        if kind is None:
            raise NoMatch(f"carried value {s.body_out.name} is not the cell's new state")
        if (s is h_state and kind != "h") or (s is c_state and kind != "c"):
            raise NoMatch("the state fed back is not the one the cell reads")
        plan.append((s, kind, (cell.h_out if kind == "h" else cell.c_out)[r], chain))
    stacked = []
    for o in view.outputs:
        r, chain = view_root(o.body_out)
        if r not in cell.h_out:
            raise NoMatch(f"per-step output {o.body_out.name} is not the cell's new hidden state")
        rank = shape_of(o.body_out)
        if o.axis and rank is None:
            raise NoMatch("a stacked output of unknown rank")
        stacked.append((o.outer, cell.h_out[r], chain, view.reverse != o.reverse, o.axis, len(rank or ()) + 1))
    lasts = []
    for b in view.buffers:
        r, chain = view_root(b.row)
        if r not in cell.h_out:
            raise NoMatch(f"buffer row {b.row.name} is not the cell's new hidden state")
        if b.last:
            lasts.append((b.state, cell.h_out[r], chain))
        else:
            stacked.append((b.state.final, cell.h_out[r], chain, view.reverse, 0, 0))
    for s, _ in view.counters:
        if _used(s.final) and view.steps is None:
            raise NoMatch("a counter's final value depends on a dynamic length")
    _emit(Emitter(node, root, names), view, cell, h_state, c_state, plan, stacked, lasts)


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
          stacked: list[tuple[ir.Value, str, list[ir.Node], bool, int, int]],
          lasts: list[tuple[State, str, list[ir.Node]]]) -> None:
    node = view.node
    _, x_chain = view_root(cell.x)
    x = em.replay(x_chain, view.stack_x(em), lifted=True)
    if cell.x_rank == 3:
        x = em.squeeze(x, [1])
    ins: list[ir.Value | None] = [x, em.const(cell.w, "W"), em.const(cell.r, "R"), em.const(cell.b, "B"), None]
    ins.append(_initial(em, cell.h_in, h_state, cell.state_rank) if h_state is not None else None)
    if cell.op == "LSTM":
        ins.append(_initial(em, cell.c_in, c_state, cell.state_rank) if c_state is not None and cell.c_in else None)
    attrs = {"hidden_size": cell.hidden, "direction": "reverse" if view.reverse else "forward", **cell.attrs}
    outs = em.op(cell.op, ins, attrs, outputs=3 if cell.op == "LSTM" else 2)
    y, y_h = outs[0], outs[1]
    y_c = outs[2] if cell.op == "LSTM" else None
    replacements: dict[ir.Value, ir.Value] = {}
    nonempty: list[ir.Value] = []

    def or_initial(final: ir.Value, s: State) -> ir.Value:
        """A run-time length may be 0: the loop then returns the initial values (ONNX's LSTM gives zeros)."""
        if view.steps is not None:
            return final
        if not nonempty:
            length = em.op1("Shape", [x], {"start": 0, "end": 1})
            nonempty.append(em.op1("Greater", [length, em.i64([0])]))
        return em.op1("Where", [nonempty[0], final, s.init])

    for s, kind, form, chain in plan:
        if not _used(s.final):
            continue
        if kind == "same":
            replacements[s.final] = s.init
            continue
        base = y_h if kind == "h" else y_c
        assert base is not None and form is not None
        final = em.replay(chain, _from(em, base, form, False), lifted=False)
        replacements[s.final] = or_initial(final, s)
    for outer, form, chain, flip, axis, rank in stacked:
        if not _used(outer):
            continue
        v = _from(em, y, form, True)
        if flip:
            v = em.reverse0(v)
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


def _detach(node: ir.Node) -> None:
    """Drop the inputs of a removed loop and of every node in its bodies (outer values they read lose those uses)."""
    for a in node.attributes.values():
        graphs = [a.value] if a.type == ir.AttributeType.GRAPH else a.value if a.type == ir.AttributeType.GRAPHS else []
        for g in graphs:
            for n in list(g):
                _detach(n)
    for i in range(len(node.inputs)):
        node.replace_input_with(i, None)

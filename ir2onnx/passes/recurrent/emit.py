"""Emission of a fused loop: the ONNX LSTM/GRU/RNN node (or a step peeled before it), its initial states, its
outputs in the layouts the loop returned them. What to emit comes as one `FusionPlan`, which fuse.py builds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import NoMatch, scan_ints
from ir2onnx.passes.analysis.values import shape_of, view_root
from ir2onnx.passes.recurrent.cells import Cell
from ir2onnx.passes.recurrent.views import LoopView, State
from ir2onnx.passes.rewrite import (
    Emitter,
    Subgraph,
    distinct_output,
    fresh_name,
    inherit_meta,
    keep_read_scan_inputs,
    record,
)


class Final(NamedTuple):
    """A carried state's final value: the initial one ("same"), or the node's Y_h ("h") or Y_c ("c") in the body
    value's `form` ("seq", "3", "2"; None for "same") with the `glue` after it."""

    state: State
    kind: str
    form: str | None
    glue: list[oir.Node]

class Copy(NamedTuple):
    """A state whose final value is another's (`source`), through `glue` (Keras 2's masked last output)."""

    state: State
    source: State
    glue: list[oir.Node]

class Stacked(NamedTuple):
    """A per-step value stacked by the loop (a scan output, or a buffer written row by row): the node's Y."""

    outer: oir.Value  # the loop's stacked value
    form: str  # the body value's form of the new hidden state
    glue: list[oir.Node]
    flip: bool  # stacked in the other time order than the node runs
    axis: int  # where the steps are stacked
    rank: int  # the stacked value's rank (read only where axis is not 0)
    kept: bool  # a row past its length holds its last value (Keras masking) instead of zeros

class LastRow(NamedTuple):
    """A one-row buffer holding the last step's new hidden state (TensorFlow's last output): the node's Y_h."""

    state: State
    form: str
    glue: list[oir.Node]

@dataclass(frozen=True)
class FusionPlan:
    """A loop to fuse: its view, the cell one step runs, the states the cell reads, the per-row lengths (masked
    steps), and how each of the loop's outputs is taken from the fused node. A plan for `peel` has only the first
    four."""

    view: LoopView
    cell: Cell
    h_state: State | None
    c_state: State | None
    lens: oir.Value | None = None
    finals: tuple[Final, ...] = ()
    copies: tuple[Copy, ...] = ()
    held: tuple[Final, ...] = ()  # states held at each row's last step (from the Y_h/Y_c of that step)
    stacked: tuple[Stacked, ...] = ()
    lasts: tuple[LastRow, ...] = ()

def used(v: oir.Value) -> bool:
    return bool(v.uses()) or v.is_graph_output()

def _initial(em: Emitter, cell_in: oir.Value, state: State, rank: int) -> oir.Value:
    _, chain = view_root(cell_in)
    v = em.replay(chain, state.init, lifted=False)
    return em.unsqueeze(v, [0]) if rank == 2 else v

def _from(em: Emitter, base: oir.Value, form: str, time_axis: bool) -> oir.Value:
    """The fused Y ([T, 1, B, H], time_axis) or Y_h/Y_c ([1, B, H]) in the body value's form ("seq", "3", "2")."""
    axis = 1 if time_axis else 0
    if form == "seq":
        return em.unsqueeze(base, [axis])
    if form == "2":
        return em.squeeze(base, [axis])
    return base

def emit(em: Emitter, plan: FusionPlan) -> None:
    """Replace the loop by the fused node, each of its used outputs rebuilt from Y, Y_h, Y_c."""
    view, lens = plan.view, plan.lens
    node = view.node
    x, y, y_h, y_c = _emit_node(em, plan)
    y_held = _held(em, y, y_h) if lens is not None and any(s.kept for s in plan.stacked) else y
    replacements: dict[oir.Value, oir.Value] = {}
    or_initial = _OrInitial(em, view, x)
    ran: dict[int, oir.Value] = {}  # a state's (by id) final value once an iteration ran

    def final_of(f: Final) -> oir.Value:
        if id(f.state) not in ran:
            base = y_h if f.kind == "h" else y_c
            assert base is not None and f.form is not None
            ran[id(f.state)] = em.replay(f.glue, _from(em, base, f.form, False), lifted=False)
        return ran[id(f.state)]

    planned = {id(f.state): f for f in plan.finals}
    for f in plan.finals:
        s = f.state
        if not used(s.final):
            continue
        if f.kind == "same":
            replacements[s.final] = s.init
            continue
        replacements[s.final] = or_initial(final_of(f), s)
    for s, src, chain in plan.copies:
        if used(s.final):
            replacements[s.final] = or_initial(em.replay(chain, final_of(planned[id(src)]), lifted=False), s)
    if any(used(f.state.final) for f in plan.held):
        # a row's last step is one of the loop's when its length is in [1, steps]; else the held value stays
        assert lens is not None
        wide = _int64(em, lens)
        steps = em.op1("Shape", [x], {"start": 0, "end": 1})
        in_range = em.op1("And", [em.op1("GreaterOrEqual", [wide, em.i64([1])]), em.op1("LessOrEqual", [wide, steps])])
        in_range = em.op1("Reshape", [in_range, em.i64([-1, 1])])
        for f in plan.held:
            if used(f.state.final):
                replacements[f.state.final] = em.op1("Where", [in_range, final_of(f), f.state.init])
    for outer, form, chain, flip, axis, rank, kept in plan.stacked:
        if not used(outer):
            continue
        v = _from(em, y_held if kept else y, form, True)
        if flip:
            v = em.reverse(v)
        v = em.replay(chain, v, lifted=True)
        v = em.move0(v, axis, rank)
        replacements[outer] = v
    for s, form, chain in plan.lasts:  # a one-row buffer holding the last step's row (the initial row when none ran)
        if used(s.final):
            last = em.unsqueeze(em.replay(chain, _from(em, y_h, form, False), lifted=False), [0])
            replacements[s.final] = or_initial(last, s)
    for s, start in view.counters:
        if used(s.final):
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
        record(old, new)
        old.replace_all_uses_with(new, replace_graph_outputs=True)
    _detach(node)
    graph.remove(node)  # type: ignore[union-attr]

def peel(em: Emitter, plan: FusionPlan) -> None:
    """A loop whose body runs this cell and more (a stacked network in one loop: Keras StackedRNNCells, TensorFlow 1's
    MultiRNNCell): the cell runs before the loop as one node over the sequence, and the body reads its new hidden
    state from that node's output (a Gather at the step read's index) instead of computing it; its carried states
    pass through unchanged, their final values taken from the node. The loop, one cell shorter, is fused again.
    Only a spelled-out cell ([batch, hidden] states) over a Scan's scan input or a step read by Gather or Slice
    (at the time index, which the body's Gather then reads), whose previous states nothing else in the body reads."""
    view, cell = plan.view, plan.cell
    node = view.node
    body: oir.Graph = node.attributes["body"].value
    read = view.x.producer()
    h_new = next((v for v, form in cell.h_out.items() if form == "2"), None)
    c_new = next((v for v, form in cell.c_out.items() if form == "2"), None)
    states = [(st, new) for st, new in ((plan.h_state, h_new), (plan.c_state, c_new)) if st is not None]
    at = read.inputs[1] if read is not None and read.op_type in ("Gather", "Slice") else None  # the time index
    gathered = at is not None and shape_of(at) in ((), (1,))
    if not (gathered or (node.op_type == "Scan" and view.x in body.inputs)) or h_new is None \
            or any(new is None or view_root(st.body_out)[0] is not new for st, new in states) \
            or _still_read(body, h_new, states):
        raise NoMatch("a carried value is not the cell's new state")
    x, y, y_h, y_c = _emit_node(em, plan)
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
    row = oir.Value(name=fresh_name(names, f"{h_new.name}/fused"), type=h_new.type, shape=h_new.shape)
    if gathered:
        added = []
        if shape_of(at) == (1,):  # a Slice's start, or a one-element Gather index: the scalar time index
            scalar = oir.Value(name=fresh_name(names, f"{h_new.name}/step_index"))
            empty = oir.Value(name=fresh_name(names, f"{h_new.name}/scalar_shape"))
            added += [oir.Node("", "Constant", [], [oir.AttrTensor("value", oir.tensor(np.zeros(0, np.int64)))],
                              outputs=[empty], name=fresh_name(names, f"{h_new.name}/scalar_shape_node")),
                      oir.Node("", "Reshape", [at, empty], outputs=[scalar],
                              name=fresh_name(names, f"{h_new.name}/step_index_node"))]
            at = scalar
        added.append(oir.Node("", "Gather", [steps, at], [oir.AttrInt64("axis", 0)], outputs=[row],
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
        record(old, new)
        old.replace_all_uses_with(new, replace_graph_outputs=True)
    if not gathered:
        _remove_dead_nodes(body)
        keep_read_scan_inputs(node, body, axes, directions)

def _remove_dead_nodes(body: oir.Graph) -> None:
    """The peeled cell's nodes, which nothing reads any more (its step read included)."""
    changed = True
    while changed:
        changed = False
        for n in reversed(list(body)):
            if not any(o.uses() or o.is_graph_output() for o in n.outputs):
                body.remove(n, safe=True)
                changed = True

def _still_read(body: oir.Graph, h_new: oir.Value, states: list[tuple[State, oir.Value | None]]) -> bool:
    """Whether, once h_new is read from outside and the cell's states pass through, the body still reads the cell's
    previous states or its new cell state (the cell would stay in the body)."""
    reads = _live_reads(body, h_new, {st.body_out for st, _ in states})
    return any(st.body_in in reads or (new is not None and new is not h_new and new in reads) for st, new in states)

def _live_reads(body: oir.Graph, cut: oir.Value, dropped: set[oir.Value]) -> set[oir.Value]:
    """The values the body's outputs (but `dropped`) are computed from, not looking past `cut`; a node with a
    subgraph counts as reading everything."""
    reads: set[oir.Value] = set()
    seen: set[oir.Node] = set()
    work = [o for o in body.outputs if o not in dropped]
    while work:
        v = work.pop()
        n = v.producer()
        if v is cut or n is None or n.graph is not body or n in seen:
            continue
        seen.add(n)
        if any(a.type in (oir.AttributeType.GRAPH, oir.AttributeType.GRAPHS) for a in n.attributes.values()):
            reads.update(body.inputs)
        for i in n.inputs:
            if i is not None:
                reads.add(i)
                work.append(i)
    return reads

def _emit_node(em: Emitter, plan: FusionPlan) -> tuple[oir.Value, oir.Value, oir.Value, oir.Value | None]:
    """The fused node over the whole sequence: (its input, Y, Y_h, Y_c). The plan's per-row lengths (masked steps)
    are clipped to [0, steps] (a longer length masks nothing, a negative one everything); a row of length 0 keeps its
    initial states."""
    view, cell, h_state, c_state, lens = plan.view, plan.cell, plan.h_state, plan.c_state, plan.lens
    _, x_chain = view_root(cell.x)
    x = em.replay(x_chain, view.stack_x(em), lifted=True)
    if cell.x_rank == 3:
        x = em.squeeze(x, [1])
    ins: list[oir.Value | None] = [x, em.const(cell.w, "W"), em.const(cell.r, "R"), em.const(cell.b, "B"), None]
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
        ins[4] = em.op1("Cast", [clipped], {"to": oir.DataType.INT32})
    attrs = {"hidden_size": cell.hidden, "direction": "reverse" if view.reverse else "forward", **cell.attrs}
    outs = em.op(cell.op, ins, attrs, outputs=3 if cell.op == "LSTM" else 2)
    finals: list[oir.Value | None] = [outs[1], outs[2] if cell.op == "LSTM" else None]
    if lens is not None:
        ran = em.op1("Reshape", [em.op1("Greater", [clipped, em.i64([0])]), em.i64([1, -1, 1])])
        inits = [*ins[5:], None]
        finals = [em.op1("Where", [ran, f, inits[i]]) if f is not None else None for i, f in enumerate(finals)]
    return x, outs[0], finals[0], finals[1]  # type: ignore[return-value]

def _int64(em: Emitter, v: oir.Value) -> oir.Value:
    """v as int64 (no Cast to its own type: onnxruntime warns about those)."""
    return v if v.dtype == oir.DataType.INT64 else em.op1("Cast", [v], {"to": oir.DataType.INT64})

def _held(em: Emitter, y: oir.Value, y_h: oir.Value) -> oir.Value:
    """Y with each row's steps past its length holding the row's last value (Y_h) instead of ONNX's zeros."""
    node = y.producer()
    assert node is not None and node.inputs[4] is not None
    lens = em.op1("Cast", [node.inputs[4]], {"to": oir.DataType.INT64})  # the node's clipped sequence_lens
    steps = em.arange(em.squeeze(em.op1("Shape", [y], {"start": 0, "end": 1}), [0]))
    past = em.op1("GreaterOrEqual", [em.op1("Reshape", [steps, em.i64([-1, 1, 1, 1])]),
                                     em.op1("Reshape", [lens, em.i64([1, 1, -1, 1])])])
    return em.op1("Where", [past, y_h, y])  # [T, 1, B, 1] picks between [1, B, H] and [T, 1, B, H]

class _OrInitial:
    """A run-time length may be 0: the loop then returns the initial values (ONNX's LSTM gives zeros)."""

    def __init__(self, em: Emitter, view: LoopView, x: oir.Value) -> None:
        self.em, self.view, self.x = em, view, x
        self.nonempty: oir.Value | None = None

    def __call__(self, final: oir.Value, s: State) -> oir.Value:
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

def _detach(node: oir.Node) -> None:
    """Drop the inputs of a removed loop and of every node in its bodies (outer values they read lose those uses)."""
    for a in node.attributes.values():
        graphs = [a.value] if a.type == oir.AttributeType.GRAPH else a.value if a.type == oir.AttributeType.GRAPHS else []
        for g in graphs:
            for n in list(g):
                _detach(n)
    for i in range(len(node.inputs)):
        node.replace_input_with(i, None)

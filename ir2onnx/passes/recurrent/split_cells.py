"""Split a Scan whose body runs recurrent cells one after another into one Scan per cell, so each can be fused.

A stacked recurrent network written as one loop (a TensorIterator whose body holds two LSTMCells, the second reading
the first's new hidden state, as Model Optimizer wrote TensorFlow's MultiRNNCell) has no ONNX LSTM equivalent as a
whole, but each layer has: layer 2 at step t needs only layer 1's output at step t, never the reverse. The Scan is
cut in two (loop fission): the first Scan runs the first cell with the states it depends on and also returns, stacked
per step, every value of its part that the rest of the body reads; the second Scan reads those stacked values as scan
inputs and runs the rest. Every step computes the same values in the same order, so the results are identical; the
fusion then makes each Scan one LSTM/GRU/RNN node. Measured (scripts/bench/bench_recurrent.py, "TI 2 stacked LSTMCells",
input 512, hidden 256, 100 steps): one Scan runs at 0.96x / 1.08x OpenVINO's time at batch 1 / 16, the two fused
LSTMs at 0.33x / 0.91x.

A state belongs to the first part when the first cell's states depend on it (through any number of iterations); a
body node belongs to it when it reads no state of the second part. Nodes that read no state at all (reshapes of the
sliced input, constants) go to whichever part uses them, to both if both do. The cut is made only where the first part
holds exactly one cell and the rest at least one; the rest is cut again while it holds several. Bodies with nested
subgraphs or initializers of their own, and Loops, are left as they are.
"""

from __future__ import annotations

from collections.abc import MutableSet
from dataclasses import dataclass

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import is_default_domain, loops_innermost_first, scan_ints, subgraphs
from ir2onnx.passes.rewrite import all_names, distinct_output, fresh_name, inherit_meta, replace_node

_CELLS = ("LSTM", "GRU", "RNN")
_GLUE = ("Identity", "Reshape", "Squeeze", "Unsqueeze")


class SplitStackedCellsPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        names = all_names(model.graph)
        modified = False
        for node, _, outer in list(loops_innermost_first(model.graph)):
            rest: oir.Node | None = node
            while rest is not None and rest.op_type == "Scan":
                rest = _split(rest, outer, names)
                modified = modified or rest is not None
        return oir.passes.PassResult(model, modified=modified)


@dataclass
class _Cut:
    first: set[int]  # the states of the first Scan (indices into the body's state inputs/outputs)
    rest: set[int]
    part: dict[oir.Node, str]  # "first", "rest", or "free" (reads no state)
    reads: dict[oir.Value, frozenset[int]]  # the state inputs each body value reads within one iteration


def _cut(body: oir.Graph, n_state: int) -> _Cut | None:
    """Where to cut the body: after the first cell that can run over the whole sequence before the others."""
    nodes = list(body)
    cells = [n for n in nodes if n.op_type in _CELLS and is_default_domain(n)]
    if len(cells) < 2 or len(body.initializers) or any(any(True for _ in subgraphs(n)) for n in nodes):
        return None
    reads: dict[oir.Value, frozenset[int]] = {v: frozenset({i}) for i, v in enumerate(body.inputs[:n_state])}
    reads.update((v, frozenset()) for v in body.inputs[n_state:])
    after: dict[oir.Value, frozenset[oir.Node]] = {}  # the cells each value follows from
    node_reads: dict[oir.Node, frozenset[int]] = {}
    for n in nodes:
        got: set[int] = set()
        cells_before: set[oir.Node] = {n} if n in cells else set()
        for v in n.inputs:
            if v is None:
                continue
            if v.graph is body and v not in reads:
                return None  # not in topological order
            got |= reads.get(v, frozenset())
            cells_before |= after.get(v, frozenset())
        node_reads[n] = frozenset(got)
        for o in n.outputs:
            reads[o] = node_reads[n]
            after[o] = frozenset(cells_before)
    deps = [reads.get(body.outputs[j], frozenset()) for j in range(n_state)]
    for cell in cells:
        # the states it reads and those only it writes, with every state these depend on
        first = set(node_reads[cell]) | {j for j in range(n_state) if after.get(body.outputs[j]) == {cell}}
        while more := set().union(*(deps[j] for j in first)) - first:
            first |= more
        rest = set(range(n_state)) - first
        part = {n: "rest" if node_reads[n] & rest else "first" if node_reads[n] else "free" for n in nodes}
        if rest and [c for c in cells if part[c] == "first"] == [cell] and any(part[c] == "rest" for c in cells):
            return _Cut(first, rest, part, reads)
    return None


def _split(scan: oir.Node, outer: oir.Graph, names: MutableSet[str]) -> oir.Node | None:
    """Cut `scan` after its first cell; returns the Scan of the rest, or None when it is left as it is."""
    body = scan.attributes["body"].as_graph()
    n_scan = scan.attributes["num_scan_inputs"].as_int()
    n_state = len(scan.inputs) - n_scan
    if n_state == 0 or any(v is None for v in scan.inputs):
        return None
    cut = _cut(body, n_state)
    if cut is None:
        return None
    first, rest, part = cut.first, cut.rest, cut.part
    nodes = list(body)
    state_in, scan_in = list(body.inputs[:n_state]), list(body.inputs[n_state:])
    outs_first = [k for k in range(n_state, len(body.outputs)) if not cut.reads.get(body.outputs[k], frozenset()) & rest]
    outs_rest = [k for k in range(n_state, len(body.outputs)) if k not in outs_first]
    # reshape-only glue of the first part that only the rest reads moves to the rest, which then scans the first
    # cell's own output (the form the fusion matches) rather than a reshaped copy of it
    kept = {body.outputs[j] for j in first} | {body.outputs[k] for k in outs_first}
    for n in reversed(nodes):
        if part[n] == "first" and n.op_type in _GLUE and all(
                o not in kept and o.uses() and all(part.get(u.node) == "rest" for u in o.uses()) for o in n.outputs):
            part[n] = "rest"

    # nodes that read no state go where they are needed (both parts: the rest gets a copy)
    needed_rest = {v for n in nodes if part[n] == "rest" for v in n.inputs if v is not None}
    needed_rest.update(body.outputs[i] for i in [*sorted(rest), *outs_rest])
    free_rest: set[oir.Node] = set()
    for n in reversed(nodes):
        if part[n] == "free" and any(o in needed_rest for o in n.outputs):
            free_rest.add(n)
            needed_rest.update(v for v in n.inputs if v is not None)
    needed_first = {v for n in nodes if part[n] == "first" or (part[n] == "free" and n not in free_rest)
                    for v in n.inputs if v is not None}
    needed_first.update(body.outputs[i] for i in [*sorted(first), *outs_first])
    free_both = {n for n in free_rest if any(o in needed_first for o in n.outputs)}

    # values of the first part that the rest reads: stacked by the first Scan, scanned by the second
    first_values = {o for n in nodes if part[n] == "first" for o in n.outputs} | {state_in[j] for j in first}
    exported = [v for v in _ordered(needed_rest, body) if v in first_values]
    used_scan_rest = [i for i, v in enumerate(scan_in) if v in needed_rest]
    if any(v.type is None for v in exported) or not (used_scan_rest or exported):
        return None

    # the rest's body: its states, the scan inputs it reads, the exported values
    remap: dict[oir.Value, oir.Value] = {}
    for v in [*(scan_in[i] for i in used_scan_rest), *exported]:
        remap[v] = oir.Value(name=fresh_name(names, f"{v.name or 'v'}/rest"), type=v.type, shape=v.shape)
    rest_nodes: list[oir.Node] = []
    for n in nodes:
        if n in free_both:
            copy_outs = [oir.Value(name=fresh_name(names, f"{o.name or 'v'}/rest"), type=o.type, shape=o.shape)
                         for o in n.outputs]
            copy = oir.Node(n.domain, n.op_type, [remap.get(v, v) if v is not None else None for v in n.inputs],
                           list(n.attributes.values()), outputs=copy_outs, name=fresh_name(names, f"{n.name}/rest"),
                           version=n.version)
            remap.update(zip(n.outputs, copy_outs))
            rest_nodes.append(inherit_meta(copy, n))
        elif part[n] == "rest" or n in free_rest:
            for i, v in enumerate(n.inputs):
                if v is not None and v in remap:
                    n.replace_input_with(i, remap[v])
            rest_nodes.append(n)
    rest_outputs = [remap.get(body.outputs[i], body.outputs[i]) for i in [*sorted(rest), *outs_rest]]
    moved = set(rest_nodes)
    first_nodes = [n for n in nodes if n not in moved]
    first_outputs = [body.outputs[i] for i in [*sorted(first), *outs_first]] + exported

    # take the body apart and build the two Scans
    body.remove(nodes, safe=False)
    body.outputs.clear()
    body.inputs.clear()
    hint = scan.name or "Scan"
    in_axes, in_dirs = scan_ints(scan, "scan_input_axes", n_scan), scan_ints(scan, "scan_input_directions", n_scan)
    old = list(scan.outputs)
    n_outs = len(old) - n_state
    out_axes, out_dirs = scan_ints(scan, "scan_output_axes", n_outs), scan_ints(scan, "scan_output_directions", n_outs)
    stacked = [oir.Value(name=fresh_name(names, f"{hint}/{v.name or 'v'}/stacked"), type=v.type) for v in exported]

    def make(label: str, graph: oir.Graph, outputs: list[oir.Value], states: list[int], scans: list[int],
             extra_in: list[oir.Value], outs: list[int], extra_out: list[oir.Value]) -> oir.Node:
        """A Scan over `graph`: the old Scan's `states` and scan inputs `scans`, then `extra_in` scanned on axis 0;
        its outputs `outs`, then `extra_out` stacked on axis 0."""
        for v in outputs:
            graph.outputs.append(distinct_output(v, graph, names, hint, scan))
        zeros_in, zeros_out = [0] * len(extra_in), [0] * len(extra_out)
        new = [oir.Value(name=fresh_name(names, f"{hint}/{label}_{i}")) for i in range(len(states) + len(outs))]
        node = oir.Node("", "Scan", [*(scan.inputs[j] for j in states), *(scan.inputs[n_state + i] for i in scans),
                                    *extra_in], [
            oir.AttrGraph("body", graph),
            oir.AttrInt64("num_scan_inputs", len(scans) + len(extra_in)),
            oir.AttrInt64s("scan_input_axes", [*(in_axes[i] for i in scans), *zeros_in]),
            oir.AttrInt64s("scan_input_directions", [*(in_dirs[i] for i in scans), *zeros_in]),
            oir.AttrInt64s("scan_output_axes", [*(out_axes[k - n_state] for k in outs), *zeros_out]),
            oir.AttrInt64s("scan_output_directions", [*(out_dirs[k - n_state] for k in outs), *zeros_out]),
        ], outputs=new + extra_out, name=fresh_name(names, f"{hint}/{label}"), version=scan.version)
        outer.insert_before(scan, inherit_meta(node, scan))
        pairs.extend(zip([old[i] for i in [*states, *outs]], new))
        return node

    pairs: list[tuple[oir.Value | None, oir.Value]] = []
    first_body = oir.Graph([*(state_in[j] for j in sorted(first)), *scan_in], [], nodes=first_nodes, name=body.name)
    make("first", first_body, first_outputs, sorted(first), list(range(n_scan)), [], outs_first, stacked)
    rest_body = oir.Graph([*(state_in[j] for j in sorted(rest)), *(remap[scan_in[i]] for i in used_scan_rest),
                          *(remap[v] for v in exported)], [], nodes=rest_nodes,
                         name=fresh_name(names, f"{body.name or hint}/rest"))
    rest_node = make("rest", rest_body, rest_outputs, sorted(rest), used_scan_rest, stacked, outs_rest, [])
    replace_node(scan, pairs, "split")
    return rest_node


def _ordered(values: set[oir.Value], body: oir.Graph) -> list[oir.Value]:
    """`values` in the body's order: inputs first, then node outputs as computed."""
    order = [*body.inputs, *(o for n in body for o in n.outputs)]
    return [v for v in order if v in values]

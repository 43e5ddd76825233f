"""Split a Scan whose body runs recurrent cells one after another into one Scan per cell, so each can be fused.

A stacked recurrent network written as one loop (a TensorIterator whose body holds two LSTMCells, the second reading
the first's new hidden state, as Model Optimizer wrote TensorFlow's MultiRNNCell) has no ONNX LSTM equivalent as a
whole, but each layer has: layer 2 at step t needs only layer 1's output at step t, never the reverse. The Scan is
cut in two (loop fission): the first Scan runs the first cell with the states it depends on and also returns, stacked
per step, every value of its part that the rest of the body reads; the second Scan reads those stacked values as scan
inputs and runs the rest. Every step computes the same values in the same order, so the results are identical; the
fusion then makes each Scan one LSTM/GRU/RNN node. Measured (scripts/bench_recurrent.py, "TI 2 stacked LSTMCells",
input 512, hidden 256, 100 steps): one Scan runs at 0.96x / 1.08x OpenVINO's time at batch 1 / 16, the two fused
LSTMs at 0.33x / 0.91x.

A state belongs to the first part when the first cell's states depend on it (through any number of iterations); a
body node belongs to it when it reads no state of the second part. Nodes that read no state at all (reshapes of the
sliced input, constants) go to whichever part uses them, to both if both do. The cut is made only where the first part
holds exactly one cell and the rest at least one; the rest is cut again while it holds several. Bodies with nested
subgraphs or initializers of their own, and Loops, are left as they are.
"""

from __future__ import annotations

import onnx_ir as ir

from ir2onnx.passes.fuse_rnn_util import all_names, distinct_output, fresh_name, replace_node
from ir2onnx.passes.loop_utils import inherit_meta, is_default_domain, loops_innermost_first, subgraphs

_CELLS = ("LSTM", "GRU", "RNN")
_GLUE = ("Identity", "Reshape", "Squeeze", "Unsqueeze")


class SplitStackedCellsPass(ir.passes.InPlacePass):
    def call(self, model: ir.Model) -> ir.passes.PassResult:
        names = all_names(model.graph)
        modified = False
        for node, body, outer in list(loops_innermost_first(model.graph)):
            rest: ir.Node | None = node
            while rest is not None and rest.op_type == "Scan":
                rest = _split(rest, rest.attributes["body"].as_graph(), outer, names)
                modified = modified or rest is not None
        return ir.passes.PassResult(model, modified=modified)


def _ints(node: ir.Node, name: str, n: int) -> list[int]:
    a = node.attributes.get(name)
    return [int(v) for v in a.as_ints()] if a is not None else [0] * n


def _split(scan: ir.Node, body: ir.Graph, outer: ir.Graph, names: set[str]) -> ir.Node | None:
    """Cut `scan` after its first cell; returns the Scan of the rest, or None when it is left as it is."""
    nodes = list(body)
    cells = [n for n in nodes if n.op_type in _CELLS and is_default_domain(n)]
    if len(cells) < 2 or len(body.initializers) or any(any(True for _ in subgraphs(n)) for n in nodes):
        return None
    n_scan = scan.attributes["num_scan_inputs"].as_int()
    n_state = len(scan.inputs) - n_scan
    if n_state == 0 or any(v is None for v in scan.inputs):
        return None
    state_in, scan_in = list(body.inputs[:n_state]), list(body.inputs[n_state:])

    # which state inputs each value reads within one iteration; which cells each value follows from
    reads: dict[ir.Value, frozenset[int]] = {v: frozenset({i}) for i, v in enumerate(state_in)}
    reads.update((v, frozenset()) for v in scan_in)
    after: dict[ir.Value, frozenset[ir.Node]] = {}
    node_reads: dict[ir.Node, frozenset[int]] = {}
    for n in nodes:
        got: set[int] = set()
        cells_before: set[ir.Node] = {n} if n in cells else set()
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

    def value_reads(v: ir.Value) -> frozenset[int]:
        return reads.get(v, frozenset())

    deps = [value_reads(body.outputs[j]) for j in range(n_state)]
    for cell in cells:  # the first cell that can run over the whole sequence before the others
        # the states it reads and those only it writes, with every state these depend on
        first = set(node_reads[cell]) | {j for j in range(n_state) if after.get(body.outputs[j]) == {cell}}
        while more := set().union(*(deps[j] for j in first)) - first:
            first |= more
        rest = set(range(n_state)) - first
        part = {n: "rest" if node_reads[n] & rest else "first" if node_reads[n] else "free" for n in nodes}
        if rest and [c for c in cells if part[c] == "first"] == [cell] and any(part[c] == "rest" for c in cells):
            break
    else:
        return None
    outs_first = [k for k in range(n_state, len(body.outputs)) if not value_reads(body.outputs[k]) & rest]
    outs_rest = [k for k in range(n_state, len(body.outputs)) if value_reads(body.outputs[k]) & rest]
    # reshape-only glue of the first part that only the rest reads moves to the rest, which then scans the first
    # cell's own output (the form the fusion matches) rather than a reshaped copy of it
    kept = {body.outputs[j] for j in first} | {body.outputs[k] for k in outs_first}
    for n in reversed(nodes):
        if part[n] == "first" and n.op_type in _GLUE and all(
                o not in kept and o.uses() and all(part.get(u.node) == "rest" for u in o.uses()) for o in n.outputs):
            part[n] = "rest"

    def in_first(n: ir.Node) -> bool:
        return part[n] == "first"

    def in_rest(n: ir.Node) -> bool:
        return part[n] == "rest"

    # nodes that read no state go where they are needed (both parts: the rest gets a copy)
    free = [n for n in nodes if part[n] == "free"]
    needed_rest: set[ir.Value] = set()
    for n in nodes:
        if in_rest(n):
            needed_rest.update(v for v in n.inputs if v is not None)
    needed_rest.update(body.outputs[j] for j in sorted(rest))
    needed_rest.update(body.outputs[k] for k in outs_rest)
    free_rest: list[ir.Node] = []
    for n in reversed(free):
        if any(o in needed_rest for o in n.outputs):
            free_rest.insert(0, n)
            needed_rest.update(v for v in n.inputs if v is not None)
    free_rest_set = set(free_rest)
    needed_first: set[ir.Value] = set()
    for n in nodes:
        if in_first(n) or (part[n] == "free" and n not in free_rest_set):
            needed_first.update(v for v in n.inputs if v is not None)
    needed_first.update(body.outputs[j] for j in sorted(first))
    needed_first.update(body.outputs[k] for k in outs_first)
    free_both = {n for n in free_rest if any(o in needed_first for o in n.outputs)}

    # values of the first part that the rest reads: stacked by the first Scan, scanned by the second
    first_values = {o for n in nodes if in_first(n) for o in n.outputs} | {state_in[j] for j in first}
    exported = [v for v in _ordered(needed_rest, body) if v in first_values]
    if any(v.type is None for v in exported):
        return None
    used_scan_rest = [i for i, v in enumerate(scan_in) if v in needed_rest]
    if not used_scan_rest and not exported:
        return None

    hint = scan.name or "Scan"
    in_axes, in_dirs = _ints(scan, "scan_input_axes", n_scan), _ints(scan, "scan_input_directions", n_scan)
    n_outs = len(body.outputs) - n_state
    out_axes, out_dirs = _ints(scan, "scan_output_axes", n_outs), _ints(scan, "scan_output_directions", n_outs)

    # the rest's body: its states, the scan inputs it reads, the exported values
    remap: dict[ir.Value, ir.Value] = {}
    rest_inputs = [state_in[j] for j in sorted(rest)]
    for i in used_scan_rest:
        v = scan_in[i]
        remap[v] = ir.Value(name=fresh_name(names, f"{v.name or 'x'}/rest"), type=v.type, shape=v.shape)
        rest_inputs.append(remap[v])
    for v in exported:
        remap[v] = ir.Value(name=fresh_name(names, f"{v.name or 'v'}/from_first"), type=v.type, shape=v.shape)
        rest_inputs.append(remap[v])
    rest_nodes: list[ir.Node] = []
    for n in nodes:
        if n in free_both:
            copy_outs = [ir.Value(name=fresh_name(names, f"{o.name or 'v'}/rest"), type=o.type, shape=o.shape)
                         for o in n.outputs]
            copy = ir.Node(n.domain, n.op_type, [remap.get(v, v) if v is not None else None for v in n.inputs],
                           list(n.attributes.values()), outputs=copy_outs, name=fresh_name(names, f"{n.name}/rest"),
                           version=n.version)
            remap.update(zip(n.outputs, copy_outs))
            rest_nodes.append(inherit_meta(copy, n))
        elif in_rest(n) or n in free_rest_set:
            for i, v in enumerate(n.inputs):
                if v is not None and v in remap:
                    n.replace_input_with(i, remap[v])
            rest_nodes.append(n)
    rest_outputs = [remap.get(body.outputs[j], body.outputs[j]) for j in sorted(rest)] + \
                   [remap.get(body.outputs[k], body.outputs[k]) for k in outs_rest]

    first_nodes = [n for n in nodes if n not in rest_nodes]
    first_inputs = [state_in[j] for j in sorted(first)] + scan_in
    first_outputs = [body.outputs[j] for j in sorted(first)] + [body.outputs[k] for k in outs_first]

    # take the body apart and build the two new ones
    body.remove(nodes, safe=False)
    body.outputs.clear()
    body.inputs.clear()
    rest_body = ir.Graph(rest_inputs, [], nodes=rest_nodes,
                         name=fresh_name(names, f"{body.name or hint}/rest"))
    first_body = ir.Graph(first_inputs, [], nodes=first_nodes, name=body.name)
    for v in rest_outputs:
        rest_body.outputs.append(distinct_output(v, rest_body, names, hint, scan))
    for v in first_outputs:
        first_body.outputs.append(distinct_output(v, first_body, names, hint, scan))
    for v in exported:
        first_body.outputs.append(distinct_output(v, first_body, names, hint, scan))

    stacked = [ir.Value(name=fresh_name(names, f"{hint}/{v.name or 'v'}/stacked"), type=v.type) for v in exported]
    first_scan_outs = [ir.Value(name=fresh_name(names, f"{hint}/first_{i}")) for i in range(len(first) + len(outs_first))]
    first_node = ir.Node("", "Scan", [scan.inputs[j] for j in sorted(first)] + list(scan.inputs[n_state:]), [
        ir.AttrGraph("body", first_body),
        ir.AttrInt64("num_scan_inputs", n_scan),
        ir.AttrInt64s("scan_input_axes", in_axes),
        ir.AttrInt64s("scan_input_directions", in_dirs),
        ir.AttrInt64s("scan_output_axes", [out_axes[k - n_state] for k in outs_first] + [0] * len(exported)),
        ir.AttrInt64s("scan_output_directions", [out_dirs[k - n_state] for k in outs_first] + [0] * len(exported)),
    ], outputs=first_scan_outs + stacked, name=fresh_name(names, f"{hint}/first"), version=scan.version)
    rest_scan_outs = [ir.Value(name=fresh_name(names, f"{hint}/rest_{i}")) for i in range(len(rest) + len(outs_rest))]
    rest_node = ir.Node("", "Scan", [scan.inputs[j] for j in sorted(rest)]
                        + [scan.inputs[n_state + i] for i in used_scan_rest] + stacked, [
        ir.AttrGraph("body", rest_body),
        ir.AttrInt64("num_scan_inputs", len(used_scan_rest) + len(exported)),
        ir.AttrInt64s("scan_input_axes", [in_axes[i] for i in used_scan_rest] + [0] * len(exported)),
        ir.AttrInt64s("scan_input_directions", [in_dirs[i] for i in used_scan_rest] + [0] * len(exported)),
        ir.AttrInt64s("scan_output_axes", [out_axes[k - n_state] for k in outs_rest]),
        ir.AttrInt64s("scan_output_directions", [out_dirs[k - n_state] for k in outs_rest]),
    ], outputs=rest_scan_outs, name=fresh_name(names, f"{hint}/rest"), version=scan.version)
    outer.insert_before(scan, [inherit_meta(first_node, scan), inherit_meta(rest_node, scan)])
    old = list(scan.outputs)
    pairs = [(old[j], first_scan_outs[i]) for i, j in enumerate(sorted(first))]
    pairs += [(old[k], first_scan_outs[len(first) + i]) for i, k in enumerate(outs_first)]
    pairs += [(old[j], rest_scan_outs[i]) for i, j in enumerate(sorted(rest))]
    pairs += [(old[k], rest_scan_outs[len(rest) + i]) for i, k in enumerate(outs_rest)]
    replace_node(scan, pairs, "split")
    return rest_node


def _ordered(values: set[ir.Value], body: ir.Graph) -> list[ir.Value]:
    """`values` in the body's order: inputs first, then node outputs as computed."""
    order = [*body.inputs, *(o for n in body for o in n.outputs)]
    return [v for v in order if v in values]

"""Split a long LSTM/GRU over time into a chain of shorter ones, so that each one's gate buffer stays in cache.

onnxruntime's CPU LSTM/GRU kernels first multiply the whole sequence by W (a [T*B, gates*H] buffer), then run the
recurrence over it. When that buffer outgrows the last-level cache the recurrence reads it back from memory at every
step. Chaining nodes over consecutive time chunks (each one's Y_h/Y_c the next one's initial_h/initial_c) computes
the same steps in the same order, bit for bit, with a buffer of about CHUNK_BYTES per node. A chain costs its Split
and Concat and a call per chunk, so a buffer of up to WHOLE_CHUNKS chunks (16 MiB, half of a 32 MiB L3) stays one
node. Measured with onnxruntime 1.32, 2 threads, input 512, hidden 256, as the ratio to OpenVINO running the same
TensorIterator network (one node / its chain of 1 MiB chunks): LSTM batch 16, buffer 6.25 MiB (T=100) 0.88-0.89 /
0.92-0.94 (two 3 MiB chunks: 0.88), 12.5 MiB (T=200) 0.90 / 0.94, batch 32 T=100 0.92 / 0.95, batch 4 T=1000
(15.6 MiB) 0.76 / 0.78, batch 1 T=1000 (3.9 MiB) 0.82 / 0.84; over 16 MiB: batch 64 T=100 (25 MiB) 0.99 / 0.98,
batch 16 T=300 (18.75 MiB) 0.95-0.97 / 0.91-0.94, T=1000 (62.5 MiB) 1.00-1.07 / 0.80-0.94 (2 and 4 MiB chunks in
between). An earlier measurement, on a host that left less of its shared L3 to the process, had the chain ahead at
batch 16 T=100 too (0.96x one node's time).

A bidirectional node becomes a forward and a reverse chain (onnxruntime runs its two directions one after the
other anyway; 0.92x at batch 1, 0.86x with chunks at batch 16).

Handled: layout 0, no sequence_lens (full-length ones are dropped before, by full_lengths.py), static sequence length
and batch for chunks; bidirectional nodes with activation_alpha/beta stay whole.
"""

from __future__ import annotations

from collections.abc import MutableSet

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_nodes, attr, input_at, is_default_domain
from ir2onnx.passes.analysis.shapes import StaticShapes
from ir2onnx.passes.analysis.values import value_dtype
from ir2onnx.passes.recurrent.gru_scan import min_batch
from ir2onnx.passes.rewrite import Emitter, all_names, replace_node

CHUNK_BYTES = 1 << 20  # the L2 cache of one core, about
WHOLE_CHUNKS = 16  # a gate buffer of up to this many chunks stays one node
MIN_STEPS = 8
_GATES = {"LSTM": 4, "GRU": 3}


class ChunkRecurrentPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        names = all_names(model.graph)
        modified = False
        for node in list(all_nodes(model.graph)):
            if node.op_type in _GATES and is_default_domain(node) and _rewritable(node):
                sizes = chunk_sizes(node)
                if sizes is not None or _bidirectional(node):
                    _split(node, sizes or [], model.graph, names)
                    modified = True
        return oir.passes.PassResult(model, modified=modified)


def _bidirectional(node: oir.Node) -> bool:
    return attr(node, "direction", "forward") == "bidirectional"


def _rewritable(node: oir.Node) -> bool:
    """Layout 0, float, no sequence_lens, per-direction attributes separable."""
    if attr(node, "layout", 0) != 0 or node.inputs[0] is None or input_at(node, 4) is not None:
        return False
    if value_dtype(node) not in (oir.DataType.FLOAT, oir.DataType.DOUBLE):
        return False
    return not (_bidirectional(node) and (attr(node, "activation_alpha") or attr(node, "activation_beta")))


def chunk_sizes(node: oir.Node) -> list[int] | None:
    """The chunk lengths `node` is split into (balanced, in time order), or None when it stays whole."""
    if not _rewritable(node):
        return None
    shape = StaticShapes()(node.inputs[0])  # fully known, or no chunks: the Split sizes must be exact
    if shape is None or len(shape) != 3:
        return None
    steps, batch = shape[0], shape[1]
    if node.op_type == "GRU" and batch >= min_batch(int(attr(node, "hidden_size"))):  # type: ignore[arg-type]
        return None  # a Scan instead (gru_scan.py runs next): its projection is one product, not a gate buffer
    dtype = value_dtype(node)
    assert dtype is not None
    step_bytes = batch * _GATES[node.op_type] * int(attr(node, "hidden_size")) * int(dtype.itemsize)  # type: ignore[arg-type]
    chunk = max(MIN_STEPS, CHUNK_BYTES // max(step_bytes, 1))
    if steps * step_bytes <= WHOLE_CHUNKS * CHUNK_BYTES or steps < 2 * chunk:
        return None
    n = -(-steps // chunk)
    return [steps // n + (i < steps % n) for i in range(n)]


def _split(node: oir.Node, sizes: list[int], root: oir.Graph, names: MutableSet[str]) -> None:
    """Rewrite `node` as one chain of nodes per direction over the time chunks `sizes` ([]: the whole sequence)."""
    em = Emitter(node, root, names)
    lstm = node.op_type == "LSTM"
    parts = em.op("Split", [node.inputs[0], em.i64(sizes)], {"axis": 0}, outputs=len(sizes)) if sizes \
        else [node.inputs[0]]
    per_dir = [node.inputs[1], node.inputs[2], input_at(node, 3), input_at(node, 5)] + \
        ([input_at(node, 6), input_at(node, 7)] if lstm else [])
    attrs = {a.name: a.value for a in node.attributes.values()}
    if _bidirectional(node):
        directions = ["forward", "reverse"]
        halves = [em.op("Split", [v, em.i64([1, 1])], {"axis": 0}, outputs=2) if v is not None else [None, None]
                  for v in per_dir]
        inputs = [[h[d] for h in halves] for d in range(2)]
        k = len(attrs.get("activations", ())) // 2  # type: ignore[arg-type]
        acts = [list(attrs["activations"])[:k], list(attrs["activations"])[k:]] if k else [None, None]  # type: ignore[call-overload]
    else:
        directions, inputs, acts = [str(attrs.get("direction", "forward"))], [per_dir], [attrs.get("activations")]
    results = [_chain(em, node.op_type, parts, ins, {**attrs, "direction": d, "activations": a})
               for d, ins, a in zip(directions, inputs, acts)]
    outs: list[oir.Value] = []
    for i in range(len(results[0])):
        vals = [r[i] for r in results]
        outs.append(vals[0] if len(vals) == 1 else em.op1("Concat", vals, {"axis": 1 if i == 0 else 0}))
    em.commit()
    replace_node(node, list(zip(node.outputs, outs)), "whole")


def _chain(em: Emitter, op: str, parts: list[oir.Value], ins: list[oir.Value | None],
           attrs: dict[str, object]) -> list[oir.Value]:
    """One direction over consecutive chunks, each starting from the last one's states: [Y, Y_h(, Y_c)]."""
    lstm = op == "LSTM"
    w, r, b, *states = ins
    peephole = states.pop() if lstm else None
    attrs = {k: v for k, v in attrs.items() if v is not None}
    order = range(len(parts) - 1, -1, -1) if attrs["direction"] == "reverse" else range(len(parts))
    ys: dict[int, oir.Value] = {}
    for i in order:
        step_ins = [parts[i], w, r, b, None, *states] + ([peephole] if peephole is not None else [])
        outs = em.op(op, step_ins, attrs, outputs=3 if lstm else 2)
        ys[i] = outs[0]
        states = outs[1:]
    y = ys[0] if len(parts) == 1 else em.op1("Concat", [ys[i] for i in range(len(parts))], {"axis": 0})
    return [y, *states]

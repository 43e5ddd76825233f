"""Split a long LSTM/GRU over time into a chain of shorter ones, so that each one's gate buffer stays in cache.

onnxruntime's CPU LSTM/GRU kernels first multiply the whole sequence by W (a [T*B, gates*H] buffer), then run the
recurrence over it. When that buffer outgrows the core's cache the recurrence reads it back from memory at every
step. Chaining nodes over consecutive time chunks (each one's Y_h/Y_c the next one's initial_h/initial_c) computes
the same steps in the same order, bit for bit, with a buffer of about CHUNK_BYTES per node. Measured with
onnxruntime 1.32, 2 threads, input 512, hidden 256 (scripts/bench_recurrent.py; split/concat included): LSTM batch
16: T=100 0.96x, T=300 0.85x, T=1000 0.79x the time of one node; batch 64, T=100: 0.83x; GRU batch 16, T=1000:
0.88x. Short or narrow sequences (batch 1 and 4 at T=100, where chunks cost 4-15%) are left whole: a node is split
only when its buffer exceeds two chunks.

Handled: layout 0, forward or reverse, no sequence_lens, static sequence length and batch.
"""

from __future__ import annotations

import onnx_ir as ir

from ir2onnx.passes.fuse_rnn_util import Emitter, all_names, attr, shape_of, value_dtype
from ir2onnx.passes.loop_utils import is_default_domain

CHUNK_BYTES = 1 << 20  # the L2 cache of one core, about
MIN_STEPS = 8
_GATES = {"LSTM": 4, "GRU": 3}


class ChunkRecurrentPass(ir.passes.InPlacePass):
    def call(self, model: ir.Model) -> ir.passes.PassResult:
        names = all_names(model.graph)
        modified = False
        for node in list(ir.traversal.RecursiveGraphIterator(model.graph)):
            if node.op_type in _GATES and is_default_domain(node):
                sizes = chunk_sizes(node)
                if sizes is not None:
                    _split(node, sizes, model.graph, names)
                    modified = True
        return ir.passes.PassResult(model, modified=modified)


def _input(node: ir.Node, i: int) -> ir.Value | None:
    return node.inputs[i] if len(node.inputs) > i else None


def chunk_sizes(node: ir.Node) -> list[int] | None:
    """The chunk lengths `node` is split into (balanced, in time order), or None when it stays whole."""
    if attr(node, "layout", 0) != 0 or attr(node, "direction", "forward") not in ("forward", "reverse"):
        return None
    x = node.inputs[0]
    dtype = value_dtype(node)
    if x is None or _input(node, 4) is not None or dtype not in (ir.DataType.FLOAT, ir.DataType.DOUBLE):
        return None
    shape = shape_of(x)
    if shape is None or len(shape) != 3 or shape[0] is None or shape[1] is None:
        return None
    steps, batch = shape[0], shape[1]
    step_bytes = batch * _GATES[node.op_type] * int(attr(node, "hidden_size")) * int(dtype.itemsize)  # type: ignore[arg-type]
    chunk = max(MIN_STEPS, CHUNK_BYTES // max(step_bytes, 1))
    if steps < 2 * chunk:
        return None
    n = -(-steps // chunk)
    return [steps // n + (i < steps % n) for i in range(n)]


def _split(node: ir.Node, sizes: list[int], root: ir.Graph, names: set[str]) -> None:
    em = Emitter(node, root, names)
    lstm = node.op_type == "LSTM"
    parts = em.op("Split", [node.inputs[0], em.i64(sizes)], {"axis": 0}, outputs=len(sizes))
    y = node.outputs[0]
    want_y = bool(y.uses()) or y.is_graph_output()
    states = [_input(node, 5)] + ([_input(node, 6)] if lstm else [])
    order = range(len(sizes) - 1, -1, -1) if attr(node, "direction", "forward") == "reverse" else range(len(sizes))
    ys: dict[int, ir.Value] = {}
    for i in order:
        ins = [parts[i], *node.inputs[1:4], None, *states]
        if lstm and _input(node, 7) is not None:
            ins.append(node.inputs[7])
        outs = em.op(node.op_type, ins, {a.name: a for a in node.attributes.values()}, outputs=3 if lstm else 2)
        ys[i] = outs[0]
        states = outs[1:]
    if want_y:
        concat = em.op1("Concat", [ys[i] for i in range(len(sizes))], {"axis": 0})
    em.commit()
    replacements = list(zip(node.outputs[1:], states))
    if want_y:
        replacements.insert(0, (y, concat))
    for old, new in replacements:
        new.type, new.shape = old.type, old.shape
        if old.is_graph_output():
            name, old.name = old.name, f"{old.name}/whole"
            new.name = name
        old.replace_all_uses_with(new, replace_graph_outputs=True)
    for i in range(len(node.inputs)):
        node.replace_input_with(i, None)
    node.graph.remove(node)  # type: ignore[union-attr]

"""At larger batches, GRU nodes as a Scan over Gemm + gate activations, the input projection done for all steps.

onnxruntime's CPU GRU kernel re-packs the recurrent weights at every step (its two Gemm calls per step take R
transposed and unpacked), runs them on the thread pool and then computes the gates of every batch row on one
thread: with two threads its recurrence is slower than with one. A Scan whose body is Gemm(h, R_zr^T, x_t W_zr^T + b)
-> f, Gemm(h, R_h^T, Rb_h) and the elementwise gate arithmetic uses prepacked weights and multithreaded Gemms, but
pays onnxruntime's per-node cost for its ten nodes at every step. Measured with onnxruntime 1.32, 2 threads, 100 steps,
the Scan against the GRU node with its weights prepacked (_branch_weights; tenth percentiles of 100 runs taken in
turn): batch 16 0.96-0.99x at hidden 256 and 512, 1.11x at hidden 128; batch 32 at hidden 128 0.91x; below batch 16
the node is faster (hidden 256: batch 2 1.75x, batch 8 1.13x; hidden 512: batch 2 1.14x, batch 8 1.01x); earlier
measurements: batch 32 0.79x and batch 64 0.85x at hidden 256, batch 64 0.78x at hidden 64. So a node is rewritten
when its batch is at least MIN_BATCH and batch x hidden at least MIN_ROW_ELEMENTS. On one thread the Scan is
0.90-1.00x.

A batch known at conversion time decides once; a batch known only at run time (Keras and PyTorch models) gets an If
on it, the Scan form in its then-branch and the GRU node in its else-branch. The weight reshaping (Squeeze, Slice,
Transpose of W, R, B) is written as nodes over the node's own inputs, inside the branch, so that the file holds
the weights once; onnxruntime folds them at load and prepacks the results (folded outside the If, the branch's
Gemms were measured unpacked: 1.05x instead of 0.91x). The If is marked (markers.py): `ir2onnx check` runs the
model with each branch forced, whatever batch its inputs have.

Handled: layout 0, forward or reverse, no sequence_lens, float, any activations ONNX has as ops with their
parameters, clip, linear_before_reset 0 or 1, with or without bias and initial state. The result equals the GRU's
up to float rounding (h' = n + z (h - n) for (1 - z) n + z h; the two z/r biases are added once, to the projection).
"""

from __future__ import annotations

from collections.abc import MutableSet

import numpy as np
import onnx_ir as oir

from ir2onnx.markers import EQUIVALENT_BRANCHES
from ir2onnx.passes.analysis.graph import all_nodes, attr, input_at, is_default_domain
from ir2onnx.passes.analysis.shapes import StaticShapes
from ir2onnx.passes.analysis.values import const_array, const_ints, shape_of, value_dtype
from ir2onnx.passes.recurrent.cells import ACTIVATIONS, Act
from ir2onnx.passes.rewrite import Emitter, Subgraph, all_names, redirect, replace_node

MIN_BATCH = 16
MIN_ROW_ELEMENTS = 4096


class GRUAsScanPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        names = all_names(model.graph)
        modified = False
        for node in list(all_nodes(model.graph)):
            if node.op_type == "GRU" and is_default_domain(node) and _activations(node) is not None \
                    and _supported(node):
                modified |= _rewrite(node, model.graph, names)
        return oir.passes.PassResult(model, modified=modified)


def _supported(node: oir.Node) -> bool:
    if attr(node, "layout", 0) != 0 or attr(node, "direction", "forward") not in ("forward", "reverse"):
        return False
    if input_at(node, 4) is not None or None in node.inputs[:3] or attr(node, "hidden_size") is None:
        return False
    return value_dtype(node) == oir.DataType.FLOAT


def _activations(node: oir.Node) -> list[Act] | None:
    """The node's f and g with their parameters (activation_alpha / activation_beta taken one entry per parameter,
    in order, as onnxruntime reads them), or None for activations ONNX has no op for (Affine, ScaledTanh)."""
    names = attr(node, "activations") or ["Sigmoid", "Tanh"]
    alpha = list(attr(node, "activation_alpha") or [])  # type: ignore[call-overload]
    beta = list(attr(node, "activation_beta") or [])  # type: ignore[call-overload]
    canonical = {k.lower(): k for k in ACTIVATIONS}
    acts: list[Act] = []
    for name in names:  # type: ignore[union-attr]
        op = canonical.get(str(name).lower())
        if op is None:
            return None
        params = []
        for (pname, default), source in zip(ACTIVATIONS[op], (alpha, beta)):
            params.append(float(source.pop(0)) if source else default)
        acts.append((op, tuple(params)))
    return acts if len(acts) == 2 else None


def min_batch(hidden: int) -> int:
    """The smallest batch at which a GRU of `hidden` units runs as a Scan."""
    return max(MIN_BATCH, -(-MIN_ROW_ELEMENTS // hidden))


def _rewrite(node: oir.Node, root: oir.Graph, names: MutableSet[str]) -> bool:
    x = node.inputs[0]
    assert x is not None
    hidden = int(attr(node, "hidden_size"))  # type: ignore[arg-type]
    shape = StaticShapes()(x) or shape_of(x)
    batch = shape[1] if shape is not None and len(shape) == 3 else None
    threshold = min_batch(hidden)
    if (batch is not None and batch < threshold) or (shape is not None and shape[0] == 1):
        return False  # small, or one step (a cell inside a loop that was not fused): a Scan would only add work
    em = Emitter(node, root, names)
    mover = _sequence_mover(node.outputs[0])
    outputs = [v for v in node.outputs if v.uses() or v.is_graph_output()]
    if mover:  # the mover's result stands for Y
        outputs = [mover[-1].outputs[0] if v is node.outputs[0] else v for v in outputs]
    if batch is not None:
        replacements = _scan_form(em, node, em, mover)
    else:
        then_b = Subgraph(em)
        then_outs = dict(_scan_form(em, node, then_b, mover))
        else_b = Subgraph(em)
        gru = else_b.add(oir.Node("", "GRU", _branch_weights(node, else_b, em), list(node.attributes.values()),
                                 num_outputs=len(node.outputs), name=em.fresh("GRU")))
        else_outs = dict(zip(node.outputs, gru.outputs))
        if mover:
            else_outs[mover[-1].outputs[0]] = _moved(else_b, em, gru.outputs[0], squeezed=False)
        rows = em.op1("Shape", [x], {"start": 1, "end": 2})
        cond = em.op1("GreaterOrEqual", [rows, em.i64([threshold])])
        then_graph = then_b.build([then_outs[old] for old in outputs], hint="then")
        else_graph = else_b.build([else_outs[old] for old in outputs], hint="else")
        results = em.op("If", [cond], {"then_branch": then_graph, "else_branch": else_graph}, outputs=len(outputs))
        em.nodes[-1].metadata_props[EQUIVALENT_BRANCHES] = "batch"  # the check runs both (markers.py)
        replacements = list(zip(outputs, results))
    em.commit()
    redirect(replacements, "gru")
    for n in reversed(mover):
        replace_node(n, [], "gru")
    replace_node(node, [], "gru")
    return True


def _branch_weights(node: oir.Node, branch: Emitter, em: Emitter) -> list[oir.Value | None]:
    """The GRU's inputs for its branch, constant W and R through a Reshape to their own shape: onnxruntime folds that
    into an initializer of the branch (or of the empty-input If's branch inside it, empty_inputs.py), which the GRU
    reads at most one level up and so prepacks. Read from the main graph two If levels up, they were not prepacked:
    1.1x the time at batch 1 (40/256), 1.3x at batch 8 (128/128)."""
    inputs = list(node.inputs)
    for k in (1, 2):
        c = const_array(inputs[k]) if inputs[k] is not None else None
        if c is not None:
            inputs[k] = branch.op1("Reshape", [inputs[k], em.i64(list(c.shape))])
    return inputs


def _sequence_mover(y: oir.Value) -> list[oir.Node]:
    """The Squeeze of the direction axis and the Transpose to [B, T, H] that alone read the one-direction Y
    [T, 1, B, H] (rnn.py's form for a batch-first sequence), or []. Replayed on the Scan's [T, B, H] and in the GRU's
    branch, the Transpose writes the If's output: a branch output that is a view (the Unsqueeze putting the direction
    axis back) is a copy in onnxruntime, 0.3 ms of 11 for a GRU 40/256 at batch 16."""
    uses = y.uses()
    if y.is_graph_output() or len(uses) != 1:
        return []
    squeeze = uses[0].node
    if squeeze.op_type != "Squeeze" or not is_default_domain(squeeze) or squeeze.graph is not y.graph:
        return []
    axes = const_ints(input_at(squeeze, 1)) if len(squeeze.inputs) > 1 else list(attr(squeeze, "axes") or [])  # type: ignore[call-overload]
    out = squeeze.outputs[0]
    if axes not in ([1], [-3]) or out.is_graph_output() or len(out.uses()) != 1:
        return []
    transpose = out.uses()[0].node
    if transpose.op_type != "Transpose" or not is_default_domain(transpose) or transpose.graph is not y.graph \
            or list(attr(transpose, "perm") or []) != [1, 0, 2]:  # type: ignore[call-overload]
        return []
    return [squeeze, transpose]


def _moved(out: Emitter, em: Emitter, y: oir.Value, *, squeezed: bool) -> oir.Value:
    """`y` [T, B, H] (`squeezed`) or [T, 1, B, H] as [B, T, H]."""
    if not squeezed:
        y = out.op1("Squeeze", [y, em.i64([1])])
    return out.op1("Transpose", [y], {"perm": [1, 0, 2]})


def _scan_form(em: Emitter, node: oir.Node, out: Emitter, mover: list[oir.Node]) -> list[tuple[oir.Value, oir.Value]]:
    """The GRU `node` as a Scan, its nodes added to `out` (constants to the main graph through `em`): pairs (old
    output, new value); Y's `mover` (_sequence_mover) replayed on the Scan's output, its result standing for it."""
    x, w, r = node.inputs[0], node.inputs[1], node.inputs[2]
    b, h0 = input_at(node, 3), input_at(node, 5)
    assert x is not None and w is not None and r is not None
    hidden = int(attr(node, "hidden_size"))  # type: ignore[arg-type]
    (f, f_params), (g, g_params) = _activations(node)  # type: ignore[misc]
    clip = attr(node, "clip")
    before_reset = bool(attr(node, "linear_before_reset", 0))
    reverse = attr(node, "direction", "forward") == "reverse"

    def rows(v: oir.Value, start: int, end: int) -> oir.Value:
        return out.op1("Slice", [v, em.i64([start * hidden]), em.i64([end * hidden]), em.i64([0])])

    def transposed(v: oir.Value, start: int, end: int) -> oir.Value:
        return out.op1("Transpose", [rows(v, start, end)], {"perm": [1, 0]})

    def below(v: oir.Value, row: oir.Value) -> oir.Value:
        return out.op1("Concat", [v, out.op1("Unsqueeze", [row, em.i64([0])])], {"axis": 0})

    w2, r2 = out.op1("Squeeze", [w, em.i64([0])]), out.op1("Squeeze", [r, em.i64([0])])
    w_zr, w_h, x_w, rb_h = transposed(w2, 0, 2), transposed(w2, 2, 3), x, None  # [I, 2H], [I, H]
    if b is not None:  # the biases as one more row of the weights, read by a column of ones appended to x: no Add
        # over [T, B, 3H] after the MatMuls (measured 2-5% of the GRU at input 40 or 128 and batch 16, 0 at 512)
        b2 = out.op1("Squeeze", [b, em.i64([0])])
        wb_h, rb_h = rows(b2, 2, 3), rows(b2, 5, 6)
        w_zr = below(w_zr, out.op1("Add", [rows(b2, 0, 2), rows(b2, 3, 5)]))
        w_h = below(w_h, wb_h if before_reset else out.op1("Add", [wb_h, rb_h]))
        column = out.op1("Concat", [out.op1("Shape", [x], {"start": 0, "end": 2}), em.i64([1])], {"axis": 0})
        ones = out.op1("ConstantOfShape", [column], {"value": oir.tensor(np.ones(1, np.float32))})
        x_w = out.op1("Concat", [x, ones], {"axis": 2})
    x_zr, x_h = out.op1("MatMul", [x_w, w_zr]), out.op1("MatMul", [x_w, w_h])  # [T, B, 2H], [T, B, H]
    if h0 is not None:
        h = out.op1("Squeeze", [h0, em.i64([0])])
    else:  # zeros [B, H]
        batch = out.op1("Shape", [x], {"start": 1, "end": 2})
        h = out.op1("ConstantOfShape", [out.op1("Concat", [batch, em.i64([hidden])], {"axis": 0})],
                    {"value": oir.tensor(np.zeros(1, np.float32))})
    rt_zr, rt_h = transposed(r2, 0, 2), transposed(r2, 2, 3)

    body = Subgraph(em)
    h_in, xzr_in, xh_in = (body.value(n, oir.DataType.FLOAT) for n in ("h", "x_zr", "x_h"))

    def activate(v: oir.Value, op: str, params: tuple[float, ...]) -> oir.Value:
        if clip is not None:
            v = body.op1("Clip", [v, em.const(np.array(-clip, np.float32), "clip_min"),  # type: ignore[operator]
                                  em.const(np.array(clip, np.float32), "clip_max")])
        names = [p for p, _ in ACTIVATIONS[op]]
        return body.op1(op, [v], dict(zip(names, params)))

    zr = activate(body.op1("Gemm", [h_in, rt_zr, xzr_in]), f, f_params)
    z, reset = body.op("Split", [zr, em.i64([hidden, hidden])], {"axis": 1}, outputs=2)
    if before_reset:  # x W_h + Wb_h + r (h R_h + Rb_h)
        h_lin = body.op1("Gemm", [h_in, rt_h] + ([rb_h] if rb_h is not None else []))
        pre = body.op1("Add", [xh_in, body.op1("Mul", [reset, h_lin])])
    else:  # x W_h + Wb_h + Rb_h + (r h) R_h
        pre = body.op1("Gemm", [body.op1("Mul", [reset, h_in]), rt_h, xh_in])
    n = activate(pre, g, g_params)
    h_new = body.op1("Add", [n, body.op1("Mul", [z, body.op1("Sub", [h_in, n])])])
    y, y_h = node.outputs[0], node.outputs[1] if len(node.outputs) > 1 else None
    seq = y is not None and bool(y.uses() or y.is_graph_output())
    body_outs = [h_new] + ([body.op1("Identity", [h_new])] if seq else [])  # a value listed once (onnxruntime)
    attrs: dict[str, object] = {"body": body.build(body_outs, [h_in, xzr_in, xh_in]), "num_scan_inputs": 2}
    if reverse:
        attrs.update(scan_input_directions=[1, 1], scan_output_directions=[1] if seq else [])
    scan = out.op("Scan", [h, x_zr, x_h], attrs, outputs=len(body_outs))
    pairs = [(y_h, out.op1("Unsqueeze", [scan[0], em.i64([0])]))] if y_h is not None else []
    if seq and mover:
        pairs.append((mover[-1].outputs[0], _moved(out, em, scan[1], squeezed=True)))
    elif seq:
        pairs.append((y, out.op1("Unsqueeze", [scan[1], em.i64([1])])))
    return [(old, new) for old, new in pairs if old is not None]

"""Recognising one recurrent cell step in a loop body: a one-step ONNX LSTM/GRU/RNN node (what the translation of
LSTMCell/GRUCell/RNNCell gives, gate orders and biases already in ONNX's layout), or the cell spelled out with
MatMul/Add/Split/Slice and activations (TensorFlow's and PyTorch's form), matched exactly against ONNX's equations:

    LSTM  i, f, o = f(x Wi + h Ri + bi, ...), g = g(x Wg + h Rg + bg), c' = f c + i g, h' = o h(c')
    GRU   z, r = f(...), n = g(x Wn + bn + r (h Rn + rbn))  (linear_before_reset)
                 or g(x Wn + (r h) Rn + bn), h' = z h + (1 - z) n
    RNN   h' = f(x W + h R + b)

f, g, h are activations ONNX's recurrent ops take (usually sigmoid, tanh, tanh: Keras's recurrent_activation and
activation), one op each with its parameters (HardSigmoid's alpha and beta, LeakyRelu's alpha...).

The pre-activations are read as linear forms of x and h (sums of MatMuls by constants and constant biases, sliced
into gates by Split or Slice on the last axis), so gate order and the place of the biases do not matter.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import NoMatch, attr, producer
from ir2onnx.passes.analysis.shapes import StaticShapes
from ir2onnx.passes.analysis.values import const_array, shape_of, view_root

_STEP_OPS = ("LSTM", "GRU", "RNN")
_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


@dataclass
class Cell:
    """One step of a recurrent cell in ONNX's terms (W, R, B with num_directions 1)."""

    op: str
    hidden: int
    w: np.ndarray
    r: np.ndarray
    b: np.ndarray
    attrs: dict[str, object]
    x: oir.Value  # the body value the cell reads as its input
    x_rank: int  # 3: [1, batch, input] (a one-step node), 2: [batch, input]
    h_in: oir.Value  # the value read as the previous hidden state ([1, batch, hidden] or [batch, hidden])
    c_in: oir.Value | None
    state_rank: int
    # body values equal to the new hidden (cell) state, with their form: "seq" [1, 1, B, H], "3" [1, B, H], "2" [B, H]
    h_out: dict[oir.Value, str] = field(default_factory=dict)
    c_out: dict[oir.Value, str] = field(default_factory=dict)
    nodes: list[oir.Node] = field(default_factory=list)


def _rank(v: oir.Value | None) -> int | None:
    s = shape_of(v)
    return None if s is None else len(s)


def _operands(n: oir.Node) -> tuple[tuple[oir.Value | None, oir.Value | None], ...]:
    """A commutative node's two inputs in both orders: each tried in either role (onnxscript's `commute`)."""
    a, b = n.inputs[0], n.inputs[1]
    return (a, b), (b, a)


# ---- one-step ONNX node


def step_node_cell(body: oir.Graph) -> Cell:
    nodes = [n for n in body if n.op_type in _STEP_OPS and n.domain in ("", "ai.onnx")]
    if len(nodes) != 1:
        raise NoMatch(f"{len(nodes)} LSTM/GRU/RNN nodes in the body")
    n = nodes[0]
    op = n.op_type
    ins = list(n.inputs) + [None] * (8 - len(n.inputs))
    if attr(n, "layout", 0) != 0:
        raise NoMatch("batch-major layout")
    if attr(n, "direction", "forward") not in ("forward", "reverse"):
        raise NoMatch("a bidirectional node is not one step of one cell")
    if ins[4] is not None:
        raise NoMatch("the step has sequence lengths")
    if op == "LSTM" and ins[7] is not None:
        raise NoMatch("the LSTM has peepholes")
    if ins[5] is None or (op == "LSTM" and ins[6] is None):
        raise NoMatch("the step has no initial state input")
    x = ins[0]
    xs = shape_of(x)
    if xs is None or len(xs) != 3 or xs[0] != 1:
        raise NoMatch("the step's input is not one time step")
    w, r = const_array(ins[1]), const_array(ins[2])
    if w is None or r is None:
        raise NoMatch("the step's weights are not constant")
    hidden = int(attr(n, "hidden_size", r.shape[-1]))  # type: ignore[arg-type]
    gates = _GATES[op]
    b = const_array(ins[3]) if ins[3] is not None else np.zeros((1, 2 * gates * hidden), w.dtype)
    if b is None:
        raise NoMatch("the step's bias is not constant")
    keep = ("activations", "activation_alpha", "activation_beta", "clip", "input_forget", "linear_before_reset")
    attrs = {k: n.attributes[k].value for k in keep if k in n.attributes}
    cell = Cell(op, hidden, w, r, b, attrs, x, 3, ins[5], ins[6] if op == "LSTM" else None, 3, nodes=[n])  # type: ignore[arg-type]
    outs = list(n.outputs)
    cell.h_out[outs[0]] = "seq"
    if len(outs) > 1:
        cell.h_out[outs[1]] = "3"
    if op == "LSTM" and len(outs) > 2:
        cell.c_out[outs[2]] = "3"
    return cell


# ---- spelled-out cells


@dataclass
class Linear:
    """sum of MatMul(operand, W) over keys ("x", "h", "rh") plus a bias; K columns."""

    parts: dict[str, tuple[oir.Value, np.ndarray]]
    bias: np.ndarray  # broadcast over K

    @property
    def width(self) -> int | None:
        for _, m in self.parts.values():
            return int(m.shape[1])
        return int(self.bias.size) if self.bias.size > 1 else None

    def __add__(self, o: Linear) -> Linear:
        parts = dict(self.parts)
        for k, (a, m) in o.parts.items():
            if k in parts:
                if parts[k][0] is not a or parts[k][1].shape != m.shape:
                    raise NoMatch(f"two different {k} operands in one gate")
                parts[k] = (a, parts[k][1] + m)
            else:
                parts[k] = (a, m)
        if self.width is not None and o.width is not None and self.width != o.width:
            raise NoMatch("adding gate blocks of different widths")
        try:
            return Linear(parts, self.bias + o.bias)
        except ValueError:
            raise NoMatch("biases of different widths") from None

    def columns(self, start: int, stop: int) -> Linear:
        parts = {k: (a, m[:, start:stop]) for k, (a, m) in self.parts.items()}
        bias = self.bias if self.bias.size == 1 else self.bias[start:stop]
        return Linear(parts, bias)

    def dense_bias(self, width: int) -> np.ndarray:
        return np.broadcast_to(self.bias, (width,)).astype(self.bias.dtype)


class _Reader:
    """Parses pre-activations into Linear forms; `classify` names a MatMul operand ("x", "h", "rh") or rejects it."""

    def __init__(self, x_root: oir.Value, h_root: oir.Value) -> None:
        self.x_root = x_root
        self.h_root = h_root
        self.reset: oir.Value | None = None  # the reset gate seen in a (r * h) operand
        self.nodes: list[oir.Node] = []

    def classify(self, a: oir.Value) -> str:
        root, _ = view_root(a)
        if root is self.x_root:
            return "x"
        if root is self.h_root:
            return "h"
        m = producer(a, "Mul")
        if m is not None:
            for r, hv in _operands(m):
                if _act(r) is not None and hv is not None and view_root(hv)[0] is self.h_root:
                    if _rank(hv) != 2:
                        raise NoMatch("the reset-gated state is not [batch, hidden]")
                    if self.reset is not None and self.reset is not r:
                        raise NoMatch("two reset gates")
                    self.reset = r
                    self.nodes.append(m)
                    return "rh"
        raise NoMatch(f"a MatMul reads {a.name}, neither the step input nor the state")

    def linear(self, v: oir.Value | None) -> Linear:
        if v is None:
            raise NoMatch("missing operand")
        c = const_array(v)
        if c is not None:
            if c.ndim > 2 or (c.ndim == 2 and c.shape[0] != 1) or c.dtype.kind != "f":
                raise NoMatch("a constant term that is not a bias over the gate columns")
            return Linear({}, c.reshape(-1))
        n = producer(v, "MatMul", "Add", "Split", "Slice", "Reshape")
        if n is None:
            raise NoMatch(f"{v.name} is not a MatMul/Add/Split/Slice of the input and state")
        if n.op_type == "Reshape":  # a batch of one flattened, [1, N] -> [N] (TensorFlow Lite at batch 1): the
            # broadcasting Add that reads it gives the same values as the [1, N] term itself
            shapes = StaticShapes()
            src = shapes(n.inputs[0])
            if src is None or len(src) != 2 or src[0] != 1 or shapes(v) != (src[1],):
                raise NoMatch(f"{v.name} reshapes more than a batch of one")
            self.nodes.append(n)
            return self.linear(n.inputs[0])
        self.nodes.append(n)
        if n.op_type == "MatMul":
            a, w = n.inputs
            m = const_array(w)
            if a is None or m is None or m.ndim != 2:
                raise NoMatch("a MatMul with non-constant or non-matrix weights")
            if _rank(a) != 2:
                raise NoMatch("a MatMul operand that is not [batch, features]")
            cat = producer(a, "Concat")
            if cat is not None and int(attr(cat, "axis", 0)) in (-1, 1):  # type: ignore[arg-type]
                return self._concat_matmul(cat, m)
            return Linear({self.classify(a): (a, m)}, np.zeros(1, m.dtype))
        if n.op_type == "Add":
            return self.linear(n.inputs[0]) + self.linear(n.inputs[1])
        return self.columns(n, v, self.linear(n.inputs[0]))

    def pre(self, p: Pre) -> Linear:
        """The linear form of a pre-activation (of a gate sliced after its activation: that slice of it)."""
        if isinstance(p, tuple):
            src, n, v = p
            return self.columns(n, v, self.linear(src))
        return self.linear(p)

    def columns(self, n: oir.Node, v: oir.Value, src: Linear) -> Linear:
        """The columns of `src` that `v`, an output of the Split/Slice `n` of it, holds."""
        width = src.width
        if width is None:
            raise NoMatch("splitting a bias alone")
        if n.op_type == "Split":
            if int(attr(n, "axis", 0)) not in (-1, 1):  # type: ignore[arg-type]
                raise NoMatch("split on the batch axis")
            k = len(n.outputs)
            sizes = const_array(n.inputs[1]) if len(n.inputs) > 1 and n.inputs[1] is not None else None
            if sizes is None:
                if width % k:
                    raise NoMatch("uneven split")
                sizes = np.full(k, width // k)
            ends = np.cumsum(sizes)
            i = n.outputs.index(v)
            return src.columns(int(ends[i] - sizes[i]), int(ends[i]))
        starts, ends = const_array(n.inputs[1]), const_array(n.inputs[2])
        axes = const_array(n.inputs[3]) if len(n.inputs) > 3 and n.inputs[3] is not None else None
        steps = const_array(n.inputs[4]) if len(n.inputs) > 4 and n.inputs[4] is not None else None
        if starts is None or ends is None:
            raise NoMatch("a slice with run-time bounds")
        axes = np.arange(starts.size) if axes is None else axes
        steps = np.ones(starts.size, np.int64) if steps is None else steps
        cols = None
        for a, b, e, st in zip(axes, starts, ends, steps):
            if int(st) != 1:
                raise NoMatch("a strided slice")
            if int(a) in (-1, 1):
                cols = slice(int(b), int(e)).indices(width)[:2]
            elif not (int(a) in (0, -2) and int(b) == 0 and int(e) >= 2**31 - 1):
                raise NoMatch("a slice over the batch")
        if cols is None:
            return src
        s, e = cols
        return src.columns(s, e)


    def _concat_matmul(self, cat: oir.Node, m: np.ndarray) -> Linear:
        """[a1, a2, ...] @ W (TensorFlow 1's cells multiply [x, h] by one matrix) = a1 @ W[rows 1] + a2 @ W[rows 2]..."""
        self.nodes.append(cat)
        widths: list[int | None] = []
        for part in cat.inputs:
            shape = shape_of(part)
            if part is None or shape is None or len(shape) != 2:
                raise NoMatch("a concatenated MatMul operand that is not [batch, features]")
            widths.append(shape[1] if isinstance(shape[1], int) else None)
        known = sum(w for w in widths if w is not None)
        if widths.count(None) > 1 or known > m.shape[0] or (None not in widths and known != m.shape[0]):
            raise NoMatch("concatenated MatMul operands of unknown widths")
        # one operand of unknown width (TensorFlow 1's step read from a TensorArray of run-time shape) has the rows left
        total, row = Linear({}, np.zeros(1, m.dtype)), 0
        for part, w in zip(cat.inputs, widths):
            rows = m.shape[0] - known if w is None else w
            total = total + Linear({self.classify(part): (part, m[row:row + rows])}, np.zeros(1, m.dtype))  # type: ignore[arg-type]
            row += rows
        return total


# The activations an ONNX LSTM/GRU/RNN applies, with their parameters' attribute names and ONNX defaults, in the
# order the node's activation_alpha / activation_beta lists take them (onnxruntime reads one entry per parameter).
ACTIVATIONS: dict[str, tuple[tuple[str, float], ...]] = {
    "Sigmoid": (), "Tanh": (), "Relu": (), "Softsign": (), "Softplus": (),
    "HardSigmoid": (("alpha", 0.2), ("beta", 0.5)), "LeakyRelu": (("alpha", 0.01),), "Elu": (("alpha", 1.0),),
    "ThresholdedRelu": (("alpha", 1.0),),
}
Act = tuple[str, tuple[float, ...]]  # an activation op and its (alpha[, beta])
# a pre-activation: a value, or (a value, the Split/Slice node, its output) when the gate is a slice taken after the
# activation (TensorFlow 1's GRUCell: r, u = split(sigmoid(.))), the same as activating the slice
Pre = oir.Value | tuple[oir.Value, oir.Node, oir.Value]


def _act(v: oir.Value | None) -> tuple[Act, Pre] | None:
    """(the activation, its input) when `v` is the output of an activation ONNX's recurrent ops can apply, or a
    slice of the gate columns of one."""
    n = producer(v, *ACTIVATIONS)
    if n is None:
        spelled = _hard_sigmoid(v)
        if spelled is not None:
            return spelled
        sl = producer(v, "Split", "Slice")
        inner = _act(sl.inputs[0]) if sl is not None else None
        if sl is None or inner is None or isinstance(inner[1], tuple):
            return None
        return inner[0], (inner[1], sl, v)  # type: ignore[return-value]
    if n.inputs[0] is None:
        return None
    params = tuple(float(attr(n, name, default)) for name, default in ACTIVATIONS[n.op_type])  # type: ignore[arg-type]
    return (n.op_type, params), n.inputs[0]


def _hard_sigmoid(v: oir.Value | None) -> tuple[Act, oir.Value] | None:
    """(HardSigmoid with its alpha and beta, its input) when `v` is clip(x * alpha + beta, 0, 1): Keras 2's
    hard_sigmoid (the default recurrent activation of Keras before 2.3) as its TensorFlow graph spells it."""
    add = producer(_unclipped(v), "Add")
    for product, offset in ((add.inputs, add.inputs[::-1]) if add is not None else ()):
        mul, beta = producer(product, "Mul"), _scalar(offset)
        for x, scale in ((mul.inputs, mul.inputs[::-1]) if mul is not None and beta is not None else ()):
            alpha = _scalar(scale)
            if alpha is not None and x is not None and const_array(x) is None:
                return ("HardSigmoid", (alpha, beta)), x  # type: ignore[return-value]
    return None


def _unclipped(v: oir.Value | None) -> oir.Value | None:
    """x where `v` is x clipped to [0, 1]: Clip(x, 0, 1), Max(Min(x, 1), 0) or Min(Max(x, 0), 1) (OpenVINO keeps
    Minimum and Maximum where the bound 1 is also read by 1 - z)."""
    clip = producer(v, "Clip")
    if clip is not None:
        return clip.inputs[0] if len(clip.inputs) == 3 and [_scalar(b) for b in clip.inputs[1:]] == [0.0, 1.0] \
            else None
    for outer, inner, bounds in (("Max", "Min", (0.0, 1.0)), ("Min", "Max", (1.0, 0.0))):
        x = _bounded(_bounded(v, outer, bounds[0]), inner, bounds[1])
        if x is not None:
            return x
    return None


def _bounded(v: oir.Value | None, op: str, bound: float) -> oir.Value | None:
    """x where `v` is op(x, bound) (Min or Max of two inputs, either order)."""
    n = producer(v, op)
    if n is None or len(n.inputs) != 2:
        return None
    return next((a for a, b in _operands(n) if a is not None and _scalar(b) == bound), None)


def _scalar(v: oir.Value | None) -> float | None:
    """The value of a one-element constant that broadcasting against a gate [B, H] leaves its shape, else None."""
    c = const_array(v) if v is not None else None
    return float(c.reshape(-1)[0]) if c is not None and c.size == 1 and c.ndim <= 2 else None


def activation_attrs(acts: list[Act], defaults: list[str]) -> dict[str, object]:
    """An ONNX recurrent node's activations / activation_alpha / activation_beta attributes ({} for the defaults)."""
    if [a for a, _ in acts] == defaults:
        return {}
    alpha = [p[0] for _, p in acts if len(p) > 0]
    beta = [p[1] for _, p in acts if len(p) > 1]
    attrs: dict[str, object] = {"activations": [a for a, _ in acts]}
    if alpha:
        attrs["activation_alpha"] = alpha
    if beta:
        attrs["activation_beta"] = beta
    return attrs


def _gate(reader: _Reader, pre: Pre, hidden: int | None, keys: set[str]) -> Linear:
    lin = reader.pre(pre)
    if set(lin.parts) != keys:
        raise NoMatch(f"a gate reads {sorted(lin.parts)}, expected {sorted(keys)}")
    if hidden is not None and lin.width != hidden:
        raise NoMatch("gate widths differ")
    return lin


def _assemble(op: str, gates: list[Linear], biases_r: list[np.ndarray] | None, reader: _Reader, h_in: oir.Value,
              c_in: oir.Value | None, attrs: dict[str, object]) -> Cell:
    """The cell whose gates (in ONNX's order) are these linear forms of x (W) and h (R)."""
    hidden = gates[0].width
    assert hidden is not None
    x_ops = {lin.parts["x"][0] for lin in gates}
    h_ops = {lin.parts["h"][0] for lin in gates}
    if len(x_ops) != 1 or len(h_ops) > 1 or (h_ops and h_ops != {h_in}):
        raise NoMatch("the gates read different views of the input or state")
    w = np.concatenate([lin.parts["x"][1].T for lin in gates])[None]
    r = np.concatenate([lin.parts["h"][1].T for lin in gates])[None]
    wb = np.concatenate([lin.dense_bias(hidden) for lin in gates])
    rb = np.concatenate(biases_r) if biases_r is not None else np.zeros_like(wb)
    x = next(iter(x_ops))
    if r.shape[2] != hidden:
        raise NoMatch("recurrent weights are not [hidden, hidden]")
    dtype = np.result_type(w, r, wb)
    return Cell(op, hidden, w.astype(dtype), r.astype(dtype), np.concatenate([wb, rb])[None].astype(dtype), attrs,
                x, 2, h_in, c_in, 2, nodes=reader.nodes)


def spelled_lstm(h_new: oir.Value, c_new: oir.Value, h_state: oir.Value, c_state: oir.Value, x: oir.Value) -> Cell:
    """h' = o * h(c'), c' = f * c + i * g with i, f, o gates of one activation f and g a gate of activation g."""
    mul = producer(h_new, "Mul")
    add = producer(c_new, "Add")
    if mul is None or add is None:
        raise NoMatch("not h' = o * h(c'), c' = f * c + i * g")
    o_gate = None
    for a, b in _operands(mul):
        t, s = _act(a), _act(b)
        if t is not None and t[1] is c_new and s is not None:
            o_gate = (t[0], s)
    if o_gate is None:
        raise NoMatch("h' is not f(.) * h(c')")
    h_act, (f_act, o_pre) = o_gate
    m1, m2 = producer(add.inputs[0], "Mul"), producer(add.inputs[1], "Mul")
    if m1 is None or m2 is None:
        raise NoMatch("c' is not a sum of two products")
    found = None
    for mf, mi in ((m1, m2), (m2, m1)):
        for c_prev, f in _operands(mf):
            fs = _act(f)
            if c_prev is None or view_root(c_prev)[0] is not c_state or fs is None or fs[0] != f_act \
                    or _rank(c_prev) != 2:
                continue
            for i, g in _operands(mi):
                si, tg = _act(i), _act(g)  # i * g is symmetric: with g = f either order is the same product
                if si is not None and tg is not None and si[0] == f_act:
                    found = (c_prev, fs[1], si[1], tg)
    if found is None:
        raise NoMatch("c' is not f(.) * c + f(.) * g(.) with the output gate's f")
    c_prev, f_pre, i_pre, (g_act, g_pre) = found
    reader = _Reader(view_root(x)[0], h_state)
    gates = [_gate(reader, p, None, {"x", "h"}) for p in (i_pre, o_pre, f_pre, g_pre)]  # ONNX order i, o, f, c
    if len({g.width for g in gates}) != 1:
        raise NoMatch("gate widths differ")
    h_in = gates[0].parts["h"][0]
    cell = _assemble("LSTM", gates, None, reader, h_in, c_prev,
                     activation_attrs([f_act, g_act, h_act], ["Sigmoid", "Tanh", "Tanh"]))
    cell.h_out[h_new] = "2"
    cell.c_out[c_new] = "2"
    return cell


def _one_minus(v: oir.Value | None) -> oir.Value | None:
    n = producer(v, "Sub")
    if n is None:
        return None
    one = const_array(n.inputs[0])
    return n.inputs[1] if one is not None and one.size >= 1 and np.all(one == 1) and one.ndim <= 2 else None


def spelled_gru(h_new: oir.Value, h_state: oir.Value, x: oir.Value) -> Cell:
    """h' = z * h + (1 - z) * n with z, r gates of one activation f and n a gate of activation g (reset before or
    after the matmul)."""
    add = producer(h_new, "Add")
    if add is None:
        raise NoMatch("not h' = z * h + (1 - z) * n")
    m1, m2 = producer(add.inputs[0], "Mul"), producer(add.inputs[1], "Mul")
    if m1 is None or m2 is None:
        raise NoMatch("h' is not a sum of two products")
    found = None
    for mz, mn in ((m1, m2), (m2, m1)):
        for z, hp in _operands(mz):
            za = _act(z)
            if za is None or hp is None or view_root(hp)[0] is not h_state or _rank(hp) != 2:
                continue
            for zc, n in _operands(mn):
                if _one_minus(zc) is z and (t := _act(n)) is not None:
                    found = (za, t)
    if found is None:
        raise NoMatch("h' is not f(.) * h + (1 - f(.)) * g(.)")
    (f_act, z_pre), (g_act, n_pre) = found
    acts = activation_attrs([f_act, g_act], ["Sigmoid", "Tanh"])
    reader = _Reader(view_root(x)[0], h_state)
    gate_z = _gate(reader, z_pre, None, {"x", "h"})
    hidden = gate_z.width
    # linear_before_reset: n_pre = Lx + r * Lh
    after = None
    nadd = producer(n_pre, "Add")
    if nadd is not None:
        for p, q in _operands(nadd):
            rm = producer(q, "Mul")
            if rm is None:
                continue
            for r, lh in _operands(rm):
                ra = _act(r)
                if ra is None or ra[0] != f_act:
                    continue
                try:
                    lx = _gate(reader, p, hidden, {"x"})  # type: ignore[arg-type]
                    lhh = _gate(reader, lh, hidden, {"h"})  # type: ignore[arg-type]
                except NoMatch:
                    continue
                after = (ra[1], lx, lhh)
    if after is not None:
        r_pre, lx, lhh = after
        gate_r = _gate(reader, r_pre, hidden, {"x", "h"})
        gate_n = Linear({"x": lx.parts["x"], "h": lhh.parts["h"]}, lx.bias)
        zero = np.zeros(hidden, gate_n.bias.dtype)  # type: ignore[arg-type]
        return _gru_cell([gate_z, gate_r, gate_n], [zero, zero, lhh.dense_bias(hidden)], 1,  # type: ignore[arg-type]
                         reader, h_new, acts)
    gate_n = _gate(reader, n_pre, hidden, {"x", "rh"})
    ra = _act(reader.reset)
    if ra is None or ra[0] != f_act:
        raise NoMatch("no reset gate of the update gate's activation")
    gate_r = _gate(reader, ra[1], hidden, {"x", "h"})
    gate_n = Linear({"x": gate_n.parts["x"], "h": gate_n.parts["rh"]}, gate_n.bias)
    return _gru_cell([gate_z, gate_r, gate_n], None, 0, reader, h_new, acts)


def _gru_cell(gates: list[Linear], rb: list[np.ndarray] | None, lbr: int, reader: _Reader, h_new: oir.Value,
              acts: dict[str, object]) -> Cell:
    h_ops = {g.parts["h"][0] for g in gates[:2]}
    if len(h_ops) != 1:
        raise NoMatch("the gates read different views of the state")
    h_in = next(iter(h_ops))
    if lbr and gates[2].parts["h"][0] is not h_in:
        raise NoMatch("the gates read different views of the state")
    if not lbr:
        gates[2].parts["h"] = (h_in, gates[2].parts["h"][1])  # (r * h) R: ONNX multiplies r with the same state
    cell = _assemble("GRU", gates, rb, reader, h_in, None, {"linear_before_reset": lbr, **acts})
    cell.h_out[h_new] = "2"
    return cell


def spelled_rnn(h_new: oir.Value, h_state: oir.Value, x: oir.Value) -> Cell:
    """h' = f(x W + h R + b)."""
    a = _act(h_new)
    if a is None:
        raise NoMatch("h' is not an activation of a linear form")
    reader = _Reader(view_root(x)[0], h_state)
    gate = _gate(reader, a[1], None, {"x", "h"})
    cell = _assemble("RNN", [gate], None, reader, gate.parts["h"][0], None,
                     activation_attrs([a[0]], ["Tanh"]))
    cell.h_out[h_new] = "2"
    return cell

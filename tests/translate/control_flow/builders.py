"""Small OpenVINO models with TensorIterator/Loop, built with the Python API."""

from __future__ import annotations

from typing import Any

import numpy as np
import openvino as ov
import openvino.opset13 as ops


def ti_accumulate(x_shape: list[int], axis: int, start: int, end: int, stride: int, part: int,
                  out_cfg: tuple[int, int, int] | None = None, last_of_nonstate: bool = True) -> ov.Model:
    """TI summing chunks of X (sliced on `axis`) into a merged state; concat output of the state per step."""
    rank = len(x_shape)
    a = axis % rank
    X = ops.parameter(x_shape, np.float32, name="X")
    h_shape = [d for i, d in enumerate(x_shape) if i != a]
    H = ops.parameter(h_shape, np.float32, name="H")
    chunk = list(x_shape)
    chunk[a] = part
    bx = ops.parameter(chunk, np.float32, name="bx")
    bh = ops.parameter(h_shape, np.float32, name="bh")
    s = ops.reduce_sum(ops.multiply(bx, bx), [a], False)
    nh = ops.add(ops.multiply(bh, ops.constant(np.float32(0.5))), s)
    r_h = ops.result(nh)
    r_y = ops.result(ops.unsqueeze(ops.tanh(nh), a))
    r_z = ops.result(ops.sigmoid(nh))
    body = ov.Model([r_h, r_y, r_z], [bx, bh])
    ti = ops.tensor_iterator()
    ti.set_body(body)
    ti.set_sliced_input(bx, X.output(0), start, stride, part, end, axis)
    ti.set_merged_input(bh, H.output(0), r_h.output(0))
    outs = [ti.get_iter_value(r_h.output(0), -1)]
    os_, ost, oe = out_cfg if out_cfg else ((0, 1, -1) if stride > 0 else (-1, -1, 0))
    outs.append(ti.get_concatenated_slices(r_y.output(0), os_, ost, 1, oe, axis))
    if last_of_nonstate:
        outs.append(ti.get_iter_value(r_z.output(0), -1))
    return ov.Model(outs, [X, H])


def loop_model(trip: Any, cond: Any, x_shape: list[int] | None = None, *, body_cond: str = "true",
               limit: float = 10.0, iter_dtype: Any = np.int64, iter_rank: int = 0, concat_axis: int = 0,
               trip_dtype: Any = np.int64, plain_last_value: bool = True) -> ov.Model:
    """Loop accumulating X into a state; `trip`/`cond` are ints/bools (constants) or None (graph inputs)."""
    x_shape = x_shape or [2, 3]
    X = ops.parameter(x_shape, np.float32, name="X")
    params = [X]
    if trip is None:
        T = ops.parameter([], trip_dtype, name="trip")
        params.append(T)
    else:
        T = ops.constant(np.array(trip, dtype=trip_dtype))
    if cond is None:
        C = ops.parameter([], np.bool_, name="cond")
        params.append(C)
    else:
        C = ops.constant(np.array(cond, dtype=np.bool_))
    it = ops.parameter([1] * iter_rank, iter_dtype, name="it")
    bx = ops.parameter(x_shape, np.float32, name="bx")
    bs = ops.parameter(x_shape, np.float32, name="bs")
    itf = ops.convert(it, np.float32)
    ns = ops.add(bs, ops.multiply(bx, ops.add(itf, ops.constant(np.float32(1)))))
    if body_cond == "true":
        c = ops.constant(True)
    elif body_cond == "false":
        c = ops.constant(False)
    else:  # data dependent: continue while sum(state) < limit
        c = ops.less(ops.reduce_sum(ns, list(range(len(x_shape))), False), ops.constant(np.float32(limit)))
    r_c = ops.result(c)
    r_s = ops.result(ns)
    r_p = ops.result(ops.multiply(bx, itf))
    r_y = ops.result(ops.unsqueeze(ns, concat_axis))
    body = ov.Model([r_c, r_s, r_p, r_y], [it, bx, bs])
    loop = ops.loop(T, C)
    loop.set_function(body)
    loop.set_special_body_ports([0, 0])
    loop.set_invariant_input(bx, X.output(0))
    loop.set_merged_input(bs, X.output(0), r_s.output(0))
    outs = [loop.get_iter_value(r_s.output(0), -1), loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, concat_axis)]
    if plain_last_value:  # a last value of a Result without back edge (undefined in OpenVINO after zero iterations)
        outs.append(loop.get_iter_value(r_p.output(0), -1))
    return ov.Model(outs, params)


def ti_lstm(batch: int, steps: int, inputs: int, hidden: int, w: np.ndarray | None = None, r: np.ndarray | None = None,
            b: np.ndarray | None = None, seed: int = 1, dtype: Any = np.float32) -> ov.Model:
    """TensorIterator over LSTMCell-4 on axis 1: outputs the per-step H (concatenated), the final H and C."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((4 * hidden, inputs)).astype(dtype) if w is None else w
    r = rng.standard_normal((4 * hidden, hidden)).astype(dtype) if r is None else r
    b = rng.standard_normal(4 * hidden).astype(dtype) if b is None else b
    X = ops.parameter([batch, steps, inputs], dtype, name="X")
    H = ops.parameter([batch, hidden], dtype, name="H0")
    C = ops.parameter([batch, hidden], dtype, name="C0")
    bx = ops.parameter([batch, 1, inputs], dtype, name="x_t")
    bh = ops.parameter([batch, hidden], dtype, name="h_prev")
    bc = ops.parameter([batch, hidden], dtype, name="c_prev")
    x = ops.reshape(bx, ops.constant(np.array([batch, inputs], np.int64)), False)
    cell = ops.lstm_cell(x, bh, bc, ops.constant(w), ops.constant(r), ops.constant(b), hidden)
    r_h, r_c = ops.result(cell.output(0)), ops.result(cell.output(1))
    r_y = ops.result(ops.reshape(cell.output(0), ops.constant(np.array([batch, 1, hidden], np.int64)), False))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_h, r_c, r_y], [bx, bh, bc]))
    ti.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(bh, H.output(0), r_h.output(0))
    ti.set_merged_input(bc, C.output(0), r_c.output(0))
    return ov.Model([ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1), ti.get_iter_value(r_h.output(0), -1),
                     ti.get_iter_value(r_c.output(0), -1)], [X, H, C])

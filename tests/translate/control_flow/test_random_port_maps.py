"""Randomised TensorIterator and Loop port maps (fixed seeds), each checked against OpenVINO."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from tests.utils import check_model, rng_inputs

SEEDS = list(range(30))


def random_ti(seed: int) -> tuple[ov.Model, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(2, 5))
    axis = int(rng.integers(0, rank))
    part = int(rng.choice([1, 2]))
    steps = int(rng.integers(1, 4))
    shape = [int(rng.integers(1, 4)) for _ in range(rank)]
    shape[axis] = steps * part
    reverse = bool(rng.integers(0, 2))
    state_shape = [d for i, d in enumerate(shape) if i != axis]
    X = ops.parameter(shape, np.float32, name="X")
    S = ops.parameter(state_shape, np.float32, name="S")
    params, inputs = [X, S], [(tuple(shape), np.float32), (tuple(state_shape), np.float32)]
    chunk = list(shape)
    chunk[axis] = part
    bx = ops.parameter(chunk, np.float32, name="bx")
    bs = ops.parameter(state_shape, np.float32, name="bs")
    body_params = [bx, bs]
    x = ops.reduce_sum(bx, [axis], False)
    if rng.integers(0, 2):  # an invariant input
        V = ops.parameter(state_shape, np.float32, name="V")
        bv = ops.parameter(state_shape, np.float32, name="bv")
        params.append(V)
        inputs.append((tuple(state_shape), np.float32))
        body_params.append(bv)
        x = ops.multiply(x, bv)
    ns = ops.tanh(ops.add(ops.multiply(bs, ops.constant(np.float32(0.5))), x))
    out_axis = int(rng.integers(0, rank))
    r_s = ops.result(ns)
    r_y = ops.result(ops.unsqueeze(ops.sigmoid(ns), out_axis))
    r_z = ops.result(ops.negative(ns))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_s, r_y, r_z], body_params))
    if reverse:
        ti.set_sliced_input(bx, X.output(0), -1, -part, part, 0, axis)
    else:
        ti.set_sliced_input(bx, X.output(0), 0, part, part, -1, axis)
    ti.set_merged_input(bs, S.output(0), r_s.output(0))
    if len(body_params) == 3:
        ti.set_invariant_input(body_params[2], params[2].output(0))
    out_reverse = bool(rng.integers(0, 2))
    outs = [ti.get_concatenated_slices(r_y.output(0), *((-1, -1, 1, 0) if out_reverse else (0, 1, 1, -1)), out_axis)]
    if rng.integers(0, 2):
        outs.append(ti.get_iter_value(r_s.output(0), -1))
    if rng.integers(0, 2):
        outs.append(ti.get_iter_value(r_z.output(0), -1))
    order = rng.permutation(len(outs))
    return ov.Model([outs[i] for i in order], params), rng_inputs(inputs, seed)


def random_loop(seed: int) -> tuple[ov.Model, list[np.ndarray]]:
    rng = np.random.default_rng(1000 + seed)
    rank = int(rng.integers(1, 4))
    shape = [int(rng.integers(1, 4)) for _ in range(rank)]
    trip = int(rng.choice([-1, 1, 3, 5]))
    data_cond = trip == -1 or bool(rng.integers(0, 2))
    iter_type = np.int32 if rng.integers(0, 2) else np.int64
    X = ops.parameter(shape, np.float32, name="X")
    it = ops.parameter([], iter_type, name="it")
    bs = ops.parameter(shape, np.float32, name="bs")
    ns = ops.add(ops.multiply(bs, ops.constant(np.float32(1.5))), ops.convert(it, np.float32))
    total = ops.reduce_sum(ops.abs(ns), list(range(rank)), False)
    cond = ops.less(total, ops.constant(np.float32(40.0))) if data_cond else ops.constant(True)
    out_axis = int(rng.integers(0, rank + 1))
    r_c, r_s, r_y = ops.result(cond), ops.result(ns), ops.result(ops.unsqueeze(ns, out_axis))
    loop = ops.loop(ops.constant(np.int64(trip)), ops.constant(True))
    loop.set_function(ov.Model([r_c, r_s, r_y], [it, bs]))
    loop.set_special_body_ports([0, 0])
    loop.set_merged_input(bs, X.output(0), r_s.output(0))
    outs = [loop.get_iter_value(r_s.output(0), -1), loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, out_axis)]
    return ov.Model(outs[:: 1 if rng.integers(0, 2) else -1], [X]), rng_inputs([(tuple(shape), np.float32)], seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_tensor_iterator(tmp_path: Path, seed: int) -> None:
    model, inputs = random_ti(seed)
    check_model(model, inputs, tmp_path)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_loop(tmp_path: Path, seed: int) -> None:
    model, inputs = random_loop(seed)
    check_model(model, inputs, tmp_path)

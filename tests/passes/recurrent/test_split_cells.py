"""Splitting a Scan that runs several cells one after another (a stacked network in one TensorIterator) into one
Scan per cell, each then fused; OpenVINO's numbers throughout, and bodies that must not be split stay one loop."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from tests.passes.loop_models import ops_in
from tests.passes.rnn_builders import cell_op, is_lstm
from tests.utils import assert_equivalent, count_loops, rng_inputs, save_ir

B, T, I, H = 2, 5, 4, 3


def stacked(kinds: Sequence[str], *, reverse: bool = False, link: str = "new", outputs: Sequence[str] = ("seq",),
            seed: int = 0) -> ov.Model:
    """A TensorIterator over X [B, T, I] whose body runs the cells `kinds` in turn, each on the new h of the one
    before (`link`="old": on its h of the step before; "feedback": also the first cell reads, besides x_t, the last
    cell's h of the step before, which ties all states together). Outputs: "seq" the last cell's h per step, "both"
    the first and the last cells' h per step side by side, "states" also every final state."""
    rng = np.random.default_rng(seed)
    X = ops.parameter([B, T, I], np.float32, name="X")
    bx = ops.parameter([B, 1, I], np.float32, name="x_t")
    x = ops.reshape(bx, ops.constant(np.array([-1, I], np.int64)), False)
    states = [(ops.parameter([B, H], np.float32, name=f"h{n}"),
               ops.parameter([B, H], np.float32, name=f"c{n}") if is_lstm(kind) else None)
              for n, kind in enumerate(kinds)]
    if link == "feedback":
        x = ops.concat([x, states[-1][0]], 1)
    results: list[Any] = []
    news: list[Any] = []
    for n, (kind, (h, c)) in enumerate(zip(kinds, states)):
        width = I + H if n == 0 and link == "feedback" else I if n == 0 else H
        new = cell_op(kind, rng, width, H, 0.0, None, False)(x, h, c)
        results += [ops.result(v) for v in new]
        news.append(new[0])
        x = h if link == "old" else new[0]
    seq = ops.concat([news[0], news[-1]], 1) if "both" in outputs else news[-1]
    r_y = ops.result(ops.unsqueeze(seq, ops.constant(np.array([1], np.int64))))
    params = [p for pair in states for p in pair if p is not None]
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([*results, r_y], [bx, *params]))
    start, stride, end = (-1, -1, 0) if reverse else (0, 1, -1)
    ti.set_sliced_input(bx, X.output(0), start, stride, 1, end, 1)
    zero = ops.constant(np.zeros((B, H), np.float32))
    for p, r in zip(params, results):
        ti.set_merged_input(p, zero.output(0), r.output(0))
    outs = [ti.get_concatenated_slices(r_y.output(0), start, stride, 1, end, 1)]
    if "states" in outputs:
        outs += [ti.get_iter_value(r.output(0), -1) for r in results]
    return ov.Model(outs, [X])


def _check(model: ov.Model, tmp_path: Path, fused: dict[str, int], loops: int) -> None:
    """Fusion alone (optimize=False) leaves `fused` recurrent nodes and `loops` loops; it, the default passes (which
    also lower each RNN node to a Scan) and fuse=False (one loop) all give OpenVINO's numbers."""
    xml = save_ir(model, tmp_path)
    x = rng_inputs([((B, T, I), np.float32)], 0)
    alone = assert_equivalent(xml, x, optimize=False)
    assert {op: n for op in ("LSTM", "GRU", "RNN") if (n := ops_in(alone.graph, op, bodies=False))} == fused
    assert count_loops(alone) == loops
    default = assert_equivalent(xml, x)
    assert count_loops(default) == loops + fused.get("RNN", 0)
    assert count_loops(assert_equivalent(xml, x, fuse=False)) == 1


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("kinds", [("lstm4", "lstm4"), ("lstm4", "gru", "rnn"), ("lstm1", "gru"), ("rnn", "rnn")],
                         ids=["lstm_lstm", "lstm_gru_rnn", "lstm1_gru", "rnn_rnn"])
def test_stacked_cells_fused(tmp_path: Path, kinds: tuple[str, ...], reverse: bool) -> None:
    fused: dict[str, int] = {}
    for k in kinds:
        op = "LSTM" if is_lstm(k) else k.upper()
        fused[op] = fused.get(op, 0) + 1
    _check(stacked(kinds, reverse=reverse), tmp_path, fused, 0)


def test_final_states_of_every_cell(tmp_path: Path) -> None:
    _check(stacked(("lstm4", "gru"), outputs=("seq", "states")), tmp_path, {"LSTM": 1, "GRU": 1}, 0)


def test_output_reading_both_cells(tmp_path: Path) -> None:
    """The per-step output joins the first and the last cells' h: the first cell is fused, the second's Scan (which
    also concatenates) stays."""
    _check(stacked(("lstm4", "lstm4"), outputs=("both", "states")), tmp_path, {"LSTM": 1}, 1)


def test_second_cell_reading_the_previous_h(tmp_path: Path) -> None:
    """The second cell reads the first's h of the step before: the first Scan also returns that state per step."""
    _check(stacked(("lstm4", "lstm4"), link="old"), tmp_path, {"LSTM": 1}, 1)


def test_feedback_is_not_split(tmp_path: Path) -> None:
    """The first cell reads the last one's previous h: no cell can run over the whole sequence before the other."""
    _check(stacked(("lstm4", "gru"), link="feedback"), tmp_path, {}, 1)

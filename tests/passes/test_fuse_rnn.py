"""Recurrent fusion: loops over one cell become one ONNX LSTM/GRU/RNN with OpenVINO's numbers; near misses stay loops."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from tests.passes.rnn_builders import is_lstm, recurrent_loop
from tests.utils import assert_equivalent, count_ops, rng_inputs, save_ir

RECURRENT = ("LSTM", "GRU", "RNN")
FIXTURES = Path(__file__).parent.parent / "fixtures"


def _loops(proto: onnx.ModelProto) -> int:
    return count_ops(proto, "Scan") + count_ops(proto, "Loop")


def _inputs(kind: str, batch: int = 2, steps: int = 5, inputs: int = 4, hidden: int = 3, seed: int = 0) -> list[np.ndarray]:
    shapes = [((batch, steps, inputs), np.float32), ((batch, hidden), np.float32)]
    if is_lstm(kind):
        shapes.append(((batch, hidden), np.float32))
    return rng_inputs(shapes, seed)


def _check(model: Any, tmp_path: Path, inputs: list[np.ndarray], op: str | None) -> None:
    """Default conversion: fused into one `op` (None: stays a loop); fuse=False: the loop. Both match OpenVINO."""
    xml = save_ir(model, tmp_path)
    fused = assert_equivalent(xml, inputs)
    literal = assert_equivalent(xml, inputs, fuse=False)
    assert _loops(literal) == 1
    if op is None:
        assert _loops(fused) == 1, "a near miss was fused"
        return
    assert _loops(fused) == 0, "the loop was not fused"
    assert count_ops(fused, op) == 1 and sum(count_ops(fused, o) for o in RECURRENT) == 1


CELLS = [("lstm4", "LSTM", {}), ("lstm1", "LSTM", {}), ("gru", "GRU", {}), ("gru", "GRU", {"lbr": True}),
         ("rnn", "RNN", {})]


@pytest.mark.parametrize("loop", [False, True], ids=["ti", "loop"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("kind,op,kw", CELLS, ids=["lstm4", "lstm1", "gru", "gru_lbr", "rnn"])
def test_cell_ops_fused(tmp_path: Path, kind: str, op: str, kw: dict[str, Any], reverse: bool, loop: bool) -> None:
    model = recurrent_loop(kind, reverse=reverse, loop=loop, **kw)
    _check(model, tmp_path, _inputs(kind), op)


@pytest.mark.parametrize("outputs", [("seq",), ("h",), ("c",), ("h", "seq"), ("seq", "c", "h")])
@pytest.mark.parametrize("batch", [1, 3])
def test_output_forms_and_batch(tmp_path: Path, outputs: tuple[str, ...], batch: int) -> None:
    model = recurrent_loop("lstm4", batch=batch, outputs=outputs, reverse=batch == 3)
    _check(model, tmp_path, _inputs("lstm4", batch=batch), "LSTM")


@pytest.mark.parametrize("kind,op,kw", [
    ("lstm4", "LSTM", {"clip": 0.7}),
    ("lstm4", "LSTM", {"activations": ["relu", "tanh", "sigmoid"]}),
    ("gru", "GRU", {"clip": 0.5, "activations": ["tanh", "relu"]}),
    ("gru", "GRU", {"lbr": True, "activations": ["relu", "sigmoid"]}),
    ("rnn", "RNN", {"clip": 0.3, "activations": ["relu"]}),
    ("rnn", "RNN", {"activations": ["sigmoid"]}),
])
def test_clip_and_activations_carried(tmp_path: Path, kind: str, op: str, kw: dict[str, Any]) -> None:
    _check(recurrent_loop(kind, **kw), tmp_path, _inputs(kind), op)


def test_long_sequence_and_wide_cell(tmp_path: Path) -> None:
    model = recurrent_loop("lstm4", batch=4, steps=40, inputs=24, hidden=16)
    _check(model, tmp_path, _inputs("lstm4", batch=4, steps=40, inputs=24, hidden=16), "LSTM")


SPELLED = [("keras_lstm", "LSTM"), ("torch_lstm", "LSTM"), ("gru_after", "GRU"), ("gru_before", "GRU"),
           ("spelled_rnn", "RNN")]


@pytest.mark.parametrize("loop", [False, True], ids=["ti", "loop"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("kind,op", SPELLED, ids=[k for k, _ in SPELLED])
def test_spelled_out_cells_fused(tmp_path: Path, kind: str, op: str, reverse: bool, loop: bool) -> None:
    _check(recurrent_loop(kind, reverse=reverse, loop=loop), tmp_path, _inputs(kind), op)


@pytest.mark.parametrize("kind", ["lstm_tanh_gate", "lstm_peephole", "lstm_extra_state_op"])
@pytest.mark.parametrize("loop", [False, True], ids=["ti", "loop"])
def test_near_misses_stay_loops(tmp_path: Path, kind: str, loop: bool) -> None:
    _check(recurrent_loop(kind, loop=loop), tmp_path, _inputs(kind), None)


def test_loop_shorter_than_the_sequence_stays_a_loop(tmp_path: Path) -> None:
    # four iterations over five steps: the fused node would read all five
    _check(recurrent_loop("lstm4", loop=True, trip=4, outputs=("h", "c")), tmp_path, _inputs("lstm4"), None)


@pytest.mark.parametrize("name,op", [("rnn_keras_lstm", "LSTM"), ("rnn_keras_gru", "GRU"),
                                     ("rnn_keras_gru_reset_before", "GRU"), ("rnn_keras_simple_rnn", "RNN")])
@pytest.mark.parametrize("batch", [1, 3])
def test_tensorflow_keras_layers(name: str, op: str, batch: int) -> None:
    """Keras layers converted by OpenVINO's TensorFlow frontend: a Loop with counters, a Gather per step and a
    TensorList buffer written by ScatterND (scripts/make_rnn_fixtures.py)."""
    xml = FIXTURES / name / "model.xml"
    x = rng_inputs([((batch, 5, 4), np.float32)], seed=batch)
    fused = assert_equivalent(xml, x)
    literal = assert_equivalent(xml, x, fuse=False)
    assert _loops(literal) == 1 and _loops(fused) == 0
    assert count_ops(fused, op) == 1

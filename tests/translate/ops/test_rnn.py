"""Recurrent cells and sequences (rnn.py): gate orders, bias layouts, directions, sequence lengths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset1 as ops1
import openvino.opset13 as ops
import pytest

from ir2onnx.verify.openvino_ref import run_openvino
from tests.translate.ops.cases import Case, check_against, params, run_case
from tests.utils import save_ir

F, I32 = np.float32, np.int32
RNG = np.random.default_rng(11)
HS, IN, BATCH, T = 4, 5, 3, 6


def c(*shape: int):  # type: ignore[no-untyped-def]
    return ops.constant((RNG.standard_normal(shape) * 0.5).astype(F))


CELLS = [
    Case("lstm-cell-4", lambda x, h, cc: ops.lstm_cell(x, h, cc, c(4 * HS, IN), c(4 * HS, HS), c(4 * HS), HS),
         [((BATCH, IN), F), ((BATCH, HS), F), ((BATCH, HS), F)]),
    Case("lstm-cell-4-batch1-clip", lambda x, h, cc: ops.lstm_cell(x, h, cc, c(4 * HS, IN), c(4 * HS, HS), c(4 * HS),
                                                                   HS, clip=0.3), [((1, IN), F), ((1, HS), F), ((1, HS), F)]),
    Case("lstm-cell-4-relu", lambda x, h, cc: ops.lstm_cell(x, h, cc, c(4 * HS, IN), c(4 * HS, HS), c(4 * HS), HS,
                                                            ["sigmoid", "relu", "tanh"]),
         [((BATCH, IN), F), ((BATCH, HS), F), ((BATCH, HS), F)]),
    Case("lstm-cell-1", lambda x, h, cc: ops1.lstm_cell(x, h, cc, c(4 * HS, IN), c(4 * HS, HS), c(4 * HS), HS),
         [((BATCH, IN), F), ((BATCH, HS), F), ((BATCH, HS), F)]),
    Case("lstm-cell-runtime-weights", lambda x, h, cc, w, r, b: ops.lstm_cell(x, h, cc, w, r, b, HS),
         [((BATCH, IN), F), ((BATCH, HS), F), ((BATCH, HS), F), ((4 * HS, IN), F), ((4 * HS, HS), F), ((4 * HS,), F)]),
    Case("gru-cell", lambda x, h: ops.gru_cell(x, h, c(3 * HS, IN), c(3 * HS, HS), c(3 * HS), HS),
         [((BATCH, IN), F), ((BATCH, HS), F)]),
    Case("gru-cell-linear-before-reset", lambda x, h: ops.gru_cell(x, h, c(3 * HS, IN), c(3 * HS, HS), c(4 * HS), HS,
                                                                   linear_before_reset=True),
         [((BATCH, IN), F), ((BATCH, HS), F)]),
    Case("gru-cell-runtime-bias-lbr", lambda x, h, b: ops.gru_cell(x, h, c(3 * HS, IN), c(3 * HS, HS), b, HS,
                                                                   linear_before_reset=True),
         [((BATCH, IN), F), ((BATCH, HS), F), ((4 * HS,), F)]),
    Case("rnn-cell", lambda x, h: ops.rnn_cell(x, h, c(HS, IN), c(HS, HS), c(HS), HS, ["tanh"], [], []),
         [((BATCH, IN), F), ((BATCH, HS), F)]),
    Case("rnn-cell-relu", lambda x, h: ops.rnn_cell(x, h, c(HS, IN), c(HS, HS), c(HS), HS, ["relu"], [], []),
         [((BATCH, IN), F), ((BATCH, HS), F)]),
]

LENS = np.array([T, 2, 4], I32)


def _seq_inputs(dirs: int, with_c: bool) -> list[tuple[tuple[int, ...], object]]:
    s = [((BATCH, T, IN), F), ((BATCH, dirs, HS), F)]
    if with_c:
        s.append(((BATCH, dirs, HS), F))
    return s + [((BATCH,), I32)]


def _seq_values(dirs: int, with_c: bool) -> list[np.ndarray]:
    vals = [RNG.standard_normal(s).astype(F) for s, _ in _seq_inputs(dirs, with_c)[:-1]]
    return vals + [LENS]


SEQUENCES = []
for direction, dirs in (("forward", 1), ("reverse", 1), ("bidirectional", 2)):
    SEQUENCES += [
        Case(f"lstm-sequence-{direction}", lambda x, h, cc, n, d=direction, k=dirs: ops.lstm_sequence(
            x, h, cc, n, c(k, 4 * HS, IN), c(k, 4 * HS, HS), c(k, 4 * HS), HS, d),
            _seq_inputs(dirs, True), values=_seq_values(dirs, True)),
        Case(f"gru-sequence-{direction}", lambda x, h, n, d=direction, k=dirs: ops.gru_sequence(
            x, h, n, c(k, 3 * HS, IN), c(k, 3 * HS, HS), c(k, 4 * HS), HS, d, linear_before_reset=True),
            _seq_inputs(dirs, False), values=_seq_values(dirs, False)),
        Case(f"rnn-sequence-{direction}", lambda x, h, n, d=direction, k=dirs: ops.rnn_sequence(
            x, h, n, c(k, HS, IN), c(k, HS, HS), c(k, HS), HS, d),
            _seq_inputs(dirs, False), values=_seq_values(dirs, False)),
    ]
# OpenVINO's ONNX frontend lists a bidirectional node's activations once per direction; OpenVINO reads the first f,
# g(, h) for both directions (the second "tanh" of the RNN is ignored, as OpenVINO does)
SEQUENCES += [
    Case("rnn-sequence-bidirectional-listed-per-direction", lambda x, h, n: ops.rnn_sequence(
        x, h, n, c(2, HS, IN), c(2, HS, HS), c(2, HS), HS, "bidirectional", ["relu", "tanh"]),
        _seq_inputs(2, False), values=_seq_values(2, False)),
    Case("gru-sequence-bidirectional-listed-per-direction", lambda x, h, n: ops.gru_sequence(
        x, h, n, c(2, 3 * HS, IN), c(2, 3 * HS, HS), c(2, 3 * HS), HS, "bidirectional",
        ["sigmoid", "relu", "sigmoid", "relu"]), _seq_inputs(2, False), values=_seq_values(2, False)),
    Case("lstm-sequence-bidirectional-listed-per-direction", lambda x, h, cc, n: ops.lstm_sequence(
        x, h, cc, n, c(2, 4 * HS, IN), c(2, 4 * HS, HS), c(2, 4 * HS), HS, "bidirectional",
        ["sigmoid", "tanh", "relu"] * 2), _seq_inputs(2, True), values=_seq_values(2, True)),
]
SEQUENCES.append(Case("gru-sequence-plain-bias", lambda x, h, n: ops.gru_sequence(
    x, h, n, c(1, 3 * HS, IN), c(1, 3 * HS, HS), c(1, 3 * HS), HS, "forward"), _seq_inputs(1, False),
    values=_seq_values(1, False)))


@pytest.mark.parametrize("case", params(CELLS + SEQUENCES))
def test_rnn(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


@pytest.mark.parametrize("case", params([s for s in SEQUENCES if s.name != "gru-sequence-plain-bias"]))
def test_sequence_lengths_on_run_time_shapes(tmp_path: Path, case: Case) -> None:
    """OpenVINO 2026.4's CPU plugin ignores the lengths of LSTMSequence/GRUSequence/RNNSequence on run-time shapes
    (every row runs every step: a row of length 2 gets outputs at all 6) but applies them on static shapes: the
    conversion of the IR on run-time shapes equals OpenVINO on the same IR with static shapes."""
    ps = [ops.parameter(list(shape), dtype, name=f"in{i}") for i, (shape, dtype) in enumerate(case.inputs)]
    model = ov.Model(list(case.build(*ps).outputs()), ps)
    values = list(case.values)  # type: ignore[arg-type]
    expected = run_openvino(str(save_ir(model, tmp_path, "static")), values)
    model.reshape({p.output(0): ov.PartialShape([-1] * len(p.get_output_partial_shape(0))) for p in ps})
    check_against(model, values, expected, tmp_path, case.rtol, case.atol)


@pytest.mark.parametrize("dtype", [np.int16, np.int32])
def test_an_integer_cell_is_refused(tmp_path: Path, dtype: type) -> None:
    """OpenVINO builds an LSTMCell of integers but defines the op for floating-point types: one clear refusal, not
    numbers computed some other way."""
    import ir2onnx

    x, h, c = (ops.parameter(shape, dtype, name=n) for n, shape in (("x", [2, 3]), ("h", [2, 4]), ("c", [2, 4])))
    weights = [ops.constant(np.ones(shape, dtype)) for shape in ((16, 3), (16, 4), (16,))]
    cell = ops.lstm_cell(x, h, c, *weights, 4)
    xml = save_ir(ov.Model([cell.output(0)], [x, h, c], "integer_cell"), tmp_path)
    with pytest.raises(ir2onnx.ConversionError, match="LSTMCell on i(16|32) is not supported.*floating-point"):
        ir2onnx.convert(xml)

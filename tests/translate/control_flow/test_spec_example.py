"""The TensorIterator specification's full example (old 5-input LSTMCell with W and R concatenated), checked
against the same network built with OpenVINO's 6-input LSTMCell-4."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import pytest

from ir2onnx.verify.compare import compare_output
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from ir2onnx.verify.openvino_ref import run_openvino
from tests.fixture_paths import fixture_dir
from tests.translate.control_flow.builders import ti_lstm
from tests.utils import convert_checked, count_ops, save_ir

FIXTURE = fixture_dir("spec_example") / "ti_lstm_legacy.xml"
T, I, H = 25, 512, 256


def _weights(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    wr = (rng.standard_normal((4 * H, I + H)) * 0.05).astype(np.float32)
    b = (rng.standard_normal(4 * H) * 0.1).astype(np.float32)
    return wr, b


def _write_bin(path: Path, wr: np.ndarray, b: np.ndarray) -> None:
    """The example's offsets: i64[2] at 0, W f32[1024,768] at 16, B f32[1024] at 3145744, i64[3] at 3149840."""
    blob = (np.array([1, I], np.int64).tobytes() + wr.tobytes() + b.tobytes() + np.array([1, 1, H], np.int64).tobytes())
    assert len(blob) == 3149864
    path.write_bytes(blob)


def _reference(wr: np.ndarray, b: np.ndarray) -> ov.Model:
    """The same network with the 6-input LSTMCell-4: W and R are the two column blocks of the legacy weights."""
    model = ti_lstm(1, T, I, H, wr[:, :I].copy(), wr[:, I:].copy(), b)
    return ov.Model([model.outputs[0]], model.get_parameters())


@pytest.mark.parametrize("fuse", [True, False])
def test_spec_example_matches_openvino_lstm_cell(tmp_path: Path, fuse: bool) -> None:
    wr, b = _weights()
    xml = tmp_path / "spec.xml"
    xml.write_text(FIXTURE.read_text())
    _write_bin(tmp_path / "spec.bin", wr, b)
    proto = convert_checked(xml, fuse=fuse)
    # fused: one LSTM over the whole sequence; literal: a Scan with a one-step LSTM inside
    assert count_ops(proto, "Scan") == (0 if fuse else 1) and count_ops(proto, "LSTM") == 1
    assert [i.name for i in proto.graph.input] == ["X", "H0", "C0"]
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((1, T, I)).astype(np.float32), rng.standard_normal((1, H)).astype(np.float32),
              rng.standard_normal((1, H)).astype(np.float32)]
    got = run_onnxruntime(proto, dict(zip(["X", "H0", "C0"], inputs)))[0]
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    ref = run_openvino(str(save_ir(_reference(wr, b), ref_dir)), inputs)[0]
    c = compare_output("Y", got, ref, rtol=1e-4, atol=1e-5)
    assert c.passed, c

"""The portable stage as the options select it: last, and without the stages that shape the model for onnxruntime's
CPU kernels (a fused RNN stays an RNN node, not the CPU's Scan); on the command line, --portable."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import onnx

from ir2onnx.passes import pipeline
from tests.fixture_paths import load_fixture
from tests.utils import assert_equivalent, count_ops

ROOT = Path(__file__).resolve().parents[3]


def test_stages_for_portable() -> None:
    default = [s.name for s in pipeline.stages(pipeline.Options())]
    portable = [s.name for s in pipeline.stages(pipeline.Options(portable=True))]
    assert {"CPU RNN lowering", "CPU recurrent kernels"} <= set(default) and "portable" not in default
    assert portable == [s for s in default if not s.startswith("CPU")] + ["portable"]
    plain = [s.name for s in pipeline.stages(pipeline.Options(optimize=False, fuse=False, portable=True))]
    assert plain[-1] == "portable"


def test_rnn_stays_a_node() -> None:
    xml, inputs, _ = load_fixture("tf_simple_rnn")
    proto = assert_equivalent(xml, inputs, portable=True)
    assert count_ops(proto, "RNN") == 1 and count_ops(proto, "Scan") == 0


def test_command_line(tmp_path: Path) -> None:
    out = tmp_path / "ti_lstm.onnx"
    r = subprocess.run([sys.executable, "-m", "ir2onnx", "convert", str(ROOT / "samples" / "ti_lstm" / "model.xml"),
                        "-o", str(out), "--portable", "-q"], capture_output=True, text=True, cwd=ROOT, timeout=300,
                       check=False)
    assert r.returncode == 0, r.stderr
    assert next(o.version for o in onnx.load(str(out)).opset_import if o.domain == "") == 14
    folder = tmp_path / "irs"  # a folder's IRs take it too
    shutil.copytree(ROOT / "samples" / "ti_lstm", folder / "ti_lstm")
    r = subprocess.run([sys.executable, "-m", "ir2onnx", "convert", str(folder), "-o", str(tmp_path / "all"),
                        "--portable", "-q"], capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    converted = onnx.load(str(tmp_path / "all" / "ti_lstm" / "model.onnx"))
    assert next(o.version for o in converted.opset_import if o.domain == "") == 14

"""A layer's `version` must name an opset OpenVINO knows that holds its type; otherwise OpenVINO's reader refuses
the IR, and so does ir2onnx, listing every such layer together with the unsupported ops."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import openvino as ov
import pytest

import ir2onnx
from ir2onnx.errors import UnsupportedOpsError
from tests.translate.control_flow.builders import loop_model
from tests.utils import assert_equivalent, save_ir

ROOT = Path(__file__).resolve().parent.parent.parent


def _ir(tmp_path: Path, version: str, extra_unknown: bool = False) -> Path:
    """A Loop whose body has a Multiply; its version attribute is replaced (and a main-graph Convert renamed)."""
    xml = save_ir(loop_model(3, True), tmp_path)
    text = xml.read_text()
    assert text.count('type="Multiply" version="opset1"') == 2
    text = text.replace('type="Multiply" version="opset1"', f'type="Multiply" version="{version}"', 1)
    if extra_unknown:
        text = text.replace('type="Add" version="opset1"', 'type="FancyAdd" version="opset1"', 1)
    xml.write_text(text)
    return xml


@pytest.mark.parametrize("version", ["opset999", "opset0", "opsetX", "experimental", "opset17"])
def test_unknown_opset_is_refused_like_openvino(tmp_path: Path, version: str) -> None:
    xml = _ir(tmp_path, version, extra_unknown=True)
    with pytest.raises(RuntimeError, match="unsupported opset|doesn't contain"):
        ov.Core().read_model(str(xml))
    with pytest.raises(UnsupportedOpsError) as e:
        ir2onnx.convert(xml)
    text = str(e.value)
    assert "2 unsupported op type(s)" in text and "FancyAdd (opset1)" in text
    assert f"Multiply ({version})" in text and "Loop" in text and "line " in text
    assert "opset1 to opset17" in text or "still being filled" in text


def test_cli_exit_code(tmp_path: Path) -> None:
    xml = _ir(tmp_path, "opset999")
    r = subprocess.run([sys.executable, "-m", "ir2onnx", "convert", str(xml), "-o", str(tmp_path / "m.onnx")],
                       check=False, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Multiply (opset999)" in r.stderr and "does not exist" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "m.onnx").exists()


@pytest.mark.parametrize("version", ["opset1", "opset8", "opset16"])
def test_any_known_opset_holding_the_type_is_accepted(tmp_path: Path, version: str) -> None:
    xml = _ir(tmp_path, version)
    assert_equivalent(xml, [np.arange(6, dtype=np.float32).reshape(2, 3) / 10])


@pytest.mark.parametrize(("layer_type", "version", "refused"), [
    ("Parameter", "wrongOpset", True), ("Result", "opset999", True), ("Const", "opsetX", True),
    ("Result", "opset17", True), ("Parameter", "opset17", False), ("Const", "opset16", False)])
def test_structural_layers_versions_are_checked_like_openvino(tmp_path: Path, layer_type: str, version: str,
                                                               refused: bool) -> None:
    """Parameter, Result and Const have no converter to look up, but OpenVINO's reader checks their versions too."""
    xml = save_ir(loop_model(3, True), tmp_path)
    text = xml.read_text()
    changed = text.replace(f'type="{layer_type}" version="opset1"', f'type="{layer_type}" version="{version}"', 1)
    assert changed != text
    xml.write_text(changed)
    if not refused:
        assert_equivalent(xml, [np.arange(6, dtype=np.float32).reshape(2, 3) / 10])
        return
    with pytest.raises(RuntimeError):
        ov.Core().read_model(str(xml))
    with pytest.raises(UnsupportedOpsError, match=rf"{layer_type} \({version}\) x1: .*line \d+"):
        ir2onnx.convert(xml)

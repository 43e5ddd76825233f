"""The round-trip suite on a fixed sample: ONNX backend node tests -> OpenVINO IR -> ir2onnx -> onnxruntime,
compared with OpenVINO on the cases OpenVINO itself gets right (scripts/sweep/roundtrip_onnx_backend.py runs
them all)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "sweep" / "roundtrip_onnx_backend.py"
EVERY = 8  # about 230 of the cases, the same ones on every run


def test_roundtrip_sample_passes(tmp_path: Path) -> None:
    pytest.importorskip("openvino", reason="OpenVINO imports the ONNX cases and is the reference")
    report = tmp_path / "roundtrip.json"
    run = subprocess.run([sys.executable, str(SCRIPT), "--every", str(EVERY), "--jobs", "2", "--json", str(report)],
                         capture_output=True, text=True, cwd=ROOT, timeout=1800, check=False)
    records = json.loads(report.read_text())
    judged = [r for r in records if r["status"] not in ("ov_wrong", "ov_error")]
    failed = [f"{r['case']}: {r['status']}: {r.get('reason', '')}" for r in judged if r["status"] != "pass"]
    assert len(judged) > 100, run.stdout[-2000:]
    assert not [r for r in judged if r["status"] in ("crash", "invalid")], "\n".join(failed)
    rate = 1 - len(failed) / len(judged)
    assert rate >= 0.95, f"round-trip pass rate {rate:.1%} on {len(judged)} cases:\n" + "\n".join(failed)

"""The OpenVINO op sweep on a fixed sample: single-op models built with openvino.opsetN over element types, shapes
and attributes, converted and compared with OpenVINO (scripts/sweep/sweep_openvino_ops.py runs all of
them). The sample holds every element type the sweep has."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "sweep" / "sweep_openvino_ops.py"
EVERY = 41  # about 200 of the configurations, the same ones on every run
TYPES = ("f32", "f16", "bf16", "f64", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "boolean")


def test_sweep_sample_passes(tmp_path: Path) -> None:
    pytest.importorskip("openvino", reason="OpenVINO builds the models and is the reference")
    report = tmp_path / "sweep.json"
    run = subprocess.run([sys.executable, str(SCRIPT), "--every", str(EVERY), "--jobs", "2", "--json", str(report)],
                         capture_output=True, text=True, cwd=ROOT, timeout=1800, check=False)
    records = json.loads(report.read_text())
    judged = [r for r in records if r["status"] != "ov_skip"]
    failed = [f"{r['case']}: {r['status']}: {r.get('reason', '')}" for r in judged if r["status"] != "pass"]
    assert len(judged) > 120, run.stdout[-2000:]
    missing = set(TYPES) - {r["type"] for r in judged}
    assert not missing, f"the sample runs no configuration of {sorted(missing)}: choose another EVERY"
    assert not [r for r in judged if r["status"] in ("crash", "invalid")], "\n".join(failed)
    rate = 1 - len(failed) / len(judged)
    assert rate >= 0.97, f"sweep pass rate {rate:.1%} on {len(judged)} configurations:\n" + "\n".join(failed)

"""What the case-running scripts share (scripts/sweep/roundtrip_onnx_backend.py and sweep_openvino_ops.py, which
put this folder on sys.path): running a list of named cases in worker processes, judging one converted IR against
OpenVINO's outputs, and the summary report.

A script lists its cases deterministically; `run_workers` starts the script again with `--worker START STOP` for
chunks of that list, each worker prints one JSON record per case, and a worker that dies (a runtime crash) is
restarted after the case it died on, which is recorded as a crash.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

FAILURES = ("refused", "invalid", "mismatch", "crash")
CHUNK = 40


def close(got: Any, want: Any, rtol: float, atol: float) -> bool:
    """Same shape and values: integers, booleans and strings exactly, floats within rtol/atol (NaN == NaN)."""
    import numpy as np

    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if want.dtype.kind in "biuUSO" or got.dtype.kind in "biuUSO":
        return bool(np.array_equal(got, want))
    return bool(np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True))


def first_line(e: BaseException, limit: int = 300) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0][:limit] if text else ''}"


def judge(xml: Path, feed: Sequence[Any], reference: Sequence[Any],
          tolerance: Callable[[int, Any], tuple[float, float]], convert: Callable[[Path], Any] | None = None) -> dict:
    """Convert `xml` with ir2onnx, check the model (full ONNX checker), run onnxruntime on `feed` and compare with
    `reference` output by output. `tolerance(i, reference_array)` gives (rtol, atol) for output i.

    Returns {"status": "pass" | "refused" | "invalid" | "mismatch" | "crash", "reason": ...}: refused is a
    ConversionError, invalid a model the checker or onnxruntime refuses, crash any other exception."""
    import numpy as np
    import onnx

    import ir2onnx
    from ir2onnx.errors import ConversionError
    from ir2onnx.verify.onnxruntime_run import run_onnxruntime

    try:
        proto = convert(xml) if convert is not None else ir2onnx.convert(str(xml))
    except ConversionError as e:
        return {"status": "refused", "reason": str(e).splitlines()[0][:300]}
    except Exception as e:  # noqa: BLE001
        return {"status": "crash", "reason": first_line(e)}
    try:
        onnx.checker.check_model(proto, full_check=True)
        names = [i.name for i in proto.graph.input]
        got = run_onnxruntime(proto, dict(zip(names, feed)))
    except Exception as e:  # noqa: BLE001
        return {"status": "invalid", "reason": first_line(e)}
    bad = []
    if len(got) != len(reference):
        bad.append(f"{len(got)} outputs != {len(reference)}")
    for i, (g, w) in enumerate(zip(got, reference)):
        w = np.asarray(w)
        rtol, atol = tolerance(i, w)
        if g.dtype != w.dtype:
            bad.append(f"output {i}: dtype {g.dtype} != {w.dtype}")
        elif g.shape != w.shape:
            bad.append(f"output {i}: shape {g.shape} != {w.shape}")
        elif not close(g, w, rtol, atol):
            diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
            err = float(np.nanmax(diff)) if diff.size and not np.all(np.isnan(diff)) else float("nan")
            bad.append(f"output {i}: max abs error {err:.3g}")
    return {"status": "mismatch" if bad else "pass", "reason": "; ".join(bad)}


def run_workers(script: str, args: Sequence[str], names: Sequence[str], jobs: int, chunk: int = CHUNK) -> list[dict]:
    """Run cases `names` (the script's own deterministic list) in worker processes `script *args --worker S E`,
    `jobs` at a time. Every record carries its case name under "case"; returns them in `names` order."""
    chunks = [(i, min(i + chunk, len(names))) for i in range(0, len(names), chunk)]
    records: dict[str, dict] = {}
    pending = list(chunks)
    running: list[tuple[subprocess.Popen, int, int]] = []
    while pending or running:
        while pending and len(running) < jobs:
            s, e = pending.pop(0)
            p = subprocess.Popen([sys.executable, script, *args, "--worker", str(s), str(e)], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
            running.append((p, s, e))
        p, s, e = running.pop(0)
        out, _ = p.communicate()
        done = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        for r in done:
            records[r["case"]] = r
        if p.returncode != 0 and s + len(done) < e:  # the case after the last record crashed its worker
            crashed = names[s + len(done)]
            records[crashed] = {"case": crashed, "status": "crash", "reason": f"worker died ({p.returncode})"}
            if s + len(done) + 1 < e:
                pending.insert(0, (s + len(done) + 1, e))
    return [records[n] for n in names if n in records]


def print_failures(records: Sequence[dict], verbose: bool = False) -> None:
    """One line per failing case, grouped by status (and all passing cases when `verbose`)."""
    for status in FAILURES:
        rows = [r for r in records if r["status"] == status]
        if rows:
            print(f"\n== {status} ({len(rows)})")
            for r in rows:
                print(f"  {r['case']}: {r.get('reason', '')}")
    if verbose:
        print("\n== pass")
        for r in records:
            if r["status"] == "pass":
                print(f"  {r['case']}")


def print_table(records: Sequence[dict], key: str, statuses: Sequence[str]) -> None:
    """Counts per status for each value of record[key] (e.g. per op family)."""
    groups: dict[str, Counter] = {}
    for r in records:
        groups.setdefault(str(r.get(key, "?")), Counter())[r["status"]] += 1
    width = max([len(key)] + [len(g) for g in groups])
    print(f"\n{key:<{width}}  " + "  ".join(f"{s:>8}" for s in ("total", *statuses)))
    for g, c in sorted(groups.items()):
        print(f"{g:<{width}}  " + "  ".join(f"{n:>8}" for n in (sum(c.values()), *(c[s] for s in statuses))))


def write_json(path: str | None, records: Sequence[dict]) -> None:
    if path:
        Path(path).write_text(json.dumps(list(records), indent=1))

"""Batch conversion speed: `ir2onnx convert DIR -o OUTDIR` over every IR under tests/fixtures and samples, with one
worker and with one a core.

The IRs are copied into one temporary folder (their layout kept), then the whole command runs (`--force -q --report`)
once untimed (page cache, bytecode), then `--repeat` times per worker count. Reported: wall time of the whole command
(start-up, the fork server's imports and the workers included), IRs per second, the speed-up over one worker, and the
sum of the per-IR times the workers measured (converting only: a busy worker's time, without the command's start-up).

With --single, one `ir2onnx convert MODEL.xml` process per IR, one after the other, for comparison.

Usage: python scripts/bench/bench_batch.py [--jobs 1 N ...] [--repeat 2] [--single]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ir2onnx.batch import cores, find_irs


def copy_irs(dest: Path) -> int:
    """Every IR (with its .bin, when it has one) under tests/fixtures and samples, into dest/<folder>/..."""
    n = 0
    for top in (ROOT / "tests" / "fixtures", ROOT / "samples"):
        for xml in find_irs(top):
            rel = Path(top.name) / xml.relative_to(top)
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(xml, dest / rel)
            if xml.with_suffix(".bin").exists():
                shutil.copy(xml.with_suffix(".bin"), (dest / rel).with_suffix(".bin"))
            n += 1
    return n


def run_batch(src: Path, out: Path, jobs: int, report: Path) -> tuple[float, dict]:
    start = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "ir2onnx", "convert", str(src), "-o", str(out), "--jobs", str(jobs),
                        "--force", "-q", "--report", str(report)], cwd=ROOT, capture_output=True, text=True,
                       check=False)
    wall = time.perf_counter() - start
    if r.returncode not in (0, 1):
        raise SystemExit(f"ir2onnx convert exited {r.returncode}:\n{r.stderr}")
    return wall, json.loads(report.read_text())


def main() -> None:
    n = cores()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, nargs="+", default=sorted({1, n}), help=f"worker counts (default 1 and {n})")
    p.add_argument("--repeat", type=int, default=2, help="timed runs per worker count (the median is shown)")
    p.add_argument("--single", action="store_true",
                   help="also time one `ir2onnx convert MODEL.xml` process per IR, one after the other")
    a = p.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        src, out, report = Path(tmp) / "irs", Path(tmp) / "out", Path(tmp) / "r.json"
        count = copy_irs(src)
        print(f"{count} IRs from tests/fixtures and samples; {n} cores; {os.uname().machine}")
        load = os.getloadavg()[0]
        run_batch(src, out, max(a.jobs), report)  # untimed: page cache and bytecode warm
        rows = []
        for jobs in a.jobs:
            walls, doc = [], {}
            for _ in range(a.repeat):
                wall, doc = run_batch(src, out, jobs, report)
                walls.append(wall)
            models = doc["models"]
            rows.append((jobs, statistics.median(walls), sum(m["seconds"] for m in models),
                         sum(m["conversion"] == "converted" for m in models), len(models)))
        print(f"load average (1 min) before {load:.2f}, after {os.getloadavg()[0]:.2f} (the runs themselves load "
              f"up to {max(a.jobs)}: other work on the machine shows above that)")
        base = next((w for j, w, *_ in rows if j == 1), rows[0][1])
        print()
        print("| jobs | IRs | converted | not converted | wall s | IRs/s | speed-up | sum of per-IR s |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for jobs, wall, busy, converted, total in rows:
            print(f"| {jobs} | {total} | {converted} | {total - converted} | {wall:.2f} | {total / wall:.1f} | "
                  f"{base / wall:.2f}x | {busy:.2f} |")
        if a.single:
            start = time.perf_counter()
            for m in doc["models"]:
                subprocess.run([sys.executable, "-m", "ir2onnx", "convert", str(src / m["ir"]), "-o",
                                str(Path(tmp) / "single" / m["output"]), "-q"], cwd=ROOT, capture_output=True,
                               check=False)
            wall = time.perf_counter() - start
            total = len(doc["models"])
            print(f"| one process per IR | {total} | | | {wall:.2f} | {total / wall:.1f} | {base / wall:.2f}x | |")
        refused = [m for m in doc["models"] if not m["ok"]]
        if refused:
            print("\nnot converted (the same in every run):")
            for m in refused:
                print(f"  {m['ir']}: {m['status']}: {m['reason'][:150]}")


if __name__ == "__main__":
    main()

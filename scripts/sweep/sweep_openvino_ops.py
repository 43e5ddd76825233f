"""Sweep: single-op OpenVINO models (built with openvino.opsetN) x element types x shapes x attributes, converted by
ir2onnx, run by onnxruntime and compared with OpenVINO's CPU plugin (f32 inference precision).

The configurations come from the table in sweep_specs.py (every op type ir2onnx converts). A configuration that
OpenVINO cannot build, compile or run is skipped ("ov_skip": that element type or attribute value does not exist
for OpenVINO). Where OpenVINO is known to be wrong (checked against numpy; the table names the bug) the converted
model is compared with numpy instead.

    python scripts/sweep/sweep_openvino_ops.py [--filter REGEX] [--every N] [--jobs N] [--json OUT.json] [-v]
                                               [--types-json scripts/sweep/swept_types.json]

Prints the failing configurations grouped by status, a table per op family and per op, and the pass rate over the
configurations OpenVINO runs. Floats compare within one unit in the last place of the swept type (f32: 1e-5),
integers and booleans exactly. `--types-json` (a run over every configuration) writes, per op version, the element
types OpenVINO ran and how they fared: docs/operators.md shows them (scripts/gen/gen_operators.py reads the file).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))  # scripts/bench/harness.py
from harness import FAILURES, first_line, judge, print_failures, print_table, run_workers, write_json

# (rtol, atol) by the swept element type, for float outputs: one unit in the last place of that type
TOLERANCE = {"f16": (2.0**-10, 2.0**-14), "bf16": (2.0**-7, 2.0**-10), "f32": (1e-5, 1e-5), "f64": (1e-5, 1e-5)}


def configs(pattern: str | None = None, every: int = 1) -> list:
    from sweep_specs import all_configs

    cs = all_configs()
    if pattern:
        rx = re.compile(pattern)
        cs = [c for c in cs if rx.search(c.name)]
    return cs[::every]


TYPES_JSON = Path(__file__).with_name("swept_types.json")


def swept_types(recs: list[dict]) -> dict:
    """{op: {"opsetN": "f32 f16 ... i64* ..."}}: the element types of the configurations OpenVINO runs, "*" after
    a type some of whose configurations are compared with numpy (OpenVINO is wrong there), "!" after one that fails."""
    from sweep_specs import ALL

    out: dict = {}
    for r in recs:
        if r["status"] == "ov_skip":
            continue
        op, version = r["case"].split("/")[0].rsplit("-", 1)
        cell = out.setdefault(op, {}).setdefault(version, {})
        was = cell.get(r["type"], "pass")
        now = "fail" if r["status"] != "pass" else "numpy" if r.get("ov_bug") else "pass"
        cell[r["type"]] = max(was, now, key=("pass", "numpy", "fail").index)
    mark = {"pass": "", "numpy": "*", "fail": "!"}
    return {op: {v: " ".join(t + mark[cell[t]] for t in ALL if t in cell) for v, cell in sorted(vs.items())}
            for op, vs in sorted(out.items())}


def write_types(path: str, recs: list[dict]) -> None:
    """The swept types as JSON, one op a line."""
    import openvino

    rows = ",\n".join(f"{json.dumps(op)}: {json.dumps(vs)}" for op, vs in swept_types(recs).items())
    Path(path).write_text(f'{{"openvino": {json.dumps(openvino.__version__.split("-")[0])}, '
                          f'"configurations": {len(recs)}, "ops": {{\n{rows}\n}}}}\n')


def run_config(cfg, work: Path) -> dict:
    """One configuration: 'ov_skip' (OpenVINO refuses it), else 'pass', 'refused', 'invalid', 'mismatch', 'crash'."""
    import numpy as np
    import openvino as ov

    rec: dict = {"case": cfg.name, "op": cfg.op, "family": cfg.family, "type": cfg.type}
    try:
        model, feed = cfg.make()
        xml = work / "m.xml"
        ov.save_model(model, str(xml), compress_to_fp16=False)
        core = ov.Core()
        compiled = core.compile_model(core.read_model(str(xml)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        res = compiled.create_infer_request().infer(feed)
        reference = [np.array(res[o]) for o in compiled.outputs]
    except Exception as e:  # noqa: BLE001
        rec.update(status="ov_skip", reason=first_line(e, 200))
        return rec
    if cfg.ov_bug is not None:  # OpenVINO is wrong here: the numpy reference decides
        rec["ov_bug"] = cfg.ov_bug
        reference = [np.asarray(r) for r in cfg.numpy_reference(feed)]
    float_tol = TOLERANCE.get(cfg.type, TOLERANCE["f32"])

    def tolerance(i: int, want) -> tuple[float, float]:
        rtol, atol = float_tol
        return rtol * cfg.tolerance_ulps, atol * cfg.tolerance_ulps

    rec.update(judge(xml, feed, reference, tolerance))
    return rec


def _worker(pattern: str | None, every: int, start: int, stop: int) -> None:
    cs = configs(pattern, every)[start:stop]
    with tempfile.TemporaryDirectory() as d:
        for i, c in enumerate(cs):
            work = Path(d) / str(i)
            work.mkdir()
            print(json.dumps(run_config(c, work)), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--filter", help="regex on configuration names (OpName-opsetN/type/...)")
    ap.add_argument("--every", type=int, default=1, help="take every N-th configuration (a deterministic sample)")
    ap.add_argument("--jobs", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    ap.add_argument("--json", help="write every configuration's record here")
    ap.add_argument("--types-json", help=f"write the element types swept per op version (a full run; {TYPES_JSON.name})")
    ap.add_argument("--list", action="store_true", help="list the configurations and exit")
    ap.add_argument("-v", "--verbose", action="store_true", help="also list passing configurations")
    ap.add_argument("--worker", nargs=2, type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker(args.filter, args.every, *args.worker)
        return 0
    names = [c.name for c in configs(args.filter, args.every)]
    if args.list:
        print("\n".join(names))
        return 0
    if args.types_json and (args.filter or args.every != 1):
        ap.error("--types-json needs every configuration (no --filter, --every 1)")
    recs = run_workers(__file__, ["--every", str(args.every)] + (["--filter", args.filter] if args.filter else []),
                       names, args.jobs)
    judged = [r for r in recs if r["status"] != "ov_skip"]
    print_failures(judged, args.verbose)
    bugs = sorted({(r["op"], r["ov_bug"]) for r in judged if r.get("ov_bug")})
    if bugs:
        print("\n== OpenVINO wrong (compared with numpy instead)")
        for op, why in bugs:
            print(f"  {op}: {why}")
    statuses = ("pass", *FAILURES, "ov_skip")
    print_table(recs, "family", statuses)
    print_table(recs, "op", statuses)
    counts = Counter(r["status"] for r in recs)
    print(f"\nconfigurations: {len(recs)}; OpenVINO refuses {counts['ov_skip']}; judged {len(judged)}: "
          + ", ".join(f"{s} {counts[s]}" for s in ("pass", *FAILURES)))
    rate = 100.0 * counts["pass"] / len(judged) if judged else 0.0
    print(f"sweep pass rate: {rate:.1f}%")
    write_json(args.json, recs)
    if args.types_json:
        write_types(args.types_json, recs)
    return 0 if not any(counts[s] for s in FAILURES) else 1


if __name__ == "__main__":
    sys.exit(main())

"""A check report as tables on the console and as a JSON file."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ir2onnx.verify.report import CheckReport, LayerwiseReport


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}"


def print_report(out: Console, report: CheckReport) -> None:
    def say(text: str) -> None:
        out.print(text, markup=False, highlight=False)

    title = f"onnxruntime ({report.device}) vs OpenVINO (CPU, f32)" if report.reference else \
        f"onnxruntime ({report.device}) only"
    inputs = Table(title="inputs" + (f" (seed {report.seed})" if report.seed is not None else ""))
    for col in ("input", "shape", "dtype", "values"):
        inputs.add_column(col)
    for i in report.inputs:
        inputs.add_row(i.name, str(list(i.shape)), i.dtype, i.source)
    if report.inputs:
        out.print(inputs)
    table = Table(title=title)
    for col in ("output", "shape", "dtype", "max abs err", "max rel err", "result"):
        table.add_column(col)
    for o in report.outputs:
        verdict = ("PASS" + (f" ({o.message})" if o.quantization_steps is not None else "") if o.passed
                   else f"FAIL ({o.message})") if report.reference else "ran"
        shape = str(list(o.onnx_shape)) + ("" if o.reference_shape in (None, o.onnx_shape)
                                           else f" vs {list(o.reference_shape)}")
        table.add_row(o.name, shape, o.dtype, _fmt(o.max_abs_error), _fmt(o.max_rel_error), verdict)
    if report.outputs:
        out.print(table)
    if report.placement is not None:
        p = report.placement
        say("onnxruntime node placement (bodies included): " +
            ", ".join(f"{n} on {ep}" for ep, n in sorted(p.nodes_per_provider.items())))
        if p.cpu_nodes and report.device == "cuda":
            say("fell back to the CPU: " + "; ".join(p.cpu_nodes))
    if report.layerwise is not None:
        _print_layerwise(out, report.layerwise)
    for note in report.notes:
        say(f"note: {note}")
    if report.failure:
        say(f"check FAILED: {report.failure}")
    elif report.reference:
        say("check passed" if report.passed else "check FAILED: outputs differ from OpenVINO")


def _print_layerwise(out: Console, lw: LayerwiseReport) -> None:
    where = "main graph" if not lw.scope else f"body of layer {lw.scope} (alone, first iteration)"
    table = Table(title=f"layer by layer: {where}")
    for col in ("id", "layer", "type", "line", "port", "max abs err", "max rel err", "result"):
        table.add_column(col)
    for lc in lw.layers:
        c = lc.comparison
        table.add_row(lc.id, lc.name, lc.type, str(lc.line), str(lc.port), _fmt(c.max_abs_error),
                      _fmt(c.max_rel_error), "PASS" if c.passed else f"FAIL ({c.message})")
    out.print(table)
    first = lw.first_divergence
    if first is not None:
        c = first.comparison
        out.print(f"first diverging layer in the {where}: {first.type} '{first.name}' (id {first.id}, line "
                  f"{first.line}, port {first.port}): {c.message}, max abs err {_fmt(c.max_abs_error)}, "
                  f"max rel err {_fmt(c.max_rel_error)}", markup=False, highlight=False)
    for note in lw.notes:
        out.print(f"note: {note}", markup=False, highlight=False)
    if lw.body is not None:
        _print_layerwise(out, lw.body)


def _plain(v: Any) -> Any:
    """JSON-safe: tuples as lists, non-finite floats as strings."""
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def write_report(path: str | os.PathLike[str], report: CheckReport) -> None:
    """The whole report as JSON, written atomically."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(_plain(report.to_dict()), f, indent=1)
            f.write("\n")
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp creates 0600; give the file the usual permissions
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise

"""What `ir2onnx convert DIR` shows: a progress display while it runs, one table at the end, and with --report the
same rows as JSON and as a static HTML page beside it (plain HTML, text escaped, no external assets, no script)."""

from __future__ import annotations

import dataclasses
import html
import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from ir2onnx.batch import CONVERTED, FAILED, PASSED, RAN, REFUSED, UP_TO_DATE, Row, one_line

REPORT_VERSION = 1


class Progress:
    """A transient bar on stderr (only on a terminal, and not --quiet): IRs done of all, the last one finished."""

    def __init__(self, total: int, *, enabled: bool, done: int = 0) -> None:
        self.total, self.enabled, self.done = total, enabled, done
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> Progress:  # noqa: PYI034  (no subclasses; typing.Self needs Python 3.11)
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            from ir2onnx.cli import _console

            self._progress = Progress(TextColumn("converting"), BarColumn(), MofNCompleteColumn(),
                                      TimeElapsedColumn(), TextColumn("{task.description}"),
                                      console=_console(stderr=True), transient=True)
            self._progress.start()
            self._task = self._progress.add_task("", total=self.total, completed=self.done)
        return self

    def advance(self, row: Row) -> None:
        self.done += 1
        if self._progress is not None:
            self._progress.update(self._task, completed=self.done, description=f"{row.ir}: {status(row)}")

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()


def status(row: Row) -> str:
    """The row's outcome in a few words."""
    if row.check is None or row.conversion not in (CONVERTED, UP_TO_DATE):
        return row.conversion
    verdict = {PASSED: "check passed", RAN: "ran (onnxruntime only)", FAILED: "check FAILED"}[row.check]
    return verdict if row.conversion == CONVERTED else f"up to date, {verdict}"


def detail(row: Row) -> str:
    """The reason of a refusal or failure, the check's worst error, else the first warning."""
    if row.reason:
        return row.reason
    if row.check_detail:
        return row.check_detail
    if row.warnings:
        return f"warning: {row.warnings[0]}" + (f" (and {len(row.warnings) - 1} more)" if len(row.warnings) > 1 else "")
    return ""


def size(n: int | None) -> str:
    if n is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def onnx_size(row: Row) -> int | None:
    """The .onnx with its .data file."""
    return None if row.onnx_bytes is None else row.onnx_bytes + (row.data_bytes or 0)


def seconds(row: Row) -> str:
    return "-" if row.conversion == UP_TO_DATE and row.check is None else f"{row.seconds:.2f} s"


def counts(rows: list[Row]) -> dict[str, int]:
    """How many rows end in each status."""
    out: dict[str, int] = {}
    for r in rows:
        out[status(r)] = out.get(status(r), 0) + 1
    return out


def summary(rows: list[Row], wall: float) -> str:
    bad = {status(r) for r in rows if not r.ok}
    parts = [f"{n} {s}" for s, n in sorted(counts(rows).items(), key=lambda kv: (kv[0] in bad, kv[0]))]
    failed = sum(not r.ok for r in rows)
    return f"{len(rows)} IRs in {wall:.1f} s: " + ", ".join(parts) + (f"; {failed} not OK" if failed else "; all OK")


COLUMNS = ("IR", "result", "detail", "time", "IR .bin", "ONNX")


def cells(row: Row) -> tuple[str, ...]:
    return (row.ir, status(row), detail(row), seconds(row), size(row.bin_bytes), size(onnx_size(row)))


def print_table(rows: list[Row], *, root: Path, out_root: Path, jobs: int, check: bool, seconds: float) -> None:
    """The one summary table, on stdout (cells are text, never rich markup)."""
    from rich.table import Table
    from rich.text import Text

    from ir2onnx.cli import _console

    styles = {CONVERTED: "green", UP_TO_DATE: "dim", REFUSED: "yellow", FAILED: "red"}
    table = Table(title=f"{root} -> {out_root} ({jobs} worker{'s' if jobs != 1 else ''}"
                        f"{', checked' if check else ''})")
    for col in COLUMNS:
        table.add_column(col, justify="right" if col in ("time", "IR .bin", "ONNX") else "left",
                         overflow="fold")
    for r in rows:
        style = "red" if r.check == FAILED else styles.get(r.conversion, "")
        values = cells(r)
        table.add_row(*(Text(v, style=style if i == 1 else "") for i, v in enumerate(values)))
    console = _console()
    console.print(table)
    console.print(summary(rows, seconds), markup=False, highlight=False)


def document(rows: list[Row], *, root: Path, out_root: Path, jobs: int, check: bool, force: bool, seconds: float,
             exit_code: int) -> dict[str, Any]:
    """The JSON report: the run, then one object per IR."""
    from ir2onnx import __version__

    return {
        "report_version": REPORT_VERSION,
        "ir2onnx": __version__,
        "input_dir": str(root),
        "output_dir": str(out_root),
        "jobs": jobs,
        "check": check,
        "force": force,
        "seconds": round(seconds, 3),
        "exit_code": exit_code,
        "counts": counts(rows),
        "summary": summary(rows, seconds),
        "models": [{**_rounded(dataclasses.asdict(r)), "status": status(r), "ok": r.ok} for r in rows],
    }


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 3) if k.endswith("seconds") and isinstance(v, float) else v for k, v in row.items()}


def write_reports(path: Path, rows: list[Row], *, root: Path, out_root: Path, jobs: int, check: bool, force: bool,
                  seconds: float, exit_code: int) -> Path:
    """The JSON report at `path` and its HTML page beside it (`path` with .html); returns the page's path."""
    doc = document(rows, root=root, out_root=out_root, jobs=jobs, check=check, force=force, seconds=seconds,
                   exit_code=exit_code)
    page = html_path(path)
    _write_atomic(path, json.dumps(_plain(doc), indent=1) + "\n")
    _write_atomic(page, render_html(rows, doc))
    return page


def html_path(path: Path) -> Path:
    page = path.with_suffix(".html")
    return page if page != path else path.with_name(path.name + ".html")


_CSS = ("body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
        "th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}"
        "td.n{text-align:right;white-space:nowrap}.ok{color:#070}.up{color:#666}.refused{color:#a60}.bad{color:#b00}")


def render_html(rows: list[Row], doc: dict[str, Any]) -> str:
    """The table as a standalone HTML page."""
    e = html.escape

    def css(r: Row) -> str:
        if not r.ok:
            return "refused" if r.conversion == REFUSED else "bad"
        return "up" if r.conversion == UP_TO_DATE and r.check is None else "ok"

    head = "".join(f"<th>{e(c)}</th>" for c in COLUMNS)
    body = []
    for r in rows:
        v = cells(r)
        body.append(f'<tr class="{css(r)}"><td>{e(v[0])}</td><td>{e(v[1])}</td><td>{e(v[2])}</td>'
                    f'<td class="n">{e(v[3])}</td><td class="n">{e(v[4])}</td><td class="n">{e(v[5])}</td></tr>')
    title = f"ir2onnx: {doc['input_dir']} -> {doc['output_dir']}"
    when = time.strftime("%Y-%m-%d %H:%M:%S")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<h1>{e(title)}</h1>\n"
            f"<p>{e(doc['summary'])} ({doc['jobs']} worker{'s' if doc['jobs'] != 1 else ''}"
            f"{', checked' if doc['check'] else ''}; exit code {doc['exit_code']}; ir2onnx {e(doc['ir2onnx'])}, "
            f"{e(when)})</p>\n<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) +
            "\n</tbody>\n</table>\n</body>\n</html>\n")


def _plain(v: Any) -> Any:
    """JSON-safe: tuples as lists, non-finite floats as strings."""
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp creates 0600; give the file the usual permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_verdict(report: Any) -> tuple[str, str]:
    """(passed | ran | failed, the worst error in one line) of a CheckReport."""
    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.3g}"

    if report.failure:
        return FAILED, one_line(report.failure)
    failed = [o for o in report.outputs if not o.passed]
    if failed:  # no error figure (a shape or a name differs) counts as the worst
        worst = max(failed, key=lambda o: (o.max_abs_error is None, o.max_abs_error or 0.0))
        return FAILED, one_line(f"output '{worst.name}': {worst.message or 'differs'} (max abs err "
                                f"{fmt(worst.max_abs_error)}, max rel err {fmt(worst.max_rel_error)})")
    if not report.reference:
        return RAN, "onnxruntime only (OpenVINO is not installed)"
    compared = [o for o in report.outputs if o.max_abs_error is not None]
    if not compared:
        return PASSED, ""
    worst = max(compared, key=lambda o: o.max_abs_error)
    return PASSED, f"max abs err {fmt(worst.max_abs_error)} ('{worst.name}')"

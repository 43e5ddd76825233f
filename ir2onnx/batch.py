"""`ir2onnx convert DIR -o OUTDIR`: every IR under a folder converted (and checked) by a pool of worker processes.

The command's own process finds the IRs (every `*.xml` that is an IR, with its `.bin`), skips those whose output is
newer than both IR files (unless --force), and hands one IR at a time to each of N worker processes. Each worker
imports the converters once and converts with the public API (`ir2onnx.convert_file`, then `ir2onnx.check` with
--check); workers are forked from a fork server that has imported them (`spawn` where the platform has no fork
server). One row per IR comes back: converted, up to date, refused with the reason, failed, and the check's verdict.

* A worker that dies (a native abort in onnxruntime, killed for memory) costs only its IR: the row says how it died
  (with the last lines it wrote on stderr), a new worker takes its place and the others go on.
* Ctrl-C: workers ignore SIGINT; the command stops them with SIGTERM, which unwinds their conversions (convert_file
  removes its temporary files on the way out), kills any that do not end in time, removes what a killed one left
  (its output's temporary files) and exits 130. Outputs already written are complete: convert_file writes atomically.

Nothing heavy is imported here: the parent loads rich to draw, the workers load the converters.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import faulthandler
import logging
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from ir2onnx.cli import one_blas_thread
from ir2onnx.errors import ConversionError

EXIT_INTERRUPTED = 130  # as a shell reports a process ended by SIGINT
# Tests only: "abort:REL" makes the worker os.abort() on the IR at REL (relative to DIR, POSIX form); "stall:REL" makes
# it stall while it writes that IR's weights (its temporary files exist), until it is stopped.
HOOK_ENV = "IR2ONNX_BATCH_TEST_HOOK"

CONVERTED, UP_TO_DATE, REFUSED, FAILED = "converted", "up to date", "refused", "failed"  # Row.conversion
PASSED, RAN = "passed", "ran"  # Row.check (besides FAILED); RAN: onnxruntime only, OpenVINO not installed
_STOP_GRACE_S = 10.0  # how long stopped workers may take to unwind before they are killed
_IR_HEAD = 64 << 10  # an XML is an IR when its root element, <net, appears within this many bytes


class UsageError(ConversionError):
    """The command line asks for something a batch cannot do (exit 2, before anything is converted)."""


@dataclass(frozen=True)
class Task:
    """One IR to convert (or, up to date, only to check)."""

    rel: str  # the .xml relative to DIR, POSIX form
    xml: Path
    bin: Path
    out: Path
    output: str  # the .onnx relative to OUTDIR, POSIX form
    convert: bool = True


@dataclass(frozen=True)
class Options:
    """What every worker does with its IRs: convert_file's keyword arguments; check's, or None without --check."""

    convert: dict[str, Any]
    check: dict[str, Any] | None
    hook: str | None = None


@dataclass
class Row:
    """One IR's outcome, as the table, the JSON report and the HTML page show it."""

    ir: str
    output: str
    conversion: str  # converted, up to date, refused, failed
    reason: str = ""  # refused or failed: one line
    error: str | None = None  # the whole message
    check: str | None = None  # passed, ran, failed; None without --check or when nothing was converted
    check_detail: str = ""  # the worst error (or the failure), one line
    seconds: float = 0.0
    convert_seconds: float | None = None
    check_seconds: float | None = None
    bin_bytes: int | None = None
    onnx_bytes: int | None = None  # the .onnx file
    data_bytes: int | None = None  # its .onnx.data file, when it has one
    warnings: list[str] = field(default_factory=list)
    check_report: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.conversion in (CONVERTED, UP_TO_DATE) and self.check in (None, PASSED, RAN)


# ---------------------------------------------------------------------------------------------------------- planning

def find_irs(root: Path) -> list[Path]:
    """Every IR's .xml under `root` (symlinked folders are not followed), sorted by relative path."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".xml") and _is_ir(Path(dirpath, name)):
                found.append(Path(dirpath, name))
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def _is_ir(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return b"<net" in f.read(_IR_HEAD)
    except OSError:
        return False


def plan(root: Path, out_root: Path, *, force: bool, check: bool) -> tuple[list[Task], list[Row]]:
    """The IRs to hand to workers, and the rows of those up to date that need no worker (all sorted)."""
    xmls = find_irs(root)
    if not xmls:
        raise UsageError(f"no IR (*.xml with its .bin) under {root}")
    rels = [p.relative_to(root) for p in xmls]
    tasks = [Task(r.as_posix(), p, p.with_suffix(".bin"), out_root / r.with_suffix(".onnx"),
                  r.with_suffix(".onnx").as_posix()) for p, r in zip(xmls, rels)]
    inputs = {p.resolve() for t in tasks for p in (t.xml, t.bin)}
    for t in tasks:
        for p in (t.out, _data_path(t.out)):
            if p.resolve() in inputs:
                raise UsageError(f"-o {out_root}: the output {p} would overwrite an input file")
    todo, done = [], []
    for t in tasks:
        if force or not up_to_date(t):
            todo.append(t)
        elif check:
            todo.append(dataclasses.replace(t, convert=False))
        else:
            done.append(_up_to_date_row(t))
    return todo, done


def up_to_date(t: Task) -> bool:
    """The output exists and is newer than the .xml and the .bin."""
    try:
        made = t.out.stat().st_mtime_ns
        return made > max(t.xml.stat().st_mtime_ns, t.bin.stat().st_mtime_ns)
    except OSError:
        return False


def _up_to_date_row(t: Task) -> Row:
    row = Row(t.rel, t.output, UP_TO_DATE)
    _fill_sizes(row, t)
    return row


def _data_path(out: Path) -> Path:
    return out.parent / (out.name + ".data")


def _fill_sizes(row: Row, t: Task) -> None:
    def size(p: Path) -> int | None:
        try:
            return p.stat().st_size
        except OSError:
            return None

    row.bin_bytes = size(t.bin)
    row.onnx_bytes = size(t.out) if row.conversion in (CONVERTED, UP_TO_DATE) else None
    row.data_bytes = size(_data_path(t.out)) if row.onnx_bytes is not None else None


def one_line(message: str, limit: int = 400) -> str:
    """An error's first line; a first line that announces a list (ends with ':') gets the list's items after it."""
    lines = [x.strip() for x in str(message).strip().splitlines() if x.strip()]
    if not lines:
        return ""
    text = lines[0]
    if text.endswith(":") and len(lines) > 1:
        text += " " + "; ".join(x.removeprefix("- ") for x in lines[1:])
    return text if len(text) <= limit else text[:limit - 3] + "..."


# ------------------------------------------------------------------------------------------------------------ worker

def _worker_main(conn: Any, options: Options, stderr_path: str) -> None:
    """A worker process: converts the tasks received on `conn`, sends back one Row each, until it receives None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the parent handles it
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # the parent stops it: unwind (temporary files go)
    try:
        fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 2)  # what a library prints (or says dying) goes to a file the parent reads on a crash
        os.close(fd)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
        faulthandler.enable()  # a native crash: Python's frames on that stderr
        notes = _capture_warnings()
        import ir2onnx.api  # noqa: F401  (the fork server has it loaded already)

        while True:
            task = conn.recv()
            if task is None:
                return
            os.ftruncate(2, 0)  # this task's stderr only
            notes.clear()
            conn.send(_run_task(task, options, notes))
    except (KeyboardInterrupt, EOFError, OSError):  # stopped, or the parent went away
        return


def _capture_warnings() -> list[str]:
    """The library's warnings (a pass that failed, ...) collected for the row instead of printed."""
    notes: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            notes.append(one_line(record.getMessage()))

    logger = logging.getLogger("ir2onnx")
    logger.addHandler(Collect(logging.WARNING))
    logger.setLevel(logging.WARNING)
    logger.propagate = False
    logging.getLogger("onnx_ir").setLevel(logging.ERROR)  # it logs the failures it recovers from, with tracebacks
    return notes


def _run_task(task: Task, options: Options, notes: list[str]) -> Row:
    import ir2onnx

    hook_kind, _, hook_rel = (options.hook or "").partition(":")
    if hook_kind == "abort" and hook_rel == task.rel:
        os.abort()
    progress = None
    if hook_kind == "stall" and hook_rel == task.rel:
        def progress(done: int, total: int) -> None:
            time.sleep(3600)

    row = Row(task.rel, task.output, CONVERTED if task.convert else UP_TO_DATE)
    start = time.perf_counter()
    if task.convert:
        try:
            ir2onnx.convert_file(task.xml, task.out, progress=progress, **options.convert)
        except Exception as e:  # noqa: BLE001  every failure is the row's
            row.conversion = FAILED if not isinstance(e, ConversionError) else REFUSED
            row.error = str(e) if isinstance(e, ConversionError) else f"internal error: {type(e).__name__}: {e}"
            row.reason = one_line(row.error)
        row.convert_seconds = time.perf_counter() - start
    if options.check is not None and row.conversion in (CONVERTED, UP_TO_DATE):
        began = time.perf_counter()
        try:
            report = ir2onnx.check(task.xml, task.out, **options.check)
            from ir2onnx.batch_report import check_verdict

            row.check, row.check_detail = check_verdict(report)
            row.check_report = report.to_dict()
        except Exception as e:  # noqa: BLE001
            row.check = FAILED
            row.check_detail = one_line(str(e) if isinstance(e, ConversionError)
                                        else f"internal error: {type(e).__name__}: {e}")
        row.check_seconds = time.perf_counter() - began
    row.seconds = time.perf_counter() - start
    _fill_sizes(row, task)
    row.warnings = list(notes)
    return row


# -------------------------------------------------------------------------------------------------------------- pool

def _context() -> Any:
    """forkserver where the platform has it (each worker forked from a process that imported the converters once),
    else spawn. Never plain fork: the command's process may run threads (rich's display)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["ir2onnx.api", "ir2onnx.batch"])
        return ctx
    return multiprocessing.get_context("spawn")


class _Worker:
    def __init__(self, ctx: Any, options: Options, stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, options, str(stderr_path)), daemon=True,
                                name="ir2onnx-batch")
        self.proc.start()
        child.close()
        self.task: Task | None = None
        self.started = 0.0

    def give(self, task: Task) -> None:
        self.task, self.started = task, time.time()
        self.conn.send(task)

    def receive(self) -> Row | None:
        """The row of the task it had, or None when it died."""
        try:
            if self.conn.poll():
                row = self.conn.recv()
                return row if isinstance(row, Row) else None
        except (EOFError, OSError):
            pass
        return None

    def death(self) -> str:
        """How the worker ended, with the last lines it wrote on stderr."""
        self.proc.join(5)
        code = self.proc.exitcode
        if code is None:
            self.proc.kill()
            self.proc.join()
            how = "the worker process stopped answering"
        elif code < 0:
            try:
                how = f"the worker process was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"the worker process was killed by signal {-code}"
        else:
            how = f"the worker process exited with status {code}"
        try:
            said = crash_words(self.stderr_path.read_text(errors="replace"))
        except OSError:
            said = ""
        return f"crashed: {how}" + (f" {said}" if said.startswith("(in ") else f": {said}" if said else "")

    def close(self) -> None:
        if self.proc.is_alive():
            with contextlib.suppress(OSError, ValueError):
                self.conn.send(None)
            self.proc.join(2)
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join()
        self.conn.close()


def run_tasks(tasks: list[Task], options: Options, jobs: int,
              on_row: Callable[[Row], None] = lambda row: None) -> list[Row]:
    """Convert `tasks` with `jobs` worker processes; one Row per task (in the order they finish). A worker's death
    is its task's row; KeyboardInterrupt stops every worker and removes what the unfinished conversions left."""
    rows: list[Row] = []
    queue = deque(tasks)
    workdir = Path(tempfile.mkdtemp(prefix="ir2onnx-batch-"))
    workers: list[_Worker] = []
    count = 0
    ctx = _context()

    def start_one() -> None:
        nonlocal count
        worker = _Worker(ctx, options, workdir / f"worker{count}.stderr")
        count += 1
        workers.append(worker)
        worker.give(queue.popleft())

    try:
        with one_blas_thread(children=True):
            for _ in range(min(jobs, len(queue))):
                start_one()
        while any(w.task is not None for w in workers):
            busy = [w for w in workers if w.task is not None]
            ready = set(wait([w.conn for w in busy] + [w.proc.sentinel for w in busy]))
            for w in busy:
                if w.conn not in ready and w.proc.sentinel not in ready:
                    continue
                task, row = w.task, w.receive()
                assert task is not None
                if row is None:  # it died: its task failed, a new worker takes its place
                    row = Row(task.rel, task.output, FAILED, error=w.death())
                    row.reason = one_line(row.error or "")
                    row.seconds = time.time() - w.started
                    _fill_sizes(row, task)
                    shared = any(o is not w and o.task is not None and o.task.out.parent == task.out.parent
                                 for o in workers)  # a .bin copy there may be another worker's
                    _remove_leftovers(task, w.started, copies=not shared)
                    w.task = None
                    w.close()
                    workers.remove(w)
                    if queue:
                        with one_blas_thread(children=True):
                            start_one()
                else:
                    w.task = None
                    if queue:
                        w.give(queue.popleft())
                rows.append(row)
                on_row(row)
    except BaseException:
        _stop(workers)
        raise
    finally:
        for w in workers:
            w.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return rows


def _stop(workers: list[_Worker]) -> None:
    """Stop every worker now (SIGTERM: their conversions unwind; SIGKILL after a grace period) and remove what an
    unfinished conversion left. A second Ctrl-C does not interrupt this."""
    with _ignoring_sigint():
        for w in workers:
            if w.proc.is_alive():
                with contextlib.suppress(OSError):
                    os.kill(w.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_GRACE_S
        for w in workers:
            w.proc.join(max(0.0, deadline - time.monotonic()))
            if w.proc.is_alive():
                w.proc.kill()
                w.proc.join()
            if w.task is not None:
                _remove_leftovers(w.task, w.started)


def crash_words(stderr: str) -> str:
    """What a dying worker said, in one line: the last lines before Python's fault handler report (a native
    library's message), and the innermost Python frame that report names."""
    lines = [x.strip() for x in stderr.splitlines() if x.strip()]
    fatal = next((i for i, x in enumerate(lines) if x.startswith("Fatal Python error")), len(lines))
    said = lines[max(0, fatal - 3):fatal]
    frame = next((x for x in lines[fatal:] if x.startswith("File ")), None)
    return one_line(" ".join(said + ([f"(in {frame})"] if frame else [])))


def _remove_leftovers(task: Task, since: float, *, copies: bool = True) -> None:
    """The temporary files of `task`'s conversion, should its worker have died before removing them: ir2onnx.write's
    (`.OUT.onnx.*.tmp`, `.tmp.data`, and onnx-ir's `..OUT.onnx.*.tmp.data.*` folder) and, with `copies`, a .bin copy
    of ir2onnx.bincopy's (`.ir2onnx-*.data.tmp`, made since the task started)."""
    d, name = task.out.parent, task.out.name
    with contextlib.suppress(OSError):
        for p in d.iterdir():
            ours = p.name.startswith((f".{name}.", f"..{name}.")) and ".tmp" in p.name
            copy = copies and p.name.startswith(".ir2onnx-") and p.name.endswith(".data.tmp")
            with contextlib.suppress(OSError):
                if not (ours or (copy and p.stat().st_mtime >= since - 1)):
                    continue
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p)
                else:
                    p.unlink()


@contextlib.contextmanager
def _ignoring_sigint() -> Iterator[None]:
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


# ------------------------------------------------------------------------------------------------------ command line

def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def options_from(a: argparse.Namespace) -> Options:
    """The workers' options from `convert`'s arguments; UsageError for those that do not apply to a folder."""
    if a.bin_path is not None:
        raise UsageError("--bin applies to one model, not to a folder (each IR's .bin is beside its .xml)")
    if a.inputs is not None:
        raise UsageError("--inputs applies to one model: a folder's IRs are checked on default inputs")
    if a.device not in ("cpu", "cuda"):
        raise UsageError(f"unknown device '{a.device}' (cpu or cuda)")
    if a.check and a.device == "cuda":
        from ir2onnx.verify.onnxruntime_run import cuda_available, cuda_unavailable_reason

        if not cuda_available():
            raise UsageError(f"--device cuda: {cuda_unavailable_reason()}")
    if a.skip_pass:
        from ir2onnx.passes import pipeline

        unknown = sorted(set(a.skip_pass) - pipeline.names())
        if unknown:
            raise UsageError(f"unknown pass or stage {', '.join(map(repr, unknown))} (ir2onnx.passes.pipeline: "
                             f"{', '.join(sorted(pipeline.names()))})")
    if a.weights is not None and a.external_data is not None and \
            a.weights != ("copy" if a.external_data else "inline"):
        raise UsageError(f"--weights {a.weights} contradicts --{'' if a.external_data else 'no-'}external-data")
    convert = {"opset": a.opset, "optimize": a.optimize, "fuse": a.fuse, "weights": a.weights,
               "external_data": a.external_data, "f16_as_f32": a.f16_as_f32, "device": a.device,
               "skip_passes": tuple(a.skip_pass or ()), "quantization": a.quantization, "portable": a.portable}
    if a.input_shapes:  # every IR gets them: one whose inputs they do not fit is refused (its row says why)
        from ir2onnx.input_shapes import parse

        convert["input_shapes"] = parse(a.input_shapes)
    check = {"device": a.device, "rtol": a.rtol, "atol": a.atol, "seed": a.seed, "timeout": a.timeout,
             "layerwise": a.layerwise} if a.check else None
    return Options(convert, check, os.environ.get(HOOK_ENV) or None)


def convert_dir(a: argparse.Namespace) -> int:
    """`ir2onnx convert DIR -o OUTDIR`: exit 0 when every IR converted (and passed the check), 1 when one did not,
    2 for a usage error, 130 when interrupted."""
    from ir2onnx.cli import EXIT_BAD_INPUT, EXIT_MISMATCH, EXIT_OK, _fail, _say

    root: Path = a.model
    try:
        if a.output is None:
            raise UsageError("converting a folder needs -o OUTDIR (the folder the ONNX files go to, in DIR's layout)")
        out_root: Path = a.output
        if out_root.exists() and not out_root.is_dir():
            raise UsageError(f"-o {out_root}: not a folder (converting the folder {root} needs an output folder)")
        jobs = cores() if a.jobs is None else a.jobs
        if jobs < 1:
            raise UsageError(f"--jobs {jobs}: at least 1")
        options = options_from(a)
        todo, rows = plan(root, out_root, force=a.force, check=a.check)
    except ConversionError as e:
        return _fail(e, a.debug)

    from ir2onnx.batch_report import Progress, print_table, write_reports

    total = len(todo) + len(rows)
    began = time.perf_counter()
    progress = Progress(total, enabled=not a.quiet and sys.stderr.isatty(), done=len(rows))

    def done(row: Row) -> None:
        rows.append(row)
        progress.advance(row)

    try:
        with progress:
            run_tasks(todo, options, jobs, on_row=done)
    except KeyboardInterrupt:
        _say(f"interrupted: {len(rows)} of {total} IRs done (their outputs complete), the conversions under way "
             "stopped; nothing half-written is left", stderr=True)
        return EXIT_INTERRUPTED
    rows.sort(key=lambda r: r.ir)
    seconds = time.perf_counter() - began
    code = EXIT_OK if all(r.ok for r in rows) else EXIT_MISMATCH
    print_table(rows, root=root, out_root=out_root, jobs=jobs, check=a.check, seconds=seconds)
    if a.report_path is not None:
        try:
            html = write_reports(a.report_path, rows, root=root, out_root=out_root, jobs=jobs, check=a.check,
                                 force=a.force, seconds=seconds, exit_code=code)
        except OSError as e:
            _say(f"error: cannot write the report {a.report_path}: {e}", stderr=True)
            return EXIT_BAD_INPUT
        if not a.quiet:
            _say(f"wrote {a.report_path} and {html}")
    return code

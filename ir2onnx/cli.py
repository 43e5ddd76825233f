"""Command line: `ir2onnx convert`, `check`, `info`, `ops`. Flags -> API -> report and exit code.

Built on argparse (standard library) so that the command starts at once: `--help`, `ops` and `info` load neither
onnx nor the converters, and rich (tables, progress display) is imported only when something is drawn.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import logging
import os
import sys
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ir2onnx.errors import ConversionError

EXIT_OK, EXIT_MISMATCH, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
WEIGHT_MODES = ("reference", "copy", "inline")  # as ir2onnx.write.WEIGHT_MODES (not imported: it loads onnx-ir)

_WEIGHTS_HELP = (
    "where the weights go. reference: the ONNX file points into the IR's .bin (no copy; the .onnx then needs the "
    ".bin at the same path relative to it, in its directory or below), weights the conversion computes go to "
    "OUT.onnx.data. copy: all to OUT.onnx.data. inline: all inside the .onnx (< 2 GiB). Default: reference when "
    "the output's directory holds the .bin, else copy")


@functools.cache
def _console(stderr: bool = False) -> Any:
    """rich's console for tables and progress displays, made when first needed."""
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True) if stderr else Console(soft_wrap=True)


def _say(text: str, *, stderr: bool = False) -> None:
    print(text, file=sys.stderr if stderr else sys.stdout, flush=True)


def _fail(e: BaseException, debug: bool) -> int:
    if debug:
        traceback.print_exception(e)
    if isinstance(e, ConversionError):
        _say(f"error: {e}", stderr=True)
        return EXIT_BAD_INPUT
    _say(f"internal error: {type(e).__name__}: {e}", stderr=True)
    return EXIT_INTERNAL


def convert(a: argparse.Namespace) -> int:
    """Convert MODEL.xml to ONNX, optionally checking it against OpenVINO (or every IR under a folder DIR, into the
    folder -o OUTDIR)."""
    if a.model.is_dir():  # every IR under it, by worker processes (ir2onnx/batch.py)
        from ir2onnx.batch import convert_dir

        return convert_dir(a)
    if a.jobs is not None or a.force:
        return _fail(ConversionError("--jobs and --force apply to a folder (convert DIR -o OUTDIR)"), a.debug)
    from ir2onnx import bincopy, input_shapes
    from ir2onnx._lazy import defer_unused
    from ir2onnx.translate import ort_helper

    try:
        shapes = input_shapes.parse(a.input_shapes) if a.input_shapes else None
    except ConversionError as e:
        return _fail(e, a.debug)
    # started first, so that it imports onnxruntime while this process loads the converters and converts (--check
    # loads onnxruntime here anyway)
    helper = None if a.check else ort_helper.Helper.start()
    if a.external_data is None:  # a large .bin whose weights are copied: copied meanwhile, in a thread
        model = Path(a.model)
        bincopy.prefetch(a.bin_path or model.with_suffix(".bin"), Path(a.output) if a.output else
                         model.with_suffix(".onnx"), a.weights)
    defer_unused()  # sympy, and onnx's own tools: not needed to convert
    try:
        with one_blas_thread(), _no_gc(fewer_passes_after=a.own_process):
            import ir2onnx.api  # numpy, onnx and the converters
    except BaseException:
        bincopy.cancel()
        raise

    bar = _WriteProgress(not a.quiet and sys.stderr.isatty())
    if a.quiet:
        logging.getLogger("ir2onnx").setLevel(logging.WARNING)
    try:
        with ort_helper.using(helper):
            if a.device not in ("cpu", "cuda"):
                raise ConversionError(f"unknown device '{a.device}' (cpu or cuda)")
            if a.check and a.device == "cuda":
                from ir2onnx.verify.onnxruntime_run import cuda_available, cuda_unavailable_reason

                if not cuda_available():
                    raise ConversionError(f"--device cuda: {cuda_unavailable_reason()}")
            with bar:
                path = ir2onnx.convert_file(a.model, a.output, a.bin_path, opset=a.opset, optimize=a.optimize,
                                            fuse=a.fuse, weights=a.weights, external_data=a.external_data,
                                            progress=bar.update, f16_as_f32=a.f16_as_f32, device=a.device,
                                            skip_passes=a.skip_pass or (), quantization=a.quantization,
                                            input_shapes=shapes, portable=a.portable)
        if not a.quiet:
            _say(f"wrote {path}")
        if not a.check:
            return EXIT_OK
    except Exception as e:  # noqa: BLE001  every failure becomes one readable line and an exit code
        return _fail(e, a.debug)
    finally:
        bincopy.cancel()  # (a failure before the conversion took it)
    code = _check(a.model, path, a)
    if code == EXIT_MISMATCH and (a.optimize or a.fuse):
        _bisect(a)
    return code


def _bisect(a: argparse.Namespace) -> None:
    """After a failed check of an optimised conversion: the first pass whose output diverges (verify/bisect.py),
    said on the console and added to the JSON report."""
    from ir2onnx import input_shapes
    from ir2onnx.verify.bisect import bisect_conversion

    try:
        with _status("finding the pass that changed the result", a.quiet):
            found = bisect_conversion(
                str(a.model), bin_path=str(a.bin_path) if a.bin_path else None,
                check_options={"inputs": a.inputs, "device": a.device, "rtol": a.rtol, "atol": a.atol,
                               "seed": a.seed, "timeout": a.timeout},
                opset=a.opset, optimize=a.optimize, fuse=a.fuse, f16_as_f32=a.f16_as_f32, device=a.device,
                skip_passes=a.skip_pass or (), quantization=a.quantization,
                input_shapes=input_shapes.parse(a.input_shapes) if a.input_shapes else None, portable=a.portable)
    except Exception as e:  # noqa: BLE001  the check's verdict stands; the search is an aid
        _say(f"the passes could not be bisected: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        return
    text = found.describe() if found is not None else (
        "the conversion without optimising passes fails the check too: the translation differs, not a pass")
    _say(text)
    if a.report_path is not None:
        import json

        data = json.loads(Path(a.report_path).read_text())
        data["bisection"] = None if found is None else {
            "stage": found.stage, "pass": found.pass_name, "index": found.index, "of": found.of,
            "layers": list(found.layers), "checks": found.checks, "text": text}
        Path(a.report_path).write_text(json.dumps(data, indent=1))


@contextlib.contextmanager
def one_blas_thread(*, children: bool = False) -> Iterator[None]:
    """numpy loaded within the block starts no OpenBLAS threads besides this one. They would spin for about 0.1 s of
    CPU time after the import, competing with the conversion and its onnxruntime helper on machines with few cores;
    a conversion does no linear algebra. (OpenBLAS reads the variable when numpy loads it; set only for that, and
    only where the user has not set it.) `children`: for the processes started within the block (batch.py's
    workers), whether or not this one has loaded numpy."""
    key = "OPENBLAS_NUM_THREADS"
    ours = key not in os.environ and (children or "numpy" not in sys.modules)
    if ours:
        os.environ[key] = "1"
    try:
        yield
    finally:
        if ours:
            del os.environ[key]


@contextlib.contextmanager
def _no_gc(*, fewer_passes_after: bool = False) -> Iterator[None]:
    """Python's cyclic garbage collector paused: importing creates objects, not garbage. `fewer_passes_after`: for a
    process that ends after the conversion, what was loaded stays, so the collector stops examining it (gc.freeze,
    before it runs again: its first pass after the imports would examine their ~70,000 objects, about 20 ms), and it
    runs after 20,000 new container objects rather than 700. A conversion allocates many objects and little cyclic
    garbage: the collector took about 6% of converting a 1,500-layer network, and the garbage it found there held no
    measurable memory."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if fewer_passes_after:
            gc.freeze()
            _, second, third = gc.get_threshold()
            gc.set_threshold(20_000, second, third)
        if was:
            gc.enable()


def check(a: argparse.Namespace) -> int:
    """Compare an existing ONNX model with the IR (exit 0 equal, 1 mismatch, 2 bad input)."""
    return _check(a.model, a.onnx_model, a)


def _check(model: Path, onnx_path: Path, a: argparse.Namespace) -> int:
    """The check shared by `convert --check` and `check`: report on the console (and as JSON), exit code."""
    import ir2onnx
    from ir2onnx.verify.render import print_report, write_report

    try:
        if not onnx_path.is_file():
            raise ConversionError(f"cannot read the ONNX model {onnx_path}: no such file")
        with _status("checking: onnxruntime and OpenVINO run the model", a.quiet):
            report = ir2onnx.check(model, str(onnx_path), bin_path=a.bin_path, inputs=a.inputs, device=a.device,
                                   rtol=a.rtol, atol=a.atol, seed=a.seed, timeout=a.timeout, layerwise=a.layerwise)
        print_report(_console(), report)
        if a.report_path is not None:
            write_report(a.report_path, report)
    except Exception as e:  # noqa: BLE001
        return _fail(e, a.debug)
    return EXIT_OK if report.passed else EXIT_MISMATCH


class _WriteProgress:
    """A transient progress bar on stderr for the weights being written (only on a terminal, and not --quiet)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> _WriteProgress:  # noqa: PYI034  (no subclasses; typing.Self needs Python 3.11)
        return self

    def update(self, done: int, total: int) -> None:
        if not self.enabled or total < _PROGRESS_MIN_BYTES:
            return
        if self._progress is None:
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

            self._progress = Progress(TextColumn("writing weights"), BarColumn(), DownloadColumn(),
                                      TransferSpeedColumn(), console=_console(stderr=True), transient=True)
            self._progress.start()
            self._task = self._progress.add_task("weights", total=total)
        self._progress.update(self._task, completed=done)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()


_PROGRESS_MIN_BYTES = 64 << 20  # below this, writing takes a moment: no bar


def _status(message: str, quiet: bool) -> Any:
    """A spinner on stderr while a longer step runs (only on a terminal, and not --quiet)."""
    if quiet or not sys.stderr.isatty():
        return contextlib.nullcontext()
    return _console(stderr=True).status(message)


def info(a: argparse.Namespace) -> int:
    """Op counts and the structure of every TensorIterator/Loop."""
    from ir2onnx.info import describe_loops, fake_quantize_forms, op_counts
    from ir2onnx.ir.xml_reader import read_xml

    try:
        ir_model = read_xml(str(a.model))
    except Exception as e:  # noqa: BLE001
        return _fail(e, a.debug)
    weights = None
    if any(layer.type == "FakeQuantize" for layer in ir_model.graph.walk()):
        from ir2onnx.ir.weights import Weights

        bin_path = a.model.with_suffix(".bin")
        weights = Weights(str(bin_path)) if bin_path.is_file() else None
    from rich.table import Table

    table = Table(title=f"{a.model} (IR v{ir_model.ir_version})")
    table.add_column("op")
    table.add_column("count", justify="right")
    for op, n in sorted(op_counts(ir_model.graph).items()):
        table.add_row(op, str(n))
    _console().print(table)
    for line in describe_loops(ir_model.graph):
        _say(line)
    forms = fake_quantize_forms(ir_model.graph, weights) if weights is not None else None
    if forms:
        _say("FakeQuantize with --quantization onnx: " + "; ".join(f"{n} {form}" for form, n in sorted(forms.items())))
    return EXIT_OK


def ops(a: argparse.Namespace) -> int:
    """The supported IR op types and the opsets of their versions."""
    from ir2onnx.translate.ops.index import VERSIONS  # generated from the registry: no converter is imported

    for name, versions in sorted(VERSIONS.items(), key=lambda kv: kv[0].lower()):
        _say(f"{name}: " + ", ".join(f"opset{v}" for v in versions))
    return EXIT_OK


def _check_options(p: argparse.ArgumentParser, *, in_convert: bool) -> None:
    """The check's options, shared by `convert --check` and `check`."""
    what = "the check's " if in_convert else "the "
    p.add_argument("--inputs", type=Path, metavar="FILE.npz", help=f".npz with {what}inputs, keyed by input name")
    p.add_argument("--device", default="cpu", metavar="cpu|cuda",
                   help="cpu or cuda: the onnxruntime execution provider the model is made for (for cuda, "
                        "fused RNN/GRU nodes stay nodes for cuDNN), and where --check runs it" if in_convert
                   else "cpu or cuda: where onnxruntime runs")
    p.add_argument("--rtol", type=float, metavar="R", default=1e-4, help="relative tolerance (default 1e-4)")
    p.add_argument("--atol", type=float, metavar="A", default=1e-5,
                   help="absolute tolerance (default 1e-5), in units of an output's root mean square where that is "
                        "above 1")
    p.add_argument("--seed", type=int, metavar="S", default=0, help=f"seed of {what}random inputs (default 0)")
    p.add_argument("--timeout", type=float, metavar="SECONDS", default=60.0,
                   help="seconds each runtime may run (default 60)")
    p.add_argument("--layerwise", action="store_true", help="compare every layer; name the first that differs")
    p.add_argument("--report", dest="report_path", type=Path, metavar="FILE.json",
                   help=f"write {what}report as JSON" + (" (for DIR: every IR's row, and an HTML page of the table "
                                                         "beside it)" if in_convert else ""))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ir2onnx",
                                description="Convert OpenVINO IR (TensorIterator and Loop included) to ONNX.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    c = sub.add_parser("convert", help="convert MODEL.xml to ONNX, optionally checking it against OpenVINO",
                       description=convert.__doc__)
    c.add_argument("model", type=Path, metavar="MODEL.xml",
                   help="the IR's model.xml, or a folder DIR: every IR under it (with -o OUTDIR)")
    c.add_argument("-o", "--output", type=Path, metavar="OUT.onnx",
                   help="ONNX file (default: MODEL with .onnx); for DIR, the output folder OUTDIR (DIR's layout)")
    c.add_argument("--bin", dest="bin_path", type=Path, metavar="MODEL.bin",
                   help="weights file (default: MODEL with .bin)")
    c.add_argument("--opset", type=int, metavar="N",
                   help="force this ONNX opset (default: the lowest, from 17, that expresses every layer)")
    c.add_argument("--input", dest="input_shapes", action="append", metavar="NAME[DIMS]",
                   help="fix an input's shape before converting, as ovc --input spells it: NAME[1,3,224,224], ? "
                        "keeps a dimension as the IR has it, [DIMS] alone for a model of one input (repeatable). The "
                        "model gets static shapes, its shape arithmetic folded; --check uses those shapes")
    c.add_argument("--check", action="store_true", help="run onnxruntime and compare with OpenVINO")
    _check_options(c, in_convert=True)
    c.add_argument("--optimize", action=argparse.BooleanOptionalAction, default=True,
                   help="apply the default ONNX passes (default: on)")
    c.add_argument("--fuse", action=argparse.BooleanOptionalAction, default=True,
                   help="fuse loops over one LSTM/GRU/RNN cell into one ONNX LSTM/GRU/RNN node (default: on; "
                        "--no-fuse keeps the loops)")
    c.add_argument("--quantization", choices=("onnx", "exact"), default="onnx",
                   help="FakeQuantize layers whose grid is an 8-bit integer one as ONNX QuantizeLinear + "
                        "DequantizeLinear (onnx, the default: within one quantization step of OpenVINO; runtimes see "
                        "the model as quantized), or all of them as OpenVINO computes them (exact)")
    c.add_argument("--skip-pass", action="append", metavar="NAME",
                   help="leave out one pass (its class name) or stage of the pipeline (repeatable): to find which "
                        "pass changes a result; the names are listed on a wrong one")
    c.add_argument("--portable", action="store_true",
                   help="forms every ONNX consumer reads (OpenVINO's ONNX frontend, onnx.reference, onnx2torch, ...), "
                        "not only onnxruntime, and no CPU-only layouts (docs/passes.md#portable-output)")
    c.add_argument("--f16-as-f32", action="store_true",
                   help="compute the IR's f16 layers in f32, as OpenVINO's CPU plugin does (f16 weights, inputs and "
                        "outputs keep their type): results as OpenVINO's, and loops over f16 cells fuse. Default: the "
                        "IR's own types")
    c.add_argument("--weights", choices=WEIGHT_MODES, help=_WEIGHTS_HELP)
    c.add_argument("--external-data", action=argparse.BooleanOptionalAction, default=None,
                   help="older spelling: --external-data is --weights copy, --no-external-data is --weights inline")
    c.add_argument("--jobs", type=int, metavar="N",
                   help="DIR: convert with N worker processes (default: one a core)")
    c.add_argument("--force", action="store_true",
                   help="DIR: convert every IR, also those whose output is newer than the IR")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress display and no 'wrote' line")
    c.add_argument("--debug", action=argparse.BooleanOptionalAction, default=False, help="show tracebacks")
    c.set_defaults(run=convert)

    k = sub.add_parser("check", help="compare an existing ONNX model with the IR", description=check.__doc__)
    k.add_argument("model", type=Path, metavar="MODEL.xml", help="the IR's model.xml")
    k.add_argument("onnx_model", type=Path, metavar="MODEL.onnx", help="the ONNX model to compare with the IR")
    k.add_argument("--bin", dest="bin_path", type=Path, metavar="MODEL.bin",
                   help="weights file (default: MODEL with .bin)")
    _check_options(k, in_convert=False)
    k.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    k.add_argument("--debug", action=argparse.BooleanOptionalAction, default=False, help="show tracebacks")
    k.set_defaults(run=check)

    i = sub.add_parser("info", help="op counts and the structure of every TensorIterator/Loop",
                       description=info.__doc__)
    i.add_argument("model", type=Path, metavar="MODEL.xml", help="the IR's model.xml")
    i.add_argument("--debug", action=argparse.BooleanOptionalAction, default=False, help="show tracebacks")
    i.set_defaults(run=info)

    o = sub.add_parser("ops", help="the supported IR op types and the opsets of their versions",
                       description=ops.__doc__)
    o.set_defaults(run=ops)
    return p


def main(argv: Sequence[str] | None = None) -> None:
    """The console entry point: runs the command and exits with its code."""
    try:
        code = run(argv, own_process=argv is None)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (`ir2onnx ops | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's flush at exit would fail again
        code = EXIT_OK
    if argv is None:  # the process's own command line: its work is done
        _exit_now(code)
    sys.exit(code)


def _exit_now(code: int) -> None:
    """End the process without Python's teardown of the libraries it loaded, which took 0.1-0.15 s after a
    conversion (a fifth of converting a small model). The command's files are written and closed by now; the standard
    streams and logging's handlers are flushed here."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def run(argv: Sequence[str] | None = None, *, own_process: bool = False) -> int:
    """Parse `argv` (default: the process's arguments), run the command, return its exit code. `own_process`: the
    process runs this command only, and ends after it (process-wide settings may be tuned for it)."""
    handler = logging.StreamHandler(sys.stderr)  # the library's notes (e.g. the opset chosen) go to stderr
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("ir2onnx")
    level = logger.level
    logger.addHandler(handler)  # for this call only: calling run() again adds no second handler
    logger.setLevel(logging.INFO)
    # onnx_ir logs the failures it recovers from with their tracebacks (Python's last-resort handler prints them)
    quiet = logging.getLogger("onnx_ir")
    quiet_level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        p = parser()
        a = p.parse_args(argv)
        a.own_process = own_process
        if a.command is None:
            p.print_help(sys.stderr)
            return EXIT_BAD_INPUT
        return int(a.run(a))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        quiet.setLevel(quiet_level)


if __name__ == "__main__":
    sys.exit(main())

"""Command line: `ir2onnx convert`, `ir2onnx info`, `ir2onnx ops`. Flags -> API -> report and exit code."""

from __future__ import annotations

import contextlib
import logging
import sys
import traceback
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from ir2onnx.errors import ConversionError

EXIT_OK, EXIT_MISMATCH, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Convert OpenVINO IR (TensorIterator and Loop included) to ONNX.")
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def _fail(e: BaseException, debug: bool) -> None:
    if debug:
        traceback.print_exception(e)
    if isinstance(e, ConversionError):
        err.print(f"error: {e}", markup=False, highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT)
    err.print(f"internal error: {type(e).__name__}: {e}", markup=False, highlight=False)
    raise typer.Exit(EXIT_INTERNAL)


class WeightMode(str, Enum):
    reference = "reference"
    copy = "copy"
    inline = "inline"


@app.command()
def convert(
    model: Annotated[Path, typer.Argument(help="The IR's model.xml")],
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="ONNX file (default: MODEL with .onnx)")] = None,
    bin_path: Annotated[Optional[Path], typer.Option("--bin", help="Weights file (default: MODEL with .bin)")] = None,
    opset: Annotated[Optional[int], typer.Option(
        help="Force this ONNX opset (default: the lowest, from 17, that expresses every layer)")] = None,
    check: Annotated[bool, typer.Option("--check", help="Run onnxruntime and compare with OpenVINO")] = False,
    device: Annotated[str, typer.Option(help="cpu or cuda (for --check)")] = "cpu",
    inputs: Annotated[Optional[Path], typer.Option(help=".npz with the check's inputs, keyed by input name")] = None,
    rtol: Annotated[float, typer.Option(help="Relative tolerance of the check")] = 1e-4,
    atol: Annotated[float, typer.Option(help="Absolute tolerance of the check")] = 1e-5,
    seed: Annotated[int, typer.Option(help="Seed of the check's random inputs")] = 0,
    timeout: Annotated[float, typer.Option(help="Seconds each runtime may run in the check")] = 60.0,
    layerwise: Annotated[bool, typer.Option("--layerwise", help="Compare every layer; name the first that differs")] = False,
    report_path: Annotated[Optional[Path], typer.Option("--report", help="Write the check's report as JSON")] = None,
    optimize: Annotated[bool, typer.Option(help="Apply the default ONNX passes")] = True,
    fuse: Annotated[bool, typer.Option(help="Fuse loops over one LSTM/GRU/RNN cell into one ONNX LSTM/GRU/RNN node "
                                            "(--no-fuse keeps the loops)")] = True,
    weights: Annotated[Optional[WeightMode], typer.Option(
        help="Where the weights go. reference: the ONNX file points into the IR's .bin (no copy; the .onnx then "
             "needs the .bin at the same path relative to it, in its directory or below), weights the conversion "
             "computes go to OUT.onnx.data. copy: all to OUT.onnx.data. inline: all inside the .onnx (< 2 GiB). "
             "Default: reference when the output's directory holds the .bin, else copy.",
        show_default=False)] = None,
    external_data: Annotated[Optional[bool], typer.Option(
        help="Older spelling: --external-data is --weights copy, --no-external-data is --weights inline")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no 'wrote' line")] = False,
    debug: Annotated[bool, typer.Option(help="Show tracebacks")] = False,
) -> None:
    """Convert MODEL.xml to ONNX, optionally checking it against OpenVINO."""
    from ir2onnx._lazy import defer_symbolic_shapes

    defer_symbolic_shapes()  # onnx-ir's sympy is only needed for shape arithmetic the conversion does not do
    import ir2onnx

    bar = _progress_bar(quiet)
    if quiet:
        logging.getLogger("ir2onnx").setLevel(logging.WARNING)
    try:
        if device not in ("cpu", "cuda"):
            raise ConversionError(f"unknown device '{device}' (cpu or cuda)")
        if check and device == "cuda":
            from ir2onnx.check.onnxruntime_run import cuda_available, cuda_unavailable_reason

            if not cuda_available():
                raise ConversionError(f"--device cuda: {cuda_unavailable_reason()}")
        with bar:
            path = ir2onnx.convert_file(model, output, bin_path, opset=opset, optimize=optimize, fuse=fuse,
                                        weights=weights.value if weights is not None else None,
                                        external_data=external_data, progress=bar.update)
        if not quiet:
            out.print(f"wrote {path}", markup=False, highlight=False)
        if not check:
            return
    except Exception as e:  # noqa: BLE001  every failure becomes one readable line and an exit code
        _fail(e, debug)
        return
    _check(model, path, bin_path, inputs, device, rtol, atol, seed, timeout, layerwise, report_path, debug, quiet)


@app.command("check")
def check_command(
    model: Annotated[Path, typer.Argument(help="The IR's model.xml")],
    onnx_model: Annotated[Path, typer.Argument(metavar="MODEL.onnx", help="The ONNX model to compare with the IR")],
    bin_path: Annotated[Optional[Path], typer.Option("--bin", help="Weights file (default: MODEL with .bin)")] = None,
    inputs: Annotated[Optional[Path], typer.Option(help=".npz with the inputs, keyed by input name")] = None,
    device: Annotated[str, typer.Option(help="cpu or cuda: where onnxruntime runs")] = "cpu",
    report_path: Annotated[Optional[Path], typer.Option("--report", help="Write the report as JSON")] = None,
    rtol: Annotated[float, typer.Option(help="Relative tolerance")] = 1e-4,
    atol: Annotated[float, typer.Option(help="Absolute tolerance")] = 1e-5,
    seed: Annotated[int, typer.Option(help="Seed of the default inputs")] = 0,
    timeout: Annotated[float, typer.Option(help="Seconds each runtime may run")] = 60.0,
    layerwise: Annotated[bool, typer.Option("--layerwise", help="Compare every layer; name the first that differs")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display")] = False,
    debug: Annotated[bool, typer.Option(help="Show tracebacks")] = False,
) -> None:
    """Compare an existing ONNX model with the IR (exit 0 equal, 1 mismatch, 2 bad input)."""
    _check(model, onnx_model, bin_path, inputs, device, rtol, atol, seed, timeout, layerwise, report_path, debug,
           quiet)


def _check(model: Path, onnx_path: Path, bin_path: Optional[Path], inputs: Optional[Path], device: str, rtol: float,
           atol: float, seed: int, timeout: float, layerwise: bool, report_path: Optional[Path], debug: bool,
           quiet: bool) -> None:
    """The check shared by `convert --check` and `check`: report on the console (and as JSON), exit code."""
    import ir2onnx
    from ir2onnx.check.render import print_report, write_report

    try:
        if not onnx_path.is_file():
            raise ConversionError(f"cannot read the ONNX model {onnx_path}: no such file")
        with _status("checking: onnxruntime and OpenVINO run the model", quiet):
            report = ir2onnx.check(model, str(onnx_path), bin_path=bin_path, inputs=inputs, device=device,
                                   rtol=rtol, atol=atol, seed=seed, timeout=timeout, layerwise=layerwise)
        print_report(out, report)
        if report_path is not None:
            write_report(report_path, report)
    except Exception as e:  # noqa: BLE001
        _fail(e, debug)
        return
    if not report.passed:
        raise typer.Exit(EXIT_MISMATCH)


class _WriteProgress:
    """A transient progress bar on stderr for the weights being written (only on a terminal, and not --quiet)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._progress = None
        self._task = None

    def __enter__(self) -> _WriteProgress:
        return self

    def update(self, done: int, total: int) -> None:
        if not self.enabled or total < _PROGRESS_MIN_BYTES:
            return
        if self._progress is None:
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

            self._progress = Progress(TextColumn("writing weights"), BarColumn(), DownloadColumn(),
                                      TransferSpeedColumn(), console=err, transient=True)
            self._progress.start()
            self._task = self._progress.add_task("weights", total=total)
        self._progress.update(self._task, completed=done)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()


_PROGRESS_MIN_BYTES = 64 << 20  # below this, writing takes a moment: no bar


def _progress_bar(quiet: bool) -> _WriteProgress:
    return _WriteProgress(not quiet and err.is_terminal)


def _status(message: str, quiet: bool):  # type: ignore[no-untyped-def]
    """A spinner on stderr while a longer step runs (only on a terminal, and not --quiet)."""
    if quiet or not err.is_terminal:
        return contextlib.nullcontext()
    return err.status(message)


@app.command()
def info(
    model: Annotated[Path, typer.Argument(help="The IR's model.xml")],
    debug: Annotated[bool, typer.Option(help="Show tracebacks")] = False,
) -> None:
    """Op counts and the structure of every TensorIterator/Loop."""
    from ir2onnx.info import describe_loops, op_counts
    from ir2onnx.ir.xml_reader import read_xml

    try:
        ir_model = read_xml(str(model))
    except Exception as e:  # noqa: BLE001
        _fail(e, debug)
        return
    table = Table(title=f"{model} (IR v{ir_model.ir_version})")
    table.add_column("op")
    table.add_column("count", justify="right")
    for op, n in sorted(op_counts(ir_model.graph).items()):
        table.add_row(op, str(n))
    out.print(table)
    for line in describe_loops(ir_model.graph):
        out.print(line, markup=False, highlight=False)


@app.command()
def ops() -> None:
    """The supported IR op types and the opsets of their versions."""
    from ir2onnx._lazy import defer_import

    defer_import("onnx_ir")  # the converters are only registered here, never run
    import ir2onnx.convert.ops  # noqa: F401
    from ir2onnx.convert.registry import registered

    for name, versions in registered().items():
        out.print(f"{name}: " + ", ".join(f"opset{v}" for v in versions), markup=False, highlight=False)


def main() -> None:
    handler = logging.StreamHandler(sys.stderr)  # the library's notes (e.g. the opset chosen) go to stderr
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("ir2onnx")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    app(prog_name="ir2onnx")


if __name__ == "__main__":
    sys.exit(main())

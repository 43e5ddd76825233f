"""Command line: `ir2onnx convert`, `ir2onnx info`, `ir2onnx ops`. Flags -> API -> report and exit code."""

from __future__ import annotations

import sys
import traceback
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


@app.command()
def convert(
    model: Annotated[Path, typer.Argument(help="The IR's model.xml")],
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="ONNX file (default: MODEL with .onnx)")] = None,
    bin_path: Annotated[Optional[Path], typer.Option("--bin", help="Weights file (default: MODEL with .bin)")] = None,
    opset: Annotated[Optional[int], typer.Option(help="Target ONNX opset")] = None,
    check: Annotated[bool, typer.Option("--check", help="Run onnxruntime and compare with OpenVINO")] = False,
    device: Annotated[str, typer.Option(help="cpu or cuda (for --check)")] = "cpu",
    inputs: Annotated[Optional[Path], typer.Option(help=".npz with the check's inputs, keyed by input name")] = None,
    rtol: Annotated[float, typer.Option(help="Relative tolerance of the check")] = 1e-4,
    atol: Annotated[float, typer.Option(help="Absolute tolerance of the check")] = 1e-5,
    seed: Annotated[int, typer.Option(help="Seed of the check's random inputs")] = 0,
    optimize: Annotated[bool, typer.Option(help="Apply the default ONNX passes")] = True,
    external_data: Annotated[Optional[bool], typer.Option(help="Weights in a side file (default: when > 1 GiB)")] = None,
    debug: Annotated[bool, typer.Option(help="Show tracebacks")] = False,
) -> None:
    """Convert MODEL.xml to ONNX, optionally checking it against OpenVINO."""
    import ir2onnx
    from ir2onnx.check.inputs import load_inputs

    try:
        if device not in ("cpu", "cuda"):
            raise ConversionError(f"unknown device '{device}' (cpu or cuda)")
        if check and device == "cuda":
            from ir2onnx.check.onnxruntime_run import cuda_available

            if not cuda_available():
                raise ConversionError("--device cuda: onnxruntime's CUDA execution provider is not available "
                                      "(install onnxruntime-gpu on a machine with an NVIDIA GPU)")
        path = ir2onnx.convert_file(model, output, bin_path, opset=opset, optimize=optimize,
                                    external_data=external_data)
        out.print(f"wrote {path}", markup=False, highlight=False)
        if not check:
            return
        import onnx

        proto = onnx.load(str(path))
        feed = load_inputs(str(inputs), proto) if inputs is not None else None
        report = ir2onnx.check(model, proto, bin_path=bin_path, inputs=feed, device=device, rtol=rtol, atol=atol,
                               seed=seed)
    except typer.Exit:
        raise
    except Exception as e:  # noqa: BLE001  every failure becomes one readable line and an exit code
        _fail(e, debug)
        return
    _print_report(report)
    if not report.passed:
        raise typer.Exit(EXIT_MISMATCH)


def _print_report(report) -> None:  # type: ignore[no-untyped-def]
    title = f"onnxruntime ({report.device}) vs OpenVINO (CPU, f32)" if report.reference else \
        f"onnxruntime ({report.device}) only"
    table = Table(title=title)
    for col in ("output", "shape", "dtype", "max abs err", "max rel err", "result"):
        table.add_column(col)
    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.3g}"

    for o in report.outputs:
        verdict = ("PASS" if o.passed else f"FAIL ({o.message})") if report.reference else "ran"
        shape = str(list(o.onnx_shape)) + ("" if o.reference_shape in (None, o.onnx_shape)
                                           else f" vs {list(o.reference_shape)}")
        table.add_row(o.name, shape, o.dtype, fmt(o.max_abs_error), fmt(o.max_rel_error), verdict)
    out.print(table)
    for note in report.notes:
        out.print(f"note: {note}", markup=False, highlight=False)
    if report.reference:
        out.print("check passed" if report.passed else "check FAILED: outputs differ from OpenVINO")


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
    import ir2onnx.convert.ops  # noqa: F401
    from ir2onnx.convert.registry import registered

    for name, versions in registered().items():
        out.print(f"{name}: " + ", ".join(f"opset{v}" for v in versions), markup=False, highlight=False)


def main() -> None:
    app(prog_name="ir2onnx")


if __name__ == "__main__":
    sys.exit(main())

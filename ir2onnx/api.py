"""The public Python API: convert(), convert_file(), check()."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import onnx
import onnx_ir as oir
from onnx_ir import passes as oir_passes

from ir2onnx import bincopy
from ir2onnx.errors import ConversionError, InvalidModelError
from ir2onnx.input_shapes import InputShapes
from ir2onnx.input_shapes import normalize as normalize_shapes
from ir2onnx.ir import load
from ir2onnx.passes import pipeline
from ir2onnx.translate import layer_map
from ir2onnx.translate.model import convert_ir
from ir2onnx.translate.validate_onnx import start_validation, validate_model
from ir2onnx.write import Progress, write_model

if TYPE_CHECKING:
    from ir2onnx.verify.report import CheckReport, OutputComparison

PathLike = str | os.PathLike[str]
DEVICES = pipeline.DEVICES
log = logging.getLogger("ir2onnx")

def convert_to_ir(xml_path: PathLike, bin_path: PathLike | None = None, *, opset: int | None = None,
                  optimize: bool = True, fuse: bool = True, f16_as_f32: bool = False, device: str = "cpu",
                  skip_passes: Iterable[str] = (), quantization: str = "onnx",
                  pass_limit: int | None = None, input_shapes: InputShapes | None = None,
                  portable: bool = False) -> oir.Model:
    """Convert to an onnx-ir model whose initializers are zero-copy views of the memory-mapped .bin.

    `fuse`: loops that run one LSTM/GRU/RNN cell over a sequence become one ONNX LSTM/GRU/RNN node.
    `f16_as_f32`: the IR's f16 computation runs in f32, as OpenVINO's CPU plugin runs it (f16 weights, inputs and
    outputs keep their type).
    `device`: the onnxruntime execution provider the model is made for, "cpu" or "cuda". For "cuda", fused RNN and
    GRU nodes stay nodes (on the CPU, some become Scans or chunks: onnxruntime's CPU kernels are slow for them).
    `skip_passes`: passes (class names) or stages of passes/pipeline.py left out.
    `quantization`: FakeQuantize layers "onnx" (QuantizeLinear + DequantizeLinear where their grid is an 8-bit
    integer one, within one quantization step of OpenVINO; the default) or "exact" (OpenVINO's arithmetic).
    `pass_limit`: only the first that many optimising passes run (`model.meta["ir2onnx.passes_applied"]` lists the
    passes a conversion ran; ir2onnx.verify.bisect finds the first that changes a result).
    `input_shapes`: input name -> dimensions (None keeps the IR's), or dimensions in input order, fixed before
    translation: the model is made for those shapes, its shape arithmetic folded (ir2onnx/input_shapes.py).
    `portable`: forms every ONNX consumer reads (OpenVINO's ONNX frontend, onnx's reference implementation,
    onnx2torch, ...), not only onnxruntime, device-neutral (ir2onnx/passes/portable/)."""
    model, _ = _convert(xml_path, bin_path, opset=opset, optimize=optimize, fuse=fuse, f16_as_f32=f16_as_f32,
                        device=device, defer=False, skip_passes=skip_passes,
                        quantization=quantization, pass_limit=pass_limit, input_shapes=input_shapes,
                        portable=portable)
    return model


class _Deferred(NamedTuple):
    """onnxruntime's verdict on an optimised model, not yet read (`verdict` raises _Refused), the conversion without
    the passes to fall back on (`plain(error)`), as convert_to_ir falls back, and the model's weightless proto that
    was validated (the written proto is completed from it)."""

    verdict: Callable[[], None]
    plain: Callable[[Exception], oir.Model]
    weightless: onnx.ModelProto


class _Refused(Exception):
    """onnxruntime refused the optimised model (its InvalidModelError is the argument)."""


def _convert(xml_path: PathLike, bin_path: PathLike | None, *, opset: int | None, optimize: bool, fuse: bool,
             f16_as_f32: bool, device: str, defer: bool,
             skip_passes: Iterable[str] = (), quantization: str = "onnx",
             pass_limit: int | None = None, input_shapes: InputShapes | None = None, portable: bool = False
             ) -> tuple[oir.Model, _Deferred | None]:
    """convert_to_ir. With `defer`, onnxruntime's verdict on the optimised model is not waited for: it is returned
    to be read later (convert_file reads it once the files are written, before they take their places)."""
    if device not in DEVICES:
        raise ConversionError(f"unknown device '{device}' (cpu or cuda)")
    skip = frozenset(skip_passes)
    unknown = sorted(skip - pipeline.names())
    if unknown:
        raise ConversionError(f"unknown pass or stage {', '.join(map(repr, unknown))} (ir2onnx.passes.pipeline: "
                              f"{', '.join(sorted(pipeline.names()))})")
    shapes = normalize_shapes(input_shapes)
    model, weights = load(str(xml_path), str(bin_path) if bin_path is not None else None, shapes)

    def options(optimize: bool, fuse: bool) -> pipeline.Options:
        return pipeline.Options(optimize=optimize, fuse=fuse, device=device, f16_as_f32=f16_as_f32, skip=skip,
                                limit=pass_limit, static_inputs=shapes is not None, portable=portable)

    def passes(out: oir.Model, options: pipeline.Options) -> oir.Model:
        """The passes `options` select (passes/pipeline.py), run on the translation `out`."""
        pipeline.run(out, options)
        layer_map.refresh(out)  # passes may have removed values
        return out

    def plain(error: Exception | None) -> oir.Model:
        """The plain translation, the reference the passes preserve (after a pass failed with `error`)."""
        if error is not None:
            while isinstance(error, oir_passes.PassError) and error.__cause__ is not None:
                error = error.__cause__  # the pass's own error, not onnx-ir's wrapper
            first = str(error).splitlines()[0] if str(error) else ""
            log.warning("the optimisation passes failed (%s: %s); the model is the plain translation, without "
                        "fusion or optimisations", type(error).__name__, first)
        out = passes(convert_ir(model, weights, opset, quantization=quantization), options(optimize=False, fuse=False))
        validate_model(out)  # a translation defect: its own error, which names the layer
        out.meta["ir2onnx.weights"] = weights  # keep the weights' memory map alive as long as the model viewing it
        return out

    if not (fuse or optimize):
        return plain(None), None
    out = convert_ir(model, weights, opset, quantization=quantization)
    try:
        passes(out, options(optimize=optimize, fuse=fuse))
        validation = start_validation(out)  # never hand out (or write) a model the ONNX checker or onnxruntime rejects
        if not defer:
            validation.verdict()
    except Exception as e:  # noqa: BLE001  a defect in a pass must not cost the conversion
        return plain(e), None
    out.meta["ir2onnx.weights"] = weights
    if not defer:
        return out, None

    def refused() -> None:
        try:
            validation.verdict()
        except InvalidModelError as e:
            raise _Refused(e) from None

    return out, _Deferred(refused, plain, validation.proto)


def convert(xml_path: PathLike, bin_path: PathLike | None = None, *, opset: int | None = None,
            optimize: bool = True, fuse: bool = True, f16_as_f32: bool = False, device: str = "cpu",
            skip_passes: Iterable[str] = (), quantization: str = "onnx",
            input_shapes: InputShapes | None = None, portable: bool = False) -> onnx.ModelProto:
    """Convert an OpenVINO IR to an in-memory ONNX model (weights embedded; use convert_file for > 2 GB)."""
    return oir.to_proto(convert_to_ir(xml_path, bin_path, opset=opset, optimize=optimize, fuse=fuse,
                                     f16_as_f32=f16_as_f32, device=device, skip_passes=skip_passes,
                                     quantization=quantization, input_shapes=input_shapes, portable=portable))


def convert_file(xml_path: PathLike, output_path: PathLike | None = None, bin_path: PathLike | None = None, *,
                 opset: int | None = None, optimize: bool = True, fuse: bool = True, weights: str | None = None,
                 external_data: bool | None = None, progress: Progress | None = None,
                 f16_as_f32: bool = False, device: str = "cpu", skip_passes: Iterable[str] = (),
                 quantization: str = "onnx", input_shapes: InputShapes | None = None,
                 portable: bool = False) -> Path:
    """Convert and write atomically (temporary files, then renames; nothing is left behind on failure).

    `weights` says where the weights go (see ir2onnx.write): "reference" (the ONNX file points into the IR's .bin,
    which must then stay at the same place relative to it), "copy" (to `<output>.data`) or "inline". By default
    "reference" when the output's directory holds the .bin, else "copy". `external_data` is the older spelling:
    True means "copy", False "inline". `progress(bytes written, bytes to write)` follows the weights being written.
    """
    xml = Path(xml_path)
    out = Path(output_path) if output_path is not None else xml.with_suffix(".onnx")
    if weights is None and external_data is not None:
        weights = "copy" if external_data else "inline"
    elif weights is not None and external_data is not None and weights != ("copy" if external_data else "inline"):
        raise ConversionError(f"weights '{weights}' contradicts external_data={external_data}")
    bin_file = Path(bin_path or xml.with_suffix(".bin"))
    inputs = {xml.resolve(), bin_file.resolve()}
    if out.resolve() in inputs or (out.parent / (out.name + ".data")).resolve() in inputs:
        raise ConversionError(f"refusing to overwrite the input file {out}")
    bincopy.prefetch(bin_file, out, weights)  # (unless the command line started it)
    copy = bincopy.take(bin_file, out)
    try:
        model, deferred = _convert(xml, bin_path, opset=opset, optimize=optimize, fuse=fuse, f16_as_f32=f16_as_f32,
                                   device=device, defer=True, skip_passes=skip_passes,
                                   quantization=quantization, input_shapes=input_shapes, portable=portable)
        if deferred is None:
            return _write_model(model, out, weights, progress, bin_copy=copy)
        try:  # onnxruntime loads the model (in its helper process) while the files are written
            return _write_model(model, out, weights, progress, before_commit=deferred.verdict,
                                weightless=deferred.weightless, bin_copy=copy)
        except _Refused as refused:  # nothing was left behind: convert without the passes, as convert_to_ir does
            return _write_model(deferred.plain(refused.args[0]), out, weights, progress)
    finally:
        if copy is not None:
            copy.discard()  # (not the data file it became)


def _write_model(model: oir.Model, out: Path, weights: str | None, progress: Progress | None = None,
                 before_commit: Callable[[], None] | None = None, weightless: onnx.ModelProto | None = None,
                 bin_copy: bincopy.BinCopy | None = None) -> Path:
    """The one write path: `model` (from convert_to_ir) to `out` in the given weight mode."""
    return write_model(model, out, model.meta.get("ir2onnx.weights"), weights, progress, before_commit, weightless,
                       bin_copy)


def check(xml_path: PathLike, onnx_model: onnx.ModelProto | PathLike | None = None, *,
          bin_path: PathLike | None = None, inputs: Mapping[str, np.ndarray] | PathLike | None = None,
          device: str = "cpu", rtol: float = 1e-4, atol: float = 1e-5, seed: int = 0,
          opset: int | None = None, timeout: float | None = 60.0, layerwise: bool = False,
          input_shapes: InputShapes | None = None) -> CheckReport:
    """Run the ONNX model (a proto, or a file) in onnxruntime and, when openvino is importable, compare with
    OpenVINO on the IR. `inputs`: arrays by input name or an .npz file (default: chosen from the IR). Each runtime
    runs in a child process stopped after `timeout` seconds. `layerwise` also compares every layer's output and
    names the first that differs. Without `onnx_model`, the IR is converted (with `opset` and `input_shapes`); the
    default inputs have the ONNX model's static input shapes."""
    from ir2onnx.verify.inputs import load_inputs
    from ir2onnx.verify.runner import run_check

    if onnx_model is None:
        onnx_model = convert(xml_path, bin_path, opset=opset, device=device, input_shapes=input_shapes)
    model = onnx_model if isinstance(onnx_model, onnx.ModelProto) else os.fspath(onnx_model)
    if inputs is not None and not isinstance(inputs, Mapping):
        inputs = load_inputs(os.fspath(inputs))
    return run_check(os.fspath(xml_path), model, bin_path=os.fspath(bin_path) if bin_path else None,
                     inputs=inputs, device=device, rtol=rtol, atol=atol, seed=seed, timeout=timeout,
                     layerwise=layerwise)


def __getattr__(name: str) -> Any:
    # the report types load with the first check (a conversion does not need them)
    if name in ("CheckReport", "OutputComparison"):
        from ir2onnx.verify import report

        return getattr(report, name)
    raise AttributeError(f"module 'ir2onnx.api' has no attribute {name!r}")


__all__ = ["CheckReport", "OutputComparison", "check", "convert", "convert_file", "convert_to_ir"]

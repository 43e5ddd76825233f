"""The public Python API: convert(), convert_file(), check()."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir

from ir2onnx.check.report import CheckReport, OutputComparison
from ir2onnx.convert.model import convert_ir
from ir2onnx.convert.validate_onnx import validate_model
from ir2onnx.errors import ConversionError
from ir2onnx.ir import load
from ir2onnx.passes import apply_default_passes

PathLike = str | os.PathLike[str]

# Above this many bytes of weights the model is written with external data (protobuf's limit is 2 GiB).
EXTERNAL_DATA_THRESHOLD = 1 << 30


def convert_to_ir(xml_path: PathLike, bin_path: PathLike | None = None, *, opset: int | None = None,
                  optimize: bool = True) -> ir.Model:
    """Convert to an onnx-ir model whose initializers are zero-copy views of the memory-mapped .bin."""
    model, weights = load(str(xml_path), str(bin_path) if bin_path is not None else None)
    out = convert_ir(model, weights, opset)
    if optimize:
        apply_default_passes(out)
    validate_model(out)  # never hand out (or write) a model the ONNX checker or onnxruntime rejects
    # keep the weights' memory map alive as long as the model that views it
    out.meta["ir2onnx.weights"] = weights
    return out


def convert(xml_path: PathLike, bin_path: PathLike | None = None, *, opset: int | None = None,
            optimize: bool = True) -> onnx.ModelProto:
    """Convert an OpenVINO IR to an in-memory ONNX model (weights embedded; use convert_file for > 2 GB)."""
    return ir.to_proto(convert_to_ir(xml_path, bin_path, opset=opset, optimize=optimize))


def convert_file(xml_path: PathLike, output_path: PathLike | None = None, bin_path: PathLike | None = None, *,
                 opset: int | None = None, optimize: bool = True, external_data: bool | None = None) -> Path:
    """Convert and write atomically (temp file, then rename). Large weights go to `<output>.data` beside it."""
    xml = Path(xml_path)
    out = Path(output_path) if output_path is not None else xml.with_suffix(".onnx")
    if out.resolve() in {xml.resolve(), Path(bin_path or xml.with_suffix(".bin")).resolve()}:
        raise ConversionError(f"refusing to overwrite the input file {out}")
    model = convert_to_ir(xml, bin_path, opset=opset, optimize=optimize)
    total = sum(v.const_value.nbytes for v in model.graph.initializers.values() if v.const_value is not None)
    use_external = total > EXTERNAL_DATA_THRESHOLD if external_data is None else external_data
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(fd)
    data_name = out.name + ".data"
    tmp_data = out.parent / f".{data_name}.tmp"
    try:
        if use_external:
            ir.save(model, tmp, external_data=tmp_data.name)
            os.replace(tmp_data, out.parent / data_name)
            _retarget_external_data(tmp, tmp_data.name, data_name)
        else:
            ir.save(model, tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file the usual permissions
        os.replace(tmp, out)
    except BaseException:
        for p in (Path(tmp), tmp_data):
            if p.exists():
                p.unlink()
        raise
    return out


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _retarget_external_data(model_path: str, old: str, new: str) -> None:
    """Point external-data references at the final data file name (without loading the weights)."""
    proto = onnx.load(model_path, load_external_data=False)
    for t in _all_tensors(proto.graph):
        for entry in t.external_data:
            if entry.key == "location" and entry.value == old:
                entry.value = new
    onnx.save(proto, model_path)


def _all_tensors(graph: onnx.GraphProto):  # type: ignore[no-untyped-def]
    yield from graph.initializer
    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _all_tensors(a.g)
            elif a.type == onnx.AttributeProto.TENSOR:
                yield a.t


def check(xml_path: PathLike, onnx_model: onnx.ModelProto | PathLike | None = None, *,
          bin_path: PathLike | None = None, inputs: Mapping[str, np.ndarray] | None = None,
          device: str = "cpu", rtol: float = 1e-4, atol: float = 1e-5, seed: int = 0,
          opset: int | None = None) -> CheckReport:
    """Run the ONNX model in onnxruntime and, when openvino is importable, compare with OpenVINO on the IR."""
    from ir2onnx.check.runner import run_check

    if onnx_model is None:
        onnx_model = convert(xml_path, bin_path, opset=opset)
    return run_check(str(xml_path), onnx_model, bin_path=str(bin_path) if bin_path else None, inputs=inputs,
                     device=device, rtol=rtol, atol=atol, seed=seed)


__all__ = ["CheckReport", "OutputComparison", "check", "convert", "convert_file", "convert_to_ir"]

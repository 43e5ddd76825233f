"""Reading OpenVINO IR into a typed graph (no ONNX here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ir2onnx.ir.infer import resolve
from ir2onnx.ir.model import Graph, IRModel, Layer
from ir2onnx.ir.reshape import with_input_shapes
from ir2onnx.ir.validate import check_strings, validate, validate_types
from ir2onnx.ir.weights import Weights
from ir2onnx.ir.xml_reader import read_xml


def load(xml_path: str, bin_path: str | None = None, input_shapes: Mapping[str, Sequence[int | None]] |
         Sequence[Sequence[int | None]] | None = None) -> tuple[IRModel, Weights | None]:
    """Read and validate an IR, with output types and body Parameters re-derived as OpenVINO's reader does.
    The .bin is needed only when the IR has Const layers or mean images. `input_shapes` fix the shapes of the
    inputs they name (reshape.py) before anything is derived from them."""
    model = read_xml(xml_path, bin_path)
    has_consts = any(layer.const is not None for layer in model.graph.walk())
    has_consts |= model.pre_process is not None and any(m.blob is not None for m in model.pre_process.means)
    weights = Weights(model.bin_path) if has_consts and model.bin_path else None
    validate(model, weights.size if weights else None)
    if weights is not None:
        check_strings(model.graph, weights)
    if input_shapes:
        model = with_input_shapes(model, input_shapes)
    model = resolve(model)
    validate_types(model)
    return model, weights


__all__ = ["Graph", "IRModel", "Layer", "Weights", "load", "read_xml", "validate", "with_input_shapes"]

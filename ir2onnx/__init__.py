"""ir2onnx: convert OpenVINO IR (model.xml + model.bin), TensorIterator and Loop included, to ONNX."""

from __future__ import annotations

from ir2onnx.api import CheckReport, OutputComparison, check, convert, convert_file, convert_to_ir
from ir2onnx.errors import (
    CheckError,
    ConversionError,
    IRReadError,
    InvalidModelError,
    IRValidationError,
    LayerConversionError,
    UnsupportedOpsError,
)

__version__ = "0.1.0"

__all__ = [
    "CheckError",
    "CheckReport",
    "ConversionError",
    "IRReadError",
    "IRValidationError",
    "InvalidModelError",
    "LayerConversionError",
    "OutputComparison",
    "UnsupportedOpsError",
    "check",
    "convert",
    "convert_file",
    "convert_to_ir",
]

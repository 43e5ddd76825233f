"""ir2onnx: convert OpenVINO IR (model.xml + model.bin), TensorIterator and Loop included, to ONNX.

The API functions are imported on first use, so that `import ir2onnx` (and the command line's `--help`, `ops`,
`info`) does not load onnx, onnx-ir or the converters.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ir2onnx.errors import (
    CheckError,
    ConversionError,
    InvalidModelError,
    IRReadError,
    IRValidationError,
    LayerConversionError,
    OpsetError,
    UnsupportedOpsError,
)

if TYPE_CHECKING:
    from ir2onnx.api import CheckReport, OutputComparison, check, convert, convert_file, convert_to_ir

__version__ = "0.1.0"

_FROM_API = ("CheckReport", "OutputComparison", "check", "convert", "convert_file", "convert_to_ir")

def __getattr__(name: str) -> Any:
    if name in _FROM_API:
        value = getattr(importlib.import_module("ir2onnx.api"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ir2onnx' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FROM_API))


__all__ = [
    "CheckError",
    "CheckReport",
    "ConversionError",
    "IRReadError",
    "IRValidationError",
    "InvalidModelError",
    "LayerConversionError",
    "OpsetError",
    "OutputComparison",
    "UnsupportedOpsError",
    "check",
    "convert",
    "convert_file",
    "convert_to_ir",
]

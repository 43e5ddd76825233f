"""ONNX-level optimisations applied after translation (default on; `optimize=False` / `--no-optimize` skips them).

Each pass keeps what the model computes; the plain translation stays simple and correct without them.
"""

from __future__ import annotations

import onnx_ir as ir
from onnx_ir.passes.common import RemoveUnusedNodesPass

DEFAULT_PASSES = (RemoveUnusedNodesPass,)


def apply_default_passes(model: ir.Model) -> None:
    """Apply the default passes in place: drop nodes (bodies included) whose results nothing reads."""
    for make in DEFAULT_PASSES:
        make()(model)

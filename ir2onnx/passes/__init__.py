"""ONNX-level optimisations applied after translation; each can be switched off."""

from __future__ import annotations

import onnx_ir as ir


def apply_default_passes(model: ir.Model) -> None:
    """Apply the default passes in place (none change what the model computes)."""

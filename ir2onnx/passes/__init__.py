"""ONNX-level passes applied after translation.

Recurrent fusion (`fuse=True`, default; `fuse=False` / `--no-fuse` keeps the loops) runs first; then the default
optimisations (`optimize=False` / `--no-optimize` skips them). Each pass keeps what the model computes; the plain
translation stays simple and correct without them.
"""

from __future__ import annotations

import onnx_ir as ir
from onnx_ir.passes.common import RemoveUnusedNodesPass

from ir2onnx.passes.fuse_rnn import FuseRecurrentLoopsPass

DEFAULT_PASSES = (RemoveUnusedNodesPass,)


def apply_default_passes(model: ir.Model) -> None:
    """Apply the default passes in place: drop nodes (bodies included) whose results nothing reads."""
    for make in DEFAULT_PASSES:
        make()(model)


def fuse_recurrent(model: ir.Model) -> None:
    """Replace loops that run one LSTM/GRU/RNN cell over a sequence with one ONNX LSTM/GRU/RNN node, in place."""
    FuseRecurrentLoopsPass()(model)

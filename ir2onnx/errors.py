"""One exception hierarchy for everything ir2onnx refuses or cannot do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


class ConversionError(Exception):
    """Root of every error ir2onnx raises on purpose."""


class IRReadError(ConversionError):
    """The XML or the weights file cannot be read (malformed, missing, truncated)."""


_SHOWN = 10  # problems listed in a message; the rest are counted (all are in `problems`)


class IRValidationError(ConversionError):
    """The IR was read but is inconsistent: dangling edges, cycles, bad port maps, bad Const ranges."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        if len(self.problems) == 1:
            text = self.problems[0]
        else:
            shown = self.problems[:_SHOWN]
            text = f"{len(self.problems)} problems in the IR:\n" + "\n".join(f"  - {p}" for p in shown)
            if len(self.problems) > _SHOWN:
                text += f"\n  ... and {len(self.problems) - _SHOWN} more"
        super().__init__(text)


class UnsupportedOp(NamedTuple):
    """One (type, version) the converter has no translation for, with where it occurs."""

    type: str
    version: str
    count: int
    examples: tuple[str, ...]
    reason: str = ""  # a version OpenVINO would refuse, or why the op has no exact ONNX form


class UnsupportedOpsError(ConversionError):
    """The IR contains op types/versions without a converter; all of them are listed at once."""

    def __init__(self, ops: Sequence[UnsupportedOp]) -> None:
        self.ops = list(ops)
        lines = [f"{len(self.ops)} unsupported op type(s):"]
        for op in self.ops:
            where = "; ".join(op.examples)
            more = f" (+{op.count - len(op.examples)} more)" if op.count > len(op.examples) else ""
            why = f" -- {op.reason}" if op.reason else ""
            lines.append(f"  - {op.type} ({op.version}) x{op.count}: {where}{more}{why}")
        super().__init__("\n".join(lines))


class OpsetError(ConversionError):
    """Layers need a newer ONNX opset than the one asked for (or than onnxruntime runs); all of them are listed."""

    def __init__(self, headline: str, layers: Sequence[tuple[int, str, str]]) -> None:
        self.layers = list(layers)  # (opset, where, why)
        lines = [headline] + [f"  - {where}: needs opset {n} ({why})" for n, where, why in self.layers]
        super().__init__("\n".join(lines))


class LayerConversionError(ConversionError):
    """A converter met a layer whose attributes or inputs it cannot translate faithfully."""


class CheckError(ConversionError):
    """The check could not run (missing runtime, bad inputs file, unavailable device)."""


class InvalidModelError(ConversionError):
    """The ONNX model built from the IR fails the ONNX checker or onnxruntime; names the IR layer responsible."""

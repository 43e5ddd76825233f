"""Sliding-window geometry shared by convolutions and pooling: strides, dilations, paddings, output sizes.

Sizes are vectors over the spatial axes, held as numpy int64 arrays when the input's spatial dims are known at
conversion time and as 1-D int64 ONNX values otherwise; `Arith` computes on either, folding what it can.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder
from ir2onnx.translate.context import LayerContext

Vec = "np.ndarray | oir.Value"  # int64 vector over the spatial axes (a string: onnx_ir loads onnx on attribute access)


class Arith:
    """Integer vector arithmetic on constants (numpy) or run-time values (ONNX int64 nodes)."""

    def __init__(self, b: GraphBuilder) -> None:
        self.b = b

    def value(self, v: Vec | Sequence[int] | int) -> oir.Value:
        return v if isinstance(v, oir.Value) else self.b.i64(np.asarray(v, np.int64).tolist())

    def _bin(self, op: str, fn, x: Vec | Sequence[int] | int, y: Vec | Sequence[int] | int) -> Vec:  # type: ignore[no-untyped-def]
        if not isinstance(x, oir.Value) and not isinstance(y, oir.Value):
            return np.asarray(fn(np.asarray(x, np.int64), np.asarray(y, np.int64)), np.int64)
        return self.b.op(op, [self.value(x), self.value(y)])

    def add(self, x, y):  # type: ignore[no-untyped-def]
        return self._bin("Add", np.add, x, y)

    def sub(self, x, y):  # type: ignore[no-untyped-def]
        return self._bin("Sub", np.subtract, x, y)

    def mul(self, x, y):  # type: ignore[no-untyped-def]
        return self._bin("Mul", np.multiply, x, y)

    def max(self, x, y):  # type: ignore[no-untyped-def]
        return self._bin("Max", np.maximum, x, y)

    def min(self, x, y):  # type: ignore[no-untyped-def]
        return self._bin("Min", np.minimum, x, y)

    def floordiv(self, x, y):  # type: ignore[no-untyped-def]
        """Floor division by positive divisors (ONNX integer Div truncates: one less where q*y > x)."""
        if not isinstance(x, oir.Value) and not isinstance(y, oir.Value):
            return np.asarray(np.floor_divide(np.asarray(x, np.int64), np.asarray(y, np.int64)), np.int64)
        xv, yv = self.value(x), self.value(y)
        q = self.b.op("Div", [xv, yv])
        over = self.b.op("Greater", [self.b.op("Mul", [q, yv]), xv])
        return self.b.op("Sub", [q, self.b.cast(over, oir.DataType.INT64)])

    def ceildiv(self, x, y):  # type: ignore[no-untyped-def]
        return self.sub(0, self.floordiv(self.sub(0, x), y))

    def ge(self, x, y):  # type: ignore[no-untyped-def]
        """1 where x >= y, else 0 (int64)."""
        if not isinstance(x, oir.Value) and not isinstance(y, oir.Value):
            return (np.asarray(x, np.int64) >= np.asarray(y, np.int64)).astype(np.int64)
        return self.b.cast(self.b.op("GreaterOrEqual", [self.value(x), self.value(y)]), oir.DataType.INT64)

    @staticmethod
    def static(v: Vec) -> bool:
        return not isinstance(v, oir.Value)


def spatial_dims(ctx: LayerContext, i: int, nsp: int) -> Vec:
    """The last `nsp` dims of input i: constants when the IR declares them all (parameters and constants have
    reliable dims; inside bodies dims are recomputed at run time), else Shape(x)[2:]."""
    dims = ctx.input_dims(i)
    inside_body = ctx.b.parent is not None
    if not inside_body and dims is not None and len(dims) >= nsp and all(d is not None and d >= 0 for d in dims[-nsp:]):
        return np.asarray(dims[-nsp:], np.int64)
    return ctx.b.shape_of(ctx.inputs[i], -nsp)


def dilated(kernel: Sequence[int], dilations: Sequence[int]) -> np.ndarray:
    return np.asarray([(k - 1) * d + 1 for k, d in zip(kernel, dilations)], np.int64)


@dataclass
class Window:
    """Window attributes of one layer (pads before auto_pad is resolved)."""

    strides: list[int]
    dilations: list[int]
    pads_begin: list[int]
    pads_end: list[int]
    auto_pad: str  # explicit | same_upper | same_lower | valid

    @staticmethod
    def read(ctx: LayerContext, nsp: int, dilations: bool = True) -> Window:
        auto = ctx.attr_str("auto_pad", "explicit").lower() or "explicit"
        if auto == "notset":
            auto = "explicit"
        if auto not in ("explicit", "same_upper", "same_lower", "valid"):
            raise ctx.error(f"auto_pad='{auto}' is not supported")
        w = Window(ctx.attr_ints("strides", [1] * nsp), ctx.attr_ints("dilations", [1] * nsp) if dilations else [1] * nsp,
                   ctx.attr_ints("pads_begin", [0] * nsp), ctx.attr_ints("pads_end", [0] * nsp), auto)
        for name, v in (("strides", w.strides), ("dilations", w.dilations)):
            if len(v) != nsp:
                raise ctx.error(f"{name} has {len(v)} values for {nsp} spatial axes")
        if auto in ("explicit",) and (len(w.pads_begin) != nsp or len(w.pads_end) != nsp):
            raise ctx.error(f"pads_begin/pads_end need {nsp} values")
        return w

    def resolve_pads(self, ar: Arith, dims: Vec, kernel_dilated: np.ndarray) -> tuple[Vec, Vec]:
        """(pads_begin, pads_end) after auto_pad: same_* pads to ceil(in/stride) outputs, the odd one at the end
        (same_upper) or the beginning (same_lower); valid means none."""
        nsp = len(self.strides)
        if self.auto_pad == "valid":
            return np.zeros(nsp, np.int64), np.zeros(nsp, np.int64)
        if self.auto_pad == "explicit":
            return np.asarray(self.pads_begin, np.int64), np.asarray(self.pads_end, np.int64)
        s = np.asarray(self.strides, np.int64)
        out = ar.ceildiv(dims, s)
        total = ar.max(ar.sub(ar.add(ar.mul(ar.sub(out, 1), s), kernel_dilated), dims), 0)
        half = ar.floordiv(total, 2)
        rest = ar.sub(total, half)
        return (half, rest) if self.auto_pad == "same_upper" else (rest, half)

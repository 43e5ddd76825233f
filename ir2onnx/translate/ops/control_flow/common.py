"""Shape plumbing used around loops: splitting an axis into (count, part) and merging it back."""

from __future__ import annotations

import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder


def dim(b: GraphBuilder, x: oir.Value, axis: int) -> oir.Value:
    """Size of `axis` of x as an int64 tensor of shape [1]."""
    return b.shape_of(x, axis, axis + 1)


def split_axis(b: GraphBuilder, x: oir.Value, axis: int, part: int) -> oir.Value:
    """[.., D, ..] -> [.., D/part, part, ..] (a view: no data moves)."""
    if part == 1:
        return b.unsqueeze(x, [axis + 1])
    before = b.shape_of(x, 0, axis)
    after = b.shape_of(x, axis + 1)
    count = b.op("Div", [dim(b, x, axis), b.i64([part])])
    return b.reshape(x, b.concat([before, count, b.i64([part]), after], 0), allowzero=True)


def merge_axes(b: GraphBuilder, x: oir.Value, axis: int) -> oir.Value:
    """[.., N, P, ..] -> [.., N*P, ..] merging `axis` and `axis + 1` (zero-size safe)."""
    before = b.shape_of(x, 0, axis)
    after = b.shape_of(x, axis + 2)
    merged = b.op("Mul", [dim(b, x, axis), dim(b, x, axis + 1)])
    return b.reshape(x, b.concat([before, merged, after], 0), allowzero=True)


def reverse_axis(b: GraphBuilder, x: oir.Value, axis: int) -> oir.Value:
    return b.slice(x, [-1], [-(2**63)], [axis], [-1])


def move_axis0_to(b: GraphBuilder, x: oir.Value, axis: int, rank: int) -> oir.Value:
    """Move axis 0 of a rank-`rank` tensor to position `axis`."""
    if axis == 0:
        return x
    perm = list(range(1, axis + 1)) + [0] + list(range(axis + 1, rank))
    return b.op("Transpose", [x], {"perm": perm})

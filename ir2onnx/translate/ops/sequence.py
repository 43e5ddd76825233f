"""ReverseSequence-1 -> ONNX ReverseSequence (TensorFlow's go_backwards and bidirectional layers use it)."""

from __future__ import annotations

import onnx_ir as oir

from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter


@converter("ReverseSequence", "opset1")
def reverse_sequence(ctx: LayerContext) -> oir.Value:
    """ONNX needs the batch and time axes to be 0 and 1 (either order): other axes are transposed there and back.
    Sequence lengths of any numeric type become int64 (OpenVINO truncates floats the same way)."""
    b = ctx.b
    rank = ctx.input_rank(0)
    batch = ctx.normalize_axis(ctx.attr_int("batch_axis", 0), rank)
    seq = ctx.normalize_axis(ctx.attr_int("seq_axis", 1), rank)
    if batch == seq:
        raise ctx.error(f"batch_axis and seq_axis are both {batch}")
    lengths = ctx.inputs[1]
    if ctx.input_type(1).name != "i64":
        lengths = b.cast(lengths, oir.DataType.INT64)
    x = ctx.inputs[0]
    perm = None
    if {batch, seq} != {0, 1}:
        perm = [batch, seq] + [a for a in range(rank) if a not in (batch, seq)]
        x = b.op("Transpose", [x], {"perm": perm})
        batch, seq = 0, 1
    if ctx.input_type(0).name == "bf16":  # ONNX ReverseSequence has no bfloat16: moved as float32 (exact)
        x = b.cast(x, oir.DataType.FLOAT)
    y = b.op("ReverseSequence", [x, lengths], {"batch_axis": batch, "time_axis": seq})
    if ctx.input_type(0).name == "bf16":
        y = b.cast(y, oir.DataType.BFLOAT16)
    if perm is None:
        return y
    inverse = [perm.index(a) for a in range(rank)]
    return b.op("Transpose", [y], {"perm": inverse})

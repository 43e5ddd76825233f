"""ReverseSequence-1: any batch/sequence axes (ONNX allows only 0 and 1), sequence lengths of several types."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from tests.translate.ops.cases import Case, params, run_case

F, I32, I64 = np.float32, np.int32, np.int64


def _rs(shape: tuple[int, ...], batch: int, seq: int, lengths: list[float], dtype: type) -> Case:
    values = [np.random.default_rng(0).standard_normal(shape).astype(F), np.array(lengths, dtype)]
    return Case(f"{shape}-b{batch}-s{seq}-{np.dtype(dtype).name}",
                lambda x, n: ops.reverse_sequence(x, n, batch, seq), [(shape, F), ((len(lengths),), dtype)],
                values=values)


CASES = [
    _rs((2, 5, 3), 0, 1, [3, 5], I32),
    _rs((5, 2, 3), 1, 0, [0, 4], I64),
    _rs((2, 3, 6), 0, 2, [6, 1], I32),  # TensorFlow's go_backwards layers: batch 0, time 2 after a Transpose
    _rs((6, 3, 2), 2, 0, [2, 6], I64),
    _rs((3, 2, 4, 5), 1, 3, [5, 2], F),
    _rs((3, 4, 2), -1, -3, [1, 3], I32),
    # bf16 data (through Convert, as numpy has no bf16 inputs): ONNX ReverseSequence lacks bfloat16
    Case("bf16-b1-s2", lambda x, n: ops.convert(ops.reverse_sequence(ops.convert(x, ov.Type.bf16), n, 1, 2), F),
         [((2, 3, 4), F), ((3,), I32)],
         values=[np.arange(24, dtype=F).reshape(2, 3, 4) * 0.5, np.array([4, 1, 3], I32)]),
]


@pytest.mark.parametrize("case", params(CASES))
def test_reverse_sequence(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)

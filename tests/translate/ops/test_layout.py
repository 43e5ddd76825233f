"""Layout ops (layout.py): DepthToSpace, SpaceToDepth, ShuffleChannels, BatchToSpace, SpaceToBatch, Pad."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset1 as ops1
import openvino.opset2 as ops2
import openvino.opset3 as ops3
import openvino.opset12 as ops12
import pytest

from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.translate.ops.cases import Case, const, params, run_case
from tests.utils import convert_checked, save_ir

F, I32, I64, U8 = np.float32, np.int32, np.int64, np.uint8


def arange(shape, dtype=F):  # type: ignore[no-untyped-def]
    return np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)


CASES = []
for mode in ("blocks_first", "depth_first"):
    for shape, bs in [((1, 8, 2, 3), 2), ((2, 18, 2, 1), 3), ((1, 8, 3), 8), ((1, 16, 2, 1, 2), 2), ((2, 4, 3), 2)]:
        CASES.append(Case(f"depth-to-space-{mode}-{len(shape)}d-b{bs}",
                          lambda x, m=mode, bs=bs: ops1.depth_to_space(x, m, bs), [(shape, F)]))
    for shape, bs in [((1, 2, 4, 6), 2), ((2, 1, 6, 3), 3), ((1, 3, 8), 4), ((1, 2, 2, 4, 2), 2)]:
        CASES.append(Case(f"space-to-depth-{mode}-{len(shape)}d-b{bs}",
                          lambda x, m=mode, bs=bs: ops1.space_to_depth(x, m, bs), [(shape, F)]))
CASES += [
    Case("depth-to-space-i32-dynamic", lambda x: ops1.depth_to_space(x, "depth_first", 2), [((-1, 8, -1, -1), I32)],
         values=[arange((2, 8, 3, 2), I32)]),
    Case("space-to-depth-u8-dynamic", lambda x: ops1.space_to_depth(x, "blocks_first", 2), [((-1, -1, 4, -1), U8)],
         values=[arange((1, 3, 4, 6), U8)]),
    Case("shuffle-channels", lambda x: ops3.shuffle_channels(x, 1, 2), [((1, 6, 2, 2), F)]),
    Case("shuffle-channels-axis-neg", lambda x: ops3.shuffle_channels(x, -2, 3), [((2, 3, 6, 2), F)]),
    Case("shuffle-channels-axis0-1d", lambda x: ops3.shuffle_channels(x, 0, 4), [((8,), I64)],
         values=[arange((8,), I64)]),
    Case("shuffle-channels-dynamic", lambda x: ops3.shuffle_channels(x, 1, 3), [((-1, 6, -1), F)],
         values=[arange((2, 6, 3))]),
    Case("batch-to-space", lambda x: ops2.batch_to_space(x, const([1, 2, 2], I64), const([0, 0, 0], I64),
                                                          const([0, 0, 0], I64)), [((8, 2, 3), F)]),
    Case("batch-to-space-crops", lambda x: ops2.batch_to_space(x, const([1, 1, 3, 2], I64), const([0, 0, 1, 0], I64),
                                                                const([0, 0, 2, 1], I64)), [((12, 2, 3, 3), F)]),
    Case("batch-to-space-runtime", lambda x, blk, cb, ce: ops2.batch_to_space(x, blk, cb, ce),
         [((12, 2, 3, 3), F), ((4,), I64), ((4,), I64), ((4,), I64)],
         values=[arange((12, 2, 3, 3)), np.array([1, 2, 3, 1], I64), np.array([0, 0, 1, 0], I64),
                 np.array([0, 1, 2, 1], I64)]),
    Case("batch-to-space-i32-runtime", lambda x, blk, cb, ce: ops2.batch_to_space(x, blk, cb, ce),
         [((4, 2, 2), F), ((3,), I32), ((3,), I32), ((3,), I32)],
         values=[arange((4, 2, 2)), np.array([1, 2, 2], I32), np.array([0, 1, 0], I32), np.array([0, 0, 1], I32)]),
    Case("space-to-batch", lambda x: ops2.space_to_batch(x, const([1, 2, 3], I64), const([0, 1, 0], I64),
                                                          const([0, 1, 0], I64)), [((2, 2, 6), F)]),
    Case("space-to-batch-4d", lambda x: ops2.space_to_batch(x, const([1, 1, 2, 2], I64), const([0, 0, 1, 0], I64),
                                                             const([0, 0, 1, 1], I64)), [((1, 3, 2, 3), F)]),
    Case("space-to-batch-runtime", lambda x, blk, pb, pe: ops2.space_to_batch(x, blk, pb, pe),
         [((2, 3, 4), F), ((3,), I64), ((3,), I64), ((3,), I64)],
         values=[arange((2, 3, 4)), np.array([1, 2, 3], I64), np.array([0, 1, 1], I64), np.array([0, 0, 1], I64)]),
]
X34 = ((3, 4), F)
for mode in ("constant", "edge", "reflect", "symmetric"):
    CASES += [
        Case(f"pad1-{mode}", lambda a, m=mode: ops1.pad(a, const([1, 2], I64), const([2, 1], I64), m), [X34]),
        Case(f"pad12-{mode}-negative", lambda a, m=mode: ops12.pad(a, const([-1, 2], I64), const([1, -1], I64), m),
             [X34]),
        Case(f"pad12-{mode}-runtime", lambda a, pb, pe, m=mode: ops12.pad(a, pb, pe, m),
             [X34, ((2,), I64), ((2,), I64)], values=[arange((3, 4)), np.array([2, -1], I64), np.array([0, 2], I64)]),
        Case(f"pad12-{mode}-3d-i32", lambda a, m=mode: ops12.pad(a, const([0, 1, 2], I32), const([1, 0, 2], I32), m),
             [((2, 3, 4), I32)], values=[arange((2, 3, 4), I32)]),
    ]
CASES += [
    Case("pad1-symmetric-full", lambda a: ops1.pad(a, const([3, 4], I64), const([3, 4], I64), "symmetric"), [X34]),
    Case("pad12-constant-value", lambda a: ops12.pad(a, const([1, 0], I64), const([0, 2], I64), "constant",
                                                      const(-2.5)), [X34]),
]


@pytest.mark.parametrize("case", params(CASES))
def test_layout(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


@pytest.mark.parametrize("opset", [ops1, ops12])
def test_pad_runtime_value_against_numpy(tmp_path: Path, opset) -> None:  # type: ignore[no-untyped-def]
    """OpenVINO's CPU plugin pads with 0 when pad_value is not a constant (a run-time value is ignored); the
    specification pads with the value, as numpy does."""
    x, v = arange((3, 4)), np.array(-2.5, F)
    a, pv = ops1.parameter([3, 4], F, name="a"), ops1.parameter([], F, name="v")
    y = opset.pad(a, const([1, 1], I64), const([0, 2], I64), "constant", pv)
    proto = convert_checked(save_ir(ov.Model([y], [a, pv]), tmp_path))
    got = run_onnxruntime(proto, {"a": x, "v": v})[0]
    np.testing.assert_array_equal(got, np.pad(x, [(1, 0), (1, 2)], constant_values=v))

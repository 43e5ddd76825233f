"""RegionYolo-1 and ReorgYolo-2 (yolo.py) against OpenVINO."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset1 as ops1
import openvino.opset2 as ops2
import pytest

from tests.translate.ops.cases import Case, params, run_case

F = np.float32

CASES = [
    Case("region-yolo-softmax", lambda x: ops1.region_yolo(x, 4, 3, 2, True, [], 1, 3), [((1, 16, 3, 4), F)]),
    Case("region-yolo-softmax-axis2", lambda x: ops1.region_yolo(x, 4, 3, 2, True, [], 2, 3), [((2, 16, 3, 4), F)]),
    Case("region-yolo-softmax-axis1-end2", lambda x: ops1.region_yolo(x, 4, 3, 2, True, [], 1, 2),
         [((1, 16, 3, 4), F)]),
    Case("region-yolo-mask", lambda x: ops1.region_yolo(x, 4, 80, 9, False, [3, 4, 5], 1, 3),
         [((2, 255, 2, 3), F)]),
    Case("region-yolo-mask-coords6", lambda x: ops1.region_yolo(x, 6, 2, 3, False, [0, 2], 1, 3),
         [((1, 18, 3, 3), F)]),
    Case("region-yolo-dynamic", lambda x: ops1.region_yolo(x, 4, 3, 2, True, [], 1, 3), [((-1, 16, -1, -1), F)],
         values=[np.random.default_rng(1).standard_normal((2, 16, 3, 5)).astype(F)]),
    Case("reorg-yolo-2", lambda x: ops2.reorg_yolo(x, [2]), [((2, 8, 4, 6), F)]),
    Case("reorg-yolo-3", lambda x: ops2.reorg_yolo(x, [3]), [((1, 18, 6, 9), F)]),
    Case("reorg-yolo-dynamic", lambda x: ops2.reorg_yolo(x, [2]), [((-1, 4, -1, -1), F)],
         values=[np.random.default_rng(2).standard_normal((1, 4, 4, 2)).astype(F)]),
]


@pytest.mark.parametrize("case", params(CASES))
def test_yolo(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)

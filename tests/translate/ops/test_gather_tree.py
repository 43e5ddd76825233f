"""GatherTree-1 (ctc.py) against OpenVINO: f32 and i32, lengths shorter than, equal to and longer than T,
end tokens inside the beams, fractional lengths and parents (truncated), run-time end token; lengths <= 0, where
OpenVINO leaves the output unwritten, against numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset1 as ops1
import pytest

from ir2onnx.verify.openvino_ref import run_openvino
from tests.translate.ops.cases import Case, const, params, run_case
from tests.translate.ops.reference import run_against_numpy
from tests.utils import save_ir

F, I32 = np.float32, np.int32
RNG = np.random.default_rng(17)
T, B, W = 6, 4, 3


def _data(dtype: type, lengths: list[float], end: int = 2) -> list[np.ndarray]:
    steps = RNG.integers(0, 6, (T, B, W)).astype(dtype)
    parents = RNG.integers(0, W, (T, B, W)).astype(dtype)
    steps[1, 0, :] = end  # end tokens early in some beams
    return [steps, parents, np.array(lengths, dtype)]


def numpy_gather_tree(steps: np.ndarray, parents: np.ndarray, lengths: np.ndarray, end: np.ndarray) -> np.ndarray:
    t_max, batch, width = steps.shape
    out = np.empty_like(steps)
    for bi in range(batch):
        n = min(t_max, int(lengths[bi]))
        for w in range(width):
            out[:, bi, w] = end
            parent = w
            for t in range(n - 1, -1, -1):
                out[t, bi, w] = steps[t, bi, parent]
                parent = int(parents[t, bi, parent])
            done = False
            for t in range(n):
                if done:
                    out[t, bi, w] = end
                elif out[t, bi, w] == end:
                    done = True
    return out


CASES = []
for dtype in (F, I32):
    tag = "f32" if dtype is F else "i32"
    for lengths in ([6, 3, 1, 9], [2, 6, 6, 5]):
        data = _data(dtype, lengths)
        CASES.append(Case(f"gather-tree-{tag}-{'-'.join(map(str, lengths))}",
                          lambda s, p, m, dt=dtype: ops1.gather_tree(s, p, m, const(2, dt)),
                          [((T, B, W), dtype)] * 2 + [((B,), dtype)], values=data))
    CASES.append(Case(f"gather-tree-{tag}-runtime-end", lambda s, p, m, e: ops1.gather_tree(s, p, m, e),
                      [((T, B, W), dtype)] * 2 + [((B,), dtype), ((), dtype)],
                      values=_data(dtype, [6, 4, 5, 2], end=3) + [np.array(3, dtype)]))
frac = _data(F, [5.7, 2.2, 6.0, 1.9])
frac[1] = frac[1] + 0.6  # parents 0.6, 1.6, 2.6 read as 0, 1, 2
CASES.append(Case("gather-tree-f32-fractional", lambda s, p, m: ops1.gather_tree(s, p, m, const(2, F)),
                  [((T, B, W), F)] * 2 + [((B,), F)], values=frac))


@pytest.mark.parametrize("case", params(CASES))
def test_gather_tree(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


def test_gather_tree_numpy_reference_agrees(tmp_path: Path) -> None:
    """The numpy reference used below computes what OpenVINO computes on valid lengths."""
    data = _data(I32, [6, 3, 1, 9])
    ps = [ops1.parameter(list(d.shape), I32) for d in data]
    xml = save_ir(ov.Model([ops1.gather_tree(*ps, const(2, I32))], ps), tmp_path)
    got = run_openvino(str(xml), data)[0]
    np.testing.assert_array_equal(got, numpy_gather_tree(*data, np.array(2, I32)))


@pytest.mark.parametrize("dtype", [F, I32])
def test_gather_tree_empty_lengths(tmp_path: Path, dtype: type) -> None:
    """A length <= 0: OpenVINO's CPU plugin writes nothing for that batch (uninitialised memory); every step is
    end_token by the padding rule."""
    data = _data(dtype, [0, 3, -2, 6])
    case = Case("empty", lambda s, p, m: ops1.gather_tree(s, p, m, const(2, dtype)),
                [((T, B, W), dtype)] * 2 + [((B,), dtype)], values=data)
    run_against_numpy(case, tmp_path, lambda s, p, m: [numpy_gather_tree(s, p, m, np.array(2, dtype))])

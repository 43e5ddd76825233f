"""StridedSlice-1 with every mask, its begin/end/strides constant or given at run time.

OpenVINO's CPU plugin is the reference except where it is demonstrably wrong, checked against numpy indexing (which
OpenVINO's own constant folding agrees with):
* a slice that combines new_axis_mask and shrink_axis_mask returns wrong values;
* a slice with run-time begin/end whose every entry shrinks fails ("doesn't have compiled executor").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from ir2onnx.verify.openvino_ref import run_openvino
from tests.translate.ops.cases import const
from tests.utils import assert_outputs, check_model, save_ir

F, I32, I64 = np.float32, np.int32, np.int64
SHAPE = (2, 3, 4, 5)
MASKS = ("bm", "em", "nm", "sm", "el")

# name, begin, end, strides, masks (bm, em, nm, sm, el; missing ones are zeros; cpu: the plugin computes it wrong)
TABLE: list[tuple[str, list[int], list[int], list[int], dict[str, list[int]]]] = [
    ("basic", [0, 1, 0], [2, 3, 4], [1, 1, 2], {}),
    ("negative-stride", [1, -1, -1], [0, 0, 0], [1, -1, -2], {"bm": [1, 0, 0], "em": [1, 1, 1]}),
    ("reverse-masked", [0, 0, 0, 0], [0, 0, 0, 0], [-1, 1, -2, -1], {"bm": [1, 1, 1, 0], "em": [1, 1, 1, 1]}),
    ("begin-mask", [1, 1], [2, 2], [1, 1], {"bm": [1, 0]}),
    ("end-mask", [1, 1], [0, 2], [1, 1], {"em": [1, 0]}),
    ("clamped", [-7, 1, 10], [9, -9, 20], [1, 1, 1], {}),
    ("shrink", [1, 0, 2], [2, 3, 3], [1, 1, 1], {"sm": [1, 0, 1]}),
    ("shrink-last", [-1], [0], [1], {"sm": [1]}),
    ("shrink-negative", [0, -2], [0, 0], [1, 1], {"sm": [0, 1], "bm": [1, 0], "em": [1, 0]}),
    ("shrink-ignores-stride", [1, 2, 0], [0, 0, 0], [1, -1, 1], {"sm": [1, 1, 0], "em": [0, 0, 1]}),
    ("shrink-with-begin-mask", [1, 2], [0, 0], [-1, 1], {"sm": [1, 1], "bm": [1, 0], "em": [1, 1]}),
    ("new-axis", [0, 0, 1], [0, 2, 3], [1, 1, 1], {"nm": [1, 0, 0]}),
    ("new-axis-middle", [0, 0, 0], [1, 0, 2], [1, 1, 1], {"nm": [0, 1, 0]}),
    ("new-axis-and-shrink", [1, 0, 2], [2, 0, 3], [1, 1, 1], {"nm": [0, 1, 0], "sm": [1, 0, 1], "cpu": ["wrong"]}),
    ("shrink-then-new-axis", [1, 0], [2, 0], [1, 1], {"nm": [0, 1], "sm": [1, 0], "cpu": ["wrong"]}),
    ("new-axis-shrink-slice", [0, 1, 2], [0, 2, 3], [1, 1, 1], {"nm": [1, 0, 0], "sm": [0, 1, 0], "cpu": ["wrong"]}),
    ("new-axis-over-shrink", [0, 1], [0, 2], [1, 1], {"nm": [1, 0], "sm": [1, 0]}),
    ("ellipsis-first", [0, 1], [0, 3], [1, 1], {"el": [1, 0]}),
    ("ellipsis-middle", [1, 0, 1], [2, 0, 4], [1, 1, 2], {"el": [0, 1, 0]}),
    ("ellipsis-last", [1, 0], [2, 0], [1, 1], {"el": [0, 1]}),
    ("ellipsis-over-new-axis", [0, 1], [0, 2], [1, 1], {"el": [1, 0], "nm": [1, 0]}),
    ("ellipsis-new-axis-shrink", [0, 0, 0, 3], [0, 0, 0, 4], [1, 1, 1, 1],
     {"el": [0, 1, 0, 0], "nm": [1, 0, 0, 0], "sm": [0, 0, 0, 1]}),
    ("stride-3", [0, 0, 1, 4], [2, 3, 4, 0], [1, 2, 3, -3], {"em": [0, 0, 0, 1]}),
]
RUNTIME = ("const", "begin-end", "all")


def numpy_strided_slice(x: np.ndarray, begin: list[int], end: list[int], strides: list[int],
                        m: dict[str, list[int]]) -> np.ndarray:
    """Python indexing with OpenVINO's precedence: ellipsis, then new axis, then shrink (begin_mask -> element 0)."""
    n = len(begin)
    bm, em, nm, sm, el = (m.get(k, [0] * n) for k in MASKS)
    index: list[Any] = []
    for i in range(n):
        if el[i]:
            index.append(Ellipsis)
        elif nm[i]:
            index.append(None)
        elif sm[i]:
            index.append(0 if bm[i] else begin[i])
        else:
            index.append(slice(None if bm[i] else begin[i], None if em[i] else end[i], strides[i]))
    return x[tuple(index)]


def _cpu_fails(m: dict[str, list[int]], n: int, runtime: str) -> str | None:
    """The CPU plugin bug this case meets, if any."""
    real = [not a and not b for a, b in zip(m.get("nm", [0] * n), m.get("el", [0] * n))]
    if runtime != "const" and all(s for s, r in zip(m.get("sm", [0] * n), real) if r):
        return "compiled executor"
    return "wrong values" if m.get("cpu") == ["wrong"] else None


@pytest.mark.parametrize("runtime", RUNTIME)
@pytest.mark.parametrize(("begin", "end", "strides", "m"), [pytest.param(*row[1:], id=row[0]) for row in TABLE])
def test_strided_slice(tmp_path: Path, begin: list[int], end: list[int], strides: list[int], m: dict[str, list[int]],
                       runtime: str) -> None:
    n = len(begin)
    masks = [m.get(k, [0] * n) for k in MASKS]
    x = np.arange(np.prod(SHAPE), dtype=F).reshape(SHAPE)
    X = ops.parameter(list(SHAPE), F, name="x")
    params, values = [X], [x]
    args = []
    for k, (v, dtype) in enumerate(zip((begin, end, strides), (I64, I32, I64))):
        if k < {"const": 0, "begin-end": 2, "all": 3}[runtime]:
            p = ops.parameter([n], dtype, name=f"in{k}")
            params.append(p)
            values.append(np.array(v, dtype))
            args.append(p)
        else:
            args.append(const(v, I64))
    model = ov.Model([ops.strided_slice(X, *args, *masks)], params)
    bug = _cpu_fails(m, n, runtime)
    if bug is None:
        check_model(model, values, tmp_path)
        return
    xml = save_ir(model, tmp_path)
    expected = numpy_strided_slice(x, begin, end, strides, m)
    if bug == "compiled executor":
        with pytest.raises(RuntimeError, match=bug):
            run_openvino(str(xml), values)
    else:
        assert not np.array_equal(run_openvino(str(xml), values)[0], expected)
    assert_outputs(xml, values, [expected])


def test_runtime_index_in_a_loop(tmp_path: Path) -> None:
    """TensorFlow's TensorArray read x[i], i the iteration number (begin=[i], end=[i+1], shrink_axis_mask=1), next to
    a slice x[i:i+2] with run-time begin/end; OpenVINO's CPU plugin cannot run the all-shrink slice (see above)."""
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(F)
    X = ops.parameter([5, 3], F, name="X")
    it = ops.parameter([], I32, name="i")
    bx = ops.parameter([5, 3], F, name="bx")
    acc = ops.parameter([3], F, name="acc")
    i1 = ops.unsqueeze(it, const([0], I64))
    row = ops.strided_slice(bx, i1, ops.add(i1, const([1], I32)), const([1], I32), [0], [0], [0], [1], [0])
    pair = ops.strided_slice(bx, i1, ops.add(i1, const([2], I32)), const([1], I32), [0], [0], [0], [0], [0])
    nacc = ops.add(ops.add(ops.multiply(acc, const(0.5)), ops.sin(row)), ops.reduce_sum(pair, const([0], I64), False))
    r_c, r_a = ops.result(ops.constant(True)), ops.result(nacc)
    loop = ops.loop(ops.constant(np.int64(5)), ops.constant(True))
    loop.set_function(ov.Model([r_c, r_a], [it, bx, acc]))
    loop.set_special_body_ports([0, 0])
    loop.set_invariant_input(bx, X.output(0))
    loop.set_merged_input(acc, ops.constant(np.zeros(3, F)).output(0), r_a.output(0))
    model = ov.Model([loop.get_iter_value(r_a.output(0), -1)], [X])
    xml = save_ir(model, tmp_path)
    with pytest.raises(RuntimeError, match="compiled executor"):
        run_openvino(str(xml), [x])
    expected = np.zeros(3, F)
    for i in range(5):
        expected = expected * F(0.5) + np.sin(x[i]) + x[i:i + 2].sum(0)
    assert_outputs(xml, [x], [expected], rtol=1e-5, atol=1e-5)

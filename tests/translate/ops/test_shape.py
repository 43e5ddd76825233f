"""Shape and type ops (shape.py, gather.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import ml_dtypes
import numpy as np
import openvino as ov
import openvino.opset1 as ops1
import openvino.opset3 as ops3
import openvino.opset7 as ops7
import openvino.opset13 as ops
import openvino.opset15 as ops15
import pytest

from tests.translate.ops.cases import Case, const, params, run_case
from tests.translate.ops.reference import run_against_numpy
from tests.utils import assert_equivalent, save_ir

F, F16, I32, I64, B = np.float32, np.float16, np.int32, np.int64, np.bool_
X234 = ((2, 3, 4), F)

U2_IN = np.array([0, 1.4, 2.6, 3.5, 7, 9, 63, 70, -3, -0.5, 255, 256, 300, 1000, -300, 5.99, 6.5, -70000])


def ss(begin, end, strides, **masks):  # type: ignore[no-untyped-def]
    n = len(begin)
    m = {k: masks.get(k, [0] * n) for k in ("bm", "em", "nm", "sm", "el")}
    return lambda a: ops.strided_slice(a, const(begin, I64), const(end, I64), const(strides, I64),
                                       m["bm"], m["em"], m["nm"], m["sm"], m["el"])


F8_EDGES = np.concatenate([np.array([0.3, -1.7, 0.01, 3.14159, 1e-9, 2**-10, 2**-9 * 1.5, -0.0, np.inf, -np.inf, np.nan,
                                     448, 449, 464, 465, 480, -480, 1e6, 57344, 57345, 61439, 61440, -61440, 65520]),
                           np.random.default_rng(5).standard_normal(200) * 300]).astype(F)

def _as(a: np.ndarray, dtype: type) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):  # the edges beyond f16's range become infinities on purpose
        return a.astype(dtype)


CASES = [
    *[Case(f"squeeze-15-skip-{'-'.join(map(str, a))}", lambda x, a=a: ops15.squeeze(x, const(a, I64), True),
           [((2, 1, 3, 1), F)]) for a in ([0, 1], [1, 3], [-1, 0], [2])],
    Case("convert-f32-i32", lambda a: ops.convert(a, np.int32), [((2, 3), F)],
         values=[np.array([[2.7, -2.7, -0.5], [0.4, 100.9, -7.2]], F)]),
    Case("convert-i64-f16", lambda a: ops.convert(a, np.float16), [((5,), I64)]),
    # f64 to integers: truncated in f64, saturated into int32, then saturated into 8 bits or wrapped
    *[Case(f"convert-f64-{np.dtype(t).name}", lambda a, t=t: ops.convert(a, t), [((15,), np.float64)],
           values=[np.array([-3.7, -0.5, 2.5, 255.6, 300.2, -255.0, 70000.5, -70000.5, 3e9, -3e9, 1e19, np.inf,
                             -np.inf, np.nan, 16777217.0])])
      for t in (np.int8, np.uint8, np.int16, np.uint16, I32, np.uint32, I64, np.uint64)],
    # OpenVINO's CPU plugin rounds f64 -> bf16 inconsistently (3.7 gives 3.6875, 1181.06 gives 1184): numpy decides
    Case("convert-f64-bf16", lambda a: ops.convert(ops.convert(a, ov.Type.bf16), F), [((4,), np.float64)],
         values=[np.array([3.7, 1181.06, -0.2, 1e-3])],
         expected=lambda a: [a.astype(F).astype(ml_dtypes.bfloat16).astype(F)]),
    Case("convert-f32-bool", lambda a: ops.convert(a, np.bool_), [((5,), F)],
         values=[np.array([0.0, 1.5, -2.0, 0.0, 3.0], F)]),
    Case("convert-low-precision-consts", lambda a: ops.add(ops.add(a, ops.convert(
        ov.op.Constant(ov.Type.bf16, ov.Shape([3]), [1.0, 2.5, -3.0]), np.float32)), ops.add(ops.convert(
            ov.op.Constant(ov.Type.u4, ov.Shape([3]), [1, 7, 15]), np.float32), ops.convert(
            ov.op.Constant(ov.Type.i4, ov.Shape([3]), [-1, 7, -8]), np.float32))), [((3,), F)]),
    # to 8-bit floats at run time: through f16, nearest value, no saturation (NaN / infinity), the ties above the
    # largest value (464 / 480 in f8e4m3, 61440 in f8e5m2) as OpenVINO rounds them
    *[Case(f"convert-{np.dtype(src).name}-{t}", lambda a, t=t: ops.convert(ops.convert(a, getattr(ov.Type, t)), F),
           [((F8_EDGES.size,), src)], values=[_as(F8_EDGES, src)])
      for t in ("f8e4m3", "f8e5m2") for src in (F, np.float16)],
    # to u2 at run time: the 8-bit conversion's low two bits (wrapped, truncated, from every source type)
    *[Case(f"convert-{np.dtype(src).name}-u2", lambda a: ops.convert(ops.convert(a, ov.Type.u2), F),
           [((U2_IN.size,), src)], values=[_as(U2_IN, src)]) for src in (F, np.float16, np.float64, I64, np.int8,
                                                                        np.uint16)],
    Case("convert-f8e4m3-output", lambda a: ops.convert(a, ov.Type.f8e4m3), [((F8_EDGES.size,), F)],
         values=[F8_EDGES]),
    Case("convert-like", lambda a, b: ops.convert_like(a, b), [((2, 3), F), ((1,), I32)]),
    Case("reshape-special-zero", lambda a: ops.reshape(a, const([0, -1], I64), True), [X234]),
    Case("reshape-plain", lambda a: ops.reshape(a, const([4, 6], I64), False), [X234]),
    # an empty copied dim: OpenVINO infers -1 from the other input dims (2 * 8), ONNX could not from the size (0)
    *[Case(f"reshape-special-zero-{steps}-steps", lambda a: ops.reshape(a, const([0, 0, -1], I64), True),
           [((2, -1, 2, 8), F)], values=[np.arange(2 * steps * 16, dtype=F).reshape(2, steps, 2, 8)]) for steps in (0, 3)],
    # the same over run-time dims: the -1 computed OpenVINO's way from the input's shape (PyTorch's flatten(2) of an
    # empty batch, copies around the -1, a copy beside a size)
    *[Case(f"reshape-special-zero-run-time-{tag}", lambda a, t=t: ops.reshape(a, const(t, I64), True),
           [((-1, -1, -1, -1), F)], values=[np.arange(np.prod(shape), dtype=F).reshape(shape)])
      for tag, t, shape in [("flatten-empty-batch", [0, 16, -1], (0, 16, 2, 3)), ("flatten", [0, 16, -1], (2, 16, 2, 3)),
                            ("copy-last-empty", [-1, 0], (3, 0, 2, 2)), ("copies-around", [0, -1, 0], (2, 3, 0, 1)),
                            ("size-and-copy", [2, 0, -1], (2, 0, 3, 2)), ("size-and-copy-full", [2, 0, -1], (2, 4, 3, 2))]],
    Case("reshape-special-zero-static-copy", lambda a: ops.reshape(a, const([0, 16, -1], I64), True),
         [((1, 16, -1, -1), F)], values=[np.arange(16 * 6, dtype=F).reshape(1, 16, 2, 3)]),
    Case("reshape-runtime", lambda a, s: ops.reshape(a, s, False), [X234, ((2,), I64)],
         values=[np.ones((2, 3, 4), F), np.array([6, 4], I64)]),
    Case("squeeze-axes", lambda a: ops.squeeze(a, const([0, -1], I64)), [((1, 3, 1), F)]),
    Case("squeeze-all", lambda a: ops1.squeeze(a, const([], I64)), [((1, 3, 1), F)]),
    Case("unsqueeze", lambda a: ops.unsqueeze(a, const([0, 3], I64)), [((2, 3), F)]),
    Case("concat-negative-axis", lambda a, b: ops.concat([a, b], -1), [((2, 3), F), ((2, 2), F)]),
    Case("split", lambda a: ops.split(a, const(1, I64), 3), [((2, 6), F)]),
    Case("split-opset18", lambda a: ops.split(a, const(-1, I64), 2), [((2, 6), F)], opset=18),
    Case("variadic-split", lambda a: ops.variadic_split(a, const(1, I64), const([1, -1, 2], I64)), [((2, 6), F)]),
    Case("split-runtime-axis", lambda a, x: ops.split(a, x, 2), [((2, 6, 2), F), ((), I64)],
         values=[np.arange(24, dtype=F).reshape(2, 6, 2), np.array(1, I64)]),
    Case("split-runtime-negative-axis", lambda a, x: ops.split(a, x, 3), [((2, 6, 3), F), ((), I32)],
         values=[np.arange(36, dtype=F).reshape(2, 6, 3), np.array(-1, I32)]),
    Case("variadic-split-runtime-lengths", lambda a, n: ops.variadic_split(a, const(1, I64), n),
         [((2, 6, 2), F), ((3,), I32)], values=[np.arange(24, dtype=F).reshape(2, 6, 2), np.array([1, -1, 2], I32)]),
    Case("variadic-split-runtime-lengths-zero", lambda a, n: ops.variadic_split(a, const(-2, I64), n),
         [((2, 6, 2), F), ((3,), I64)], values=[np.arange(24, dtype=F).reshape(2, 6, 2), np.array([0, 2, -1], I64)]),
    Case("variadic-split-runtime-lengths-no-rest", lambda a, n: ops.variadic_split(a, const(0, I64), n),
         [((6, 2), F), ((2,), I64)], values=[np.arange(12, dtype=F).reshape(6, 2), np.array([4, 2], I64)]),
    Case("variadic-split-runtime-axis", lambda a, x, n: ops.variadic_split(a, x, n),
         [((2, 6, 2), F), ((), I64), ((3,), I32)],
         values=[np.arange(24, dtype=F).reshape(2, 6, 2), np.array(-2, I64), np.array([3, -1, 2], I32)]),
    Case("variadic-split-runtime-axis-const-lengths", lambda a, x: ops.variadic_split(a, x, const([3, -1], I64)),
         [((2, 6, 5), F), ((), I32)], values=[np.arange(60, dtype=F).reshape(2, 6, 5), np.array(2, I32)]),
    Case("transpose", lambda a: ops.transpose(a, const([2, 0, 1], I64)), [X234]),
    Case("transpose-empty-perm", lambda a: ops.transpose(a, const([], I64)), [X234]),
    Case("shape-of-1", lambda a: ops1.shape_of(a), [X234]),
    Case("shape-of-3-i32", lambda a: ops3.shape_of(a, "i32"), [X234]),
    Case("broadcast-numpy", lambda a: ops.broadcast(a, const([2, 3, 4], I64)), [((3, 1), F)]),
    Case("broadcast-bidirectional", lambda a: ops.broadcast(a, const([2, 1, 4], I64), broadcast_spec="BIDIRECTIONAL"),
         [((3, 1), F)]),
    Case("broadcast-explicit", lambda a: ops.broadcast(a, const([2, 3, 4], I64), const([1], I64), "EXPLICIT"),
         [((3,), F)]),
    # opset1 writes explicit mode as "none"
    Case("broadcast-1-explicit", lambda a: ops1.broadcast(a, const([2, 3, 4], I64), const([1], I64), "EXPLICIT"),
         [((3,), F)]),
    Case("broadcast-1-explicit-bool", lambda a: ops1.broadcast(a, const([3, 2], I64), const([0], I64), "EXPLICIT"),
         [((3,), np.bool_)], values=[np.array([True, False, True])]),
    Case("broadcast-1-explicit-bf16", lambda a: ops1.convert(ops1.broadcast(
        ops1.convert(a, ov.Type.bf16), const([3, 2], I64), const([0], I64), "EXPLICIT"), F), [((3,), F)],
         values=[np.array([1.5, -2.25, 3.0], F)]),
    # run-time target shape and axes_mapping
    Case("broadcast-1-explicit-runtime-mapping", lambda a, s, m: ops1.broadcast(a, s, m, "EXPLICIT"),
         [((3, 2), F), ((4,), I64), ((2,), I32)],
         values=[np.arange(6, dtype=F).reshape(3, 2), np.array([3, 2, 2, 4], I64), np.array([0, 2], I32)]),
    Case("broadcast-3-explicit-runtime-mapping", lambda a, m: ops.broadcast(a, const([2, 3, 4], I64), m, "EXPLICIT"),
         [((3,), np.int8), ((1,), I64)], values=[np.array([1, -2, 3], np.int8), np.array([1], I64)]),
    Case("tile", lambda a: ops.tile(a, const([2, 1, 3], I64)), [X234]),
    Case("tile-short-repeats", lambda a: ops.tile(a, const([2], I64)), [X234]),
    Case("tile-long-repeats", lambda a: ops.tile(a, const([2, 1, 2], I64)), [((3, 2), F)]),
    Case("range-4-f32", lambda a: ops.range(const(1.0), const(4.0), const(0.5), "f32"), [((1,), F)]),
    Case("range-4-f16", lambda a: ops.range(const(1.0, np.float16), const(4.0, np.float16), const(0.25, np.float16),
                                            "f16"), [((1,), F)]),
    Case("range-4-i64", lambda a: ops.range(const(0, I64), const(7, I64), const(2, I64), "i64"), [((1,), F)]),
    Case("ss-basic", ss([0, 1, 0], [2, 3, 4], [1, 1, 2]), [X234]),
    Case("ss-negative-stride", ss([1, -1, -1], [0, 0, 0], [1, -1, -2], bm=[1, 0, 0], em=[1, 1, 1]), [X234]),
    Case("ss-begin-mask", ss([1, 1], [2, 2], [1, 1], bm=[1, 0]), [X234]),
    Case("ss-shrink", ss([1, 0, 2], [2, 3, 3], [1, 1, 1], sm=[1, 0, 1]), [X234]),
    Case("ss-shrink-last", ss([-1], [0], [1], sm=[1]), [X234]),
    Case("ss-new-axis", ss([0, 0, 1], [0, 2, 3], [1, 1, 1], nm=[1, 0, 0]), [X234]),
    Case("ss-ellipsis", ss([0, 1], [0, 3], [1, 1], el=[1, 0]), [X234]),
    Case("ss-runtime-begin", lambda a, b: ops.strided_slice(a, b, const([2, 3], I64), const([1, 1], I64), [0, 0], [0, 0]),
         [X234, ((2,), I64)], values=[np.arange(24, dtype=F).reshape(2, 3, 4), np.array([1, 1], I64)]),
    Case("slice-8", lambda a: ops.slice(a, const([1, 0], I64), const([3, -1], I64), const([1, 2], I64),
                                        const([1, 2], I64)), [X234]),
    Case("slice-8-no-axes", lambda a: ops.slice(a, const([0, 2], I64), const([2, 0], I64), const([1, -1], I64)),
         [X234]),
    Case("pad-constant", lambda a: ops.pad(a, const([0, 1, 2], I64), const([1, 0, 1], I64), "constant",
                                          const(1.5)), [X234]),
    Case("pad-negative", lambda a: ops.pad(a, const([0, -1, 1], I64), const([0, 1, -2], I64), "constant"), [X234]),
    Case("pad-edge", lambda a: ops.pad(a, const([0, 1, 2], I64), const([0, 2, 1], I64), "edge"), [X234]),
    Case("pad-reflect", lambda a: ops.pad(a, const([0, 1, 2], I64), const([0, 1, 1], I64), "reflect"), [X234]),
    Case("scatter-update-axis0", lambda a, u: ops.scatter_update(a, const([2, 0], I64), u, const(0, I64)),
         [((4, 3), F), ((2, 3), F)]),
    Case("scatter-update-axis1", lambda a, u: ops.scatter_update(a, const([[2], [0]], I32), u, const(1, I64)),
         [((2, 4, 3), F), ((2, 2, 1, 3), F)]),
    # a run-time number of rows, none at run time (a TensorList buffer before its first write: OpenVINO returns
    # the empty data) and some
    Case("scatter-update-runtime-rows-empty", lambda a, i, u: ops.scatter_update(a, i, u, const(0, I64)),
         [((-1, 3), F), ((1,), I32), ((1, 3), F)],
         values=[np.zeros((0, 3), F), np.array([0], I32), np.ones((1, 3), F)]),
    Case("scatter-update-runtime-rows", lambda a, i, u: ops.scatter_update(a, i, u, const(0, I64)),
         [((-1, 3), F), ((2,), I32), ((2, 3), F)],
         values=[np.zeros((4, 3), F), np.array([3, 1], I32), np.arange(6, dtype=F).reshape(2, 3)]),
    Case("scatter-update-runtime-axis1-empty", lambda a, u: ops.scatter_update(a, const([[0, 1]], I64), u, const(1, I64)),
         [((2, -1), F), ((2, 1, 2), F)], values=[np.zeros((2, 0), F), np.ones((2, 1, 2), F)]),
    # the axis as a model input (an attribute in ONNX): an If chain picks the axis at run time
    Case("scatter-update-axis-input-1", lambda a, u, x: ops.scatter_update(a, const([[2], [0]], I32), u, x),
         [((2, 4, 3), F), ((2, 2, 1, 3), F), ((), I64)],
         values=[np.zeros((2, 4, 3), F), np.arange(12, dtype=F).reshape(2, 2, 1, 3), np.array(1, I64)]),
    Case("scatter-update-axis-input-neg", lambda a, u, x: ops.scatter_update(a, const([3, 1], I64), u, x),
         [((2, 3, 4), F), ((2, 3, 2), F), ((1,), I32)],
         values=[np.zeros((2, 3, 4), F), np.arange(12, dtype=F).reshape(2, 3, 2), np.array([-1], I32)]),
    Case("scatter-update-axis-input-0", lambda a, u, x: ops.scatter_update(a, const([1], I64), u, x),
         [((2, 3), np.int32), ((1, 3), np.int32), ((), I64)],
         values=[np.zeros((2, 3), np.int32), np.array([[4, 5, 6]], np.int32), np.array(0, I64)]),
    Case("scatter-nd-update", lambda a, u: ops.scatter_nd_update(a, const([[1, 2], [0, 0]], I64), u),
         [((2, 3, 4), F), ((2, 4), F)]),
    Case("scatter-elements-update", lambda a, u: ops.scatter_elements_update(a, const([[1, 0, 2]], I64), u,
                                                                             const(0, I64)), [((3, 3), F), ((1, 3), F)]),
    Case("gather-1", lambda a, i: ops1.gather(a, i, const(1, I64)), [X234, ((2,), I64)],
         values=[np.arange(24, dtype=F).reshape(2, 3, 4), np.array([2, 0], I64)]),
    Case("gather-8-negative", lambda a, i: ops.gather(a, i, const(-1, I64)), [X234, ((2, 2), I32)],
         values=[np.arange(24, dtype=F).reshape(2, 3, 4), np.array([[-1, 0], [2, -3]], I32)]),
    Case("gather-7-batch-dims", lambda a, i: ops7.gather(a, i, const(1, I64), 1), [X234, ((2, 2), I64)],
         values=[np.arange(24, dtype=F).reshape(2, 3, 4), np.array([[2, 0], [1, 1]], I64)]),
    Case("gather-8-batch-dims-axis2", lambda a, i: ops.gather(a, i, const(2, I64), 1), [X234, ((2, 3), I32)],
         values=[np.arange(24, dtype=F).reshape(2, 3, 4), np.array([[3, 0, -1], [1, -2, 2]], I32)]),
    # OpenVINO zeroes the rows of indices out of range; Gather-1/-7 count negative ones among them
    Case("gather-1-negative-and-out-of-range", lambda a, i: ops1.gather(a, i, const(1, I64)), [X234, ((2, 2), I64)],
         values=[np.arange(24, dtype=F).reshape(2, 3, 4), np.array([[-1, 2], [3, 0]], I64)]),
    Case("gather-7-batch-dims-out-of-range", lambda a, i: ops7.gather(a, i, const(2, I64), 1), [X234, ((2, 3), I32)],
         values=[np.arange(24, dtype=F).reshape(2, 3, 4), np.array([[3, -1, 4], [0, 9, 2]], I32)]),
    Case("gather-7-constant-indices", lambda a: ops7.gather(a, const([[0, -2], [2, 5]], I64), const(0, I64)),
         [((3, 2), np.int32)], values=[np.arange(6, dtype=np.int32).reshape(3, 2)]),
    Case("gather-8-constant-out-of-range", lambda a: ops.gather(a, const([-4, -3, 1, 3], I32), const(1, I64)),
         [((2, 3), np.bool_)], values=[np.array([[True, False, True], [False, True, True]])]),
    # a scalar index into a run-time dim (PyTorch's x[:, 3] + x[:, -1]): the range check keeps the index a scalar
    Case("gather-8-scalar-indices-run-time-dims", lambda a: ops.add(ops.gather(a, const(3, I64), const(1, I64)),
                                                                     ops.gather(a, const(-1, I64), const(1, I64))),
         [((-1, -1, -1), F)], values=[np.arange(40, dtype=F).reshape(2, 5, 4)]),
    Case("gather-1-scalar-index-out-of-range-run-time-dims", lambda a: ops1.gather(a, const(7, I64), const(1, I64)),
         [((2, -1, 4), F)], values=[np.arange(40, dtype=F).reshape(2, 5, 4) + 1]),
]


@pytest.mark.parametrize("case", params(CASES))
def test_shape_ops(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


@pytest.mark.parametrize(("batch", "ops_expected"), [(1, ["Reshape"]),
                                                     (-1, ["Concat", "Div", "ReduceProd", "Reshape", "Shape", "Shape"])])
def test_reshape_computes_its_minus_one_only_where_a_copy_may_be_empty(tmp_path: Path, batch: int,
                                                                      ops_expected: list[str]) -> None:
    """[0, 16, -1] of [batch, 16, ?, ?]: a batch the IR declares positive cannot be empty, so ONNX's own -1 is
    OpenVINO's (one Reshape); a run-time batch may be 0, so the -1 is computed OpenVINO's way."""
    x = ops.parameter([batch, 16, -1, -1], np.float32, name="x")
    xml = save_ir(ov.Model([ops.reshape(x, const([0, 16, -1], np.int64), True)], [x]), tmp_path)
    proto = assert_equivalent(xml, [np.arange(16 * 6, dtype=np.float32).reshape(1, 16, 2, 3)])
    assert sorted(n.op_type for n in proto.graph.node) == ops_expected


@pytest.mark.parametrize(("width", "reads_shape"), [(6, False), (-1, True)])
def test_variadic_split_reads_its_axis_size_only_where_the_ir_leaves_it_open(tmp_path: Path, width: int,
                                                                           reads_shape: bool) -> None:
    """Run-time lengths with a -1 over an axis the IR gives a size (PyTorch's chunk in a traced cell, one split per
    step): the rest is that size minus the others, no Shape read at run time; an open axis is read."""
    x, n = ops.parameter([-1, width], F, name="x"), ops.parameter([3], I64, name="n")
    xml = save_ir(ov.Model(ops.variadic_split(x, const(1, I64), n).outputs(), [x, n]), tmp_path)
    proto = assert_equivalent(xml, [np.arange(12, dtype=F).reshape(2, 6), np.array([2, -1, 1], I64)])
    assert ("Shape" in {node.op_type for node in proto.graph.node}) == reads_shape


GATHER_AXIS_INPUT = [
    (Case("gather-8-axis-input", lambda a, i, x: ops.gather(a, i, x), [X234, ((2,), I32), ((), I64)],
          values=[np.arange(24, dtype=F).reshape(2, 3, 4), np.array([2, -1], I32), np.array(-2, I64)]),
     lambda a, i, x: [np.take(a, np.where(i < 0, i + a.shape[int(x)], i), int(x))]),
    (Case("gather-1-axis-input", lambda a, i, x: ops1.gather(a, i, x), [X234, ((3,), I64), ((1,), I32)],
          values=[np.arange(24, dtype=F).reshape(2, 3, 4), np.array([3, 0, 1], I64), np.array([2], I32)]),
     lambda a, i, x: [np.take(a, i, int(x[0]))]),
    (Case("gather-8-batch-dims-axis-input", lambda a, i, x: ops.gather(a, i, x, 1), [X234, ((2, 3), I32), ((), I32)],
          values=[np.arange(24, dtype=F).reshape(2, 3, 4), np.array([[3, 0, -1], [1, -2, 2]], I32), np.array(2, I32)]),
     lambda a, i, x: [np.stack([np.take(a[n], np.where(i[n] < 0, i[n] + 4, i[n]), 1) for n in range(2)])]),
]


@pytest.mark.parametrize("case,expected", [pytest.param(c, e, id=c.name) for c, e in GATHER_AXIS_INPUT])
def test_gather_axis_input(tmp_path: Path, case: Case, expected: Callable[..., list[np.ndarray]]) -> None:
    """The axis as a model input (an attribute in ONNX): an If chain picks the axis at run time. OpenVINO's CPU
    plugin refuses to compile a Gather whose axis is not a constant ("axis value is not set"), so numpy is the
    reference."""
    run_against_numpy(case, tmp_path, expected)


@pytest.mark.parametrize("et", ["u1", "u3", "u6"])
def test_runtime_conversion_openvino_cannot_run_is_refused(tmp_path: Path, et: str) -> None:
    """OpenVINO's CPU plugin aborts the process on a run-time Convert to u1 and refuses u3/u6 at compilation: no
    result is known to match, and the conversion says so, naming the layer."""
    import ir2onnx
    from ir2onnx.errors import LayerConversionError
    from tests.utils import save_ir

    x = ops.parameter([3], F, name="x")
    xml = save_ir(ov.Model([ops.convert(ops.convert(x, getattr(ov.Type, et)), F)], [x]), tmp_path)
    with pytest.raises(LayerConversionError, match=f"Convert.*a run-time conversion to {et}"):
        ir2onnx.convert(xml)

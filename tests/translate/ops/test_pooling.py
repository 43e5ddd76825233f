"""MaxPool, AvgPool and adaptive pooling (pooling.py) against OpenVINO."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset1 as ops1
import openvino.opset8 as ops8
import openvino.opset14 as ops14
import openvino.opset16 as ops16
import pytest

from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.translate.ops.cases import OPENVINO_BF16, Case, const, params, run_case
from tests.utils import assert_equivalent, convert_checked, save_ir

F16, F, F64, I8, U8, I32, I64 = np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64
RNG = np.random.default_rng(11)


def rand(shape, dtype=F):  # type: ignore[no-untyped-def]
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(max(info.min, -1000), min(info.max, 1000), size=shape, endpoint=True).astype(dtype)


# (name, input shape, strides, pads_begin, pads_end, kernel, dilations, rounding, auto_pad)
GEOMETRY = [
    ("floor", (1, 2, 8, 8), [2, 2], [0, 0], [0, 0], [3, 3], [1, 1], "floor", None),
    ("floor-pads", (1, 2, 8, 9), [2, 2], [1, 0], [0, 1], [3, 3], [1, 1], "floor", None),
    ("ceil", (1, 2, 8, 9), [2, 2], [1, 0], [0, 1], [3, 3], [1, 1], "ceil", None),
    ("ceil-overhang", (1, 1, 6, 6), [3, 3], [0, 0], [1, 1], [2, 2], [1, 1], "ceil", None),
    ("ceil-torch", (1, 1, 6, 6), [2, 2], [1, 1], [1, 1], [3, 3], [1, 1], "ceil_torch", None),
    ("ceil-torch-drop", (1, 1, 6, 6), [3, 3], [0, 0], [1, 1], [2, 2], [1, 1], "ceil_torch", None),
    ("ceil-torch-1d", (2, 3, 9), [4], [1], [1], [3], [1], "ceil_torch", None),
    ("ceil-big-stride", (1, 2, 7, 7), [4, 4], [1, 1], [0, 0], [2, 2], [1, 1], "ceil", None),
    ("ceil-unpadded", (1, 2, 6, 7), [2, 2], [0, 0], [0, 0], [2, 3], [1, 1], "ceil", None),
    ("ceil-torch-unpadded", (1, 1, 7, 6), [2, 3], [0, 0], [0, 0], [2, 2], [1, 1], "ceil_torch", None),
    ("same-upper", (1, 2, 7, 6), [2, 2], [0, 0], [0, 0], [3, 2], [1, 1], "floor", "same_upper"),
    ("same-lower", (1, 2, 7, 6), [2, 2], [0, 0], [0, 0], [2, 3], [1, 1], "floor", "same_lower"),
    ("valid", (1, 2, 7, 6), [2, 1], [1, 1], [1, 1], [3, 2], [1, 1], "ceil", "valid"),
    ("3d-ceil", (1, 1, 5, 6, 7), [2, 2, 2], [1, 0, 1], [0, 1, 1], [2, 3, 2], [1, 1, 1], "ceil", None),
]
DILATED = [
    ("dilated", (1, 2, 9, 9), [1, 1], [0, 0], [0, 0], [2, 2], [2, 2], "floor", None),
    ("dilated-ceil-torch", (1, 2, 9, 8), [2, 2], [1, 1], [1, 0], [3, 2], [2, 3], "ceil_torch", None),
    ("dilated-same-upper", (1, 1, 8, 8), [2, 2], [0, 0], [0, 0], [3, 3], [2, 1], "floor", "same_upper"),
    ("dilated-3d-ceil", (1, 1, 8, 8, 8), [3, 3, 3], [1, 1, 1], [1, 1, 1], [2, 2, 2], [2, 2, 2], "ceil", None),
    ("dilated-3d-ceil-unpadded", (1, 1, 9, 8, 7), [3, 3, 3], [0, 0, 0], [0, 0, 0], [2, 2, 2], [2, 2, 2], "ceil_torch",
     None),
]


def _geom_cases() -> list[Case]:
    cases = []
    for name, shape, s, pb, pe, k, d, rt, ap in GEOMETRY + DILATED:
        dil = d != [1] * len(d)
        if rt != "ceil_torch" and not dil:
            cases.append(Case(f"maxpool1-{name}", lambda x, s=s, pb=pb, pe=pe, k=k, rt=rt, ap=ap: ops1.max_pool(
                x, s, pb, pe, k, rt, ap), [(shape, F)]))
        if rt != "ceil_torch":
            cases.append(Case(f"maxpool8-{name}", lambda x, s=s, d=d, pb=pb, pe=pe, k=k, rt=rt, ap=ap: ops8.max_pool(
                x, s, d, pb, pe, k, rt, ap), [(shape, F)]))
        cases.append(Case(f"maxpool14-{name}", lambda x, s=s, d=d, pb=pb, pe=pe, k=k, rt=rt, ap=ap: ops14.max_pool(
            x, s, d, pb, pe, k, rt, ap, "i32"), [(shape, F)]))
        for exclude in (True, False):
            if exclude and ap is None and (any(p >= kk for p, kk in zip(pb + pe, k + k))):
                continue  # OpenVINO refuses pads >= kernel when padding is excluded
            tag = "excl" if exclude else "incl"
            if not dil and rt != "ceil_torch":
                cases.append(Case(f"avgpool1-{name}-{tag}", lambda x, s=s, pb=pb, pe=pe, k=k, e=exclude, rt=rt, ap=ap:
                                  ops1.avg_pool(x, s, pb, pe, k, e, rt, ap), [(shape, F)]))
            if not dil:
                cases.append(Case(f"avgpool14-{name}-{tag}", lambda x, s=s, pb=pb, pe=pe, k=k, e=exclude, rt=rt, ap=ap:
                                  ops14.avg_pool(x, s, pb, pe, k, e, rt, ap), [(shape, F)]))
            cases.append(Case(f"avgpool16-{name}-{tag}", lambda x, s=s, d=d, pb=pb, pe=pe, k=k, e=exclude, rt=rt, ap=ap:
                              ops16.avg_pool(x, s, pb, pe, k, e, rt, ap, dilations=d), [(shape, F)]))
    return cases


def _dyn(shape: tuple[int, ...]) -> tuple[int, ...]:
    return (shape[0], shape[1]) + (-1,) * (len(shape) - 2)


# sums of pairs that are odd (halves) of both signs
_AVG_INTS = (np.arange(40).reshape(1, 2, 4, 5) * 7 % 23 - 4)

CASES = _geom_cases() + [
    # run-time spatial dims: the end padding is computed from the input's shape
    Case("maxpool14-dynamic-ceil-torch", lambda x: ops14.max_pool(x, [2, 2], [1, 1], [1, 1], [1, 1], [3, 3],
                                                                   "ceil_torch", None, "i64"),
         [(_dyn((1, 2, 6, 7)), F)], values=[rand((1, 2, 6, 7))]),
    Case("maxpool8-dynamic-ceil-indices", lambda x: ops8.max_pool(x, [3, 3], [1, 1], [0, 0], [1, 1], [2, 2],
                                                                   "ceil", None, "i64"),
         [(_dyn((1, 2, 6, 8)), F)], values=[rand((1, 2, 6, 8))]),
    Case("maxpool8-dynamic-same-upper", lambda x: ops8.max_pool(x, [2, 2], [1, 1], [0, 0], [0, 0], [3, 3],
                                                                 "floor", "same_upper").output(0),
         [(_dyn((2, 1, 7, 5)), F)], values=[rand((2, 1, 7, 5))]),
    Case("avgpool14-dynamic-ceil-excl", lambda x: ops14.avg_pool(x, [2, 2], [1, 1], [1, 1], [3, 3], True, "ceil"),
         [(_dyn((1, 2, 8, 7)), F)], values=[rand((1, 2, 8, 7))]),
    Case("avgpool14-dynamic-ceil-torch-incl", lambda x: ops14.avg_pool(x, [2, 2], [1, 1], [1, 1], [3, 3], False,
                                                                        "ceil_torch"),
         [(_dyn((1, 2, 8, 7)), F)], values=[rand((1, 2, 8, 7))]),
    Case("avgpool1-dynamic-same-upper-ceil-incl", lambda x: ops1.avg_pool(x, [3, 3], [0, 0], [0, 0], [2, 2], False,
                                                                          "ceil", "same_upper"),
         [(_dyn((1, 2, 7, 6)), F)], values=[rand((1, 2, 7, 6))]),
    Case("avgpool1-dynamic-same-lower", lambda x: ops1.avg_pool(x, [2, 2], [0, 0], [0, 0], [2, 3], True, "floor",
                                                                 "same_lower"),
         [(_dyn((1, 2, 7, 7)), F)], values=[rand((1, 2, 7, 7))]),
    # run-time spatial dims in floor mode: the layer's own pads serve (test_floor_pooling_over_run_time_dims_is_native)
    Case("maxpool8-dynamic-floor-padded-indices", lambda x: ops8.max_pool(x, [2, 2], [1, 1], [1, 0], [1, 1], [3, 2],
                                                                           "floor", None, "i64"),
         [(_dyn((2, 2, 7, 9)), F)], values=[rand((2, 2, 7, 9))]),
    Case("avgpool1-dynamic-floor-padded-incl", lambda x: ops1.avg_pool(x, [2, 3], [1, 1], [1, 2], [3, 3], False,
                                                                        "floor"),
         [(_dyn((1, 2, 8, 10)), F)], values=[rand((1, 2, 8, 10))]),
    Case("avgpool1-dynamic-floor-padded-excl", lambda x: ops1.avg_pool(x, [2, 3], [1, 1], [1, 2], [3, 3], True,
                                                                        "floor"),
         [(_dyn((1, 2, 8, 10)), F)], values=[rand((1, 2, 8, 10))]),
    # indices: axis, element type, padding >= kernel (explicit padding, indices mapped back)
    Case("maxpool8-indices-axis1", lambda x: ops8.max_pool(x, [2, 2], [1, 1], [1, 1], [0, 1], [2, 2], "ceil",
                                                           None, "i64", 1), [((2, 3, 5, 6), F)]),
    Case("maxpool14-indices-axis-neg2", lambda x: ops14.max_pool(x, [2, 1], [1, 2], [0, 0], [0, 0], [2, 2],
                                                                 "floor", None, "i32", -2), [((2, 3, 6, 6), F)]),
    Case("maxpool8-pads-ge-kernel-indices", lambda x: ops8.max_pool(x, [3, 3], [1, 1], [2, 1], [2, 3], [2, 2],
                                                                    "floor", None, "i64"), [((1, 2, 5, 5), F)]),
    Case("maxpool8-1d-indices", lambda x: ops8.max_pool(x, [2], [1], [1], [0], [3], "ceil", None, "i32"),
         [((2, 2, 8), F)]),
    # element types
    Case("maxpool8-i8", lambda x: ops8.max_pool(x, [2, 2], [1, 1], [1, 1], [1, 1], [3, 3]), [((1, 2, 6, 6), I8)],
         values=[rand((1, 2, 6, 6), I8)]),
    Case("maxpool8-u8-indices", lambda x: ops8.max_pool(x, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2]),
         [((1, 2, 6, 6), U8)], values=[rand((1, 2, 6, 6), U8)]),
    Case("maxpool8-i32", lambda x: ops8.max_pool(x, [2, 2], [1, 1], [1, 1], [1, 1], [3, 3], "ceil"),
         [((1, 2, 6, 7), I32)], values=[rand((1, 2, 6, 7), I32)]),
    Case("maxpool1-f64", lambda x: ops1.max_pool(x, [2, 2], [0, 0], [1, 1], [2, 2], "ceil"), [((1, 1, 5, 5), F64)]),
    Case("maxpool1-f16", lambda x: ops1.max_pool(x, [2, 2], [0, 0], [1, 1], [2, 2], "ceil"), [((1, 1, 5, 5), F16)]),
    # AvgPool outside f32/f16: OpenVINO averages in f32, integer results rounded half to even
    *[Case(f"avgpool14-{np.dtype(t).name}-{tag}", lambda x, e=e: ops14.avg_pool(x, [1, 2], [1, 0], [0, 1], [2, 2], e,
                                                                                 "ceil"),
           [((1, 2, 4, 5), t)], values=[(_AVG_INTS + 4 * (t in (np.uint32, np.uint64))).astype(t)])
      for t in (I8, U8, np.int16, np.uint16, I32, np.uint32, I64, np.uint64) for tag, e in (("excl", True), ("incl", False))],
    Case("avgpool1-i32-halves", lambda x: ops1.avg_pool(x, [1, 1], [0, 0], [0, 0], [1, 2], True),
         [((1, 1, 8, 2), I32)], values=[np.array([[0, 1], [0, 3], [1, 2], [-1, 0], [-3, 0], [-5, 0], [11, 0], [-13, 0]],
                                                 I32).reshape(1, 1, 8, 2)]),
    Case("avgpool16-u8-dilated", lambda x: ops16.avg_pool(x, [1, 1], [1, 1], [1, 1], [2, 2], False, "floor",
                                                          dilations=[2, 1]),
         [((1, 1, 5, 5), U8)], values=[(np.arange(25) * 37 % 256).astype(U8).reshape(1, 1, 5, 5)], opset=19),
    Case("avgpool1-f64", lambda x: ops1.avg_pool(x, [2, 2], [0, 0], [1, 1], [2, 2], True, "ceil"), [((1, 1, 5, 5), F64)]),
    Case("avgpool14-bf16", lambda x: ops1.convert(ops14.avg_pool(ops1.convert(x, ov.Type.bf16), [2, 2], [1, 1],
                                                                  [0, 0], [3, 3], False), F), [((1, 2, 6, 6), F)],
         **({} if OPENVINO_BF16 else {"rtol": 1e-2, "atol": 1e-2})),  # see OPENVINO_BF16
]


@pytest.mark.parametrize("case", params(CASES))
def test_pooling(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


NATIVE_FORMS = {  # pooling over run-time spatial dims as one ONNX node: (pads_begin, pads_end, auto_pad, rounding)
    "explicit": ([1, 0], [1, 1], "explicit", "floor"),  # floor mode: the layer's own pads
    "same-upper": ([0, 0], [0, 0], "same_upper", "floor"),  # Keras' padding="same" on a run-time image size
    "same-lower": ([0, 0], [0, 0], "same_lower", "floor"),
    "ceil-torch": ([1, 0], [1, 1], "explicit", "ceil_torch"),  # PyTorch's ceil_mode=True: ONNX's ceil_mode
}


@pytest.mark.parametrize("form", list(NATIVE_FORMS))
@pytest.mark.parametrize("pool", ["max", "max-indices", "avg-incl", "avg-excl"])
def test_pooling_over_run_time_dims_is_native(tmp_path: Path, pool: str, form: str) -> None:
    check_native_pooling(tmp_path, pool, form, "cpu")


def check_native_pooling(tmp_path: Path, pool: str, form: str, device: str) -> None:
    """A run-time height and width: one pooling node (the layer's pads, ONNX's SAME_UPPER / SAME_LOWER or its
    ceil_mode), no explicit Pad and mask of the windows (PaddlePaddle's CRNN: a third of its poolings' time), on
    inputs whose windows stop short of the end padding and ones that reach into it or past it. Averages that count
    padding in ceil mode keep the explicit form (OpenVINO divides a window overhanging the end padding by the
    kernel's size, onnxruntime by its part up to that end). `device`: converted for and run on it."""
    pb, pe, auto_pad, rounding = NATIVE_FORMS[form]
    p = ops1.parameter([-1, 3, -1, -1], F, name="x")
    if pool.startswith("max"):
        node = ops14.max_pool(p, [2, 2], [1, 1], pb, pe, [3, 2], rounding, auto_pad, "i64")
        outs = [node.output(0), node.output(1)] if pool == "max-indices" else [node.output(0)]
    else:
        outs = [ops14.avg_pool(p, [2, 2], pb, pe, [3, 2], pool == "avg-excl", rounding, auto_pad).output(0)]
    xml = save_ir(ov.Model(outs, [p]), tmp_path)
    proto = convert_checked(xml, device=device)
    ops = [n.op_type for n in proto.graph.node]
    if pool == "avg-incl" and rounding == "ceil_torch":
        assert "Pad" in ops or "Concat" in ops, ops
    else:
        assert ops == ["MaxPool" if pool.startswith("max") else "AveragePool"]
    for shape in ((2, 3, 7, 9), (1, 3, 8, 10), (2, 3, 2, 2), (1, 3, 1, 5), (1, 3, 4, 4)):
        x = rand(shape)
        if pool == "max-indices" and form.startswith("same"):  # OpenVINO's CPU plugin pads these wrongly (below)
            pads = [_same_pads(n, k, 2, form == "same-upper") for n, k in zip(shape[2:], [3, 2])]
            want = _np_max_pool(x, [3, 2], [2, 2], [b for b, _ in pads], [e for _, e in pads])
            for got, expected in zip(run_onnxruntime(proto, {"x": x}, device), want):
                np.testing.assert_array_equal(got, expected)
        else:
            assert_equivalent(xml, [x], proto=proto, run_on=device)


def _same_pads(size: int, kernel: int, stride: int, upper: bool) -> tuple[int, int]:
    """same_upper / same_lower padding of one axis: ceil(size / stride) windows, the odd pad at the end / start."""
    total = max((-(-size // stride) - 1) * stride + kernel - size, 0)
    head = total // 2 if upper else total - total // 2
    return head, total - head


def test_same_pooling_with_a_stride_past_the_kernel(tmp_path: Path) -> None:
    """same_upper with a kernel below its stride (ONNX's SAME would ask for a negative pad): computed pads."""
    p = ops1.parameter([-1, 2, -1, -1], F, name="x")
    y = ops1.max_pool(p, [3, 2], [0, 0], [0, 0], [1, 2], "floor", "same_upper")
    xml = save_ir(ov.Model([y], [p]), tmp_path)
    proto = convert_checked(xml)
    for shape in ((1, 2, 7, 9), (2, 2, 6, 4), (1, 2, 1, 1)):
        assert_equivalent(xml, [rand(shape)], proto=proto)


def _np_max_pool(x: np.ndarray, k: list[int], s: list[int], pb: list[int], pe: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Reference 2-D max pooling (padding ignored) with flat indices into each input."""
    xp = np.pad(x, [(0, 0), (0, 0), (pb[0], pe[0]), (pb[1], pe[1])], constant_values=-np.inf)
    n, c, h, w = x.shape
    oh, ow = (xp.shape[2] - k[0]) // s[0] + 1, (xp.shape[3] - k[1]) // s[1] + 1
    vals, idx = np.zeros((n, c, oh, ow), x.dtype), np.zeros((n, c, oh, ow), np.int64)
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]].reshape(n, c, -1)
            a = win.argmax(-1)
            vals[:, :, i, j] = win.max(-1)
            r, q = a // k[1] + i * s[0] - pb[0], a % k[1] + j * s[1] - pb[1]
            idx[:, :, i, j] = (np.arange(n)[:, None] * c + np.arange(c)[None]) * h * w + r * w + q
    return vals, idx


def test_maxpool_dynamic_same_upper_indices_against_numpy(tmp_path: Path) -> None:
    """OpenVINO's CPU plugin miscomputes this one: with run-time spatial dims, auto_pad=same_upper and the indices
    output in use it pads [0, 0] before and [2, 2] after instead of [1, 1] / [1, 1]. Checked against numpy."""
    x = rand((2, 1, 7, 5))
    p = ops1.parameter([2, 1, -1, -1], F, name="x")
    mp = ops8.max_pool(p, [2, 2], [1, 1], [0, 0], [0, 0], [3, 3], "floor", "same_upper", "i64")
    proto = convert_checked(save_ir(ov.Model(mp.outputs(), [p]), tmp_path))
    got = run_onnxruntime(proto, {"x": x})
    want = _np_max_pool(x, [3, 3], [2, 2], [1, 1], [1, 1])
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


ADAPTIVE = [((1, 2, 7, 5), [3, 4]), ((2, 3, 8, 8), [1, 1]), ((1, 2, 5, 6), [5, 6]), ((1, 2, 9), [4]),
            ((1, 1, 4, 5, 6), [2, 3, 4]), ((1, 2, 3, 4), [5, 7])]
ADAPTIVE_CASES = [
    Case(f"adaptive-avg-{len(shape)}d-{'x'.join(map(str, size))}",
         lambda x, s=size: ops8.adaptive_avg_pool(x, const(s, I64)), [(shape, F)])
    for shape, size in ADAPTIVE
] + [
    Case(f"adaptive-max-{len(shape)}d-{'x'.join(map(str, size))}",
         lambda x, s=size: ops8.adaptive_max_pool(x, const(s, I64), "i32"), [(shape, F)])
    for shape, size in ADAPTIVE
] + [
    Case("adaptive-avg-dynamic-runtime-size", lambda x, s: ops8.adaptive_avg_pool(x, s), [((-1, 2, -1, -1), F),
                                                                                        ((2,), I32)],
         values=[rand((2, 2, 7, 9)), np.array([3, 4], I32)]),
    # run-time sizes equal to the input's lengths (the axis kept), 1 (a mean), or a mix
    *[Case(f"adaptive-avg-dynamic-runtime-size-{'x'.join(map(str, size))}", lambda x, s: ops8.adaptive_avg_pool(x, s),
           [((-1, 2, -1, -1), F), ((2,), I64)], values=[rand((2, 2, 7, 9)), np.array(size, I64)])
      for size in ([7, 9], [1, 1], [1, 9], [7, 4])],
    # PyTorch's adaptive_avg_pool2d(x, (1, None)) as its frontend writes it: the width read from the input's shape
    Case("adaptive-avg-keep-width", lambda x: ops8.adaptive_avg_pool(x, ops8.concat(
        [const([1], I64), ops8.gather(ops8.shape_of(x), const([3], I64), const(0, I64))], 0)),
         [((-1, 3, -1, -1), F)], values=[rand((2, 3, 4, 10))]),
    Case("adaptive-max-dynamic-runtime-size", lambda x, s: ops8.adaptive_max_pool(x, s, "i32"),
         [((-1, 2, -1, -1), F), ((2,), I64)], values=[rand((2, 2, 7, 9)), np.array([4, 2], I64)]),
    # integers: averaged in f32 and rounded half to even; bins of 2, 4 and 6 elements make exact ties
    *[Case(f"adaptive-avg-{np.dtype(dt).name}-{'x'.join(map(str, size))}",
           lambda x, s=size: ops8.adaptive_avg_pool(x, const(s, I64)), [((2, 3, 4, 12), dt)],
           values=[np.random.default_rng(5).integers(0 if np.dtype(dt).kind == "u" else -9, 10, (2, 3, 4, 12))
                   .astype(dt)])
      for dt in (np.int8, np.uint8, np.int16, np.int32, np.int64) for size in ([2, 6], [1, 2], [4, 3], [3, 5])],
    *[Case(f"adaptive-max-{np.dtype(dt).name}-{'x'.join(map(str, size))}-{idx}",
           lambda x, s=size, i=idx: ops8.adaptive_max_pool(x, const(s, I64), i), [((2, 3, 4, 12), dt)],
           values=[np.random.default_rng(6).integers(0 if np.dtype(dt).kind == "u" else -3, 4, (2, 3, 4, 12))
                   .astype(dt)])
      for dt in (np.int8, np.uint8, np.int16, np.int32, np.int64) for size in ([2, 6], [3, 5]) for idx in ("i32",)],
    Case("adaptive-max-ties", lambda x: ops8.adaptive_max_pool(x, const([2, 2], I64), "i32"), [((1, 1, 4, 4), F)],
         values=[np.array([[[[1, 1, 0, 2], [1, 0, 2, 2], [3, 3, 1, 1], [3, 3, 1, 1]]]], F)]),
]


@pytest.mark.parametrize("case", params(ADAPTIVE_CASES))
def test_adaptive_pooling(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)

"""Col2Im-15 (col2im.py) against OpenVINO: overlapping and gapped blocks, strides, dilations, asymmetric pads,
unbatched data, run-time output_size/kernel_size, dynamic dims, every element type (integer sums wrap as the plugin's
do), and the IR that PyTorch's F.unfold + F.fold give.

Two cases are compared with numpy instead: bf16 (OpenVINO's CPU plugin adds in bf16 and rounds every partial sum
with its float-to-bf16 conversion, which is not round-to-nearest: 1 + 0.9 ulp gives 1; the converter computes in f32
and rounds once) and no blocks at all (L = 0: the plugin leaves the output uninitialised; the sum of nothing is 0).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import ml_dtypes
import numpy as np
import openvino as ov
import openvino.opset15 as ops
import pytest

import ir2onnx
from ir2onnx.errors import LayerConversionError
from tests.translate.ops.cases import OPENVINO_BF16, Case, check_against, params, run_case
from tests.translate.ops.handmade import Input, write_layer_ir
from tests.utils import check_model

F, F16, F64, BOOL = np.float32, np.float16, np.float64, np.bool_
I8, U8, I16, U16, I32, U32, I64, U64 = np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64
RNG = np.random.default_rng(15)


def blocks(size, kernel, strides=(1, 1), dilations=(1, 1), pads_begin=(0, 0), pads_end=(0, 0)):  # type: ignore[no-untyped-def]
    return [max((size[a] + pads_begin[a] + pads_end[a] - dilations[a] * (kernel[a] - 1) - 1) // strides[a] + 1, 0)
            for a in range(2)]


def reference(x: np.ndarray, size, kernel, strides=(1, 1), dilations=(1, 1), pads_begin=(0, 0),  # type: ignore[no-untyped-def]
              pads_end=(0, 0)) -> np.ndarray:
    """Col2Im in numpy, adding the block pixels in data order (as OpenVINO does) in x's type."""
    batched = x.ndim == 3
    x = x if batched else x[None]
    n, ck, _ = x.shape
    kh, kw = kernel
    nh, nw = blocks(size, kernel, strides, dilations, pads_begin, pads_end)
    c = ck // (kh * kw)
    out = np.zeros((n, c, size[0] + pads_begin[0] + pads_end[0], size[1] + pads_begin[1] + pads_end[1]), x.dtype)
    rows = (np.arange(kh)[:, None] * dilations[0] + np.arange(nh)[None, :] * strides[0])[:, None, :, None]
    cols = (np.arange(kw)[:, None] * dilations[1] + np.arange(nw)[None, :] * strides[1])[None, :, None, :]
    flat = (rows * out.shape[3] + cols).reshape(-1)
    view = out.reshape(n, c, -1)
    data = x.reshape(n, c, -1)
    for b in range(n):
        for ch in range(c):
            np.add.at(view[b, ch], flat, data[b, ch])
    out = out[:, :, pads_begin[0]:pads_begin[0] + size[0], pads_begin[1]:pads_begin[1] + size[1]]
    return out if batched else out[0]


def col2im(size, kernel, strides=(1, 1), dilations=(1, 1), pads_begin=(0, 0), pads_end=(0, 0),  # type: ignore[no-untyped-def]
           index=np.int64):
    def build(x):  # type: ignore[no-untyped-def]
        return ops.col2im(x, ops.constant(np.array(size, index)), ops.constant(np.array(kernel, index)),
                          list(strides), list(dilations), list(pads_begin), list(pads_end))
    return build


def full_range(shape: tuple[int, ...], dtype) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Values over the whole range of an integer type (so that the sums wrap)."""
    if np.dtype(dtype) == np.bool_:
        return RNG.random(shape) > 0.3
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)


# (name, output_size, kernel_size, strides, dilations, pads_begin, pads_end)
GEOMETRIES = [
    ("2x2-s2-disjoint", (4, 6), (2, 2), (2, 2), (1, 1), (0, 0), (0, 0)),
    ("3x3-overlap", (5, 6), (3, 3), (1, 1), (1, 1), (0, 0), (0, 0)),
    ("3x2-s2x1-d1x2-asym-pads", (7, 6), (3, 2), (2, 1), (1, 2), (1, 0), (0, 2)),
    ("2x3-s3x2-d2x1-asym-pads", (6, 7), (2, 3), (3, 2), (2, 1), (0, 2), (1, 0)),
    ("1x1", (3, 4), (1, 1), (1, 1), (1, 1), (0, 0), (0, 0)),
    ("pads-wider-than-kernel", (4, 3), (3, 2), (1, 1), (1, 1), (3, 2), (2, 3)),
    ("kernel-is-image", (3, 4), (3, 4), (1, 1), (1, 1), (0, 0), (0, 0)),
    ("stride-over-kernel-gaps", (9, 10), (2, 2), (4, 3), (1, 1), (0, 0), (0, 0)),
    ("d3x2-s1x2", (8, 8), (2, 3), (1, 2), (3, 2), (0, 0), (0, 0)),
    ("remainder-rows-dropped", (8, 7), (3, 2), (2, 3), (1, 1), (1, 0), (0, 0)),
    ("1-row-image", (1, 9), (1, 4), (1, 2), (1, 2), (0, 1), (0, 1)),
]

CASES = []
for name, size, kernel, st, dil, pb, pe in GEOMETRIES:
    nh, nw = blocks(size, kernel, st, dil, pb, pe)
    ck = 3 * kernel[0] * kernel[1]
    build = col2im(size, kernel, st, dil, pb, pe)
    CASES.append(Case(name, build, [((2, ck, nh * nw), F)]))
    CASES.append(Case(f"{name}-unbatched", build, [((ck, nh * nw), F)]))

OVERLAP = ((7, 6), (3, 2), (2, 1), (1, 2), (1, 0), (0, 2))  # every pixel sums up to 6 block pixels
_NB = blocks(*OVERLAP)
_SHAPE = (2, 2 * 3 * 2, _NB[0] * _NB[1])
for dtype in (I8, U8, I16, U16, I32, U32, I64, U64, BOOL):
    CASES.append(Case(f"{np.dtype(dtype).name}-wraps", col2im(*OVERLAP), [(_SHAPE, dtype)],
                      values=[full_range(_SHAPE, dtype)]))
CASES += [
    Case("f16", col2im(*OVERLAP), [(_SHAPE, F16)]),
    # f16 sums beyond 65504 become inf, as the plugin's conversion back from f32 gives
    Case("f16-overflow", col2im(*OVERLAP), [(_SHAPE, F16)],
         values=[np.clip(RNG.standard_normal(_SHAPE) * 30000, -60000, 60000).astype(F16)]),
    Case("inf-nan", col2im(*OVERLAP), [(_SHAPE, F)],
         values=[RNG.choice(np.array([np.inf, -np.inf, np.nan, 1.0, -2.5], F), _SHAPE, p=[.1, .1, .05, .4, .35])]),
    Case("f64", col2im(*OVERLAP), [(_SHAPE, F64)]),
    # f64 is summed in f32 by the plugin: 1e8 + 1 - 1e8 gives 0, not 1
    Case("f64-summed-in-f32", col2im(*OVERLAP), [(_SHAPE, F64)],
         values=[RNG.choice(np.array([1e8 + 1, -1e8, 0.5, 3.0]), _SHAPE)]),
    Case("i32-index-inputs", col2im(*OVERLAP, index=np.int32), [(_SHAPE, F)]),
    Case("c0", col2im((3, 3), (2, 2)), [((2, 0, 4), F)]),
    Case("zero-rows", col2im((0, 4), (1, 1)), [((2, 2, 0), F)]),
    Case("no-blocks", col2im((2, 2), (3, 3)), [((2, 18, 0), F)], expected=lambda x: [np.zeros((2, 2, 2, 2), F)]),
    Case("no-blocks-unbatched-s2", col2im((2, 2), (3, 3), (2, 2)), [((9, 0), F)],
         expected=lambda x: [np.zeros((1, 2, 2), F)]),
]


def _bf16_case(name: str, geometry: tuple, shape: tuple[int, ...]) -> Case:  # type: ignore[type-arg]
    """bf16 data (through Convert, as numpy has no bf16 inputs): summed in f32 and rounded once, checked with numpy."""
    values = (RNG.standard_normal(shape) * np.array([1.0, 300.0, 1e-3])[RNG.integers(0, 3, shape)])
    values = values.astype(ml_dtypes.bfloat16).astype(F)

    def build(x):  # type: ignore[no-untyped-def]
        return ops.convert(col2im(*geometry)(ops.convert(x, ov.Type.bf16)), F)

    def expected(x: np.ndarray) -> list[np.ndarray]:
        return [reference(x, *geometry).astype(ml_dtypes.bfloat16).astype(F)]

    return Case(name, build, [(shape, F)], values=[values], expected=expected)


CASES += [
    _bf16_case("bf16", OVERLAP, _SHAPE),
    _bf16_case("bf16-3x3", ((5, 6), (3, 3)), (2, 2 * 9, 12)),
]


# bit-exact: the composition adds in the plugin's order and type
CASES = [dataclasses.replace(c, rtol=0.0, atol=0.0) for c in CASES]


@pytest.mark.parametrize("case", params(CASES))
def test_col2im(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


def _ov_bf16(x: np.ndarray) -> np.ndarray:
    """OpenVINO's float-to-bf16 conversion (ov::bfloat16): bits + (bit 16 >> 1), the low 16 bits dropped; so a value
    rounds up only when the kept part is odd (a tie then goes to even, but 1 + 0.9 ulp truncates to 1)."""
    bits = np.array(x, F).view(np.uint32).astype(np.uint64)
    kept = ((bits + ((bits & 0x10000) >> 1)) >> 16).astype(np.uint16)
    return kept.view(ml_dtypes.bfloat16)


@pytest.mark.skipif(not OPENVINO_BF16,
                    reason="OpenVINO's CPU plugin runs bf16 kernels only on CPUs with bf16 instructions (elsewhere it "
                           "computes bf16 layers in f32)")
def test_openvino_bf16_col2im_rounds_every_sum() -> None:
    """Why bf16 is checked against numpy: the plugin adds bf16 data one block pixel at a time, converting every
    partial sum to bf16 with its own conversion, which is not round-to-nearest. Its output is exactly that
    emulation and differs from the sum rounded once (when OpenVINO changes this, the bf16 cases can compare with it
    again)."""
    core = ov.Core()
    ulp = 2.0 ** -7
    x = ops.parameter([1, 2, 2], F)
    model = ov.Model([ops.convert(col2im((3, 1), (2, 1))(ops.convert(x, ov.Type.bf16)), F)], [x])
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    # pixel 1 is 1 + 0.875 ulp: nearest is 1 + ulp, OpenVINO gives 1
    got = compiled([np.array([[[0, 1], [0.875 * ulp, 0]]], F)])[0]
    assert got[0, 0, 1, 0] == 1.0 and float(_ov_bf16(np.float32(1 + 0.875 * ulp))) == 1.0

    shape, geometry = (2, 2 * 9, 12), ((5, 6), (3, 3))
    values = (RNG.standard_normal(shape) * 300).astype(ml_dtypes.bfloat16).astype(F)
    x = ops.parameter(list(shape), F)
    model = ov.Model([ops.convert(col2im(*geometry)(ops.convert(x, ov.Type.bf16)), F)], [x])
    got = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})([values])[0]
    once = reference(values, *geometry).astype(ml_dtypes.bfloat16).astype(F)
    assert not np.array_equal(got, once)
    emulated = np.zeros_like(once)
    kh, kw = geometry[1]
    for i in range(kh):  # the pixels of one kernel position never overlap: one partial sum each
        for j in range(kw):
            part = np.zeros_like(values).reshape(2, 2, kh, kw, -1)
            part[:, :, i, j] = values.reshape(2, 2, kh, kw, -1)[:, :, i, j]
            emulated = _ov_bf16(emulated + reference(part.reshape(shape), *geometry)).astype(F)
    np.testing.assert_array_equal(got, emulated)


def test_reference_matches_openvino() -> None:
    """The numpy reference above is OpenVINO's f32 Col2Im, bit for bit (so the numpy-checked cases test the same
    semantics)."""
    core = ov.Core()
    for _, size, kernel, st, dil, pb, pe in GEOMETRIES:
        nh, nw = blocks(size, kernel, st, dil, pb, pe)
        x = ops.parameter([2, 2 * kernel[0] * kernel[1], nh * nw], F)
        model = ov.Model([col2im(size, kernel, st, dil, pb, pe)(x)], [x])
        value = RNG.standard_normal((2, 2 * kernel[0] * kernel[1], nh * nw)).astype(F)
        got = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})([value])[0]
        np.testing.assert_array_equal(got, reference(value, size, kernel, st, dil, pb, pe))


# (output_size, kernel_size, strides, dilations, pads_begin, pads_end, channels, batch)
RUNTIME = [
    ((7, 6), (3, 2), (2, 1), (1, 2), (1, 0), (0, 2), 3, 2),
    ((5, 5), (2, 2), (1, 1), (1, 1), (0, 0), (0, 0), 1, 1),
    ((6, 9), (1, 3), (2, 3), (1, 1), (2, 0), (1, 1), 2, 3),
    ((2, 2), (3, 3), (1, 1), (1, 1), (0, 0), (0, 0), 2, 2),  # no blocks
]


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("geometry", RUNTIME, ids=[f"{g[0]}-{g[1]}" for g in RUNTIME])
@pytest.mark.parametrize("index", [np.int32, np.int64], ids=["i32", "i64"])
@pytest.mark.parametrize("runtime", ["both", "output_size", "kernel_size"])
def test_col2im_runtime_sizes(tmp_path: Path, geometry: tuple, batched: bool, index, runtime: str) -> None:  # type: ignore[no-untyped-def,type-arg]
    """output_size and/or kernel_size as model inputs, data with dynamic dims."""
    size, kernel, st, dil, pb, pe, c, n = geometry
    nh, nw = blocks(size, kernel, st, dil, pb, pe)
    shape = (n, c * kernel[0] * kernel[1], nh * nw) if batched else (c * kernel[0] * kernel[1], nh * nw)
    params_ = [ops.parameter([-1] * len(shape), F, name="x")]
    inputs = [RNG.standard_normal(shape).astype(F)]
    pair = []
    for name, value in (("output_size", size), ("kernel_size", kernel)):
        if runtime in ("both", name):
            params_.append(ops.parameter([2], index, name=name))
            inputs.append(np.array(value, index))
            pair.append(params_[-1])
        else:
            pair.append(ops.constant(np.array(value, index)))
    model = ov.Model([ops.col2im(params_[0], *pair, list(st), list(dil), list(pb), list(pe))], params_)
    if nh * nw == 0:  # OpenVINO leaves the output uninitialised
        out_shape = ((n,) if batched else ()) + (c, *size)
        check_against(model, inputs, [np.zeros(out_shape, F)], tmp_path, 0, 0)
        return
    check_model(model, inputs, tmp_path, rtol=0.0, atol=0.0)


def _unfold(x, kernel, dilation, padding, stride):  # type: ignore[no-untyped-def]
    """F.unfold as OpenVINO's PyTorch frontend translates aten::im2col: Pad, then Gather of the block rows and
    columns (indices from Range over the padded size), Transpose and Reshape to [N, C * kh * kw, L]."""
    i32 = np.int32
    n, c, h, w = ops.split(ops.shape_of(x, "i32"), ops.constant(np.int32(0)), 4).outputs()

    def indices(d, k, dil, pad, st):  # type: ignore[no-untyped-def]
        extent = ops.subtract(ops.add(ops.squeeze(d, ops.constant(i32(0))), ops.constant(i32(2 * pad))),
                              ops.constant(i32(dil * (k - 1))))
        starts = ops.unsqueeze(ops.range(ops.constant(i32(0)), extent, ops.constant(i32(st)), "i32"),
                               ops.constant(i32(0)))
        grid = ops.unsqueeze(ops.constant(np.arange(0, k * dil, dil, dtype=i32)), ops.constant(i32(-1)))
        return ops.add(starts, grid)

    rows = indices(h, kernel[0], dilation[0], padding[0], stride[0])
    cols = indices(w, kernel[1], dilation[1], padding[1], stride[1])
    pads = ops.constant(np.array([0, 0, padding[0], padding[1]], i32))
    padded = ops.pad(x, pads, pads, "constant", ops.constant(F(0)))
    out = ops.gather(ops.gather(padded, rows, ops.constant(i32(2))), cols, ops.constant(i32(4)))
    out = ops.transpose(out, ops.constant(np.array([0, 1, 2, 4, 3, 5], i32)))
    channels = ops.unsqueeze(ops.multiply(ops.squeeze(c, ops.constant(i32(0))), ops.constant(i32(kernel[0] * kernel[1]))),
                             ops.constant(i32(0)))
    return ops.reshape(out, ops.concat([n, channels, ops.constant(np.array([-1], i32))], 0), False)


# (image shape, kernel, dilation, padding, stride)
UNFOLD_FOLD = [
    ((2, 3, 8, 9), (3, 3), (1, 1), (1, 1), (1, 1)),
    ((1, 2, 10, 7), (4, 2), (1, 2), (2, 0), (2, 1)),
    ((2, 1, 9, 9), (3, 3), (2, 2), (0, 3), (3, 2)),
]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("geometry", UNFOLD_FOLD, ids=[f"k{g[1]}-d{g[2]}-p{g[3]}-s{g[4]}" for g in UNFOLD_FOLD])
def test_unfold_fold(tmp_path: Path, geometry: tuple, dynamic: bool) -> None:  # type: ignore[type-arg]
    """F.fold(F.unfold(x)) / F.fold(F.unfold(ones)): the average of the overlapping blocks holding each pixel, as
    PyTorch's fold/unfold pair arrives in IR. Dynamic: the image dims are unknown and F.fold's output_size is the
    image's run-time shape (x.shape[-2:])."""
    shape, kernel, dil, pad, st = geometry
    x = ops.parameter([-1] * 4 if dynamic else list(shape), F, name="x")
    if dynamic:
        size = ops.gather(ops.shape_of(x, "i64"), ops.constant(np.array([2, 3], np.int64)), ops.constant(np.int64(0)))
    else:
        size = ops.constant(np.array(shape[2:], np.int64))
    ksize = ops.constant(np.array(kernel, np.int64))

    def fold(cols):  # type: ignore[no-untyped-def]
        return ops.col2im(cols, size, ksize, list(st), list(dil), list(pad), list(pad))

    ones = ops.add(ops.multiply(x, ops.constant(F(0))), ops.constant(F(1)))
    summed = fold(_unfold(x, kernel, dil, pad, st))
    count = fold(_unfold(ones, kernel, dil, pad, st))
    out = ops.divide(summed, ops.maximum(count, ops.constant(F(1))))
    model = ov.Model([out, count], [x])
    check_model(model, [RNG.standard_normal(shape).astype(F)], tmp_path)


@pytest.mark.parametrize("attr,value", [("strides", "0,1"), ("dilations", "1"), ("pads_begin", "-1,0")])
def test_bad_attributes_refused(tmp_path: Path, attr: str, value: str) -> None:
    """Attributes OpenVINO cannot hold (non-positive strides or dilations, negative pads, not two values) give one
    error naming the layer."""
    attrs = {"strides": "1,1", "dilations": "1,1", "pads_begin": "0,0", "pads_end": "0,0", attr: value}
    xml = write_layer_ir(tmp_path, "Col2Im", "opset15", attrs,
                         [Input((1, 4, 4), F), Input((2,), np.int64, np.array([3, 3])),
                          Input((2,), np.int64, np.array([2, 2]))], [((1, 1, 3, 3), F)])
    with pytest.raises(LayerConversionError, match=f"Col2Im.*{attr}"):
        ir2onnx.convert(xml)

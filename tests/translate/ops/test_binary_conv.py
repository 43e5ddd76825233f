"""BinaryConvolution-1 (conv.py) against OpenVINO: strides, pads, dilations, auto_pad, every pad_value rule (0
leaves padded taps out, 1 pads +1, anything else -1), inputs with zeros, negative zeros and NaN; run-time shapes
(which OpenVINO's CPU plugin does not run) against numpy.

OpenVINO's CPU plugin computes garbage when the channel count is not a multiple of 8 (a tap reads bits of other
pixels: with C=3 and all-zero weights, setting one input element changes outputs at pixels whose windows do not
hold it), so those cases are checked against numpy's xnor-popcount on the bits as the plugin reads weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset1 as ops1
import pytest

import ir2onnx
from ir2onnx.errors import LayerConversionError
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from ir2onnx.verify.openvino_ref import run_openvino
from tests.translate.ops.cases import Case, params, run_case
from tests.utils import convert_checked, save_ir

F = np.float32
RNG = np.random.default_rng(13)


def _plugin_filter(bits: np.ndarray) -> np.ndarray:
    """+/-1 filter as the CPU plugin reads the stored bytes: element i is bit i % 8 (LSB first) of byte i // 8."""
    packed = np.packbits(bits.reshape(-1).astype(np.uint8), bitorder="big")  # OpenVINO's u1 storage
    return (np.unpackbits(packed, bitorder="little")[:bits.size].astype(np.float64) * 2 - 1).reshape(bits.shape)


def _numpy_binary_conv(x: np.ndarray, bits: np.ndarray, strides, pads_begin, pads_end, dil, pad_value) -> np.ndarray:  # type: ignore[no-untyped-def]
    xs = np.where(x > 0, 1.0, -1.0)
    fill = 0.0 if pad_value == 0 else (1.0 if pad_value == 1 else -1.0)
    xp = np.pad(xs, ((0, 0), (0, 0), (pads_begin[0], pads_end[0]), (pads_begin[1], pads_end[1])),
                constant_values=fill)
    w = _plugin_filter(bits)
    n, _, h, wd = xp.shape
    o, _, kh, kw = w.shape
    oh = (h - (kh - 1) * dil[0] - 1) // strides[0] + 1
    ow = (wd - (kw - 1) * dil[1] - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dil[0]:i * dil[0] + strides[0] * (oh - 1) + 1:strides[0],
                       j * dil[1]:j * dil[1] + strides[1] * (ow - 1) + 1:strides[1]]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out.astype(F)


def _resolved_pads(hw, k, strides, dil, pads, auto_pad):  # type: ignore[no-untyped-def]
    if auto_pad == "explicit":
        return pads
    if auto_pad == "valid":
        return (0, 0), (0, 0)
    begin, end = [], []
    for n, kk, s, d in zip(hw, k, strides, dil):
        total = max((-(-n // s) - 1) * s + (kk - 1) * d + 1 - n, 0)
        half = total // 2
        begin.append(half if auto_pad == "same_upper" else total - half)
        end.append(total - begin[-1])
    return tuple(begin), tuple(end)


def _case(name: str, n: int, c: int, hw: tuple[int, int], o: int, k: tuple[int, int], *, strides=(1, 1),
          pads=((0, 0), (0, 0)), dil=(1, 1), pad_value=0.0, auto_pad="explicit", dynamic=False,
          specials=True) -> Case:
    x = RNG.standard_normal((n, c, *hw)).astype(F)
    if specials:
        x.flat[::5] = 0.0
        x.flat[1::7] = -0.0
        x.flat[2::11] = np.nan
    bits = RNG.integers(0, 2, (o, c, *k))
    shape = (-1, c, -1, -1) if dynamic else x.shape

    def build(p):  # type: ignore[no-untyped-def]
        wc = ov.op.Constant(ov.Type.u1, ov.Shape(list(bits.shape)), bits.reshape(-1).tolist())
        return ops1.binary_convolution(p, wc, list(strides), list(pads[0]), list(pads[1]), list(dil),
                                       "xnor-popcount", pad_value, auto_pad)

    expected = None
    if c % 8 or dynamic:  # OpenVINO computes these wrongly, or not at all (no dynamic shapes)
        pb, pe = _resolved_pads(hw, k, strides, dil, pads, auto_pad)
        expected = lambda v: [_numpy_binary_conv(v, bits, strides, pb, pe, dil, pad_value)]
    return Case(name, build, [(shape, F)], values=[x], expected=expected)


F16_BITS = RNG.integers(0, 2, 3 * 8 * 9).tolist()
CASES = [
    _case("bconv-3x3-pad1-pv0", 2, 8, (5, 6), 3, (3, 3), pads=((1, 1), (1, 1))),
    _case("bconv-3x3-pad-asym-pv1", 1, 16, (5, 6), 4, (3, 3), pads=((2, 0), (1, 2)), pad_value=1.0),
    _case("bconv-3x3-pv-minus1", 1, 8, (5, 5), 2, (3, 3), pads=((1, 1), (1, 1)), pad_value=-1.0),
    _case("bconv-3x3-pv-half", 1, 8, (5, 5), 2, (3, 3), pads=((1, 2), (2, 1)), pad_value=0.5),
    _case("bconv-3x3-pv-2", 1, 8, (5, 5), 2, (3, 3), pads=((1, 1), (1, 1)), pad_value=2.0),
    _case("bconv-stride2-dil2", 1, 32, (9, 8), 5, (3, 2), strides=(2, 1), dil=(2, 2), pads=((1, 1), (2, 0)),
          pad_value=1.0),
    _case("bconv-1x1", 2, 64, (3, 4), 7, (1, 1)),
    _case("bconv-same-upper-pv0", 1, 8, (7, 6), 3, (3, 2), strides=(2, 2), auto_pad="same_upper"),
    _case("bconv-same-lower-pv1", 1, 8, (7, 6), 3, (2, 3), strides=(2, 1), auto_pad="same_lower", pad_value=1.0),
    _case("bconv-same-upper-pv-minus1", 1, 16, (6, 7), 3, (3, 3), strides=(1, 2), auto_pad="same_upper",
          pad_value=-1.0),
    _case("bconv-valid", 1, 8, (6, 6), 3, (3, 3), auto_pad="valid", pads=((1, 1), (1, 1)), pad_value=1.0),
    _case("bconv-dynamic-pv1", 2, 8, (5, 6), 3, (3, 3), pads=((1, 1), (1, 1)), pad_value=1.0, dynamic=True),
    _case("bconv-dynamic-same-upper-pv-minus1", 1, 8, (7, 6), 3, (3, 3), strides=(2, 2), auto_pad="same_upper",
          pad_value=-1.0, dynamic=True),
    _case("bconv-dynamic-pv0", 1, 16, (5, 5), 3, (3, 3), pads=((1, 1), (1, 1)), dynamic=True),
    _case("bconv-dynamic-same-lower-pv0", 1, 8, (6, 7), 3, (3, 2), strides=(2, 2), auto_pad="same_lower",
          dynamic=True),
    Case("bconv-f16-pv1", lambda p: ops1.binary_convolution(
        p, ov.op.Constant(ov.Type.u1, ov.Shape([3, 8, 3, 3]), F16_BITS), [1, 1], [1, 1], [1, 1], [1, 1],
        "xnor-popcount", 1.0), [((1, 8, 5, 5), np.float16)]),
    # channel counts the CPU plugin gets wrong: checked against numpy
    _case("bconv-c3-numpy", 1, 3, (4, 5), 2, (3, 3), pads=((1, 1), (1, 1))),
    _case("bconv-c5-pv1-numpy", 2, 5, (4, 4), 3, (2, 2), pads=((1, 0), (0, 1)), pad_value=1.0),
    _case("bconv-c12-stride2-pv-minus1-numpy", 1, 12, (6, 5), 2, (3, 3), strides=(2, 2), pads=((1, 1), (1, 1)),
          pad_value=-1.0),
]


@pytest.mark.parametrize("case", params(CASES))
def test_binary_convolution(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


def test_plugin_garbage_channel_count(tmp_path: Path) -> None:
    """Documents the plugin defect the numpy cases work around: with C=3, zero weights and no padding, one input
    element set changes outputs whose 1x1 windows do not hold it; the conversion leaves them alone."""
    p = ops1.parameter([1, 3, 2, 2], F)
    wc = ov.op.Constant(ov.Type.u1, ov.Shape([1, 3, 1, 1]), [0, 0, 0])
    model = ov.Model([ops1.binary_convolution(p, wc, [1, 1], [0, 0], [0, 0], [1, 1], "xnor-popcount", 0.0)], [p])
    xml = save_ir(model, tmp_path)
    x = np.zeros((1, 3, 2, 2), F)
    x[0, 0, 1, 0] = 1.0  # channel 0 of pixel (1, 0)
    proto = convert_checked(xml)
    got = run_onnxruntime(proto, {proto.graph.input[0].name: x})[0]
    np.testing.assert_array_equal(got, _numpy_binary_conv(x, np.zeros((1, 3, 1, 1), int), (1, 1), (0, 0), (0, 0),
                                                          (1, 1), 0.0))
    assert not np.array_equal(run_openvino(str(xml), [x])[0], got)


def test_non_u1_weights_refused(tmp_path: Path) -> None:
    """Weights other than a u1 Const (which OpenVINO's CPU plugin cannot run either) get one readable error."""
    p = ops1.parameter([1, 8, 4, 4], F)
    w = ops1.constant(RNG.integers(0, 2, (2, 8, 3, 3)).astype(F))
    model = ov.Model([ops1.binary_convolution(p, w, [1, 1], [0, 0], [0, 0], [1, 1], "xnor-popcount", 0.0)], [p])
    with pytest.raises(LayerConversionError, match="BinaryConvolution weights must be a u1 Const"):
        ir2onnx.convert(save_ir(model, tmp_path))

"""Deformable ops (deformable.py) against OpenVINO: DeformableConvolution-1/8 over strides, pads, dilations, auto_pad,
groups, deformable groups, the mask and bilinear_interpolation_pad, with offsets that reach past every edge, integer
offsets (taps on the grid and on the edges), run-time and constant weights, dynamic shapes, f16."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset1 as ops1
import openvino.opset8 as ops8
import pytest

from tests.translate.ops.cases import Case, const, params, run_case

F = np.float32
RNG = np.random.default_rng(41)


def _out(n: int, k: int, s: int, d: int, pb: int, pe: int) -> int:
    return (n + pb + pe - (k - 1) * d - 1) // s + 1


def _conv_case(name: str, version: int, n: int, c: int, hw: tuple[int, int], o: int, k: tuple[int, int], *,
               strides=(1, 1), pads=((0, 0), (0, 0)), dil=(1, 1), auto_pad="explicit", group=1, dg=1,
               mask=False, bi_pad=False, offset_scale=2.0, integer_offsets=False, const_weights=False,
               dynamic=False) -> Case:
    h, w = hw
    if auto_pad in ("same_upper", "same_lower"):
        oh, ow = -(-h // strides[0]), -(-w // strides[1])
    elif auto_pad == "valid":
        oh, ow = _out(h, k[0], strides[0], dil[0], 0, 0), _out(w, k[1], strides[1], dil[1], 0, 0)
    else:
        oh = _out(h, k[0], strides[0], dil[0], pads[0][0], pads[1][0])
        ow = _out(w, k[1], strides[1], dil[1], pads[0][1], pads[1][1])
    kk = k[0] * k[1]
    x = RNG.standard_normal((n, c, h, w)).astype(F)
    off = RNG.standard_normal((n, dg * 2 * kk, oh, ow)) * offset_scale
    off = (np.round(off) if integer_offsets else off).astype(F)
    wts = RNG.standard_normal((o, c // group, *k)).astype(F)
    msk = RNG.random((n, dg * kk, oh, ow)).astype(F) * 2 - 0.5
    shapes = [(n, c, h, w), (n, dg * 2 * kk, oh, ow)]
    values = [x, off]
    if not const_weights:
        shapes.append(wts.shape)
        values.append(wts)
    if mask:
        shapes.append(msk.shape)
        values.append(msk)
    if dynamic:
        shapes = [(-1, s[1], -1, -1) for s in shapes[:2]] + shapes[2:]
        if mask:
            shapes[-1] = (-1, shapes[-1][1], -1, -1)
    attrs = {"strides": list(strides), "pads_begin": list(pads[0]), "pads_end": list(pads[1]),
             "dilations": list(dil), "auto_pad": auto_pad, "group": group, "deformable_group": dg}

    def build(*ps):  # type: ignore[no-untyped-def]
        data, offsets = ps[0], ps[1]
        filters = const(wts) if const_weights else ps[2]
        if version == 1:
            return ops1.deformable_convolution(data, offsets, filters, **attrs)
        m = ps[-1] if mask else None
        return ops8.deformable_convolution(data, offsets, filters, mask=m, bilinear_interpolation_pad=bi_pad,
                                           **attrs)

    return Case(name, build, [(s, F) for s in shapes], values=values)


CASES = [
    _conv_case("defconv1-3x3-pad1", 1, 2, 4, (6, 7), 5, (3, 3), pads=((1, 1), (1, 1))),
    _conv_case("defconv1-stride2-dil2-asym-pads", 1, 1, 3, (9, 8), 4, (3, 2), strides=(2, 1), dil=(2, 2),
               pads=((2, 0), (1, 1))),
    _conv_case("defconv1-group2-dg2", 1, 2, 4, (5, 6), 6, (2, 3), group=2, dg=2, pads=((1, 0), (0, 1))),
    _conv_case("defconv1-dg4-group1", 1, 1, 8, (5, 5), 3, (3, 3), dg=4),
    _conv_case("defconv1-same-upper", 1, 1, 3, (7, 6), 4, (3, 2), strides=(2, 2), auto_pad="same_upper"),
    _conv_case("defconv1-same-lower", 1, 1, 3, (7, 6), 4, (2, 3), strides=(2, 1), auto_pad="same_lower"),
    _conv_case("defconv1-valid", 1, 1, 3, (7, 6), 4, (3, 3), auto_pad="valid", pads=((1, 1), (1, 1))),
    _conv_case("defconv1-integer-offsets", 1, 1, 2, (5, 5), 3, (3, 3), pads=((1, 1), (1, 1)),
               integer_offsets=True),
    _conv_case("defconv1-far-offsets", 1, 1, 2, (4, 5), 3, (2, 2), offset_scale=4.0),
    _conv_case("defconv1-const-weights", 1, 2, 16, (5, 5), 16, (3, 3), pads=((1, 1), (1, 1)),
               const_weights=True),
    _conv_case("defconv1-dynamic", 1, 2, 3, (6, 5), 4, (3, 3), pads=((1, 1), (1, 1)), dynamic=True),
    _conv_case("defconv1-dynamic-same-upper", 1, 1, 3, (7, 6), 4, (3, 3), strides=(2, 2), auto_pad="same_upper",
               dynamic=True),
]
for bi in (False, True):
    for m in (False, True):
        tag = f"{'bipad' if bi else 'nopad'}-{'mask' if m else 'nomask'}"
        CASES += [
            _conv_case(f"defconv8-{tag}-3x3", 8, 2, 4, (6, 7), 5, (3, 3), pads=((1, 1), (1, 1)), mask=m, bi_pad=bi),
            _conv_case(f"defconv8-{tag}-group2-dg2-stride2", 8, 1, 4, (8, 7), 4, (3, 3), strides=(2, 2),
                       pads=((1, 2), (0, 1)), group=2, dg=2, mask=m, bi_pad=bi),
            _conv_case(f"defconv8-{tag}-integer-offsets", 8, 1, 2, (5, 6), 3, (3, 3), pads=((1, 1), (1, 1)),
                       integer_offsets=True, mask=m, bi_pad=bi),
            _conv_case(f"defconv8-{tag}-dil2-far", 8, 1, 3, (7, 7), 2, (2, 2), dil=(2, 2), offset_scale=4.0,
                       mask=m, bi_pad=bi),
        ]
CASES += [
    _conv_case("defconv8-bipad-mask-const-weights-simd", 8, 1, 16, (5, 6), 16, (3, 3), pads=((1, 1), (1, 1)),
               mask=True, bi_pad=True, const_weights=True),
    _conv_case("defconv8-mask-dynamic", 8, 2, 4, (6, 5), 3, (3, 3), pads=((1, 1), (1, 1)), mask=True, bi_pad=True,
               dynamic=True, dg=2),
    _conv_case("defconv8-same-lower-mask", 8, 1, 3, (7, 6), 4, (3, 2), strides=(2, 2), auto_pad="same_lower",
               mask=True),
    Case("defconv8-f16", lambda x, o, w, m: ops8.deformable_convolution(x, o, w, [1, 1], [1, 1], [1, 1], [1, 1],
                                                                        mask=m, bilinear_interpolation_pad=True),
         [((1, 2, 5, 5), np.float16), ((1, 18, 5, 5), np.float16), ((3, 2, 3, 3), np.float16),
          ((1, 9, 5, 5), np.float16)], rtol=1e-2, atol=1e-2),
]


@pytest.mark.parametrize("case", params(CASES))
def test_deformable(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)

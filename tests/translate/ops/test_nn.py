"""MatMul and Einsum (nn.py), with a smoke table of convolutions, pooling and Interpolate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset1 as ops1
import openvino.opset8 as ops8
import openvino.opset10 as ops10
import openvino.opset13 as ops
import pytest

from tests.translate.ops.cases import Case, params, run_case

F = np.float32
RNG = np.random.default_rng(7)


def w(*shape: int):  # type: ignore[no-untyped-def]
    return ops.constant(RNG.standard_normal(shape).astype(F))


CASES = [
    Case(f"matmul-{sa}x{sb}-{ta:d}{tb:d}", lambda a, b, ta=ta, tb=tb: ops.matmul(a, b, ta, tb), [(sa, F), (sb, F)])
    for sa, sb, ta, tb in [
        ((2, 3), (3, 4), False, False), ((3, 2), (3, 4), True, False), ((2, 3), (4, 3), False, True),
        ((3, 2), (4, 3), True, True), ((3,), (3, 4), True, False), ((2, 3), (3,), False, True),
        ((3,), (3,), False, False), ((5, 2, 3), (3, 4), False, False), ((5, 1, 2, 3), (4, 4, 3), False, True),
    ]
]
CASES += [
    Case("conv1d", lambda x: ops.convolution(x, w(4, 3, 3), [1], [0], [0], [1]), [((2, 3, 9), F)]),
    Case("conv2d-stride-dilation-pads", lambda x: ops.convolution(x, w(4, 3, 3, 3), [2, 1], [1, 0], [0, 2], [1, 2]),
         [((1, 3, 9, 8), F)]),
    Case("conv2d-same-upper", lambda x: ops.convolution(x, w(2, 3, 3, 3), [2, 2], [0, 0], [0, 0], [1, 1],
                                                        "same_upper"), [((1, 3, 7, 8), F)]),
    Case("conv2d-same-lower", lambda x: ops.convolution(x, w(2, 3, 2, 2), [1, 1], [0, 0], [0, 0], [1, 1],
                                                        "same_lower"), [((1, 3, 5, 5), F)]),
    Case("conv2d-valid", lambda x: ops.convolution(x, w(2, 3, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1], "valid"),
         [((1, 3, 5, 5), F)]),
    Case("conv3d", lambda x: ops.convolution(x, w(2, 2, 2, 2, 2), [1, 1, 1], [1, 0, 0], [0, 1, 0], [1, 1, 1]),
         [((1, 2, 4, 4, 4), F)]),
    Case("group-conv", lambda x: ops.group_convolution(x, w(2, 3, 2, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1]),
         [((1, 4, 6, 6), F)]),
    Case("depthwise-conv", lambda x: ops.group_convolution(x, w(4, 1, 1, 3, 3), [2, 2], [1, 1], [0, 0], [1, 1]),
         [((2, 4, 7, 7), F)]),
    Case("group-conv-runtime-weights", lambda x, k: ops.group_convolution(x, k, [1, 1], [0, 0], [0, 0], [1, 1]),
         [((1, 4, 5, 5), F), ((2, 2, 2, 2, 2), F)]),
    Case("deconv2d", lambda x: ops.convolution_backprop_data(x, w(3, 2, 3, 3), [2, 2], pads_begin=[1, 1],
                                                                   pads_end=[1, 0], dilations=[1, 1]),
         [((1, 3, 4, 5), F)]),
    Case("deconv2d-output-padding", lambda x: ops.convolution_backprop_data(
        x, w(3, 2, 3, 3), [2, 2], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1], output_padding=[1, 1]),
        [((1, 3, 4, 4), F)]),
    Case("deconv2d-output-shape", lambda x: ops.convolution_backprop_data(
        x, w(3, 2, 3, 3), [2, 2], ops.constant(np.array([9, 10], np.int64)), dilations=[1, 1]), [((1, 3, 4, 5), F)]),
    Case("einsum", lambda a, b: ops.einsum([a, b], "bij,bjk->bik"), [((2, 3, 4), F), ((2, 4, 5), F)]),
    Case("interpolate-11-nearest-scales", lambda x: ops.interpolate(
        x, ops.constant(np.array([2.0, 1.5], F)), "nearest", "scales", axes=ops.constant(np.array([2, 3], np.int64)),
        coordinate_transformation_mode="asymmetric", nearest_mode="floor"), [((1, 2, 3, 4), F)]),
    Case("interpolate-11-linear-sizes", lambda x: ops.interpolate(
        x, ops.constant(np.array([5, 7], np.int64)), "linear_onnx", "sizes", axes=ops.constant(np.array([2, 3], np.int64)),
        coordinate_transformation_mode="half_pixel"), [((1, 2, 3, 4), F)]),
    Case("interpolate-11-cubic-align-corners", lambda x: ops.interpolate(
        x, ops.constant(np.array([6, 8], np.int64)), "cubic", "sizes", axes=ops.constant(np.array([2, 3], np.int64)),
        coordinate_transformation_mode="align_corners"), [((1, 1, 3, 4), F)], rtol=1e-4, atol=1e-5),
    Case("interpolate-4-nearest-sizes", lambda x: ops10.interpolate(
        x, ops.constant(np.array([6, 8], np.int64)), ops.constant(np.array([2.0, 2.0], F)), "nearest", "sizes",
        coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_ceil",
        axes=ops.constant(np.array([2, 3], np.int64))), [((1, 2, 3, 4), F)]),
    Case("interpolate-4-linear-scales", lambda x: ops10.interpolate(
        x, ops.constant(np.array([1, 1], np.int64)), ops.constant(np.array([1.5, 2.0], F)), "linear_onnx", "scales",
        coordinate_transformation_mode="pytorch_half_pixel", axes=ops.constant(np.array([2, 3], np.int64))),
        [((1, 2, 4, 4), F)]),
    Case("maxpool-1-floor", lambda x: ops1.max_pool(x, [2, 2], [0, 0], [0, 0], [3, 3], "floor"), [((1, 2, 8, 8), F)]),
    Case("maxpool-1-ceil-pads", lambda x: ops1.max_pool(x, [2, 2], [1, 0], [0, 1], [3, 3], "ceil"), [((1, 2, 8, 9), F)]),
    Case("maxpool-8-indices", lambda x: ops8.max_pool(x, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2], "floor",
                                                      index_element_type="i64"), [((2, 3, 6, 6), F)]),
    Case("maxpool-8-dilated-i32", lambda x: ops8.max_pool(x, [1, 1], [2, 2], [0, 0], [0, 0], [2, 2], "floor",
                                                          index_element_type="i32"), [((1, 2, 7, 7), F)]),
    Case("avgpool-exclude-pad", lambda x: ops1.avg_pool(x, [2, 2], [1, 1], [1, 1], [3, 3], True, "floor"),
         [((1, 2, 7, 7), F)]),
    Case("avgpool-include-pad-ceil", lambda x: ops1.avg_pool(x, [2, 2], [1, 1], [1, 1], [3, 3], False, "ceil"),
         [((1, 2, 8, 8), F)]),
    Case("avgpool-same-upper", lambda x: ops1.avg_pool(x, [2, 2], [0, 0], [0, 0], [2, 2], True, "floor",
                                                       "same_upper"), [((1, 1, 5, 5), F)]),
]


@pytest.mark.parametrize("case", params(CASES))
def test_nn(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)

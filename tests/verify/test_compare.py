"""Output comparison: NaN where the reference has NaN is a match, not a tolerance failure elsewhere."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from ir2onnx.verify.compare import compare_output


def test_nan_in_both_passes_and_close_values_beside_it_pass() -> None:
    ref = np.array([np.nan, 1.0, 2.0], np.float32)
    got = np.array([np.nan, 1.0 + 1e-7, 2.0], np.float32)
    assert compare_output("y", got, ref, 1e-5, 1e-5).passed


def test_nan_on_one_side_fails() -> None:
    ref = np.array([np.nan, 1.0], np.float32)
    assert not compare_output("y", np.array([0.0, 1.0], np.float32), ref, 1e-5, 1e-5).passed
    assert not compare_output("y", ref[::-1].copy(), np.array([1.0, 0.0], np.float32), 1e-5, 1e-5).passed


def test_scaled_absolute_tolerance_follows_the_outputs_magnitude() -> None:
    """A 1x1 convolution over 608 channels of N(0, 1) data and weights, as OpenVINO's own test IR: outputs of RMS
    ~25, and f32 rounding of ~6e-5 at outputs near zero in both runtimes (against float64 as well). The check's
    comparison scales atol by the RMS; the plain one (the tests' own) does not; real differences still fail."""
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((608, 2040)), rng.standard_normal((490, 608))
    exact = w @ x
    f32 = (w.astype(np.float32) @ x.astype(np.float32)).astype(np.float32)
    blocked = sum(w[:, i:i + 64].astype(np.float32) @ x[i:i + 64].astype(np.float32) for i in range(0, 608, 64))
    assert not compare_output("y", f32, np.asarray(blocked, np.float32), 1e-4, 1e-5).passed
    assert compare_output("y", f32, np.asarray(blocked, np.float32), 1e-4, 1e-5, scaled=True).passed
    assert compare_output("y", f32, exact, 1e-4, 1e-5, scaled=True).passed
    wrong = f32.copy()
    wrong[3, 5] += 0.01  # 4e-4 of the RMS
    assert not compare_output("y", wrong, np.asarray(blocked, np.float32), 1e-4, 1e-5, scaled=True).passed
    small = rng.standard_normal((4, 5)).astype(np.float32)  # RMS below 1: atol as given
    assert not compare_output("y", small + 2e-5, small, 0, 1e-5, scaled=True).passed


def test_an_output_named_otherwise_than_in_openvino_fails(tmp_path: Path) -> None:
    """Values alone are not enough: a user reads outputs by name."""
    import ir2onnx
    from tests.utils import save_ir

    x = ops.parameter([2, 3], np.float32, name="x")
    relu = ops.relu(x)
    relu.output(0).set_names({"y"})
    xml = save_ir(ov.Model([relu], [x]), tmp_path)
    proto = ir2onnx.convert(xml)
    assert ir2onnx.check(xml, proto).passed
    proto.graph.output[0].name = proto.graph.node[-1].output[0] = "renamed"
    report = ir2onnx.check(xml, proto)
    assert not report.passed and "named 'y' in OpenVINO" in report.outputs[0].message


def test_bf16_outputs_pass_within_one_unit_of_bf16() -> None:
    """One unit of bf16 at the reference (2^-8 between 0.5 and 1, 2^-15 near 0.005) passes, two do not; f32
    outputs keep the plain tolerance."""
    import ml_dtypes

    bf16 = ml_dtypes.bfloat16
    ref = np.array([0.5625, -0.75, 0.005, 0.0], np.float32)
    one = ref + np.array([2.0**-8, -(2.0**-8), 2.0**-15, 0.0], np.float32)
    assert compare_output("y", one.astype(bf16), ref.astype(bf16), 1e-5, 1e-6).passed
    two = ref + np.array([2.0**-7, 0.0, 0.0, 0.0], np.float32)
    assert not compare_output("y", two.astype(bf16), ref.astype(bf16), 1e-5, 1e-6).passed
    assert not compare_output("y", one, ref, 1e-5, 1e-6).passed


def test_an_intermediate_layer_is_judged_against_its_largest_magnitude() -> None:
    """f32 noise of 2e-5 on a value near zero, in a tensor whose values reach 3 (a convolution's output): a phantom
    with the outputs' tolerances, a pass within the intermediate layers' allowance; 1% of the peak still fails."""
    ref = np.array([3.0, -2.5, 1e-4, 0.5], np.float32)
    noisy = ref + np.array([0, 0, 2e-5, 0], np.float32)
    assert not compare_output("y", noisy, ref, 1e-4, 1e-5, scaled=True).passed
    assert compare_output("y", noisy, ref, 1e-4, 1e-5, scaled=True, peak_rtol=2e-5 * np.sqrt(10)).passed
    wrong = ref + np.array([0, 0, 0.03, 0], np.float32)
    assert not compare_output("y", wrong, ref, 1e-4, 1e-5, scaled=True, peak_rtol=2e-5 * np.sqrt(10)).passed


def test_layer_depths_count_the_longest_path() -> None:
    from ir2onnx.ir import load
    from ir2onnx.verify.layerwise import _depths

    model, _ = load(str(Path(__file__).resolve().parents[2] / "samples" / "ti_lstm" / "model.xml"))
    depth = _depths(model.graph)
    params = [layer.id for layer in model.graph.parameters]
    assert all(depth[p] == 1 for p in params)
    results = [layer.id for layer in model.graph.results]
    assert all(depth[r] == max(depth.values()) or depth[r] > 1 for r in results)
    order = [layer.id for layer in model.graph.topological_order()]
    assert max(depth.values()) <= len(order)

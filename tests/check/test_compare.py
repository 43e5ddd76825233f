"""Output comparison: NaN where the reference has NaN is a match, not a tolerance failure elsewhere."""

from __future__ import annotations

import numpy as np

from ir2onnx.check.compare import compare_output


def test_nan_in_both_passes_and_close_values_beside_it_pass() -> None:
    ref = np.array([np.nan, 1.0, 2.0], np.float32)
    got = np.array([np.nan, 1.0 + 1e-7, 2.0], np.float32)
    assert compare_output("y", got, ref, 1e-5, 1e-5).passed


def test_nan_on_one_side_fails() -> None:
    ref = np.array([np.nan, 1.0], np.float32)
    assert not compare_output("y", np.array([0.0, 1.0], np.float32), ref, 1e-5, 1e-5).passed
    assert not compare_output("y", ref[::-1].copy(), np.array([1.0, 0.0], np.float32), 1e-5, 1e-5).passed

"""Default inputs where the first sizes of the free dimensions fail: the check searches sizes until OpenVINO runs
the IR (shape inference probed by reshaping the IR; compilation and inference by running it), and says what it
tried when no size suits."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

import ir2onnx
from ir2onnx.verify.shapes import describe_sizes, search_sizes
from tests.test_cli import run
from tests.utils import save_ir


def crepe_frames() -> ov.Model:
    """A pitch tracker in torchcrepe's form: frames [?, ?] of 1024 samples, a convolution of width 512 and stride 4
    (padding 254), a pool of 2, a convolution of width 64, a pool of 2, and a Reshape to [-1, 256] before the
    classifier. With a batch of 3, only frames of 1024 to 1027 samples reach the classifier whole; no size in the IR
    is one of them."""
    rng = np.random.default_rng(0)
    x = ops.parameter([-1, -1], np.float32, name="frames")
    h = ops.unsqueeze(x, ops.constant(np.int64(1))).output(0)
    for inputs, channels, width, stride, pads in ((1, 8, 512, 4, (254, 254)), (8, 4, 64, 1, (31, 32))):
        w = rng.standard_normal((channels, inputs, width)) / np.sqrt(width * inputs)
        h = ops.relu(ops.convolution(h, ops.constant(w.astype(np.float32)), [stride], [pads[0]], [pads[1]], [1]))
        h = ops.max_pool(h, [2], [1], [0], [0], [2]).output(0)
    h = ops.reshape(ops.transpose(h, ops.constant(np.array([0, 2, 1], np.int64))),
                    ops.constant(np.array([-1, 256], np.int64)), False)
    logits = ops.matmul(h, ops.constant(rng.standard_normal((256, 10)).astype(np.float32) / 16), False, False)
    return ov.Model([ops.sigmoid(logits)], [x])


def _reshape(target: list[int]) -> Callable[[], ov.Model]:
    def make() -> ov.Model:
        x = ops.parameter([-1, -1], np.float32, name="x")
        return ov.Model([ops.relu(ops.reshape(x, ops.constant(np.array(target, np.int64)), False))], [x])

    return make


def nonzero_rows() -> ov.Model:
    """The indices of x's non-NaN values in rows of 7: shape inference leaves the count free (NonZero), so only
    OpenVINO's run refuses a length that is not a multiple of 7."""
    x = ops.parameter([-1], np.float32, name="x")
    rows = ops.reshape(ops.non_zero(ops.equal(x, x), "i64"), ops.constant(np.array([-1, 7], np.int64)), False)
    return ov.Model([rows.output(0), ops.multiply(x, x).output(0)], [x])


# (model, layerwise, the inputs' shapes the search finds, the shapes OpenVINO refused first)
CASES = {
    # [3, 4] and [3, 3] fail the Reshape; a batch of 3 needs a multiple of 14 (2 x 7, a product of two of its sizes)
    "reshape_multiple_of_14": (_reshape([-1, 2, 3, 7]), False, {"x": (3, 14)}, "x[3, 4], x[3, 3]"),
    # no length suits a batch of 3: the length is chosen first (3 leaves no batch; 2 leaves 32)
    "reshape_to_8x8": (_reshape([8, 8]), True, {"x": (32, 2)}, "x[3, 4], x[3, 3]"),
    # shape inference accepts every length; OpenVINO's run refuses 3 and 2 (the IR's sizes are tried in turn)
    "refused_at_run_time": (nonzero_rows, False, {"x": (7,)}, "x[3], x[2]"),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_search_finds_inputs_openvino_runs(tmp_path: Path, case: str) -> None:
    make, layerwise, shapes, refused = CASES[case]
    xml = save_ir(make(), tmp_path)
    report = ir2onnx.check(xml, layerwise=layerwise, rtol=1e-5, atol=1e-6)
    assert report.passed, report
    assert report.reference and all(o.max_abs_error is not None for o in report.outputs)
    assert {i.name: i.shape for i in report.inputs} == shapes
    searched = f"found {', '.join(f'{n}{list(s)}' for n, s in shapes.items())}, which it runs (it refused {refused})"
    assert any(searched in note for note in report.notes), report.notes
    if layerwise:
        assert report.layerwise is not None and all(lc.comparison.passed for lc in report.layerwise.layers)


def test_crepe_frames_through_the_command_line(tmp_path: Path) -> None:
    """`convert --check` on frames that must hold 1024 samples: exit 0, the outputs compared with OpenVINO, and
    the report's inputs give the shape the search found."""
    xml = save_ir(crepe_frames(), tmp_path)
    report = tmp_path / "report.json"
    r = run("convert", str(xml), "-o", str(tmp_path / "m.onnx"), "--check", "-q", "--report", str(report),
            "--rtol", "1e-5", "--atol", "1e-6")
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(report.read_text())
    assert data["passed"] and data["reference"] == "openvino CPU f32"
    assert [o["onnx_shape"] for o in data["outputs"]] == [[3, 10]]
    assert all(o["passed"] and o["max_abs_error"] is not None for o in data["outputs"])
    assert [(i["name"], i["shape"]) for i in data["inputs"]] == [("frames", [3, 1024])]
    assert any("search of the free dimensions' sizes found frames[3, 1024]" in n for n in data["notes"])


def test_no_size_suits_names_the_dimension(tmp_path: Path) -> None:
    """x must broadcast with 5 values (1 or 5) and reshape to pairs (even): no size suits. Exit 2 with one message
    naming the dimension, summarising the sizes tried, and asking for --inputs."""
    x = ops.parameter([-1], np.float32, name="x")
    pairs = ops.reshape(x, ops.constant(np.array([-1, 2], np.int64)), False)
    shifted = ops.add(x, ops.constant(np.arange(5, dtype=np.float32)))
    xml = save_ir(ov.Model([pairs.output(0), shifted.output(0)], [x]), tmp_path)
    r = run("convert", str(xml), "-o", str(tmp_path / "m.onnx"), "--check", "-q")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("error:") == 1
    assert "no size of dimension 0 of input x passes shape inference (tried 29 sizes: 1-16, " in r.stderr
    assert "OpenVINO refused the free dimensions' sizes x[3]" in r.stderr
    assert r.stderr.rstrip().endswith("give the inputs with --inputs FILE.npz")


def test_search_sizes_in_order() -> None:
    """Small sizes, the IR's, powers of two, then products of two of the IR's, each ascending and once."""
    sizes = search_sizes([1, 2, 360, 512, 100_000])
    assert sizes[:19] == [*range(1, 17), 360, 512, 32]
    assert sizes.index(1024) < sizes.index(720) and 720 * 2 not in sizes and max(sizes) == 1 << 16
    assert len(sizes) == len(set(sizes)) and 100_000 not in sizes
    assert describe_sizes([3, 1, 2, 9, 8, 3]) == "tried 5 sizes: 1-3, 8-9"

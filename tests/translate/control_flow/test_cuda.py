"""The converted TensorIterator/Loop models on onnxruntime's CUDA execution provider, with the report of where
onnxruntime placed each node (Loop/Scan bodies included)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ir2onnx
from ir2onnx.errors import CheckError
from ir2onnx.verify.compare import compare_output
from ir2onnx.verify.onnxruntime_run import cuda_available, make_session, placement_of, run_onnxruntime
from ir2onnx.verify.openvino_ref import run_openvino
from tests.fixture_paths import fixture_dir, fixture_names
from tests.translate.control_flow.builders import loop_model, ti_accumulate, ti_lstm
from tests.translate.control_flow.test_framework_fixtures import OPENVINO_FAILS, OPENVINO_WRONG
from tests.translate.ops.test_conv import GEOMETRY as DECONV_GEOMETRY
from tests.translate.ops.test_conv import check_deconv_one_node
from tests.translate.ops.test_pooling import NATIVE_FORMS, check_native_pooling
from tests.utils import assert_equivalent, convert_checked, count_ops, rng_inputs, save_ir

ROOT = Path(__file__).resolve().parents[3]
# every sample with a TensorIterator or Loop
LOOP_SAMPLES = sorted(p.parent.name for p in (ROOT / "samples").glob("*/model.xml")
                      if 'type="TensorIterator"' in p.read_text() or 'type="Loop"' in p.read_text())
CUDA = cuda_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="onnxruntime's CUDA execution provider is not available (needs "
                                "pip install \"ir2onnx[cuda]\" and an NVIDIA GPU with its driver)")


# every IR written by OpenVINO's frontends and kept with its inputs (tests/fixtures), OpenVINO able to run it right
FIXTURES = [name for name in fixture_names(having="inputs.npz")
            if name not in OPENVINO_FAILS and name not in OPENVINO_WRONG]


def test_samples_with_loops_exist() -> None:
    assert {"ti_lstm", "while_loop", "nested"} <= set(LOOP_SAMPLES)


@needs_cuda
@pytest.mark.parametrize("case", ["ti", "loop"])
def test_cuda_matches_openvino(tmp_path: Path, case: str) -> None:
    if case == "ti":
        model = ti_accumulate([2, 6, 3], 1, -1, 0, -1, 1)
        inputs = rng_inputs([((2, 6, 3), np.float32), ((2, 3), np.float32)])
    else:
        model = loop_model(-1, True, body_cond="data", limit=8.0)
        inputs = [np.arange(6, dtype=np.float32).reshape(2, 3) / 10]
    xml = save_ir(model, tmp_path)
    proto = convert_checked(xml)
    names = [i.name for i in proto.graph.input]
    got = run_onnxruntime(proto, dict(zip(names, inputs)), device="cuda")
    ref = run_openvino(str(xml), inputs)
    for out, g, r in zip(proto.graph.output, got, ref):
        c = compare_output(out.name, g, r, rtol=1e-4, atol=1e-5)
        assert c.passed, c


@needs_cuda
@pytest.mark.parametrize("sample", LOOP_SAMPLES)
def test_samples_on_cuda(sample: str) -> None:
    report = ir2onnx.check(ROOT / "samples" / sample / "model.xml", device="cuda")
    assert report.passed, report
    assert report.placement is not None
    assert report.placement.nodes_per_provider.get("CUDAExecutionProvider", 0) > 0, report.placement


@needs_cuda
def test_fused_lstm_on_cuda(tmp_path: Path) -> None:
    xml = save_ir(ti_lstm(3, 7, 5, 8), tmp_path)
    proto = ir2onnx.convert(xml)
    assert count_ops(proto, "LSTM") == 1 and count_ops(proto, "Scan") == 0
    report = ir2onnx.check(xml, proto, device="cuda")
    assert report.passed, report
    assert not any(n.startswith("LSTM ") for n in report.placement.cpu_nodes), report.placement


@needs_cuda
@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "loops"])
@pytest.mark.parametrize("name", FIXTURES)
def test_fixtures_on_cuda(name: str, fuse: bool) -> None:
    """Each frontend's IR, converted for CUDA with and without recurrent fusion, on CUDA against OpenVINO (CPU,
    f32)."""
    d = fixture_dir(name)
    stored = np.load(d / "inputs.npz")
    assert_equivalent(d / "model.xml", [stored[n] for n in stored.files], rtol=1e-4, atol=1e-5, run_on="cuda",
                      fuse=fuse, device="cuda")


@needs_cuda
@pytest.mark.parametrize("form", list(NATIVE_FORMS))
@pytest.mark.parametrize("pool", ["max", "max-indices", "avg-incl", "avg-excl"])
def test_native_pooling_on_cuda(tmp_path: Path, pool: str, form: str) -> None:
    """Pooling over run-time image sizes as one ONNX node (the layer's pads, SAME_UPPER / SAME_LOWER, ceil_mode):
    cuDNN's windows equal OpenVINO's (numpy's where OpenVINO is wrong), like the CPU provider's."""
    check_native_pooling(tmp_path, pool, form, "cuda")


@needs_cuda
@pytest.mark.parametrize("auto_pad", ["explicit", "same_upper", "same_lower", "valid"])
@pytest.mark.parametrize("geometry", [g for g in DECONV_GEOMETRY if g[-1] is None], ids=lambda g: g[0])
def test_deconv_over_run_time_dims_on_cuda(tmp_path: Path, geometry: tuple, auto_pad: str) -> None:
    check_deconv_one_node(tmp_path, geometry, auto_pad, False, "cuda")


@needs_cuda
def test_cli_reports_placement() -> None:
    r = subprocess.run([sys.executable, "-m", "ir2onnx", "check", str(ROOT / "samples" / "while_loop" / "model.xml"),
                        str(_converted("while_loop")), "--device", "cuda"], capture_output=True, text=True,
                       cwd=ROOT, timeout=300, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "onnxruntime node placement" in r.stdout and "on CUDAExecutionProvider" in r.stdout


def _converted(sample: str) -> Path:
    import tempfile

    out = Path(tempfile.mkdtemp()) / f"{sample}.onnx"
    ir2onnx.convert_file(ROOT / "samples" / sample / "model.xml", out)
    return out


@pytest.mark.skipif(CUDA, reason="checks the error when CUDA is missing; this machine has it")
def test_missing_gpu_is_an_error_not_a_cpu_run(tmp_path: Path) -> None:
    with pytest.raises(CheckError, match="CUDA execution provider is not available"):
        ir2onnx.check(ROOT / "samples" / "while_loop" / "model.xml", device="cuda")
    r = subprocess.run([sys.executable, "-m", "ir2onnx", "check", str(ROOT / "samples" / "while_loop" / "model.xml"),
                        str(_converted("while_loop")), "--device", "cuda"], capture_output=True, text=True,
                       cwd=ROOT, timeout=300, check=False)
    assert r.returncode == 2 and "ir2onnx[cuda]" in r.stderr and "Traceback" not in r.stderr


def test_placement_counts_body_nodes() -> None:
    """onnxruntime's record of node placement covers the nodes inside Loop bodies (checked on the CPU provider)."""
    proto = ir2onnx.convert(ROOT / "samples" / "while_loop" / "model.xml")
    placement = placement_of(make_session(proto, "cpu", record_placement=True))
    body_nodes = sum(len(a.g.node) for n in proto.graph.node for a in n.attribute if a.g.node)
    assert body_nodes > 0
    assert set(placement["nodes_per_provider"]) == {"CPUExecutionProvider"}
    assert placement["nodes_per_provider"]["CPUExecutionProvider"] > body_nodes // 2
    assert any("Loop" in n.split()[0] for n in placement["cpu_nodes"])

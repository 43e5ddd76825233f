"""The command line through its real entry point (python -m ir2onnx)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.fixture_paths import fixture_dir

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ir2onnx", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, check=False)


@pytest.mark.parametrize("sample", ["ti_lstm", "streaming_lstm", "while_loop", "nested"])
def test_convert_and_check_samples(tmp_path: Path, sample: str) -> None:
    out = tmp_path / f"{sample}.onnx"
    r = run("convert", str(SAMPLES / sample / "model.xml"), "-o", str(out), "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert out.exists()
    assert "PASS" in r.stdout or "only" in r.stdout


def test_check_with_inputs_file(tmp_path: Path) -> None:
    npz = tmp_path / "in.npz"
    np.savez(npz, x=np.array([0.1, -0.2, 0.3, 1.0], np.float32))
    r = run("convert", str(SAMPLES / "while_loop" / "model.xml"), "-o", str(tmp_path / "m.onnx"), "--check",
            "--inputs", str(npz))
    assert r.returncode == 0, r.stdout + r.stderr


def test_inputs_file_with_missing_key(tmp_path: Path) -> None:
    npz = tmp_path / "in.npz"
    np.savez(npz, wrong=np.zeros(4, np.float32))
    r = run("convert", str(SAMPLES / "while_loop" / "model.xml"), "-o", str(tmp_path / "m.onnx"), "--check",
            "--inputs", str(npz))
    assert r.returncode == 2
    assert "missing input(s): x" in r.stderr and "Traceback" not in r.stderr


def test_malformed_xml_gives_one_line_and_no_output(tmp_path: Path) -> None:
    xml = tmp_path / "bad.xml"
    xml.write_text('<?xml version="1.0"?>\n<net name="x" version="11">\n<layers>\n<layer id="0"\n</net>')
    out = tmp_path / "bad.onnx"
    r = run("convert", str(xml), "-o", str(out))
    assert r.returncode == 2
    assert "malformed XML" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [xml]


UNSUPPORTED = """<?xml version="1.0"?>
<net name="u" version="11">
 <layers>
  <layer id="0" name="x" type="Parameter" version="opset1"><data shape="2" element_type="f32"/>
   <output><port id="0" precision="FP32" names="x"><dim>2</dim></port></output></layer>
  <layer id="1" name="a" type="FancyOp" version="opset1">
   <input><port id="0"><dim>2</dim></port></input><output><port id="1" precision="FP32"><dim>2</dim></port></output></layer>
  <layer id="2" name="b" type="OtherOp" version="opset9">
   <input><port id="0"><dim>2</dim></port></input><output><port id="1" precision="FP32"><dim>2</dim></port></output></layer>
  <layer id="3" name="r" type="Result" version="opset1"><input><port id="0"><dim>2</dim></port></input></layer>
 </layers>
 <edges>
  <edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
  <edge from-layer="1" from-port="1" to-layer="2" to-port="0"/>
  <edge from-layer="2" from-port="1" to-layer="3" to-port="0"/>
 </edges>
</net>
"""


def test_unsupported_ops_listed_at_once(tmp_path: Path) -> None:
    xml = tmp_path / "u.xml"
    xml.write_text(UNSUPPORTED)
    r = run("convert", str(xml), "-o", str(tmp_path / "u.onnx"))
    assert r.returncode == 2
    assert "FancyOp (opset1)" in r.stderr and "OtherOp (opset9)" in r.stderr and "line 6" in r.stderr
    assert not (tmp_path / "u.onnx").exists()


def test_output_equal_to_input_is_refused(tmp_path: Path) -> None:
    xml = tmp_path / "u.xml"
    xml.write_text(UNSUPPORTED)
    r = run("convert", str(xml), "-o", str(xml))
    assert r.returncode == 2 and "overwrite" in r.stderr
    assert xml.read_text() == UNSUPPORTED


def test_cuda_without_provider_fails_clearly(tmp_path: Path) -> None:
    import onnxruntime as ort

    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("CUDA is available here")
    r = run("convert", str(SAMPLES / "while_loop" / "model.xml"), "-o", str(tmp_path / "m.onnx"), "--check",
            "--device", "cuda")
    assert r.returncode == 2 and "CUDA" in r.stderr and "Traceback" not in r.stderr


def test_convert_for_cuda_needs_no_gpu(tmp_path: Path) -> None:
    """--device cuda without --check only shapes the model for CUDA (an RNN stays a node, not the CPU's Scan)."""
    import onnx

    outs = {}
    for device in ("cpu", "cuda"):
        outs[device] = tmp_path / f"{device}.onnx"
        r = run("convert", str(fixture_dir("tf_simple_rnn") / "model.xml"), "-o", str(outs[device]),
                "--device", device)
        assert r.returncode == 0, r.stdout + r.stderr
    ops = {d: [n.op_type for n in onnx.load(str(o)).graph.node] for d, o in outs.items()}
    assert "RNN" in ops["cuda"] and "Scan" not in ops["cuda"]
    assert "RNN" not in ops["cpu"] and "Scan" in ops["cpu"]


def test_info_shows_loop_structure() -> None:
    r = run("info", str(SAMPLES / "nested" / "model.xml"))
    assert r.returncode == 0, r.stderr
    assert "Loop" in r.stdout and "TensorIterator" in r.stdout
    assert "sliced axis=0" in r.stdout and "merged (back edge" in r.stdout and "execution condition" in r.stdout
    assert "current iteration" in r.stdout


def test_ops_lists_control_flow() -> None:
    r = run("ops")
    assert r.returncode == 0
    assert "TensorIterator: opset1" in r.stdout and "Loop: opset5" in r.stdout


def test_check_mismatch_exits_1(tmp_path: Path) -> None:
    """A converted model altered after conversion must fail the check with exit code 1."""
    pytest.importorskip("openvino")
    import onnx

    import ir2onnx

    xml = SAMPLES / "while_loop" / "model.xml"
    proto = ir2onnx.convert(xml)
    for node in proto.graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                for n in a.g.node:
                    if n.op_type == "Mul":
                        n.op_type = "Add"
    report = ir2onnx.check(xml, proto)
    assert report.reference and not report.passed


def test_no_fuse_keeps_the_recurrent_loop(tmp_path: Path) -> None:
    import onnx

    from tests.utils import count_ops

    fused, literal = tmp_path / "fused.onnx", tmp_path / "literal.onnx"
    for out, flags in ((fused, ()), (literal, ("--no-fuse",))):
        r = run("convert", str(SAMPLES / "ti_lstm" / "model.xml"), "-o", str(out), "--check", *flags)
        assert r.returncode == 0, r.stdout + r.stderr
    a, b = onnx.load(str(fused)), onnx.load(str(literal))
    assert count_ops(a, "Scan") == 0 and count_ops(a, "LSTM") == 1
    assert count_ops(b, "Scan") == 1 and count_ops(b, "LSTM") == 1

"""The onnxruntime helper process of the command line gives the same verdicts as loading the model in process, and
anything wrong with it falls back to loading in process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import onnx
import onnx.helper as oh
import pytest

import ir2onnx
from ir2onnx.errors import InvalidModelError
from ir2onnx.translate import ort_helper
from tests.translate.test_validate_onnx import BREAKAGES, TI, _break

pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[2]
TP = onnx.TensorProto


def _model(node: onnx.NodeProto, in_type: int, out_type: int) -> bytes:
    graph = oh.make_graph([node], "g", [oh.make_tensor_value_info("x", in_type, [3])],
                          [oh.make_tensor_value_info("y", out_type, [])])
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)], ir_version=8).SerializeToString()


LOADS = _model(oh.make_node("ReduceMean", ["x"], ["y"], keepdims=0), TP.FLOAT, TP.FLOAT)
NO_KERNEL = _model(oh.make_node("ReduceMean", ["x"], ["y"], keepdims=0), TP.UINT64, TP.UINT64)  # valid ONNX
BROKEN = b"\x08\x07\x12\x03abc\xff\xff"


@pytest.fixture
def helper():  # type: ignore[no-untyped-def]
    started = ort_helper.Helper.start()
    if started is None:
        pytest.skip("no helper on a machine with one core")
    yield started
    started.close()


@pytest.mark.parametrize("model", [LOADS, NO_KERNEL, BROKEN], ids=["loads", "no-kernel", "not-a-model"])
def test_helper_verdict_is_the_in_process_verdict(helper: ort_helper.Helper, model: bytes) -> None:
    here = ort_helper.load_error(model)
    assert (here is None) == (model is LOADS), here
    assert helper.load_error(model) == here
    assert helper.load_error(model) == here  # one helper serves several models


def test_helper_starts_without_site_and_finds_the_package(helper: ort_helper.Helper) -> None:
    """-S: no site processing; the package is found through the search path it is given (editable installs too)."""
    assert helper._proc.args[1] == "-S"
    assert helper.load_error(LOADS) is None


def test_warm_up_model_is_a_relu_that_loads() -> None:
    """The helper loads WARM_UP_MODEL once after importing onnxruntime (its first session sets onnxruntime up)."""
    relu = oh.make_model(oh.make_graph([oh.make_node("Relu", ["x"], ["y"])], "warm-up",
                                       [oh.make_tensor_value_info("x", TP.FLOAT, [1])],
                                       [oh.make_tensor_value_info("y", TP.FLOAT, [1])]),
                         opset_imports=[oh.make_opsetid("", 17)], ir_version=8)
    assert ort_helper.WARM_UP_MODEL == relu.SerializeToString()
    assert ort_helper.load_error(ort_helper.WARM_UP_MODEL) is None


def test_a_dead_helper_falls_back_to_loading_in_process(helper: ort_helper.Helper) -> None:
    helper._proc.kill()
    helper._proc.wait()
    with pytest.raises(ort_helper.HelperFailed):
        helper.load_error(NO_KERNEL)
    with ort_helper.using(helper):
        assert ort_helper.session_load_error(NO_KERNEL) == ort_helper.load_error(NO_KERNEL)
        assert ort_helper.session_load_error(LOADS) is None


@pytest.mark.parametrize("reply", [b"\x05" + bytes(7) + b"hello", bytes(range(1, 9)) + b"x" * 64],
                         ids=["not-json", "oversized"])
def test_a_helper_answering_nonsense_is_dropped(reply: bytes) -> None:
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([sys.executable, "-c", f"import os; os.write({write_end}, {reply!r})"],
                            stdin=subprocess.PIPE, pass_fds=(write_end,))
    os.close(write_end)
    with ort_helper.using(ort_helper.Helper(proc, os.fdopen(read_end, "rb"))):
        assert ort_helper.session_load_error(NO_KERNEL) == ort_helper.load_error(NO_KERNEL)
        assert ort_helper._active is None
    proc.wait(timeout=30)


def test_what_the_helper_prints_does_not_reach_its_verdicts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A site customisation printing on stdout as the helper starts leaves its answers intact."""
    (tmp_path / "sitecustomize.py").write_text("print('hello from sitecustomize')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    helper = ort_helper.Helper.start()
    if helper is None:
        pytest.skip("no helper on this machine (one core, not POSIX, or no onnxruntime)")
    try:
        assert helper.load_error(NO_KERNEL) == ort_helper.load_error(NO_KERNEL)
        assert helper.load_error(LOADS) is None
    finally:
        helper.close()


def test_conversion_refusal_names_the_layer_through_the_helper(monkeypatch: pytest.MonkeyPatch,
                                                               helper: ort_helper.Helper) -> None:
    """A model only onnxruntime refuses gets the same error, naming the IR layer, either way."""
    _break(monkeypatch, "Reshape", {b[0]: b[2] for b in BREAKAGES}["kernel"])
    with pytest.raises(InvalidModelError) as in_process:
        ir2onnx.convert_to_ir(TI)
    with ort_helper.using(helper), pytest.raises(InvalidModelError) as helped:
        ir2onnx.convert_to_ir(TI)
    assert str(helped.value) == str(in_process.value)
    assert "(Reshape, line " in str(helped.value) and "does not load in onnxruntime" in str(helped.value)


def test_checker_refusal_while_the_helper_loads(monkeypatch: pytest.MonkeyPatch, helper: ort_helper.Helper) -> None:
    """The helper loads the model while the ONNX checker runs here: a model the checker refuses gets the checker's
    error, as without a helper, and the helper's verdict on it is read, so the next model gets its own."""
    breakage = {b[0]: b for b in BREAKAGES}["arity"]
    with monkeypatch.context() as m:
        _break(m, breakage[1], breakage[2])
        with pytest.raises(InvalidModelError) as in_process:
            ir2onnx.convert_to_ir(TI)
    with ort_helper.using(helper):
        with monkeypatch.context() as m:
            _break(m, breakage[1], breakage[2])
            with pytest.raises(InvalidModelError) as helped:
                ir2onnx.convert_to_ir(TI)
        assert str(helped.value) == str(in_process.value)
        assert "fails the ONNX checker" in str(helped.value)
        assert ort_helper._active is helper
        ir2onnx.convert_to_ir(TI)  # loads
        assert helper.load_error(NO_KERNEL) == ort_helper.load_error(NO_KERNEL)
        assert ort_helper._active is helper


def test_start_session_load_without_helper_loads_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = []
    monkeypatch.setattr(ort_helper, "load_error", lambda model: loaded.append(model))
    verdict = ort_helper.start_session_load(LOADS)
    assert loaded == []  # nothing is loaded in this process until the verdict is asked for
    assert verdict() is None and loaded == [LOADS]


def test_no_helper_on_one_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ort_helper, "_cores", lambda: 1)
    assert ort_helper.Helper.start() is None


def test_no_helper_in_a_frozen_application(monkeypatch: pytest.MonkeyPatch) -> None:
    """A frozen application's executable would run the application itself, not the helper's code."""
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert ort_helper.Helper.start() is None


def test_cli_conversion_leaves_onnxruntime_to_the_helper(tmp_path: Path) -> None:
    """`ir2onnx convert` does not import onnxruntime itself where a helper runs and the conversion needs nothing
    else of it (the shipped kernel list is the installed build's)."""
    from ir2onnx.passes import ort_types

    table = json.loads(ort_types.KERNEL_TABLE.read_text())
    if (ort_types.installed_onnxruntime_version(), ort_types.kernel_platform()) != (table["onnxruntime"],
                                                                                   table["platform"]):
        pytest.skip("the installed onnxruntime is not the kernel list's version: the conversion asks it")
    if ort_helper._cores() < 2:
        pytest.skip("no helper on a machine with one core")
    probe = ("import json, os, runpy, sys; sys.argv = ['ir2onnx', *json.loads(sys.argv[1])]; os._exit = sys.exit\n"
             "try:\n    runpy.run_module('ir2onnx', run_name='__main__')\nexcept SystemExit as e:\n    code = e.code\n"
             "print(json.dumps({'code': code, 'ort': 'onnxruntime' in sys.modules}), file=sys.stderr)")
    out = tmp_path / "m.onnx"
    args = ["convert", str(ROOT / "samples" / "ti_lstm" / "model.xml"), "-o", str(out), "--quiet"]
    r = subprocess.run([sys.executable, "-c", probe, json.dumps(args)], capture_output=True, text=True, cwd=ROOT,
                       timeout=120, check=False)
    result = json.loads(r.stderr.strip().splitlines()[-1])
    assert result == {"code": 0, "ort": False}, r.stderr
    assert out.exists()

"""The public Python API: convert, convert_file (atomic, external data), errors, zero-copy initializers."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx_ir as oir
import pytest

import ir2onnx
import ir2onnx.api
from ir2onnx.verify.onnxruntime_run import run_onnxruntime

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
TI = SAMPLES / "ti_lstm" / "model.xml"


def test_convert_returns_checked_model_proto() -> None:
    proto = ir2onnx.convert(TI)
    assert isinstance(proto, onnx.ModelProto)
    onnx.checker.check_model(proto, full_check=True)
    assert [i.name for i in proto.graph.input] == ["X", "H0", "C0"]
    assert [o.name for o in proto.graph.output] == ["Y"]


def test_initializers_are_views_of_the_weights_file(tmp_path: Path) -> None:
    ov = pytest.importorskip("openvino")
    import openvino.opset13 as ops

    x = ops.parameter([2, 64], np.float32, name="x")
    w = ops.constant(np.arange(64 * 64, dtype=np.float32).reshape(64, 64))
    ov.save_model(ov.Model([ops.matmul(x, w, False, False)], [x]), str(tmp_path / "m.xml"), compress_to_fp16=False)
    model = ir2onnx.convert_to_ir(tmp_path / "m.xml")
    weights = model.meta["ir2onnx.weights"]
    big = [v for v in model.graph.initializers.values() if v.const_value is not None and v.const_value.size > 1000]
    assert big
    for v in big:
        assert np.shares_memory(v.const_value.numpy(), weights.raw(0, weights.size))


@pytest.mark.parametrize("external", [False, True])
def test_convert_file_runs(tmp_path: Path, external: bool) -> None:
    out = ir2onnx.convert_file(TI, tmp_path / "m.onnx", external_data=external)
    assert (tmp_path / "m.onnx.data").exists() == external
    import os

    mask = os.umask(0)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~mask, "the model gets the permissions of any new file"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["m.onnx"] + (["m.onnx.data"] if external else []))
    rng = np.random.default_rng(0)
    feed = {"X": rng.standard_normal((1, 25, 64)).astype(np.float32), "H0": np.zeros((1, 32), np.float32),
            "C0": np.zeros((1, 32), np.float32)}
    a = run_onnxruntime(str(out), feed)[0]
    b = run_onnxruntime(ir2onnx.convert(TI), feed)[0]
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(("stage", "weights"), [("data", "reference"), ("data", "copy"), ("model", "reference"),
                                               ("model", "copy"), ("model", "inline")])
def test_failed_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stage: str,
                                     weights: str) -> None:
    import shutil

    import onnx_ir

    ir_dir = tmp_path / "ir"
    shutil.copytree(TI.parent, ir_dir)
    before = sorted(p.name for p in ir_dir.iterdir())

    def boom(*args: object, **kwargs: object) -> None:
        if stage == "data":  # a partly written data file, then the disk fills up
            Path(str(args[1]), str(args[2])).write_bytes(b"partial")
        raise OSError("disk full")

    if stage == "data":
        monkeypatch.setattr(onnx_ir.external_data, "convert_tensors_to_external", boom)
    else:
        monkeypatch.setattr(onnx_ir, "to_proto", boom)
    with pytest.raises(OSError):
        ir2onnx.convert_file(ir_dir / "model.xml", ir_dir / "m.onnx", weights=weights)
    assert sorted(p.name for p in ir_dir.iterdir()) == before


def test_errors_form_one_hierarchy(tmp_path: Path) -> None:
    for cls in (ir2onnx.IRReadError, ir2onnx.IRValidationError, ir2onnx.UnsupportedOpsError,
                ir2onnx.LayerConversionError, ir2onnx.CheckError):
        assert issubclass(cls, ir2onnx.ConversionError)
    with pytest.raises(ir2onnx.IRReadError, match="cannot read"):
        ir2onnx.convert(tmp_path / "missing.xml")


def test_opset_range() -> None:
    for opset in (17, 18, 21):
        onnx.checker.check_model(ir2onnx.convert(TI, opset=opset), full_check=True)
    with pytest.raises(ir2onnx.ConversionError, match="opset 12"):
        ir2onnx.convert(TI, opset=12)


def test_dynamic_rank_input_is_refused_clearly(tmp_path: Path) -> None:
    ov = pytest.importorskip("openvino")
    import openvino.opset13 as ops

    x = ops.parameter(ov.PartialShape.dynamic(), np.float32, name="x")
    ov.save_model(ov.Model([ops.relu(x)], [x]), str(tmp_path / "m.xml"))
    with pytest.raises(ir2onnx.ConversionError, match="dynamic rank"):
        ir2onnx.convert(tmp_path / "m.xml")


def _corrupt(model: oir.Model, **_: object) -> None:
    """A pass with a defect: it leaves a node of no known op type in the graph."""
    x = model.graph.inputs[0]
    node = oir.Node("", "NoSuchOp", [x], name="broken")
    model.graph.append(node)
    model.graph.outputs.append(node.outputs[0])
    node.outputs[0].name = "broken_out"


def _as_optimisation(monkeypatch: pytest.MonkeyPatch, defect: Any) -> None:
    """`defect(model)` runs as one more optimisation stage, the last before the runtime legalisation."""
    from ir2onnx.passes import pipeline

    class Defect(oir.passes.InPlacePass):
        def call(self, model: oir.Model) -> oir.passes.PassResult:
            defect(model)
            return oir.passes.PassResult(model, True)

    step = pipeline.Step(pipeline.Stage("defect", (Defect,)), lambda o: o.optimize)
    monkeypatch.setattr(pipeline, "PIPELINE", (*pipeline.PIPELINE[:-1], step, pipeline.PIPELINE[-1]))


def _raise(model: oir.Model, **_: object) -> None:
    raise RuntimeError("a defect in a pass")


@pytest.mark.parametrize("defect", [_raise, _corrupt], ids=["raises", "invalid_model"])
def test_a_failing_pass_falls_back_to_the_plain_translation(monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture, defect: Any) -> None:
    """A defect in an optimisation pass (an exception, or a model the checker rejects) does not cost the conversion:
    the plain translation is returned, equal to optimize=False, fuse=False, and a warning says so."""
    _as_optimisation(monkeypatch, defect)
    with caplog.at_level(logging.WARNING, logger="ir2onnx"):
        got = ir2onnx.convert(TI)
    assert "the optimisation passes failed" in caplog.text
    plain = ir2onnx.convert(TI, optimize=False, fuse=False)
    assert [n.op_type for n in got.graph.node] == [n.op_type for n in plain.graph.node]
    assert [o.name for o in got.graph.output] == [o.name for o in plain.graph.output]


def _no_kernel(model: oir.Model, **_: object) -> None:
    """A pass with a defect only onnxruntime finds: a ReduceMean of uint64 (the ONNX checker accepts it; onnxruntime
    has no kernel for it) added to the first output's path."""
    y = model.graph.outputs[0]
    cast = oir.Node("", "Cast", [y], [oir.AttrInt64("to", oir.DataType.UINT64)], name="to_u64")
    mean = oir.Node("", "ReduceMean", [cast.outputs[0]], [oir.AttrInt64("keepdims", 1)], name="no_kernel")
    back = oir.Node("", "Cast", [mean.outputs[0]], [oir.AttrInt64("to", y.dtype)], name="back")
    zero = oir.Node("", "Mul", [back.outputs[0], model.graph.initializers.get("no_kernel_zero") or
                                _register_zero(model)], name="times_zero")
    add = oir.Node("", "Add", [y, zero.outputs[0]], name="plus")
    for node, dtype in ((cast, oir.DataType.UINT64), (mean, oir.DataType.UINT64), (back, y.dtype), (zero, y.dtype),
                        (add, y.dtype)):
        model.graph.append(node)
        node.outputs[0].dtype = dtype
    add.outputs[0].shape = y.shape
    add.outputs[0].name, y.name = y.name, f"{y.name}_before"
    model.graph.outputs[0] = add.outputs[0]


def _register_zero(model: oir.Model) -> oir.Value:
    zero = oir.Value(name="no_kernel_zero", const_value=oir.tensor(np.float32(0), name="no_kernel_zero"))
    model.graph.register_initializer(zero)
    return zero


@pytest.mark.parametrize("helped", [False, True], ids=["in-process", "helper"])
@pytest.mark.parametrize("weights", ["reference", "copy"])
def test_convert_file_falls_back_when_onnxruntime_refuses_the_optimised_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, helped: bool,
        weights: str) -> None:
    """convert_file writes the files while onnxruntime loads the optimised model, and reads its verdict before they
    take their places: refused, the files are dropped and the plain translation is written, as convert_to_ir
    returns it (with its warning)."""
    import shutil

    from ir2onnx.translate import ort_helper

    ir_dir = tmp_path / "ir"
    shutil.copytree(TI.parent, ir_dir)
    _as_optimisation(monkeypatch, _no_kernel)
    helper = ort_helper.Helper.start() if helped else None
    if helped and helper is None:
        pytest.skip("no helper on this machine (one core, not POSIX, or no onnxruntime)")
    real_write, writes = ir2onnx.api.write_model, []

    def counted_write(*args: Any, **kwargs: Any) -> Path:
        writes.append(args[0])
        return real_write(*args, **kwargs)

    monkeypatch.setattr(ir2onnx.api, "write_model", counted_write)
    with ort_helper.using(helper), caplog.at_level(logging.WARNING, logger="ir2onnx"):
        out = ir2onnx.convert_file(ir_dir / "model.xml", ir_dir / "m.onnx", weights=weights)
    assert "the optimisation passes failed (InvalidModelError:" in caplog.text
    assert "does not load in onnxruntime" in caplog.text
    assert len(writes) == 2  # the optimised model's files were written, then dropped
    written = onnx.load(str(out), load_external_data=False)
    plain = ir2onnx.convert(TI, optimize=False, fuse=False)
    assert [n.op_type for n in written.graph.node] == [n.op_type for n in plain.graph.node]
    assert "ReduceMean" not in {n.op_type for n in written.graph.node}
    left = {p.name for p in ir_dir.iterdir()}
    assert {"model.xml", "model.bin", "m.onnx"} <= left <= {"model.xml", "model.bin", "m.onnx", "m.onnx.data"}
    assert ("m.onnx.data" in left) == any(  # no temporary file left, and the data file only when the model uses it
        init.data_location == onnx.TensorProto.EXTERNAL and init.external_data[0].value == "m.onnx.data"
        for init in written.graph.initializer)
    rng = np.random.default_rng(0)
    feed = {"X": rng.standard_normal((1, 25, 64)).astype(np.float32), "H0": np.zeros((1, 32), np.float32),
            "C0": np.zeros((1, 32), np.float32)}
    np.testing.assert_array_equal(run_onnxruntime(str(out), feed)[0], run_onnxruntime(plain, feed)[0])


def test_convert_to_ir_refuses_in_place_what_onnxruntime_refuses(monkeypatch: pytest.MonkeyPatch,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    """The same defect through convert_to_ir: the verdict is waited for, and the plain translation returned."""
    _as_optimisation(monkeypatch, _no_kernel)
    with caplog.at_level(logging.WARNING, logger="ir2onnx"):
        got = ir2onnx.convert(TI)
    assert "the optimisation passes failed (InvalidModelError:" in caplog.text
    assert "ReduceMean" not in {n.op_type for n in got.graph.node}

"""The ONNX-validation gate: a converter that emits an invalid model is refused with the IR layer named, nothing
is written, and validation works on a weightless copy."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx_ir as oir
import pytest

import ir2onnx
from ir2onnx.errors import InvalidModelError
from ir2onnx.protos import INLINE_BYTES, weightless_proto
from ir2onnx.translate import graph as graph_module
from ir2onnx.translate.validate_onnx import validate_model

SAMPLES = Path(__file__).resolve().parent.parent.parent / "samples"
TI = SAMPLES / "ti_lstm" / "model.xml"
LOOP = SAMPLES / "while_loop" / "model.xml"


def _break(monkeypatch: pytest.MonkeyPatch, op_type: str, emit) -> None:  # type: ignore[no-untyped-def]
    """Replace the converter of `op_type` layers by `emit(ctx)`."""
    original = graph_module.registry.lookup_layer

    def lookup(layer):  # type: ignore[no-untyped-def]
        return emit if layer.type == op_type else original(layer)

    monkeypatch.setattr(graph_module.registry, "lookup_layer", lookup)


BREAKAGES = [
    # a node the checker refuses (Tanh takes one input)
    ("arity", "Reshape", lambda ctx: ctx.b.op("Tanh", [ctx.inputs[0], ctx.inputs[0]]), "fails the ONNX checker"),
    # a type error found by strict inference (Add of float and int64)
    ("types", "Multiply", lambda ctx: ctx.b.op("Add", [ctx.inputs[0], ctx.b.i64(1)]), "fails the ONNX checker"),
    # a node onnxruntime has no kernel for and no exact wider form, found only by loading it (ReduceMean of uint64)
    ("kernel", "Reshape", lambda ctx: ctx.b.reshape(ctx.b.cast(ctx.b.op("Expand", [ctx.b.reduce(
        "ReduceMean", ctx.b.cast(ctx.inputs[0], oir.DataType.UINT64), [0], True), ctx.b.shape_of(ctx.inputs[0])]),
        oir.DataType.FLOAT), ctx.inputs[1]), "onnxruntime"),
]


@pytest.mark.parametrize(("case", "op_type", "emit", "what"), BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_invalid_model_is_refused_naming_the_layer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str,
                                                   op_type: str, emit, what: str) -> None:  # type: ignore[no-untyped-def]
    _break(monkeypatch, op_type, emit)
    out = tmp_path / "out" / "m.onnx"
    xml, loop = (TI, "TensorIterator") if op_type == "Reshape" else (LOOP, "Loop")
    with pytest.raises(InvalidModelError) as info:
        ir2onnx.convert_file(xml, out)
    text = str(info.value)
    assert loop in text and f"({op_type}, line " in text, text  # the body layer, with its loop
    assert what in text and "\n" not in text and "Traceback" not in text
    assert not out.parent.exists() or list(out.parent.iterdir()) == []
    with pytest.raises(InvalidModelError):
        ir2onnx.convert(xml)


def test_cli_exit_code_2_for_an_invalid_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from ir2onnx import cli

    _break(monkeypatch, "Reshape", BREAKAGES[0][2])
    logger = logging.getLogger("ir2onnx")
    monkeypatch.setattr(logger, "handlers", list(logger.handlers))  # main() adds a stderr handler
    monkeypatch.setattr(logger, "level", logger.level)
    try:
        code = cli.main(["convert", str(TI), "-o", str(tmp_path / "m.onnx")])
    except SystemExit as e:
        code = int(e.code or 0)
    assert code == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Reshape" in errors[0] and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []


def test_validation_copies_no_weights(tmp_path: Path) -> None:
    """Large initializers become typed graph inputs of the validated copy; the model itself is left unchanged."""
    ov = pytest.importorskip("openvino")
    import openvino.opset13 as ops

    x = ops.parameter([2, 256], np.float32, name="x")
    w = ops.constant(np.ones((256, 256), np.float32))
    ov.save_model(ov.Model([ops.matmul(x, w, False, False)], [x]), str(tmp_path / "m.xml"), compress_to_fp16=False)
    model = ir2onnx.convert_to_ir(tmp_path / "m.xml")
    before = (list(model.graph.inputs), list(model.graph.initializers))
    proto = weightless_proto(model)
    assert (list(model.graph.inputs), list(model.graph.initializers)) == before
    assert all(len(t.raw_data) <= INLINE_BYTES for t in proto.graph.initializer)
    assert proto.ByteSize() < 256 * 256 * 4 // 8
    assert len(proto.graph.input) == 2
    validate_model(model)


def test_valid_model_passes(tmp_path: Path) -> None:
    model = ir2onnx.convert_to_ir(TI)
    validate_model(model)
    assert isinstance(model, oir.Model)

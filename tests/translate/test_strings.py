"""String tensors (`element_type="string"` Consts and Parameters): the Const's block (count, offsets, UTF-8 bytes)
is read into an ONNX STRING initializer, kept inside the .onnx file (external data holds no strings), and the data
movement ops OpenVINO's CPU plugin runs on strings convert to the same ONNX ops, which onnxruntime runs on them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

import ir2onnx
from ir2onnx.errors import IRValidationError
from tests.utils import assert_equivalent, assert_outputs, save_ir

WORDS = ["ab", "", "xyz", "wörld"]
I64 = np.int64


def _strings(values: list[str]) -> Any:
    return ov.op.Constant(ov.Tensor(np.array(values)))


def _i64(v: Any) -> Any:
    return ops.constant(np.array(v, I64))


CASES = {
    "const": lambda x: _strings(WORDS),
    "param": lambda x: x,
    "concat": lambda x: ops.concat([x, _strings(WORDS)], 0),
    "gather": lambda x: ops.gather(ops.concat([x, _strings(WORDS)], 0), _i64([5, 0, 2, 2]), _i64(0)),
    "reshape-transpose": lambda x: ops.transpose(ops.reshape(ops.concat([x, _strings(WORDS)], 0), _i64([2, 3]),
                                                             False), _i64([1, 0])),
    "unsqueeze": lambda x: ops.unsqueeze(x, _i64([0])),
    "shape-of": lambda x: ops.shape_of(x),
}


@pytest.mark.parametrize("name", list(CASES))
def test_string_models_match_openvino(tmp_path: Path, name: str) -> None:
    x = ops.parameter([2], ov.Type.string, name="x")
    xml = save_ir(ov.Model([CASES[name](x)], [x]), tmp_path)
    assert_equivalent(xml, [np.array(["hello", "日本"])])
    assert ir2onnx.check(xml).passed


def test_split_of_strings_follows_numpy(tmp_path: Path) -> None:
    """OpenVINO 2026.4's CPU plugin returns the first part of a string Split for every output (on numbers it is
    right: the same graph over f32 gives the second half); the model gives numpy's parts."""
    x = ops.parameter([2], ov.Type.string, name="x")
    split = ops.split(ops.concat([x, _strings(WORDS)], 0), _i64(0), 2)
    xml = save_ir(ov.Model([split.output(1), split.output(0)], [x]), tmp_path)
    given = np.array(["hello", "日本"])
    parts = np.split(np.concatenate([given, np.array(WORDS)]), 2)
    assert_outputs(xml, [given], [parts[1], parts[0]])


def test_large_string_constant_stays_inside_the_model(tmp_path: Path) -> None:
    words = [f"word{i}" * 3 for i in range(300)]  # ~5 KB: above the size that goes to external data
    x = ops.parameter([1], ov.Type.string, name="x")
    xml = save_ir(ov.Model([ops.concat([x, _strings(words)], 0)], [x]), tmp_path)
    out = tmp_path / "model.onnx"
    ir2onnx.convert_file(xml, out, weights="copy")
    assert not (tmp_path / "model.onnx.data").exists()
    assert_equivalent(xml, [np.array(["first"])], proto=ir2onnx.convert(xml))
    report = ir2onnx.check(xml, out)
    assert report.passed and report.outputs[0].dtype == "string"


@pytest.mark.parametrize(("where", "value"), [(0, 7), (8, 99), (4, 1)])
def test_broken_string_block_is_refused_naming_the_layer(tmp_path: Path, where: int, value: int) -> None:
    """The count (bytes 0-3) or an offset (bytes 4...) of the block rewritten: a validation error names the Const."""
    x = ops.parameter([1], ov.Type.string, name="x")
    const = _strings(WORDS)
    const.set_friendly_name("words")
    xml = save_ir(ov.Model([ops.concat([x, const], 0)], [x]), tmp_path)
    data = bytearray(xml.with_suffix(".bin").read_bytes())
    data[where:where + 4] = np.int32(value).tobytes()
    xml.with_suffix(".bin").write_bytes(bytes(data))
    with pytest.raises(IRValidationError, match="'words' \\(Const, line"):
        ir2onnx.convert(xml)


def test_strings_into_arithmetic_are_refused_naming_the_layer(tmp_path: Path) -> None:
    """Equal or Select on strings: OpenVINO's CPU plugin refuses them ("unsupported src_prc: string"), onnxruntime
    has no such string kernels; every offending input is listed at once."""
    x = ops.parameter([2], ov.Type.string, name="x")
    equal = ops.equal(x, _strings(["ab", "q"]))
    equal.set_friendly_name("same")
    xml = save_ir(ov.Model([equal], [x]), tmp_path)
    with pytest.raises(IRValidationError) as e:
        ir2onnx.convert(xml)
    assert str(e.value).count("'same' (Equal, line") == 2 and "string tensor" in str(e.value)

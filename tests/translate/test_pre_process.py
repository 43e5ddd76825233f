"""An IR's `<pre-process>` block (Model Optimizer's mean values and mean images): OpenVINO's reader subtracts the
means from the input, and so does the conversion. IRs written by hand as OpenVINO's own IR frontend tests write
them, compared with OpenVINO on the same inputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import ir2onnx
from ir2onnx.errors import ConversionError
from tests.utils import assert_equivalent, run_openvino

ET = {np.float32: ("f32", "FP32"), np.int32: ("i32", "I32"), np.float16: ("f16", "FP16")}


@dataclass
class PP:
    shapes: list[tuple[int, ...]]  # the inputs, each Parameter -> ReLU -> Result
    channels: str  # the <channel> elements
    attrs: str = 'reference-layer-name="in0"'
    dtype: type = np.float32
    version: int = 10
    bin: bytes = field(default=b"")


def _dims(shape: tuple[int, ...]) -> str:
    return "".join(f"<dim>{d}</dim>" for d in shape)


def write(case: PP, d: Path) -> Path:
    et, precision = ET[case.dtype]
    layers, edges = [], []
    for i, s in enumerate(case.shapes):
        layers.append(f"""<layer id="{3 * i}" name="in{i}" type="Parameter" version="opset1">
            <data shape="{','.join(map(str, s))}" element_type="{et}"/>
            <output><port id="0" precision="{precision}" names="in{i}">{_dims(s)}</port></output></layer>
        <layer id="{3 * i + 1}" name="relu{i}" type="ReLU" version="opset1">
            <input><port id="0">{_dims(s)}</port></input>
            <output><port id="1" precision="{precision}" names="y{i}">{_dims(s)}</port></output></layer>
        <layer id="{3 * i + 2}" name="out{i}" type="Result" version="opset1">
            <input><port id="0">{_dims(s)}</port></input></layer>""")
        edges.append(f"""<edge from-layer="{3 * i}" from-port="0" to-layer="{3 * i + 1}" to-port="0"/>
        <edge from-layer="{3 * i + 1}" from-port="1" to-layer="{3 * i + 2}" to-port="0"/>""")
    xml = d / "model.xml"
    xml.write_text(f"""<?xml version="1.0"?>
<net name="pp" version="{case.version}">
    <pre-process mean-precision="{precision}" {case.attrs}>{case.channels}</pre-process>
    <layers>{''.join(layers)}</layers>
    <edges>{''.join(edges)}</edges>
</net>
""")
    (d / "model.bin").write_bytes(case.bin)
    return xml


def values(*means: float, ids: bool = True) -> str:
    tags = [f'<channel id="{c}">' if ids else "<channel>" for c in range(len(means))]
    return "".join(f'{tag}<mean value="{m}"/></channel>' for tag, m in zip(tags, means))


def images(inputs: list[tuple[int, ...]], shape: tuple[int, ...], dtype: type = np.float32, version: int = 10) -> PP:
    """Mean images of `shape` ([C, *image]) stored one channel after the other."""
    data = (np.arange(int(np.prod(shape))).reshape(shape) % 7 - 2.5).astype(dtype)
    size = data[0].nbytes
    channels = "".join(f'<channel id="{c}"><mean offset="{c * size}" size="{size}"/></channel>'
                       for c in range(shape[0]))
    return PP(inputs, channels, dtype=dtype, version=version, bin=data.tobytes())


CASES = {
    "nchw-values": PP([(2, 3, 4, 5)], values(1.5, -2, 0.25)),
    "nchw-values-v11-no-ids": PP([(1, 3, 2, 2)], values(1, 2, 3, ids=False), version=11),
    "nc-values": PP([(2, 4)], values(0.5, 1, 1.5, 2)),
    "chw-values": PP([(3, 2, 5)], values(3, -1, 0.5)),
    "ncdhw-values": PP([(1, 2, 2, 3, 2)], values(-1, 1)),
    "nchw-images": images([(2, 3, 4, 5)], (3, 4, 5)),
    "chw-images": images([(2, 3, 4)], (2, 3, 4)),
    "nc-images": images([(2, 3)], (3,)),
    "i32-values-truncated": PP([(1, 3, 2, 2)], values(1.7, -2.9, 3), dtype=np.int32),
    "f16-images-v11": images([(1, 2, 3, 3)], (2, 3, 3), np.float16, version=11),
    "no-reference-the-4d-input": PP([(2, 3), (1, 3, 2, 2)], values(1, 2, 3), attrs=""),
    "no-reference-no-4d-input-the-first": PP([(2, 3), (3, 2, 2)], values(1, 2, 3), attrs=""),
    "reference-the-second-input": PP([(1, 3, 2, 2), (2, 2)], values(4, 5), attrs='reference-layer-name="in1"'),
}


def _feed(case: PP) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [(rng.standard_normal(s) * 4 + 3).astype(case.dtype) for s in case.shapes]


@pytest.mark.parametrize("name", list(CASES))
def test_means_are_subtracted_as_openvino_does(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    xml = write(case, tmp_path)
    feed = _feed(case)
    assert_equivalent(xml, feed)
    (tmp_path / "plain").mkdir()
    plain = write(PP(case.shapes, "", dtype=case.dtype), tmp_path / "plain")  # the means change the outputs
    assert any(not np.array_equal(a, b) for a, b in zip(run_openvino(str(xml), feed), run_openvino(str(plain), feed)))


@pytest.mark.parametrize("name,case,match", [
    ("too-few", PP([(1, 3, 2, 2)], values(1, 2)), "2 means for channels"),
    ("channel-out-of-range", PP([(1, 2, 2, 2)], '<channel id="0"><mean value="1"/></channel>'
                                '<channel id="5"><mean value="1"/></channel>'), "channels \\[0, 5\\]"),
    ("mixed", PP([(1, 2, 2, 2)], values(1) + '<channel id="1"><mean offset="0" size="16"/></channel>',
                 bin=bytes(16)), "mixed"),
    ("unknown-input", PP([(1, 2, 2, 2)], values(1, 2), attrs='reference-layer-name="nope"'), "names no input"),
    ("image-size", PP([(1, 2, 2, 2)], '<channel id="0"><mean offset="0" size="12"/></channel>'
                      '<channel id="1"><mean offset="16" size="16"/></channel>', bin=bytes(32)), "has 12 bytes"),
    ("image-outside-the-bin", PP([(1, 2, 2, 2)], '<channel id="0"><mean offset="0" size="16"/></channel>'
                                 '<channel id="1"><mean offset="16" size="16"/></channel>', bin=bytes(20)), "outside"),
])
def test_bad_means_are_refused_like_openvino(tmp_path: Path, name: str, case: PP, match: str) -> None:
    xml = write(case, tmp_path)
    with pytest.raises(RuntimeError):
        run_openvino(str(xml), _feed(case))
    with pytest.raises(ConversionError, match=match):
        ir2onnx.convert(xml)


def test_input_returned_as_it_is_after_its_means(tmp_path: Path) -> None:
    """Parameter -> Result with means: OpenVINO names the output as the input, which ONNX cannot (the output is
    another value), and the check accepts that one difference."""
    xml = tmp_path / "model.xml"
    dims = "<dim>1</dim><dim>2</dim><dim>2</dim><dim>2</dim>"
    xml.write_text(f"""<?xml version="1.0"?>
<net name="pp" version="10">
    <pre-process reference-layer-name="input">{values(1.5, -2)}</pre-process>
    <layers>
        <layer id="0" name="input" type="Parameter" version="opset1"><data shape="1,2,2,2" element_type="f32"/>
            <output><port id="0" precision="FP32">{dims}</port></output></layer>
        <layer id="1" name="output" type="Result" version="opset1"><input><port id="0">{dims}</port></input></layer>
    </layers>
    <edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0"/></edges>
</net>
""")
    (tmp_path / "model.bin").write_bytes(b"")
    proto = ir2onnx.convert(xml)
    assert [i.name for i in proto.graph.input] == ["input"] and proto.graph.output[0].name != "input"
    feed = {"input": np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)}
    report = ir2onnx.check(xml, proto, inputs=feed)
    assert report.passed, report
    np.testing.assert_array_equal(run_openvino(str(xml), [feed["input"]])[0],
                                  feed["input"] - np.float32([1.5, -2]).reshape(2, 1, 1))

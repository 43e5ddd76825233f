"""Model input and output names as OpenVINO's reader gives them (`get_any_name()`), on IRs written by hand the way
OpenVINO's own IR frontend tests write them: IR v10 counts the Parameter's layer name and the producer's legacy
name among the tensor names, a Result's `output_names` names the output, escaped commas and spaces belong to a
name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.utils import assert_equivalent


def _dims(shape: tuple[int, ...]) -> str:
    return "".join(f"<dim>{d}</dim>" for d in shape)


def ir(version: int, in_names: str, out_names: str, result_attrs: str = "", split: bool = False,
       one_port: bool = False) -> str:
    """Parameter 'in1' -> ReLU 'relu' (or a 2-way Split 'split', both halves returned, or with `one_port` a TopK
    'topk' of k=2 along axis 1 declaring only its values port: OpenVINO still names it as one of two outputs)
    -> Result(s)."""
    s, h = (2, 4), (2, 2)
    if one_port:
        middle = f"""
        <layer id="1" name="topk" type="TopK" version="opset3">
            <data axis="1" mode="max" sort="value" index_element_type="i32"/>
            <input><port id="0">{_dims(s)}</port><port id="1"/></input>
            <output><port id="2" precision="FP32" {out_names}>{_dims(h)}</port></output></layer>
        <layer id="4" name="k" type="Const" version="opset1"><data element_type="i64" shape="" offset="0" size="8"/>
            <output><port id="0" precision="I64"/></output></layer>
        <layer id="2" name="out_a" type="Result" version="opset1" {result_attrs}><input><port id="0">{_dims(h)}</port>
            </input></layer>"""
        edges = """<edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
        <edge from-layer="4" from-port="0" to-layer="1" to-port="1"/>
        <edge from-layer="1" from-port="2" to-layer="2" to-port="0"/>"""
    elif split:
        middle = f"""
        <layer id="1" name="split" type="Split" version="opset1"><data num_splits="2"/>
            <input><port id="0">{_dims(s)}</port><port id="1"/></input>
            <output><port id="2" precision="FP32" {out_names}>{_dims(h)}</port>
                    <port id="3" precision="FP32">{_dims(h)}</port></output></layer>
        <layer id="4" name="axis" type="Const" version="opset1"><data element_type="i64" shape="" offset="0" size="8"/>
            <output><port id="0" precision="I64"/></output></layer>
        <layer id="2" name="out_a" type="Result" version="opset1" {result_attrs}><input><port id="0">{_dims(h)}</port>
            </input></layer>
        <layer id="3" name="out_b" type="Result" version="opset1"><input><port id="0">{_dims(h)}</port></input></layer>"""
        edges = """<edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
        <edge from-layer="4" from-port="0" to-layer="1" to-port="1"/>
        <edge from-layer="1" from-port="2" to-layer="2" to-port="0"/>
        <edge from-layer="1" from-port="3" to-layer="3" to-port="0"/>"""
    else:
        middle = f"""
        <layer id="1" name="relu" type="ReLU" version="opset1">
            <input><port id="0">{_dims(s)}</port></input>
            <output><port id="1" precision="FP32" {out_names}>{_dims(s)}</port></output></layer>
        <layer id="2" name="output" type="Result" version="opset1" {result_attrs}>
            <input><port id="0">{_dims(s)}</port></input></layer>"""
        edges = """<edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
        <edge from-layer="1" from-port="1" to-layer="2" to-port="0"/>"""
    return f"""<?xml version="1.0"?>
<net name="names" version="{version}">
    <layers>
        <layer id="0" name="in1" type="Parameter" version="opset1"><data shape="2,4" element_type="f32"/>
            <output><port id="0" precision="FP32" {in_names}>{_dims(s)}</port></output></layer>{middle}
    </layers>
    <edges>{edges}</edges>
</net>
"""


CASES = {
    "v10-port-names-and-layer-names": ir(10, 'names="input_tensor"', 'names="output_tensor"'),
    "v11-port-names": ir(11, 'names="input_tensor"', 'names="output_tensor"'),
    "v10-no-port-names": ir(10, "", ""),
    "v11-escaped-comma-and-space": ir(11, 'names="zz, in"', 'names="relu\\,t, identity_t"'),
    "v10-escaped-comma-and-space": ir(10, 'names="zz, in"', 'names="relu\\,t, identity_t"'),
    "v11-result-output-names": ir(11, 'names="input"', 'names="relu\\,t, identity_t"',
                                  'output_names="relu\\,t,custom\\, name"'),
    "v10-split-legacy-names": ir(10, 'names="x"', 'names="zz"', split=True),
    "v11-split-unnamed-second-output": ir(11, 'names="x"', 'names="zz"', split=True),
    "v10-topk-declaring-one-of-two-outputs": ir(10, 'names="x"', "", one_port=True),
    "v10-topk-declaring-one-named-output": ir(10, 'names="x"', 'names="values"', one_port=True),
}


@pytest.mark.parametrize("name", list(CASES))
def test_io_names_are_openvinos(tmp_path: Path, name: str) -> None:
    xml = tmp_path / "model.xml"
    xml.write_text(CASES[name])
    (tmp_path / "model.bin").write_bytes(np.int64(1 if "split" in name else 2).tobytes())  # Split's axis, TopK's k
    assert_equivalent(xml, [np.arange(8, dtype=np.float32).reshape(2, 4) - 3])


def test_input_keeps_its_layer_name_and_the_check_takes_any_of_its_names(tmp_path: Path) -> None:
    """OpenVINO's ONNX frontend, removing a Cast after an input, gives the input's tensor the Cast's output name
    too ('/Cast_output_0,in1'): the ONNX input keeps the producer's name, the layer name, and the check's inputs
    may use any name OpenVINO accepts for it."""
    import ir2onnx
    from ir2onnx.errors import CheckError

    xml = tmp_path / "model.xml"
    xml.write_text(ir(11, 'names="/Cast_output_0,in1"', 'names="out"'))
    (tmp_path / "model.bin").write_bytes(b"")
    x = np.arange(8, dtype=np.float32).reshape(2, 4) - 3
    proto = assert_equivalent(xml, [x])
    assert [i.name for i in proto.graph.input] == ["in1"]
    for key in ("in1", "/Cast_output_0"):
        assert ir2onnx.check(xml, proto, inputs={key: x}).passed
    with pytest.raises(CheckError, match="given twice"):
        ir2onnx.check(xml, proto, inputs={"in1": x, "/Cast_output_0": x})

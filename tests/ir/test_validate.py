"""Malformed IR: each case gives its own clear message naming the layer and line, and nothing is written."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

import ir2onnx
from ir2onnx.errors import IRReadError, IRValidationError

VALID = """<?xml version="1.0"?>
<net name="t" version="11">
 <layers>
  <layer id="0" name="x" type="Parameter" version="opset1"><data shape="2" element_type="f32"/>
   <output><port id="0" precision="FP32" names="x"><dim>2</dim></port></output></layer>
  <layer id="1" name="w" type="Const" version="opset1"><data element_type="f32" shape="2" offset="0" size="8"/>
   <output><port id="0" precision="FP32"><dim>2</dim></port></output></layer>
  <layer id="2" name="add" type="Add" version="opset1">
   <input><port id="0"><dim>2</dim></port><port id="1"><dim>2</dim></port></input>
   <output><port id="2" precision="FP32" names="y"><dim>2</dim></port></output></layer>
  <layer id="3" name="out" type="Result" version="opset1"><input><port id="0"><dim>2</dim></port></input></layer>
 </layers>
 <edges>
  <edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>
  <edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>
  <edge from-layer="2" from-port="2" to-layer="3" to-port="0"/>
 </edges>
</net>
"""

EDGES = """  <edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>
  <edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>
  <edge from-layer="2" from-port="2" to-layer="3" to-port="0"/>
"""

# (case id, replacement (old, new) in VALID or full text, .bin bytes, error type, message fragments)
CASES = [
    ("malformed-xml", ("</net>", "<layer></net>"), 8, IRReadError, ["malformed XML", "line"]),
    ("wrong-root", ("net>\n", "network>\n"), 8, IRReadError, ["expected <net>"]),
    ("ir-version", ('version="11"', 'version="7"'), 8, IRReadError, ["IR version 7"]),
    ("dtd", ('<?xml version="1.0"?>', '<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY e SYSTEM "file:///etc/passwd">]>'),
     8, IRReadError, ["DTD"]),
    ("duplicate-id", ('<layer id="3" name="out"', '<layer id="2" name="out"'), 8, IRValidationError,
     ["duplicate layer id 2", "'out'", "line"]),
    ("dangling-layer", ('to-layer="3" to-port="0"', 'to-layer="9" to-port="0"'), 8, IRValidationError,
     ["layer 9 does not exist", "line 16"]),
    ("dangling-port", ('from-layer="2" from-port="2"', 'from-layer="2" from-port="5"'), 8, IRValidationError,
     ["has no output port 5", "'add'"]),
    ("duplicate-edge", (EDGES, EDGES + '  <edge from-layer="0" from-port="0" to-layer="2" to-port="1"/>\n'), 8,
     IRValidationError, ["already fed", "'add'"]),
    ("unconnected-input", ('  <edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>\n', ""), 8,
     IRValidationError, ["input port 1 is not connected", "layer 2 'add' (Add, line 8)"]),
    ("cycle", (EDGES, EDGES.replace('from-layer="0" from-port="0" to-layer="2"', 'from-layer="2" from-port="2" to-layer="2"')),
     8, IRValidationError, ["cycle", "'add'"]),
    ("const-outside-bin", ('offset="0" size="8"', 'offset="4" size="8"'), 8, IRValidationError,
     ["lie outside the 8-byte .bin", "'w'", "line 6"]),
    ("const-too-small", ('offset="0" size="8"', 'offset="0" size="4"'), 8, IRValidationError,
     ["too small for f32[2]", "'w'"]),
    ("short-bin", None, 4, IRValidationError, ["outside the 4-byte .bin"]),
    # 2^64 elements: a product in int64 would wrap to 0 bytes needed
    ("const-size-past-int64", ('shape="2" offset="0" size="8"/>\n   <output><port id="0" precision="FP32"><dim>2</dim>',
                               ('shape="4294967296,4294967296" offset="0" size="8"/>\n   <output><port id="0" '
                                'precision="FP32"><dim>4294967296</dim><dim>4294967296</dim>')), 8, IRValidationError,
     ["size 8 is too small for f32[4294967296, 4294967296] (73786976294838206464 bytes)", "'w'"]),
    ("dim-past-int64", ("<dim>2</dim></port></input></layer>", f"<dim>{1 << 70}</dim></port></input></layer>"), 8,
     IRReadError, [f"<dim>{1 << 70}</dim> is larger than an int64 holds", "'out'"]),
    ("parameter-shape-past-int64", ('<data shape="2" element_type="f32"/>', f'<data shape="{1 << 63}" element_type="f32"/>'),
     8, IRValidationError, [f"dimension {1 << 63} is larger than an int64 holds", "layer 0 'x' (Parameter, line 4)"]),
    ("parameter-shape-negative-bounds", ('<data shape="2" element_type="f32"/>', '<data shape="-3..-3" element_type="f32"/>'),
     8, IRValidationError, ["negative dimension -3", "'x'"]),
    ("bad-dim", ("<dim>2</dim></port></input></layer>", "<dim>two</dim></port></input></layer>"), 8, IRReadError,
     ["is not an integer", "'out'"]),
    ("unknown-element-type", ('element_type="f32" shape="2" offset', 'element_type="q7" shape="2" offset'), 8,
     IRReadError, ["unknown or missing element type", "'w'"]),
    ("parameter-shape-not-a-dim", ('<data shape="2" element_type="f32"/>', '<data shape="1.5" element_type="f32"/>'),
     8, IRValidationError, ["shape '1.5': '1.5' is not a dimension", "layer 0 'x' (Parameter, line 4)"]),
    ("parameter-shape-negative", ('<data shape="2" element_type="f32"/>', '<data shape="-7" element_type="f32"/>'),
     8, IRValidationError, ["negative dimension -7", "'x'"]),
    ("const-shape-not-a-dim", ('element_type="f32" shape="2" offset', 'element_type="f32" shape="2..x" offset'), 8,
     IRReadError, ["'2..x' is not a dimension", "'w'"]),
    ("parameter-with-inputs", ('<layer id="2" name="add" type="Add"', '<layer id="2" name="add" type="Parameter"'), 8,
     IRValidationError, ["a Parameter has no inputs and one output, this one 2 input(s) and 1 output(s)", "'add'"]),
    ("edge-from-a-result", ('<layer id="2" name="add" type="Add"', '<layer id="2" name="add" type="Result"'), 8,
     IRValidationError, ["has no output port 2", "'add' (Result"]),
]


def _write(tmp_path: Path, replace: tuple[str, str] | None, bin_size: int) -> Path:
    text = VALID if replace is None else VALID.replace(replace[0], replace[1], 1)
    if replace is not None and replace[0] == "net>\n":  # rename the root element, both tags
        text = VALID.replace("<net ", "<network ").replace("</net>", "</network>")
    assert replace is None or text != VALID, "fixture replacement did not apply"
    xml = tmp_path / "m.xml"
    xml.write_text(text)
    (tmp_path / "m.bin").write_bytes(struct.pack("<2f", 1.0, 2.0)[:bin_size])
    return xml


def test_valid_template_converts(tmp_path: Path) -> None:
    """The template every case breaks is valid: y = x + w, f32[2], w read from the .bin."""
    proto = ir2onnx.convert(_write(tmp_path, None, 8))
    onnx.checker.check_model(proto, full_check=True)

    def signature(values: Sequence[onnx.ValueInfoProto]) -> list[tuple[str, int, list[int]]]:
        return [(v.name, v.type.tensor_type.elem_type, [d.dim_value for d in v.type.tensor_type.shape.dim])
                for v in values]

    assert signature(proto.graph.input) == [("x", onnx.TensorProto.FLOAT, [2])]
    assert signature(proto.graph.output) == [("y", onnx.TensorProto.FLOAT, [2])]
    assert [node.op_type for node in proto.graph.node] == ["Add"]
    (y,) = ReferenceEvaluator(proto).run(None, {"x": np.array([3.0, -1.0], np.float32)})
    np.testing.assert_array_equal(y, np.array([4.0, 1.0], np.float32))  # w = [1, 2] from the .bin


@pytest.mark.parametrize("around", [("\n\n", ""), ("", "//\n"), ("  \n", "<!-- end -->\ntrailing text")],
                         ids=["blank-lines-before-the-declaration", "text-after-net", "both"])
def test_what_openvino_ignores_around_the_document_is_ignored(tmp_path: Path, around: tuple[str, str]) -> None:
    """OpenVINO's reader accepts blank lines before `<?xml` and text after `</net>` (its own tests have both)."""
    xml = _write(tmp_path, None, 8)
    xml.write_text(around[0] + xml.read_text() + around[1])
    ov = pytest.importorskip("openvino")
    assert len(ov.Core().read_model(str(xml)).outputs) == 1
    assert [o.name for o in ir2onnx.convert(xml).graph.output] == ["y"]


@pytest.mark.parametrize(("case", "replace", "bin_size", "error", "fragments"), CASES, ids=[c[0] for c in CASES])
def test_malformed_ir(tmp_path: Path, case: str, replace: tuple[str, str] | None, bin_size: int, error: type,
                      fragments: list[str]) -> None:
    xml = _write(tmp_path, replace, bin_size)
    with pytest.raises(error) as info:
        ir2onnx.convert_file(xml, tmp_path / "out.onnx")
    for f in fragments:
        assert f in str(info.value), f"{f!r} not in: {info.value}"
    assert not (tmp_path / "out.onnx").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.bin", "m.xml"]


def test_missing_bin(tmp_path: Path) -> None:
    xml = _write(tmp_path, None, 8)
    (tmp_path / "m.bin").unlink()
    with pytest.raises(IRReadError, match="cannot read weights file"):
        ir2onnx.convert(xml)


def test_entity_is_never_fetched(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    text = VALID.replace('<?xml version="1.0"?>',
                         f'<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY s SYSTEM "file://{secret}">]>')
    text = text.replace('name="t"', 'name="&s;"')
    xml = tmp_path / "m.xml"
    xml.write_text(text)
    (tmp_path / "m.bin").write_bytes(b"\0" * 8)
    with pytest.raises(IRReadError) as info:
        ir2onnx.convert(xml)
    assert "TOP SECRET" not in str(info.value)


LOOP_BODY_ERRORS = [
    ("port-map-missing-layer", ('internal_layer_id="0" purpose', 'internal_layer_id="77" purpose'),
     ["internal_layer_id 77 does not exist"]),
    ("back-edge-wrong-type", ('<edge from-layer="4" to-layer="1"', '<edge from-layer="1" to-layer="1"'),
     ["from-layer 1 is not a body Result"]),
    ("no-condition", ('purpose="execution_condition"', 'purpose="other"'), ["execution_condition"]),
]


@pytest.mark.parametrize(("case", "replace", "fragments"), LOOP_BODY_ERRORS, ids=[c[0] for c in LOOP_BODY_ERRORS])
def test_inconsistent_port_maps(tmp_path: Path, case: str, replace: tuple[str, str], fragments: list[str]) -> None:
    pytest.importorskip("openvino")
    from tests.translate.control_flow.builders import loop_model
    from tests.utils import save_ir

    xml = save_ir(loop_model(3, True), tmp_path)
    text = xml.read_text()
    import re

    # normalise the ids the writer chose so the replacements above apply
    body = text[text.index("<body>"):]
    ids = re.findall(r'<layer id="(\d+)" name="[^"]*" type="(\w+)"', body)
    first_param = next(i for i, t in ids if t == "Parameter")
    results = [i for i, t in ids if t == "Result"]
    new = replace[1]
    old = replace[0].replace('internal_layer_id="0"', f'internal_layer_id="{first_param}"')
    old = old.replace('from-layer="4" to-layer="1"', f'from-layer="{results[1]}" to-layer=')
    if "back-edge" in case:
        m = re.search(r'<edge from-layer="(\d+)" to-layer="(\d+)"', text)
        assert m is not None
        old, new = m.group(0), f'<edge from-layer="{m.group(2)}" to-layer="{m.group(2)}"'
        fragments = [f"from-layer {m.group(2)} is not a body Result"]
    assert old in text, old
    xml.write_text(text.replace(old, new, 1))
    with pytest.raises(IRValidationError) as info:
        ir2onnx.convert(xml)
    for f in fragments:
        assert f in str(info.value)
    assert "Loop" in str(info.value)


XXE = [
    ("external-dtd", '<!DOCTYPE net SYSTEM "{dtd}">'),
    ("external-dtd-uppercase-spaced", '<! doctype net SYSTEM "{dtd}">'),
    ("parameter-entity", '<!DOCTYPE net [<!ENTITY % p SYSTEM "{dtd}"> %p;]>'),
    ("network-dtd", '<!DOCTYPE net SYSTEM "http://127.0.0.1:9/ir.dtd">'),
]


@pytest.mark.parametrize(("case", "doctype"), XXE, ids=[c[0] for c in XXE])
def test_no_dtd_or_entity_is_ever_loaded(tmp_path: Path, case: str, doctype: str) -> None:
    """Refused before parsing; and the parser itself never loads a DTD, an entity or a network resource."""
    from lxml import etree

    from ir2onnx.ir.xml_reader import _parser

    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    dtd = tmp_path / "ir.dtd"
    dtd.write_text(f'<!ENTITY s SYSTEM "file://{secret}">')
    text = VALID.replace('<?xml version="1.0"?>', '<?xml version="1.0"?>\n' + doctype.format(dtd=dtd))
    text = text.replace('name="t"', 'name="&s;"')
    xml = tmp_path / "m.xml"
    xml.write_text(text)
    (tmp_path / "m.bin").write_bytes(b"\0" * 8)
    with pytest.raises(IRReadError) as info:
        ir2onnx.convert_file(xml, tmp_path / "out.onnx")
    assert "TOP SECRET" not in str(info.value) and not (tmp_path / "out.onnx").exists()
    # the parser alone (no pre-check): the entity stays unresolved or the document is refused
    try:
        root = etree.fromstring(text.encode(), _parser())
    except etree.XMLSyntaxError:
        return
    assert "TOP SECRET" not in etree.tostring(root).decode()


def test_utf16_document_with_dtd_is_not_expanded(tmp_path: Path) -> None:
    """A DOCTYPE the byte-level pre-check cannot see (UTF-16) still loads nothing."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    text = VALID.replace('<?xml version="1.0"?>', f'<?xml version="1.0" encoding="UTF-16"?>\n'
                         f'<!DOCTYPE net [<!ENTITY s SYSTEM "file://{secret}">]>').replace('name="t"', 'name="&s;"')
    xml = tmp_path / "m.xml"
    xml.write_bytes(text.encode("utf-16"))
    (tmp_path / "m.bin").write_bytes(struct.pack("<2f", 1.0, 2.0))
    try:
        model = ir2onnx.convert(xml)
    except IRReadError as e:
        assert "TOP SECRET" not in str(e)
        return
    assert "TOP SECRET" not in model.graph.name


def test_unsupported_ops_listed_at_once_with_layers(tmp_path: Path) -> None:
    text = VALID.replace('type="Add" version="opset1"', 'type="FancyAdd" version="opset1"')
    xml = tmp_path / "m.xml"
    xml.write_text(text)
    (tmp_path / "m.bin").write_bytes(struct.pack("<2f", 1.0, 2.0))
    from ir2onnx.errors import UnsupportedOpsError

    with pytest.raises(UnsupportedOpsError) as info:
        ir2onnx.convert_file(xml, tmp_path / "out.onnx")
    assert "FancyAdd (opset1) x1" in str(info.value) and "layer 2 'add'" in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.bin", "m.xml"]


def test_a_truncated_bin_is_one_short_problem(tmp_path: Path) -> None:
    """A .bin cut short puts every later Const outside it: one line says how many, the size they need and the first
    three, not one line per Const."""
    ov = pytest.importorskip("openvino")
    import openvino.opset13 as ops

    x = ops.parameter([4], np.float32, name="x")
    y = x
    for i in range(30):
        y = ops.add(y, ops.constant(np.full(4, i, np.float32)))
    xml = tmp_path / "model.xml"
    ov.save_model(ov.Model([y], [x]), str(xml), compress_to_fp16=False)
    data = xml.with_suffix(".bin").read_bytes()
    xml.with_suffix(".bin").write_bytes(data[:20])
    with pytest.raises(IRValidationError) as e:
        ir2onnx.convert(xml)
    message = str(e.value)
    assert len(message.splitlines()) == 1
    assert f"29 Consts lie outside the 20-byte .bin, which is truncated or another IR's (they need {len(data)} bytes)" \
        in message and message.endswith("and 26 more")
    assert len(e.value.problems) == 1

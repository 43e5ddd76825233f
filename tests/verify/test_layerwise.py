"""--layerwise names the layer whose output first differs, at the top level and inside (nested) loop bodies."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import openvino as ov
import openvino.opset13 as ops
import pytest
from onnx import helper, numpy_helper

import ir2onnx
from ir2onnx.translate import layer_map
from tests.utils import save_ir

ROOT = Path(__file__).resolve().parents[2]
NESTED = ROOT / "samples" / "nested" / "model.xml"


def pipeline() -> ov.Model:
    """Multiply -> TensorIterator (body: Squeeze, Add, Tanh) -> Relu."""
    X = ops.parameter([2, 6, 3], np.float32, name="X")
    H = ops.parameter([2, 3], np.float32, name="H")
    pre = ops.multiply(X, ops.constant(np.float32(2.0)))
    pre.set_friendly_name("pre")
    bx = ops.parameter([2, 1, 3], np.float32, name="bx")
    bh = ops.parameter([2, 3], np.float32, name="bh")
    add = ops.add(bh, ops.squeeze(bx, [1]))
    add.set_friendly_name("body_add")
    nh = ops.tanh(add)
    nh.set_friendly_name("body_tanh")
    r_h, r_y = ops.result(nh), ops.result(ops.unsqueeze(nh, 1))
    ti = ops.tensor_iterator()
    ti.set_friendly_name("ti")
    ti.set_body(ov.Model([r_h, r_y], [bx, bh]))
    ti.set_sliced_input(bx, pre.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(bh, H.output(0), r_h.output(0))
    post = ops.relu(ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1))
    post.set_friendly_name("post")
    return ov.Model([post.output(0), ti.get_iter_value(r_h.output(0), -1)], [X, H])


def _graphs(g: onnx.GraphProto):  # type: ignore[no-untyped-def]
    yield g
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(a.g)


def inject(model: onnx.ModelProto, value: str, delta: float = 0.25) -> onnx.ModelProto:
    """A copy where the node computing `value` is followed by `+ delta`: that one layer's output is wrong."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for g in _graphs(m.graph):
        for i, n in enumerate(g.node):
            if value in n.output:
                k = list(n.output).index(value)
                n.output[k] = value + "_before_injection"
                c = helper.make_node("Constant", [], [value + "_delta"],
                                     value=numpy_helper.from_array(np.array(delta, np.float32)))
                add = helper.make_node("Add", [value + "_before_injection", value + "_delta"], [value])
                g.node.insert(i + 1, c)
                g.node.insert(i + 2, add)
                return m
    raise AssertionError(f"no node computes {value}")


def value_of(model: onnx.ModelProto, path: str, port: int = 0) -> str:
    lmap = layer_map.read({p.key: p.value for p in model.metadata_props})
    return lmap[layer_map.key(path, port)]


def layer_ids(xml: Path) -> dict[str, str]:
    """Layer name -> id path (`7/3` inside body 7), every body included."""
    from ir2onnx.ir import read_xml

    out: dict[str, str] = {}

    def walk(graph, prefix: str) -> None:  # type: ignore[no-untyped-def]
        for layer in graph.layers:
            out[layer.name] = prefix + layer.id
            for body in layer.bodies:
                walk(body.graph, f"{prefix}{layer.id}/")

    walk(read_xml(str(xml)).graph, "")
    return out


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, onnx.ModelProto, dict[str, str]]:
    """Converted without the optimisation passes, which move work out of loop bodies (see
    test_optimised_body_is_not_descended_and_says_why)."""
    xml = save_ir(pipeline(), tmp_path_factory.mktemp("pipeline"))
    return xml, ir2onnx.convert(xml, optimize=False), layer_ids(xml)


def test_correct_model_passes_every_layer(converted) -> None:  # type: ignore[no-untyped-def]
    xml, proto, _ = converted
    report = ir2onnx.check(xml, proto, layerwise=True)
    assert report.passed
    compared = {lc.name for lc in report.layerwise.layers}
    assert {"pre", "ti", "post"} <= compared
    assert report.layerwise.first_divergence is None and report.layerwise.body is None


@pytest.mark.parametrize("layer", ["pre", "post"])
def test_top_level_divergence_is_named(converted, layer: str) -> None:  # type: ignore[no-untyped-def]
    xml, proto, ids = converted
    report = ir2onnx.check(xml, inject(proto, value_of(proto, ids[layer])), layerwise=True)
    assert not report.passed
    first = report.to_dict()["first_divergence"]
    assert (first["id"], first["name"], first["type"]) == (ids[layer], layer, "Multiply" if layer == "pre" else "ReLU")
    assert report.layerwise.body is None


@pytest.mark.parametrize(("layer", "type_"), [("body_add", "Add"), ("body_tanh", "Tanh")])
def test_divergence_inside_a_loop_body_is_named(converted, layer: str, type_: str) -> None:  # type: ignore[no-untyped-def]
    xml, proto, ids = converted
    report = ir2onnx.check(xml, inject(proto, value_of(proto, ids[layer])), layerwise=True)
    assert not report.passed
    assert report.layerwise.first_divergence.name == "ti"
    assert report.layerwise.body is not None and report.layerwise.body.scope == ids["ti"]
    first = report.to_dict()["first_divergence"]
    assert (first["id"], first["name"], first["type"]) == (ids[layer], layer, type_)
    assert first["max_abs_error"] == pytest.approx(0.25, abs=0.2)


def test_nested_loops_are_descended(tmp_path: Path) -> None:
    """samples/nested: a Loop whose body holds a TensorIterator; a divergence in the inner body is found there."""
    proto = ir2onnx.convert(NESTED, optimize=False)
    ids = layer_ids(NESTED)
    broken = inject(proto, value_of(proto, ids["Tanh_108"]))
    report = ir2onnx.check(NESTED, broken, layerwise=True)
    assert not report.passed
    lw = report.layerwise
    assert lw.first_divergence.name == "Loop_125"
    assert lw.body.first_divergence.name == "TensorIterator_110"
    assert lw.body.body.first_divergence.name == "Tanh_108"
    assert report.to_dict()["first_divergence"]["id"] == ids["Tanh_108"] == "4/7/7"


def test_state_chaining_error_is_told_apart(converted) -> None:  # type: ignore[no-untyped-def]
    """A dropped back edge: the body alone agrees on the first iteration, and the report says where to look."""
    from tests.verify.mutations import back_edge_dropped

    xml, proto, _ = converted
    report = ir2onnx.check(xml, back_edge_dropped(proto), layerwise=True)
    assert not report.passed
    assert report.layerwise.first_divergence.name == "ti"
    assert report.layerwise.body.first_divergence is None
    assert "how iterations are chained" in " ".join(report.layerwise.body.notes)


def test_cli_layerwise_report(converted, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    xml, proto, ids = converted
    bad = tmp_path / "bad.onnx"
    onnx.save(inject(proto, value_of(proto, ids["body_tanh"])), bad)
    r = subprocess.run([sys.executable, "-m", "ir2onnx", "check", str(xml), str(bad), "--layerwise", "--report",
                        str(tmp_path / "r.json")], capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "first diverging layer" in r.stdout and "body_tanh" in r.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    first = report["first_divergence"]
    assert {k: first[k] for k in ("id", "name", "type")} == {"id": ids["body_tanh"], "name": "body_tanh",
                                                            "type": "Tanh"}
    assert isinstance(first["line"], int) and first["line"] > 0
    assert [lc["name"] for lc in report["layerwise"]["layers"]][:1] == ["pre"]


def test_convert_check_layerwise(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "ir2onnx", "convert", str(NESTED), "-o", str(tmp_path / "n.onnx"),
                        "--check", "--layerwise"], capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "layer by layer: main graph" in r.stdout and "Loop_125" in r.stdout


def test_map_survives_passes_and_drops_removed_values(tmp_path: Path) -> None:
    """Every map entry names a value of the written model; a body layer only an unmapped body Result reads (removed
    by the passes) has none."""
    X = ops.parameter([4, 3], np.float32, name="X")
    bx = ops.parameter([1, 3], np.float32, name="bx")
    used = ops.relu(bx)
    used.set_friendly_name("used")
    unused = ops.sigmoid(bx)
    unused.set_friendly_name("unused")
    r_y, r_z = ops.result(used), ops.result(unused)
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_y, r_z], [bx]))
    ti.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 0)
    xml = save_ir(ov.Model([ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0)], [X]), tmp_path)
    ids = layer_ids(xml)
    raw = ir2onnx.convert(xml, optimize=False)
    assert layer_map.key(ids["unused"], 0) in layer_map.read({p.key: p.value for p in raw.metadata_props})
    ir2onnx.convert_file(xml, tmp_path / "m.onnx")
    proto = onnx.load(tmp_path / "m.onnx")
    lmap = layer_map.read({p.key: p.value for p in proto.metadata_props})
    names = {o for g in _graphs(proto.graph) for n in g.node for o in n.output}
    names |= {i.name for g in _graphs(proto.graph) for i in g.input}
    assert lmap and all(v in names for v in lmap.values())
    assert layer_map.key(ids["used"], 0) in lmap
    assert layer_map.key(ids["unused"], 0) not in lmap


def test_optimised_body_is_not_descended_and_says_why(converted) -> None:  # type: ignore[no-untyped-def]
    """With the default passes the body reads a batched projection instead of its sliced input: the report stops
    at the loop and says how to compare the body."""
    xml, _, ids = converted
    proto = ir2onnx.convert(xml)
    report = ir2onnx.check(xml, inject(proto, value_of(proto, ids["body_tanh"])), layerwise=True)
    assert not report.passed and report.layerwise.first_divergence.name == "ti"
    assert report.layerwise.body is not None and not report.layerwise.body.layers
    assert "--no-optimize" in " ".join(report.layerwise.body.notes)


@pytest.mark.parametrize(("sample", "fused"), [
    ("samples/ti_lstm", "LSTM"), ("samples/streaming_lstm", "LSTM"),
    ("tests/fixtures/tf_lstm_seq", "LSTM"),  # a TensorFlow while Loop: its stacked output read through a Squeeze
    ("tests/fixtures/tf_simple_rnn", None),  # fused into an RNN, which the CPU stage lowers to a Scan
])
def test_a_changed_weight_in_a_fused_body_names_the_loop_and_its_layers(tmp_path: Path, sample: str,
                                                                        fused: str | None) -> None:
    """A default conversion fuses the loop into an ONNX LSTM (or RNN); a weight changed in the IR's body afterwards:
    the loop layer is the first divergence, and the report says which ONNX node implements which body layers (the
    layer map follows the values the fusion and the passes after it replaced)."""
    import shutil

    from lxml import etree

    for name in ("model.xml", "model.bin"):
        shutil.copy(Path(__file__).resolve().parents[2] / sample / name, tmp_path / name)
    xml = tmp_path / "model.xml"
    proto = ir2onnx.convert(xml)
    ops_ = {n.op_type for n in proto.graph.node}
    assert ("Scan" in ops_ and "Loop" not in ops_) if fused is None else fused in ops_
    tree = etree.parse(str(xml))
    weights = max((int(c.find("data").get("size")), int(c.find("data").get("offset")))
                  for c in tree.iter("layer") if c.get("type") == "Const" and c.getparent().getparent().tag == "body")
    data = bytearray(xml.with_suffix(".bin").read_bytes())
    size, offset = weights
    w = np.frombuffer(bytes(data[offset:offset + size]), np.float32) * np.float32(1.5)
    data[offset:offset + size] = w.tobytes()
    xml.with_suffix(".bin").write_bytes(bytes(data))
    report = ir2onnx.check(xml, proto, layerwise=True)
    assert not report.passed
    first = report.layerwise.first_divergence
    assert first is not None and first.type in ("TensorIterator", "Loop")
    if fused is None:
        return
    body = report.layerwise.body
    assert body is not None and "was fused into the ONNX LSTM node" in body.notes[0]
    assert ", line " in body.notes[0].split("was fused into", 1)[1]  # the body layers it implements

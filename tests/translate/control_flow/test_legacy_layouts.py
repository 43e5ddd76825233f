"""IRs written by older tools: other element orders, Const output ports numbered from 1, IR v10 without names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from ir2onnx.verify.openvino_ref import run_openvino
from tests.translate.control_flow.builders import loop_model, ti_accumulate
from tests.translate.control_flow.mo_ir import Bin, Net, port_map, write
from tests.utils import assert_equivalent, assert_outputs, count_ops, rng_inputs, save_ir


def _renumber_outputs_from_one(graph: etree._Element) -> None:
    """Output port ids continue after the inputs; MO-era IRs started Const/Parameter outputs at 1."""
    layers = graph.find("layers")
    edges = graph.find("edges")
    for layer in layers:
        if layer.get("type") in ("Const", "Parameter"):
            out = layer.find("output")
            for port in out:
                old = port.get("id")
                port.set("id", str(int(old) + 1))
                for e in edges:
                    if e.get("from-layer") == layer.get("id") and e.get("from-port") == old:
                        e.set("from-port", port.get("id"))
        body = layer.find("body")
        if body is not None:
            _renumber_outputs_from_one(body)


def _legacy_rewrite(xml: Path, v10: bool) -> None:
    tree = etree.parse(str(xml))
    root = tree.getroot()
    _renumber_outputs_from_one(root)
    for layer in root.iter("layer"):
        pm, be = layer.find("port_map"), layer.find("back_edges")
        if pm is not None:
            # port map first, its entries in reverse order; back edges with (ignored) ports
            layer.remove(pm)
            entries = list(pm)
            for c in entries:
                pm.remove(c)
            for c in reversed(entries):
                pm.append(c)
            layer.insert(0, pm)
        if be is not None:
            layer.remove(be)
            for e in be:
                e.set("from-port", "0")
                e.set("to-port", "0")
            layer.insert(1, be)
    if v10:
        root.set("version", "10")
        for port in root.iter("port"):
            port.attrib.pop("names", None)
        for layer in root.iter("layer"):
            layer.attrib.pop("output_names", None)
            layer.find("rt_info") is not None and layer.remove(layer.find("rt_info"))
        rt = root.find("rt_info")
        if rt is not None:
            root.remove(rt)
    tree.write(str(xml))


@pytest.mark.parametrize("v10", [False, True], ids=["v11-reordered", "v10-no-names"])
def test_tensor_iterator_legacy_layout(tmp_path: Path, v10: bool) -> None:
    xml = save_ir(ti_accumulate([2, 5, 3], 1, -1, 0, -1, 1), tmp_path)
    _legacy_rewrite(xml, v10)
    assert_equivalent(xml, rng_inputs([((2, 5, 3), np.float32), ((2, 3), np.float32)]))


@pytest.mark.parametrize("v10", [False, True], ids=["v11-reordered", "v10-no-names"])
def test_loop_legacy_layout(tmp_path: Path, v10: bool) -> None:
    xml = save_ir(loop_model(-1, True, body_cond="data", limit=8.0), tmp_path)
    _legacy_rewrite(xml, v10)
    assert_equivalent(xml, [np.arange(6, dtype=np.float32).reshape(2, 3) / 10])


# ---- Hand-written IR v10 in Model Optimizer's style (see mo_ir.py), in the shapes of OpenVINO's own IR tests.

def _lstm_ti(tmp_path: Path, axis: int, slice_attrs: dict[str, int], last_values: bool, cell_version: str,
             T: int = 5, I: int = 3, H: int = 4) -> Path:
    """X[1,T,I] (axis 1) or X[T,1,I] (axis 0) -> TensorIterator{Reshape -> LSTMCell-4 -> Reshape} -> Y (+ H, C)."""
    rng = np.random.default_rng(7)
    wb = Bin()
    body = Net(wb)
    x_t = body.param("x_t", [1, 1, I])
    sq = body.add("Reshape", "input_squeeze", [[1, 1, I], [2]], [("f32", [1, I])], data={"special_zero": "True"},
                  sources=[(x_t, 0), (body.const("sq_shape", np.array([1, I], np.int64), "i64"), 0)])
    h = body.param("h_prev", [1, H])
    c = body.param("c_prev", [1, H])
    w = body.const("W", (rng.standard_normal((4 * H, I)) * 0.5).astype(np.float32))
    r = body.const("R", (rng.standard_normal((4 * H, H)) * 0.5).astype(np.float32))
    bias = body.const("B", (rng.standard_normal(4 * H) * 0.1).astype(np.float32))
    cell = body.add("LSTMCell", "cell", [[1, I], [1, H], [1, H], [4 * H, I], [4 * H, H], [4 * H]],
                    [("f32", [1, H]), ("f32", [1, H])], data={"hidden_size": H}, version=cell_version,
                    sources=[(sq, 0), (h, 0), (c, 0), (w, 0), (r, 0), (bias, 0)])
    r_h = body.result("h_out", (cell, 0), [1, H])
    r_c = body.result("c_out", (cell, 1), [1, H])
    un = body.add("Reshape", "output_unsqueeze", [[1, H], [3]], [("f32", [1, 1, H])], data={"special_zero": "True"},
                  sources=[(cell, 0), (body.const("un_shape", np.array([1, 1, H], np.int64), "i64"), 0)])
    r_y = body.result("y_out", (un, 0), [1, 1, H])

    x_shape = [1, T, I] if axis == 1 else [T, 1, I]
    y_shape = [1, T, H] if axis == 1 else [T, 1, H]
    outs = [{"axis": axis, "external_port_id": 3, "internal_layer_id": r_y, **slice_attrs}]
    if last_values:
        outs += [{"external_port_id": 4, "internal_layer_id": r_h}, {"external_port_id": 5, "internal_layer_id": r_c}]
    inner = port_map([{"axis": axis, "external_port_id": 0, "internal_layer_id": x_t, **slice_attrs},
                      {"external_port_id": 1, "internal_layer_id": h}, {"external_port_id": 2, "internal_layer_id": c}],
                     outs, [(r_h, h), (r_c, c)]) + f"<body>{body.xml()}</body>"
    net = Net(wb)
    X, H0, C0 = net.param("X", x_shape), net.param("H0", [1, H]), net.param("C0", [1, H])
    ti_outs = [("f32", y_shape)] + ([("f32", [1, H]), ("f32", [1, H])] if last_values else [])
    ti = net.add("TensorIterator", "lstm/TensorIterator", [x_shape, [1, H], [1, H]], ti_outs, inner=inner,
                 sources=[(X, 0), (H0, 0), (C0, 0)], in_precision=False)
    for k, (_, dims) in enumerate(ti_outs):
        net.result(f"out{k}", (ti, k), dims)
    return write(tmp_path / "model.xml", net)


@pytest.mark.parametrize(("axis", "slice_attrs", "last_values", "cell_version"), [
    (1, {"start": 0, "end": -1, "stride": 1, "part_size": 1}, True, "opset4"),
    (1, {"start": 0, "end": -1, "stride": 1, "part_size": 1}, True, "opset1"),  # LSTMCell-0 without peepholes
    (1, {"start": -1, "end": 0, "stride": -1}, False, "opset4"),  # no part_size; only the sequence output
    (0, {"part_size": 1, "stride": 1}, True, "opset4"),  # batch-major time axis, no start/end
])
def test_model_optimizer_lstm_tensor_iterator(tmp_path: Path, axis: int, slice_attrs: dict[str, int],
                                              last_values: bool, cell_version: str) -> None:
    xml = _lstm_ti(tmp_path, axis, slice_attrs, last_values, cell_version)
    x_shape = (1, 5, 3) if axis == 1 else (5, 1, 3)
    proto = assert_equivalent(xml, rng_inputs([(x_shape, np.float32), ((1, 4), np.float32), ((1, 4), np.float32)]))
    assert count_ops(proto, "LSTM") == 1


def test_model_optimizer_gru_tensor_iterator(tmp_path: Path) -> None:
    """GRUCell-3 with list attributes written with spaces and empty alphas, Const shapes with spaces, Squeeze and
    Unsqueeze around the cell, an empty rt_info in the body, main Results declared in the other order."""
    T, I, H = 4, 3, 5
    rng = np.random.default_rng(3)
    wb = Bin()
    body = Net(wb)
    h = body.param("h_prev", [1, H])
    x_t = body.param("x_t", [1, 1, I])
    axis1 = body.const("axis", np.array([1], np.int64), "i64", port=0)
    sq = body.add("Squeeze", "squeeze", [[1, 1, I], [1]], [("f32", [1, I])], sources=[(x_t, 0), (axis1, 0)])
    w = body.const("W", (rng.standard_normal((3 * H, I)) * 0.5).astype(np.float32), port=0, shape_sep=", ")
    r = body.const("R", (rng.standard_normal((3 * H, H)) * 0.5).astype(np.float32), port=0, shape_sep=", ")
    bias = body.const("B", (rng.standard_normal(3 * H) * 0.1).astype(np.float32), port=0)
    cell = body.add("GRUCell", "gru", [[1, I], [1, H], [3 * H, I], [3 * H, H], [3 * H]], [("f32", [1, H])],
                    data={"linear_before_reset": "false", "hidden_size": H, "activations": "sigmoid, tanh",
                          "activations_alpha": "", "activations_beta": "", "clip": "0"}, version="opset3",
                    sources=[(sq, 0), (h, 0), (w, 0), (r, 0), (bias, 0)])
    un = body.add("Unsqueeze", "unsqueeze", [[1, H], [1]], [("f32", [1, 1, H])], sources=[(cell, 0), (axis1, 0)])
    r_y = body.result("y_out", (un, 0), [1, 1, H])
    r_h = body.result("h_out", (cell, 0), [1, H])
    inner = port_map([{"axis": 1, "external_port_id": 0, "internal_layer_id": x_t, "start": 0, "end": -1,
                       "stride": 1, "part_size": 1}, {"external_port_id": 1, "internal_layer_id": h}],
                     [{"axis": 1, "external_port_id": 2, "internal_layer_id": r_y, "start": 0, "end": -1,
                       "stride": 1, "part_size": 1}, {"external_port_id": 3, "internal_layer_id": r_h}],
                     [(r_h, h)]) + f"<body>{body.xml().replace('</edges>', '</edges><rt_info/>')}</body>"
    net = Net(wb)
    H0 = net.param("H0", [1, H])
    X = net.param("X", [1, T, I])
    ti = net.add("TensorIterator", "gru/TensorIterator", [[1, T, I], [1, H]], [("f32", [1, T, H]), ("f32", [1, H])],
                 inner=inner, sources=[(X, 0), (H0, 0)])
    net.result("last", (ti, 1), [1, H])
    net.result("seq", (ti, 0), [1, T, H])
    xml = write(tmp_path / "model.xml", net)
    proto = assert_equivalent(xml, rng_inputs([((1, H), np.float32), ((1, T, I), np.float32)]))
    assert count_ops(proto, "GRU") == 1


def _cond_through_port_map_loop(tmp_path: Path, cond_port: int) -> Path:
    """Loop whose body condition Parameter is fed through the port map (external port `cond_port`: 1, the
    execution condition, as ONNX-made IRs do) and merged with the condition Result; trip count from an f32 input;
    Loop input ports written without shapes or precisions; Results with an `order`."""
    wb = Bin()
    body = Net(wb)
    cond_in = body.param("cond_in", [], "boolean")
    r_cond = body.add("Result", "cond_identity/sink_port_0", [None], [], sources=[(cond_in, 0)], data={"order": 0},
                      in_precision=False)
    a_in = body.param("a_in", [1, 2])
    add = body.add("Add", "loop_body_add", [[1, 2], [1, 2]], [("f32", [1, 2])],
                   sources=[(a_in, 0), (body.const("b", np.array([[0.5, -1.0]], np.float32)), 0)])
    r_a = body.result("loop_body_add/sink_port_0", (add, 0), [1, 2])
    un = body.add("Unsqueeze", "acc", [[1, 2], [1]], [("f32", [1, 1, 2])],
                  sources=[(add, 0), (body.const("axis", np.array([0], np.int64), "i64"), 0)])
    r_acc = body.result("output_accumulator/sink_port_0", (un, 0), [1, 1, 2])
    inner = port_map([{"external_port_id": cond_port, "internal_layer_id": cond_in},
                      {"external_port_id": 2, "internal_layer_id": a_in}],
                     [{"external_port_id": -1, "internal_layer_id": r_cond, "purpose": "execution_condition"},
                      {"external_port_id": 3, "internal_layer_id": r_a},
                      {"axis": 0, "external_port_id": 4, "internal_layer_id": r_acc}],
                     [(r_cond, cond_in), (r_a, a_in)]) + f"<body>{body.xml()}</body>"
    net = Net(wb)
    trip = net.param("trip", [], port=1)
    cvt = net.add("Convert", "trip_i64", [[]], [("i64", [])], data={"destination_type": "i64"}, sources=[(trip, 0)])
    cond = net.param("cond", [], "boolean", port=1)
    a0 = net.param("a_init", [1, 2])
    loop = net.add("Loop", "a_final", [None, None, [1, 2]], [("f32", [1, 2]), ("f32", [3, 1, 2])], inner=inner,
                   version="opset5", sources=[(cvt, 0), (cond, 0), (a0, 0)], in_precision=False)
    net.result("a_final/sink_port_0", (loop, 0), [1, 2])
    net.result("a_values/sink_port_0", (loop, 1), [3, 1, 2])
    return write(tmp_path / "model.xml", net)


@pytest.mark.parametrize("trip", [3.0, 1.0])
def test_loop_condition_through_port_map(tmp_path: Path, trip: float) -> None:
    xml = _cond_through_port_map_loop(tmp_path, 1)
    a0 = np.array([[1.0, 2.0]], np.float32)
    for cond in (True, False):
        assert_equivalent(xml, [np.array(trip, np.float32), np.array(cond), a0])


def test_loop_trip_count_fed_to_the_condition_parameter(tmp_path: Path) -> None:
    """A port map that feeds the trip count (port 0) to the boolean condition Parameter: OpenVINO's reader types
    that Parameter by the outer i64 input, and its CPU plugin then fails once an iteration runs. By the
    specification the condition is the (non-zero) trip count, so the loop runs its trip count: checked with numpy."""
    xml = _cond_through_port_map_loop(tmp_path, 0)
    a0 = np.array([[1.0, 2.0]], np.float32)
    with pytest.raises(RuntimeError, match="data_type::u8"):
        run_openvino(str(xml), [np.array(3.0, np.float32), np.array(True), a0])
    b = np.array([[0.5, -1.0]], np.float32)
    steps = np.stack([a0 + k * b for k in (1, 2, 3)])
    assert_outputs(xml, [np.array(3.0, np.float32), np.array(True), a0], [a0 + 3 * b, steps])


@pytest.mark.parametrize("version", [10, 11])
def test_boundary_types_as_openvino_presents_them(tmp_path: Path, version: int) -> None:
    """OpenVINO presents an IR v10 model's f16 inputs as f32, its 32/64-bit integer outputs as i32 (values wrap) and
    its other outputs that are not f32 as f32; IR v11 keeps the declared types. The ONNX model does the same."""
    net = Net(Bin())
    a, b = net.param("a", [3], "i64"), net.param("b", [3], "f16")
    c, e = net.param("c", [3], "u8"), net.param("e", [3], "boolean")
    outs = {
        "a2": net.add("Add", "a2", [[3], [3]], [("i64", [3])], input_types=["i64"] * 2, sources=[(a, 0), (a, 0)]),
        "b2": net.add("Multiply", "b2", [[3], [3]], [("f16", [3])], input_types=["f16"] * 2,
                      sources=[(b, 0), (b, 0)]),
        "c2": net.add("Add", "c2", [[3], [3]], [("u8", [3])], input_types=["u8"] * 2, sources=[(c, 0), (c, 0)]),
        "not_e": net.add("LogicalNot", "not_e", [[3]], [("boolean", [3])], input_types=["boolean"],
                         sources=[(e, 0)]),
        "same": net.add("Equal", "same", [[3], [3]], [("boolean", [3])], input_types=["i64"] * 2,
                        sources=[(a, 0), (a, 0)]),
    }
    for name, lid in outs.items():
        net.result(f"{name}/sink_port_0", (lid, 0), [3])
    xml = write(tmp_path / "model.xml", net, version=version)
    tree = etree.parse(str(xml))
    for layer in tree.getroot().iter("layer"):  # tensor names, as later Model Optimizers wrote them
        if layer.get("type") != "Result":
            layer.find("output/port").set("names", layer.get("name"))
    tree.write(str(xml))
    b_type = np.float32 if version == 10 else np.float16
    big = 2**40 if version == 10 else 2**20  # OpenVINO's CPU adds i64 in i32: v11 stays within range
    feed = [np.array([1, big, -3]), np.array([1.5, 2, -3], b_type), np.array([1, 2, 100], np.uint8),
            np.array([True, False, True])]
    proto = assert_equivalent(xml, feed)
    got = run_onnxruntime(proto, dict(zip([i.name for i in proto.graph.input], feed)))
    if version == 10:
        assert [g.dtype for g in got] == [np.int32, np.float32, np.float32, np.float32, np.float32]
        assert got[0].tolist() == [2, 0, -6]  # 2**41 wraps, as in OpenVINO
    else:
        assert [g.dtype for g in got] == [np.int64, np.float16, np.uint8, np.bool_, np.bool_]

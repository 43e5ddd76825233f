"""ReadValue/Assign (variables kept between inference calls): optional state inputs and `.next` outputs, run call
after call in onnxruntime (each call fed the previous call's stored values) against one OpenVINO infer request."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest

from ir2onnx.markers import STATES
from ir2onnx.verify.compare import compare_output
from ir2onnx.verify.runner import run_check
from ir2onnx.verify.worker import F32_CONFIG
from tests.fixture_paths import FIXTURES
from tests.translate.control_flow.builders import ti_lstm
from tests.utils import convert_checked, count_loops, count_ops, ov, save_ir

ops = pytest.importorskip("openvino.opset13")
opset3 = pytest.importorskip("openvino.opset3")
opset6 = pytest.importorskip("openvino.opset6")


def _pairs(proto: onnx.ModelProto) -> list[dict]:
    return json.loads({p.key: p.value for p in proto.metadata_props}[STATES])


def assert_calls(xml: Path, feeds: Sequence[Sequence[np.ndarray]], atol: float = 1e-5,
                 **convert_kwargs: object) -> onnx.ModelProto:
    """Run the IR call after call in one OpenVINO infer request and the conversion in onnxruntime, the stored
    values fed back; outputs and every variable's value after each call must agree."""
    import onnxruntime as ort

    proto = convert_checked(xml, **convert_kwargs)
    pairs = _pairs(proto)
    compiled = ov.Core().compile_model(str(xml), "CPU", F32_CONFIG)
    request = compiled.create_infer_request()
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    out_names = [o.name for o in session.get_outputs()]
    n_outputs = len(compiled.outputs)
    assert all(n in p.get_names() for n, p in zip(names, compiled.inputs))
    assert names[len(compiled.inputs):] == [p["input"] for p in pairs if p["input"]]
    assert out_names[n_outputs:] == [p["output"] for p in pairs if p["output"]]
    states: dict[str, np.ndarray] = {}
    for call, feed in enumerate(feeds):
        result = request.infer([np.asarray(a) for a in feed])
        ref = [np.array(result[o]) for o in compiled.outputs]
        stored = {s.name: np.array(s.state.data) for s in request.query_state()}
        ref += [stored[p["variable"]] for p in pairs if p["output"]]
        got = session.run(None, {**dict(zip(names, feed)), **states})
        for name, g, r in zip(out_names, got, ref):
            assert g.dtype == r.dtype, f"call {call}, {name}: {g.dtype} != OpenVINO's {r.dtype}"
            c = compare_output(name, g, r, 1e-5, atol)
            assert c.passed, f"call {call}, {name}: {c.message} (max abs {c.max_abs_error})"
        by_output = dict(zip(out_names, got))
        states = {p["input"]: by_output[p["output"]] for p in pairs if p["input"] and p["output"]}
    return proto


@pytest.mark.parametrize("const_initializer", [True, False], ids=["zeros", "from_inputs"])
def test_low_latency_lstm(tmp_path: Path, const_initializer: bool) -> None:
    """OpenVINO's own LowLatency2 transformation (a streaming speech model's form): the TensorIterator's states live
    in variables; converted, the loop still becomes one LSTM and three calls agree."""
    from openvino._offline_transformations import apply_low_latency_transformation

    model = ti_lstm(2, 5, 8, 6)
    apply_low_latency_transformation(model, const_initializer)
    xml = save_ir(model, tmp_path)
    rng = np.random.default_rng(0)
    feeds = [[rng.standard_normal(s).astype(np.float32) for s in ((2, 5, 8), (2, 6), (2, 6))] for _ in range(3)]
    proto = assert_calls(xml, feeds)
    assert count_ops(proto, "LSTM") == 1 and count_loops(proto) == 0
    assert all(p["input"] == p["variable"] and p["output"] == p["variable"] + ".next" for p in _pairs(proto))
    assert [i.type.WhichOneof("value") for i in proto.graph.input] == ["tensor_type"] * 3 + ["optional_type"] * 2


@pytest.mark.parametrize("name", ["torch_lstm", "torch_lstm_bidirectional_2layers", "torch_gru_time_major",
                                  "torch_rnn_relu_2layers", "torch_for_loop"])
def test_low_latency_pytorch_layers(tmp_path: Path, name: str) -> None:
    """LowLatency2 over IRs from OpenVINO's PyTorch frontend (tests/fixtures: LSTM/GRU/RNNSequence on run-time
    shapes, a scripted loop): variables of run-time shape, three calls with the fixture's inputs scaled."""
    from openvino._offline_transformations import apply_low_latency_transformation

    model = ov.Core().read_model(str(FIXTURES / name / "model.xml"))
    apply_low_latency_transformation(model, True)
    assert any(op.get_type_name() == "ReadValue" for op in model.get_ordered_ops())
    xml = save_ir(model, tmp_path)
    with np.load(FIXTURES / name / "inputs.npz") as data:
        inputs = [data[k] for k in data.files]
    feeds = [[a * (1 - 0.3 * k) if a.dtype.kind == "f" else a for a in inputs] for k in range(3)]
    proto = assert_calls(xml, feeds)
    assert count_loops(proto) <= count_loops(convert_checked(FIXTURES / name / "model.xml"))


def _accumulator(read: str, et: type, shape: list[int]) -> ov.Model:
    """y = x + state; state' = y * 2 (ReadValue-3 with an initial value, ReadValue-6 with one or without)."""
    x = ops.parameter(shape, et, name="x")
    if read == "v3":
        state = opset3.read_value(ops.constant(np.full(shape, 3, et)), "acc")
    elif read == "v6_init":
        state = opset6.read_value(ops.multiply(x, ops.constant(np.array(2, et))), "acc", et, shape)
    else:
        state = opset6.read_value("acc", et, shape)
    y = ops.add(x, state)
    y.output(0).get_tensor().set_names({"y"})
    new = opset6.assign(ops.multiply(y, ops.constant(np.array(2, et))), "acc") if read != "v3" else \
        opset3.assign(ops.multiply(y, ops.constant(np.array(2, et))), "acc")
    return ov.Model([ops.result(y)], [new], [x], "accumulator")


@pytest.mark.parametrize("read", ["v3", "v6_init", "v6_zeros"])
@pytest.mark.parametrize("et", [np.float32, np.int32], ids=["f32", "i32"])
def test_accumulator(tmp_path: Path, read: str, et: type) -> None:
    xml = save_ir(_accumulator(read, et, [2, 3]), tmp_path)
    rng = np.random.default_rng(0)
    feeds = [[(rng.standard_normal((2, 3)) * 10).astype(et)] for _ in range(3)]
    proto = assert_calls(xml, feeds, atol=0 if et is np.int32 else 1e-5)
    assert _pairs(proto) == [{"variable": "acc", "input": "acc", "output": "acc.next"}]


def test_run_time_shaped_variable(tmp_path: Path) -> None:
    """variable_shape [?, 3]: the state input takes any batch; calls agree on batch 4."""
    xml = save_ir(_accumulator("v6_init", np.float32, [-1, 3]), tmp_path)
    rng = np.random.default_rng(0)
    proto = assert_calls(xml, [[rng.standard_normal((4, 3)).astype(np.float32)] for _ in range(3)])
    dims = proto.graph.input[1].type.optional_type.elem_type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["acc_d0", 3]


@pytest.mark.parametrize("f16_as_f32", [False, True])
def test_f16_state(tmp_path: Path, f16_as_f32: bool) -> None:
    """An f16 variable stays f16 at the boundary; with f16_as_f32 the model computes in f32 inside (the state cast
    where the If takes it out of its optional input)."""
    xml = save_ir(_accumulator("v6_init", np.float16, [2, 3]), tmp_path)
    feeds = [[np.array([[1.5, -2.25, 3], [0.5, 8, -1]], np.float16) * (k + 1)] for k in range(3)]
    proto = assert_calls(xml, feeds, atol=0, f16_as_f32=f16_as_f32)
    state_in = proto.graph.input[1].type.optional_type.elem_type.tensor_type
    assert state_in.elem_type == onnx.TensorProto.FLOAT16


def test_check_sets_and_reads_the_states(tmp_path: Path) -> None:
    """`ir2onnx check` compares the stored values too: from the initial state (inputs left out) and from given
    ones (set into OpenVINO's variables); a wrong conversion of the state fails it."""
    xml = save_ir(_accumulator("v6_init", np.float32, [2, 3]), tmp_path)
    proto = convert_checked(xml)
    report = run_check(str(xml), proto)
    assert report.passed and [r.name for r in report.outputs] == ["y", "acc.next"]
    given = {"x": np.ones((2, 3), np.float32), "acc": np.full((2, 3), 5, np.float32)}
    assert run_check(str(xml), proto, inputs=given).passed
    broken = onnx.ModelProto()
    broken.CopyFrom(proto)
    mul = next(n for n in broken.graph.node if n.op_type == "Mul" and n.output[0] == "acc.next")
    mul.op_type = "Add"
    assert not run_check(str(xml), broken, inputs=given).passed


def test_model_optimizer_memory_v10(tmp_path: Path) -> None:
    """IR v10 as Model Optimizer wrote a Kaldi model's memory: ReadValue-3 from a zero Const, Assign-3 with no
    output port, Add written with an output port numbered after its inputs."""
    from tests.translate.control_flow import mo_ir

    net = mo_ir.Net(mo_ir.Bin())
    x = net.param("input", [1, 4])
    zeros = net.const("memory_init", np.zeros((1, 4), np.float32))
    read = net.add("ReadValue", "memory_read", [[1, 4]], [("f32", [1, 4])], data={"variable_id": "memory_1"},
                   version="opset3", sources=[(zeros, 0)])
    y = net.add("Add", "sum", [[1, 4], [1, 4]], [("f32", [1, 4])], sources=[(x, 0), (read, 0)])
    half = net.const("half", np.full((1, 4), 0.5, np.float32))
    decayed = net.add("Multiply", "decay", [[1, 4], [1, 4]], [("f32", [1, 4])], sources=[(y, 0), (half, 0)])
    net.add("Assign", "memory_write", [[1, 4]], [], data={"variable_id": "memory_1"}, version="opset3",
            sources=[(decayed, 0)])
    net.result("sum/sink_port_0", (y, 0), [1, 4])
    xml = mo_ir.write(tmp_path / "model.xml", net)
    rng = np.random.default_rng(0)
    proto = assert_calls(xml, [[rng.standard_normal((1, 4)).astype(np.float32)] for _ in range(4)])
    assert [o.name for o in proto.graph.output] == ["sum", "memory_1.next"]


def test_second_assign_to_a_variable_is_refused(tmp_path: Path) -> None:
    """Two Assigns to one variable (OpenVINO allows one): a clear error naming the second, nothing written."""
    from lxml import etree

    from ir2onnx.errors import ConversionError

    xml = save_ir(_accumulator("v6_init", np.float32, [2, 3]), tmp_path)
    tree = etree.parse(str(xml))
    layers, edges = tree.find("layers"), tree.find("edges")
    assign = next(layer for layer in layers if layer.get("type") == "Assign")
    copy = etree.fromstring(etree.tostring(assign))
    copy.set("id", "99")
    copy.set("name", "second_assign")
    layers.append(copy)
    edge = next(e for e in edges if e.get("to-layer") == assign.get("id"))
    edges.append(etree.Element("edge", {**edge.attrib, "to-layer": "99"}))
    tree.write(str(xml))
    with pytest.raises(ConversionError, match=r"'second_assign' \(Assign, line \d+\): a second Assign to variable 'acc'"):
        convert_checked(xml)

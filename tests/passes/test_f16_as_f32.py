"""f16_as_f32: an f16 IR computed in f32, as OpenVINO's CPU plugin computes it (passes/f16_as_f32.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx_ir as oir
import openvino.opset13 as ops
import pytest

import ir2onnx
from ir2onnx.passes.analysis.shapes import infer_shapes
from ir2onnx.passes.f16_as_f32 import F16AsF32Pass
from ir2onnx.verify.compare import compare_output
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from ir2onnx.verify.openvino_ref import run_openvino
from tests.translate.control_flow.mo_ir import Bin, Net, port_map, write
from tests.utils import assert_equivalent, count_ops, ov, save_ir


def _model_optimizer_fp16_lstm(tmp_path: Path, T: int = 12, B: int = 3, I: int = 16, H: int = 32) -> Path:
    """IR v10 as Model Optimizer wrote it with --data_type FP16: f16 input, weights and layers; the states'
    initial values reshaped to the input's batch (ShapeOf -> Gather-7 with i32 indices -> Concat); a
    TensorIterator over LSTMCell-4 on the time-major axis with its port map first; Unsqueezed outputs."""
    rng = np.random.default_rng(3)
    wb = Bin()
    body = Net(wb)
    c = body.param("c_prev", [B, H], "f16")
    h = body.param("h_prev", [B, H], "f16")
    x_t = body.param("x_t", [1, B, I], "f16")
    axis0 = body.const("axis0", np.array([0], np.int64), "i64", port=0)
    sq = body.add("Squeeze", "input_squeeze", [[1, B, I], [1]], [("f16", [B, I])], input_types=["f16", "i64"],
                  sources=[(x_t, 0), (axis0, 0)])
    w = body.const("W", (rng.standard_normal((4 * H, I)) * 0.3).astype(np.float16), "f16", port=0, shape_sep=", ")
    r = body.const("R", (rng.standard_normal((4 * H, H)) * 0.3).astype(np.float16), "f16", port=0, shape_sep=", ")
    b = body.const("B", (rng.standard_normal(4 * H) * 0.1).astype(np.float16), "f16", port=0)
    cell = body.add("LSTMCell", "LSTMCell", [[B, I], [B, H], [B, H], [4 * H, I], [4 * H, H], [4 * H]],
                    [("f16", [B, H]), ("f16", [B, H])], version="opset4", input_types=["f16"] * 6,
                    data={"hidden_size": H, "activations": "sigmoid, tanh, tanh", "activations_alpha": "",
                          "activations_beta": "", "clip": "0"},
                    sources=[(sq, 0), (h, 0), (c, 0), (w, 0), (r, 0), (b, 0)])
    un = body.add("Unsqueeze", "output_unsqueeze", [[B, H], [1]], [("f16", [1, B, H])], input_types=["f16", "i64"],
                  sources=[(cell, 0), (axis0, 0)])
    r_y = body.result("y/sink_port_0", (un, 0), [1, B, H])
    r_c = body.result("c/sink_port_0", (cell, 1), [B, H])
    r_h = body.result("h/sink_port_0", (cell, 0), [B, H])
    sliced = {"start": 0, "end": -1, "stride": 1, "part_size": 1}
    inner = port_map([{"axis": 0, "external_port_id": 0, "internal_layer_id": x_t, **sliced},
                      {"external_port_id": 1, "internal_layer_id": h}, {"external_port_id": 2, "internal_layer_id": c}],
                     [{"axis": 0, "external_port_id": 3, "internal_layer_id": r_y, **sliced},
                      {"external_port_id": 4, "internal_layer_id": r_h},
                      {"external_port_id": 5, "internal_layer_id": r_c}],
                     [(r_h, h), (r_c, c)]) + f"<body>{body.xml()}</body>"
    net = Net(wb)
    X = net.param("X", [T, B, I], "f16")
    init = net.const("init", (rng.standard_normal((1, B, H)) * 0.5).astype(np.float16), "f16", port=0,
                     shape_sep=", ")
    shape = net.add("ShapeOf", "ShapeOf", [[T, B, I]], [("i64", [3])], version="opset3",
                    data={"output_type": "i64"}, input_types=["f16"], sources=[(X, 0)])
    batch = net.add("Gather", "ShapeOf/Gather", [[3], [1], []], [("i64", [1])], version="opset7",
                    data={"batch_dims": 0}, input_types=["i64", "i32", "i64"],
                    sources=[(shape, 0), (net.const("indices", np.array([1], np.int32), "i32", port=0), 0),
                             (net.const("axis", np.array(0, np.int64), "i64", port=0), 0)])
    dims = net.add("Concat", "StateDims", [[1], [1]], [("i64", [2])], data={"axis": 0}, input_types=["i64"] * 2,
                   sources=[(batch, 0), (net.const("hidden", np.array([H], np.int64), "i64", port=0), 0)])
    h0, c0 = (net.add("Reshape", f"{n}StateResize", [[1, B, H], [2]], [("f16", [B, H])],
                      data={"special_zero": "true"}, input_types=["f16", "i64"], sources=[(init, 0), (dims, 0)])
              for n in ("Hidden", "Cell"))
    ti = net.add("TensorIterator", "TensorIterator", [[T, B, I], [B, H], [B, H]],
                 [("f16", [T, B, H]), ("f16", [B, H]), ("f16", [B, H])], inner=inner, input_types=["f16"] * 3,
                 sources=[(X, 0), (h0, 0), (c0, 0)])
    for k, name in enumerate(("Y", "Y_h", "Y_c")):
        dims_k = [T, B, H] if k == 0 else [B, H]
        out = net.add("Unsqueeze", name, [dims_k, [1]], [("f16", [1, *dims_k])], input_types=["f16", "i64"],
                      sources=[(ti, k), (net.const(f"{name}/axis", np.array([0], np.int64), "i64", port=0), 0)])
        net.result(f"{name}/sink_port_0", (out, 0), [1, *dims_k])
    return write(tmp_path / "model.xml", net)


@pytest.mark.parametrize("fuse", [True, False])
def test_model_optimizer_fp16_lstm_computes_as_openvino(tmp_path: Path, fuse: bool) -> None:
    xml = _model_optimizer_fp16_lstm(tmp_path)
    x = np.random.default_rng(0).standard_normal((12, 3, 16)).astype(np.float32)  # IR v10: f16 input taken as f32
    proto = assert_equivalent(xml, [x], f16_as_f32=True, fuse=fuse)
    assert count_ops(proto, "LSTM") == 1
    assert count_ops(proto, "Scan") == (0 if fuse else 1)
    if not fuse:  # (the fused node's weights are new bytes either way: its gate order differs from the IR's)
        body = next(a.g for n in proto.graph.node if n.op_type == "Scan" for a in n.attribute)
        weights = [t for g in (proto.graph, body) for t in g.initializer if len(t.dims) >= 2]
        assert weights and all(t.data_type == onnx.TensorProto.FLOAT16 for t in weights), \
            "the f16 weights were copied to f32 in the file"


def test_model_optimizer_fp16_lstm_keeps_f16_without_the_option(tmp_path: Path) -> None:
    """The IR's own types: states rounded to f16 at every step, so the loop stays a loop and the results are
    OpenVINO's (which computes in f32) only to f16's precision."""
    xml = _model_optimizer_fp16_lstm(tmp_path)
    x = np.random.default_rng(0).standard_normal((12, 3, 16)).astype(np.float32)
    proto = ir2onnx.convert(xml)
    assert count_ops(proto, "Scan") == 1
    got = run_onnxruntime(proto, {"X": x})
    ref = run_openvino(str(xml), [x])
    assert not all(compare_output("Y", g, r, 1e-5, 1e-5).passed for g, r in zip(got, ref))
    assert all(compare_output("Y", g, r, 2.0**-8, 2.0**-10).passed for g, r in zip(got, ref))


def test_f16_overflow_between_layers_as_openvino(tmp_path: Path) -> None:
    """(y + y) - y of f16 40000: OpenVINO computes 40000 (f32 inside; f16 arithmetic gives inf); the f16 input and
    output keep their type (IR v11)."""
    y = ops.parameter([3], np.float16, name="y")
    model = ov.Model([ops.subtract(ops.add(y, y), y)], [y])
    xml = save_ir(model, tmp_path)
    feed = [np.array([40000, 1, 2], np.float16)]
    proto = assert_equivalent(xml, feed, f16_as_f32=True)
    assert proto.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
    assert run_onnxruntime(proto, {"y": feed[0]})[0].tolist() == [40000, 1, 2]


def _f16_loop_model() -> oir.Model:
    """x (f16) -> Loop twice { s = s * w (an f16 body initializer) + ConstantOfShape(f16 0.5) } -> + an f16
    Constant -> Cast(to f16) -> the f16 output."""
    f16 = oir.DataType.FLOAT16
    x = oir.Value(name="x", type=oir.TensorType(f16), shape=oir.Shape([2]))
    i = oir.Value(name="i", type=oir.TensorType(oir.DataType.INT64), shape=oir.Shape([]))
    cond = oir.Value(name="cond", type=oir.TensorType(oir.DataType.BOOL), shape=oir.Shape([]))
    s = oir.Value(name="s", type=oir.TensorType(f16), shape=oir.Shape([2]))
    w = oir.Value(name="w", type=oir.TensorType(f16), shape=oir.Shape([2]),
                 const_value=oir.tensor(np.array([300, 2], np.float16), name="w"))
    two = oir.node("Constant", [], attributes={"value": oir.tensor(np.array([2], np.int64))})
    half = oir.node("ConstantOfShape", [two.outputs[0]], attributes={"value": oir.tensor(np.array([0.5], np.float16))})
    mul = oir.node("Mul", [s, w])
    add = oir.node("Add", [mul.outputs[0], half.outputs[0]])
    cond_out = oir.node("Identity", [cond])
    body = oir.Graph([i, cond, s], [cond_out.outputs[0], add.outputs[0]], nodes=[two, half, mul, add, cond_out],
                    initializers=[w], name="body")
    trip = oir.node("Constant", [], attributes={"value": oir.tensor(np.array(2, np.int64))})
    loop = oir.node("Loop", [trip.outputs[0], None, x], attributes={"body": body})
    k = oir.node("Constant", [], attributes={"value": oir.tensor(np.array([-65000, 0.25], np.float16))})
    total = oir.node("Add", [loop.outputs[0], k.outputs[0]])
    rounded = oir.node("Cast", [total.outputs[0]], attributes={"to": int(f16)})
    rounded.outputs[0].name = "y"
    for v in (loop.outputs[0], total.outputs[0], rounded.outputs[0]):
        v.shape = oir.Shape([2])
    graph = oir.Graph([x], [rounded.outputs[0]], nodes=[trip, loop, k, total, rounded], name="g",
                     opset_imports={"": 17})
    for k, node in enumerate(oir.traversal.RecursiveGraphIterator(graph)):
        for j, v in enumerate(node.outputs):
            v.name = v.name if v.name == "y" else f"v{k}_{j}"
    return oir.Model(graph, ir_version=8)


def test_pass_rewrites_bodies_initializers_and_typed_attributes() -> None:
    """Every f16 value becomes f32 except the model's input and output; f16 initializers stay f16 and are cast
    where they are read; ConstantOfShape, Constant and Cast name f32; the result is the f32 computation."""
    model = _f16_loop_model()
    infer_shapes(model)
    F16AsF32Pass()(model)
    proto = oir.to_proto(model)
    onnx.checker.check_model(proto)
    assert proto.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
    assert proto.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
    body = next(a.g for n in proto.graph.node if n.op_type == "Loop" for a in n.attribute)
    assert body.initializer[0].data_type == onnx.TensorProto.FLOAT16
    assert {o.type.tensor_type.elem_type for o in body.output[1:]} == {onnx.TensorProto.FLOAT}
    x = np.array([1, 1], np.float16)
    got = run_onnxruntime(proto, {"x": x})[0]
    s = x.astype(np.float32)
    for _ in range(2):  # 90150.5 after the second step: beyond f16, not f32
        s = s * np.array([300, 2], np.float32) + 0.5
    want = (s + np.array([-65000, 0.25], np.float16).astype(np.float32)).astype(np.float16)
    assert got.dtype == np.float16 and np.isfinite(got).all()
    np.testing.assert_array_equal(got, want)


def test_cli_check_of_a_model_optimizer_fp16_ir(tmp_path: Path) -> None:
    """`convert --check` of an FP16 IR: with --f16-as-f32 the default tolerances hold; without, the check fails
    (the IR's f16 arithmetic against OpenVINO's f32) and its message names the option."""
    from tests.test_cli import run

    xml = _model_optimizer_fp16_lstm(tmp_path)
    ok = run("convert", str(xml), "-o", str(tmp_path / "a.onnx"), "--check", "--f16-as-f32")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "check passed" in ok.stdout + ok.stderr
    bad = run("convert", str(xml), "-o", str(tmp_path / "b.onnx"), "--check")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "--f16-as-f32" in bad.stdout + bad.stderr

"""passes/quantized_reads.py: a dequantized value moved by a Transpose and read by an If's branches from outside
reaches them through Max(x, x); onnxruntime then loads the model (its QDQ propagation aborted the process) and the
values are unchanged. (onnxruntime 1.32's wheel aborts on the unpassed model of these tests: `_loads(_model())` is
False.)"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import onnx_ir as oir
from onnx import TensorProto, helper

from ir2onnx.passes.quantized_reads import QuantizedImplicitReadsPass
from ir2onnx.verify.onnxruntime_run import run_onnxruntime


def _model() -> onnx.ModelProto:
    t = "moved"
    then = helper.make_graph([helper.make_node("Relu", [t], ["a"])], "then", [],
                             [helper.make_tensor_value_info("a", TensorProto.FLOAT, None)])
    other = helper.make_graph([helper.make_node("Neg", [t], ["b"])], "else", [],
                              [helper.make_tensor_value_info("b", TensorProto.FLOAT, None)])
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["dq"]),
        helper.make_node("Transpose", ["dq"], [t], perm=[1, 0]),
        helper.make_node("Size", [t], ["n"]),
        helper.make_node("Greater", ["n", "zero"], ["c"]),
        helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("s", TensorProto.FLOAT, [], [0.05]), helper.make_tensor("z", TensorProto.UINT8, [], [128]),
         helper.make_tensor("zero", TensorProto.INT64, [], [0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return onnx.shape_inference.infer_shapes(model)


def _loads(proto: onnx.ModelProto) -> bool:
    """Whether onnxruntime loads the model, in a child process (the unpassed model aborts it)."""
    code = ("import onnxruntime as ort, sys; "
            "ort.InferenceSession(sys.stdin.buffer.read(), providers=['CPUExecutionProvider'])")
    return subprocess.run([sys.executable, "-c", code], input=proto.SerializeToString(), capture_output=True,
                          timeout=120, check=False).returncode == 0


def test_outer_reads_of_moved_dequantized_values_go_through_max() -> None:
    proto = _model()
    model = oir.serde.deserialize_model(proto)
    assert QuantizedImplicitReadsPass()(model).modified
    out = oir.to_proto(model)
    onnx.checker.check_model(out, full_check=True)
    maxes = [n for n in out.graph.node if n.op_type == "Max"]
    assert len(maxes) == 1 and list(maxes[0].input) == ["moved", "moved"]
    branch_reads = {i for n in out.graph.node if n.op_type == "If" for a in n.attribute for m in a.g.node
                    for i in m.input}
    assert branch_reads == {maxes[0].output[0]}
    assert _loads(out)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    want = np.maximum(np.transpose(np.clip(np.round(x / 0.05) + 128, 0, 255) - 128) * np.float32(0.05), 0)
    np.testing.assert_allclose(run_onnxruntime(out, {"x": x})[0], want, rtol=1e-6, atol=1e-7)


def test_a_model_without_dequantization_is_left_alone() -> None:
    proto = _model()
    for n in proto.graph.node:
        if n.op_type in ("QuantizeLinear", "DequantizeLinear"):
            n.op_type, n.input[:] = "Identity", n.input[:1]
    model = oir.serde.deserialize_model(proto)
    assert not QuantizedImplicitReadsPass()(model).modified

"""passes/compressed_weights.py: NNCF-compressed weights (u8/i8 per channel, u4/i4 by groups) stay integers and compute
what the IR's decompression computes: a MatMul's weight as the DequantizeLinear onnxruntime fuses with the MatMul into
one MatMulNBits (nothing dequantized per call), a Gather's table gathered as integers (only the gathered rows
decompressed), any other weight as one DequantizeLinear. onnxruntime runs with the check's options (the fused
MatMulNBits computes in f32: accuracy level 1); OpenVINO reads every form back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import openvino.opset13 as ops
import pytest

import ir2onnx
from ir2onnx.translate import layer_map
from ir2onnx.verify.onnxruntime_run import ACCURATE_SESSION_CONFIG
from tests.passes.loop_models import recurrence
from tests.utils import all_nodes, convert_checked, count_ops, ov, save_ir

# OpenVINO computing the IR's own arithmetic: no dynamic quantization of the activations of a compressed-weight
# FullyConnected (its CPU default), no low-precision transformations
EXACT_OPENVINO = {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0", "LP_TRANSFORMS_MODE": False}
_INT = {"u8": (np.uint8, 0, 256, onnx.TensorProto.UINT8), "i8": (np.int8, -128, 128, onnx.TensorProto.INT8),
        "u4": (ov.Type.u4, 0, 16, onnx.TensorProto.UINT4), "i4": (ov.Type.i4, -8, 8, onnx.TensorProto.INT4)}
OUT, IN = 16, 128


@dataclass(frozen=True)
class Weight:
    """An IR weight decompression: `kind` of integer, zero point (asymmetric) or not, one scale per output channel
    (`group` 0), per group of `group` inputs, or per tensor ("tensor"), in `ftype`, cast to f32 after (`to_f32`)."""

    kind: str
    asym: bool
    group: int | str = 0
    ftype: type = np.float16
    to_f32: bool = True

    def build(self, rng: np.random.Generator, out: int = OUT, inn: int = IN,
              kn: bool = False) -> tuple[Any, np.ndarray]:
        """The IR nodes computing the [out, inn] weight ([inn, out] where `kn`: a MatMul without transpose_b) and the
        weight they compute (numpy, the chain's output type: (q - zp) * scale rounded once; an f16 chain cast to f32
        exactly, as OpenVINO computes it)."""
        dtype, lo, hi, _ = _INT[self.kind]
        blocked = isinstance(self.group, int) and self.group > 0
        g = self.group if blocked else 1
        if kn:
            shape = (inn // g, g, out) if blocked else (inn, out)
            params = (inn // g, 1, out) if blocked else () if self.group == "tensor" else (1, out)
            final = [inn, out]
        else:
            shape = (out, inn // g, g) if blocked else (out, inn)  # type: ignore[operator]
            params = (out, inn // g, 1) if blocked else () if self.group == "tensor" else (out, 1)  # type: ignore[operator]
            final = [out, inn]
        q = rng.integers(lo, hi, shape)
        zp = rng.integers(lo, hi, params) if self.asym else np.zeros(params, np.int64)
        scale = (rng.random(params) * 0.02 + 1e-3).astype(self.ftype)

        def const(values: np.ndarray) -> Any:
            return ops.constant(values.astype(dtype)) if isinstance(dtype, type) else ops.constant(values, dtype=dtype)

        w = ops.convert(const(q), self.ftype)
        if self.asym:
            w = ops.subtract(w, ops.convert(const(zp), self.ftype))
        w = ops.multiply(w, ops.constant(scale))
        if blocked:
            w = ops.reshape(w, ops.constant(np.array(final, np.int64)), False)
        exact = (q - zp).astype(np.float32) * scale.astype(np.float32)  # |q - zp| < 2^9: one rounding in f32
        if self.to_f32 or self.ftype == np.float32:
            if self.ftype != np.float32:
                w = ops.convert(w, np.float32)
            return w, exact.reshape(final)
        return w, exact.astype(np.float16).reshape(final)  # the exact product rounded once to f16


def _matmul(w: Any, dtype: type) -> tuple[list[Any], Any, Callable[[np.random.Generator], list[np.ndarray]]]:
    x = ops.parameter([2, IN], dtype, name="x")
    return [x], ops.matmul(x, w, False, True), lambda rng: [rng.standard_normal((2, IN)).astype(dtype)]


def _matmul_kn(w: Any, dtype: type) -> tuple[list[Any], Any, Callable[[np.random.Generator], list[np.ndarray]]]:
    x = ops.parameter([2, IN], dtype, name="x")
    return [x], ops.matmul(x, w, False, False), lambda rng: [rng.standard_normal((2, IN)).astype(dtype)]


def _weights(w: Any, dtype: type) -> tuple[list[Any], Any, Callable[[np.random.Generator], list[np.ndarray]]]:
    """The weight itself (times a run-time 1: the model has an input), to compare bit for bit."""
    one = ops.parameter([1], dtype, name="one")
    return [one], ops.multiply(w, one), lambda rng: [np.ones(1, dtype)]


def _gather(w: Any, dtype: type) -> tuple[list[Any], Any, Callable[[np.random.Generator], list[np.ndarray]]]:
    ids = ops.parameter([5], np.int64, name="ids")
    return [ids], ops.gather(w, ids, ops.constant(np.array(0, np.int64))), \
        lambda rng: [rng.integers(0, OUT, 5).astype(np.int64)]


MODELS = {"matmul": _matmul, "matmul_kn": _matmul_kn, "weights": _weights, "gather": _gather}


def _ir(tmp_path: Path, weight: Weight, model: str) -> tuple[Path, list[np.ndarray], np.ndarray]:
    """The IR, its inputs and its decompressed weight."""
    rng = np.random.default_rng(7)
    w, exact = weight.build(rng, kn=model == "matmul_kn")
    dtype = np.float32 if weight.to_f32 or weight.ftype == np.float32 else np.float16
    params, out, inputs = MODELS[model](w, dtype)
    return save_ir(ov.Model([out], params), tmp_path), inputs(rng), exact


def _openvino(xml: Path, inputs: list[np.ndarray]) -> np.ndarray:
    return ov.Core().compile_model(str(xml), "CPU", EXACT_OPENVINO)(inputs)[0]


def _session(proto: onnx.ModelProto, optimized: Path | None = None, accurate: bool = True) -> Any:
    """onnxruntime with the check's options (`accurate`: the MatMulNBits it fuses computes in f32, accuracy level 1;
    else its default, 4, which quantizes the activations to int8); `optimized`: where it writes the graph it runs."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if optimized is not None:
        options.optimized_model_filepath = str(optimized)
    for key, value in ACCURATE_SESSION_CONFIG.items() if accurate else ():
        options.add_session_config_entry(key, value)
    return ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _onnxruntime(proto: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
    return _session(proto).run(None, {i.name: a for i, a in zip(proto.graph.input, inputs)})


def _optimized(proto: onnx.ModelProto, tmp_path: Path, accurate: bool = True) -> onnx.ModelProto:
    """The graph onnxruntime runs, after its optimisations at load."""
    _session(proto, tmp_path / "optimized.onnx", accurate)
    return onnx.load(str(tmp_path / "optimized.onnx"))


def _per_call(optimized: onnx.ModelProto) -> list[str]:
    """The nodes of onnxruntime's optimised graph that read a whole weight in each call: a DequantizeLinear, Cast,
    Sub or Mul of an initializer of the weight's size (not a DequantizeLinear of gathered rows)."""
    sizes = {t.name: int(np.prod(t.dims)) for t in optimized.graph.initializer}
    return [f"{n.op_type} {n.name}" for n in optimized.graph.node
            if n.op_type in ("DequantizeLinear", "Cast", "Sub", "Mul") and sizes.get(n.input[0], 0) >= OUT * IN]


def _read_back(proto: onnx.ModelProto, inputs: list[np.ndarray]) -> np.ndarray:
    """OpenVINO (its ONNX frontend) running the conversion."""
    core = ov.Core()
    return core.compile_model(core.read_model(proto.SerializeToString(), b""), "CPU", EXACT_OPENVINO)(inputs)[0]


def _initializers(proto: onnx.ModelProto) -> dict[str, onnx.TensorProto]:
    return {t.name: t for g in [proto.graph, *_bodies(proto.graph)] for t in g.initializer}


def _bodies(graph: onnx.GraphProto) -> list[onnx.GraphProto]:
    out = []
    for n in graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                out += [a.g, *_bodies(a.g)]
    return out


def _stored_bytes(proto: onnx.ModelProto) -> int:
    return sum(len(t.raw_data) for t in _initializers(proto).values())


CASES = [  # weight, model, opset, the weight's integer type, whether onnxruntime fuses it into MatMulNBits
    (Weight("u8", asym=True), "matmul", None, "u8", True),
    (Weight("i8", asym=False, ftype=np.float32), "matmul", None, "i8", True),
    (Weight("u4", asym=True, group=32), "matmul", None, "u4", True),
    (Weight("i4", asym=False, group=32, ftype=np.float32), "matmul", None, "i4", True),
    (Weight("u8", asym=True, group="tensor", ftype=np.float32), "matmul", None, "u8", True),  # the scale per channel
    (Weight("u8", asym=True), "matmul_kn", None, "u8", True),  # no transpose_b: axis 1 of [K, N]
    (Weight("u4", asym=True, group=32), "matmul_kn", None, "u4", True),  # blocks along K of [K, N]
    (Weight("i4", asym=True, group=8), "matmul", None, "i4", False),  # blocks under 16: DequantizeLinear per call
    (Weight("u8", asym=True), "gather", None, "u8", False),
    (Weight("i8", asym=False), "gather", None, "i8", False),
    (Weight("u8", asym=True, group="tensor"), "gather", None, "u8", False),
    (Weight("u4", asym=True, group=32), "gather", None, "u4", False),  # a 4-bit table: through a Cast to 8 bits
    (Weight("u8", asym=True, to_f32=False), "gather", 19, "u8", False),
    (Weight("u8", asym=True, to_f32=False), "matmul", 19, "u8", True),  # f16 throughout: an f16 DequantizeLinear
    (Weight("u8", asym=True, group=32), "matmul", None, "u8", False),  # 8-bit blocks need opset 21: per call
    (Weight("u4", asym=True, group=32), "matmul", 17, "u8", False),  # 4-bit weights unpacked below opset 21
    (Weight("u8", asym=True), "weights", None, "u8", False),
    (Weight("i8", asym=False, ftype=np.float32), "weights", None, "i8", False),
    (Weight("u4", asym=True, group=32), "weights", None, "u4", False),
    (Weight("i4", asym=False, group=32, ftype=np.float32), "weights", None, "i4", False),
    (Weight("u4", asym=True, group=64, to_f32=False), "weights", None, "u4", False),
]
IDS = ["u8-asym-channel-f16", "i8-sym-channel-f32", "u4-asym-group32-f16", "i4-sym-group32-f32", "u8-asym-tensor-f32",
       "kn-u8-channel", "kn-u4-group32", "i4-group8", "gather-u8", "gather-i8-sym", "gather-u8-tensor",
       "gather-u4-group32", "gather-f16-model", "u8-f16-model", "u8-asym-group32-f16", "u4-opset17-unpacked",
       "weights-u8-f16", "weights-i8-f32", "weights-u4-f16", "weights-i4-f32", "weights-u4-group64-f16-model"]


def _weight_reader(proto: onnx.ModelProto, model: str) -> str:
    """The value the model's MatMul (through its Transpose) or Mul reads as the weight."""
    nodes = list(all_nodes(proto))
    if model == "matmul":
        matmul = next(n for n in nodes if n.op_type == "MatMul")
        return next(n.input[0] for n in nodes if n.output[0] == matmul.input[1])  # the Transpose's input
    if model == "matmul_kn":
        return next(n.input[1] for n in nodes if n.op_type == "MatMul")
    return next(n.input[0] for n in nodes if n.op_type == "Mul")


@pytest.mark.parametrize(("weight", "model", "opset", "qtype", "fused"), CASES, ids=IDS)
def test_a_decompression_chain_keeps_the_weight_compressed(tmp_path: Path, weight: Weight, model: str,
                                                          opset: int | None, qtype: str, fused: bool) -> None:
    xml, inputs, exact = _ir(tmp_path, weight, model)
    proto = convert_checked(xml, opset=opset)
    plain = convert_checked(xml, opset=opset, skip_passes=["DequantizeWeightsPass"])
    assert count_ops(plain, "DequantizeLinear") == 0 and count_ops(plain, "Mul") == 1 + (model == "weights")

    inits = _initializers(proto)
    weights = [t for t in inits.values() if int(np.prod(t.dims)) == OUT * IN]
    assert [t.data_type for t in weights] == [_INT[qtype][3]]  # the weight at its own bit width, held once
    dq = [n for n in all_nodes(proto) if n.op_type == "DequantizeLinear"]
    mapped = layer_map.read({p.key: p.value for p in proto.metadata_props})
    values = {o for n in all_nodes(proto) for o in n.output} | set(inits) | {i.name for i in proto.graph.input}
    assert set(mapped.values()) <= values
    assert len(dq) == 1 and count_ops(proto, "Sub") == 0 and count_ops(proto, "Mul") == (model == "weights")
    if model == "gather":  # the integer rows gathered (with their scales and zero points), then dequantized
        producers = {o: n for n in all_nodes(proto) for o in n.output}
        rows = producers[dq[0].input[0]]  # (the rows of a group-wise table flattened to one scale a row)
        gather = producers[rows.input[0]] if rows.op_type == "Reshape" else rows
        table = producers[gather.input[0]].input[0] if gather.input[0] in producers else gather.input[0]
        assert gather.op_type == "Gather" and gather.input[1] == "ids"
        assert inits[table].data_type == _INT[qtype][3]  # (a 4-bit table through a Cast to 8 bits)
        assert mapped and all(v not in inits for v in mapped.values())
    else:  # read from the file as it is (a transpose_b weight stored transposed: nothing to copy at load)
        assert dq[0].input[0] in inits and inits[dq[0].input[0]].data_type == _INT[qtype][3]
        assert _weight_reader(proto, model) in mapped.values()  # the layer map follows the replacement
    stored, ir_bytes = _stored_bytes(proto), (xml.with_suffix(".bin")).stat().st_size
    unpacked = 2 if weight.kind[1] == "4" and qtype[1] == "8" else 1  # 4-bit values a byte each below opset 21
    per_channel = 5 * OUT if weight.group == "tensor" else 0  # a tensor's scale and zero point repeated per channel
    assert stored <= unpacked * ir_bytes + per_channel + 64, f"{stored} bytes of initializers for the IR's {ir_bytes}"

    optimized = _optimized(proto, tmp_path)  # what onnxruntime runs
    ops = [n.op_type for n in optimized.graph.node]
    if fused:  # one MatMulNBits, computing in f32, holds the weight: nothing depends on the weight in a call
        assert ops.count("MatMulNBits") == 1 and "MatMul" not in ops and not _per_call(optimized), ops
        assert [a.i for n in optimized.graph.node for a in n.attribute if a.name == "accuracy_level"] == [1]
    else:
        assert "MatMulNBits" not in ops, ops
        assert bool(_per_call(optimized)) == (model != "gather"), ops  # a Gather decompresses the rows it reads

    got, want = _onnxruntime(proto, inputs)[0], _openvino(xml, inputs)
    assert got.dtype == want.dtype
    if model in ("weights", "gather"):  # bit for bit: the decompressed weight, OpenVINO's and the plain translation's
        np.testing.assert_array_equal(got, exact if model == "weights" else exact[inputs[0]])
        np.testing.assert_array_equal(got, want)
        if weight.ftype == np.float32 or not weight.to_f32:
            # f16 chains cast to f32: the plain translation rounds the product to f16 where onnxruntime keeps the
            # Cast (after a Reshape), OpenVINO and the pass do not
            np.testing.assert_array_equal(got, _onnxruntime(plain, inputs)[0])
    else:
        tol = 1e-5 if got.dtype == np.float32 else 2e-3
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    if weight.to_f32 and opset is None:  # OpenVINO's ONNX frontend reads the form back
        np.testing.assert_allclose(_read_back(proto, inputs), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_a_user_session_gets_onnxruntimes_default_accuracy(tmp_path: Path) -> None:
    """Without the check's option onnxruntime fuses the same MatMulNBits with its default accuracy level (4: int8
    activations, the fast setting docs/performance.md measures)."""
    xml, _, _ = _ir(tmp_path, Weight("u4", asym=True, group=32), "matmul")
    optimized = _optimized(convert_checked(xml), tmp_path, accurate=False)
    assert [a.i for n in optimized.graph.node for a in n.attribute if a.name == "accuracy_level"] == [4]


def test_a_table_and_a_head_sharing_the_weight(tmp_path: Path) -> None:
    """Tied embeddings: one decompression read by a Gather and by a MatMul (transpose_b) gets both forms."""
    w, exact = Weight("u8", asym=True).build(np.random.default_rng(3))
    ids = ops.parameter([5], np.int64, name="ids")
    rows = ops.gather(w, ids, ops.constant(np.array(0, np.int64)))  # [5, IN]
    logits = ops.matmul(ops.tanh(rows), w, False, True)  # [5, OUT] (a dequantized A: MatMulIntegerToFloat)
    xml = save_ir(ov.Model([rows, logits], [ids]), tmp_path)
    proto = convert_checked(xml)
    optimized = _optimized(proto, tmp_path)
    assert [n.op_type for n in optimized.graph.node].count("MatMulNBits") == 1 and not _per_call(optimized)
    inputs = [np.array([3, 0, 15, 7, 3], np.int64)]
    got, want = _onnxruntime(proto, inputs), ov.Core().compile_model(str(xml), "CPU", EXACT_OPENVINO)(inputs)
    np.testing.assert_array_equal(got[0], exact[inputs[0]])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-5 * np.abs(want[1]).max())


def test_the_pass_keeps_the_chain_it_cannot_express(tmp_path: Path) -> None:
    """An f16 DequantizeLinear needs opset 19: at a forced opset 17 an f16 model's chain stays as it was."""
    xml, inputs, _ = _ir(tmp_path, Weight("u8", asym=True, to_f32=False), "matmul")
    proto = convert_checked(xml, opset=17)
    assert count_ops(proto, "DequantizeLinear") == 0 and count_ops(proto, "Mul") == 1
    want = _openvino(xml, inputs)
    np.testing.assert_allclose(_onnxruntime(proto, inputs)[0], want, rtol=2e-3, atol=2e-3 * np.abs(want).max())


def test_a_zero_point_the_weight_type_cannot_hold_keeps_the_chain(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    q = ops.constant(rng.integers(0, 256, (OUT, IN)).astype(np.uint8))
    zp = ops.constant(np.full((OUT, 1), 0.5, np.float32))  # not an integer
    w = ops.multiply(ops.subtract(ops.convert(q, np.float32), zp), ops.constant(np.full((OUT, 1), 0.01, np.float32)))
    x = ops.parameter([2, IN], np.float32, name="x")
    xml = save_ir(ov.Model([ops.matmul(x, w, False, True)], [x]), tmp_path)
    proto = convert_checked(xml)
    assert count_ops(proto, "DequantizeLinear") == 0 and count_ops(proto, "Sub") == 1


def test_no_optimize_keeps_the_plain_translation(tmp_path: Path) -> None:
    xml, _, _ = _ir(tmp_path, Weight("u4", asym=True, group=32), "matmul")
    proto = convert_checked(xml, optimize=False)
    assert count_ops(proto, "DequantizeLinear") == 0 and count_ops(proto, "Sub") == 1


def test_f16_as_f32_chains_read_the_f16_scale_through_a_cast(tmp_path: Path) -> None:
    xml, inputs, exact = _ir(tmp_path, Weight("u4", asym=True, group=32), "weights")
    proto = convert_checked(xml, f16_as_f32=True)
    assert count_ops(proto, "DequantizeLinear") == 1 and count_ops(proto, "Sub") == 0
    np.testing.assert_array_equal(_onnxruntime(proto, inputs)[0], exact)


def test_a_chain_in_a_loop_body(tmp_path: Path) -> None:
    """The chain in a TensorIterator's body: the DequantizeLinear replaces it there (lean loops then move it out)."""
    w, _ = Weight("u8", asym=True).build(np.random.default_rng(1), 16, 16)
    model = recurrence("ti", size=16, step=lambda x_t, h: ops.relu(ops.add(ops.matmul(x_t, w, False, True), h)))
    xml = save_ir(model, tmp_path)
    proto = convert_checked(xml)
    assert count_ops(proto, "DequantizeLinear") == 1 and count_ops(proto, "Sub") == 0
    rng = np.random.default_rng(2)
    inputs = [rng.standard_normal((2, 5, 16)).astype(np.float32), rng.standard_normal((2, 16)).astype(np.float32)]
    want = ov.Core().compile_model(str(xml), "CPU", EXACT_OPENVINO)(inputs)
    for g, r in zip(_onnxruntime(proto, inputs), want.values()):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)


def test_a_compressed_recurrent_weight_still_fuses(tmp_path: Path) -> None:
    w, _ = Weight("u8", asym=True).build(np.random.default_rng(1), 16, 16)
    u = ops.constant((np.random.default_rng(0).standard_normal((16, 16)) * 0.3).astype(np.float32))
    model = recurrence("ti", size=16, step=lambda x_t, h: ops.tanh(ops.add(ops.matmul(x_t, w, False, True),
                                                                            ops.matmul(h, u, False, False))))
    xml = save_ir(model, tmp_path)
    assert count_ops(ir2onnx.convert(xml, device="cuda", skip_passes=["DequantizeWeightsPass"]), "RNN") == 1
    assert count_ops(ir2onnx.convert(xml, device="cuda"), "RNN") == 1

"""Quantized networks as NNCF makes them (tests/fixtures/nncf_*, made by scripts/fixtures/make_nncf_fixtures.py from
the float networks of tests/fixtures/net_*): post-training INT8 quantization (`nncf_ptq_*`: FakeQuantize on the
activations, int8 weights read through Convert -> Multiply, as `openvino.save_model` stores NNCF's quantized weights)
and weight compression (`nncf_wc_*`: u8/i8 per channel, u4/i4 by groups of 32 or 64, through Convert -> [Subtract]
-> Multiply [-> Reshape] -> Convert).

* Compressed weights (the default conversion) and FakeQuantize with `quantization="exact"` compute what the IR
  computes: onnxruntime's outputs within 1e-5 of the largest output magnitude of OpenVINO's (stored in expected.npz,
  computed with `EXACT_OPENVINO`) on the stored inputs.
* Integer weights stay integers (both modes): the ONNX initializers hold as many int8/uint8/int4/uint4 bytes as the
  IR's integer Consts (plus the activations' uint8 zero points in the quantized form), and at most 10% more float
  bytes than the IR's float Consts (weights expanded to floats would add four bytes for each integer one).
* `quantization="onnx"` writes every FakeQuantize (all 256-level, 8-bit grids here) as QuantizeLinear +
  DequantizeLinear. QuantizeLinear rounds x / scale where OpenVINO rounds x * (levels-1)/(ih-il) + shift, and both
  runtimes compute the layers before it in their own order: an input that lands on a rounding tie can take the next
  step in one runtime, and the step moves everything after it. So the bound is judged over the stored inputs and 16
  seeded random ones (`_random_inputs`), each output's error relative to its largest magnitude:

  - every input within `STEP_BOUND` = 1e-2: over 1,200 random inputs (300 per network, scales 0.5-3) the largest
    error was 3.1e-3, and 3.9e-3 in 180 others (one step moved, a few outputs far downstream of it);
  - at most a quarter of the inputs beyond `EXACT` = 1e-5: most inputs meet no tie at all (the errors are then
    1e-7, f32 rounding), at most 5% of them did in those runs (14 of 300 on the CRNN, 1% on the others).

  The second rule is what makes the check strict: a one-step defect in one layer (a zero point off by one, a scale
  off by 1/254, per-channel weight scales reversed, int8 weights off by one), applied to each QuantizeLinear and
  weight DequantizeLinear of the four networks in turn, moved the outputs by 2e-4 to 0.5 on nearly every input, and
  243 of those 244 defects broke this rule. The one that did not changes nothing: a zero point off by one in the
  QuantizeLinear of an attention's keys adds one constant to every key, which the softmax cancels. An output bound
  alone could not tell such defects from ties, whose errors are of the same size.

  The exact conversion meets ties too (FakeQuantize after an f32 sum computed in another order): it is held
  to the same rule on random inputs, and to `EXACT` on the stored ones.

The CRNN's QuantizeLinear/DequantizeLinear form is the model that made onnxruntime 1.32 abort while loading it (its
QDQ propagation moved a DequantizeLinear into a value the fused LSTM's If reads from outside) until
passes/quantized_reads.py: it loads and runs here with onnxruntime's default optimisations.
"""

from __future__ import annotations

import collections
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import ir2onnx
from ir2onnx.verify.onnxruntime_run import ACCURATE_SESSION_CONFIG
from tests.fixture_paths import fixture_names, load_fixture
from tests.utils import convert_checked, count_ops, ov

ALL = fixture_names("nncf_")
PTQ = fixture_names("nncf_ptq_")
WC = fixture_names("nncf_wc_")
# OpenVINO computing the IR's own arithmetic (as expected.npz was made): f32, no low-precision transformations, no
# dynamic quantization of activations
EXACT_OPENVINO = {"INFERENCE_PRECISION_HINT": "f32", "LP_TRANSFORMS_MODE": False, "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"}
EXACT = 1e-5  # f32 arithmetic through tens of layers, relative to the output's largest magnitude
STEP_BOUND = 1e-2  # a quantization step moved at a rounding tie (see the module's docstring)
RANDOM_INPUTS = 16

_INT_TYPES = {"u8": onnx.TensorProto.UINT8, "i8": onnx.TensorProto.INT8, "u4": onnx.TensorProto.UINT4,
              "i4": onnx.TensorProto.INT4}
_FLOAT_TYPES = {"f32": onnx.TensorProto.FLOAT, "f16": onnx.TensorProto.FLOAT16}


def _onnxruntime(proto: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """onnxruntime with its graph optimisations, as users run it, and as the check runs it: the MatMulNBits fused from
    compressed weights computes in f32 (onnxruntime's default accuracy level quantizes its activations to int8)."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    for key, value in ACCURATE_SESSION_CONFIG.items():
        options.add_session_config_entry(key, value)
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: a for i, a in zip(proto.graph.input, inputs)})


def _error(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    """The largest error of any output, relative to that output's largest magnitude."""
    assert len(got) == len(want)
    errors = []
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, f"{g.shape} {g.dtype} != {w.shape} {w.dtype}"
        errors.append(float(np.abs(g - w).max() / max(float(np.abs(w).max()), np.finfo(np.float32).tiny)))
    return max(errors)


def _random_inputs(stored: list[np.ndarray], count: int) -> list[list[np.ndarray]]:
    """Seeded inputs of the stored inputs' shapes: floats ~N(0, s^2) with s cycling through 0.5, 1, 2, 3 (ranges
    beyond the calibration's too), integers (token ids) within the stored inputs' range."""
    rng = np.random.default_rng(1)
    out = []
    for k in range(count):
        s = (0.5, 1.0, 2.0, 3.0)[k % 4]
        out.append([rng.integers(int(a.min()), int(a.max()) + 1, a.shape).astype(a.dtype) if a.dtype.kind in "iu"
                    else (s * rng.standard_normal(a.shape)).astype(a.dtype) for a in stored])
    return out


def _openvino(xml: Path, feeds: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    compiled = ov.Core().compile_model(str(xml), "CPU", EXACT_OPENVINO)
    return [[np.array(v) for v in compiled.create_infer_request().infer(f).values()] for f in feeds]


def _assert_close_but_for_ties(xml: Path, proto: onnx.ModelProto, stored: list[np.ndarray]) -> list[float]:
    """The rule of the module's docstring over the stored inputs and RANDOM_INPUTS random ones; the errors."""
    feeds = [stored, *_random_inputs(stored, RANDOM_INPUTS)]
    errors = [_error(_onnxruntime(proto, f), ref) for f, ref in zip(feeds, _openvino(xml, feeds))]
    assert max(errors) <= STEP_BOUND, f"errors relative to the outputs' magnitudes: {errors}"
    moved = sum(e > EXACT for e in errors)
    assert moved <= len(feeds) // 4, f"{moved} of {len(feeds)} inputs moved beyond {EXACT}: {errors}"
    return errors


def _ir_const_bytes(xml: Path) -> collections.Counter[str]:
    """Bytes of the IR's Consts by element type (bodies included)."""
    sizes: collections.Counter[str] = collections.Counter()
    for layer in ET.parse(xml).getroot().iter("layer"):
        data = layer.find("data")
        if layer.get("type") == "Const" and data is not None:
            sizes[data.get("element_type", "")] += int(data.get("size", "0"))
    return sizes


def _onnx_initializer_bytes(proto: onnx.ModelProto) -> collections.Counter[int]:
    """Bytes of the ONNX initializers by data type, wherever they are stored (4-bit types packed)."""
    sizes: collections.Counter[int] = collections.Counter()
    graphs = [proto.graph]
    while graphs:
        g = graphs.pop()
        for t in g.initializer:
            length = {e.key: e.value for e in t.external_data}.get("length")
            if length is not None:
                sizes[t.data_type] += int(length)
            elif t.raw_data:
                sizes[t.data_type] += len(t.raw_data)
            else:  # typed fields: small constants the conversion made (never 4-bit)
                sizes[t.data_type] += onnx.numpy_helper.to_array(t).nbytes
        graphs += [a.g for n in g.node for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]
    return sizes


def _assert_weights_stay_integers(xml: Path, proto: onnx.ModelProto, exact: bool) -> None:
    ir, ox = _ir_const_bytes(xml), _onnx_initializer_bytes(proto)
    for et, dt in _INT_TYPES.items():
        # the quantized form adds the activations' zero points (uint8, one per tensor or channel)
        assert ox[dt] == ir[et] if exact or et != "u8" else ox[dt] >= ir[et], \
            f"{et}: {ir[et]} bytes in the IR, {ox[dt]} in the ONNX model"
    ir_float, ox_float = sum(ir[e] for e in _FLOAT_TYPES), sum(ox[d] for d in _FLOAT_TYPES.values())
    assert ox_float <= 1.1 * ir_float + 256, f"{ox_float} float bytes in the ONNX model, {ir_float} in the IR"


def _integer_weights(xml: Path) -> int:
    """The IR's integer weights: integer Consts converted to a float type and read by a Subtract (of the zero
    point) or a Multiply (by the scale) as their first input (zero points are the Subtract's second). Scalars are
    left out: the quantized CRNN's LSTM starts from a quantized scalar zero (a u8 0 times a scale) broadcast to its
    initial state, which stays Cast -> Mul (one byte)."""
    count = 0
    for op in ov.Core().read_model(str(xml)).get_ordered_ops():
        if op.get_type_name() != "Constant" or op.get_output_element_type(0).get_type_name() not in _INT_TYPES \
                or len(op.get_output_shape(0)) == 0:
            continue
        for convert in op.output(0).get_target_inputs():
            for reader in convert.get_node().output(0).get_target_inputs():
                count += reader.get_node().get_type_name() in ("Subtract", "Multiply") and reader.get_index() == 0
    return count


def _fake_quantize_count(xml: Path) -> int:
    return sum(layer.get("type") == "FakeQuantize" for layer in ET.parse(xml).getroot().iter("layer"))


def test_fixtures_are_there() -> None:
    assert len(PTQ) >= 4 and len(WC) >= 5, ALL


@pytest.mark.parametrize("name", WC)
def test_compressed_weights_match_openvino(name: str) -> None:
    """The default conversion (no FakeQuantize: the quantization option changes nothing)."""
    xml, inputs, expected = load_fixture(name)
    proto = convert_checked(xml)
    err = _error(_onnxruntime(proto, inputs), expected)
    assert err <= EXACT, f"error {err:.3g} of the outputs' largest magnitude"
    _assert_weights_stay_integers(xml, proto, exact=True)
    assert count_ops(proto, "DequantizeLinear") == _integer_weights(xml)  # one each (passes/compressed_weights.py)


@pytest.mark.parametrize("name", PTQ)
def test_exact_fake_quantize_matches_openvino(name: str) -> None:
    xml, inputs, expected = load_fixture(name)
    proto = convert_checked(xml, quantization="exact")
    err = _error(_onnxruntime(proto, inputs), expected)
    assert err <= EXACT, f"error {err:.3g} of the outputs' largest magnitude"
    _assert_weights_stay_integers(xml, proto, exact=True)
    assert count_ops(proto, "DequantizeLinear") == _integer_weights(xml)  # the int8 weights
    assert count_ops(proto, "QuantizeLinear") == 0
    assert count_ops(proto, "Round") == _fake_quantize_count(xml)  # one per FakeQuantize: OpenVINO's arithmetic
    _assert_close_but_for_ties(xml, proto, inputs)


@pytest.mark.parametrize("name", PTQ)
def test_onnx_quantization(name: str) -> None:
    """The translation's quantized form (the layout pass left out) under the module docstring's rule."""
    xml, inputs, _ = load_fixture(name)
    proto = convert_checked(xml, quantization="onnx", skip_passes=["QuantizedLayoutPass"])
    fq = _fake_quantize_count(xml)
    assert fq > 0
    assert count_ops(proto, "QuantizeLinear") == fq  # every FakeQuantize: all are 256-level 8-bit grids here
    assert count_ops(proto, "DequantizeLinear") == fq + _integer_weights(xml)
    assert count_ops(proto, "Round") == 0
    _assert_weights_stay_integers(xml, proto, exact=False)
    _assert_close_but_for_ties(xml, proto, inputs)


@pytest.mark.parametrize("name", PTQ)
def test_quantized_layout_passes_the_check(name: str) -> None:
    """The default conversion (passes/quantized_layout.py: int32 biases in Convs, a quantization step after values
    move) passes the check, which judges it in quantization steps, ties and the biases' rounding, on the stored
    inputs and a random one; every FakeQuantize is still one QuantizeLinear."""
    xml, inputs, _ = load_fixture(name)
    proto = convert_checked(xml, quantization="onnx")
    nodes = list(proto.graph.node)
    requantized = sum(n.op_type == "QuantizeLinear" and n.name.endswith("/requantize") for n in nodes)
    assert count_ops(proto, "QuantizeLinear") == _fake_quantize_count(xml) + requantized
    _assert_weights_stay_integers(xml, proto, exact=False)
    names = [i.name for i in proto.graph.input]
    for feed in (inputs, *_random_inputs(inputs, 1)):
        report = ir2onnx.check(xml, proto, inputs=dict(zip(names, feed)))
        assert report.passed, report

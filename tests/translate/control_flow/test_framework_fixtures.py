"""IRs written by OpenVINO's TensorFlow, PyTorch and PaddlePaddle frontends (tests/fixtures/tf_*, torch_*, paddle_*;
made by scripts/fixtures/make_tf_fixtures.py, make_torch_fixtures.py and make_paddle_fixtures.py): Keras recurrent
layers, tf.while_loop, tf.scan, tf.map_fn, autograph loops, torch recurrent layers and scripted loops, Paddle LSTMs
and a CRNN text recogniser.

Each is converted, run in onnxruntime and compared with OpenVINO on the IR (names, shapes, values) and with the
framework's own outputs stored beside it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from lxml import etree

from ir2onnx.verify.openvino_ref import run_openvino
from tests.fixture_paths import FIXTURES as ROOT  # the folder; FIXTURES below is this module's list of names
from tests.fixture_paths import fixture_names, load_fixture
from tests.utils import assert_equivalent, assert_outputs, convert_checked

FIXTURES = fixture_names("tf_", "torch_", "paddle_")

# OpenVINO's CPU plugin cannot run these; the framework's outputs are the reference.
OPENVINO_FAILS = {
    # x[i] with a run-time i: a StridedSlice whose every entry shrinks has no CPU executor
    "tf_for_loop": "doesn't have compiled executor",
    # a Keras encoder LSTM's final states as a decoder LSTM's initial state on a static batch (on a run-time batch,
    # tf_lstm_seq2seq, it runs)
    "tf_lstm_seq2seq_static_batch": "object is not initialized",
}

# OpenVINO's frontend wrote an IR that computes something else than the framework did: the IR (and OpenVINO, and
# the conversion) is the reference; the test pins that the framework's result differs, so it notices a fix.
FRONTEND_DIFFERS = {
    # a dynamic-size TensorArray becomes a 0-row buffer that ScatterUpdate writes into: every write is dropped,
    # so the IR returns no rows where TensorFlow stacks one per iteration
    "tf_while_tensor_array",
    # Paddle's AdaptiveAvgPool2D((1, None)) keeps the width; the frontend writes a ReduceMean over height and width
    "paddle_crnn_adaptive_pool",
}


# OpenVINO's CPU plugin computes these IRs wrongly (checked against the framework): the framework's outputs are the
# reference, and the test pins that OpenVINO differs, so it notices a fix.
OPENVINO_WRONG = {
    # it ignores an LSTMSequence's lengths on run-time shapes (every row runs every step; see test_rnn.py's
    # test_sequence_lengths_on_run_time_shapes): PyTorch's packed sequence of rows of 5, 2 and 4 steps
    "torch_packed_lstm",
}


def _types(xml: Path) -> Counter[str]:
    return Counter(layer.get("type") for layer in etree.parse(str(xml)).iter("layer"))


def _data(xml: Path, op_type: str, runtime_input: int | None = None) -> list[dict[str, str]]:
    """The attributes of every `op_type` layer (only those whose input `runtime_input` is not a Const, if given)."""
    found = []
    for layers in etree.parse(str(xml)).iter("layers"):
        by_id = {layer.get("id"): layer for layer in layers}
        edges = layers.getparent().find("edges")
        for layer in layers:
            if layer.get("type") != op_type:
                continue
            if runtime_input is not None:
                port = layer.find("input")[runtime_input].get("id")
                src = next(e.get("from-layer") for e in edges if e.get("to-layer") == layer.get("id")
                           and e.get("to-port") == port)
                if by_id[src].get("type") == "Const":
                    continue
            data = layer.find("data")
            found.append(dict(data.attrib) if data is not None else {})
    return found


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture(name: str) -> None:
    xml, inputs, expected = load_fixture(name)
    proto = convert_checked(xml)
    # the ONNX inputs and the fixture's keys are, in order, names OpenVINO gives the inputs
    keys = np.load(ROOT / name / "inputs.npz").files
    ov_names = [p.get_names() for p in ov.Core().read_model(str(xml)).inputs]
    assert len(proto.graph.input) == len(keys) == len(ov_names)
    assert all(i.name in n and k in n for i, k, n in zip(proto.graph.input, keys, ov_names))
    if name in OPENVINO_FAILS:
        with pytest.raises(RuntimeError, match=OPENVINO_FAILS[name]):
            run_openvino(str(xml), inputs)
    elif name in OPENVINO_WRONG:
        ours = run_openvino(str(xml), inputs)
        assert not all(np.allclose(o, e, rtol=1e-3, atol=1e-3) for o, e in zip(ours, expected)), \
            "OpenVINO now agrees with the framework"
    else:
        assert_equivalent(xml, inputs, proto=proto)
    if name in FRONTEND_DIFFERS:
        ours = run_openvino(str(xml), inputs)
        assert any(o.shape != e.shape for o, e in zip(ours, expected)), "the frontend now agrees with the framework"
        return
    assert_outputs(xml, inputs, expected, proto=proto, rtol=1e-4, atol=1e-5)


def test_fixtures_hold_the_forms_they_pin() -> None:
    """Regenerated fixtures must keep the forms these tests are for."""
    assert len([n for n in FIXTURES if n.startswith("tf_")]) >= 14
    assert len([n for n in FIXTURES if n.startswith("torch_")]) >= 7
    assert len([n for n in FIXTURES if n.startswith("paddle_")]) >= 5
    for name in ("tf_lstm_seq", "tf_gru_reset_after", "tf_while_loop", "tf_scan", "tf_map_fn", "tf_for_loop",
                 "torch_while_loop", "torch_for_loop"):
        assert _types(ROOT / name / "model.xml")["Loop"] >= 1, name
    for name in ("tf_lstm_backwards", "tf_bidirectional_lstm", "tf_bidirectional_gru_last"):
        assert _types(ROOT / name / "model.xml")["ReverseSequence"] >= 1, name
    assert any(d["batch_axis"] == "0" and d["seq_axis"] == "2"
               for d in _data(ROOT / "tf_lstm_backwards" / "model.xml", "ReverseSequence"))
    masked = _data(ROOT / "tf_for_loop_columns" / "model.xml", "StridedSlice", runtime_input=1)
    assert any("1" in d["begin_mask"] and "1" in d["shrink_axis_mask"] for d in masked)
    assert any(d["shrink_axis_mask"] == "1"
               for d in _data(ROOT / "tf_for_loop" / "model.xml", "StridedSlice", runtime_input=1))
    assert len(_data(ROOT / "tf_split_dynamic" / "model.xml", "VariadicSplit", runtime_input=2)) == 1
    for name in ("tf_lstm_seq2seq", "tf_lstm_seq2seq_static_batch", "tf_bidirectional_gru_unmerged"):
        assert _types(ROOT / name / "model.xml")["Loop"] == 2, name
    for name, op in (("torch_lstm", "LSTMSequence"), ("torch_gru_bidirectional", "GRUSequence"),
                     ("torch_rnn_relu_2layers", "RNNSequence"), ("torch_lstm_time_major_2layers_states", "LSTMSequence"),
                     ("torch_rnn_3layers_no_bias", "RNNSequence"), ("torch_rnn_bidirectional_2layers", "RNNSequence")):
        assert _types(ROOT / name / "model.xml")[op] >= 1, name
    for name in ("paddle_lstm", "paddle_lstm_bidirectional_2layers", "paddle_crnn", "paddle_crnn_adaptive_pool"):
        assert _types(ROOT / name / "model.xml")["LSTMSequence"] >= 1, name
    assert _types(ROOT / "paddle_crnn_adaptive_pool" / "model.xml")["ReduceMean"] == 1

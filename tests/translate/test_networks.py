"""Whole networks as users convert them (tests/fixtures/net_*, made by scripts/fixtures/make_network_fixtures.py from
PyTorch models through OpenVINO's PyTorch and ONNX frontends): a ShuffleNet with ShuffleChannels, CRNN text recognisers
with HSigmoid/HardSigmoid, HSwish, AdaptiveAvgPool and a bidirectional LSTMSequence, a transformer recogniser with
ScaledDotProductAttention, multi-head attention over keys and values of their own widths on run-time shapes; f32 and
f16-compressed weights.

Each converts, passes the ONNX checker, and matches OpenVINO on the IR (names, shapes, values) and PyTorch's own
outputs stored beside it (f16-compressed weights: OpenVINO only, since the weights changed).
"""

from __future__ import annotations

import pytest

from tests.fixture_paths import fixture_names, load_fixture
from tests.utils import assert_equivalent, assert_outputs, count_ops

NETWORKS = fixture_names("net_")
RTOL, ATOL = 1e-4, 1e-5  # tens of layers of f32 arithmetic in two runtimes


@pytest.mark.parametrize("name", NETWORKS)
def test_network_matches_openvino(name: str) -> None:
    xml, inputs, expected = load_fixture(name)
    proto = assert_equivalent(xml, inputs, rtol=RTOL, atol=ATOL)
    if not name.endswith("_f16"):
        assert_outputs(xml, inputs, expected, rtol=1e-3, atol=1e-4, proto=proto)  # PyTorch computed differently


def test_recognisers_keep_their_recurrence_fused() -> None:
    xml, _, _ = load_fixture("net_crnn_ocr")
    from tests.utils import convert_checked

    proto = convert_checked(xml)
    # one bidirectional LSTM, run as a forward and a reverse node (passes/chunk_rnn.py)
    assert count_ops(proto, "LSTM") == 2 and count_ops(proto, "Loop") + count_ops(proto, "Scan") == 0


@pytest.mark.parametrize("layerwise", [False, True])
@pytest.mark.parametrize("name", ["net_attention_kv", "net_attention_kv_onnx"])
def test_default_inputs_of_attention_over_keys_and_values(name: str, layerwise: bool) -> None:
    """The keys' and values' lengths must be equal, which the IR does not say (run-time dims): OpenVINO refuses the
    check's first default inputs (free dimensions of different sizes), the check retries with one size. Layer by
    layer too, where exposing the layers named the model's unnamed output tensor in OpenVINO (the check then took
    that name for OpenVINO's output name)."""
    import ir2onnx

    xml, _, _ = load_fixture(name)
    report = ir2onnx.check(xml, layerwise=layerwise)
    assert report.passed, report
    assert any("all of one size" in n for n in report.notes)
    shapes = {i.name: i.shape for i in report.inputs}
    assert len({s[:2] for s in shapes.values()}) == 1  # batch and length alike

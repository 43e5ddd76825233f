"""Keras masking (Embedding(mask_zero=True), Masking) over a loop: an If picks the fused LSTM/GRU with
sequence_lens where every row's mask is a prefix (or, when only last values are read, a suffix), the loop otherwise
(prefix_mask.py); all equal to OpenVINO."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import ir2onnx
from ir2onnx.passes.analysis.graph import NoMatch
from ir2onnx.passes.recurrent import prefix_mask
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.fixture_paths import FIXTURES
from tests.utils import all_nodes, assert_equivalent, count_loops, count_ops


def _masks(kind: str, rows: int, steps: int, rng: np.random.Generator) -> np.ndarray:
    """[rows, steps] booleans, true where a step is kept."""
    lengths = [steps, steps // 2, 0, 1, steps - 1][:rows]
    keep = np.ones((rows, steps), bool)
    for row, n in enumerate(lengths):
        if kind == "prefix":  # padding at the end; a full row and an empty one among them
            keep[row, n:] = False
        elif kind == "suffix":  # padding at the front (Keras' pad_sequences default)
            keep[row, :steps - n] = False
    if kind == "holes":
        keep &= rng.random((rows, steps)) > 0.3
    return keep


def _inputs(name: str, kind: str) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    rows, steps = (5, 6) if "embedding" in name else (2, 6)  # the Masking fixture's batch is static
    if name.endswith("run_time_length"):
        steps = 9  # not the length the fixture was made with
    keep = _masks(kind, rows, steps, rng)
    if "embedding" in name:  # token 0 pads
        tokens = rng.integers(1, 20, (rows, steps)).astype(np.int32)
        return [np.where(keep, tokens, 0).astype(np.int32)]
    x = rng.standard_normal((rows, steps, 4)).astype(np.float32)  # Masking(0.0): an all-zero step is masked
    return [np.where(keep[..., None], x, 0).astype(np.float32)]


@pytest.mark.parametrize("kind", ["prefix", "suffix", "holes", "none"])
@pytest.mark.parametrize("name,op", [("tf_lstm_embedding_mask_last", "LSTM"), ("tf_lstm_embedding_mask_seq", "LSTM"),
                                     ("tf_gru_embedding_mask_seq", "GRU"), ("tf_gru_embedding_mask_last", "GRU"),
                                     ("tf_lstm_masking_run_time_length", "LSTM"),
                                     ("tf_lstm_embedding_mask_last_run_time_length", "LSTM"),
                                     ("tf_keras2_lstm_masking_last", "LSTM"),
                                     ("tf_keras2_lstm_masking_seq_run_time_length", "LSTM")])
def test_masked_loop_dispatch(name: str, op: str, kind: str) -> None:
    """Each kind of mask equal to OpenVINO: prefixes run the fused node (rows of length 0 keep their initial state,
    the sequence output holds a row's last value past its length); where only the last output is read, masks padded
    at the front run a fused node over rows shifted to start with their first kept step; the rest the loop.
    Keras 2 (tf_keras) reads the mask as a sliced Loop input (Slice + Squeeze, made a Gather before the fusion), keeps
    its last output in a Result without back edge copying the masked output state, and unsqueezes its masked per-step
    output."""
    proto = assert_equivalent(FIXTURES / name / "model.xml", _inputs(name, kind), rtol=1e-4)
    front = "_last" in name  # the last output only: front padding fused too
    top = [n for n in proto.graph.node if n.op_type == "If"]
    assert len(top) == 1 and count_loops(proto) == 1
    ifs = [top[0]]
    branches = _branches(top[0])
    if front:
        ifs += [n for n in branches["else_branch"].node if n.op_type == "If"]
        assert len(ifs) == 2
        inner = _branches(ifs[1])
        assert count_ops(inner["then_branch"], op) == 1 and count_loops(inner["then_branch"]) == 0
        loops = inner["else_branch"]
    else:
        loops = branches["else_branch"]
    assert count_ops(branches["then_branch"], op) == 1 and count_loops(branches["then_branch"]) == 0
    assert [n.op_type for n in loops.node if n.op_type == "Loop"] == ["Loop"]
    taken = _taken(proto, ifs, _inputs(name, kind))
    assert taken[0] == (kind in ("prefix", "none"))
    if front and not taken[0]:
        assert taken[1] == (kind == "suffix")


@pytest.mark.parametrize("kind", ["prefix", "suffix", "holes", "none"])
@pytest.mark.parametrize(("name", "loops", "lstms", "backward"), [
    ("tf_lstm_gru_embedding_mask_last", 2, 1, "backward"),
    ("tf_lstm_gru_embedding_mask_last_run_time_length", 2, 1, "backward"),
    ("tf_bidirectional_lstm_gru_embedding_mask_last_run_time_length", 3, 4, "backward"),
    ("tf_keras2_bidirectional_gru_masking_seq", 2, 0, "while_1/")])  # (its SavedModel names no layer)
def test_stacked_masked_layers(name: str, loops: int, lstms: int, backward: str, kind: str) -> None:
    """Embedding(mask_zero=True) -> LSTM(return_sequences) -> GRU, the mask passed on: the GRU's loop reads the
    LSTM's output (the If's), whose length is the IR's static one or, over a run-time length, the one recorded
    for the If's output (the token ids' axis); each loop gets its If (the loop stays in its last else-branch), and
    the fused branches run where the masks are prefixes (and, for the GRU's last output, suffixes).
    With Bidirectional(LSTM(return_sequences)) first, both layers' sequence outputs are zero at masked steps
    (Where(mask, h, 0)): what the fused LSTM's Y holds past a row's length, so masks padded at the front fuse too
    (the node over the rolled rows, its output rolled back); the backward layer reads the flipped sequence, so its
    prefix branch runs for masks padded at the front and its suffix branch for those padded at the end. The GRU reads
    the two joined on their last axis. Keras 2's Bidirectional(GRU(return_sequences)) behind Masking: the same, its
    per-step outputs [1, batch, hidden] each (rolled back without that axis). Equal to OpenVINO for each kind of
    mask."""
    inputs = _inputs(name, kind)
    proto = assert_equivalent(FIXTURES / name / "model.xml", inputs, rtol=1e-4)
    assert count_loops(proto) == loops and count_ops(proto, "LSTM") == lstms
    ifs = [n for n in proto.graph.node if n.op_type == "If"]
    masked = [n for n in ifs if any(count_ops(_branches(n)["then_branch"], op) for op in ("LSTM", "GRU"))]
    assert len(masked) == loops
    flipped = [backward in n.name for n in masked]  # the backward layer's loop
    assert _taken(proto, masked, inputs) == [kind in (("suffix", "none") if f else ("prefix", "none")) for f in flipped]
    if any(flipped) and kind == "prefix":  # the backward layer's masks are padded at the front
        backward = masked[flipped.index(True)]
        inner = next(n for n in _branches(backward)["else_branch"].node if n.op_type == "If")
        assert _taken(proto, [inner], inputs) == [True]


def _taken(proto: onnx.ModelProto, ifs: list[onnx.NodeProto], inputs: list[np.ndarray]) -> list[bool]:
    """Whether each of these Ifs takes its then-branch on `inputs` (their conditions as outputs)."""
    probe = onnx.ModelProto()
    probe.CopyFrom(proto)
    probe.graph.output.extend(onnx.helper.make_tensor_value_info(n.input[0], onnx.TensorProto.BOOL, None) for n in ifs)
    return [bool(v.all()) for v in run_onnxruntime(probe, {probe.graph.input[0].name: inputs[0]})[-len(ifs):]]


def _branches(node: onnx.NodeProto) -> dict[str, onnx.GraphProto]:
    return {a.name: a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH}


@pytest.mark.parametrize("name", ["tf_lstm_masking", "tf_lstm_embedding_mask_seq", "tf_gru_embedding_mask_seq",
                                  "tf_lstm_embedding_mask_last", "tf_gru_embedding_mask_last",
                                  "tf_lstm_gru_embedding_mask_last", "tf_lstm_embedding_mask_last_run_time_length",
                                  "tf_bidirectional_lstm_gru_embedding_mask_last_run_time_length"])
def test_nothing_left_for_onnxruntime_to_warn_about(name: str, capfd: pytest.CaptureFixture[str]) -> None:
    """A copy of the loop given up (front padding where a per-step output is read) leaves no initializer it read
    behind, nor does a branch whose fused node a later pass rewrote (unused_initializers.py), and no Cast round trip
    of the lengths: onnxruntime warned about all three at every session it made."""
    proto = ir2onnx.convert(FIXTURES / name / "model.xml")
    assert _unread_initializers(proto) == []
    capfd.readouterr()
    options = ort.SessionOptions()
    options.log_severity_level = 2  # warnings
    ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    assert "W:onnxruntime" not in capfd.readouterr().err


def test_loop_given_up_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the rewritten copy does not fuse, the loop stays as it was and nothing made for the attempt (its lengths,
    conditions and their constants) is left in the model."""
    def no_fusion(*_: object) -> None:
        raise NoMatch("no fusion here")

    monkeypatch.setattr(prefix_mask, "fuse_loop", no_fusion)
    proto = ir2onnx.convert(FIXTURES / "tf_lstm_masking" / "model.xml")
    assert count_ops(proto, "If") == 0 and count_loops(proto) == 1
    assert _unread_initializers(proto) == []


def _unread_initializers(proto: onnx.ModelProto) -> list[str]:
    """Initializers of the main graph and of every branch and body that no node reads (a graph's outputs count as
    read)."""
    read = {name for n in all_nodes(proto) for name in n.input}
    graphs = [proto.graph, *(a.g for n in all_nodes(proto) for a in n.attribute if a.type == onnx.AttributeProto.GRAPH)]
    read |= {o.name for g in graphs for o in g.output}
    return [i.name for g in graphs for i in g.initializer if i.name not in read]

"""verify/bisect.py: a pass broken on purpose is found by bisecting the pipeline, with the IR layers it changed;
`convert --check` says so after a failed check."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx_ir as oir
import pytest

from ir2onnx.passes import pipeline
from ir2onnx.passes.rewrite import inherit_meta
from ir2onnx.verify.bisect import bisect_conversion, first_diverging_pass

TI = Path(__file__).resolve().parents[2] / "samples" / "ti_lstm" / "model.xml"
FEED = {"X": np.random.default_rng(0).standard_normal((1, 25, 64)).astype(np.float32),
        "H0": np.zeros((1, 32), np.float32), "C0": np.zeros((1, 32), np.float32)}
CHECK = {"inputs": FEED, "timeout": 60.0}


class BrokenPass(oir.passes.InPlacePass):
    """Scales the recurrent node's output sequence by 1.5: a pass computing something else."""

    def call(self, model: oir.Model) -> oir.passes.PassResult:
        node = next(n for n in model.graph if n.op_type in ("LSTM", "Scan"))
        y = node.outputs[0]
        factor = oir.Value(name="broken_factor", const_value=oir.tensor(np.float32(1.5), name="broken_factor"))
        model.graph.register_initializer(factor)
        mul = inherit_meta(oir.Node("", "Mul", [y, factor], name="broken_mul"), node)
        model.graph.insert_after(node, mul)
        y.replace_all_uses_with(mul.outputs[0])
        mul.replace_input_with(0, y)
        mul.outputs[0].name, mul.outputs[0].dtype = "broken_out", oir.DataType.FLOAT
        return oir.passes.PassResult(model, True)


def _break(monkeypatch: pytest.MonkeyPatch, stage: str, after: str) -> None:
    """BrokenPass runs in `stage`, right after its pass `after`."""
    steps = []
    for step in pipeline.PIPELINE:
        if step.stage.name == stage:
            passes = list(step.stage.passes)
            passes.insert([pipeline.pass_name(m) for m in passes].index(after) + 1, BrokenPass)
            step = pipeline.Step(pipeline.Stage(stage, passes), step.when)
        steps.append(step)
    monkeypatch.setattr(pipeline, "PIPELINE", tuple(steps))


@pytest.mark.parametrize(("stage", "after"), [("lean loops", "CarriedLayoutPass"),
                                              ("clean-up", "RemoveUnusedNodesPass")])
def test_a_broken_pass_is_found_with_the_layers_it_changed(monkeypatch: pytest.MonkeyPatch, stage: str,
                                                           after: str) -> None:
    _break(monkeypatch, stage, after)
    found = bisect_conversion(str(TI), check_options=CHECK)
    assert found is not None
    assert (found.pass_name, found.stage) == ("BrokenPass", stage)
    assert 1 <= found.index <= found.of and found.checks <= 3 + found.of.bit_length()  # a bisection, not a scan
    assert len(found.layers) == 1 and "(TensorIterator, line" in found.layers[0]
    assert "BrokenPass" in found.describe() and found.layers[0] in found.describe()


def test_no_bisection_when_the_conversion_passes_or_the_translation_differs() -> None:
    assert bisect_conversion(str(TI), check_options=CHECK) is None
    calls: list[int | None] = []

    def convert(pass_limit: int | None) -> oir.Model:
        calls.append(pass_limit)
        model = oir.Model(oir.Graph([], [], nodes=[]), ir_version=8)
        model.meta[pipeline.APPLIED] = [("lean loops", "APass"), ("lean loops", "BPass")]
        return model

    assert first_diverging_pass(convert, lambda m: False) is None  # the plain translation fails as well
    assert calls == [None, 0]


def test_convert_check_names_the_broken_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from ir2onnx.cli import EXIT_MISMATCH, run

    _break(monkeypatch, "lean loops", "CarriedLayoutPass")
    np.savez(tmp_path / "in.npz", **FEED)
    report = tmp_path / "r.json"
    code = run(["convert", str(TI), "-o", str(tmp_path / "m.onnx"), "--check", "--inputs", str(tmp_path / "in.npz"),
                "--report", str(report), "-q"])
    said = capsys.readouterr()
    assert code == EXIT_MISMATCH
    assert "the first pass whose output diverges is BrokenPass (stage 'lean loops'" in said.out + said.err
    assert json.loads(report.read_text())["bisection"]["pass"] == "BrokenPass"

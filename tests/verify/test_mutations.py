"""The check catches wrong conversions: correct TensorIterator/Loop conversions pass with the default inputs, and
each way of breaking them (tests/verify/mutations.py) is reported as a mismatch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import onnx
import pytest

import ir2onnx
from tests.utils import count_loops, count_ops, gru_dispatches, save_ir
from tests.verify.models import MODELS
from tests.verify.mutations import MUTATORS, NotApplicable

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 10.0  # a broken loop may never end: the check stops it

# What each model has that can be broken (every other pair is checked to be not applicable below).
_ALL = tuple(MUTATORS)
_FUSED = ("gate_order", "slice_off_by_one", "scan_direction_flipped", "concat_axis_wrong", "trip_count_plus_one",
          "trip_count_minus_one", "outputs_swapped")
APPLICABLE: dict[str, tuple[str, ...]] = {
    "ti_lstm": tuple(k for k in _ALL if k != "condition_negated"),
    "ti_lstm_fused": _FUSED,
    "ti_lstm_dynamic": tuple(k for k in _ALL if k != "condition_negated"),
    "ti_lstm_dynamic_fused": _FUSED,
    "ti_gru_reverse": tuple(k for k in _ALL if k not in ("condition_negated", "outputs_swapped")),
    # its batch is dynamic: the fused GRU is an If on it, the GRU node or a Scan (gru_scan.py), and both are broken
    "ti_gru_reverse_fused": tuple(k for k in _ALL if k not in ("condition_negated", "outputs_swapped")),
    "ti_two_outputs": tuple(k for k in _ALL if k not in ("gate_order", "condition_negated")),
    "loop_trip_input": tuple(k for k in _ALL if k not in ("gate_order", "slice_off_by_one")),
    "loop_lstm_sliced": _ALL,
    "loop_while": ("scan_direction_flipped", "concat_axis_wrong", "back_edge_dropped", "condition_negated"),
    "lstm_sequence": _FUSED,  # its lengths (the time axis, read at run time) are dropped: steps can be miscounted
}
PAIRS = [(m, k) for m, kinds in APPLICABLE.items() for k in kinds]


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, onnx.ModelProto]]:
    cache: dict[str, tuple[Path, onnx.ModelProto]] = {}

    def get(name: str) -> tuple[Path, onnx.ModelProto]:
        if name not in cache:
            make, fuse = MODELS[name]
            xml = save_ir(make(), tmp_path_factory.mktemp(name))
            cache[name] = (xml, ir2onnx.convert(xml, fuse=fuse))
        return cache[name]

    return get  # type: ignore[return-value]


@pytest.mark.parametrize("name", list(MODELS))
def test_correct_conversion_passes(converted, name: str) -> None:  # type: ignore[no-untyped-def]
    xml, proto = converted(name)
    fused = count_ops(proto, "LSTM") + count_ops(proto, "GRU")
    looped = count_loops(proto) - gru_dispatches(proto)  # a GRU on a run-time batch: If(Scan | GRU), gru_scan.py
    if name.endswith("_fused") or name == "lstm_sequence":
        assert fused == 1 and looped == 0, "the recurrent loop is one fused node"
    else:
        assert looped >= 1
    report = ir2onnx.check(xml, proto, timeout=TIMEOUT)
    assert report.passed, report


@pytest.mark.parametrize(("name", "kind"), PAIRS)
def test_broken_conversion_is_caught(converted, name: str, kind: str) -> None:  # type: ignore[no-untyped-def]
    xml, proto = converted(name)
    broken = MUTATORS[kind](proto)
    onnx.checker.check_model(broken)
    report = ir2onnx.check(xml, broken, timeout=TIMEOUT)
    assert not report.passed, f"{kind} on {name} was not caught: {report}"


@pytest.mark.parametrize("name", list(MODELS))
def test_applicability_table(converted, name: str) -> None:  # type: ignore[no-untyped-def]
    """The table above lists exactly the mutations a model admits (none silently left out)."""
    _, proto = converted(name)
    admitted = []
    for kind, mutate in MUTATORS.items():
        try:
            mutate(proto)
        except NotApplicable:
            continue
        admitted.append(kind)
    assert tuple(admitted) == APPLICABLE[name]


def test_every_mutation_is_exercised() -> None:
    assert {k for _, k in PAIRS} == set(MUTATORS)


def test_cli_exit_codes(converted, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`ir2onnx check` exits 0 on the correct model, 1 on a broken one (a loop that never ends: stopped), and
    writes the report."""
    xml, proto = converted("loop_while")
    good, bad = tmp_path / "good.onnx", tmp_path / "bad.onnx"
    onnx.save(proto, good)
    onnx.save(MUTATORS["back_edge_dropped"](proto), bad)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "ir2onnx", "check", str(xml), *args], capture_output=True,
                              check=False, text=True, cwd=ROOT, timeout=300)

    r = run(str(good))
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(str(bad), "--timeout", "5", "--report", str(tmp_path / "r.json"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "did not finish within 5 s" in r.stdout
    import json

    report = json.loads((tmp_path / "r.json").read_text())
    assert report["passed"] is False and "did not finish" in report["failure"]
    assert [i["name"] for i in report["inputs"]] == ["X"] and report["seed"] == 0

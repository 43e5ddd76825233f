"""docs/operators.md is generated from the registry: it must match what the code converts today."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_operators_table_is_current() -> None:
    pytest.importorskip("openvino", reason="the OpenVINO op list comes from the openvino package")
    spec = importlib.util.spec_from_file_location("gen_operators", ROOT / "scripts" / "gen" / "gen_operators.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    text, counts = gen.render()
    assert counts["converted"] > 100
    assert (ROOT / "docs" / "operators.md").read_text() == text, \
        "docs/operators.md is out of date: run python scripts/gen/gen_operators.py"

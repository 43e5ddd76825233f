"""Converter modules are imported on demand through ir2onnx/convert/ops/index.py: it must name, for every registered
type, each module that registers it (else a model would meet "unsupported" for a type we convert)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ops_index_is_current() -> None:
    spec = importlib.util.spec_from_file_location("gen_operators", ROOT / "scripts" / "gen_operators.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert (ROOT / "ir2onnx" / "convert" / "ops" / "index.py").read_text() == gen.render_index(), \
        "ir2onnx/convert/ops/index.py is out of date: run python scripts/gen_operators.py"

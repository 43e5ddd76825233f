"""Where the stored test fixtures are (tests/fixtures: IRs written by OpenVINO's frontends with their inputs and
expected outputs, made by scripts/fixtures/make_*.py), and how a test reads one.

Plain constants and functions, not pytest fixtures: test modules use them at import time (parametrize lists built
from the folder's contents), and pytest discourages importing from conftest.py. Only pathlib and numpy: importing
this module does not need OpenVINO (tests/utils.py skips its importer without it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def fixture_dir(name: str) -> Path:
    """tests/fixtures/<name>: one fixture's folder (model.xml and .bin, inputs.npz, expected.npz)."""
    return FIXTURES / name


def fixture_names(*prefixes: str, having: str | None = None) -> list[str]:
    """The fixtures whose names start with one of `prefixes` (no prefixes: all of them) and, with `having`, whose
    folder holds that file; sorted."""
    return sorted(p.name for p in FIXTURES.iterdir()
                  if (not prefixes or p.name.startswith(prefixes)) and (having is None or (p / having).exists()))


def load_fixture(name: str) -> tuple[Path, list[np.ndarray], list[np.ndarray]]:
    """A fixture's model.xml, its inputs (inputs.npz, in stored order) and the framework's expected outputs
    (expected.npz: arr_0, arr_1, ...)."""
    d = fixture_dir(name)
    inputs, expected = np.load(d / "inputs.npz"), np.load(d / "expected.npz")
    outputs = [expected[f"arr_{i}"] for i in range(len(expected.files))]
    return d / "model.xml", [inputs[n] for n in inputs.files], outputs

"""onnxruntime and onnxruntime-gpu both install the `onnxruntime` package and overwrite each other: the package
metadata never asks for both, and this environment does not hold both."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ir2onnx.verify.onnxruntime_run import installed_distributions

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s\[<>=~!;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_base_requires_no_onnxruntime_and_each_extra_brings_one() -> None:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    extras = project["optional-dependencies"]
    assert not _names(project["dependencies"]) & {"onnxruntime", "onnxruntime-gpu"}
    assert "onnxruntime-gpu" in _names(extras["cuda"]) and "onnxruntime" not in _names(extras["cuda"])
    assert "onnxruntime" in _names(extras["cpu"]) and "onnxruntime-gpu" not in _names(extras["cpu"])
    assert any(r.startswith("onnxruntime-gpu[cuda,cudnn]") for r in extras["cuda"]), \
        "the CUDA and cuDNN libraries come from NVIDIA's wheels"


def test_environment_holds_one_onnxruntime_distribution() -> None:
    found = installed_distributions()
    assert len(found) == 1, f"installed: {found} (both at once shadow each other; reinstall only one)"

"""Running a converted model in the ONNX consumers other than onnxruntime, for the portable stage's tests: OpenVINO's
ONNX frontend and onnx's reference implementation, through the runners of scripts/sweep/portable_sweep.py (which
runs these, onnx2torch, onnxsim and onnxslim over every fixture)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

import numpy as np
import onnx

_SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "sweep" / "portable_sweep.py"


def _load_sweep() -> ModuleType:
    """scripts/sweep/portable_sweep.py as a module (loaded once)."""
    if "portable_sweep" not in sys.modules:
        spec = importlib.util.spec_from_file_location("portable_sweep", _SCRIPT)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["portable_sweep"] = module
        spec.loader.exec_module(module)
    return sys.modules["portable_sweep"]


sweep = _load_sweep()


def assert_read_by(tools: Sequence[str], proto: onnx.ModelProto, feed: Mapping[str, np.ndarray],
                   reference: Sequence[np.ndarray], tmp_path: Path) -> None:
    """Each of `tools` ("openvino", "reference") reads and runs the model on `feed`, and every output equals
    `reference` (OpenVINO's outputs on the IR) within the check's tolerances."""
    path = tmp_path / "portable.onnx"
    onnx.save(proto, str(path))
    for tool in tools:
        result = sweep.run_tool(tool, proto, path, dict(feed), list(reference), 120)
        assert result["status"] == "ok", f"{tool}: {result}"

"""Running the converted model in onnxruntime on CPU or CUDA, and where its nodes ran."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx

from ir2onnx.errors import CheckError
from ir2onnx.verify.worker import ACCURATE_SESSION_CONFIG, PROVIDERS, ort_session, placement_of, run_session

__all__ = ["ACCURATE_SESSION_CONFIG", "PROVIDERS", "cuda_available", "make_session", "placement_of", "run_onnxruntime"]


def installed_distributions() -> list[str]:
    """The onnxruntime distributions installed ("onnxruntime", "onnxruntime-gpu"): both at once overwrite each
    other's files, and which one `import onnxruntime` finds is an accident of installation order."""
    from importlib import metadata

    found = []
    for dist in ("onnxruntime", "onnxruntime-gpu"):
        try:
            metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
        found.append(dist)
    return found


def _conflict_note() -> str:
    if len(installed_distributions()) < 2:
        return ""
    return ("; both onnxruntime and onnxruntime-gpu are installed and shadow each other: pip uninstall -y onnxruntime "
            "onnxruntime-gpu, then pip install \"ir2onnx[cuda]\"")


def require_onnxruntime() -> Any:
    try:
        import onnxruntime as ort
    except ImportError:
        raise CheckError("onnxruntime is not installed: pip install \"ir2onnx[cpu]\" (or \"ir2onnx[cuda]\" for NVIDIA "
                         "GPUs)") from None
    return ort


def cuda_available() -> bool:
    ort = require_onnxruntime()
    return "CUDAExecutionProvider" in ort.get_available_providers()


def cuda_unavailable_reason() -> str:
    ort = require_onnxruntime()
    return ("onnxruntime's CUDA execution provider is not available (pip install \"ir2onnx[cuda]\" on a machine with "
            f"an NVIDIA GPU and its driver); this onnxruntime {ort.__version__} offers "
            f"{', '.join(ort.get_available_providers())}{_conflict_note()}")


def make_session(model: onnx.ModelProto | str, device: str = "cpu", *, record_placement: bool = False) -> Any:
    """An InferenceSession on `device`; fails clearly when CUDA is asked for but not available (never a silent
    CPU run). Its options are the check's: ACCURATE_SESSION_CONFIG (the MatMulNBits fused from compressed weights
    computes in f32, not onnxruntime's default int8 activations)."""
    if device not in PROVIDERS:
        raise CheckError(f"unknown device '{device}' (cpu or cuda)")
    if device == "cuda" and not cuda_available():
        raise CheckError(cuda_unavailable_reason())
    data = model if isinstance(model, str) else model.SerializeToString()
    try:
        return ort_session(data, device, record_placement)
    except RuntimeError as e:
        if device == "cuda" and "CUDA session" in str(e):
            raise CheckError(str(e)) from None
        raise


def run_onnxruntime(model: onnx.ModelProto | str, inputs: Mapping[str, np.ndarray],
                    device: str = "cpu") -> list[np.ndarray]:
    """Outputs in graph output order (in this process; the check runs it in a child process)."""
    return run_session(make_session(model, device), {k: np.asarray(v) for k, v in inputs.items()})

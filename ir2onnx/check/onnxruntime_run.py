"""Running the converted model in onnxruntime on CPU or CUDA."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx

from ir2onnx.errors import CheckError

PROVIDERS = {"cpu": ["CPUExecutionProvider"], "cuda": ["CUDAExecutionProvider", "CPUExecutionProvider"]}


def cuda_available() -> bool:
    import onnxruntime as ort

    return "CUDAExecutionProvider" in ort.get_available_providers()


def make_session(model: onnx.ModelProto | str, device: str = "cpu"):  # type: ignore[no-untyped-def]
    """An InferenceSession on `device`; fails clearly when CUDA is asked for but not available."""
    import onnxruntime as ort

    if device not in PROVIDERS:
        raise CheckError(f"unknown device '{device}' (cpu or cuda)")
    if device == "cuda" and not cuda_available():
        raise CheckError("the CUDA execution provider is not available (install onnxruntime-gpu on a machine with "
                         f"an NVIDIA GPU); onnxruntime offers {ort.get_available_providers()}")
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    data = model if isinstance(model, str) else model.SerializeToString()
    session = ort.InferenceSession(data, opts, providers=PROVIDERS[device])
    if device == "cuda" and "CUDAExecutionProvider" not in session.get_providers():
        raise CheckError("onnxruntime could not create a CUDA session")
    return session


def run_onnxruntime(model: onnx.ModelProto | str, inputs: Mapping[str, np.ndarray],
                    device: str = "cpu") -> list[np.ndarray]:
    """Outputs in graph output order."""
    session = make_session(model, device)
    return [np.asarray(o) for o in session.run(None, dict(inputs))]

"""Writing a framework fixture (shared by make_tf_fixtures.py, make_torch_fixtures.py and make_paddle_fixtures.py).

A fixture is tests/fixtures/<name>/model.{xml,bin} with f32 weights, inputs.npz keyed by the IR's input names and
expected.npz holding the framework's outputs in the IR's output order (arr_0, arr_1, ...).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov


def write_fixture(model: ov.Model, out: Path, inputs: list[np.ndarray], expected: list[np.ndarray],
                  framework: str) -> str:
    """Save the fixture; a one-line report: its size, whether OpenVINO (CPU, f32) agrees with `framework` on it, and
    the IR's op types."""
    out.mkdir(parents=True, exist_ok=True)
    ov.save_model(model, str(out / "model.xml"), compress_to_fp16=False)
    np.savez(out / "inputs.npz", **dict(zip([p.get_any_name() for p in model.inputs], inputs)))
    np.savez(out / "expected.npz", *expected)
    ref = _openvino(out / "model.xml", inputs)
    if isinstance(ref, str):
        agree = f"OpenVINO fails: {ref}"
    else:
        same = len(ref) == len(expected) and all(
            r.shape == e.shape and np.allclose(r, e, rtol=1e-4, atol=1e-5) for r, e in zip(ref, expected))
        agree = f"OpenVINO agrees with {framework}" if same else f"OpenVINO DIFFERS from {framework}"
    types = sorted({op.get_type_name() for op in model.get_ordered_ops()} - {"Parameter", "Result", "Constant"})
    size = sum(f.stat().st_size for f in out.iterdir())
    return f"{size} bytes; {agree}; {', '.join(types)}"


def _openvino(xml: Path, inputs: list[np.ndarray]) -> list[np.ndarray] | str:
    """OpenVINO's outputs, or the last line of its error."""
    core = ov.Core()
    try:
        compiled = core.compile_model(core.read_model(str(xml)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        return list(compiled.create_infer_request().infer(inputs).values())
    except RuntimeError as e:
        return str(e).strip().splitlines()[-1]

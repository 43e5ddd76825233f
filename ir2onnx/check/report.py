"""The result of a check: one row per model output."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class OutputComparison:
    """onnxruntime vs OpenVINO on one output (reference fields are None when openvino was not run)."""

    name: str
    onnx_shape: tuple[int, ...]
    reference_shape: tuple[int, ...] | None
    dtype: str
    max_abs_error: float | None
    max_rel_error: float | None
    passed: bool
    message: str = ""


@dataclass(frozen=True)
class CheckReport:
    """All outputs compared; `reference` says whether OpenVINO ran (else only onnxruntime ran)."""

    outputs: tuple[OutputComparison, ...]
    reference: bool
    device: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outputs)

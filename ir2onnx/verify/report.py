"""The result of a check: one row per model output, the inputs used, and optionally layer by layer."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


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
    quantization_steps: float | None = None  # the largest error in steps of the output's quantization, where it has one


@dataclass(frozen=True)
class InputInfo:
    """One model input as fed to both runtimes; `source` says how its values were chosen."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    source: str


@dataclass(frozen=True)
class LayerComparison:
    """One IR layer output compared with the ONNX value that carries it. `id` is the layer id prefixed with the
    ids of the enclosing TensorIterator/Loop layers (`7/3`)."""

    id: str
    name: str
    type: str
    line: int
    port: int
    onnx_value: str
    comparison: OutputComparison


@dataclass(frozen=True)
class LayerwiseReport:
    """Layers compared in topological order; `body` is the descent into the first diverging loop's body."""

    scope: str  # "" for the main graph, else the loop layer's id path
    layers: tuple[LayerComparison, ...]
    body: LayerwiseReport | None = None
    notes: tuple[str, ...] = ()

    @property
    def first_divergence(self) -> LayerComparison | None:
        return next((lc for lc in self.layers if not lc.comparison.passed), None)

    def innermost_divergence(self) -> LayerComparison | None:
        """The first diverging layer of the deepest body that has one (else of this level)."""
        inner = self.body.innermost_divergence() if self.body is not None else None
        return inner or self.first_divergence


@dataclass(frozen=True)
class Placement:
    """Where onnxruntime put the nodes (main graph and every Loop/Scan/If body)."""

    nodes_per_provider: dict[str, int]
    cpu_nodes: tuple[str, ...]  # "OpType name" of nodes that fell back to the CPU


@dataclass(frozen=True)
class CheckReport:
    """All outputs compared; `reference` says whether OpenVINO ran (else only onnxruntime ran). `failure` is set
    when a runtime failed or ran past its time limit on inputs the other runtime accepted."""

    outputs: tuple[OutputComparison, ...]
    reference: bool
    device: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    inputs: tuple[InputInfo, ...] = ()
    seed: int | None = None
    failure: str | None = None
    placement: Placement | None = None
    layerwise: LayerwiseReport | None = None

    @property
    def passed(self) -> bool:
        return self.failure is None and all(o.passed for o in self.outputs)

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain JSON-ready values."""
        d: dict[str, Any] = {
            "passed": self.passed,
            "reference": "openvino CPU f32" if self.reference else None,
            "device": self.device,
            "failure": self.failure,
            "seed": self.seed,
            "inputs": [asdict(i) for i in self.inputs],
            "outputs": [asdict(o) for o in self.outputs],
            "notes": list(self.notes),
        }
        if self.placement is not None:
            d["placement"] = asdict(self.placement)
        if self.layerwise is not None:
            first = self.layerwise.innermost_divergence()
            d["first_divergence"] = None if first is None else _layer_dict(first)
            d["layerwise"] = _layerwise_dict(self.layerwise)
        return d


def _layer_dict(lc: LayerComparison) -> dict[str, Any]:
    c = lc.comparison
    return {"id": lc.id, "name": lc.name, "type": lc.type, "line": lc.line, "port": lc.port,
            "onnx_value": lc.onnx_value, "passed": c.passed, "max_abs_error": c.max_abs_error,
            "max_rel_error": c.max_rel_error, "onnx_shape": c.onnx_shape, "reference_shape": c.reference_shape,
            "message": c.message}


def _layerwise_dict(lw: LayerwiseReport) -> dict[str, Any]:
    return {"scope": lw.scope, "layers": [_layer_dict(lc) for lc in lw.layers], "notes": list(lw.notes),
            "body": None if lw.body is None else _layerwise_dict(lw.body)}

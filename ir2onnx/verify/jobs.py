"""The pieces of a check run that the whole-model check (runner.py) and the layer-by-layer one (layerwise.py) share:
the ONNX model as a file, the jobs that run each runtime in a child process, and the report from their outputs."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx

from ir2onnx.errors import CheckError
from ir2onnx.markers import STATES
from ir2onnx.verify.compare import compare_output
from ir2onnx.verify.isolate import Job, RunResult, RuntimeFailure, run_jobs
from ir2onnx.verify.quantized import holds_quantizers, output_steps
from ir2onnx.verify.report import CheckReport, OutputComparison, Placement


class OnnxFile:
    """The ONNX model as a file onnxruntime can load (a temporary one for in-memory or edited models)."""

    def __init__(self, model: onnx.ModelProto | str) -> None:
        self._made: list[str] = []
        if isinstance(model, str):
            self.path = model
            self.proto = onnx.load(model, load_external_data=False)
            self._full: onnx.ModelProto | None = None
        else:
            self.proto = model
            self._full = model
            self.path = self.write(model)

    def full(self) -> onnx.ModelProto:
        """The model with its weights (loaded on first use)."""
        if self._full is None:
            self._full = onnx.load(self.path)
        return self._full

    def write(self, model: onnx.ModelProto) -> str:
        fd, path = tempfile.mkstemp(prefix="ir2onnx-check-", suffix=".onnx")
        os.close(fd)
        large = _byte_size(model) > (1 << 31) - (1 << 26)  # protobuf's limit is 2 GiB
        onnx.save_model(model, path, save_as_external_data=large, location=Path(path).name + ".data")
        self._made.append(path)
        return path

    def close(self) -> None:
        for p in self._made:
            for f in (p, p + ".data"):
                if os.path.exists(f):
                    os.unlink(f)


def _byte_size(model: onnx.ModelProto) -> float:
    try:
        return float(model.ByteSize())
    except ValueError:  # over protobuf's limit
        return float("inf")


def ort_job(path: str, feed: Mapping[str, np.ndarray], device: str, timeout: float | None) -> Job:
    return Job("onnxruntime", {"task": "onnxruntime", "model": path, "device": device,
                               "placement": device == "cuda"}, feed, timeout)


def ov_job(xml: str, bin_path: str | None, feed: Mapping[str, np.ndarray], timeout: float | None,
           layers: bool = False, body_path: list[str] | None = None, states: dict | None = None,
           shapes: dict | None = None) -> Job:
    return Job("OpenVINO", {"task": "openvino", "xml": xml, "bin": bin_path, "layers": layers,
                            "body_path": body_path, "states": states, "shapes": shapes}, feed, timeout)


def input_dims(proto: onnx.ModelProto) -> dict[str, list[int | None]]:
    """The ONNX model's input dimensions by input name (None: free). OpenVINO runs the IR reshaped where they fix
    dimensions the IR leaves free (a conversion with input shapes, ir2onnx/input_shapes.py): the IR the model was
    made for."""
    return {vi.name: [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
            for vi in proto.graph.input if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape")}


def model_states(proto: onnx.ModelProto) -> dict:
    """What OpenVINO is told about the model's variables (translate/ops/state.py): the state inputs' variables ("inputs":
    input name -> variable id, set from the feed when given) and the variables whose stored values follow its
    outputs, in the ONNX model's output order ("stored")."""
    meta = {p.key: p.value for p in proto.metadata_props}
    pairs = json.loads(meta[STATES]) if STATES in meta else []
    return {"inputs": {p["input"]: p["variable"] for p in pairs if p["input"]},
            "stored": [p["variable"] for p in pairs if p["output"]]}


REFUSED = "OpenVINO could not run the IR on the check's inputs"


class Refused(CheckError):
    """OpenVINO cannot run the IR on the check's inputs (`failure`: how it failed)."""

    def __init__(self, message: str, failure: RuntimeFailure) -> None:
        super().__init__(message)
        self.failure = failure


def reference_failure(e: RuntimeFailure, notes: list[str], given: bool) -> Refused:
    """OpenVINO cannot run the IR on these inputs: the inputs are at fault, not the conversion."""
    hint = "" if given else " (default inputs; give suitable ones with --inputs)"
    extra = f"; {'; '.join(notes)}" if notes else ""
    return Refused(f"{REFUSED}{hint}: {e.reason}{extra}", e)


def finish(proto: onnx.ModelProto, got: RunResult | RuntimeFailure, ref: RunResult | None,
           notes: list[str], common: dict, rtol: float, atol: float, *,
           ties: list[np.ndarray | None] | None = None, **extra: object) -> CheckReport:
    """The report from both runs' model outputs (the first len(outputs) arrays of each). `ties`: per output, what
    rounding at quantization ties can move it by (tie_slack)."""
    names = [o.name for o in proto.graph.output]
    if isinstance(got, RuntimeFailure):
        return CheckReport((), notes=tuple(notes), failure=f"onnxruntime {got.reason}", **common, **extra)
    placement = None
    if "placement" in got.info:
        p = got.info["placement"]
        placement = Placement(dict(p["nodes_per_provider"]), tuple(p["cpu_nodes"]))
    rows: list[OutputComparison] = []
    refs: list[np.ndarray | None] = list(ref.arrays[: len(names)]) if ref is not None else [None] * len(names)
    ov_names: list[str | None] = list(ref.info.get("output_names") or []) if ref is not None else []
    taken = {i.name for i in proto.graph.input}  # an output computed from an input cannot take its name in ONNX
    steps = output_steps(proto) if holds_quantizers(proto) else {}
    for i, (name, g, r) in enumerate(zip(names, got.arrays[: len(names)], refs)):
        row = compare_output(name, g, r, rtol, atol, scaled=True, step=steps.get(name),
                             ties=ties[i] if ties is not None and i < len(ties) else None)
        if i < len(ov_names) and ov_names[i] not in (None, name) and ov_names[i] not in taken:
            row = replace(row, passed=False, message=f"named '{ov_names[i]}' in OpenVINO" +
                          (f"; {row.message}" if row.message else ""))
        rows.append(row)
    if ref is not None and ref.info.get("reshape_refused"):
        notes = [*notes, ("OpenVINO could not run the IR reshaped to the model's input shapes "
                          f"({ref.info['reshape_refused']}): it ran the IR as it is, on inputs of those shapes")]
    return CheckReport(tuple(rows), notes=tuple(notes), placement=placement, **common, **extra)


def tie_slack(model: onnx.ModelProto, onnx_file: OnnxFile, feed: Mapping[str, np.ndarray], got: RunResult,
              device: str, timeout: float | None) -> list[np.ndarray | None] | None:
    """Per model output, element by element, how far onnxruntime's result moves when the QuantizeLinear inputs near a
    rounding tie round the other way (verify/quantized.py): two more runs of `model` (what `got` ran, with its weights;
    written through `onnx_file`), nudged up and down. None when a nudged run fails."""
    from ir2onnx.verify.quantized import nudged

    runs = run_jobs([ort_job(onnx_file.write(nudged(model, s)), feed, device, timeout) for s in (1, -1)])
    if any(isinstance(r, RuntimeFailure) for r in runs):
        return None
    out: list[np.ndarray | None] = []
    for i, g in enumerate(got.arrays):
        moved = [np.asarray(r.arrays[i]) for r in runs if i < len(r.arrays)]  # type: ignore[union-attr]
        if g.dtype.kind != "f" or any(m.shape != g.shape for m in moved):
            out.append(None)
            continue
        base = g.astype(np.float64)
        out.append(np.max([np.abs(m.astype(np.float64) - base) for m in moved], axis=0))
    return out

"""The check: onnxruntime on the ONNX model vs OpenVINO on the original IR, output by output."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx

from ir2onnx.check.compare import compare_output
from ir2onnx.check.inputs import random_inputs, validate_inputs
from ir2onnx.check.onnxruntime_run import run_onnxruntime
from ir2onnx.check.openvino_ref import openvino_available, run_openvino
from ir2onnx.check.report import CheckReport, OutputComparison


def run_check(xml_path: str, model: onnx.ModelProto | str, *, bin_path: str | None = None,
              inputs: Mapping[str, np.ndarray] | None = None, device: str = "cpu", rtol: float = 1e-4,
              atol: float = 1e-5, seed: int = 0) -> CheckReport:
    proto = onnx.load(model) if isinstance(model, str) else model
    feed = validate_inputs(inputs, proto) if inputs is not None else random_inputs(proto, seed)
    got = run_onnxruntime(proto, feed, device)
    names = [o.name for o in proto.graph.output]
    notes: list[str] = []
    if openvino_available():
        ref: list[np.ndarray | None] = list(run_openvino(xml_path, [feed[i.name] for i in proto.graph.input], bin_path))
        reference = True
    else:
        ref = [None] * len(got)
        reference = False
        notes.append("openvino is not installed: only onnxruntime ran, nothing was compared")
    rows: list[OutputComparison] = []
    for name, g, r in zip(names, got, ref):
        rows.append(compare_output(name, g, r, rtol, atol))
    return CheckReport(tuple(rows), reference, device, tuple(notes))

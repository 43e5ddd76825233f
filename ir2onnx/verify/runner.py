"""The check: onnxruntime on the ONNX model vs OpenVINO on the original IR, output by output (optionally layer by
layer). Each runtime runs in a child process with a time limit."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace

import numpy as np
import onnx

from ir2onnx.errors import CheckError
from ir2onnx.ir import load
from ir2onnx.ir.model import Graph
from ir2onnx.verify.inputs import DefaultInputs, describe, input_aliases, validate_inputs
from ir2onnx.verify.isolate import DEFAULT_TIMEOUT, RuntimeFailure, run_jobs
from ir2onnx.verify.jobs import (
    OnnxFile,
    Refused,
    finish,
    input_dims,
    model_states,
    ort_job,
    ov_job,
    reference_failure,
    tie_slack,
)
from ir2onnx.verify.onnx_edit import equivalent_branch_ifs, forced_branches
from ir2onnx.verify.onnxruntime_run import PROVIDERS, cuda_available, cuda_unavailable_reason, require_onnxruntime
from ir2onnx.verify.openvino_ref import openvino_available
from ir2onnx.verify.quantized import holds_quantizers
from ir2onnx.verify.report import CheckReport


def run_check(xml_path: str, model: onnx.ModelProto | str, *, bin_path: str | None = None,
              inputs: Mapping[str, np.ndarray] | None = None, device: str = "cpu", rtol: float = 1e-4,
              atol: float = 1e-5, seed: int = 0, timeout: float | None = DEFAULT_TIMEOUT,
              layerwise: bool = False) -> CheckReport:
    if device not in PROVIDERS:
        raise CheckError(f"unknown device '{device}' (cpu or cuda)")
    require_onnxruntime()
    if device == "cuda" and not cuda_available():
        raise CheckError(cuda_unavailable_reason())
    if timeout is not None and timeout <= 0:
        raise CheckError(f"the time limit must be positive (got {timeout:g} s)")
    ir_model, weights = load(xml_path, bin_path)
    onnx_file = OnnxFile(model)
    try:
        proto = onnx_file.proto
        notes: list[str] = []
        maker = None
        if inputs is not None:
            feed = validate_inputs(inputs, proto, input_aliases(ir_model))
            infos = describe(feed, "given")
        else:
            maker = DefaultInputs(proto, ir_model, weights, seed)
            feed, infos_list, notes = maker.make()
            infos = infos_list
        reference = openvino_available()
        if not reference:
            notes.append("openvino is not installed: only onnxruntime ran, nothing was compared")
        common = {"reference": reference, "device": device, "inputs": tuple(infos),
                  "seed": None if inputs is not None else seed}
        refused: list[str] = []  # the shapes of the free dimensions OpenVINO refused

        def retries(reason: str) -> Iterator[tuple[dict[str, np.ndarray], list[str], dict, bool]]:
            """Default inputs to try after OpenVINO refused the first ones (`reason`: its message): free dimensions
            of one size, then sizes a search found (DefaultInputs.retries; the flag: searched)."""
            assert maker is not None
            last = [line.strip() for line in reason.splitlines() if line.strip()][-1:]
            why = f" ({last[0]})" if last else ""
            refused.append(maker.free_shapes(feed))
            for feed2, infos2, notes2, searched in maker.retries(feed):
                if searched:
                    notes2.append(f"OpenVINO refused the default inputs{why}; a search of the free dimensions' sizes "
                                  f"found {maker.free_shapes(feed2)}, which it runs (it refused {', '.join(refused)})")
                else:
                    notes2.append("OpenVINO refused default inputs with free dimensions of different sizes"
                                  f"{why}; they are all of one size")
                yield feed2, notes2, {**common, "inputs": tuple(infos2)}, searched
                refused.append(maker.free_shapes(feed2))

        def nothing_runs() -> list[str]:
            """What the search tried, for the error when OpenVINO ran none of the default inputs."""
            assert maker is not None
            if not maker.free:
                return notes
            tried = f"OpenVINO refused the free dimensions' sizes {'; '.join(refused)}" if refused else ""
            kept = [n for n in notes if n not in maker.first_shape_notes] if maker.refusal else notes
            return [*kept, *maker.refusal, *([tried] if tried else []), "give the inputs with --inputs FILE.npz"]

        if layerwise and reference:
            from ir2onnx.verify.layerwise import run_layerwise  # only here: it loads onnx-ir (the layer map)

            def layers(f: Mapping[str, np.ndarray], n: list[str], c: dict) -> CheckReport:
                return run_layerwise(ir_model, onnx_file, f, n, c, given=inputs is not None, rtol=rtol, atol=atol,
                                     timeout=timeout, bin_path=bin_path)

            try:
                return layers(feed, notes, common)
            except Refused as refusal:
                if inputs is not None:
                    raise
                first = refusal.failure
            for *attempt, searched in retries(first.reason):
                if searched and first.timed_out:  # a search of runs that hang would only take long
                    break
                try:
                    return layers(*attempt)
                except Refused as e:
                    if e.failure.timed_out:
                        break
            raise reference_failure(first, nothing_runs(), False)
        ref = run_jobs([ov_job(xml_path, bin_path, feed, timeout, states=model_states(proto),
                                shapes=input_dims(proto))])[0] \
            if reference else None
        if isinstance(ref, RuntimeFailure) and inputs is None:
            first = ref
            for feed2, notes2, common2, searched in retries(ref.reason):
                if searched and first.timed_out:  # a search of runs that hang would only take long
                    break
                ref2 = run_jobs([ov_job(xml_path, bin_path, feed2, timeout, states=model_states(proto),
                                        shapes=input_dims(proto))])[0]
                if not isinstance(ref2, RuntimeFailure):
                    feed, ref, notes, common = feed2, ref2, notes2, common2
                    break
                if ref2.timed_out:
                    break
            if isinstance(ref, RuntimeFailure):
                notes = nothing_runs()
        if isinstance(ref, RuntimeFailure):
            raise reference_failure(ref, notes, inputs is not None)
        if equivalent_branch_ifs(proto.graph):  # both forms, whichever the inputs' batch would pick
            forced = forced_branches(onnx_file.full())
            runs = run_jobs([ort_job(onnx_file.write(m), feed, device, timeout) for _, m in forced])
            notes.append("onnxruntime ran the model twice, its Ifs that choose between two forms of one computation "
                         "by batch size forced to each branch; each output's row is the worse run")
            reports = [finish(proto, got, ref, notes, common, rtol, atol) for got in runs]
            report = _worse(reports, [label for label, _ in forced])
        else:
            got = run_jobs([ort_job(onnx_file.path, feed, device, timeout)])[0]
            ties = tie_slack(onnx_file.full(), onnx_file, feed, got, device, timeout) \
                if reference and holds_quantizers(proto) and not isinstance(got, RuntimeFailure) else None
            if ties is not None:
                notes.append("the model quantizes with QuantizeLinear, which rounds x / scale where OpenVINO rounds "
                             "its own formula: outputs were also judged against how far rounding at ties moves them "
                             "(two more onnxruntime runs, quantizer inputs nudged by 2^-18, and by half the step of a "
                             "convolution's int32 bias where it has one)")
            report = finish(proto, got, ref, notes, common, rtol, atol, ties=ties)
        if reference and not report.passed and report.failure is None:
            low = [note for t, note in (("f16", F16_NOTE), ("bf16", BF16_NOTE)) if _computes_in(ir_model.graph, t)]
            report = replace(report, notes=(*report.notes, *low))
        return report
    finally:
        onnx_file.close()


F16_NOTE = ("the IR computes in f16, which OpenVINO's CPU plugin computes in f32: the model keeps the IR's f16 "
            "arithmetic unless converted with --f16-as-f32 (f16_as_f32=True), which computes as OpenVINO does")


BF16_NOTE = ("the IR computes in bf16, which OpenVINO's CPU plugin runs in its own bf16 kernels (or, on CPUs without "
             "bf16 instructions, in f32 without rounding) and the model as f32 arithmetic rounded to bf16 after every "
             "layer: differences of a few units of bf16's 8-bit precision are expected (--rtol 1e-2)")


def _computes_in(graph: Graph, element_type: str) -> bool:
    """Whether a layer other than a Const produces `element_type` (weights kept in it and converted are not
    computation)."""
    return any(layer.type != "Const" and any(p.element_type is not None and p.element_type.name == element_type
                                             for p in layer.outputs) for layer in graph.walk())


def _worse(reports: list[CheckReport], labels: list[str]) -> CheckReport:
    """One report from runs of the same model and inputs: the first failure, else per output the failing or the
    larger-error row (its message naming the run)."""
    for report, label in zip(reports, labels):
        if report.failure is not None:
            return replace(report, failure=f"{report.failure} (with the {label} forced)")
    rows = []
    for candidates in zip(*(r.outputs for r in reports)):
        pairs = list(zip(candidates, labels))
        row, label = min(pairs, key=lambda p: (p[0].passed, -(p[0].max_abs_error or 0.0)))
        rows.append(row if row.passed else replace(row, message=f"{row.message} (with the {label} forced)"))
    return replace(reports[0], outputs=tuple(rows))

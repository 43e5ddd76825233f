"""Sweep: every sample's and fixture's `--portable` conversion read and run by other ONNX consumers.

    python scripts/sweep/portable_sweep.py [--default] [--filter REGEX] [--tools T,...] [--jobs N] [--timeout S]
                                           [--json OUT.json]

Each IR (samples/**.xml, tests/fixtures/**.xml) is converted with `portable=True` (`--default`: without it, to
measure what the default conversion gives) and run on its stored inputs (a fixture's inputs.npz; the check's
default inputs for a sample) by:

| tool | what it does with the model |
| --- | --- |
| checker | `onnx.checker.check_model(full_check=True)` |
| onnxruntime | runs it (the conversion's own target) |
| openvino | OpenVINO's ONNX frontend: `Core().read_model("model.onnx")`, compiled for its CPU plugin in f32 |
| reference | `onnx.reference.ReferenceEvaluator`, onnx's Python reference implementation |
| onnx2torch | rebuilds it as a `torch.fx.GraphModule` and runs that (when onnx2torch and torch are importable) |
| onnxsim | simplifies it (when onnxsim is importable); onnxruntime runs the result |
| onnxslim | slims it (when onnxslim is importable); onnxruntime runs the result |

Every output is compared with OpenVINO running the IR (f32): within rtol 1e-4 and atol 1e-5 in units of the
output's RMS where that is above 1 (the check's rule), integers and booleans exactly; outputs a quantizer rounds
within 1e-2 of their largest magnitude (QuantizeLinear rounds at ties where OpenVINO rounds its own formula).
A tool ends as `ok`, `fails` (its error's first line, or the outputs that differ), `wrong` (a tool on a model that
it is known to compute wrongly: `reference_defects`, `openvino_defects`) or `n/i` (it says that it implements no
such op or op version: OpenVINO's "No conversion rule found for operations" and recurrent activations, the
reference's "No implementation for operator" and RNN activations, onnx2torch's "Converter is not implemented"; a
form of an op it refuses is a failure). Each IR runs in a worker process; a tool that ends the process is recorded
as a crash of that tool and the worker goes on with the next. Prints one row per IR and the totals per tool.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("checker", "onnxruntime", "openvino", "reference", "onnx2torch", "onnxsim", "onnxslim")
OPTIONAL = {"onnx2torch": "onnx2torch", "onnxsim": "onnxsim", "onnxslim": "onnxslim"}  # tool: module it needs
RTOL, ATOL, QUANTIZED_PEAK = 1e-4, 1e-5, 1e-2


class NotImplementedByTool(Exception):
    """The tool says it implements no such op or form."""


class ToolTimeout(Exception):
    pass


def models() -> list[str]:
    """Every sample's and fixture's IR, relative to the repository root, sorted (not an XML stored without its
    weights: tests/fixtures/spec_example's test writes them)."""
    return sorted(str(p.relative_to(ROOT)) for d in ("samples", "tests/fixtures") for p in (ROOT / d).rglob("*.xml")
                  if p.with_suffix(".bin").exists())


def feed_for(xml: Path, proto: Any) -> dict:
    """The IR's inputs by the ONNX model's input names: the fixture's inputs.npz (keyed by any name OpenVINO
    accepts), else the check's default inputs (chosen from the IR)."""
    import numpy as np

    from ir2onnx.ir import load
    from ir2onnx.verify.inputs import default_inputs, input_aliases, validate_inputs

    ir_model, weights = load(str(xml))
    stored = xml.parent / "inputs.npz"
    if stored.exists():
        with np.load(stored) as z:
            return validate_inputs({k: z[k] for k in z.files}, proto, input_aliases(ir_model))
    return default_inputs(proto, ir_model, weights)[0]


# IRs that OpenVINO's CPU plugin itself computes wrongly (tests/translate/control_flow/test_framework_fixtures.py's
# OPENVINO_WRONG): their reference is the framework's outputs stored beside them (expected.npz)
OPENVINO_WRONG = {"torch_packed_lstm": "OpenVINO ignores an LSTMSequence's lengths on run-time shapes"}


def reference_outputs(xml: Path, proto: Any, feed: Mapping[str, Any]) -> list:
    """OpenVINO's outputs on the IR as the check computes them (f32; f32 -> bf16 -> f32 pairs as the identity;
    variables' stored values after the outputs, in the ONNX model's output order); for an IR of OPENVINO_WRONG, the
    framework's."""
    import numpy as np

    from ir2onnx.verify.jobs import model_states
    from ir2onnx.verify.worker import _run_openvino

    if xml.parent.name in OPENVINO_WRONG:
        with np.load(xml.parent / "expected.npz") as z:
            return [z[f"arr_{i}"] for i in range(len(z.files))]
    return _run_openvino({"xml": str(xml), "states": model_states(proto)}, dict(feed))[1]


def quantized(proto: Any) -> bool:
    def walk(graph: Any) -> bool:
        for n in graph.node:
            if n.op_type == "QuantizeLinear":
                return True
            if any(walk(a.g) for a in n.attribute if a.HasField("g")):
                return True
        return False

    return walk(proto.graph)


def compare(names: Sequence[str], got: Sequence[Any], want: Sequence[Any], peak: float = 0.0) -> list[str]:
    """The outputs that differ (name: why); [] when all agree."""
    import numpy as np

    from ir2onnx.verify.compare import compare_output

    if len(got) != len(want):
        return [f"{len(got)} outputs, OpenVINO {len(want)}"]
    bad = []
    for name, g, w in zip(names, got, want):
        g, w = np.asarray(g), np.asarray(w)
        if g.dtype != w.dtype and not (g.dtype.kind == w.dtype.kind == "U"):
            bad.append(f"{name}: dtype {g.dtype} != {w.dtype}")
            continue
        c = compare_output(name, g, w, RTOL, ATOL, scaled=True, peak_rtol=peak)
        if not c.passed:
            bad.append(f"{name}: {c.message or 'differs'} (max abs {c.max_abs_error:.3g})"
                       if c.max_abs_error is not None else f"{name}: {c.message}, shape {g.shape} != {w.shape}")
    return bad


# --- the tools: each runs the model on `feed` (graph inputs by name) and returns its outputs in graph order ---


def run_checker(proto: Any, path: Path, feed: Mapping[str, Any]) -> None:
    import onnx

    onnx.checker.check_model(proto, full_check=True)


def run_ort(proto: Any, path: Path, feed: Mapping[str, Any]) -> list:
    from ir2onnx.verify.onnxruntime_run import run_onnxruntime

    return run_onnxruntime(proto, feed)


def run_openvino_onnx(proto: Any, path: Path, feed: Mapping[str, Any]) -> list:
    """OpenVINO's ONNX frontend reads the file, its CPU plugin runs it in f32."""
    import numpy as np
    import openvino as ov

    from ir2onnx.verify.worker import F32_CONFIG, from_openvino, to_openvino

    core = ov.Core()
    try:
        model = core.read_model(str(path))
    except Exception as e:
        missing = re.search(r"(?:does not support the following ONNX operations|No conversion rule found for "
                            r"operations):\s*([^\n]*)", str(e))
        if missing:
            raise NotImplementedByTool(f"OpenVINO: no conversion of {missing.group(1).strip()}") from None
        raise
    try:
        compiled = core.compile_model(model, "CPU", F32_CONFIG)
    except Exception as e:
        if "Unsupported activation function" in str(e):  # its LSTM/GRU/RNN cells: sigmoid, tanh and relu only
            raise NotImplementedByTool("OpenVINO: recurrent activations other than sigmoid, tanh, relu") from None
        raise
    request = compiled.create_infer_request()
    by_position = {}
    for k, port in enumerate(compiled.inputs):
        name = next((n for n in port.get_names() if n in feed), None)
        if name is None:
            raise KeyError(f"OpenVINO's input {port.get_names()} is none of the graph inputs")
        by_position[k] = to_openvino(np.asarray(feed[name]))
    request.infer(by_position)
    return [from_openvino(request.get_output_tensor(i)) for i in range(len(compiled.outputs))]


def run_reference(proto: Any, path: Path, feed: Mapping[str, Any]) -> list:
    from onnx.reference import ReferenceEvaluator

    left_out = {i.name: None for i in proto.graph.input if i.type.HasField("optional_type") and i.name not in feed}
    try:  # (a variable's state input left out is None: the first call)
        return list(ReferenceEvaluator(proto).run(None, {**feed, **left_out}))
    except (NotImplementedError, RuntimeError) as e:  # no implementation of the op (or of its version)
        missing = re.search(r"No (?:registered )?implementation for (?:the )?operator '?(\w+)'?.*version (\d+)",
                            str(e))
        if isinstance(e, NotImplementedError) or missing:
            raise NotImplementedByTool(f"reference: no {missing.group(1)}-{missing.group(2)}" if missing
                                       else f"reference: {str(e).splitlines()[0]}") from None
        if "Unknown activation function" in str(e):  # its RNN: Tanh and Sigmoid only
            raise NotImplementedByTool(f"reference: {str(e).splitlines()[0]}") from None
        raise


_DEFAULT_ACTIVATIONS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"]}


def reference_defects(proto: Any) -> list[str]:
    """Where onnx's reference implementation (1.23) computes this valid model wrongly, as checked against onnxruntime
    and OpenVINO: its LSTM and GRU ignore `activations` (and their alpha and beta), `clip` and `sequence_lens`, and
    its Loop joins scan outputs of rank 2 or more with np.vstack (along their first axis) instead of stacking them
    on a new one, as onnx's own shape inference and every runtime do."""
    import onnx

    found: list[str] = []

    def walk(graph: Any) -> None:
        for n in graph.node:
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
            if n.op_type in _DEFAULT_ACTIVATIONS:
                acts = [a.decode() if isinstance(a, bytes) else a for a in attrs.get("activations", [])]
                direction = attrs.get("direction", b"forward")
                acts_default = _DEFAULT_ACTIVATIONS[n.op_type] * (2 if direction == b"bidirectional" else 1)
                if acts and acts != acts_default or "activation_alpha" in attrs or "activation_beta" in attrs:
                    found.append(f"{n.op_type} activations {acts} taken as {acts_default}")
                if "clip" in attrs:
                    found.append(f"{n.op_type} clip ignored")
                if len(n.input) > 4 and n.input[4]:
                    found.append(f"{n.op_type} sequence_lens ignored")
            if n.op_type == "Loop":
                body = attrs["body"]
                carried = len(n.input) - 2
                for out in body.output[1 + carried:]:
                    rank = len(out.type.tensor_type.shape.dim) if out.type.tensor_type.HasField("shape") else None
                    if rank is None or rank >= 2:
                        found.append("Loop scan outputs of rank >= 2 concatenated, not stacked")
                        break
            for a in n.attribute:
                if a.HasField("g"):
                    walk(a.g)

    walk(proto.graph)
    return sorted(set(found))


def openvino_defects(proto: Any) -> list[str]:
    """Where OpenVINO (2026.4) computes this valid model wrongly: its CPU plugin ignores the lengths of an
    LSTM/GRU/RNN sequence on run-time shapes (every row runs every step; README, known limits), which its ONNX
    frontend maps a node with `sequence_lens` to."""
    found: list[str] = []

    def walk(graph: Any) -> None:
        for n in graph.node:
            if n.op_type in ("LSTM", "GRU", "RNN") and len(n.input) > 4 and n.input[4]:
                found.append(f"{n.op_type} sequence_lens on run-time shapes ignored by its CPU plugin")
            if n.op_type == "If" and any(m.op_type in ("LSTM", "GRU", "RNN") for a in n.attribute if a.HasField("g")
                                         for m in a.g.node):
                found.append("an If holding a recurrent node returns values of uninitialised memory (the same model "
                             "with the If's branch inlined, or with every value a model output, is right)")
            for a in n.attribute:
                if a.HasField("g"):
                    walk(a.g)

    walk(proto.graph)
    return sorted(set(found))


def run_onnx2torch(proto: Any, path: Path, feed: Mapping[str, Any]) -> list:
    import numpy as np
    import torch
    from onnx2torch import convert

    try:
        module = convert(proto)
    except NotImplementedError as e:  # no converter for the op: not implemented; for a form of it: a failure
        if "Converter is not implemented" in str(e):
            op = re.search(r"operation_type='(\w+)', version=(\d+)", str(e))
            raise NotImplementedByTool(f"onnx2torch: no {op.group(1)}-{op.group(2)}" if op else str(e)) from None
        raise
    names = [i.name for i in proto.graph.input if i.name in feed]
    with torch.no_grad():
        out = module(*[torch.from_numpy(np.ascontiguousarray(feed[n])) for n in names])
    out = list(out) if isinstance(out, (tuple, list)) else [out]
    return [o.numpy() if isinstance(o, torch.Tensor) else np.asarray(o) for o in out]


def run_onnxsim(proto: Any, path: Path, feed: Mapping[str, Any]) -> list:
    import onnxsim

    simplified, ok = onnxsim.simplify(proto)
    if not ok:
        raise RuntimeError("onnxsim: its own check of the simplified model failed")
    return run_ort(simplified, path, feed)


def run_onnxslim(proto: Any, path: Path, feed: Mapping[str, Any]) -> list:
    import onnxslim

    return run_ort(onnxslim.slim(proto), path, feed)


RUNNERS: dict[str, Callable[[Any, Path, Mapping[str, Any]], Any]] = {
    "checker": run_checker, "onnxruntime": run_ort, "openvino": run_openvino_onnx, "reference": run_reference,
    "onnx2torch": run_onnx2torch, "onnxsim": run_onnxsim, "onnxslim": run_onnxslim,
}


def available(tool: str) -> bool:
    import importlib.util

    return tool not in OPTIONAL or importlib.util.find_spec(OPTIONAL[tool]) is not None


NOISE = re.compile(r"^(Exception from |Check '.*' failed at |FrontEnd API failed|Model wasn't fully|Summary:|-- )")


def first_line(e: BaseException, limit: int = 160) -> str:
    """The error's first informative line (OpenVINO's start with where in its sources they were raised)."""
    lines = [s.strip() for s in str(e).splitlines() if s.strip()]
    line = next((s for s in lines if not NOISE.match(s)), lines[0] if lines else "")
    return f"{type(e).__name__}: {line[:limit]}"


def _alarm(signum: int, frame: Any) -> None:
    raise ToolTimeout()


def run_tool(tool: str, proto: Any, path: Path, feed: Mapping[str, Any], reference: Sequence[Any] | None,
             timeout: int) -> dict:
    """{"status": "ok" | "fails" | "n/i" | "n/a", "reason": ...} of one tool on one converted model (a reference
    failure on a model where the reference is known to compute wrongly is "wrong": see reference_defects)."""
    result = _run_tool(tool, proto, path, feed, reference, timeout)
    if tool == "reference" and result["status"] == "fails" and (defects := reference_defects(proto)):
        return {"status": "wrong", "reason": f"onnx.reference computes it wrongly ({'; '.join(defects)}): "
                                             f"{result['reason']}"}
    if tool == "openvino" and result.get("reason", "").startswith("wrong values") and \
            (defects := openvino_defects(proto)):
        return {"status": "wrong", "reason": f"OpenVINO computes it wrongly ({'; '.join(defects)}): "
                                             f"{result['reason']}"}
    return result


def _run_tool(tool: str, proto: Any, path: Path, feed: Mapping[str, Any], reference: Sequence[Any] | None,
              timeout: int) -> dict:
    import numpy as np

    if not available(tool):
        return {"status": "n/a", "reason": f"{OPTIONAL[tool]} is not installed"}
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        got = RUNNERS[tool](proto, path, feed)
    except NotImplementedByTool as e:
        return {"status": "n/i", "reason": str(e)}
    except ToolTimeout:
        return {"status": "fails", "reason": f"no result within {timeout} s"}
    except Exception as e:  # noqa: BLE001  a tool's failure is its result
        return {"status": "fails", "reason": first_line(e)}
    finally:
        signal.alarm(0)
    if got is None or reference is None:
        return {"status": "ok", "reason": ""}
    names = [o.name for o in proto.graph.output]
    bad = compare(names, [np.asarray(g) for g in got], reference, QUANTIZED_PEAK if quantized(proto) else 0.0)
    return {"status": "fails", "reason": "wrong values: " + "; ".join(bad)[:300]} if bad else {"status": "ok"}


def worker(case: str, tools: Sequence[str], portable: bool, timeout: int) -> None:
    """Convert one IR and run `tools` on it, one JSON line per tool (printed as each ends)."""
    import logging

    import onnx

    import ir2onnx

    logging.disable(logging.WARNING)
    xml = ROOT / case

    def emit(tool: str, result: dict) -> None:
        print(json.dumps({"case": case, "tool": tool, **result}), flush=True)

    try:
        proto = ir2onnx.convert(xml, portable=True) if portable else ir2onnx.convert(xml)
    except Exception as e:  # noqa: BLE001
        for tool in tools:
            emit(tool, {"status": "fails", "reason": f"conversion: {first_line(e)}"})
        return
    graph_inputs = {i.name for i in proto.graph.input}
    feed = {k: v for k, v in feed_for(xml, proto).items() if k in graph_inputs}
    try:
        reference: list | None = reference_outputs(xml, proto, feed)
    except Exception:  # noqa: BLE001  OpenVINO cannot run this IR: judged on reading and running only
        reference = None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        onnx.save(proto, str(path))
        for tool in tools:
            emit(tool, run_tool(tool, proto, path, feed, reference, timeout))


def sweep(cases: Sequence[str], tools: Sequence[str], portable: bool, jobs: int, timeout: int) -> dict:
    """{case: {tool: result}}: each case in a worker process, `jobs` at a time; a worker that dies is restarted with
    the tools after the one it died in (recorded as that tool's crash)."""
    results: dict[str, dict[str, dict]] = {c: {} for c in cases}
    pending = [(c, list(tools)) for c in cases]
    running: list[tuple[subprocess.Popen, str, list[str]]] = []
    flags = [] if portable else ["--default"]

    def finish(p: subprocess.Popen, case: str, todo: list[str]) -> None:
        try:
            out, _ = p.communicate(timeout=timeout * (len(todo) + 1) + 120)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        for line in out.splitlines():
            if line.startswith("{"):
                r = json.loads(line)
                results[case][r.pop("tool")] = r
                r.pop("case")
        left = [t for t in todo if t not in results[case]]
        if left:
            results[case][left[0]] = {"status": "fails", "reason": f"crash: the process ended ({p.returncode})"}
            if left[1:]:
                pending.insert(0, (case, left[1:]))

    while pending or running:
        while pending and len(running) < jobs:
            case, todo = pending.pop(0)
            p = subprocess.Popen([sys.executable, __file__, "--worker", case, "--tools", ",".join(todo),
                                  "--timeout", str(timeout), *flags],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
            running.append((p, case, todo))
        p, case, todo = running.pop(0)
        finish(p, case, todo)
        print(f"  {case}: " + " ".join(f"{t}={results[case].get(t, {}).get('status', '?')}" for t in tools),
              file=sys.stderr, flush=True)
    return results


def short_name(case: str) -> str:
    parts = Path(case).parts
    return parts[-2] if parts[-1] == "model.xml" else str(Path(*parts[-2:]))


def print_table(results: Mapping[str, Mapping[str, dict]], tools: Sequence[str]) -> None:
    marks = {"ok": "ok", "fails": "FAIL", "wrong": "wrong", "n/i": "n/i", "n/a": "-"}
    width = max([len("model")] + [len(short_name(c)) for c in results])
    cols = [max(len(t), 4) for t in tools]
    print(f"{'model':<{width}}  " + "  ".join(f"{t:<{w}}" for t, w in zip(tools, cols)))
    for case, row in results.items():
        print(f"{short_name(case):<{width}}  " + "  ".join(
            f"{marks.get(row.get(t, {}).get('status', ''), '?'):<{w}}" for t, w in zip(tools, cols)))
    for status, title in (("fails", "fails"), ("wrong", "the tool computes a valid model wrongly"),
                          ("n/i", "not implemented")):
        lines = [f"  {short_name(c)} / {t}: {row[t].get('reason', '')}" for c, row in results.items() for t in tools
                 if row.get(t, {}).get("status") == status]
        if lines:
            print(f"\n== {title} ({len(lines)})")
            print("\n".join(lines))
    statuses = ("ok", "fails", "wrong", "n/i", "n/a")
    print(f"\n{'tool':<12}  " + "  ".join(f"{s:>5}" for s in statuses))
    for t in tools:
        c = Counter(row.get(t, {}).get("status") for row in results.values())
        print(f"{t:<12}  " + "  ".join(f"{c[s]:>5}" for s in statuses))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--default", action="store_true", help="the default conversion, not the portable one")
    parser.add_argument("--filter", help="only the IRs whose path matches this regular expression")
    parser.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated, of {', '.join(TOOLS)}")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=300, help="seconds each tool may take on one model")
    parser.add_argument("--json", help="write {model: {tool: result}} there")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    tools = [t for t in args.tools.split(",") if t]
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        parser.error(f"unknown tools {unknown} (of {', '.join(TOOLS)})")
    if args.worker:
        worker(args.worker, tools, not args.default, args.timeout)
        return 0
    cases = [c for c in models() if not args.filter or re.search(args.filter, c)]
    results = sweep(cases, tools, not args.default, args.jobs, args.timeout)
    print_table(results, tools)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One runtime run in its own process (`python worker.py JOB_DIR`), so a check can stop it.

Run as a script, it imports only numpy and the runtime (not the ir2onnx package: starting must be quick).

The job directory holds `job.json` (what to run) and `in.npz` (the inputs); the worker writes `out.npz` and
`out.json` (names of the arrays, extra facts, or `error`). Tasks:

* `onnxruntime`: run an ONNX file on a device; optionally report which execution provider got each node.
* `openvino`: run the IR on OpenVINO's CPU plugin in f32 (an LLM's KV cache too; f32 -> bf16 -> f32 Convert
  pairs as the identity: f32_round_trips); optionally expose every layer's outputs; optionally
  descend into the body of a TensorIterator/Loop (a path of layer names) and run that body alone on the inputs of
  its first iteration, computed from the values OpenVINO gives the loop's inputs.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]  # this package's modules are not top-level modules

import ctypes
import json
import traceback
from pathlib import Path
from typing import Any

import numpy as np

# OpenVINO computing the IR's math: f32, no INT8 shortcuts for FakeQuantize, no quantized activations for compressed
# weights, and the KV cache of a stateful LLM (ReadValue/Assign around attention, which the CPU plugin fuses into its
# own cache) kept in f32: with an f32 inference precision it is f16 otherwise (u8 under the default bf16 one), and
# the state then differs from the IR's f32 math by ~1e-3
F32_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "LP_TRANSFORMS_MODE": False, "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0",
              "KV_CACHE_PRECISION": "f32"}
_SKIP_TYPES = ("Parameter", "Constant", "Result", "Assign")  # an Assign's output is its input; OpenVINO cannot expose it


def _native(dtype: np.dtype) -> bool:
    """Whether `dtype` is numpy's own (not an ml_dtypes type such as bfloat16 or float8, which .npz files and
    onnxruntime's binding do not take; float8_e5m2 even claims numpy's kind 'f')."""
    return dtype.kind in "OU" or (dtype.type.__module__ == "numpy" and dtype.name in np.sctypeDict)


# ---- arrays in and out (ml_dtypes types such as bfloat16 travel as raw bytes with their type name)
def save_arrays(path: Path, arrays: list[np.ndarray]) -> list[str]:
    dtypes = []
    raw = {}
    for i, a in enumerate(arrays):
        a = np.asarray(a)
        dtypes.append(a.dtype.name)
        if not _native(a.dtype):
            a = a.view(f"u{a.dtype.itemsize}")
        raw[f"a{i}"] = a
    np.savez(path, **raw)
    return dtypes


def load_arrays(path: Path, dtypes: list[str]) -> list[np.ndarray]:
    out = []
    with np.load(path, allow_pickle=False) as data:
        for i, name in enumerate(dtypes):
            a = data[f"a{i}"]
            if a.dtype.name != name:
                import ml_dtypes

                a = a.view(getattr(ml_dtypes, name))
            out.append(a)
    return out


# ---- onnxruntime
# CUDA in full f32, as the reference computes: onnxruntime's default TF32 products (10-bit mantissas) would differ
# from it by ~1e-3, a difference of precision and not of the conversion
PROVIDERS: dict[str, list[Any]] = {"cpu": ["CPUExecutionProvider"],
                                   "cuda": [("CUDAExecutionProvider", {"use_tf32": "0"}), "CPUExecutionProvider"]}
# The MatMulNBits onnxruntime fuses from a compressed weight's DequantizeLinear and its MatMul computes in f32
# (accuracy level 1), as the conversion's math is: onnxruntime's default (4) quantizes the activations to int8 (about
# 5e-3 relative error). A user's own session gets that default; docs/performance.md#llm-decoding compares the two.
ACCURATE_SESSION_CONFIG = {"session.qdq_matmulnbits_accuracy_level": "1"}
# onnxruntime >= 1.20 records which execution provider got each node (Loop/Scan/If bodies included)
_RECORD_ASSIGNMENT = "session.record_ep_graph_assignment_info"


def ort_session(model: str | bytes, device: str, record_placement: bool = False, threads: int | None = None) -> Any:
    """An onnxruntime session on `device` (`threads`: its intra-op threads, one inter-op thread); on "cuda" the CUDA
    provider must be in use (else RuntimeError)."""
    import onnxruntime as ort

    if device == "cuda" and hasattr(ort, "preload_dlls"):
        try:  # CUDA and cuDNN from NVIDIA's pip packages (onnxruntime-gpu[cuda,cudnn]) when they are installed
            ort.preload_dlls()
        except Exception:  # noqa: BLE001, S110  system libraries are then used, and a failure is reported below
            pass
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    for key, value in ACCURATE_SESSION_CONFIG.items():
        opts.add_session_config_entry(key, value)
    if threads is not None:
        opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
    if record_placement:
        opts.add_session_config_entry(_RECORD_ASSIGNMENT, "1")
    session = ort.InferenceSession(model, opts, providers=PROVIDERS[device])
    if device == "cuda" and "CUDAExecutionProvider" not in session.get_providers():
        raise RuntimeError("onnxruntime could not create a CUDA session (is the GPU driver, CUDA or cuDNN missing?)")
    return session


# the ONNX types whose arrays onnxruntime's binding neither takes nor returns
_SPECIAL = {"tensor(bfloat16)", "tensor(float8e4m3fn)", "tensor(float8e4m3fnuz)", "tensor(float8e5m2)",
            "tensor(float8e5m2fnuz)"}


def run_session(session: Any, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """`session`'s outputs on `inputs`; bfloat16 and float8 inputs and outputs (ml_dtypes arrays, which the binding
    refuses) go through OrtValues of the ONNX type, their bytes unchanged."""
    import onnxruntime as ort

    types = {a.type for a in (*session.get_inputs(), *session.get_outputs())}
    if not types & _SPECIAL and all(_native(np.asarray(v).dtype) for v in inputs.values() if v is not None):
        return [_strings_as_str(np.asarray(o)) for o in session.run(None, inputs)]
    from onnx import helper

    feed = {}
    for name, v in inputs.items():
        a = np.ascontiguousarray(v).reshape(np.shape(v))  # (ascontiguousarray makes a scalar 1-d)
        feed[name] = ort.OrtValue.ortvalue_from_numpy(a) if _native(a.dtype) else \
            ort.OrtValue.ortvalue_from_numpy_with_onnx_type(a.view(f"u{a.dtype.itemsize}"),
                                                           helper.np_dtype_to_tensor_dtype(a.dtype))
    outs = []
    for o in session.run_with_ort_values(None, feed):
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(o.element_type()))
        if _native(dtype):
            outs.append(_strings_as_str(np.asarray(o.numpy())))
            continue
        raw = (ctypes.c_uint8 * o.tensor_size_in_bytes()).from_address(o.data_ptr())
        outs.append(np.frombuffer(raw, np.uint8).copy().view(dtype).reshape(o.shape()))
    return outs


def _strings_as_str(a: np.ndarray) -> np.ndarray:
    """onnxruntime's string outputs (objects) as numpy strings, as OpenVINO's are read (from_openvino)."""
    return a.astype(str) if a.dtype.kind == "O" else a


def placement_of(session: Any) -> dict[str, Any]:
    """Nodes per execution provider, and the nodes on the CPU ("OpType name"), from onnxruntime's record of its
    assignment (made after its graph optimisations; bodies included)."""
    per: dict[str, int] = {}
    cpu: list[str] = []
    if not hasattr(session, "get_provider_graph_assignment_info"):  # onnxruntime too old to record it
        return {"nodes_per_provider": per, "cpu_nodes": cpu}
    for part in session.get_provider_graph_assignment_info():
        nodes = part.get_nodes()
        per[part.ep_name] = per.get(part.ep_name, 0) + len(nodes)
        if part.ep_name == "CPUExecutionProvider":
            cpu.extend(f"{n.op_type} {n.name}" for n in nodes)
    return {"nodes_per_provider": per, "cpu_nodes": cpu}


def _run_onnxruntime(job: dict[str, Any], inputs: dict[str, np.ndarray]) -> tuple[dict[str, Any], list[np.ndarray]]:
    session = ort_session(job["model"], job["device"], record_placement=job.get("placement", False))
    names = [o.name for o in session.get_outputs()]
    outs = run_session(session, inputs)
    info: dict[str, Any] = {"names": names}
    if job.get("placement"):
        info["placement"] = placement_of(session)
    return info, outs


# ---- OpenVINO
# OpenVINO's Python binding shows these types' tensors as float16 or uint8 arrays of their raw bits, and reads
# ml_dtypes arrays as numbers to convert: they cross as raw bytes
_OV_RAW = {"bf16": "bfloat16", "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}


def to_openvino(a: np.ndarray) -> Any:
    import openvino as ov

    if a.dtype.kind in "OU":
        return ov.Tensor(np.asarray(a, dtype=str))
    ov_type = next((t for t, name in _OV_RAW.items() if name == a.dtype.name), None)
    if ov_type is None:
        return a
    t = ov.Tensor(getattr(ov.Type, ov_type), ov.Shape(list(a.shape)))
    t.data.view(np.uint8).reshape(-1)[:] = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
    return t


def from_openvino(t: Any) -> np.ndarray:
    if t.element_type.get_type_name() == "string":
        return np.asarray(t.str_data, dtype=str).reshape(list(t.shape))
    name = _OV_RAW.get(t.element_type.get_type_name())
    if name is None:
        return np.array(t.data)
    import ml_dtypes

    return np.array(t.data).view(np.uint8).view(getattr(ml_dtypes, name)).reshape(list(t.shape))


def f32_round_trips(model: Any) -> int:
    """Make each f32 -> bf16 -> f32 pair of Converts the identity: the second one reads the f32 value (how many).

    The conversion computes such pairs so (translate/ops/shape.py), as the f32 source model does and as OpenVINO's
    CPU plugin does where it has no bf16 support; on AVX-512 CPUs the plugin rounds there with its own conversion,
    which is not to nearest (it rounds up only where the bit below bf16's last and that last bit are both set)."""
    import openvino as ov

    n = 0
    for op in model.get_ordered_ops():
        if op.get_type_name() != "Convert" or op.get_output_element_type(0) != ov.Type.f32:
            continue
        first = op.input_value(0).get_node()
        if first.get_type_name() == "Convert" and first.get_output_element_type(0) == ov.Type.bf16 and \
                first.input_value(0).get_element_type() == ov.Type.f32:
            op.input(0).replace_source_output(first.input_value(0))
            n += 1
    if n:
        model.validate_nodes_and_infer_types()
    return n


def _infer(core: Any, model: Any, feed: list[np.ndarray], extra: list[Any],
           states: dict[str, Any] | None = None) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Run `model` (inputs by parameter position); also return the values of the output ports in `extra`.
    `states`: "given" (variable id -> value to start from; the others start from their initial values) and "stored"
    (variable ids whose values after the run follow the outputs, in that order)."""
    import openvino as ov

    n = len(model.outputs)
    consts: dict[int, np.ndarray] = {}
    wanted = []
    for i, port in enumerate(extra):
        node = port.get_node()
        if node.get_type_name() == "Constant":
            consts[i] = from_openvino(node.get_tensor_view())
        else:
            wanted.append((i, port))
    added = model.add_outputs([p for _, p in wanted]) if wanted else []
    positions = [next(j for j, o in enumerate(model.outputs) if o == a) for a in added]
    f32_round_trips(model)  # after exposing the layers: OpenVINO fails to compile a bf16 Convert exposed once unread
    compiled = core.compile_model(model, "CPU", F32_CONFIG)
    request = compiled.create_infer_request()  # fresh request: reused ones keep stale Loop output shapes
    states = states or {}
    variables = {v.name: v for v in request.query_state()}
    for vid, value in (states.get("given") or {}).items():
        given = to_openvino(np.asarray(value))
        variables[vid].state = given if isinstance(given, ov.Tensor) else ov.Tensor(given)
    request.infer([to_openvino(np.asarray(a)) for a in feed])
    values = [from_openvino(request.get_output_tensor(i)) for i in range(len(compiled.outputs))]
    stored = [from_openvino(variables[vid].state) for vid in states.get("stored") or []]
    extra_values: list[np.ndarray] = [np.empty(0)] * len(extra)
    for (i, _), j in zip(wanted, positions):
        extra_values[i] = values[j]
    for i, v in consts.items():
        extra_values[i] = v
    return values[:n] + stored, extra_values

def _layer_ports(model: Any) -> tuple[list[tuple[str, int]], list[Any]]:
    keys, ports = [], []
    for op in model.get_ordered_ops():
        if op.get_type_name() in _SKIP_TYPES:
            continue
        for i in range(op.get_output_size()):
            keys.append((op.get_friendly_name(), i))
            ports.append(op.output(i))
    return keys, ports


def _find_loop(model: Any, name: str) -> Any:
    found = [op for op in model.get_ordered_ops()
             if op.get_friendly_name() == name and op.get_type_name() in ("TensorIterator", "Loop")]
    if len(found) != 1:
        raise RuntimeError(f"no single TensorIterator/Loop named '{name}' in the OpenVINO model")
    return found[0]


def first_iteration_feed(loop: Any, values: list[np.ndarray]) -> list[np.ndarray]:
    """The body parameters' values on the first iteration, from the loop's input values (OpenVINO's CPU plugin
    takes a sliced input's chunks from the start of the axis, or from its end when the stride is negative)."""
    body = loop.get_function()
    params = body.get_parameters()
    feed: list[np.ndarray | None] = [None] * len(params)
    for d in loop.get_input_descriptions():
        v = values[d.input_index]
        if hasattr(d, "part_size"):
            axis = d.axis % v.ndim
            size = v.shape[axis]
            lo = 0 if d.stride > 0 else size - d.part_size
            v = np.take(v, np.arange(lo, lo + d.part_size), axis=axis)
        feed[d.body_parameter_index] = v
    if loop.get_type_name() == "Loop":
        it = loop.get_special_body_ports()[0]
        if it >= 0:
            p = params[it]
            shape = [1] * p.get_partial_shape().rank.get_length()
            feed[it] = np.zeros(shape, dtype=p.get_element_type().to_dtype())
    missing = [params[i].get_friendly_name() for i, v in enumerate(feed) if v is None]
    if missing:
        raise RuntimeError(f"no first-iteration value for body parameter(s) {missing}")
    return feed  # type: ignore[return-value]


def _any_name(port: Any) -> str | None:
    try:
        return str(port.get_any_name())
    except RuntimeError:
        return None


def port_name(port: Any) -> str:
    """An OpenVINO input's name as ir2onnx names the ONNX input (translate/model.py `input_name`): its Parameter's
    name when that is one of its tensor's names, else its tensor's name, else (no names) the Parameter's name."""
    layer = str(port.get_node().get_friendly_name())
    names = port.get_names()
    return layer if layer in names or not names else str(port.get_any_name())


def _reshape(ov: Any, model: Any, shapes: dict[str, list[int | None]]) -> bool:
    """The IR reshaped to the ONNX model's input dimensions where they fix ones the IR leaves free (the model was
    converted for those shapes: `--input`); nothing changes for a model converted without them. Whether it was."""
    new = {}
    for port in model.inputs:
        ps, dims = port.get_partial_shape(), shapes.get(port_name(port))
        if dims is None or (ps.rank.is_static and len(dims) != ps.rank.get_length()):
            continue
        if ps.rank.is_static and not any(d is not None and ps[i].is_dynamic for i, d in enumerate(dims)):
            continue
        new[port] = ov.PartialShape([ov.Dimension(d) if d is not None else
                                     (ps[i] if ps.rank.is_static else ov.Dimension()) for i, d in enumerate(dims)])
    if new:
        model.reshape(new)
    return bool(new)


def _run_openvino(job: dict[str, Any], inputs: dict[str, np.ndarray]) -> tuple[dict[str, Any], list[np.ndarray]]:
    """The IR reshaped to the ONNX model's static input shapes where it has free dimensions; where OpenVINO cannot
    run it so (its CPU plugin fails on some static Loops), the IR as it is, on the same inputs (`reshape_refused`
    says why)."""
    import openvino as ov

    core = ov.Core()

    def read() -> Any:
        return core.read_model(job["xml"], job["bin"]) if job.get("bin") else core.read_model(job["xml"])

    model = read()
    if not _reshape(ov, model, job.get("shapes") or {}):
        return _run_model(core, model, job, inputs)
    try:
        return _run_model(core, model, job, inputs)
    except Exception as e:  # noqa: BLE001  tried again on the IR as it is
        refusal = [line.strip() for line in str(e).splitlines() if line.strip()][-1:] or [type(e).__name__]
    info, outs = _run_model(core, read(), job, inputs)
    info["reshape_refused"] = refusal[0]
    return info, outs


def _run_model(core: Any, model: Any, job: dict[str, Any],
               inputs: dict[str, np.ndarray]) -> tuple[dict[str, Any], list[np.ndarray]]:
    feed = [inputs[port_name(p)] for p in model.inputs]
    info: dict[str, Any] = {}
    body_feeds: list[np.ndarray] = []
    for name in job.get("body_path") or []:
        loop = _find_loop(model, name)
        ports = [loop.input_value(i) for i in range(loop.get_input_size())]
        _, values = _infer(core, model, feed, ports)  # adds outputs to the outer model: not reused
        feed = first_iteration_feed(loop, values)
        model = loop.get_function()
        info["body_parameters"] = [p.get_friendly_name() for p in model.get_parameters()]
        body_feeds = list(feed)
    keys, ports = _layer_ports(model) if job.get("layers") else ([], [])
    state_job = job.get("states") or {}
    states = {"given": {vid: inputs[name] for name, vid in (state_job.get("inputs") or {}).items() if name in inputs},
              "stored": state_job.get("stored") or []}
    names = [_any_name(o) for o in model.outputs]  # before _infer exposes layers: that names unnamed tensors
    outs, layer_values = _infer(core, model, feed, ports, states if not body_feeds else None)
    info["outputs"] = len(outs)
    if not body_feeds:  # the model's own outputs: their names, as OpenVINO gives them (None: it has none)
        info["output_names"] = names
    info["layers"] = [list(k) for k in keys]
    info["body_feeds"] = len(body_feeds)
    return info, outs + layer_values + body_feeds


def main(job_dir: str) -> int:
    d = Path(job_dir)
    job = json.loads((d / "job.json").read_text())
    names = job["input_names"]
    arrays = load_arrays(d / "in.npz", job["input_dtypes"])
    inputs = dict(zip(names, arrays))
    try:
        if job["task"] == "onnxruntime":
            info, outs = _run_onnxruntime(job, inputs)
        else:
            info, outs = _run_openvino(job, inputs)
    except Exception as e:  # noqa: BLE001  the parent reports the runtime's message as the check's result
        (d / "out.json").write_text(json.dumps({"error": f"{type(e).__name__}: {e}",
                                                "traceback": traceback.format_exc()}))
        return 1
    info["dtypes"] = save_arrays(d / "out.npz", outs)
    (d / "out.json").write_text(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

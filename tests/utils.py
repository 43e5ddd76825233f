"""Shared test machinery: build IR with OpenVINO, convert, run both runtimes, compare everything."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

import ir2onnx
from ir2onnx.verify import onnx_edit
from ir2onnx.verify.compare import compare_output
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from ir2onnx.verify.openvino_ref import run_openvino

ov = pytest.importorskip("openvino", reason="openvino is the reference executor for equivalence tests")

RTOL = 1e-5
ATOL = 1e-5


def save_ir(model: Any, directory: Path, name: str = "model") -> Path:
    """Write an ov.Model as IR v11 with f32 weights kept (save_model halves them by default)."""
    xml = directory / f"{name}.xml"
    ov.save_model(model, str(xml), compress_to_fp16=False)
    return xml


def convert_checked(xml: Path, **kwargs: Any) -> onnx.ModelProto:
    """Convert and pass the full ONNX checker."""
    proto = ir2onnx.convert(xml, **kwargs)
    onnx.checker.check_model(proto, full_check=True)
    return proto


def assert_equivalent(
    xml: Path,
    inputs: Sequence[np.ndarray],
    *,
    rtol: float = RTOL,
    atol: float = ATOL,
    proto: onnx.ModelProto | None = None,
    run_on: str = "cpu",
    **convert_kwargs: Any,
) -> onnx.ModelProto:
    """Convert `xml`, then check names, order, shapes, dtypes and values against OpenVINO on the same inputs
    (onnxruntime on the device `run_on`)."""
    if proto is None:
        proto = convert_checked(xml, **convert_kwargs)
    ov_model = ov.Core().read_model(str(xml))
    ov_in = [p.get_names() or {p.get_node().get_friendly_name()} for p in ov_model.inputs]  # each input's names
    ov_out = [p.get_any_name() if p.get_names() else None for p in ov_model.outputs]
    onnx_in = [i.name for i in proto.graph.input]
    onnx_out = [o.name for o in proto.graph.output]
    assert len(onnx_in) == len(ov_in) and all(n in names for n, names in zip(onnx_in, ov_in)), \
        f"input names {onnx_in} are not OpenVINO's {ov_in}"
    for got, want in zip(onnx_out, ov_out):
        if want is not None:
            assert got == want, f"output names {onnx_out} != OpenVINO's {ov_out}"
    assert len(onnx_out) == len(ov_out)
    for out, port in zip(proto.graph.output, ov_model.outputs):
        ps = port.get_partial_shape()
        if ps.rank.is_dynamic:
            continue
        dims = out.type.tensor_type.shape.dim
        assert len(dims) == ps.rank.get_length(), f"{out.name}: rank {len(dims)} != OpenVINO's {ps}"
        for d, ovd in zip(dims, ps):
            if ovd.is_static and d.HasField("dim_value"):
                assert d.dim_value == ovd.get_length(), f"{out.name}: declared dims differ from OpenVINO's {ps}"
    ref = run_openvino(str(xml), list(inputs))
    got = run_onnxruntime(proto, dict(zip(onnx_in, inputs)), run_on)
    for name, g, r in zip(onnx_out, got, ref):
        assert g.dtype == r.dtype or g.dtype.kind == r.dtype.kind == "U", \
            f"{name}: dtype {g.dtype} != OpenVINO's {r.dtype}"
        c = compare_output(name, g, r, rtol, atol)
        assert c.passed, f"{name}: {c.message}; shapes {c.onnx_shape} vs {c.reference_shape}; " \
                         f"max abs {c.max_abs_error}, max rel {c.max_rel_error}\nonnx={g}\nopenvino={r}"
    return proto


def assert_outputs(xml: Path, inputs: Sequence[np.ndarray], expected: Sequence[np.ndarray], *, rtol: float = RTOL,
                   atol: float = ATOL, proto: onnx.ModelProto | None = None) -> onnx.ModelProto:
    """Convert `xml` and compare onnxruntime's outputs with `expected` (for IRs OpenVINO cannot run correctly)."""
    if proto is None:
        proto = convert_checked(xml)
    got = run_onnxruntime(proto, dict(zip([i.name for i in proto.graph.input], inputs)))
    assert len(got) == len(expected)
    for out, g, r in zip(proto.graph.output, got, expected):
        r = np.asarray(r)
        assert g.dtype == r.dtype or g.dtype.kind == r.dtype.kind == "U", \
            f"{out.name}: dtype {g.dtype} != expected {r.dtype}"
        c = compare_output(out.name, g, r, rtol, atol)
        assert c.passed, (f"{out.name}: {c.message}; shapes {c.onnx_shape} vs {c.reference_shape}"
                          f"\nonnx={g}\nexpected={r}")
    return proto


def check_model(model: Any, inputs: Sequence[np.ndarray], tmp_path: Path, **kwargs: Any) -> onnx.ModelProto:
    """Save an ov.Model as IR and assert the conversion is equivalent on `inputs`."""
    return assert_equivalent(save_ir(model, tmp_path), inputs, **kwargs)


def rewritten(proto: onnx.ModelProto, *passes: Any) -> onnx.ModelProto:
    """`proto` after the given ONNX-level passes (classes of ir2onnx/passes), checked by the ONNX checker."""
    import onnx_ir as oir
    model = oir.serde.deserialize_model(proto)
    for make in passes:
        make()(model)
    out = oir.to_proto(model)
    onnx.checker.check_model(out, full_check=True)
    return out


def all_nodes(proto: onnx.ModelProto | onnx.GraphProto) -> list[onnx.NodeProto]:
    """The nodes of the graph and of all its subgraphs."""
    return onnx_edit.all_nodes(proto.graph if isinstance(proto, onnx.ModelProto) else proto)


def count_ops(proto: onnx.ModelProto | onnx.GraphProto, op_type: str) -> int:
    """Nodes of `op_type` in the graph and all subgraphs."""
    return sum(n.op_type == op_type for n in all_nodes(proto))


def _op_types(graph: onnx.GraphProto) -> list[str]:
    """The graph's op types, but for the Reshapes that pass a GRU its W and R (gru_scan.py's _branch_weights)."""
    weights = {w for n in graph.node if n.op_type == "GRU" for w in n.input[1:3]}
    return [n.op_type for n in graph.node if not (n.op_type == "Reshape" and n.output[0] in weights)]


def unguarded(graph: onnx.GraphProto) -> onnx.GraphProto:
    """The graph, or for a GRU/LSTM behind the If that keeps empty inputs from it (passes/empty_inputs.py), its
    then-branch (checked: the If is the graph's last node, or is followed only by gru_scan.py's Squeeze and Transpose
    of its Y; its else-branch has no recurrent node)."""
    nodes = list(graph.node)
    if [n.op_type for n in nodes[-2:]] == ["Squeeze", "Transpose"]:  # gru_scan.py's move of the If's Y
        nodes = nodes[:-2]
    last = nodes[-1] if nodes else None
    if last is None or last.op_type != "If":
        return graph
    branches = {a.name: a.g for a in last.attribute if a.type == onnx.AttributeProto.GRAPH}
    inner = _op_types(branches["then_branch"])
    if inner not in (["GRU"], ["LSTM"]):
        return graph
    assert not {n.op_type for n in branches["else_branch"].node} & {"GRU", "LSTM", "RNN", "Loop", "Scan"}
    return branches["then_branch"]


def gru_dispatches(proto: onnx.ModelProto) -> int:
    """The If nodes of the main graph that run a GRU as a Scan at large batches and as itself below
    (passes/gru_scan.py), each checked: its else-branch the lone GRU node (with the Reshapes of its weights, and the
    Squeeze and Transpose that move its Y where the branches write that), its then-branch one Scan whose body starts with the recurrent Gemm (either
    behind the If that keeps empty inputs from it, where its sizes are not known)."""
    found = 0
    for node in proto.graph.node:
        branches = {a.name: a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH}
        if node.op_type != "If" or _op_types(unguarded(branches["else_branch"])) not in (
                ["GRU"], ["GRU", "Squeeze", "Transpose"]):
            continue
        then = branches["then_branch"]
        guards = [a.g for n in then.node if n.op_type == "If" for a in n.attribute if a.name == "then_branch"]
        scans = [n for g in [then, *guards] for n in g.node if n.op_type == "Scan"]  # (a guarded one: empty_inputs.py)
        assert len(scans) == 1 and count_ops(branches["then_branch"], "GRU") == 0
        assert scans[0].attribute[0].g.node[0].op_type == "Gemm"
        found += 1
    return found


def weight_levels(proto: onnx.ModelProto, op_type: str, inputs: slice) -> list[list[int]]:
    """For each `op_type` node (bodies and branches included), how many graph levels above it each of its `inputs`
    is defined (0: in its own graph). onnxruntime prepacks a weight at most one level up."""
    found: list[list[int]] = []

    def walk(graph: onnx.GraphProto, scopes: list[set[str]]) -> None:
        scopes = [*scopes, {i.name for i in graph.initializer} | {i.name for i in graph.input}
                  | {o for n in graph.node for o in n.output}]
        for n in graph.node:
            if n.op_type == op_type:
                found.append([next(up for up, names in enumerate(reversed(scopes)) if w in names)
                              for w in n.input[inputs]])
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g, scopes)

    walk(proto.graph, [])
    return found


def count_loops(proto: onnx.ModelProto | onnx.GraphProto) -> int:
    """Scan and Loop nodes in the graph and all subgraphs."""
    return count_ops(proto, "Scan") + count_ops(proto, "Loop")


def rng_inputs(shapes: Mapping[str, tuple[tuple[int, ...], Any]] | Sequence[tuple[tuple[int, ...], Any]],
               seed: int = 0) -> list[np.ndarray]:
    """Random arrays: floats ~N(0,1), ints in [-5, 5], bools at random."""
    rng = np.random.default_rng(seed)
    items = shapes.values() if isinstance(shapes, Mapping) else shapes
    out = []
    for shape, dtype in items:
        dt = np.dtype(dtype)
        if dt.kind == "f":
            out.append(rng.standard_normal(shape).astype(dt))
        elif dt.kind == "b":
            out.append(rng.random(shape) > 0.5)
        else:
            lo = 0 if dt.kind == "u" else -5
            out.append(rng.integers(lo, 6, size=shape).astype(dt))
    return out

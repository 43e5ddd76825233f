"""Compute every node in an element type the installed onnxruntime has a CPU kernel for, with the same results.

onnxruntime lacks CPU kernels for many (op, element type) pairs that ONNX allows (Max of int16, Pow of int8, TopK of
uint64, Range of float16, Add of bfloat16, ...): a model using one is valid ONNX, yet cannot run. This pass finds
each such node, bodies included, from the types ONNX shape inference gave its inputs and outputs and the kernel
list onnxruntime reports (`get_all_opkernel_def`; for builds with GPU providers, where asking can crash, the
list of the CPU build shipped in ort_cpu_kernels.json), and computes it in a type that has a kernel, exactly:

* integers are widened to a wider integer (same signedness, or a wider signed type for unsigned values); results are
  cast back, which wraps like the narrow computation (arithmetic modulo 2^n commutes with truncation; reductions
  are exact while the wide type holds the exact sum or product, so they take the widest type onnxruntime has);
* ring operations and bit operations (Add, Sub, Mul, Neg, sums, bitwise ops, data movement) may also use an integer
  of the same width and other signedness: the bits, hence the results modulo 2^n, are the same;
* uint64 in ordering ops (TopK, Max, comparisons, ReduceMax, ArgMax, ...) maps to int64 with the top bit flipped,
  which preserves the order; values are mapped back;
* bfloat16 (and float16 where onnxruntime does not already do it itself) is computed in float32 and rounded once
  at the end, which is how OpenVINO's CPU plugin computes it with f32 inference precision (and exact for +, -, *,
  /, sqrt: float32 has more than twice its precision). onnxruntime computes float16 nodes that have a float32
  kernel in float32 on its own, without rounding between consecutive such nodes: those are left to it (a probe
  session on the node says which);
* float64 ops without a float64 kernel run in float32, as OpenVINO's CPU plugin runs float64 layers;
* booleans go through uint8 where the op only moves or orders values.

Types are those of ONNX inference without type checking, so a node whose schema lacks its type (Sin of bfloat16)
is rewritten the same way: onnxruntime has no kernel for a type the schema lacks.

A node for which no exact form exists (e.g. integer Div of uint64) is left alone and reported (logged, and listed
in `model.meta["ir2onnx.ort_unsupported"]`). Without onnxruntime the pass does nothing: the model stays valid ONNX.

It runs inside convert_ir, not among the optional passes: it is what makes the model run at all, so `--no-optimize`
must not skip it, and it must see the types ONNX inference derived right after translation.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import os
import platform
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import onnx
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_nodes
from ir2onnx.passes.replacing import ReplacingPass

log = logging.getLogger("ir2onnx")

UNSUPPORTED_META = "ir2onnx.ort_unsupported"
DT = oir.DataType

# Ops that only move, select or compare values for equality: any injective map of the values works.
_MOVE = {
    "Identity", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Split", "Slice", "Gather", "GatherElements",
    "GatherND", "Expand", "Tile", "Pad", "Where", "Compress", "DepthToSpace", "SpaceToDepth", "ReverseSequence",
    "Flatten", "Equal", "NonZero", "OneHot", "ScatterND", "ScatterElements", "Trilu", "EyeLike", "CenterCropPad",
}
# Ops that order values: only order-preserving maps.
_ORDER = {
    "Max", "Min", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "TopK", "ReduceMax", "ReduceMin", "ArgMax",
    "ArgMin", "Clip", "MaxPool", "Unique",
}
# Ops whose integer results modulo 2^n depend only on their inputs modulo 2^n.
# (Not the reductions: onnxruntime's integer ReduceSum/ReduceProd saturate instead of wrapping, so they are only
# widened to a type holding the exact result.)
_RING = {
    "Add", "Sub", "Mul", "Neg", "CumSum", "MatMul", "Einsum", "Abs", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
    "BitwiseNot", "Sum",
}
_SCATTER_REDUCTIONS = {"ScatterND", "ScatterElements"}  # with a reduction they compute: ring or order rules
# Reductions that accumulate: onnxruntime's integer sums and products saturate (int64 ones go through double, exact
# below 2^53), so the widest integer type holds the exact result longest (an int16 product of three values is exact
# in int64, of two in int32)
_ACCUMULATING = {"ReduceSum", "ReduceProd", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceMean"}

# f64 falls back to f32 last: OpenVINO's CPU plugin computes f64 layers in f32 too
_FLOAT_WIDER = {DT.FLOAT16: [DT.FLOAT, DT.DOUBLE], DT.BFLOAT16: [DT.FLOAT, DT.DOUBLE], DT.FLOAT: [DT.DOUBLE],
                DT.DOUBLE: [DT.FLOAT]}
_VALUE_WIDER = {
    **_FLOAT_WIDER,
    DT.INT8: [DT.INT16, DT.INT32, DT.INT64], DT.INT16: [DT.INT32, DT.INT64], DT.INT32: [DT.INT64],
    DT.UINT8: [DT.UINT16, DT.INT16, DT.UINT32, DT.INT32, DT.UINT64, DT.INT64],
    DT.UINT16: [DT.UINT32, DT.INT32, DT.UINT64, DT.INT64], DT.UINT32: [DT.UINT64, DT.INT64],
}
_BOOL_WIDER = {DT.BOOL: [DT.UINT8, DT.INT32, DT.INT64]}
# integer types whose values modulo 2^n are kept by sign- or zero-extension to a wider type and truncation
_MODULAR = {
    DT.INT8: [DT.INT16, DT.INT32, DT.INT64, DT.UINT8, DT.UINT16, DT.UINT32, DT.UINT64],
    DT.UINT8: [DT.UINT16, DT.INT16, DT.UINT32, DT.INT32, DT.UINT64, DT.INT64, DT.INT8],
    DT.INT16: [DT.INT32, DT.INT64, DT.UINT16, DT.UINT32, DT.UINT64],
    DT.UINT16: [DT.UINT32, DT.INT32, DT.UINT64, DT.INT64, DT.INT16],
    DT.INT32: [DT.INT64, DT.UINT32, DT.UINT64], DT.UINT32: [DT.UINT64, DT.INT64, DT.INT32],
    DT.INT64: [DT.UINT64], DT.UINT64: [DT.INT64],
}
_FLIP = "flip"  # uint64 as int64 with the top bit flipped (order-preserving)


class _Kernel(NamedTuple):
    since: tuple[int, int]
    constraints: dict[str, frozenset[DT]]


# onnxruntime's own list of its kernels (`get_all_opkernel_def`) also creates every provider compiled into the build;
# in onnxruntime-gpu that includes TensorRT, whose creation fails where TensorRT is not installed and then kills
# the process (a null provider factory is used). Only a build with no such provider is asked; any other build has
# the same CPU kernels as the CPU build of its version, whose list is shipped (scripts/gen/gen_ort_kernels.py).
# The shipped list is also used, without asking onnxruntime (its listing took about 0.07 s of every conversion;
# the final validation loads onnxruntime, in a helper process for the command line), where the installed
# onnxruntime is the version and platform it was written from. (A custom build of that version with fewer kernels would then get a node it lacks: the final
# validation session refuses the model with that node's name, it is never computed wrongly.)
_SAFE_PROVIDERS = {"CPUExecutionProvider", "AzureExecutionProvider"}
KERNEL_TABLE = Path(__file__).with_name("ort_cpu_kernels.json")
_VERSION_LINE = re.compile(r'^__version__ = "([^"]+)"', re.MULTILINE)


def kernel_platform() -> str:
    """The platform a CPU build's kernel list belongs to (ARM builds register more f16 kernels, for one)."""
    # os.uname's machine is what platform.machine() reads where there is one (a conversion does not import platform)
    machine = os.uname().machine if hasattr(os, "uname") else platform.machine()
    return f"{sys.platform}-{machine.lower()}"


def installed_onnxruntime_version() -> str | None:
    """The version of the onnxruntime package that `import onnxruntime` would load, read from its files without
    importing it (None without onnxruntime)."""
    try:
        spec = importlib.util.find_spec("onnxruntime")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    try:
        with open(spec.origin, encoding="utf-8") as f:
            found = _VERSION_LINE.search(f.read(4096))
    except OSError:
        return None
    return found.group(1) if found else None


def listed_cpu_kernels() -> list[tuple[str, str, tuple[int, int], dict[str, list[str]]]]:
    """(domain, op, (first, last opset), {type constraint: ["tensor(int16)", ...]}) of the CPU build's kernels."""
    from onnxruntime.capi import _pybind_state as ort_c

    found = [(k.domain, k.op_name, tuple(k.version_range), {n: sorted(k.type_constraints[n])
                                                             for n in sorted(k.type_constraints)})
             for k in ort_c.get_all_opkernel_def() if k.provider == "CPUExecutionProvider"]
    return sorted(found, key=lambda k: (*k[:3], json.dumps(k[3])))


def _shipped_kernels() -> tuple[dict[str, str], dict[tuple[str, str], list[str]]]:
    """The shipped table's header (onnxruntime's version, the platform) and its rows by (domain, op), each row as its
    JSON text: scripts/gen/gen_ort_kernels.py writes one row a line, and a conversion decodes only the rows of the ops
    its model has (decoding all 1,500 took about 5 ms of every conversion)."""
    head, *lines = KERNEL_TABLE.read_text().splitlines()
    header = json.loads(head + "]}")  # {"onnxruntime": ..., "platform": ..., "kernels": [
    del header["kernels"]
    rows: dict[tuple[str, str], list[str]] = {}
    for line in lines:
        if line.startswith('["'):  # ["domain","op",[first,last],{constraints}], (the last line closes the table)
            _, domain, _, op, _ = line.split('"', 4)
            rows.setdefault(_op_key(domain, op), []).append(line.rstrip(","))
    log.debug("onnxruntime's CPU kernels as listed by onnxruntime %s on %s (%s)", header["onnxruntime"],
              header.get("platform"), KERNEL_TABLE)
    return header, rows


def _op_key(domain: str, op: str) -> tuple[str, str]:
    return ("" if domain in ("", "ai.onnx") else domain, op)


def _rows_by_op(rows: Sequence[Sequence]) -> dict[tuple[str, str], list[str]]:
    """Listed kernels (listed_cpu_kernels) as the shipped table holds them."""
    found: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        found.setdefault(_op_key(row[0], row[1]), []).append(json.dumps(list(row)))
    return found


class _KernelIndex:
    """(domain, op) -> onnxruntime's CPU kernels for that op. A list has about 1,500 rows and a model uses a few
    dozen ops: an op's rows are decoded and become `_Kernel`s when the op is first asked for."""

    def __init__(self, rows: dict[tuple[str, str], list[str]]) -> None:
        self._rows = rows  # (domain, op) -> the JSON text of each of its rows
        self._made: dict[tuple[str, str], list[_Kernel]] = {}

    def __contains__(self, key: tuple[str, str]) -> bool:
        return key in self._rows

    def get(self, key: tuple[str, str]) -> list[_Kernel] | None:
        if key not in self._made:
            rows = self._rows.get(key)
            if rows is None:
                return None
            by_name = _types_by_name()
            made = []
            for row in rows:
                _, _, since, constraints = json.loads(row)
                made.append(_Kernel((int(since[0]), int(since[1])),
                                    {name: frozenset(by_name[t] for t in types if t in by_name)
                                     for name, types in constraints.items()}))
            self._made[key] = made
        return self._made[key]


@functools.lru_cache(maxsize=1)
def _cpu_kernels() -> _KernelIndex | None:
    """onnxruntime's CPU kernels by (domain, op), or None without onnxruntime."""
    version = installed_onnxruntime_version()
    header, shipped = _shipped_kernels()
    if version is not None and (version, kernel_platform()) == (header["onnxruntime"], header.get("platform")):
        return _KernelIndex(shipped)
    try:
        from onnxruntime.capi import _pybind_state as ort_c
    except ImportError:
        return None
    return _KernelIndex(_rows_by_op(listed_cpu_kernels()) if set(ort_c.get_available_providers()) <= _SAFE_PROVIDERS
                        else shipped)


@functools.cache
def _types_by_name() -> dict[str, DT]:
    """"tensor(int16)" -> DataType.INT16, as onnxruntime names the types of its type constraints."""
    return {f"tensor({_type_name(t)})": t for t in DT if _type_name(t)}


def _type_name(t: DT) -> str | None:
    try:
        return onnx.helper.tensor_dtype_to_string(int(t)).removeprefix("TensorProto.").lower()
    except (ValueError, KeyError):
        return None


@functools.cache
def _schema(op: str, domain: str, opset: int) -> onnx.defs.OpSchema | None:
    try:
        return onnx.defs.get_schema(op, opset, domain)
    except onnx.defs.SchemaError:
        return None


@functools.cache
def _formals(op: str, opset: int) -> tuple[list[str | None], list[str | None]]:
    """The type constraint each formal input and output of the op's schema is typed by (None: a fixed type). Read
    once per op: onnx's schema accessors build new Python objects at every call (about 20 us a node)."""
    schema = _schema(op, "", opset)
    assert schema is not None
    names = {c.type_param_str for c in schema.type_constraints}
    return ([f.type_str if f.type_str in names else None for f in schema.inputs],
            [f.type_str if f.type_str in names else None for f in schema.outputs])


def _binding(node: oir.Node, opset: int) -> tuple[dict[str, list[tuple[str, int]]], dict[str, DT]] | None:
    """Which inputs/outputs each type constraint binds and the type it has; None when a type is unknown or
    inconsistent. (The node's op has a schema at `opset`.)"""
    ports: dict[str, list[tuple[str, int]]] = {}
    types: dict[str, DT] = {}
    ins, outs = _formals(node.op_type, opset)
    for side, values, formals in (("in", node.inputs, ins), ("out", node.outputs, outs)):
        for i, v in enumerate(values):
            if v is None or not formals:
                continue
            constraint = formals[min(i, len(formals) - 1)]
            if constraint is None:
                continue
            if v.type is None or not isinstance(v.type, oir.TensorType):
                return None
            dt = v.type.dtype
            if types.setdefault(constraint, dt) != dt:
                return None
            ports.setdefault(constraint, []).append((side, i))
    return ports, types


def _matches(kernel: _Kernel, types: dict[str, DT]) -> bool:
    return all(t in kernel.constraints[c] for c, t in types.items() if c in kernel.constraints)


def _candidates(op: str, node: oir.Node, dt: DT) -> list[DT | str]:
    """Types that compute `op` on values of type `dt` exactly, preferred first."""
    cat = op
    if op in _SCATTER_REDUCTIONS:
        attr = node.attributes.get("reduction")
        red = attr.as_string() if attr is not None else "none"
        cat = {"none": "Identity", "add": "Add", "mul": "Mul", "max": "Max", "min": "Min"}.get(red, op)
    out: list[DT | str] = list(_VALUE_WIDER.get(dt, []))
    if cat in _ACCUMULATING and dt not in _FLOAT_WIDER:
        out.reverse()
    if dt == DT.DOUBLE and (cat in _MOVE or cat in _ORDER or cat in _RING):
        out = []  # f32 would merge distinct f64 values
    if cat in _MOVE:
        return out + _BOOL_WIDER.get(dt, []) + [t for t in _MODULAR.get(dt, []) if t not in out]
    if cat in _ORDER:
        return out + _BOOL_WIDER.get(dt, []) + ([_FLIP] if dt == DT.UINT64 else [])
    if cat in _RING:
        return out + [t for t in _MODULAR.get(dt, []) if t not in out]
    return out


def _plan(op: str, node: oir.Node, kernels: list[_Kernel], ports: dict[str, list[tuple[str, int]]],
          types: dict[str, DT]) -> dict[str, DT | str] | None:
    """Constraint -> replacement type: over the kernels, the plan changing the fewest constraints, each to the
    most preferred candidate (the first in `_candidates`)."""
    best: tuple[int, int, dict[str, DT | str]] | None = None
    for k in kernels:
        plan: dict[str, DT | str] = {}
        rank = 0
        for c, t in types.items():
            if c not in k.constraints or t in k.constraints[c]:
                continue
            if not any(side == "in" for side, _ in ports[c]):
                plan = {}
                break  # an output-only type (set by an attribute) cannot be changed from the inputs
            order = _candidates(op, node, t)
            pick = next((w for w in order if (DT.INT64 if w == _FLIP else w) in k.constraints[c]), None)
            if pick is None:
                plan = {}
                break
            plan[c] = pick
            rank += order.index(pick)
        if plan and (best is None or (len(plan), rank) < best[:2]):
            best = (len(plan), rank, plan)
    return best[2] if best else None


class _Rewriter:
    def __init__(self, opset: int) -> None:
        self.opset = opset
        self.replaced: dict[oir.Value, oir.Value] = {}

    def _node(self, op: str, inputs: Sequence[oir.Value], attrs: Sequence[oir.Attr], dtype: DT,
              shape: oir.Shape | None, name: str) -> oir.Node:
        out = oir.Value(name=name, type=oir.TensorType(dtype), shape=shape)
        return oir.Node("", op, list(inputs), list(attrs), outputs=[out], name=name + "_node")

    def _to(self, v: oir.Value, src: DT, dst: DT | str, new: list[oir.Node], base: str) -> oir.Value:
        """`v` (of type src) in the computing type."""
        real = DT.INT64 if dst == _FLIP else dst
        n = self._node("Cast", [v], [oir.AttrInt64("to", int(real))], real, v.shape, f"{base}_in{len(new)}")
        new.append(n)
        if dst == _FLIP:
            return self._flip(n.outputs[0], f"{base}_flip{len(new)}", new)
        return n.outputs[0]

    def _from(self, v: oir.Value, dst: DT, via: DT | str, new: list[oir.Node], base: str) -> oir.Value:
        """`v` (computed in `via`) back in type dst."""
        if via == _FLIP:
            v = self._flip(v, f"{base}_unflip{len(new)}", new)
        n = self._node("Cast", [v], [oir.AttrInt64("to", int(dst))], dst, v.shape, f"{base}_out{len(new)}")
        new.append(n)
        return n.outputs[0]

    def _flip(self, v: oir.Value, name: str, new: list[oir.Node]) -> oir.Value:
        """x xor 2^63 (as an int64 addition of INT64_MIN below opset 18, which wraps the same way)."""
        top = oir.tensor(np.array(np.iinfo(np.int64).min, np.int64))
        new.append(self._node("Constant", [], [oir.AttrTensor("value", top)], DT.INT64, oir.Shape([]), name + "_c"))
        op = "BitwiseXor" if self.opset >= 18 else "Add"
        new.append(self._node(op, [v, new[-1].outputs[0]], [], DT.INT64, v.shape, name))
        return new[-1].outputs[0]

    def rewrite(self, node: oir.Node, ports: dict[str, list[tuple[str, int]]], types: dict[str, DT],
                plan: dict[str, DT | str]) -> None:
        graph = node.graph
        assert graph is not None
        base = (node.name or node.op_type) + "/ort"
        new: list[oir.Node] = []
        change_in: dict[int, tuple[DT, DT | str]] = {}
        change_out: dict[int, tuple[DT, DT | str]] = {}
        for c, w in plan.items():
            for side, i in ports[c]:
                (change_in if side == "in" else change_out)[i] = (types[c], w)
        inputs = [self._to(v, *change_in[i], new, base) if i in change_in and v is not None else v
                  for i, v in enumerate(node.inputs)]
        outs = []
        for i, v in enumerate(node.outputs):
            dt = v.type.dtype if v.type is not None else None
            if i in change_out:
                w = change_out[i][1]
                dt = DT.INT64 if w == _FLIP else w
            outs.append(oir.Value(name=f"{base}_{i}", type=oir.TensorType(dt) if dt is not None else None,
                                 shape=v.shape))
        core = oir.Node(node.domain, node.op_type, inputs, list(node.attributes.values()), outputs=outs,
                       name=node.name, overload=node.overload, version=node.version)
        new.append(core)
        finals = [self._from(o, *change_out[i], new, base) if i in change_out else o for i, o in enumerate(outs)]
        old_outs = list(node.outputs)
        oir.convenience.replace_nodes_and_values(graph, node, [node], new, old_outs, finals)
        self.replaced.update(zip(old_outs, finals))


@functools.lru_cache(maxsize=4096)
def _probe(proto_bytes: bytes) -> bool:
    import onnxruntime as ort

    try:
        ort.InferenceSession(proto_bytes, providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001  no kernel (NOT_IMPLEMENTED) or any other refusal
        return False
    return True


def _session_accepts(node: oir.Node, opset: int) -> bool:
    """Whether onnxruntime runs this node although no kernel lists its types: its CPU provider computes float16
    nodes that have a float32 kernel in float32 itself (dropping the casts between such nodes, so a chain rounds
    once, as OpenVINO does), and expands function ops. Probed on the node alone (cached per signature)."""
    if not all(v is None or (v.type is not None and isinstance(v.type, oir.TensorType))
               for v in (*node.inputs, *node.outputs)):
        return False
    names = [f"i{k}" if v is not None else "" for k, v in enumerate(node.inputs)]
    outs = [f"o{k}" for k in range(len(node.outputs))]
    proto = oir.serde.serialize_node(node)
    del proto.input[:], proto.output[:]
    proto.input.extend(names)
    proto.output.extend(outs)
    proto.name = "probe"

    def info(name: str, v: oir.Value) -> onnx.ValueInfoProto:
        shape = None if v.shape is None else [d if isinstance(d, int) else None for d in v.shape]
        return onnx.helper.make_tensor_value_info(name, int(v.type.dtype), shape)  # type: ignore[union-attr]

    graph = onnx.helper.make_graph([proto], "probe", [info(n, v) for n, v in zip(names, node.inputs) if v is not None],
                                   [info(n, v) for n, v in zip(outs, node.outputs)])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                   ir_version=max(8, onnx.helper.find_min_ir_version_for(
                                       [onnx.helper.make_opsetid("", opset)])))
    return _probe(model.SerializeToString())


def _all_nodes(graph: oir.Graph) -> list[oir.Node]:
    return list(all_nodes(graph))


class OrtTypesPass(ReplacingPass):
    """See the module docstring."""

    def call(self, model: oir.Model) -> oir.passes.PassResult:
        kernels = _cpu_kernels()
        if kernels is None:
            return oir.passes.PassResult(model, modified=False)
        opset = model.opset_imports.get("", 1)
        rw = _Rewriter(opset)
        unsupported: list[str] = []
        for node in _all_nodes(model.graph):
            if node.domain not in ("", "ai.onnx") or any(
                    a.type in (oir.AttributeType.GRAPH, oir.AttributeType.GRAPHS) for a in node.attributes.values()):
                continue
            schema = _schema(node.op_type, "", opset)
            found = kernels.get(("", node.op_type))
            if schema is None or not found:  # no CPU kernel at all: a function onnxruntime expands, or not ours
                continue
            usable = [k for k in found if k.since[0] <= schema.since_version <= k.since[1]]
            bound = _binding(node, opset)
            if not usable or bound is None:
                continue
            ports, types = bound
            if any(_matches(k, types) for k in usable) or _session_accepts(node, opset):
                continue
            plan = _plan(node.op_type, node, usable, ports, types)
            if plan is None:
                what = ", ".join(f"{c}={t.name}" for c, t in types.items())
                unsupported.append(f"{node.op_type} ({node.name}): {what}")
                continue
            rw.rewrite(node, ports, types, plan)
        if unsupported:
            log.warning("onnxruntime has no CPU kernel for %d node(s) and no exact wider form: %s", len(unsupported),
                        "; ".join(unsupported))
        model.meta[UNSUPPORTED_META] = unsupported
        self.replaced = rw.replaced
        return oir.passes.PassResult(model, modified=bool(rw.replaced))

"""Port-map analysis shared by TensorIterator and Loop: classify every body Parameter and Result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import onnx_ir as oir

from ir2onnx.ir.element_types import ElementType
from ir2onnx.ir.model import Body, Layer, PortMapEntry
from ir2onnx.ir.xml_reader import parameter_shape, parameter_type
from ir2onnx.translate.context import LayerContext


class BodyInput(NamedTuple):
    """A body Parameter and where its value comes from."""

    kind: str  # "sliced" | "merged" | "invariant" | "current_iteration"
    param: Layer
    entry: PortMapEntry
    outer: oir.Value | None  # the TI/Loop input value (None for the current iteration)
    back_edge_result: Layer | None = None  # merged: the body Result whose value feeds the next iteration


class BodyOutput(NamedTuple):
    """A TI/Loop output: the body Result it reads and how (concatenated over iterations or last value)."""

    kind: str  # "concat" | "last"
    result: Layer
    entry: PortMapEntry
    index: int  # index among the TI/Loop outputs


@dataclass
class PortMapPlan:
    body: Body
    inputs: list[BodyInput] = field(default_factory=list)
    outputs: list[BodyOutput] = field(default_factory=list)
    condition: Layer | None = None  # Loop: the body Result with the continue flag

    def of_kind(self, kind: str) -> list[BodyInput]:
        return [i for i in self.inputs if i.kind == kind]

    def outputs_of_kind(self, kind: str) -> list[BodyOutput]:
        return [o for o in self.outputs if o.kind == kind]


def analyse(ctx: LayerContext) -> PortMapPlan:
    """Classify the port map as OpenVINO's reader does (inputs and outputs ordered by external_port_id)."""
    layer = ctx.layer
    body = layer.body
    assert body is not None  # validated
    by_id = body.graph.by_id
    back = {be.to_layer: be.from_layer for be in body.back_edges}
    plan = PortMapPlan(body)
    seen: dict[str, PortMapEntry] = {}
    for e in sorted(body.inputs, key=lambda e: e.external_port_id):
        param = by_id[e.internal_layer_id]
        if param.id in seen:
            raise ctx.error(f"body {param.where()} is mapped by two port_map inputs (lines {seen[param.id].line}, {e.line})")
        seen[param.id] = e
        if e.purpose == "current_iteration":
            plan.inputs.append(BodyInput("current_iteration", param, e, None))
            continue
        outer = ctx.inputs[e.external_port_id]
        inner_type, outer_type = param_type(param), ctx.input_type(e.external_port_id)
        if inner_type is not None and inner_type != outer_type:  # OpenVINO's CPU plugin cannot run it either
            raise ctx.error(f"port_map input (line {e.line}) feeds input port {e.external_port_id} "
                            f"({outer_type.name}) to body {param.where()} of type {inner_type.name}")
        if e.sliced:  # a back edge to a sliced Parameter has no effect: OpenVINO feeds the slice every iteration
            plan.inputs.append(BodyInput("sliced", param, e, outer))
        elif param.id in back:
            plan.inputs.append(BodyInput("merged", param, e, outer, by_id[back[param.id]]))
        else:
            plan.inputs.append(BodyInput("invariant", param, e, outer))
    mapped = [o for o in body.outputs if o.external_port_id >= 0 and o.purpose != "execution_condition"]
    for index, e in enumerate(sorted(mapped, key=lambda e: e.external_port_id)):
        plan.outputs.append(BodyOutput("concat" if e.sliced else "last", by_id[e.internal_layer_id], e, index))
    conds = [o for o in body.outputs if o.purpose == "execution_condition"]
    if conds:
        plan.condition = by_id[conds[0].internal_layer_id]
    return plan


def bind_unmapped(ctx: LayerContext, body: Body, bindings: dict[str, oir.Value]) -> None:
    """Give every body Parameter without a port_map input what OpenVINO's CPU plugin feeds it: zeros of its declared
    shape on every iteration (its back edges, if any, are ignored). One that nothing reads gets a value no node uses."""
    mapped = {e.internal_layer_id for e in body.inputs}
    read = {e.from_layer for e in body.graph.edges}
    for p in body.graph.parameters:
        if p.id in mapped:
            continue
        dims, et = param_dims(p), param_type(p)
        if p.id not in read:
            bindings[p.id] = oir.Value(name=ctx.b.names.fresh(f"{ctx.layer.name}/{p.name or p.id}_unused"))
            continue
        if dims is None or None in dims or et is None:  # refused by validation
            raise ctx.error(f"body {p.where()} has no port_map input and no static shape and type")
        bindings[p.id] = ctx.b.const(np.zeros([int(d) for d in dims], dtype=et.numpy))


def param_type(param: Layer) -> ElementType | None:
    return parameter_type(param)


def param_rank(param: Layer) -> int | None:
    shape = parameter_shape(param)
    return None if shape is None else len(shape)


def param_dims(param: Layer) -> list[int | None] | None:
    """A body Parameter's declared shape (Parameter shapes are authoritative in IR; dynamic dims stay unknown)."""
    shape = parameter_shape(param)
    return None if shape is None else list(shape)


def result_rank(result: Layer) -> int:
    return len(result.inputs[0].dims)


def check_chunking(ctx: LayerContext, e: PortMapEntry) -> None:
    """OpenVINO's CPU plugin steps a sliced port by |stride| and needs chunks of exactly that size."""
    if abs(e.stride) != e.part_size:
        raise ctx.error(f"sliced port (line {e.line}) has stride {e.stride} and part_size {e.part_size}: "
                        "OpenVINO executes only |stride| == part_size")


def complete_outputs(ctx: LayerContext, result: list[oir.Value | None]) -> list[oir.Value]:
    """The layer's outputs in port order; a port without a port_map entry is an error."""
    missing = [ctx.layer.outputs[i].id for i, v in enumerate(result) if v is None]
    if missing:
        raise ctx.error(f"output port(s) {missing} have no port_map entry")
    return [v for v in result if v is not None]

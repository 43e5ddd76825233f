"""IR model -> ONNX model: graph inputs/outputs named and ordered as OpenVINO reports them.

The ONNX opset is chosen per model: the lowest (at least MIN_OPSET) at which every layer can be expressed. Converters
state the lowest opset they emit (registry) and record needs known only while translating (LayerContext.
require_opset); a translation that recorded a need above its opset is redone at that opset.
"""

from __future__ import annotations

import functools
import json
import logging

import onnx
import onnx_ir as oir

from ir2onnx.errors import ConversionError, OpsetError
from ir2onnx.ir.element_types import ElementType, legacy_input_type, legacy_output_type
from ir2onnx.ir.model import Graph, IRModel, Layer
from ir2onnx.ir.op_outputs import output_count
from ir2onnx.ir.weights import Weights
from ir2onnx.ir.xml_reader import parameter_shape, parameter_type, split_names
from ir2onnx.markers import STATES
from ir2onnx.passes.analysis.shapes import infer_shapes
from ir2onnx.translate import layer_map
from ir2onnx.translate.builder import GraphBuilder, OpsetNeed, onnx_dtype
from ir2onnx.translate.context import (
    States,
    copy_runtime_dims,
    has_runtime_dims,
    runtime_axes,
    set_value_type,
    value_type,
)
from ir2onnx.translate.graph import Translator, body_output, check_supported, declare_type
from ir2onnx.translate.ops.state import NEXT_SUFFIX
from ir2onnx.translate.pre_process import subtract_means

MIN_OPSET = 17

log = logging.getLogger("ir2onnx")


@functools.lru_cache(maxsize=1)
def newest_opset() -> int:
    """The newest ONNX opset that both the onnx package and the installed onnxruntime support."""
    newest = onnx.defs.onnx_opset_version()
    try:
        import onnxruntime as ort
    except ImportError:
        return newest
    for opset in range(newest, MIN_OPSET, -1):
        x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])
        y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])
        graph = onnx.helper.make_graph([onnx.helper.make_node("Identity", ["x"], ["y"])], "probe", [x], [y])
        probe = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                       ir_version=_ir_version(opset))
        try:
            ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
        except Exception:  # noqa: BLE001, S112  onnxruntime refuses opsets newer than it knows
            continue
        return opset
    return MIN_OPSET


_F8_OUTPUT = {"f8e4m3": oir.DataType.FLOAT8E4M3FN, "f8e5m2": oir.DataType.FLOAT8E5M2}


def input_aliases(p: Layer, legacy: bool = False) -> set[str]:
    """The names OpenVINO gives a Parameter's tensor: its port's names and, in an IR v10 (`legacy`), the layer
    name."""
    return set(p.outputs[0].names if p.outputs else ()) | ({p.name} if legacy else set())


def input_name(p: Layer, legacy: bool = False) -> str:
    """The ONNX name of a Parameter: the layer name (the producer's name for the input) when it is one of the
    tensor's names, else the smallest of them (OpenVINO's `get_any_name()`; an input whose tensor took another
    name too, as where OpenVINO's frontend removed a Cast after it), else the layer name (a port without names)."""
    names = input_aliases(p, legacy)
    return p.name if p.name in names or not names else min(names)


def output_name(graph: Graph, r: Layer, legacy: bool = False) -> str:
    """OpenVINO's name of a model output: Result `output_names`, else the smallest of the producer port's names and,
    in an IR v10 (`legacy`) or when the port has none, the legacy name (the producer's name, with `.index` when it
    has several outputs, declared or not: ir/op_outputs.py)."""
    explicit = split_names(r.data.get("output_names", ""))
    if explicit:
        return min(explicit)
    src = graph.source(r, 0)
    names = set(src.layer.outputs[src.output].names)
    if legacy or not names:
        names.add(src.layer.name if output_count(src.layer) == 1 else f"{src.layer.name}.{src.output}")
    return min(names)


QUANTIZATION = ("exact", "onnx")


def convert_ir(model: IRModel, weights: Weights | None, opset: int | None = None, *,
               quantization: str = "exact") -> oir.Model:
    """Translate a validated IR into an onnx-ir model (initializers are views of the weights).

    `opset=None` chooses the lowest opset >= MIN_OPSET that expresses every layer; a given opset is used as it is,
    and every layer that needs a newer one is listed in one error. The choice and its reason are logged and kept in
    `model.meta["ir2onnx.opset_reason"]`. `quantization`: FakeQuantize layers "exact" (OpenVINO's arithmetic)
    or, where their grid is one, in ONNX's quantized form ("onnx": QuantizeLinear + DequantizeLinear). The passes
    (passes/pipeline.py) run after this."""
    if quantization not in QUANTIZATION:
        raise ConversionError(f"unknown quantization '{quantization}' ({' or '.join(QUANTIZATION)})")
    check_supported(model.graph)
    if opset is not None:
        if not MIN_OPSET <= opset <= newest_opset():
            raise ConversionError(f"opset {opset} is outside the supported range {MIN_OPSET}..{newest_opset()} "
                                  "(the newest that the installed onnx and onnxruntime support)")
        out, needs = _translate(model, weights, opset, forced=True, quantization=quantization)
        if needs:
            raise OpsetError(f"--opset {opset} cannot express {len(needs)} layer(s):", _listing(needs))
        reason = f"opset {opset} as requested"
    else:
        target, needs = MIN_OPSET, []
        while True:
            out, more = _translate(model, weights, target, quantization=quantization)
            if not more:
                break
            needs, target = more, max(n.opset for n in more)
            if target > newest_opset():
                raise OpsetError(f"{len(more)} layer(s) need an ONNX opset newer than {newest_opset()}, the newest "
                                 "that the installed onnxruntime runs:", _listing(more))
        top = [n for n in needs if n.opset == target]
        reason = (f"opset {target}: the lowest that expresses every layer" +
                  (f" ({top[0].where} needs it: {top[0].why}" + (f"; +{len(top) - 1} more" if len(top) > 1 else "")
                   + ")" if top else ""))
    out.meta["ir2onnx.opset_reason"] = reason
    log.info("ONNX %s", reason)
    quantized = out.meta.get("ir2onnx.quantized")
    if quantized:
        log.info("FakeQuantize layers: %s", ", ".join(f"{n} {why}" for why, n in sorted(quantized.items())))
    return out


def _listing(needs: list[OpsetNeed]) -> list[tuple[int, str, str]]:
    seen: dict[tuple[str, str], int] = {}
    for n in needs:
        seen[(n.where, n.why)] = max(n.opset, seen.get((n.where, n.why), 0))
    return [(o, w, why) for (w, why), o in seen.items()]


def _translate(model: IRModel, weights: Weights | None, opset: int, forced: bool = False,
               quantization: str = "exact") -> tuple[oir.Model, list[OpsetNeed]]:
    """Translate at `opset`; also returns what layers recorded as needing a newer opset."""
    g = model.graph
    b = GraphBuilder(opset)
    b.opset_forced = forced
    b.quantization = quantization
    legacy = model.ir_version == 10  # OpenVINO presents such a model's inputs and outputs in other types and names
    in_names = [input_name(p, legacy) for p in g.parameters]
    out_names = [output_name(g, r, legacy) for r in g.results]
    for n in in_names:
        if not b.names.reserve(n):
            raise ConversionError(f"two model inputs share the tensor name '{n}'")
    bindings: dict[str, oir.Value] = {}
    for p, name in zip(g.parameters, in_names):
        et = _parameter_type(p)
        shape = parameter_shape(p)
        if shape is None:
            raise ConversionError(f"{p.where()}: a Parameter of dynamic rank has no ONNX graph-input form "
                                  "(ONNX inputs need a rank); give the IR a static rank")
        dims = [d if d is not None else f"{name}_d{i}" for i, d in enumerate(shape)]
        io_et = legacy_input_type(et) if legacy else et
        v = b.add_input(name, onnx_dtype(io_et), dims)
        set_value_type(v, io_et)
        bindings[p.id] = _cast(b, v, et)
    subtract_means(model, weights, b, bindings)
    wanted = {n for n in out_names if n not in in_names}
    for n in wanted:
        b.names.reserve(n)
    translator = Translator(weights)
    results = translator.translate(g, b, bindings)
    outputs: list[oir.Value] = []
    taken: set[oir.Value] = set()
    for r, name in zip(g.results, out_names):
        v = results[r.id]
        et = value_type(v)
        if legacy and et is not None:
            v = _cast(b, v, legacy_output_type(et))
        elif et is not None and et.name in _F8_OUTPUT:  # held in f32 inside (builder.py), of its own type outside
            b.require_opset(19, f"an output of type {et.name}")
            v = b.cast(v, _F8_OUTPUT[et.name])
        if v in b.inputs and name == v.name and v not in taken:
            outputs.append(v)  # a Parameter returned as it is keeps its name
            taken.add(v)
            continue
        v = body_output(b, v, taken)
        used = {o.name for o in outputs} | set(in_names)
        v.name = name if name not in used else b.names.fresh(name)
        outputs.append(v)
    pairs = _state_outputs(b, g, translator.states, outputs, taken)
    for v in outputs:
        if v not in b.inputs:  # dims (and rank: stale in some IRs) come from ONNX shape inference below
            declare_type(v, value_type(v), None)
    graph = b.build(outputs, model.name or "ir2onnx")
    _drop_unused_initializers(graph)
    out = oir.Model(graph, ir_version=_ir_version(opset), producer_name="ir2onnx")
    out.meta["ir2onnx.quantized"] = dict(b.quantized)
    if pairs:
        out.metadata_props[STATES] = json.dumps(pairs)
    if b.opset_needs:  # translated again at a newer opset, or refused: no shape inference needed
        return out, b.opset_needs
    infer_shapes(out)  # outputs and bodies carry derived, not stale, shapes
    for v, r in zip(outputs, g.results):
        if not has_runtime_dims(v):
            v.shape = _complete_shape(v.shape, r.inputs[0].dims, runtime_axes(v))
    layer_map.attach(out, translator.layer_values)
    return out, b.opset_needs


def _state_outputs(b: GraphBuilder, g: Graph, states: States, outputs: list[oir.Value],
                   taken: set[oir.Value]) -> list[dict[str, str | None]]:
    """Order the state inputs and append the stored values to `outputs` (`<variable id>.next`), variables in the
    XML order of their first ReadValue/Assign layer; returns the variables' input/output name pairs (ops/state.py)."""
    order = [layer.data.get("variable_id", "") for layer in g.layers if layer.type_key in ("readvalue", "assign")]
    variables = [vid for vid in dict.fromkeys(order) if vid in states.inputs or vid in states.outputs]
    state_inputs = [states.inputs[vid] for vid in variables if vid in states.inputs]
    b.inputs[:] = [v for v in b.inputs if v not in state_inputs] + state_inputs
    pairs: list[dict[str, str | None]] = []
    for vid in variables:
        state_in = states.inputs.get(vid)
        pair: dict[str, str | None] = {"variable": vid, "input": state_in.name if state_in else None, "output": None}
        if vid in states.outputs:
            v = body_output(b, states.outputs[vid], taken)
            v.name = b.names.claim(vid + NEXT_SUFFIX)
            outputs.append(v)
            pair["output"] = v.name
        pairs.append(pair)
    return pairs


def _cast(b: GraphBuilder, v: oir.Value, et: ElementType) -> oir.Value:
    """`v` converted to `et` (itself when it has that type already)."""
    if value_type(v) == et:
        return v
    out = b.cast(v, onnx_dtype(et))
    set_value_type(out, et)
    copy_runtime_dims(v, out)
    return out


def _complete_shape(inferred: oir.Shape | None, declared: tuple[int | None, ...],
                    runtime: frozenset[int] = frozenset()) -> oir.Shape:
    """Dims ONNX inference could not derive are taken from the IR's (OpenVINO-inferred) output port when the ranks
    agree, except on `runtime` axes (a Loop's concatenation axis over a run-time count of iterations, where Model
    Optimizer's IRs hold one iteration's size); a rank the inference found always wins over the IR's."""
    if inferred is None:
        return oir.Shape([None if a in runtime else d for a, d in enumerate(declared)])
    if len(inferred) != len(declared):
        return inferred
    dims = [d if isinstance(d, int) or decl is None or a in runtime else decl
            for a, (d, decl) in enumerate(zip(inferred, declared))]
    return oir.Shape(dims)


def _drop_unused_initializers(graph: oir.Graph) -> None:
    """Consts a converter only read at conversion time (e.g. reordered gate weights) are not emitted."""
    for name, v in list(graph.initializers.items()):
        if not v.uses() and not v.is_graph_output():
            del graph.initializers[name]


def _parameter_type(p: Layer) -> ElementType:
    et = parameter_type(p)
    if et is None:
        raise ConversionError(f"{p.where()}: the Parameter has no element type")
    return et


def _ir_version(opset: int) -> int:
    """The lowest ONNX IR version that carries `opset` (widest runtime support)."""
    return max(8, onnx.helper.find_min_ir_version_for([onnx.helper.make_opsetid("", opset)]))

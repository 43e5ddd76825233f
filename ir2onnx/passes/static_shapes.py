"""Shape arithmetic that given input shapes make constant, folded; every value given its static shape.

Runs only when input shapes were given (`--input NAME[1,3,224,224]`, ir2onnx/input_shapes.py): the graph inputs are
static, and what the translation computes from them at run time (an OpenVINO ShapeOf -> Gather -> Concat -> Reshape
chain, a special-zero Reshape's -1 worked out OpenVINO's way) is a constant. Runtimes that compile a model ahead of
time (TensorRT, mobile runtimes, compilers) want those constants and the static shape of every value.

One round:

1. ONNX shape inference (with data propagation, so that Shape -> Gather -> Concat -> Reshape gives the Reshape's
   static shape) on a copy of the model from which the shapes declared for the main graph's intermediate values are
   cleared: they are derived again from the graph inputs and the weights, never taken from an earlier declaration.
2. In the main graph, in order: a Shape or Size of a value whose inferred shape is static is a constant; a node of
   the default domain whose inputs are all constants, one of them such a folded value (or all of them constants of
   an earlier round, computing integers or booleans), is evaluated: Gather, Concat, Reshape, Unsqueeze, Squeeze,
   Cast, integer Add/Sub/Mul and ReduceProd/ReduceSum in numpy, any other op by onnx's reference implementation
   (the ONNX specification in Python). Outputs over `LIMIT` elements are not folded (an Expand or ConstantOfShape
   of a shape now known stays a node: it would only make the file larger).
3. Readers of a folded value read an initializer instead (a Constant node where it is a graph output); the folded
   nodes and the initializers only they read are removed.
4. An If whose condition is now a constant is replaced by the branch it takes (the translation of an adaptive
   pooling chooses its form at run time from the input's size, for example).

Rounds repeat while something folds (a folded Range or ReduceProd, an inlined branch give inference new static
shapes; an inlined branch may hold the next If), at most
`ROUNDS` times. Loop and Scan bodies are left alone (their values may change shape from one iteration to the next);
what the main graph computes for them is folded. The last round's inference is read back into the model: every value
whose shape is known carries it, graph outputs included.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import onnx
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import NONDETERMINISTIC, is_default_domain, may_hold_graphs, producer
from ir2onnx.passes.analysis.loop_shapes import loop_output_shapes
from ir2onnx.passes.analysis.values import evaluate, literal_array
from ir2onnx.passes.rewrite import all_names, fresh_name, inherit_meta, inline_branch, read_instead, take_place
from ir2onnx.protos import read_inferred, weightless_proto

LIMIT = 1024  # elements of a folded value
ROUNDS = 8
log = logging.getLogger("ir2onnx")

Dims = list[int | str | None]


class FoldStaticShapesPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        modified = False
        loops: dict[str, onnx.ValueInfoProto] = {}  # Loop outputs' shapes (loop_shapes.py), given to inference
        for _ in range(ROUNDS):
            inferred = _infer(model, loops)
            if inferred is None:
                break
            shapes = _dims_by_name(inferred)
            more = loop_output_shapes(inferred, model.opset_imports.get("", 17), loops)
            folded = _fold(model, shapes)
            if not (_inline_constant_ifs(model.graph) or folded or more):
                break
            modified = True
        return oir.passes.PassResult(model, modified=modified)


def _infer(model: oir.Model, loops: dict[str, onnx.ValueInfoProto]) -> onnx.GraphProto | None:
    """ONNX shape inference from the graph inputs, the weights and the Loop outputs' shapes `loops` alone, read back
    into the model; the inferred main graph. None where inference fails (nothing is folded then)."""
    proto = weightless_proto(model, LIMIT * 8)
    _forget_derived(proto.graph)
    outputs = {o.name: o for o in proto.graph.output}
    for name, info in loops.items():
        if name in outputs:
            outputs[name].CopyFrom(info)
        else:
            proto.graph.value_info.append(info)
    try:
        inferred = onnx.shape_inference.infer_shapes(proto, check_type=False, strict_mode=False, data_prop=True)
    except Exception as e:  # noqa: BLE001  best effort: the model is valid without derived shapes
        log.debug("shape inference failed: %s", e)
        return None
    read_inferred(model.graph, inferred.graph)
    return inferred.graph


def _dims_by_name(g: onnx.GraphProto) -> dict[str, Dims]:
    """The graph's value name -> dims (ints where static), where inference gave a shape."""
    return {vi.name: [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
            for vi in (*g.input, *g.value_info, *g.output)
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape")}


def _forget_derived(graph: onnx.GraphProto) -> None:
    """The shapes declared for intermediate values cleared, bodies included: they are derived again from the inputs.
    A body's copy gets the small constants it reads from the main graph (ONNX inference does not look up the values
    of outer constants, such as a body's Reshape targets, and would leave their results unknown)."""
    constants = {t.name: t for t in graph.initializer}
    del graph.value_info[:]
    for node in graph.node:
        for a in node.attribute:
            for body in [a.g] if a.type == onnx.AttributeProto.GRAPH else a.graphs:
                _forget_in_body(body, constants)


def _forget_in_body(graph: onnx.GraphProto, constants: dict[str, onnx.TensorProto]) -> None:
    del graph.value_info[:]
    for out in graph.output:
        if out.type.HasField("tensor_type"):
            out.type.tensor_type.ClearField("shape")
    own = {t.name for t in graph.initializer} | {i.name for i in graph.input}
    own |= {o for n in graph.node for o in n.output}
    read = {name for n in graph.node for name in n.input if name and name not in own and name in constants}
    graph.initializer.extend(constants[name] for name in sorted(read))
    for node in graph.node:
        for a in node.attribute:
            for body in [a.g] if a.type == onnx.AttributeProto.GRAPH else a.graphs:
                _forget_in_body(body, constants)


def _fold(model: oir.Model, shapes: dict[str, Dims]) -> bool:
    """One round of steps 2 and 3 (module doc); whether anything was folded."""
    graph = model.graph
    opset = model.opset_imports.get("", 17)
    folded: dict[oir.Value, np.ndarray] = {}
    nodes: list[oir.Node] = []
    for node in graph:
        if not is_default_domain(node) or node.op_type in _NOT_FOLDED or may_hold_graphs(node):
            continue
        if node.op_type in ("Shape", "Size"):
            arrays = _shape_value(node, shapes)
        elif any(v in folded for v in node.inputs if v is not None) or _integer_arithmetic(node):
            arrays = _evaluate(node, [None if v is None else folded.get(v, _small_constant(v)) for v in node.inputs],
                               opset)
        else:
            continue
        if arrays is None or len(arrays) != len(node.outputs) or any(a.size > LIMIT for a in arrays):
            continue
        folded.update(zip(node.outputs, arrays))
        nodes.append(node)
    if not nodes:
        return False
    names = all_names(graph)
    done = set(nodes)
    for v, array in folded.items():
        if v.is_graph_output():
            _as_constant_node(v, array, graph, names)
        elif any(user not in done for user, _ in v.uses()):
            name, v.name = v.name, None  # (the initializer takes the name: v goes with its node)
            c = oir.Value(name=name or fresh_name(names, "folded"), const_value=oir.Tensor(array))
            c.const_value.name = c.name  # type: ignore[union-attr]
            c.type = oir.TensorType(c.const_value.dtype)  # type: ignore[union-attr]
            c.shape = oir.Shape(array.shape)
            graph.register_initializer(c)
            read_instead(v, c, graph)
    read: set[oir.Value] = set()
    for node in reversed(nodes):
        if not any(o.uses() or o.is_graph_output() for o in node.outputs):
            read.update(v for v in node.inputs if v is not None)
            graph.remove(node, safe=True)
    for v in read:
        if v.name in graph.initializers and graph.initializers[v.name] is v and not v.uses() \
                and not v.is_graph_output():
            del graph.initializers[v.name]
    return True


def _inline_constant_ifs(graph: oir.Graph) -> bool:
    """An If of the main graph whose condition is a constant is the branch it takes: that branch's nodes and
    initializers move before it, and its readers read the branch's outputs."""
    inlined = False
    names = None
    for node in list(graph):
        if node.op_type != "If" or not is_default_domain(node) or not node.inputs:
            continue
        cond = literal_array(node.inputs[0])
        if cond is None or cond.size != 1:
            continue
        branch = node.attributes.get("then_branch" if bool(cond.reshape(-1)[0]) else "else_branch")
        if branch is None:
            continue
        names = all_names(graph) if names is None else names
        inline_branch(node, branch.as_graph(), names, "branch")
        inlined = True
    return inlined


def _integer_arithmetic(node: oir.Node) -> bool:
    """A node computing integers or booleans (sizes, indices, conditions) from constants alone, such as what an
    earlier round or pass left of shape arithmetic: folded too (quantization's nodes keep their form)."""
    return (node.op_type not in _KEPT and bool(node.outputs)
            and all(v.dtype is not None and (v.dtype.is_integer() or v.dtype == oir.DataType.BOOL)
                    for v in node.outputs)
            and all(v is None or v.const_value is not None or producer(v, "Constant") is not None
                    for v in node.inputs))


_KEPT = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"})
_NOT_FOLDED = NONDETERMINISTIC | {"Constant"}  # (a folded graph output is a Constant node: it stays one)


def _shape_value(node: oir.Node, shapes: dict[str, Dims]) -> list[np.ndarray] | None:
    """A Shape's or Size's output where its input's inferred shape is static."""
    x = node.inputs[0] if node.inputs else None
    dims = shapes.get(x.name) if x is not None and x.name else None
    if dims is None or not all(isinstance(d, int) for d in dims):
        return None
    if node.op_type == "Size":
        return [np.array(int(np.prod(dims, dtype=np.int64)), np.int64)]
    start = node.attributes.get("start")
    end = node.attributes.get("end")
    return [np.array(dims[slice(start.as_int() if start is not None else None,
                                end.as_int() if end is not None else None)], np.int64)]


def _small_constant(v: oir.Value) -> np.ndarray | None:
    """An initializer's or a Constant node's value, where it is small enough to fold with."""
    if v.const_value is not None and v.const_value.size > LIMIT:
        return None
    array = literal_array(v)
    return array if array is not None and array.size <= LIMIT else None


def _evaluate(node: oir.Node, inputs: Sequence[np.ndarray | None], opset: int) -> list[np.ndarray] | None:
    """The node's outputs for these constant inputs (the common ops of shape arithmetic in numpy, the others by
    onnx's reference implementation), or None (an input not constant, an op it does not implement, an error)."""
    if any(a is None for a, v in zip(inputs, node.inputs) if v is not None):
        return None
    try:
        common = _common(node, inputs)
    except (ValueError, IndexError, TypeError):
        common = None
    if common is not None:
        return common if _declared_types(node, common) else None
    proto = oir.serde.serialize_node(node)
    names = [f"i{i}" if v is not None else "" for i, v in enumerate(node.inputs)]
    outputs = [f"o{i}" for i in range(len(node.outputs))]
    proto.ClearField("input")
    proto.input.extend(names)
    proto.ClearField("output")
    proto.output.extend(outputs)
    feeds = {n: a for n, a in zip(names, inputs) if n}
    graph = onnx.helper.make_graph(
        [proto], "fold",
        [onnx.helper.make_tensor_value_info(n, onnx.helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in feeds.items()],
        [onnx.helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in outputs])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
    try:
        from onnx.reference import ReferenceEvaluator

        results = ReferenceEvaluator(model).run(None, feeds)
    except Exception as e:  # noqa: BLE001  not folded: the node stays
        log.debug("%s %s not folded: %s", node.op_type, node.name, e)
        return None
    out = [np.asarray(r) for r in results]
    return out if _declared_types(node, out) else None


def _declared_types(node: oir.Node, arrays: Sequence[np.ndarray]) -> bool:
    """Whether the results have the types the model declares for them (else they are left to the runtime)."""
    return all(v.dtype is None or a.dtype == v.dtype.numpy() for a, v in zip(arrays, node.outputs))


def _common(node: oir.Node, x: Sequence[np.ndarray | None]) -> list[np.ndarray] | None:
    """The ops of shape arithmetic on integers in numpy, as ONNX defines them (onnx's reference implementation
    takes a quarter of a second to import); None for anything else."""
    op = node.op_type
    if any(a is not None and a.dtype.kind not in "iub" for a in x):
        return None

    def attr(name: str, default: int) -> int:
        a = node.attributes.get(name)
        return default if a is None else a.as_int()

    if op == "Gather":
        return [np.take(x[0], x[1], axis=attr("axis", 0))]  # type: ignore[arg-type, call-overload]
    if op == "Cast" and oir.DataType(attr("to", 0)).numpy().kind not in "iub":
        return None
    if op in ("Add", "Sub", "Mul") and x[0].dtype != x[1].dtype:  # type: ignore[union-attr]
        return None
    if op == "Squeeze" and (len(x) < 2 or x[1] is None):  # every unit axis
        return [np.squeeze(x[0])]  # type: ignore[arg-type]
    if op in ("Identity", "Concat", "Unsqueeze", "Squeeze", "Cast", "Reshape", "Add", "Sub", "Mul"):
        out = evaluate(node, x)  # (analysis/values.py: the constant evaluation the other passes use)
        return None if out is None else [out]
    if op in ("ReduceProd", "ReduceSum"):  # axes: the second input (ReduceSum; ReduceProd from opset 18) or attribute
        given = node.attributes.get("axes")
        axes = x[1] if len(x) > 1 and x[1] is not None else None if given is None else given.as_ints()
        if axes is None or not len(axes):
            if attr("noop_with_empty_axes", 0):
                return [x[0]]  # type: ignore[list-item]
            axes = range(x[0].ndim)  # type: ignore[union-attr]
        reduce = np.prod if op == "ReduceProd" else np.sum
        return [reduce(x[0], axis=tuple(int(a) for a in axes), keepdims=bool(attr("keepdims", 1)),
                       dtype=x[0].dtype)]  # type: ignore[union-attr]
    return None


def _as_constant_node(v: oir.Value, array: np.ndarray, graph: oir.Graph, names: set[str] | object) -> None:
    """A folded graph output becomes a Constant node's output (of the output's name)."""
    producer = v.producer()
    out = oir.Value(name=fresh_name(names, (v.name or "folded") + "_const"))  # type: ignore[arg-type]
    node = oir.Node("", "Constant", [], [oir.AttrTensor("value", oir.Tensor(array))], outputs=[out],
                    name=fresh_name(names, "folded"))  # type: ignore[arg-type]
    inherit_meta(node, producer)
    graph.insert_before(producer, node)  # type: ignore[arg-type]
    take_place(v, out)


__all__ = ["LIMIT", "FoldStaticShapesPass"]

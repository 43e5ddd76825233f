"""Reductions that drop a possibly empty axis keep it, then squeeze it: onnxruntime's CUDA kernels refuse to drop one.

Reducing an axis of length 0 gives the reduction's identity (ONNX, OpenVINO): a sum over a loop's empty slice, say.
onnxruntime's CUDA kernels (1.31) refuse it when keepdims is 0 ("Can't reduce on dim with value of 0 if 'keepdims'
is false"); with keepdims=1 they compute it, and a Squeeze of the reduced axes gives the same result. Only nodes
whose reduced axes are constants (or absent: all axes) and not all of static positive length change. Applied to
every converted model, optimisations on or off (what onnxruntime needs to run it), so that a model converted for
the CPU runs on CUDA too.
"""

from __future__ import annotations

import onnx_ir as ir

from ir2onnx.passes.fuse_rnn_util import Emitter, all_names, attr, input_at, replace_node, shape_of
from ir2onnx.passes.loop_utils import const_ints, is_default_domain

_AXES_AS_INPUT_SINCE = {"ReduceSum": 13}  # the others take axes as an input from opset 18


class KeepReducedAxesPass(ir.passes.InPlacePass):
    """See the module docstring. After a run, `replaced` maps each replaced value to the one computing it now."""

    def __init__(self) -> None:
        super().__init__()
        self.replaced: dict[ir.Value, ir.Value] = {}

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        names: set[str] | None = None
        modified = False
        opset = model.opset_imports.get("", 1)
        for node in list(ir.traversal.RecursiveGraphIterator(model.graph)):
            if not (node.op_type.startswith("Reduce") and is_default_domain(node)) or attr(node, "keepdims", 1):
                continue
            axes = _reduced_axes(node, opset)
            if axes is None:
                continue
            dims = shape_of(node.inputs[0])
            if dims is not None and all(isinstance(dims[a], int) and dims[a] > 0 for a in axes):
                continue
            names = names if names is not None else all_names(model.graph)
            old = node.outputs[0]
            self.replaced[old] = _keep(node, model.graph, names, axes)
            modified = True
        return ir.passes.PassResult(model, modified=modified)


def _reduced_axes(node: ir.Node, opset: int) -> list[int] | None:
    """The reduced axes, non-negative, when the node's rank and axes are known."""
    dims = shape_of(node.inputs[0])
    if dims is None:
        return None
    as_input = opset >= _AXES_AS_INPUT_SINCE.get(node.op_type, 18)
    given = input_at(node, 1) if as_input else None
    axes = const_ints(given) if as_input else attr(node, "axes")
    if as_input and given is not None and axes is None:
        return None  # run-time axes
    if not axes:
        if as_input and given is not None and attr(node, "noop_with_empty_axes", 0):
            return None
        return list(range(len(dims)))
    return sorted(int(a) % len(dims) for a in axes)  # type: ignore[union-attr]


def _keep(node: ir.Node, root: ir.Graph, names: set[str], axes: list[int]) -> ir.Value:
    em = Emitter(node, root, names)
    attrs = {a.name: a.value for a in node.attributes.values()}
    attrs["keepdims"] = 1
    kept = em.op1(node.op_type, list(node.inputs), attrs)
    out = em.squeeze(kept, axes)
    em.commit()
    replace_node(node, [(node.outputs[0], out)], "kept")
    return out

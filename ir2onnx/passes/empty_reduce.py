"""Reductions over a possibly empty axis: the axes given non-negative, and kept (then squeezed) where dropped.

Reducing an axis of length 0 gives the reduction's identity (ONNX, OpenVINO): a sum over a loop's empty slice, say.
onnxruntime mishandles it in two ways: its CUDA kernels (1.31) refuse to drop such an axis ("Can't reduce on dim with
value of 0 if 'keepdims' is false"), and its CPU kernels of 1.31 (the newest onnxruntime-gpu) return an empty
input's own shape when an axis is given negative ([3, 0] summed over axis -1 gives [3, 0]; over axis 1, [3]). So a
Reduce* node with its axes known (constants, or absent: all axes) and its rank, that drops a reduced axis not of
static positive length or names a negative axis while its input may be empty, gets its axes as non-negative
constants and keepdims=1, then a Squeeze of those axes where it had keepdims=0: the same result. Applied to every
converted model, optimisations on or off (what onnxruntime needs to run it), so that a model converted for the CPU
runs on CUDA too.
"""

from __future__ import annotations

from collections.abc import MutableSet

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_nodes, attr, input_at, is_default_domain
from ir2onnx.passes.analysis.values import Dims, const_ints, derivations, shape_of
from ir2onnx.passes.replacing import ReplacingPass
from ir2onnx.passes.rewrite import Emitter, all_names, replace_node


class EmptyReductionsPass(ReplacingPass):
    """See the module docstring."""

    def call(self, model: oir.Model) -> oir.passes.PassResult:
        names = all_names(model.graph)  # collected when first used
        modified = False
        with derivations():  # all shapes read before the graph changes: one walk over the producers
            reductions = [(node, found) for node in all_nodes(model.graph)
                          if node.op_type.startswith("Reduce") and is_default_domain(node)
                          and (found := _reduced_axes(node)) is not None]
        for node, (dims, axes, negative) in reductions:
            positive = [isinstance(d, int) and d > 0 for d in dims]
            drops_empty = not attr(node, "keepdims", 1) and not all(positive[a] for a in axes)
            if not drops_empty and not (negative and not all(positive)):
                continue
            old = node.outputs[0]
            self.replaced[old] = _rewrite(node, model.graph, names, axes)
            modified = True
        return oir.passes.PassResult(model, modified=modified)


def _reduced_axes(node: oir.Node) -> tuple[Dims, list[int], bool] | None:
    """(The input's dims; the reduced axes, non-negative; whether any was given negative), when the node's rank and
    axes are known. The axes are the node's own: an input, an attribute (older opsets), or none (all axes)."""
    dims = shape_of(node.inputs[0])
    if dims is None:
        return None
    given = input_at(node, 1)
    axes = const_ints(given) if given is not None else attr(node, "axes")
    if given is not None and axes is None:
        return None  # run-time axes
    if not axes:  # all axes, unless told to reduce none
        return None if attr(node, "noop_with_empty_axes", 0) else (dims, list(range(len(dims))), False)
    given_axes = [int(a) for a in axes]  # type: ignore[union-attr]
    return dims, sorted(a % len(dims) for a in given_axes), min(given_axes) < 0


def _rewrite(node: oir.Node, root: oir.Graph, names: MutableSet[str], axes: list[int]) -> oir.Value:
    """The node with keepdims=1 and its axes (given as it gave them) non-negative, then a Squeeze if it dropped them."""
    em = Emitter(node, root, names)
    attrs = {a.name: a.value for a in node.attributes.values()}
    attrs["keepdims"] = 1
    given = input_at(node, 1)
    if "axes" in attrs:
        attrs["axes"] = axes
    out = em.op1(node.op_type, [node.inputs[0], em.i64(axes)] if given is not None else [node.inputs[0]], attrs)
    if not attr(node, "keepdims", 1):
        out = em.squeeze(out, axes)
    em.commit()
    replace_node(node, [(node.outputs[0], out)], "kept")
    owner = given.graph if given is not None else None
    if owner is not None and not given.uses() and given.name in owner.initializers:  # type: ignore[union-attr]
        del owner.initializers[given.name]  # type: ignore[union-attr,arg-type]  (nothing reads the old axes)
    return out

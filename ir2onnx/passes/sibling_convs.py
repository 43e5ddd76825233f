"""Convolutions of one input by constant kernels become one convolution, its output split by channel.

OpenVINO's frontends write a gated convolutional cell (Keras ConvLSTM2D: one convolution per gate, of the step's
image and of the state) as several convolutions of the same input with the same attributes. onnxruntime runs each
as its own small GEMM; one convolution with the kernels (and biases) concatenated along the output channels, split
after, computes every output channel from the same input and weights. Measured with onnxruntime 1.32, 2 threads, on
a Keras ConvLSTM2D (16 filters 3x3 over 20 steps of 32x32x8 images, batch 4; its four convolutions of the state in
the loop body merged): 19.5 -> 14.9 ms per run. Outside loops, where an iteration's per-node cost does not repeat, the
merged convolution and its Split measured 5-25% slower than the separate ones (1x1 and 3x3 kernels, 8 to 512 input
channels, batch 1 to 80), so only loop bodies are rewritten.

Handled: Conv nodes of the default domain in one loop body reading the same input value, with `group` 1, the same
attributes, constant kernels of the same input channels and kernel size, all with a constant bias or none.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import MutableSet

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import attr, input_at, is_default_domain, loops_innermost_first
from ir2onnx.passes.analysis.values import const_array
from ir2onnx.passes.rewrite import Emitter, all_names, replace_node


class MergeSiblingConvsPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        names = all_names(model.graph)
        groups: dict[tuple[object, ...], list[oir.Node]] = defaultdict(list)
        for _, body, _ in loops_innermost_first(model.graph):  # outside loops one convolution is not faster
            for node in body:
                key = _key(node)
                if key is not None:
                    groups[key].append(node)
        modified = False
        for nodes in groups.values():
            if len(nodes) > 1:
                _merge(nodes, model.graph, names)
                modified = True
        return oir.passes.PassResult(model, modified=modified)


def _key(node: oir.Node) -> tuple[object, ...] | None:
    """What convolutions merged into one must share, or None when `node` cannot be merged."""
    if node.op_type != "Conv" or not is_default_domain(node) or attr(node, "group", 1) != 1 \
            or len(node.outputs) != 1 or node.inputs[0] is None:
        return None
    w, b = const_array(node.inputs[1]), input_at(node, 2)
    if w is None or w.ndim < 3 or (b is not None and const_array(b) is None):
        return None
    attrs = tuple(sorted((a.name, repr(a.value)) for a in node.attributes.values()))
    return id(node.graph), id(node.inputs[0]), attrs, w.shape[1:], w.dtype.str, b is not None


def _merge(nodes: list[oir.Node], root: oir.Graph, names: MutableSet[str]) -> None:
    graph = nodes[0].graph
    assert graph is not None
    order = {n: i for i, n in enumerate(graph)}
    nodes = sorted(nodes, key=order.__getitem__)
    kernels = [const_array(n.inputs[1]) for n in nodes]
    em = Emitter(nodes[0], root, names)
    inputs = [nodes[0].inputs[0], em.const(np.concatenate(kernels), "kernels")]  # type: ignore[arg-type]
    if input_at(nodes[0], 2) is not None:
        inputs.append(em.const(np.concatenate([const_array(n.inputs[2]) for n in nodes]), "biases"))  # type: ignore[misc]
    merged = em.op1("Conv", inputs, {a.name: a.value for a in nodes[0].attributes.values()})
    sizes = [k.shape[0] for k in kernels]  # type: ignore[union-attr]
    parts = em.op("Split", [merged, em.i64(sizes)], {"axis": 1}, outputs=len(nodes))
    em.commit()
    for node, part in zip(nodes, parts):
        replace_node(node, [(node.outputs[0], part)], "merged")

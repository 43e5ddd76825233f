"""OpenVINO models with loop bodies the lean-loop passes act on, and helpers to look at where nodes ended up."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import openvino as ov
import openvino.opset13 as ops


def recurrence(kind: str, batch: int = 2, steps: int = 5, size: int = 8, *, axis: int = 1,
               step: Callable[[Any, Any], Any] | None = None, reverse: bool = False,
               output: Callable[[Any, Any], Any] | None = None, image: tuple[int, ...] | None = None) -> ov.Model:
    """TensorIterator ("ti") or Loop-5 ("loop") slicing X [batch, steps, size] (or [batch, size, steps] when
    axis=2) one step at a time; the body computes h' = step(x_t, h) (default tanh(x_t @ W^T + h @ U + b)) and the
    model returns all h' (or output(h', h) per step) concatenated and the last h'. `image`: x_t and h are
    [batch, *image] instead (X [batch, steps, *image]; axis 1, and `step` given)."""
    rng = np.random.default_rng(0)
    sample = list(image) if image is not None else [size]
    shape = [batch, steps, *sample] if axis == 1 else [batch, size, steps]
    X = ops.parameter(shape, np.float32, name="X")
    H0 = ops.parameter([batch, *sample], np.float32, name="H0")
    chunk = list(shape)
    chunk[axis] = 1
    bx = ops.parameter(chunk, np.float32)
    bh = ops.parameter([batch, *sample], np.float32)
    x_t = ops.squeeze(bx, [axis])
    if step is None:
        w = ops.constant((rng.standard_normal((size, size)) * 0.3).astype(np.float32))
        u = ops.constant((rng.standard_normal((size, size)) * 0.3).astype(np.float32))
        b = ops.constant((rng.standard_normal(size) * 0.3).astype(np.float32))
        h = ops.tanh(ops.add(ops.add(ops.matmul(x_t, w, False, True), ops.matmul(bh, u, False, False)), b))
    else:
        h = step(x_t, bh)
    r_h, r_y = ops.result(h), ops.result(ops.unsqueeze(h if output is None else output(h, bh), 1))
    s, e, stride = (-1, 0, -1) if reverse else (0, -1, 1)
    if kind == "ti":
        node = ops.tensor_iterator()
        node.set_body(ov.Model([r_h, r_y], [bx, bh]))
    else:
        node = ops.loop(ops.constant(np.array(steps, np.int64)), ops.constant(np.array(True)))
        node.set_function(ov.Model([r_h, r_y, ops.result(ops.constant(np.array(True)))], [bx, bh]))
        node.set_special_body_ports([-1, 2])
    node.set_sliced_input(bx, X.output(0), s, stride, 1, e, axis)
    node.set_merged_input(bh, H0.output(0), r_h.output(0))
    return ov.Model([node.get_concatenated_slices(r_y.output(0), s, stride, 1, e, 1),
                     node.get_iter_value(r_h.output(0), -1)], [X, H0])


def ops_in(graph: onnx.GraphProto, op_type: str, *, bodies: bool) -> int:
    """Nodes of `op_type` in `graph` itself (bodies=False) or in its subgraphs, at any depth (bodies=True)."""
    if not bodies:
        return sum(node.op_type == op_type for node in graph.node)
    n = 0
    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                n += ops_in(a.g, op_type, bodies=False) + ops_in(a.g, op_type, bodies=True)
    return n


def body_of(proto: onnx.ModelProto, op_type: str) -> onnx.GraphProto:
    node = next(n for n in proto.graph.node if n.op_type == op_type)
    return next(a.g for a in node.attribute if a.name == "body")

"""Explicit pads for convolutions and pooling, and pooling pads the same on both sides.

The translation keeps OpenVINO's `same_upper` / `same_lower` as ONNX's `auto_pad` where the spatial dims are known
only at run time (Keras' padding="same" on an image of any size: translate/ops/pooling.py and conv.py), and gives a
pooling node OpenVINO's pads, which may differ at the two ends of an axis. Both are valid ONNX; onnx2torch implements
neither SAME_* nor asymmetric average pooling, and other consumers differ in how much of either they take. So:

* `auto_pad` SAME_UPPER / SAME_LOWER: with static spatial dims, the pads ONNX defines for them (total
  `max((ceil(in / stride) - 1) * stride + (kernel - 1) * dilation + 1 - in, 0)`, the odd one at the end or the
  beginning); otherwise those pads computed from the input's shape and applied by a Pad before the node (zeros for a
  convolution and an average that counts padding, the lowest value for max pooling).
* pooling pads that differ at the two ends of an axis (floor mode only: `ceil_mode` drops a last window by where it
  starts, which the pads decide): the part on one side only becomes a Pad before the node, the node keeps the
  symmetric rest. An average that excludes padding is the quotient of two averages over zero-padded tensors
  (the input, and ones of its spatial shape), padding counted, all its pads in the Pad.

Max pooling with indices (which count positions in the padded input) and dilated max pooling keep their form.
"""

from __future__ import annotations

from collections.abc import MutableSet

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_nodes, attr, is_default_domain
from ir2onnx.passes.analysis.shapes import StaticShapes
from ir2onnx.passes.analysis.values import shape_of
from ir2onnx.passes.rewrite import Emitter, all_names, inherit_meta, take_place

_SAME = ("SAME_UPPER", "SAME_LOWER")
_POOLS = ("MaxPool", "AveragePool")


class ExplicitPadsPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        nodes = [n for n in all_nodes(model.graph) if is_default_domain(n) and n.op_type in ("Conv", *_POOLS)]
        names = all_names(model.graph)
        modified = False
        for node in nodes:
            if attr(node, "auto_pad", "NOTSET") in _SAME:
                modified |= _explicit(node, model.graph, names)
            if node.op_type in _POOLS and "auto_pad" not in node.attributes:
                modified |= _symmetric(node, model.graph, names)
        return oir.passes.PassResult(model, modified=modified)


def _window(node: oir.Node, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(strides, dilated kernel sizes) over the n spatial axes."""
    kernel = np.asarray(attr(node, "kernel_shape") or _kernel_of(node), np.int64)
    strides = np.asarray(attr(node, "strides") or [1] * n, np.int64)
    dilations = np.asarray(attr(node, "dilations") or [1] * n, np.int64)
    return strides, (kernel - 1) * dilations + 1


def _kernel_of(node: oir.Node) -> list[int]:
    w = node.inputs[1] if len(node.inputs) > 1 else None  # a Conv without kernel_shape: its weight's spatial dims
    shape = StaticShapes()(w) if w is not None else None
    if shape is None:
        raise ValueError("no kernel shape")
    return list(shape[2:])


def _spatial(x: oir.Value) -> tuple[int | None, ...] | None:
    shape = StaticShapes()(x) or shape_of(x)
    return None if shape is None else tuple(shape[2:])


def _explicit(node: oir.Node, root: oir.Graph, names: MutableSet[str]) -> bool:
    x = node.inputs[0]
    dims = _spatial(x) if x is not None else None
    if x is None or x.dtype is None or dims is None or _indices_read(node) or attr(node, "ceil_mode", 0):
        return False
    n = len(dims)
    try:
        strides, dk = _window(node, n)
    except ValueError:
        return False
    upper = attr(node, "auto_pad") == "SAME_UPPER"
    del node.attributes["auto_pad"]
    if all(isinstance(d, int) for d in dims):
        size = np.asarray(dims, np.int64)
        total = np.maximum((-(-size // strides) - 1) * strides + dk - size, 0)
        small = total // 2
        begin, end = (small, total - small) if upper else (total - small, small)
        node.attributes["pads"] = oir.AttrInt64s("pads", [int(v) for v in (*begin, *end)])
        return True
    em = Emitter(node, root, names)
    size = em.op1("Shape", [x], {"start": 2})
    count = em.op1("Div", [em.op1("Add", [size, em.i64(list(strides - 1))]), em.i64(list(strides))])
    total = em.op1("Max", [em.op1("Sub", [em.op1("Add", [em.op1("Mul", [em.op1("Sub", [count, em.i64([1])]),
                                                                      em.i64(list(strides))]), em.i64(list(dk))]),
                                          size]), em.i64([0])])
    small = em.op1("Div", [total, em.i64([2])])
    large = em.op1("Sub", [total, small])
    begin, end = (small, large) if upper else (large, small)
    zeros = em.i64([0, 0])
    pads = em.op1("Concat", [zeros, begin, zeros, end], {"axis": 0})
    if node.op_type == "AveragePool" and not attr(node, "count_include_pad", 0):
        return _excluding_average(node, em, pads)
    _pad_input(node, em, pads)
    node.attributes.pop("pads", None)
    return True


def _symmetric(node: oir.Node, root: oir.Graph, names: MutableSet[str]) -> bool:
    pads = attr(node, "pads")
    x = node.inputs[0]
    if not pads or x is None or x.dtype is None or attr(node, "ceil_mode", 0) or _indices_read(node):
        return False
    n = len(pads) // 2  # type: ignore[arg-type]
    begin, end = np.asarray(pads[:n], np.int64), np.asarray(pads[n:], np.int64)  # type: ignore[index]
    if np.array_equal(begin, end):
        return False
    if node.op_type == "MaxPool" and any(d != 1 for d in (attr(node, "dilations") or [])):
        return False
    em = Emitter(node, root, names)
    if node.op_type == "AveragePool" and not attr(node, "count_include_pad", 0):
        return _excluding_average(node, em, em.i64([0, 0, *begin, 0, 0, *end]))
    kept = np.minimum(begin, end)
    _pad_input(node, em, em.i64([0, 0, *(begin - kept), 0, 0, *(end - kept)]))
    node.attributes["pads"] = oir.AttrInt64s("pads", [int(v) for v in (*kept, *kept)])
    return True


def _excluding_average(node: oir.Node, em: Emitter, pads: oir.Value) -> bool:
    """AveragePool(x, pads, count_include_pad=0) as AveragePool(Pad0(x)) / AveragePool(Pad0(ones)), padding counted:
    both divide by the kernel's size, so the quotient is the window's sum over its count of input elements."""
    x, y = node.inputs[0], node.outputs[0]
    dtype = x.dtype  # type: ignore[union-attr]
    if dtype is None:
        return False
    one = oir.tensor(np.ones(1, dtype.numpy()))
    dims = _spatial(x)  # type: ignore[arg-type]
    if dims is not None and all(isinstance(d, int) for d in dims):
        ones = em.const(np.ones((1, 1, *dims), dtype.numpy()), "ones")  # type: ignore[misc]
    else:
        shape = em.op1("Concat", [em.i64([1, 1]), em.op1("Shape", [x], {"start": 2})], {"axis": 0})
        ones = em.op1("ConstantOfShape", [shape], {"value": one})
    zero = em.const(np.zeros((), dtype.numpy()), "zero")
    _pad_input(node, em, pads, zero)
    node.attributes.pop("pads", None)
    node.attributes["count_include_pad"] = oir.AttrInt64("count_include_pad", 1)
    counted = em.op1("AveragePool", [em.op1("Pad", [ones, pads, zero], {"mode": "constant"})],
                     {k: a.value for k, a in node.attributes.items()})
    em.commit()
    after = Emitter(node, em.root, em.names)
    quotient = after.op1("Div", [y, counted])
    take_place(y, quotient)
    after.nodes[0].replace_input_with(0, y)
    y.name, y.shape = after.fresh("counted_padding"), None
    for m in after.nodes:
        inherit_meta(m, node)
    node.graph.insert_after(node, after.nodes)  # type: ignore[union-attr]
    return True


def _pad_input(node: oir.Node, em: Emitter, pads: oir.Value, value: oir.Value | None = None) -> None:
    """Node input 0 through a constant Pad by `pads` ([0, 0, begins..., 0, 0, ends...]); the lowest value of the
    element type for max pooling (never the maximum of a window that holds an input element), else zeros."""
    x = node.inputs[0]
    assert x is not None
    if value is None and node.op_type == "MaxPool" and x.dtype is not None:
        t = x.dtype.numpy()
        value = em.const(np.asarray(-np.inf if t.kind == "f" else np.iinfo(t).min, t), "lowest")
    padded = em.op1("Pad", [x, pads] + ([value] if value is not None else []), {"mode": "constant"})
    em.commit()
    node.replace_input_with(0, padded)


def _indices_read(node: oir.Node) -> bool:
    return node.op_type == "MaxPool" and len(node.outputs) > 1 and bool(node.outputs[1].uses()
                                                                         or node.outputs[1].is_graph_output())

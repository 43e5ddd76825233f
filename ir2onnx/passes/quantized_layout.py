"""Quantized values laid out the way onnxruntime fuses them into integer kernels.

onnxruntime runs a Conv, MatMul or Add in integers (QLinearConv, QLinearMatMul, QLinearAdd, ...) only where the
node's group is exact: a DequantizeLinear on each input, a QuantizeLinear on the output. OpenVINO's IR places its
FakeQuantize layers for its own low-precision transformations, so the translation leaves groups onnxruntime
does not recognise, and runs them in float over dequantized values. Two rewrites make the groups:

* **Bias into the convolution.** A Conv of a per-tensor DequantizeLinear input and a constant DequantizeLinear weight
  (per tensor or per output channel, axis 0), followed by the Add of a per-channel constant whose result is
  quantized (directly, or through a Relu that onnxruntime drops before a QuantizeLinear), gets the constant as its
  bias: the DequantizeLinear of int32 `round(b / (sx * sw))` with scale `sx * sw` per channel, the form onnxruntime's
  own quantizer writes and QLinearConv takes. This is not bit-exact: the bias moves to the integer grid of the
  accumulator, by at most half of `sx * sw`, a small fraction of the quantized result's own step (the check judges
  quantized outputs in steps, and its nudged runs compute such a Conv with the IR's own bias, which the Conv keeps in
  its metadata, `FLOAT_BIAS`). A bias the grid cannot hold in int32 stays an Add.
* **A quantization step after values move.** A MaxPool, Reshape, Transpose, Split, ... of a per-tensor
  DequantizeLinear output (directly or through other such ops) that a computing node reads gets a QuantizeLinear
  and DequantizeLinear of the same scale and zero point after it: onnxruntime then runs the move in 8 bits and the
  reader's group is complete. Exact: these ops only move or select values, which stay on the grid, and quantizing a
  value of the grid gives its integer back.

Runs only on models holding both QuantizeLinear and DequantizeLinear (`--quantization onnx`), in the main graph.
"""

from __future__ import annotations

import json

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import attr, input_at, is_default_domain
from ir2onnx.passes.analysis.values import const_array, literal_array
from ir2onnx.passes.rewrite import all_names, fresh_name, inherit_meta, initializer, read_instead

# ops that only move or select values (a value of the grid stays one): their first input's, every input's for Concat
_MOVES = frozenset({"MaxPool", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Split", "Slice",
                    "DepthToSpace", "SpaceToDepth", "Concat"})
# readers onnxruntime runs in integers when their inputs are dequantized
_COMPUTES = {"Conv", "MatMul", "Gemm", "Add", "Mul", "AveragePool", "GlobalAveragePool", "ConvTranspose"}
_INT32 = 2**31 - 1
FLOAT_BIAS = "ir2onnx.float_bias"  # a biased Conv's metadata: the bias as the IR has it (the check computes with it)


class QuantizedLayoutPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        graph = model.graph
        ops = {n.op_type for n in graph if is_default_domain(n)}
        if not {"QuantizeLinear", "DequantizeLinear"} <= ops:
            return oir.passes.PassResult(model, False)
        names = all_names(graph)
        modified = False
        for node in list(graph):
            if node.op_type == "Reshape" and is_default_domain(node):
                modified = _reshaped_weight(node, graph, names) or modified
        for node in list(graph):
            if node.op_type in _MOVES and is_default_domain(node):
                modified = _requantize_after(node, graph, names) or modified
        for node in list(graph):  # (after the above: a Conv may read a requantized value)
            if node.op_type == "Conv" and is_default_domain(node):
                modified = _bias_into_conv(node, graph, names) or modified
        return oir.passes.PassResult(model, modified)


def _dq(v: oir.Value | None) -> oir.Node | None:
    n = v.producer() if v is not None else None
    return n if n is not None and n.op_type == "DequantizeLinear" and is_default_domain(n) else None


def _grid(dq: oir.Node) -> tuple[np.ndarray, np.ndarray | None, int] | None:
    """(scale, zero point or None, axis) of a DequantizeLinear whose parameters are constants (no blocks)."""
    scale = const_array(dq.inputs[1]) if dq.inputs[1] is not None else None  # (an f16 scale read through a Cast)
    zp_value = input_at(dq, 2)
    zp = const_array(zp_value) if zp_value is not None else None
    if scale is None or (zp_value is not None and zp is None) or attr(dq, "block_size", 0):
        return None
    return scale, zp, int(attr(dq, "axis", 1))  # type: ignore[arg-type]


def _bias_into_conv(conv: oir.Node, graph: oir.Graph, names: object) -> bool:
    if input_at(conv, 2) is not None or len(conv.inputs) < 2:
        return False
    x_dq, w_dq = _dq(conv.inputs[0]), _dq(conv.inputs[1])
    weight = literal_array(w_dq.inputs[0]) if w_dq is not None else None
    if x_dq is None or weight is None or weight.ndim < 3:
        return False
    xg, wg = _grid(x_dq), _grid(w_dq)
    if xg is None or wg is None or xg[0].size != 1 or (wg[0].size != 1 and wg[2] != 0):
        return False
    out = conv.outputs[0]
    uses = list(out.uses())
    if out.is_graph_output() or len(uses) != 1 or uses[0].node.op_type != "Add":
        return False
    add = uses[0].node
    b = literal_array(add.inputs[1 - uses[0].idx])
    channels = weight.shape[0]  # the output's rank and channels are the weight's
    if b is None or not _quantized_next(add.outputs[0]):
        return False
    bias = _per_channel(b, weight.ndim, channels)
    if bias is None:
        return False
    scale32 = (xg[0].astype(np.float32).reshape(()) * wg[0].astype(np.float32).reshape(-1)) * np.ones(
        channels, np.float32)  # as onnxruntime's quantizer computes the bias scale
    if not np.all(scale32 > 0) or not np.all(np.isfinite(scale32)):
        return False
    q = np.rint(bias.astype(np.float64) / scale32.astype(np.float64))
    if np.any(np.abs(q) > _INT32):
        return False
    name = fresh_name(names, f"{add.name or 'conv'}/bias")  # type: ignore[arg-type]
    inits = [initializer(graph, fresh_name(names, f"{name}/{k}"), t) for k, t in
             (("quantized", q.astype(np.int32)), ("scale", scale32))]
    dq = oir.Node("", "DequantizeLinear", inits, [oir.AttrInt64("axis", 0)], name=name)
    dq.outputs[0].name = fresh_name(names, f"{name}_out")  # type: ignore[arg-type]
    dq.outputs[0].type, dq.outputs[0].shape = oir.TensorType(oir.DataType.FLOAT), oir.Shape([channels])
    # a new Conv: its output is the Add's value, and the convolution's own (without the bias) no longer exists, so the
    # layer map drops the IR's Convolution layer rather than compare its value with the sum
    biased = oir.Node("", "Conv", [conv.inputs[0], conv.inputs[1], dq.outputs[0]], list(conv.attributes.values()),
                      name=fresh_name(names, f"{conv.name or 'conv'}/biased"))  # type: ignore[arg-type]
    biased.metadata_props[FLOAT_BIAS] = json.dumps([float(v) for v in bias.astype(np.float32)])
    biased.outputs[0].name = fresh_name(names, f"{biased.name}_out")  # type: ignore[arg-type]
    biased.outputs[0].type, biased.outputs[0].shape = add.outputs[0].type, add.outputs[0].shape
    graph.insert_before(conv, [inherit_meta(dq, add), inherit_meta(biased, conv)])
    read_instead(add.outputs[0], biased.outputs[0], graph)
    graph.remove([add, conv], safe=True)
    return True


def _reshaped_weight(reshape: oir.Node, graph: oir.Graph, names: object) -> bool:
    """Reshape(DequantizeLinear(constant integers)) as the DequantizeLinear of the integers reshaped, where the
    Reshape is the DequantizeLinear's only reader and the per-channel axis keeps its place (the product of the
    dimensions before it): the weight of a grouped convolution reaches its Conv straight from its DequantizeLinear."""
    dq = _dq(reshape.inputs[0])
    target = const_array(reshape.inputs[1]) if len(reshape.inputs) > 1 and reshape.inputs[1] is not None else None
    if dq is None or target is None or len(list(dq.outputs[0].uses())) != 1 or dq.outputs[0].is_graph_output():
        return False
    q, grid = literal_array(dq.inputs[0]), _grid(dq)
    if q is None or grid is None or target.ndim != 1 or attr(reshape, "allowzero", 0):
        return False
    shape = [int(q.shape[i]) if d == 0 and i < q.ndim else int(d) for i, d in enumerate(target)]
    if shape.count(-1) == 1 and int(np.prod([d for d in shape if d != -1])) > 0:
        shape[shape.index(-1)] = q.size // int(np.prod([d for d in shape if d != -1]))
    if any(d <= 0 for d in shape) or int(np.prod(shape)) != q.size:
        return False
    attrs = []
    if grid[0].size != 1:
        axis = grid[2] % q.ndim
        before = int(np.prod(q.shape[:axis]))
        new_axis = next((j for j in range(len(shape)) if int(np.prod(shape[:j])) == before
                         and shape[j] == q.shape[axis]), None)
        if new_axis is None:
            return False
        attrs = [oir.AttrInt64("axis", new_axis)]
    name = fresh_name(names, f"{dq.name or 'weight'}/reshaped")  # type: ignore[arg-type]
    values = initializer(graph, fresh_name(names, name), q.reshape(shape))
    new = oir.Node("", "DequantizeLinear", [values, *dq.inputs[1:]], attrs, name=f"{name}/dequantize")
    new.outputs[0].name = fresh_name(names, f"{name}_out")  # type: ignore[arg-type]
    new.outputs[0].type, new.outputs[0].shape = dq.outputs[0].type, oir.Shape(shape)
    graph.insert_before(reshape, inherit_meta(new, dq))
    read_instead(reshape.outputs[0], new.outputs[0], graph)
    graph.remove([reshape, dq], safe=True)
    return True


def _per_channel(b: np.ndarray, rank: int, channels: int) -> np.ndarray | None:
    """The bias of each output channel where `b` broadcast onto a Conv output of `rank` varies along axis 1 only."""
    if b.ndim > rank or b.dtype != np.float32:
        return None
    shape = (1,) * (rank - b.ndim) + b.shape
    if any(d != 1 for i, d in enumerate(shape) if i != 1) or shape[1] not in (1, channels):
        return None
    return np.broadcast_to(b.reshape(-1), (channels,)).copy()


def _quantized_next(v: oir.Value) -> bool:
    """Whether `v` is read by QuantizeLinear alone, directly or through one Relu."""
    uses = list(v.uses())
    if v.is_graph_output() or not uses:
        return False
    if all(u.node.op_type == "QuantizeLinear" and u.idx == 0 for u in uses):
        return True
    return len(uses) == 1 and uses[0].node.op_type == "Relu" and _quantized_next(uses[0].node.outputs[0])


def _source_grid(v: oir.Value | None, depth: int = 0) -> oir.Node | None:
    """The per-tensor DequantizeLinear whose values `v` holds, moved by _MOVES ops only (every carried input of
    a Concat from DequantizeLinears of one grid); else None."""
    if v is None or depth > 32:
        return None
    dq = _dq(v)
    if dq is not None:
        g = _grid(dq)
        return dq if g is not None and g[0].size == 1 else None
    n = v.producer()
    if n is None or n.op_type not in _MOVES or not is_default_domain(n):
        return None
    carried = n.inputs if n.op_type == "Concat" else n.inputs[:1]
    found = [_source_grid(i, depth + 1) for i in carried]
    if not found or any(f is None for f in found):
        return None
    first = found[0]
    assert first is not None
    if any(not _same_grid(first, f) for f in found[1:]):  # type: ignore[arg-type]
        return None
    return first


def _same_grid(a: oir.Node, b: oir.Node) -> bool:
    ga, gb = _grid(a), _grid(b)
    if ga is None or gb is None or a.outputs[0].dtype != b.outputs[0].dtype:
        return False
    if a.inputs[0].dtype != b.inputs[0].dtype:  # type: ignore[union-attr]  (then the zero points' types agree)
        return False
    za = ga[1] if ga[1] is not None else np.zeros((), a.inputs[0].dtype.numpy())  # type: ignore[union-attr]
    zb = gb[1] if gb[1] is not None else np.zeros((), b.inputs[0].dtype.numpy())  # type: ignore[union-attr]
    return ga[0].tobytes() == gb[0].tobytes() and za.tobytes() == zb.tobytes()


def _requantize_after(node: oir.Node, graph: oir.Graph, names: object) -> bool:
    source = _source_grid(node.outputs[0])
    if source is None or source.inputs[0] is None or source.outputs[0].dtype != oir.DataType.FLOAT \
            or source.inputs[0].dtype not in (oir.DataType.UINT8, oir.DataType.INT8):
        return False
    modified = False
    for out in node.outputs:
        readers = [u for u in out.uses() if u.node.op_type in _COMPUTES]
        if not readers:
            continue
        name = fresh_name(names, f"{out.name or node.name}/requantize")  # type: ignore[arg-type]
        zp = input_at(source, 2)
        if zp is None:  # (QuantizeLinear without a zero point gives uint8: the grid's own type, zero)
            zp = initializer(graph, fresh_name(names, f"{name}/zero_point"), np.zeros((), source.inputs[0].dtype.numpy()))
        params = [source.inputs[1], zp]
        q = oir.Node("", "QuantizeLinear", [out, *params], name=name)
        dq = oir.Node("", "DequantizeLinear", [q.outputs[0], *params], name=f"{name}/dequantize")
        q.outputs[0].name = fresh_name(names, f"{name}_q")  # type: ignore[arg-type]
        q.outputs[0].type, q.outputs[0].shape = oir.TensorType(source.inputs[0].dtype), out.shape
        dq.outputs[0].name = fresh_name(names, f"{name}_out")  # type: ignore[arg-type]
        dq.outputs[0].type, dq.outputs[0].shape = source.outputs[0].type, out.shape
        graph.insert_after(node, [inherit_meta(q, node), inherit_meta(dq, node)])
        for use in readers:
            use.node.replace_input_with(use.idx, dq.outputs[0])
        modified = True
    return modified

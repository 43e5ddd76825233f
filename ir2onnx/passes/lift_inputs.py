"""Compute per-slice work on a loop's sliced input once, for all iterations, outside the loop.

A Scan body sees one slice x_t of a scan input X per iteration; a Loop body that reads `Gather(X, i, axis)` of an
outer X at an iteration-dependent index i does the same. When a body node computes f(x_t) from that slice and
loop-invariant values only, and f can be applied to the whole of X with the same result per slice (an input
projection x_t @ W with a constant or outer 2-D W, a bias added, a Squeeze or a Reshape that only drops unit dims,
an elementwise op, a convolution with the steps merged into its batch, an Unsqueeze feeding one), f(X) is computed
once before the loop and the body reads its slice instead: a new scan input of the Scan, or a Gather of f(X) in
the Loop. Repeated, this moves a chain (Squeeze -> MatMul -> Add) out as one batched computation. Scan inputs no
longer read are dropped.

Loop bodies translated from OpenVINO cut a slice of size 1 with Slice and drop the axis with Squeeze: that pair
becomes one Gather first.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import (
    BROADCASTING_BINARY,
    UNARY_ELEMENTWISE,
    defined_in,
    is_default_domain,
    loops_innermost_first,
    scan_ints,
)
from ir2onnx.passes.analysis.values import const_ints, literal_array, rank
from ir2onnx.passes.rewrite import inherit_meta, keep_read_scan_inputs, record

# Ops computing each sample of their first axis (the batch N) from that sample alone. Lifted, they run once over
# every step's samples merged into N. (Poolings would qualify, but they come out of the translation behind the Pads
# and Wheres that OpenVINO's padding rules take.)
PER_SAMPLE = frozenset({"Conv", "ConvTranspose"})


class LiftLoopInputsPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        modified = False
        for loop, body, outer in loops_innermost_first(model.graph):
            if loop.op_type == "Scan":
                modified |= _lift_scan(loop, body, outer)
            else:
                modified |= _gathers_from_slices(body)
                modified |= _lift_loop(loop, body, outer)
        return oir.passes.PassResult(model, modified=modified)


class SliceReadsAsGathersPass(oir.passes.InPlacePass):
    """Only the first step of LiftLoopInputsPass: a Loop body's one-row Slice + Squeeze reads become Gathers (the
    form the masked-loop rewrite reads a step's mask in, before the input projection leaves the body)."""

    def call(self, model: oir.Model) -> oir.passes.PassResult:
        modified = False
        for loop, body, _ in loops_innermost_first(model.graph):
            if loop.op_type == "Loop":
                modified |= _gathers_from_slices(body)
        return oir.passes.PassResult(model, modified=modified)


class _Lifted(NamedTuple):
    nodes: list[oir.Node]  # computing `value` from the whole input, in order
    value: oir.Value
    axis: int  # the slicing axis of `value`
    rank: int  # the rank of one slice of `value`


def _lift(node: oir.Node, x: oir.Value, axis: int, x_rank: int, whole: oir.Value, body: oir.Graph) -> _Lifted | None:
    """f(whole) for the body node f reading the slice x (of rank x_rank, cut from `whole` along `axis`)."""
    if not is_default_domain(node) or len(node.outputs) != 1 or node.outputs[0].is_graph_output():
        return None
    others = [v for v in node.inputs if v is not None and v is not x]
    if any(defined_in(v, body) for v in others):
        return None
    op = node.op_type
    out = node.outputs[0]
    if op in UNARY_ELEMENTWISE and len(node.inputs) == 1:  # f(X) sliced == f(x_t)
        new_axis = axis
    elif op in BROADCASTING_BINARY and len(node.inputs) == 2:  # when the other operand broadcasts alike
        if op == "Div" and out.dtype is not None and not out.dtype.is_floating_point():
            return None  # integer division by zero in a slice a Loop never reads must not fail the model
        if not all(_broadcasts_past(v, x_rank, axis) for v in node.inputs if v is not x):
            return None
        new_axis = axis
    elif op == "MatMul" and node.inputs[0] is x and node.inputs[1] is not x:
        # with a 2-D right operand MatMul contracts the last axis only: any other axis may be stacked
        if rank(node.inputs[1]) != 2 or axis >= x_rank:
            return None
        new_axis = axis
    elif op in PER_SAMPLE and node.inputs[0] is x and axis <= 1 and x_rank >= 3:
        return _lift_per_sample(node, axis, x_rank, whole)
    elif op == "Squeeze" and len(node.inputs) == 2 and node.inputs[0] is x:
        axes = const_ints(node.inputs[1])
        return None if axes is None else _lift_squeeze(node, [a + x_rank if a < 0 else a for a in axes], axis,
                                                       x_rank, whole)
    elif op == "Unsqueeze" and len(node.inputs) == 2 and node.inputs[0] is x and node.outputs[0].uses() \
            and all(u.node.op_type in PER_SAMPLE for u in node.outputs[0].uses()):
        # (only before a convolution, which then follows it out: a 1-D one written as 2-D; an Unsqueeze feeding a
        # one-step LSTM/GRU/RNN node is the glue that recurrent fusion reads)
        axes = const_ints(node.inputs[1])
        return None if axes is None else _lift_unsqueeze(node, axes, axis, x_rank, whole)
    elif op == "Reshape" and node.inputs[0] is x:
        dims = _dims(x.shape)
        axes = _reshape_as_squeeze(node, dims if dims is not None and len(dims) == x_rank else None)
        return None if axes is None else _lift_squeeze(node, axes, axis, x_rank, whole)
    else:
        return None
    value = oir.Value(name=f"{out.name}/lifted", type=out.type, shape=_unknown_dims(x_rank + 1))
    inputs = [whole if v is x else v for v in node.inputs]
    lifted = oir.Node("", op, inputs, list(node.attributes.values()), outputs=[value], name=f"{node.name}/lifted")
    return _Lifted([inherit_meta(lifted, node)], value, new_axis, x_rank)


def _lift_per_sample(node: oir.Node, axis: int, x_rank: int, whole: oir.Value) -> _Lifted:
    """f(whole) for an op that computes each sample of its axis-0 batch alone (a convolution): the
    slicing axis and the batch axis, the first two of `whole`, merged into one batch, and split again after."""
    out = node.outputs[0]
    hint = out.name or node.name or "per_sample"
    nodes: list[oir.Node] = []

    def add(op: str, inputs: list[oir.Value], label: str, attrs: list[oir.Attr] | None = None,
            shape: oir.Shape | None = None, dtype: oir.TypeProtocol | None = None) -> oir.Value:
        name = f"{hint}/lifted" + (f"_{label}" if label else "")
        value = oir.Value(name=name, type=dtype, shape=shape)
        nodes.append(inherit_meta(oir.Node("", op, inputs, attrs or [], outputs=[value], name=f"{name}_node"), node))
        return value

    def shape(v: oir.Value, label: str, start: int, end: int | None = None) -> oir.Value:
        attrs = [oir.AttrInt64("start", start)] + ([oir.AttrInt64("end", end)] if end is not None else [])
        return add("Shape", [v], label, attrs, dtype=oir.TensorType(oir.DataType.INT64))

    lead = shape(whole, "lead", 0, 2)
    merged_name = f"{whole.name}/samples_merged"
    merged = next((u.node.outputs[0] for u in whole.uses() if u.node.op_type == "Reshape"
                   and u.node.outputs[0].name == merged_name), None)  # one made for another op of the same slice
    if merged is None:
        samples = add("ReduceProd", [lead], "samples", dtype=oir.TensorType(oir.DataType.INT64))  # not -1: 0 dims
        merged_shape = add("Concat", [samples, shape(whole, "sample_shape", 2)], "merged_shape",
                           [oir.AttrInt64("axis", 0)])
        merged = oir.Value(name=merged_name, type=whole.type, shape=_unknown_dims(x_rank))
        nodes.append(inherit_meta(oir.Node("", "Reshape", [whole, merged_shape], outputs=[merged],
                                          name=f"{merged_name}_node"), node))
    inputs = [merged, *node.inputs[1:]]
    computed = add(node.op_type, inputs, "computed", list(node.attributes.values()), dtype=out.type,
                   shape=_unknown_dims(x_rank))
    split_shape = add("Concat", [lead, shape(computed, "computed_shape", 1)], "split_shape",
                      [oir.AttrInt64("axis", 0)])
    value = add("Reshape", [computed, split_shape], "", dtype=out.type, shape=_unknown_dims(x_rank + 1))
    return _Lifted(nodes, value, axis, x_rank)


def _broadcasts_past(v: oir.Value, x_rank: int, axis: int) -> bool:
    """Whether `v` broadcast against a slice (rank x_rank) and against the whole (the slices stacked on `axis`)
    meets the same dims: all its dims lie after the slicing axis, or those that do not are 1 ([1, I] + [B, I])."""
    r = rank(v)
    if r is None or r > x_rank:
        return False
    extra = r - (x_rank - axis)
    if extra <= 0:
        return True
    arr = literal_array(v)
    shape = arr.shape if arr is not None else v.shape
    return shape is not None and all(d == 1 for d in list(shape)[:extra])


def _lift_squeeze(node: oir.Node, axes: list[int], axis: int, x_rank: int, whole: oir.Value) -> _Lifted:
    """Squeeze(whole) of the slice's `axes` (non-negative) moved past the slicing axis; an Identity for no axes (a
    Squeeze without axes would drop every unit dim)."""
    out = node.outputs[0]
    if not axes:
        same = oir.Value(name=f"{out.name}/lifted", type=out.type, shape=_unknown_dims(x_rank + 1))
        identity = oir.Node("", "Identity", [whole], outputs=[same], name=f"{node.name}/lifted")
        return _Lifted([inherit_meta(identity, node)], same, axis, x_rank)
    new_axes = [a + (a >= axis) for a in axes]
    return _with_axes("Squeeze", node, whole, new_axes, axis - sum(a < axis for a in axes), x_rank - len(set(axes)))


def _with_axes(op: str, node: oir.Node, whole: oir.Value, axes: list[int], new_axis: int, new_rank: int) -> _Lifted:
    """op(whole, axes) (a Squeeze or Unsqueeze, its axes a new Constant) standing for `node` lifted: a result whose
    slices, of rank `new_rank`, are cut on `new_axis`."""
    out = node.outputs[0]
    axes_value = oir.Value(name=f"{out.name}/lifted_axes",
                          const_value=oir.tensor(np.array(axes, np.int64), name=f"{out.name}/lifted_axes"))
    axes_node = oir.Node("", "Constant", [], [oir.AttrTensor("value", axes_value.const_value)],
                        outputs=[oir.Value(name=f"{out.name}/lifted_axes")], name=f"{out.name}/lifted_axes_node")
    value = oir.Value(name=f"{out.name}/lifted", type=out.type, shape=_unknown_dims(new_rank + 1))
    lifted = oir.Node("", op, [whole, axes_node.outputs[0]], outputs=[value], name=f"{node.name}/lifted")
    return _Lifted([inherit_meta(axes_node, node), inherit_meta(lifted, node)], value, new_axis, new_rank)


def _lift_unsqueeze(node: oir.Node, axes: list[int], axis: int, x_rank: int, whole: oir.Value) -> _Lifted | None:
    """Unsqueeze(whole) adding the slice's new unit `axes` (positions in the slice's result, of rank x_rank +
    len(axes)), the slicing axis kept just before the dim it preceded in the slice."""
    out_rank = x_rank + len(axes)
    new = sorted(a + out_rank if a < 0 else a for a in axes)
    if len(set(new)) != len(new) or not all(0 <= a < out_rank for a in new):
        return None
    kept = [i for i in range(out_rank) if i not in new]  # where the slice's dims land, in order
    new_axis = kept[axis] if axis < x_rank else out_rank
    return _with_axes("Unsqueeze", node, whole, [a + (a >= new_axis) for a in new], new_axis, out_rank)


def _dims(shape: oir.Shape | None) -> list[int | None] | None:
    return None if shape is None else [d if isinstance(d, int) else None for d in shape]


def _reshape_as_squeeze(node: oir.Node, dims: list[int | None] | None) -> list[int] | None:
    """The axes that a Reshape to a constant shape drops from its input (of dims `dims`, None where unknown), when
    it only drops unit dims (known to be 1) and keeps the others in place: [B, 1, I] -> [-1, I] is Squeeze(1)."""
    target = const_ints(node.inputs[1]) if len(node.inputs) > 1 else None
    if target is None or dims is None or target.count(-1) > 1:
        return None
    x_rank = len(dims)
    allowzero = node.attributes.get("allowzero")
    copies = allowzero is None or allowzero.as_int() == 0  # a 0 copies the input dim at its position, else is 0
    units = [i for i, d in enumerate(dims) if d == 1]
    for drop in itertools.combinations(units, x_rank - len(target)) if len(target) <= x_rank else ():
        kept = [i for i in range(x_rank) if i not in drop]
        # every kept dim matched exactly; a -1 then takes the one left, which is the input's
        if all(t == -1 or (t == 0 and (i == j if copies else dims[i] == 0)) or (t > 0 and dims[i] == t)
               for j, (i, t) in enumerate(zip(kept, target))):
            return list(drop)
    return None


def _unknown_dims(n: int) -> oir.Shape:
    return oir.Shape([None] * n)


def _slice_value(out: oir.Value, lifted: _Lifted) -> oir.Value:
    """The body's value for one slice of the lifted result (replacing `out`)."""
    shape = out.shape if out.shape is not None and len(out.shape) == lifted.rank else _unknown_dims(lifted.rank)
    return oir.Value(name=f"{out.name}/slice", type=out.type, shape=shape)


def _lift_scan(scan: oir.Node, body: oir.Graph, outer: oir.Graph) -> bool:
    n_scan = node_int(scan, "num_scan_inputs")
    n_state = len(scan.inputs) - n_scan
    axes = scan_ints(scan, "scan_input_axes", n_scan)
    dirs = scan_ints(scan, "scan_input_directions", n_scan)
    modified = False
    work = list(range(n_scan))
    while work:
        j = work.pop(0)
        x, whole = body.inputs[n_state + j], scan.inputs[n_state + j]
        x_rank = rank(x)
        if x_rank is None and rank(whole) is not None:
            x_rank = rank(whole) - 1  # type: ignore[operator]
        if x_rank is None or whole is None:
            continue
        axis = axes[j] + x_rank + 1 if axes[j] < 0 else axes[j]
        for use in list(x.uses()):
            node = use.node
            if node.graph is not body:
                continue
            lifted = _lift(node, x, axis, x_rank, whole, body)
            if lifted is None:
                continue
            outer.insert_before(scan, lifted.nodes)
            out = node.outputs[0]
            sliced = _slice_value(out, lifted)
            scan.resize_inputs(len(scan.inputs) + 1)
            scan.replace_input_with(len(scan.inputs) - 1, lifted.value)
            body.inputs.append(sliced)
            axes.append(lifted.axis)
            dirs.append(dirs[j])
            record(out, sliced)
            out.replace_all_uses_with(sliced)
            body.remove(node, safe=True)
            work.append(len(axes) - 1)
            modified = True
    if not modified:
        return False
    keep_read_scan_inputs(scan, body, axes, dirs)
    return True


def node_int(node: oir.Node, name: str) -> int:
    return node.attributes[name].as_int()


def _gather_slice(node: oir.Node, body: oir.Graph) -> tuple[oir.Value, oir.Value, int] | None:
    """(whole, index, axis) when `node` is a Gather of an outer value at a scalar iteration-dependent index."""
    if node.op_type != "Gather" or not is_default_domain(node) or len(node.inputs) != 2:
        return None
    whole, index = node.inputs
    if whole is None or index is None or defined_in(whole, body) or not defined_in(index, body) or rank(index) != 0:
        return None
    r = rank(whole)
    if r is None:
        return None
    a = node.attributes["axis"].as_int() if "axis" in node.attributes else 0
    return whole, index, a + r if a < 0 else a


def _lift_loop(loop: oir.Node, body: oir.Graph, outer: oir.Graph) -> bool:
    modified = False
    work = [n for n in body if _gather_slice(n, body)]
    while work:
        gather = work.pop(0)
        if gather.graph is not body:
            continue
        found = _gather_slice(gather, body)
        assert found is not None
        whole, index, axis = found
        x = gather.outputs[0]
        x_rank = rank(whole) - 1  # type: ignore[operator]
        for use in list(x.uses()):
            node = use.node
            if node.graph is not body:
                continue
            lifted = _lift(node, x, axis, x_rank, whole, body)
            if lifted is None:
                continue
            outer.insert_before(loop, lifted.nodes)
            out = node.outputs[0]
            sliced = _slice_value(out, lifted)
            new_gather = oir.Node("", "Gather", [lifted.value, index], [oir.AttrInt64("axis", lifted.axis)],
                                 outputs=[sliced], name=f"{node.name}/gather")
            body.insert_before(node, inherit_meta(new_gather, node))
            record(out, sliced)
            out.replace_all_uses_with(sliced)
            body.remove(node, safe=True)
            work.append(new_gather)
            modified = True
    return modified


def _gathers_from_slices(body: oir.Graph) -> bool:
    """Squeeze(Slice(X, s, s + 1, axes=[a]), [a]) of an outer X -> Gather(X, s as a scalar, axis=a); also with a
    Reshape that only drops axis a in place of the Squeeze."""
    modified = False
    for squeeze in list(body):
        if squeeze.op_type not in ("Squeeze", "Reshape") or not is_default_domain(squeeze) \
                or len(squeeze.inputs) != 2:
            continue
        sliced = squeeze.inputs[0]
        cut = sliced.producer() if sliced is not None else None
        if cut is None or cut.op_type != "Slice" or not is_default_domain(cut) or cut.graph is not body:
            continue
        ins = list(cut.inputs) + [None] * (5 - len(cut.inputs))
        whole, start, end, axes, steps = ins
        if whole is None or start is None or defined_in(whole, body):
            continue
        cut_axes = const_ints(axes)
        r = rank(whole)
        if cut_axes is None or len(cut_axes) != 1 or (r is None and cut_axes[0] < 0):
            continue
        a = cut_axes[0] + r if cut_axes[0] < 0 else cut_axes[0]  # type: ignore[operator]
        if squeeze.op_type == "Squeeze":
            squeezed = const_ints(squeeze.inputs[1])
            if squeezed is not None and len(squeezed) == 1 and squeezed[0] < 0:
                squeezed = None if r is None else [squeezed[0] + r]
        else:
            own, outer = _dims(sliced.shape), _dims(whole.shape)  # the slice is the whole with 1 at axis a
            dims = None
            if outer is not None and len(outer) == r:
                dims = [o if own is None or len(own) != r or own[i] is None else own[i] for i, o in enumerate(outer)]
                dims[a] = 1
            squeezed = _reshape_as_squeeze(squeeze, dims)
        if squeezed != [a]:
            continue
        if steps is not None and const_ints(steps) != [1]:
            continue
        if not _is_plus_one(end, start):
            continue
        index, extra = _scalar_of(start, body)
        value = oir.Value(name=f"{squeeze.outputs[0].name}/gathered", type=squeeze.outputs[0].type,
                         shape=squeeze.outputs[0].shape)
        gather = oir.Node("", "Gather", [whole, index], [oir.AttrInt64("axis", a)], outputs=[value],
                         name=f"{squeeze.name}/gather")
        body.insert_before(squeeze, [inherit_meta(n, squeeze) for n in (*extra, gather)])
        record(squeeze.outputs[0], value)
        squeeze.outputs[0].replace_all_uses_with(value, replace_graph_outputs=True)
        modified = True
    return modified


def _is_plus_one(end: oir.Value | None, start: oir.Value) -> bool:
    node = end.producer() if end is not None else None
    if node is None or node.op_type != "Add" or not is_default_domain(node) or len(node.inputs) != 2:
        return False
    a, b = node.inputs
    other = b if a is start else a if b is start else None
    arr = literal_array(other)
    return arr is not None and arr.shape in ((), (1,)) and arr.dtype.kind in "iu" and int(arr.reshape(-1)[0]) == 1


def _scalar_of(start: oir.Value, body: oir.Graph) -> tuple[oir.Value, list[oir.Node]]:
    """`start` (one element) as a rank-0 value: the iteration number itself when start is just it * 1 reshaped to
    [1], else Squeeze(start)."""
    v = start
    node = v.producer()
    if node is not None and node.op_type == "Mul" and is_default_domain(node) and len(node.inputs) == 2:
        a, b = node.inputs
        for this, other in ((a, b), (b, a)):
            arr = literal_array(other)
            if this is not None and arr is not None and arr.size == 1 and arr.ndim <= 1 and arr.reshape(-1)[0] == 1:
                v = this
                node = v.producer()
                break
    if node is not None and node.op_type == "Reshape" and is_default_domain(node) and node.inputs[0] is not None \
            and rank(node.inputs[0]) == 0 and node.inputs[0].dtype == start.dtype:
        return node.inputs[0], []
    scalar = oir.Value(name=f"{start.name}/scalar", type=start.type, shape=oir.Shape([]))
    return scalar, [oir.Node("", "Squeeze", [start], outputs=[scalar], name=f"{start.name}/scalar_node")]

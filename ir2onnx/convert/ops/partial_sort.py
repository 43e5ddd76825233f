"""The order in which C++'s std::partial_sort (GNU libstdc++, as OpenVINO's CPU plugin is built) leaves the k best
of a score array, comparing `score[a] > score[b]`.

The standard leaves the order of equal scores unspecified, and libstdc++'s heap selection does not keep them in
index order; OpenVINO's detection ops (Proposal, ...) take their boxes in that order, so equal scores change which
boxes are kept and how they are listed. `partial_sort_order` emits ONNX that reproduces it exactly: TopK when the
k + 1 best scores are all distinct (the order is then unique), otherwise, under an If, libstdc++'s algorithm step by
step: make_heap on the first k, each later element replacing the heap's top when better (pop_heap), then sort_heap,
each heap adjustment a sift-down then push-up Loop over a heap of indices.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import onnx_ir as ir

from ir2onnx.convert.builder import GraphBuilder

I64, BOOL = ir.DataType.INT64, ir.DataType.BOOL
Spec = tuple[ir.DataType, int]  # element type and rank of a body value


def _body(b: GraphBuilder, name: str, carried: Sequence[Spec],
          fn: Callable[..., Sequence[ir.Value]]) -> ir.Graph:
    """A Loop body: (iteration, condition, *carried) -> (condition, *carried); fn(cb, it, *carried) returns
    (condition, *carried)."""
    cb = b.child()
    it = cb.add_input(cb.names.fresh(f"{name}/it"), I64, [])
    cb.add_input(cb.names.fresh(f"{name}/cond"), BOOL, [])
    vals = [cb.add_input(cb.names.fresh(f"{name}/v"), t, [None] * r) for t, r in carried]
    outs = [cb.identity(v) if not cb.owns(v) else v for v in fn(cb, it, *vals)]
    for v, (t, r) in zip(outs, [(BOOL, 0), *carried]):
        v.type, v.shape = ir.TensorType(t), ir.Shape([None] * r)
    return cb.build(outs, b.names.fresh(f"{name}/body"))


def _branch(b: GraphBuilder, name: str, specs: Sequence[Spec], fn: Callable[[GraphBuilder], Sequence[ir.Value]]
            ) -> ir.Graph:
    cb = b.child()
    outs = [cb.identity(v) if not cb.owns(v) else v for v in fn(cb)]
    for v, (t, r) in zip(outs, specs):
        v.type, v.shape = ir.TensorType(t), ir.Shape([None] * r)
    return cb.build(outs, b.names.fresh(f"{name}/branch"))


def _at(b: GraphBuilder, x: ir.Value, i: ir.Value) -> ir.Value:
    return b.op("Gather", [x, i], {"axis": 0})


def _put(b: GraphBuilder, heap: ir.Value, i: ir.Value, v: ir.Value) -> ir.Value:
    return b.op("ScatterElements", [heap, b.reshape(i, [1]), b.reshape(v, [1])], {"axis": 0})


def _adjust(b: GraphBuilder, name: str, keys: ir.Value, heap: ir.Value, hole: ir.Value, length: ir.Value,
            value: ir.Value) -> ir.Value:
    """libstdc++ __adjust_heap(first, hole, length, value) with comp(x, y) = keys[x] > keys[y]; scalars int64."""
    one, two = b.i64(1), b.i64(2)
    top = hole
    inner = b.op("Div", [b.op("Sub", [length, one]), two])  # (len - 1) / 2

    def better(cb: GraphBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
        return cb.op("Greater", [_at(cb, keys, x), _at(cb, keys, y)])

    def down(cb: GraphBuilder, _it: ir.Value, h: ir.Value, sc: ir.Value, hp: ir.Value) -> list[ir.Value]:
        c = cb.op("Mul", [cb.op("Add", [sc, one]), two])
        c = cb.op("Sub", [c, cb.cast(better(cb, _at(cb, hp, c), _at(cb, hp, cb.op("Sub", [c, one]))), I64)])
        hp = _put(cb, hp, h, _at(cb, hp, c))
        return [cb.op("Less", [c, inner]), c, c, hp]

    spec = [(I64, 0), (I64, 0), (I64, 1)]
    hole, sc, heap = b.op_multi("Loop", [None, b.op("Less", [hole, inner]), hole, hole, heap],
                                {"body": _body(b, f"{name}/down", spec, down)}, outputs=3)
    # an even length's last parent has one child
    flag = b.op("And", [b.op("Equal", [b.op("Mod", [length, two]), b.i64(0)]),
                        b.op("Equal", [sc, b.op("Div", [b.op("Sub", [length, two]), two])])])
    child = b.op("Min", [b.op("Add", [b.op("Mul", [sc, two]), one]), b.op("Sub", [b.shape_of(heap, 0, 1), one])])
    child = b.reshape(child, [])
    heap = b.op("Where", [flag, _put(b, heap, hole, _at(b, heap, child)), heap])
    hole = b.op("Where", [flag, child, hole])

    # __push_heap: move the value up while its parent compares worse
    def parent_of(cb: GraphBuilder, h: ir.Value) -> ir.Value:
        return cb.op("Div", [cb.op("Max", [cb.op("Sub", [h, one]), cb.i64(0)]), two])

    def up_cond(cb: GraphBuilder, h: ir.Value, hp: ir.Value) -> ir.Value:
        return cb.op("And", [cb.op("Greater", [h, top]), better(cb, _at(cb, hp, parent_of(cb, h)), value)])

    def up(cb: GraphBuilder, _it: ir.Value, h: ir.Value, hp: ir.Value) -> list[ir.Value]:
        p = parent_of(cb, h)
        hp = _put(cb, hp, h, _at(cb, hp, p))
        return [up_cond(cb, p, hp), p, hp]

    hole, heap = b.op_multi("Loop", [None, up_cond(b, hole, heap), hole, heap],
                            {"body": _body(b, f"{name}/up", [(I64, 0), (I64, 1)], up)}, outputs=2)
    return _put(b, heap, hole, value)


def _heap_order(b: GraphBuilder, name: str, keys: ir.Value, k: ir.Value) -> ir.Value:
    """keys [M] (float), k scalar int64 <= M -> [k] indices in libstdc++ partial_sort's order."""
    one, two, zero = b.i64(1), b.i64(2), b.i64(0)
    heap = b.op("Range", [zero, k, one])
    # make_heap: adjust every parent from (k - 2) / 2 down to 0
    first = b.op("Div", [b.op("Sub", [k, two]), two])
    n_make = b.op("Where", [b.op("GreaterOrEqual", [k, two]), b.op("Add", [first, one]), zero])

    def make(cb: GraphBuilder, it: ir.Value, hp: ir.Value) -> list[ir.Value]:
        parent = cb.op("Sub", [first, it])
        return [cb.const(np.array(True)), _adjust(cb, f"{name}/make", keys, hp, parent, k, _at(cb, hp, parent))]

    heap = b.op("Loop", [n_make, None, heap], {"body": _body(b, f"{name}/make", [(I64, 1)], make)})

    # every later element that beats the top replaces it
    m = b.reshape(b.shape_of(keys, 0, 1), [])

    def select(cb: GraphBuilder, it: ir.Value, hp: ir.Value) -> list[ir.Value]:
        i = cb.op("Add", [k, it])
        beats = cb.op("Greater", [_at(cb, keys, i), _at(cb, keys, _at(cb, hp, zero))])
        then = _branch(cb, f"{name}/pop", [(I64, 1)], lambda bb: [_adjust(bb, f"{name}/pop", keys, hp, zero, k, i)])
        other = _branch(cb, f"{name}/keep", [(I64, 1)], lambda bb: [hp])
        return [cb.const(np.array(True)), cb.op("If", [beats], {"then_branch": then, "else_branch": other})]

    heap = b.op("Loop", [b.op("Sub", [m, k]), None, heap], {"body": _body(b, f"{name}/select", [(I64, 1)], select)})

    # sort_heap: move the top behind the shrinking heap
    def sort(cb: GraphBuilder, it: ir.Value, hp: ir.Value) -> list[ir.Value]:
        last = cb.op("Sub", [cb.op("Sub", [k, one]), it])
        v = _at(cb, hp, last)
        hp = _put(cb, hp, last, _at(cb, hp, zero))
        return [cb.const(np.array(True)), _adjust(cb, f"{name}/sort", keys, hp, zero, last, v)]

    n_sort = b.op("Max", [b.op("Sub", [k, one]), zero])
    return b.op("Loop", [n_sort, None, heap], {"body": _body(b, f"{name}/sort", [(I64, 1)], sort)})


def partial_sort_order(b: GraphBuilder, name: str, keys: ir.Value, k: ir.Value) -> tuple[ir.Value, ir.Value]:
    """keys [N, M] float, k [1] int64 (<= M) -> (values [N, k], indices [N, k]) of std::partial_sort per row."""
    values, order = b.op_multi("TopK", [keys, k], {"axis": 1, "largest": 1, "sorted": 1}, outputs=2)
    # the order is unique when the k + 1 best of every row are distinct
    k1 = b.op("Min", [b.op("Add", [k, b.i64([1])]), b.shape_of(keys, 1, 2)])
    best, _ = b.op_multi("TopK", [keys, k1], {"axis": 1, "largest": 1, "sorted": 1}, outputs=2)
    ties = b.op("Equal", [b.slice(best, [0], [-1], [1]), b.slice(best, [1], [2**62], [1])])
    any_tie = b.cast(b.reduce("ReduceMax", b.cast(ties, ir.DataType.INT32), None, keepdims=False), BOOL)
    k0 = b.reshape(k, [])

    def heap_rows(bb: GraphBuilder) -> list[ir.Value]:
        def row(cb: GraphBuilder, it: ir.Value) -> list[ir.Value]:
            keys_n = cb.reshape(cb.op("Gather", [keys, it], {"axis": 0}), [-1])
            return [cb.const(np.array(True)), _heap_order(cb, name, keys_n, k0)]

        cb = bb.child()
        it = cb.add_input(cb.names.fresh(f"{name}/row"), I64, [])
        cb.add_input(cb.names.fresh(f"{name}/cond"), BOOL, [])
        cond, out = row(cb, it)
        cond = cb.identity(cond)
        for v, (t, r) in ((cond, (BOOL, 0)), (out, (I64, 1))):
            v.type, v.shape = ir.TensorType(t), ir.Shape([None] * r)
        body = cb.build([cond, out], bb.names.fresh(f"{name}/rows"))
        n = bb.reshape(bb.shape_of(keys, 0, 1), [])
        return [bb.op("Loop", [n, bb.const(np.array(True))], {"body": body})]

    slow = _branch(b, f"{name}/heap", [(I64, 2)], heap_rows)
    fast = _branch(b, f"{name}/topk", [(I64, 2)], lambda bb: [order])
    order = b.op("If", [any_tie], {"then_branch": slow, "else_branch": fast})
    values = b.op("GatherElements", [keys, order], {"axis": 1})
    return values, order

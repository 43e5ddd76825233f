"""The orders in which C++'s std::partial_sort and std::sort (GNU libstdc++, as OpenVINO's CPU plugin is built)
leave the best of a score array, comparing `score[a] > score[b]`.

The standard leaves the order of equal scores unspecified, and libstdc++'s heap selection does not keep them in
index order; OpenVINO's detection ops (Proposal, ...) take their boxes in that order, so equal scores change which
boxes are kept and how they are listed. `partial_sort_order` emits ONNX that reproduces it exactly: TopK when the
k + 1 best scores are all distinct (the order is then unique), otherwise, under an If, libstdc++'s algorithm step by
step: make_heap on the first k, each later element replacing the heap's top when better (pop_heap), then sort_heap,
each heap adjustment a sift-down then push-up Loop over a heap of indices. `partial_sort_pairs` does it for a
comparator with a tie-break, `sort_order` for std::sort's introsort (see there).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder

I64, BOOL = oir.DataType.INT64, oir.DataType.BOOL
Spec = tuple[oir.DataType, int]  # element type and rank of a body value


def _body(b: GraphBuilder, name: str, carried: Sequence[Spec],
          fn: Callable[..., Sequence[oir.Value]]) -> oir.Graph:
    """A Loop body: (iteration, condition, *carried) -> (condition, *carried); fn(cb, it, *carried) returns
    (condition, *carried)."""
    cb = b.child()
    it = cb.add_input(cb.names.fresh(f"{name}/it"), I64, [])
    cb.add_input(cb.names.fresh(f"{name}/cond"), BOOL, [])
    vals = [cb.add_input(cb.names.fresh(f"{name}/v"), t, [None] * r) for t, r in carried]
    outs = [cb.identity(v) if not cb.owns(v) else v for v in fn(cb, it, *vals)]
    for v, (t, r) in zip(outs, [(BOOL, 0), *carried]):
        v.type, v.shape = oir.TensorType(t), oir.Shape([None] * r)
    return cb.build(outs, b.names.fresh(f"{name}/body"))


def _at(b: GraphBuilder, x: oir.Value, i: oir.Value) -> oir.Value:
    return b.op("Gather", [x, i], {"axis": 0})


def _put(b: GraphBuilder, heap: oir.Value, i: oir.Value, v: oir.Value) -> oir.Value:
    return b.op("ScatterElements", [heap, b.reshape(i, [1]), b.reshape(v, [1])], {"axis": 0})


def _adjust(b: GraphBuilder, name: str, keys: oir.Value, heap: oir.Value, hole: oir.Value, length: oir.Value,
            value: oir.Value, tiebreak: oir.Value | None = None) -> oir.Value:
    """libstdc++ __adjust_heap(first, hole, length, value) with comp(x, y) = keys[x] > keys[y] (or, with
    `tiebreak`, equal keys and tiebreak[x] < tiebreak[y]); scalars int64."""
    one, two = b.i64(1), b.i64(2)
    top = hole
    inner = b.op("Div", [b.op("Sub", [length, one]), two])  # (len - 1) / 2

    def better(cb: GraphBuilder, x: oir.Value, y: oir.Value) -> oir.Value:
        kx, ky = _at(cb, keys, x), _at(cb, keys, y)
        gt = cb.op("Greater", [kx, ky])
        if tiebreak is None:
            return gt
        tie = cb.op("And", [cb.op("Equal", [kx, ky]), cb.op("Less", [_at(cb, tiebreak, x), _at(cb, tiebreak, y)])])
        return cb.op("Or", [gt, tie])

    def down(cb: GraphBuilder, _it: oir.Value, h: oir.Value, sc: oir.Value, hp: oir.Value) -> list[oir.Value]:
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
    def parent_of(cb: GraphBuilder, h: oir.Value) -> oir.Value:
        return cb.op("Div", [cb.op("Max", [cb.op("Sub", [h, one]), cb.i64(0)]), two])

    def up_cond(cb: GraphBuilder, h: oir.Value, hp: oir.Value) -> oir.Value:
        return cb.op("And", [cb.op("Greater", [h, top]), better(cb, _at(cb, hp, parent_of(cb, h)), value)])

    def up(cb: GraphBuilder, _it: oir.Value, h: oir.Value, hp: oir.Value) -> list[oir.Value]:
        p = parent_of(cb, h)
        hp = _put(cb, hp, h, _at(cb, hp, p))
        return [up_cond(cb, p, hp), p, hp]

    hole, heap = b.op_multi("Loop", [None, up_cond(b, hole, heap), hole, heap],
                            {"body": _body(b, f"{name}/up", [(I64, 0), (I64, 1)], up)}, outputs=2)
    return _put(b, heap, hole, value)


def _heap_order(b: GraphBuilder, name: str, keys: oir.Value, k: oir.Value, tiebreak: oir.Value | None = None
                ) -> oir.Value:
    """keys [M] (float), k scalar int64 <= M -> [k] indices in libstdc++ partial_sort's order (comparator as
    _adjust)."""
    one, two, zero = b.i64(1), b.i64(2), b.i64(0)
    heap = b.op("Range", [zero, k, one])
    # make_heap: adjust every parent from (k - 2) / 2 down to 0
    first = b.op("Div", [b.op("Sub", [k, two]), two])
    n_make = b.op("Where", [b.op("GreaterOrEqual", [k, two]), b.op("Add", [first, one]), zero])

    def make(cb: GraphBuilder, it: oir.Value, hp: oir.Value) -> list[oir.Value]:
        parent = cb.op("Sub", [first, it])
        return [cb.const(np.array(True)), _adjust(cb, f"{name}/make", keys, hp, parent, k, _at(cb, hp, parent),
                                                      tiebreak)]

    heap = b.op("Loop", [n_make, None, heap], {"body": _body(b, f"{name}/make", [(I64, 1)], make)})

    # every later element that beats the top replaces it
    m = b.reshape(b.shape_of(keys, 0, 1), [])

    def select(cb: GraphBuilder, it: oir.Value, hp: oir.Value) -> list[oir.Value]:
        i = cb.op("Add", [k, it])
        ki, k0 = _at(cb, keys, i), _at(cb, keys, _at(cb, hp, zero))
        beats = cb.op("Greater", [ki, k0])
        if tiebreak is not None:
            beats = cb.op("Or", [beats, cb.op("And", [cb.op("Equal", [ki, k0]), cb.op(
                "Less", [_at(cb, tiebreak, i), _at(cb, tiebreak, _at(cb, hp, zero))])])])
        then = cb.branch(f"{name}/pop", [(I64, 1)],
                       lambda bb: [_adjust(bb, f"{name}/pop", keys, hp, zero, k, i, tiebreak)])
        other = cb.branch(f"{name}/keep", [(I64, 1)], lambda bb: [hp])
        return [cb.const(np.array(True)), cb.op("If", [beats], {"then_branch": then, "else_branch": other})]

    heap = b.op("Loop", [b.op("Sub", [m, k]), None, heap], {"body": _body(b, f"{name}/select", [(I64, 1)], select)})

    # sort_heap: move the top behind the shrinking heap
    def sort(cb: GraphBuilder, it: oir.Value, hp: oir.Value) -> list[oir.Value]:
        last = cb.op("Sub", [cb.op("Sub", [k, one]), it])
        v = _at(cb, hp, last)
        hp = _put(cb, hp, last, _at(cb, hp, zero))
        return [cb.const(np.array(True)), _adjust(cb, f"{name}/sort", keys, hp, zero, last, v, tiebreak)]

    n_sort = b.op("Max", [b.op("Sub", [k, one]), zero])
    return b.op("Loop", [n_sort, None, heap], {"body": _body(b, f"{name}/sort", [(I64, 1)], sort)})


def partial_sort_order(b: GraphBuilder, name: str, keys: oir.Value, k: oir.Value) -> tuple[oir.Value, oir.Value]:
    """keys [N, M] float, k [1] int64 (<= M) -> (values [N, k], indices [N, k]) of std::partial_sort per row."""
    values, order = b.op_multi("TopK", [keys, k], {"axis": 1, "largest": 1, "sorted": 1}, outputs=2)
    # the order is unique when the k + 1 best of every row are distinct
    k1 = b.op("Min", [b.op("Add", [k, b.i64([1])]), b.shape_of(keys, 1, 2)])
    best, _ = b.op_multi("TopK", [keys, k1], {"axis": 1, "largest": 1, "sorted": 1}, outputs=2)
    ties = b.op("Equal", [b.slice(best, [0], [-1], [1]), b.slice(best, [1], [2**62], [1])])
    any_tie = b.cast(b.reduce("ReduceMax", b.cast(ties, oir.DataType.INT32), None, keepdims=False), BOOL)
    k0 = b.reshape(k, [])

    def heap_rows(bb: GraphBuilder) -> list[oir.Value]:
        def row(cb: GraphBuilder, it: oir.Value) -> list[oir.Value]:
            keys_n = cb.reshape(cb.op("Gather", [keys, it], {"axis": 0}), [-1])
            return [cb.const(np.array(True)), _heap_order(cb, name, keys_n, k0)]

        cb = bb.child()
        it = cb.add_input(cb.names.fresh(f"{name}/row"), I64, [])
        cb.add_input(cb.names.fresh(f"{name}/cond"), BOOL, [])
        cond, out = row(cb, it)
        cond = cb.identity(cond)
        for v, (t, r) in ((cond, (BOOL, 0)), (out, (I64, 1))):
            v.type, v.shape = oir.TensorType(t), oir.Shape([None] * r)
        body = cb.build([cond, out], bb.names.fresh(f"{name}/rows"))
        n = bb.reshape(bb.shape_of(keys, 0, 1), [])
        return [bb.op("Loop", [n, bb.const(np.array(True))], {"body": body})]

    slow = b.branch(f"{name}/heap", [(I64, 2)], heap_rows)
    fast = b.branch(f"{name}/topk", [(I64, 2)], lambda bb: [order])
    order = b.op("If", [any_tie], {"then_branch": slow, "else_branch": fast})
    values = b.op("GatherElements", [keys, order], {"axis": 1})
    return values, order


def _first_at_least(b: GraphBuilder, mask: oir.Value, start: oir.Value) -> oir.Value:
    """The lowest position j >= start where mask [M] holds (one must exist), scalar int64."""
    pos = b.op("Range", [b.i64(0), b.reshape(b.shape_of(mask), []), b.i64(1)])
    hit = b.op("And", [mask, b.op("GreaterOrEqual", [pos, start])])
    big = b.i64(2**62)
    return b.reduce("ReduceMin", b.op("Where", [hit, pos, big]), None, keepdims=False)


def _last_at_most(b: GraphBuilder, mask: oir.Value, end: oir.Value) -> oir.Value:
    """The highest position j <= end where mask [M] holds (one must exist), scalar int64."""
    pos = b.op("Range", [b.i64(0), b.reshape(b.shape_of(mask), []), b.i64(1)])
    hit = b.op("And", [mask, b.op("LessOrEqual", [pos, end])])
    return b.reduce("ReduceMax", b.op("Where", [hit, pos, b.i64(-1)]), None, keepdims=False)


def _swap(b: GraphBuilder, arr: oir.Value, i: oir.Value, j: oir.Value) -> oir.Value:
    ij = b.concat([b.reshape(i, [1]), b.reshape(j, [1])], 0)
    ji = b.concat([b.reshape(j, [1]), b.reshape(i, [1])], 0)
    return b.op("ScatterElements", [arr, ij, _at(b, arr, ji)], {"axis": 0})


def _partition(b: GraphBuilder, name: str, keys: oir.Value, arr: oir.Value, first: oir.Value, last: oir.Value
               ) -> tuple[oir.Value, oir.Value]:
    """libstdc++ __unguarded_partition_pivot on arr[first:last] (median of first + 1, middle, last - 1 moved to
    first, then Hoare partition around it) -> (arr, cut)."""
    one = b.i64(1)
    mid = b.op("Add", [first, b.op("Div", [b.op("Sub", [last, first]), b.i64(2)])])
    a, m, c = b.op("Add", [first, one]), mid, b.op("Sub", [last, one])
    ka, km, kc = (_at(b, keys, _at(b, arr, x)) for x in (a, m, c))
    gt = lambda x, y: b.op("Greater", [x, y])
    # __move_median_to_first
    pick = b.op("Where", [gt(ka, km),
                          b.op("Where", [gt(km, kc), m, b.op("Where", [gt(ka, kc), c, a])]),
                          b.op("Where", [gt(ka, kc), a, b.op("Where", [gt(km, kc), c, m])])])
    arr = _swap(b, arr, first, pick)
    pivot = _at(b, keys, _at(b, arr, first))

    def step(cb: GraphBuilder, _it: oir.Value, f: oir.Value, lst: oir.Value, ar: oir.Value) -> list[oir.Value]:
        k = cb.op("Gather", [keys, ar], {"axis": 0})
        f2 = _first_at_least(cb, cb.op("Not", [cb.op("Greater", [k, pivot])]), f)
        l2 = _last_at_most(cb, cb.op("Not", [cb.op("Greater", [pivot, k])]), cb.op("Sub", [lst, one]))
        go = cb.op("Less", [f2, l2])
        swapped = _swap(cb, ar, cb.op("Where", [go, f2, l2]), l2)
        return [go, cb.op("Where", [go, cb.op("Add", [f2, one]), f2]), l2, swapped]

    spec = [(I64, 0), (I64, 0), (I64, 1)]
    cut, _, arr = b.op_multi("Loop", [None, b.const(np.array(True)), a, last, arr],
                             {"body": _body(b, f"{name}/partition", spec, step)}, outputs=3)
    return arr, cut


def _introsort_arrangement(b: GraphBuilder, name: str, keys: oir.Value) -> oir.Value:
    """keys [M] -> the index arrangement libstdc++'s __introsort_loop leaves (comparing keys[x] > keys[y]): segments
    over 16 long are partitioned (or, past the depth limit 2 * floor(log2 M), heap-sorted) until all are short."""
    n = b.reshape(b.shape_of(keys, 0, 1), [])
    arr = b.op("Range", [b.i64(0), n, b.i64(1)])
    powers = b.const(2 ** np.arange(63, dtype=np.int64))
    log2 = b.op("Sub", [b.reduce("ReduceSum", b.cast(b.op("LessOrEqual", [powers, n]), I64), None, keepdims=False),
                        b.i64(1)])  # std::__lg
    depth = b.op("Mul", [log2, b.i64(2)])
    stack = b.reshape(b.concat([b.i64([0]), b.reshape(n, [1]), b.reshape(depth, [1])], 0), [1, 3])

    def segment(cb: GraphBuilder, _it: oir.Value, st: oir.Value, ar: oir.Value) -> list[oir.Value]:
        top = cb.op("Gather", [st, cb.i64(-1)], {"axis": 0})
        rest = cb.slice(st, [0], [-1], [0])
        first, last, dep = (cb.op("Gather", [top, cb.i64(j)], {"axis": 0}) for j in range(3))
        long = cb.op("Greater", [cb.op("Sub", [last, first]), cb.i64(16)])
        heap = cb.op("Equal", [dep, cb.i64(0)])

        def skip(bb: GraphBuilder) -> list[oir.Value]:
            return [rest, ar]

        def heapsort(bb: GraphBuilder) -> list[oir.Value]:
            seg = bb.op("Slice", [ar, bb.reshape(first, [1]), bb.reshape(last, [1]), bb.i64([0])])
            order = _heap_order(bb, f"{name}/heapsort", bb.op("Gather", [keys, seg], {"axis": 0}),
                                bb.op("Sub", [last, first]))
            idx = bb.op("Range", [first, last, bb.i64(1)])
            return [rest, bb.op("ScatterElements", [ar, idx, bb.op("Gather", [seg, order], {"axis": 0})],
                                {"axis": 0})]

        def split(bb: GraphBuilder) -> list[oir.Value]:
            new, cut = _partition(bb, name, keys, ar, first, last)
            d1 = bb.op("Sub", [dep, bb.i64(1)])
            push = bb.reshape(bb.concat([bb.reshape(v, [1]) for v in (cut, last, d1, first, cut, d1)], 0), [2, 3])
            return [bb.concat([rest, push], 0), new]

        specs = [(I64, 2), (I64, 1)]
        work = cb.branch(f"{name}/work", specs, lambda bb: list(bb.op_multi(
            "If", [heap], {"then_branch": bb.branch(f"{name}/heap", specs, heapsort),
                           "else_branch": bb.branch(f"{name}/split", specs, split)}, outputs=2)))
        st2, ar2 = cb.op_multi("If", [long], {"then_branch": work,
                                              "else_branch": cb.branch(f"{name}/skip", specs, skip)}, outputs=2)
        more = cb.op("Greater", [cb.reshape(cb.shape_of(st2, 0, 1), []), cb.i64(0)])
        return [more, st2, ar2]

    _, arr = b.op_multi("Loop", [None, b.const(np.array(True)), stack, arr],
                        {"body": _body(b, f"{name}/introsort", [(I64, 2), (I64, 1)], segment)}, outputs=2)
    return arr


def sort_order(b: GraphBuilder, name: str, keys: oir.Value, k: oir.Value) -> oir.Value:
    """keys [M] float, k [1] int64 (<= M) -> the first k indices [k] of C++ std::sort (libstdc++ introsort)
    comparing keys[x] > keys[y]. Its final insertion sort is stable, so the result is a stable sort by descending
    key of the arrangement the introsort loop leaves: TopK (equal keys by lower position) on that arrangement, or
    on the keys themselves when the k + 1 best are distinct (the order is then unique)."""
    m = b.shape_of(keys, 0, 1)
    k1 = b.op("Min", [b.op("Add", [k, b.i64([1])]), m])
    best, _ = b.op_multi("TopK", [keys, k1], {"axis": 0, "largest": 1, "sorted": 1}, outputs=2)
    ties = b.op("Equal", [b.slice(best, [0], [-1], [0]), b.slice(best, [1], [2**62], [0])])
    any_tie = b.cast(b.reduce("ReduceMax", b.cast(ties, oir.DataType.INT32), None, keepdims=False), BOOL)

    def arranged(bb: GraphBuilder) -> list[oir.Value]:
        return [_introsort_arrangement(bb, name, keys)]

    def identity(bb: GraphBuilder) -> list[oir.Value]:
        return [bb.op("Range", [bb.i64(0), bb.reshape(m, []), bb.i64(1)])]

    arr = b.op("If", [any_tie], {"then_branch": b.branch(f"{name}/introsort", [(I64, 1)], arranged),
                                 "else_branch": b.branch(f"{name}/plain", [(I64, 1)], identity)})
    _, pos = b.op_multi("TopK", [b.op("Gather", [keys, arr], {"axis": 0}), k], {"axis": 0, "largest": 1,
                                                                              "sorted": 1}, outputs=2)
    return b.op("Gather", [arr, pos], {"axis": 0})


def partial_sort_pairs(b: GraphBuilder, name: str, keys: oir.Value, tiebreak: oir.Value, k: oir.Value) -> oir.Value:
    """keys [M] float, tiebreak [M] int64, k [1] int64 (<= M) -> the first k indices [k] of std::partial_sort
    comparing (keys[x] > keys[y]) or (equal keys and tiebreak[x] < tiebreak[y]): a stable sort by tiebreak then by
    descending key, or libstdc++'s heap selection when two of the k + 1 best tie on both."""
    _, first = b.op_multi("TopK", [tiebreak, b.shape_of(keys, 0, 1)], {"axis": 0, "largest": 0, "sorted": 1},
                          outputs=2)
    _, second = b.op_multi("TopK", [b.op("Gather", [keys, first], {"axis": 0}), k],
                           {"axis": 0, "largest": 1, "sorted": 1}, outputs=2)
    order = b.op("Gather", [first, second], {"axis": 0})
    m = b.shape_of(keys, 0, 1)
    k1 = b.op("Min", [b.op("Add", [k, b.i64([1])]), m])
    _, second1 = b.op_multi("TopK", [b.op("Gather", [keys, first], {"axis": 0}), k1],
                            {"axis": 0, "largest": 1, "sorted": 1}, outputs=2)
    best = b.op("Gather", [first, second1], {"axis": 0})
    kb, tb = b.op("Gather", [keys, best], {"axis": 0}), b.op("Gather", [tiebreak, best], {"axis": 0})

    def adjacent_equal(v: oir.Value) -> oir.Value:
        return b.op("Equal", [b.slice(v, [0], [-1], [0]), b.slice(v, [1], [2**62], [0])])

    ties = b.op("And", [adjacent_equal(kb), adjacent_equal(tb)])
    any_tie = b.cast(b.reduce("ReduceMax", b.cast(ties, oir.DataType.INT32), None, keepdims=False), BOOL)
    k0 = b.reshape(k, [])
    slow = b.branch(f"{name}/heap", [(I64, 1)], lambda bb: [_heap_order(bb, name, keys, k0, tiebreak)])
    fast = b.branch(f"{name}/topk", [(I64, 1)], lambda bb: [order])
    return b.op("If", [any_tie], {"then_branch": slow, "else_branch": fast})

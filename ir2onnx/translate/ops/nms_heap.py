"""std::partial_sort as libstdc++ runs it (heap select, then heap sort), as ONNX Loops over rows of candidates.

MatrixNms orders its candidates with std::partial_sort on the score alone; the order it leaves among equal scores is
that of libstdc++'s heap algorithms (__make_heap, __adjust_heap, __push_heap, __pop_heap, __sort_heap), which this
module replays step by step for every (batch, class) row at once. Rows without equal candidate scores take a plain
TopK instead (the same order: with distinct keys the sorted prefix is unique).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder

F32, I64, BOOL = oir.DataType.FLOAT, oir.DataType.INT64, oir.DataType.BOOL
_AXIS = {"axis": 2}

State = list[oir.Value]


def _loop(b: GraphBuilder, name: str, trips: oir.Value, states: Sequence[tuple[oir.Value, oir.DataType]],
          step: Callable[[GraphBuilder, oir.Value, State], State]) -> State:
    """A Loop of `trips` (scalar int64) steps carrying `states` (rank 3 each); `step` emits one step's nodes."""
    cb = b.child()
    it = cb.add_input(cb.names.fresh(f"{name}/i"), I64, [])
    cond = cb.add_input(cb.names.fresh(f"{name}/cond"), BOOL, [])
    ins = [cb.add_input(cb.names.fresh(f"{name}/s"), t, [None] * 3) for _, t in states]
    outs = [cb.identity(cond)] + [cb.identity(v) if not cb.owns(v) else v for v in step(cb, it, ins)]
    for v, (_, t) in zip(outs[1:], states):
        v.type, v.shape = oir.TensorType(t), oir.Shape([None] * 3)
    outs[0].type, outs[0].shape = oir.TensorType(BOOL), oir.Shape([])
    body = cb.build(outs, b.names.fresh(f"{name}/body"))
    res = b.op_multi("Loop", [trips, b.const(np.array(True)), *[v for v, _ in states]], {"body": body},
                     outputs=len(states))
    return list(res)


class _Heap:
    """Row-wise heap operations on A (box indices) and K (their scores), both [B, C, M]; positions are [B, C, 1]."""

    def __init__(self, last: oir.Value, steps: oir.Value) -> None:
        self.last = last  # M - 1 as [1]: positions are clamped into range where a row does nothing
        self.steps = steps  # scalar: enough steps for a walk from the root to a leaf

    def at(self, b: GraphBuilder, arr: oir.Value, pos: oir.Value) -> oir.Value:
        safe = b.op("Max", [b.op("Min", [pos, self.last]), b.i64([0])])
        return b.op("GatherElements", [arr, safe], _AXIS)

    def put(self, b: GraphBuilder, a: oir.Value, k: oir.Value, pos: oir.Value, va: oir.Value, vk: oir.Value,
            when: oir.Value) -> tuple[oir.Value, oir.Value]:
        """A[pos], K[pos] = va, vk where `when`, else unchanged."""
        safe = b.op("Max", [b.op("Min", [pos, self.last]), b.i64([0])])
        va = b.op("Where", [when, va, b.op("GatherElements", [a, safe], _AXIS)])
        vk = b.op("Where", [when, vk, b.op("GatherElements", [k, safe], _AXIS)])
        return (b.op("ScatterElements", [a, safe, va], _AXIS), b.op("ScatterElements", [k, safe, vk], _AXIS))

    def adjust(self, b: GraphBuilder, a: oir.Value, k: oir.Value, hole: oir.Value, length: oir.Value, va: oir.Value,
               vk: oir.Value, active: oir.Value) -> tuple[oir.Value, oir.Value]:
        """libstdc++ __adjust_heap(first, hole, length, value) with comp(x, y) = key(x) > key(y)."""
        top = hole
        half = b.op("Div", [b.op("Sub", [length, b.i64(1)]), b.i64(2)])

        def down(cb: GraphBuilder, _: oir.Value, s: State) -> State:
            a_, k_, hole_, child = s
            go = cb.op("And", [active, cb.op("Less", [child, half])])
            second = cb.op("Mul", [cb.op("Add", [child, cb.i64(1)]), cb.i64(2)])
            first = cb.op("Sub", [second, cb.i64(1)])
            pick = cb.op("Where", [cb.op("Greater", [self.at(cb, k_, second), self.at(cb, k_, first)]), first, second])
            child = cb.op("Where", [go, pick, child])
            a_, k_ = self.put(cb, a_, k_, hole_, self.at(cb, a_, child), self.at(cb, k_, child), go)
            return [a_, k_, cb.op("Where", [go, child, hole_]), child]

        a, k, hole, child = _loop(b, "sift_down", self.steps, [(a, I64), (k, F32), (hole, I64), (hole, I64)], down)
        even = b.op("Equal", [b.op("Mod", [length, b.i64(2)]), b.i64(0)])
        tail = b.op("And", [active, b.op("And", [even, b.op("Equal", [
            child, b.op("Div", [b.op("Sub", [length, b.i64(2)]), b.i64(2)])])])])
        left = b.op("Add", [b.op("Mul", [child, b.i64(2)]), b.i64(1)])
        a, k = self.put(b, a, k, hole, self.at(b, a, left), self.at(b, k, left), tail)
        hole = b.op("Where", [tail, left, hole])

        def up(cb: GraphBuilder, _: oir.Value, s: State) -> State:
            a_, k_, hole_ = s
            parent = cb.op("Div", [cb.op("Max", [cb.op("Sub", [hole_, cb.i64(1)]), cb.i64(0)]), cb.i64(2)])
            go = cb.op("And", [active, cb.op("And", [cb.op("Greater", [hole_, top]),
                                                     cb.op("Greater", [self.at(cb, k_, parent), vk])])])
            a_, k_ = self.put(cb, a_, k_, hole_, self.at(cb, a_, parent), self.at(cb, k_, parent), go)
            return [a_, k_, cb.op("Where", [go, parent, hole_])]

        a, k, hole = _loop(b, "sift_up", self.steps, [(a, I64), (k, F32), (hole, I64)], up)
        return self.put(b, a, k, hole, va, vk, active)


def partial_sort(b: GraphBuilder, scores: oir.Value, cand: oir.Value, middle: oir.Value) -> oir.Value:
    """scores, cand [B, C, M]; middle [B, C, 1] (<= candidates of the row) -> box indices [B, C, M] whose first
    `middle` are the row's candidates in the order std::partial_sort(candidates, middle, end, score >) leaves."""
    m = b.shape_of(scores, 2, 3)
    masked = b.op("Where", [cand, scores, b.const(np.float32(-np.inf))])
    vals, order = b.op_multi("TopK", [masked, m], {"axis": 2, "largest": 1, "sorted": 1}, outputs=2)
    count = b.reduce("ReduceSum", b.cast(cand, I64), [2], keepdims=True)
    # equal scores among the first `count` sorted candidates of a row: replay the heap algorithms
    prev, nxt = b.slice(vals, [0], [-1], [2]), b.slice(vals, [1], [2**62], [2])
    pos = b.op("Range", [b.i64(1), b.reshape(m, []), b.i64(1)])
    tie = b.op("And", [b.op("Equal", [prev, nxt]), b.op("Less", [pos, count])])
    has_tie = b.op("Greater", [b.reduce("ReduceSum", b.cast(tie, I64), None, keepdims=False), b.i64(0)])

    hb = b.child()
    result = _heap_branch(hb, scores, cand, middle, count, m)
    then_g = hb.build([hb.identity(result)], b.names.fresh("partial_sort/heap"))
    eb = b.child()
    else_g = eb.build([eb.identity(order)], b.names.fresh("partial_sort/topk"))
    for g in (then_g, else_g):
        g.outputs[0].type, g.outputs[0].shape = oir.TensorType(I64), oir.Shape([None] * 3)
    return b.op("If", [has_tie], {"then_branch": then_g, "else_branch": else_g})


def _heap_branch(b: GraphBuilder, scores: oir.Value, cand: oir.Value, middle: oir.Value, count: oir.Value,
                 m: oir.Value) -> oir.Value:
    # the candidates in index order first (what std::remove_if leaves), the others after
    _, a = b.op_multi("TopK", [b.cast(cand, F32), m], {"axis": 2, "largest": 1, "sorted": 1}, outputs=2)
    k = b.op("GatherElements", [scores, a], _AXIS)
    last = b.op("Sub", [m, b.i64([1])])
    bits = b.op("Ceil", [b.op("Div", [b.op("Log", [b.cast(b.op("Add", [m, b.i64([1])]), F32)]),
                                      b.const(np.float32(np.log(2)))])])
    heap = _Heap(last, b.reshape(b.op("Add", [b.cast(bits, I64), b.i64([2])]), []))
    zero = b.op("Mul", [middle, b.i64(0)])  # position 0 of every row, [B, C, 1]

    def scalar_max(v: oir.Value) -> oir.Value:
        return b.reshape(b.op("Max", [b.reduce("ReduceMax", v, None, keepdims=False), b.i64(0)]), [])

    # __make_heap(first, middle)
    first_parent = b.op("Div", [b.op("Sub", [middle, b.i64(2)]), b.i64(2)])

    def make(cb: GraphBuilder, it: oir.Value, s: State) -> State:
        a_, k_ = s
        parent = cb.op("Sub", [first_parent, it])
        active = cb.op("And", [cb.op("GreaterOrEqual", [middle, cb.i64(2)]),
                               cb.op("GreaterOrEqual", [parent, cb.i64(0)])])
        return list(heap.adjust(cb, a_, k_, parent, middle, heap.at(cb, a_, parent), heap.at(cb, k_, parent),
                                active))

    a, k = _loop(b, "make_heap", b.op("Add", [scalar_max(first_parent), b.i64(1)]), [(a, I64), (k, F32)], make)

    # for i in [middle, count): if comp(i, first): __pop_heap(first, middle, i)
    def select(cb: GraphBuilder, it: oir.Value, s: State) -> State:
        a_, k_ = s
        i = cb.op("Add", [middle, it])
        vk = heap.at(cb, k_, i)
        active = cb.op("And", [cb.op("Less", [i, count]), cb.op("Greater", [vk, heap.at(cb, k_, zero)])])
        va = heap.at(cb, a_, i)
        a_, k_ = heap.put(cb, a_, k_, i, heap.at(cb, a_, zero), heap.at(cb, k_, zero), active)
        return list(heap.adjust(cb, a_, k_, zero, middle, va, vk, active))

    a, k = _loop(b, "heap_select", scalar_max(b.op("Sub", [count, middle])), [(a, I64), (k, F32)], select)

    # __sort_heap(first, middle)
    def sort(cb: GraphBuilder, it: oir.Value, s: State) -> State:
        a_, k_ = s
        end = cb.op("Sub", [cb.op("Sub", [middle, cb.i64(1)]), it])
        active = cb.op("GreaterOrEqual", [end, cb.i64(1)])
        va, vk = heap.at(cb, a_, end), heap.at(cb, k_, end)
        a_, k_ = heap.put(cb, a_, k_, end, heap.at(cb, a_, zero), heap.at(cb, k_, zero), active)
        return list(heap.adjust(cb, a_, k_, zero, end, va, vk, active))

    a, _ = _loop(b, "sort_heap", scalar_max(middle), [(a, I64), (k, F32)], sort)
    return a

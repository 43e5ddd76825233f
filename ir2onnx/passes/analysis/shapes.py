"""Fully known (static) shapes of onnx_ir values, from declared shapes or derived from their producers.

A value's shape is a tuple of ints when every dim is known: its declared shape when all dims are ints, an
initializer's (or Constant's) shape, or the shape its producer gives it when that producer is a reshape-only op
(Identity, Squeeze, Unsqueeze, Reshape, Flatten), a Transpose, an elementwise op (unary, or broadcasting binary), a
MatMul, a Split, a Slice with constant bounds, a Gather or a time-major LSTM/GRU/RNN whose inputs have static shapes.
Anything else is None: shapes are never guessed.

What for, beside values.shape_of: `StaticShapes` serves rewrites that emit numbers the shape must make exact (Split
sizes, Reshape targets, a sequence's chunks, a constant's shape); `shape_of` serves matching with partial shapes. They
are not one analysis with two views: on the same value they differ in sources, strictness and coverage. shape_of's
partial shapes cannot come from StaticShapes, and StaticShapes taken as shape_of's fully known answers changes
conversions of the test fixtures. How they differ (`shape_of` / `StaticShapes`):

* unknown dims: partial, `Relu` of [b, 3] is (None, 3) / None;
* source order: derived first, then declared / declared (all ints) first, then a constant's, then derived. A
  Slice [:, 0:3] of [2, 6] declared [2, 3] is (2, None) / (2, 3); a Reshape to [3, 2] whose declared [2, 3] a pass
  left stale is (3, 2) / (2, 3);
* constants: a Constant node's output without a declared shape is None / its array's shape;
* strictness: shape_of trusts the model, StaticShapes checks it: a Squeeze of a dim that is not 1, [2, 3] + [4], a
  Reshape changing the element count, a Split of 7 in 2 give a shape / None. So a Squeeze of a Slice with run-time
  bounds, [None, 3] -> (3,), is known to shape_of only;
* coverage: Slice bounds, Flatten, batched or 1-D MatMul, Pow/And/Or/Equal/Greater/Less, most unary ops (Exp,
  Abs...), a Squeeze without axes, attribute axes and LSTM/GRU/RNN outputs are StaticShapes' only; Clip is shape_of's;
* memo: one query or one `derivations()` block / the StaticShapes object's lifetime (make one per graph state).

Callers combine them where both help: `StaticShapes()(x) or shape_of(x)` (exact dims where known, else the known
ones), `shape_of(i) or StaticShapes()(i)` (an index that is a Constant node).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import onnx
import onnx_ir as oir

from ir2onnx.deep import deep_call
from ir2onnx.passes.analysis.graph import BROADCASTING_BINARY, UNARY_ELEMENTWISE, is_default_domain
from ir2onnx.passes.analysis.values import const_ints, literal_array
from ir2onnx.protos import read_inferred, weightless_proto

Shape = tuple[int, ...]


def infer_shapes(model: oir.Model) -> None:
    """ONNX shape inference over the model, in place, best effort (the model is valid without derived shapes)."""
    try:
        # types are not checked: a node whose type its schema lacks still gets its outputs typed, and the
        # onnxruntime pass then computes it in a type that runs
        # (values up to 1 KB suffice to propagate shapes; larger ones would only be copied and folded)
        inferred = onnx.shape_inference.infer_shapes(weightless_proto(model, 1024), check_type=False,
                                                     strict_mode=False, data_prop=True)
    except Exception:  # noqa: BLE001
        return
    read_inferred(model.graph, inferred.graph)


class StaticShapes:
    """Memoised static shapes; `shapes(value)` is the shape as a tuple of ints, or None."""

    def __init__(self) -> None:
        self._memo: dict[oir.Value, Shape | None] = {}
        self._depth = 0

    def __call__(self, value: oir.Value | None) -> Shape | None:
        return self.shape(value)

    def shape(self, value: oir.Value | None) -> Shape | None:
        """`self(value)`. The rules recurse through this method, not through `self(...)`: Python 3.12 counts a call of
        an object (through its type's C slot) against a fixed C recursion limit that `sys.setrecursionlimit` does not
        raise, where a call of a Python method is not."""
        if value is None:
            return None
        if value not in self._memo:
            self._depth += 1
            try:
                self._memo[value] = self._compute(value)
            except RecursionError:  # a network deeper than Python allows: go on from here on a deep stack
                if self._depth > 1:
                    raise
                self._memo[value] = deep_call(functools.partial(self._compute, value))
            finally:
                self._depth -= 1
        return self._memo[value]

    def _compute(self, value: oir.Value) -> Shape | None:
        if value.shape is not None and all(isinstance(d, int) for d in value.shape):
            return tuple(int(d) for d in value.shape)  # type: ignore[arg-type]
        arr = literal_array(value)
        if arr is not None:
            return tuple(int(d) for d in arr.shape)
        node = value.producer()
        if node is None or not is_default_domain(node):
            return None
        rule = _RULES.get(node.op_type)
        if rule is None:
            return None
        try:
            return rule(self, node, value.index() or 0)
        except (ValueError, IndexError, KeyError):  # malformed axes or shapes: unknown, not an error here
            return None


def _axes(node: oir.Node) -> list[int] | None:
    """Squeeze/Unsqueeze axes: the second input (opset 13+) or the attribute (older opsets); [] when absent."""
    if len(node.inputs) > 1 and node.inputs[1] is not None:
        return const_ints(node.inputs[1])
    attr = node.attributes.get("axes")
    return [] if attr is None else [int(a) for a in attr.as_ints()]


def _axis(node: oir.Node, default: int, rank: int) -> int:
    """The node's `axis` attribute (or `default`), a negative one counted from the end of `rank` dims."""
    attr = node.attributes.get("axis")
    axis = default if attr is None else attr.as_int()
    return axis + rank if axis < 0 else axis


def _identity(s: StaticShapes, node: oir.Node, _: int) -> Shape | None:
    return s.shape(node.inputs[0])


def _squeeze(s: StaticShapes, node: oir.Node, _: int) -> Shape | None:
    shape, axes = s.shape(node.inputs[0]), _axes(node)
    if shape is None or axes is None:
        return None
    if not axes:
        return tuple(d for d in shape if d != 1)
    drop = {a + len(shape) if a < 0 else a for a in axes}
    if any(not 0 <= a < len(shape) or shape[a] != 1 for a in drop):
        return None
    return tuple(d for i, d in enumerate(shape) if i not in drop)


def _unsqueeze(s: StaticShapes, node: oir.Node, _: int) -> Shape | None:
    shape, axes = s.shape(node.inputs[0]), _axes(node)
    if shape is None or not axes:
        return None
    rank = len(shape) + len(axes)
    add = {a + rank if a < 0 else a for a in axes}
    if len(add) != len(axes) or any(not 0 <= a < rank for a in add):
        return None
    rest = iter(shape)
    return tuple(1 if i in add else next(rest) for i in range(rank))


def _reshape(s: StaticShapes, node: oir.Node, _: int) -> Shape | None:
    target = const_ints(node.inputs[1]) if len(node.inputs) > 1 else None
    if target is None:
        return None
    attr = node.attributes.get("allowzero")
    allowzero = attr is not None and attr.as_int() != 0
    shape = s.shape(node.inputs[0])
    dims: list[int] = []
    for i, d in enumerate(target):
        if d == 0 and not allowzero:
            if shape is None or i >= len(shape):
                return None
            d = shape[i]
        dims.append(d)
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        return None
    if -1 in dims:
        if shape is None:
            return None
        known = math.prod(d for d in dims if d != -1)
        total = math.prod(shape)
        if known == 0 or total % known:
            return None
        dims[dims.index(-1)] = total // known
    if shape is not None and math.prod(shape) != math.prod(dims):
        return None
    return tuple(dims)


def _flatten(s: StaticShapes, node: oir.Node, _: int) -> Shape | None:
    shape = s.shape(node.inputs[0])
    if shape is None:
        return None
    axis = _axis(node, 1, len(shape))
    if not 0 <= axis <= len(shape):
        return None
    return math.prod(shape[:axis]), math.prod(shape[axis:])


def _transpose(s: StaticShapes, node: oir.Node, _: int) -> Shape | None:
    shape = s.shape(node.inputs[0])
    if shape is None:
        return None
    perm = transpose_perm(node, len(shape))
    if sorted(perm) != list(range(len(shape))):
        return None
    return tuple(shape[p] for p in perm)


def transpose_perm(node: oir.Node, rank: int) -> list[int]:
    """A Transpose's permutation (reversed axes when the attribute is absent)."""
    attr = node.attributes.get("perm")
    return list(range(rank))[::-1] if attr is None else [int(p) for p in attr.as_ints()]


def _broadcast(s: StaticShapes, node: oir.Node, _: int) -> Shape | None:
    """Elementwise ops: the inputs' shapes broadcast (numpy rules), or None where they would not."""
    shapes = [s.shape(v) for v in node.inputs]
    if not shapes or any(sh is None for sh in shapes):
        return None
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))  # type: ignore[arg-type]
    except ValueError:
        return None


def _matmul(s: StaticShapes, node: oir.Node, _: int) -> Shape | None:
    a, b = (s.shape(node.inputs[0]), s.shape(node.inputs[1])) if len(node.inputs) == 2 else (None, None)
    if a is None or b is None or not a or not b:
        return None
    a2, b2 = (1, *a) if len(a) == 1 else a, (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        return None
    try:
        batch = tuple(int(d) for d in np.broadcast_shapes(a2[:-2], b2[:-2]))
    except ValueError:
        return None
    return batch + ((a2[-2],) if len(a) > 1 else ()) + ((b2[-1],) if len(b) > 1 else ())


def _split(s: StaticShapes, node: oir.Node, index: int) -> Shape | None:
    """Output `index` of a Split: given sizes (the second input), or equal parts."""
    shape = s.shape(node.inputs[0])
    if shape is None:
        return None
    axis = _axis(node, 0, len(shape))
    given = len(node.inputs) > 1 and node.inputs[1] is not None
    sizes = const_ints(node.inputs[1]) if given else None
    if given and sizes is None:
        return None  # sizes known only at run time: not equal parts
    if sizes is None:
        n = len(node.outputs)
        if "num_outputs" in node.attributes or shape[axis] % n:
            return None  # (opset 18's uneven last part is not worth a rule)
        sizes = [shape[axis] // n] * n
    if len(sizes) != len(node.outputs) or sum(sizes) != shape[axis]:
        return None
    return (*shape[:axis], sizes[index], *shape[axis + 1:])


def _slice(s: StaticShapes, node: oir.Node, _: int) -> Shape | None:
    """A Slice with constant starts, ends, axes and steps."""
    shape = s.shape(node.inputs[0])
    starts, ends = (const_ints(v) for v in node.inputs[1:3]) if len(node.inputs) >= 3 else (None, None)
    if shape is None or starts is None or ends is None or len(starts) != len(ends):
        return None
    axes = const_ints(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] is not None else \
        list(range(len(starts)))
    steps = const_ints(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else [1] * len(starts)
    if axes is None or steps is None or len(axes) != len(starts) or len(steps) != len(starts) or 0 in steps:
        return None
    dims = list(shape)
    for a, b, e, st in zip(axes, starts, ends, steps):
        a += len(shape) if a < 0 else 0
        dims[a] = len(range(*slice(b, e, st).indices(shape[a])))
    return tuple(dims)


def _gather(s: StaticShapes, node: oir.Node, _: int) -> Shape | None:
    data, indices = s.shape(node.inputs[0]), s.shape(node.inputs[1]) if len(node.inputs) > 1 else None
    if data is None or indices is None:
        return None
    axis = _axis(node, 0, len(data))
    return (*data[:axis], *indices, *data[axis + 1:])


def _recurrent(s: StaticShapes, node: oir.Node, index: int) -> Shape | None:
    """Y [T, num_directions, B, H]; Y_h, Y_c [num_directions, B, H] for a time-major (layout 0) node."""
    layout = node.attributes.get("layout")
    hidden = node.attributes.get("hidden_size")
    if (layout is not None and layout.as_int() != 0) or hidden is None:
        return None
    x = s.shape(node.inputs[0])
    if x is None or len(x) != 3:
        return None
    direction = node.attributes.get("direction")
    dirs = 2 if direction is not None and direction.as_string() == "bidirectional" else 1
    steps, batch, h = x[0], x[1], hidden.as_int()
    return (steps, dirs, batch, h) if index == 0 else (dirs, batch, h)


_RULES: dict[str, Callable[[StaticShapes, oir.Node, int], Shape | None]] = {
    "Identity": _identity,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Transpose": _transpose,
    "LSTM": _recurrent,
    "GRU": _recurrent,
    "RNN": _recurrent,
    "MatMul": _matmul,
    "Split": _split,
    "Slice": _slice,
    "Gather": _gather,
    **{op: _identity for op in UNARY_ELEMENTWISE},
    **{op: _broadcast for op in BROADCASTING_BINARY},
}

"""Sizes for the dynamic dimensions of the model inputs that the model accepts.

Each dynamic dimension gets its own size (3, 4, 5, 6, ...: distinct sizes expose mixed-up axes, and a time axis
of 3 or more makes loops iterate several times), except where the model ties it: with openvino installed, every
dynamic dimension gets an OpenVINO symbol, shape inference carries the symbols through the graph and the loop
bodies, dimensions that end up with one symbol get one size, and a dimension that meets a weight (MatMul,
Convolution, the recurrent cells and sequences) takes the weight's size. A size is kept only when shape inference
accepts it together with the sizes already chosen (OpenVINO's `reshape` of the IR, else ONNX shape inference in
strict mode); otherwise sizes already chosen, then the static sizes found in the model, then 2 and 1 are tried.

Where OpenVINO refuses to run those inputs, and those with free dimensions of one size, the check searches
(`Search`, driven by inputs.py `DefaultInputs.retries`): a dimension no first candidate suits tries 1 to 16, the
IR's own sizes (static dimensions, Reshape and Broadcast targets, kernels and strides), powers of two and products
of two of the IR's sizes (frames of 1024 = a kernel of 512 and a pool of 2), within bounds on the sizes, the
inputs' elements, the runs of shape inference and their time; each probe is a reshape of the IR, not a compilation.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
import onnx

from ir2onnx.verify.worker import port_name

Dims = list[int | None]
Accepts = Callable[[dict[str, Dims]], bool]
Slot = tuple[str, int]  # (input name, axis)
DEFAULT_SIZES = (3, 4, 5, 6)
_MAX_CANDIDATES = 48
MAX_SIZE = 1 << 16  # the largest size searched for a dimension
MAX_ELEMENTS = 1 << 24  # elements of all inputs together, at most, in a search


def choose_dims(specs: Sequence[tuple[str, Dims]], accepts: Accepts, model_sizes: Sequence[int],
                fixed: dict[Slot, int] | None = None, groups: Sequence[set[Slot]] = (),
                bounds: dict[Slot, tuple[int, int | None]] | None = None,
                uniform: bool = False, search: Search | None = None,
                prefer: int | None = None) -> tuple[dict[str, list[int]], list[str]]:
    """Input name -> static shape, and notes about dimensions no accepted size was found for. `fixed`: sizes the
    weights require; `groups`: dimensions known to be equal; `bounds`: the IR's `lo..hi` range of a dimension (its
    sizes are tried from `lo`, and only sizes inside it). Free dimensions get different sizes (a transposition
    then shows), or with `uniform` one size (for models that need dimensions equal that shape inference cannot
    tell: attention's keys and values, a mask and its sequence), or with `prefer` that size first.

    With `search`, a dimension none of the first candidates suits tries the search's sizes too, and a dimension
    that no size suits given the sizes chosen before it is chosen first instead (`_Choice.first`). Where the first
    candidates suit every dimension, the choice is the same as without the search."""
    slots = [(name, axis) for name, dims in specs for axis, d in enumerate(dims) if d is None]
    if search is not None:
        accepts = search.memo(accepts)
    ctx = _Choice(accepts, model_sizes, fixed or {}, groups, bounds or {}, uniform, search, prefer)
    current, failed, notes = ctx.greedy(specs, slots)
    if failed is not None and failed != slots[0]:
        current, failed, notes = ctx.first(specs, slots, failed, current, notes)
    if failed is not None:  # the search found nothing: the refusal is the note
        current = {n: [DEFAULT_SIZES[0] if d is None else d for d in dims] for n, dims in current.items()}
    elif slots and not accepts(current):
        notes.append("shape inference rejects the chosen input shapes "
                     f"({', '.join(f'{n}{v}' for n, v in current.items())}); give inputs with --inputs")
    return {k: [int(d) for d in v] for k, v in current.items()}, notes  # type: ignore[arg-type]


class _Choice:
    """How `choose_dims` chooses: its settings, and the greedy pass over the dimensions."""

    def __init__(self, accepts: Accepts, model_sizes: Sequence[int], fixed: dict[Slot, int],
                 groups: Sequence[set[Slot]], bounds: dict[Slot, tuple[int, int | None]], uniform: bool,
                 search: Search | None, prefer: int | None) -> None:
        self.accepts, self.model_sizes, self.fixed, self.groups, self.bounds = accepts, model_sizes, fixed, groups, bounds
        self.uniform, self.search, self.prefer = uniform, search, prefer

    def candidates(self, slot: Slot, given: dict[Slot, int], chosen: list[int],
                   fresh: int) -> tuple[list[int], int, int]:
        """A dimension's sizes to try, how many of them come before the search's, and its size when none fits."""
        mates = [given[m] for g in self.groups if slot in g for m in g if m in given]
        first = [self.fixed[slot]] if slot in self.fixed else mates[:1]
        default = self.prefer if self.prefer is not None else \
            DEFAULT_SIZES[0 if self.uniform else fresh % len(DEFAULT_SIZES)]
        candidates = _unique([*first, default, *chosen, *sorted(s for s in self.model_sizes if s > 1), 2, 1])
        lo, hi = self.bounds.get(slot, (1, None))
        if slot in self.bounds:
            candidates = [lo, *(c for c in candidates if lo < c and (hi is None or c <= hi))]
            default = lo
        candidates = candidates[:_MAX_CANDIDATES]
        first_ones = len(candidates)
        if self.search is not None:
            candidates += self.search.more(candidates, lo, hi)
        return candidates, first_ones, default

    def greedy(self, specs: Sequence[tuple[str, Dims]], order: Sequence[Slot],
               pinned: dict[Slot, int] | None = None) -> tuple[dict[str, Dims], Slot | None, list[str]]:
        """The dimensions in `order`, each the first candidate shape inference accepts with the sizes before it
        (and `pinned`; the later ones left free); with a search, stops at the first dimension no size suits
        (returned)."""
        current: dict[str, Dims] = {name: list(dims) for name, dims in specs}
        given: dict[Slot, int] = dict(pinned or {})
        for (name, axis), size in given.items():
            current[name][axis] = size
        notes: list[str] = []
        chosen: list[int] = list(given.values())
        fresh = 0
        for name, axis in order:
            slot = (name, axis)
            candidates, first_ones, default = self.candidates(slot, given, chosen, fresh)
            if not (slot in self.fixed or any(slot in g and m in given for g in self.groups for m in g)):
                fresh += 1
            tried: list[int] = []
            for i, size in enumerate(candidates):
                trial = {k: list(v) for k, v in current.items()}
                trial[name][axis] = size
                if i >= first_ones and not self.search.allows(trial):  # type: ignore[union-attr]
                    continue
                tried.append(size)
                if self.accepts(trial):
                    break
            else:
                size = default
                if self.search is not None:
                    self.search.refused[slot] = tried
                    return current, slot, [self.search.refusal(slot)]
                notes.append(f"no size of dimension {axis} of input {name} passed shape inference; used {size}")
            current[name][axis] = size
            given[slot] = size
            chosen.append(size)
        return current, None, notes

    def first(self, specs: Sequence[tuple[str, Dims]], order: Sequence[Slot], slot: Slot, current: dict[str, Dims],
              notes: list[str]) -> tuple[dict[str, Dims], Slot | None, list[str]]:
        """`slot`, which no size suited after the dimensions before it, chosen first: each of its sizes that shape
        inference accepts with every other dimension free, until the others can be chosen with it (a batch of 3
        rules out every length that a Reshape to [8, 8] accepts; a length of 2 leaves a batch of 32)."""
        rest = [s for s in order if s != slot]
        free = {n: list(dims) for n, dims in specs}
        candidates, first_ones, _ = self.candidates(slot, {}, [], 0)
        failed: Slot | None = slot
        for i, size in enumerate(candidates):
            trial = {k: list(v) for k, v in free.items()}
            trial[slot[0]][slot[1]] = size
            if (i >= first_ones and not self.search.allows(trial)) or not self.accepts(trial):  # type: ignore[union-attr]
                continue
            current, failed, notes = self.greedy(specs, rest, {slot: size})
            if failed is None or self.search.spent:  # type: ignore[union-attr]
                break
        return current, failed, notes


class Search:
    """The sizes a dimension tries after its first candidates (`search_sizes`), at most `per_dim` of them, none
    making the inputs larger than `max_elements` elements in all; shape inference asked at most `budget` times in
    all (each shape once), for `seconds` at most (a reshape of a large IR takes ~0.1 s)."""

    def __init__(self, sizes: Sequence[int], per_dim: int = 64, budget: int = 300, seconds: float = 20.0,
                 max_elements: int = MAX_ELEMENTS, explain: Callable[[], str | None] = lambda: None) -> None:
        self.sizes = list(sizes)
        self.per_dim, self.budget, self.max_elements = per_dim, budget, max_elements
        self.deadline = time.monotonic() + seconds
        self.explain = explain  # shape inference's last refusal, in a line
        self.refused: dict[Slot, list[int]] = {}
        self.spent = False
        self._answers: dict[tuple, bool] = {}

    def memo(self, accepts: Accepts) -> Accepts:
        def asked(shapes: dict[str, Dims]) -> bool:
            key = tuple((n, tuple(d)) for n, d in shapes.items())
            if key not in self._answers:
                if len(self._answers) >= self.budget or time.monotonic() > self.deadline:
                    self.spent = True
                    return False
                self._answers[key] = accepts(shapes)
            return self._answers[key]

        return asked

    def more(self, tried: Sequence[int], lo: int, hi: int | None) -> list[int]:
        return [s for s in self.sizes if s not in tried and lo <= s and (hi is None or s <= hi)][:self.per_dim]

    def allows(self, shapes: dict[str, Dims]) -> bool:
        return elements(shapes) <= self.max_elements

    def refusal(self, slot: Slot) -> str:
        """Which dimension no size suited, and what was tried (summarised)."""
        name, axis = slot
        why = self.explain()
        spent = ", then the search's time or runs of shape inference were spent" if self.spent else ""
        return (f"no size of dimension {axis} of input {name} passes shape inference "
                f"({describe_sizes(self.refused[slot])}{spent})" + (f"; it said: {why}" if why else ""))


def elements(shapes: dict[str, Dims]) -> int:
    """Elements of all inputs together (a free dimension counted as 1)."""
    return sum(math.prod(d or 1 for d in dims) for dims in shapes.values())


def search_sizes(model_sizes: Iterable[int], limit: int = MAX_SIZE) -> list[int]:
    """Sizes to search, in order: small ones (1 to 16), the model's own (static dimensions, Reshape targets,
    kernels and strides), powers of two, products of two of the model's sizes (a frame of 1024 samples under a
    kernel of 512 and a pool of 2), each ascending, up to `limit`."""
    base = sorted({int(s) for s in model_sizes if 2 <= s <= limit})
    products = {a * b for i, a in enumerate(base) for b in base[i:] if a * b <= limit}
    powers = [1 << k for k in range(1, limit.bit_length()) if 1 << k <= limit]
    return _unique([*range(1, 17), *base, *powers, *sorted(products)])


def describe_sizes(sizes: Sequence[int]) -> str:
    """`tried 97 sizes: 1-16, 31, 32, ... 65536` (runs of consecutive sizes joined, the middle left out)."""
    ordered = sorted(set(sizes))
    runs: list[str] = []
    start = prev = None
    for s in [*ordered, None]:
        if start is not None and s is not None and s == prev + 1:  # type: ignore[operator]
            prev = s
            continue
        if start is not None:
            runs.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = s
    shown = runs if len(runs) <= 10 else [*runs[:7], "...", *runs[-2:]]
    return f"tried {len(ordered)} size{'s' * (len(ordered) != 1)}: {', '.join(shown)}"


def _unique(values: Sequence[int]) -> list[int]:
    out: list[int] = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


# (data input, data axis, weight input, weight axis): the data's dimension must equal the weight's
_WEIGHT_TIES: dict[str, tuple[tuple[int, int, int, int], ...]] = {
    "LSTMCell": ((0, 1, 3, 1),), "GRUCell": ((0, 1, 2, 1),), "RNNCell": ((0, 1, 2, 1),),
    "LSTMSequence": ((0, 2, 4, 2),), "GRUSequence": ((0, 2, 3, 2),), "RNNSequence": ((0, 2, 3, 2),),
    "Convolution": ((0, 1, 1, 1),), "ConvolutionBackpropData": ((0, 1, 1, 0),),
}


class OpenVINOShapes:
    """Shape inference of the IR in OpenVINO: `accepts` (reshape validates) and the ties between dimensions."""

    def __init__(self, xml_path: str, bin_path: str | None) -> None:
        import openvino as ov

        self.ov = ov
        core = ov.Core()
        self.base = core.read_model(xml_path, bin_path) if bin_path else core.read_model(xml_path)
        self.ports = {port_name(p): i for i, p in enumerate(self.base.inputs)}
        self.last_refusal: str | None = None

    def accepts(self, shapes: dict[str, Dims]) -> bool:
        model = self.base.clone()
        try:
            model.reshape({model.inputs[self.ports[n]]: self.ov.PartialShape([-1 if d is None else d for d in dims])
                           for n, dims in shapes.items() if n in self.ports})
        except Exception as e:  # noqa: BLE001  any validation error means: not accepted
            lines = [line.strip() for line in str(e).splitlines() if line.strip()]
            self.last_refusal = lines[-1] if lines else type(e).__name__
            return False
        return True

    def sizes(self) -> set[int]:
        """Sizes the IR suggests for a search (search_sizes): static dimensions, the positive values of the
        Const targets of Reshape and Broadcast, and the kernels and strides of convolutions and pools, bodies
        included."""
        out: set[int] = set()
        for op in _all_ops(self.base):
            for port in op.outputs():
                ps = port.get_partial_shape()
                if ps.rank.is_static:
                    out |= {d.get_length() for d in ps if d.is_static}
            attrs = op.get_attributes()
            for key in ("kernel", "strides"):
                value = attrs.get(key)
                if isinstance(value, (list, tuple)):
                    out |= {int(v) for v in value if isinstance(v, (int, np.integer))}
            if op.get_type_name() in ("Reshape", "Broadcast") and op.get_input_size() > 1:
                target = op.input_value(1).get_node()
                if target.get_type_name() == "Constant" and math.prod(target.get_output_shape(0)) <= 16:
                    out |= {int(v) for v in np.asarray(target.get_data()).ravel() if v > 0}
        return out

    def bounds(self) -> dict[Slot, tuple[int, int | None]]:
        """The dynamic input dimensions the IR bounds (`lo..hi`; hi None: unbounded above)."""
        out: dict[Slot, tuple[int, int | None]] = {}
        for inp in self.base.inputs:
            for axis, d in enumerate(inp.get_partial_shape()):
                if d.is_dynamic and (d.get_min_length() > 0 or d.get_max_length() >= 0):
                    hi = d.get_max_length()
                    out[(port_name(inp), axis)] = (max(d.get_min_length(), 1), hi if hi >= 0 else None)
        return out

    def ties(self) -> tuple[dict[Slot, int], list[set[Slot]]]:
        """Sizes the weights require of input dimensions, and groups of dimensions shape inference made equal."""
        ov = self.ov
        model = self.base.clone()
        symbols: list[tuple[Slot, object]] = []
        shapes = {}
        for inp in model.inputs:
            dims = []
            for axis, d in enumerate(inp.get_partial_shape()):
                dim = ov.Dimension(-1) if d.is_dynamic else ov.Dimension(d.get_length())
                if d.is_dynamic:
                    sym = ov.Symbol()
                    dim.set_symbol(sym)
                    symbols.append(((port_name(inp), axis), sym))
                dims.append(dim)
            shapes[inp] = ov.PartialShape(dims)
        try:
            model.reshape(shapes)
        except Exception:  # noqa: BLE001
            return {}, []

        def slots_of(dim: object) -> set[Slot]:
            sym = dim.get_symbol()  # type: ignore[attr-defined]
            return {slot for slot, s in symbols if sym is not None and sym == s}

        groups: list[set[Slot]] = []
        for slot, _ in symbols:
            group = next((g for g in groups if slot in g), None)
            if group is None:
                sym = next(s for sl, s in symbols if sl == slot)
                groups.append({sl for sl, s in symbols if s == sym})
        fixed: dict[Slot, int] = {}
        for op in _all_ops(model):
            for data, axis, weight, waxis, size in _op_ties(op):
                ps = op.input(data).get_partial_shape()
                if ps.rank.is_dynamic or not -ps.rank.get_length() <= axis < ps.rank.get_length():
                    continue
                for slot in slots_of(ps[axis]):
                    fixed.setdefault(slot, size)
        return fixed, [g for g in groups if len(g) > 1]


def _all_ops(model: object) -> Iterator[object]:
    for op in model.get_ordered_ops():  # type: ignore[attr-defined]
        yield op
        if op.get_type_name() in ("TensorIterator", "Loop"):
            yield from _all_ops(op.get_function())


def _static(op: object, i: int, axis: int) -> int | None:
    ps = op.input(i).get_partial_shape()  # type: ignore[attr-defined]
    if ps.rank.is_dynamic or not -ps.rank.get_length() <= axis < ps.rank.get_length() or ps[axis].is_dynamic:
        return None
    return int(ps[axis].get_length())


def _op_ties(op: object) -> Iterator[tuple[int, int, int, int, int]]:
    """(data input, data axis, weight input, weight axis, weight size) for each static weight dimension."""
    t = op.get_type_name()  # type: ignore[attr-defined]
    ties = list(_WEIGHT_TIES.get(t, ()))
    if t == "MatMul":
        attrs = op.get_attributes()  # type: ignore[attr-defined]
        a = -2 if attrs.get("transpose_a") else -1
        b = -1 if attrs.get("transpose_b") else -2
        ties += [(0, a, 1, b), (1, b, 0, a)]
    for data, axis, weight, waxis in ties:
        size = _static(op, weight, waxis)
        if size is not None:
            yield data, axis, weight, waxis, size
    if t == "GroupConvolution":
        groups, per = _static(op, 1, 0), _static(op, 1, 2)
        if groups is not None and per is not None:
            yield 0, 1, 1, 0, groups * per


def openvino_shapes(xml_path: str, bin_path: str | None) -> OpenVINOShapes | None:
    """None without openvino or when the IR cannot be read (the check's own run reports that)."""
    try:
        return OpenVINOShapes(xml_path, bin_path)
    except Exception:  # noqa: BLE001
        return None


def onnx_accepts(model: onnx.ModelProto) -> Accepts:
    """ONNX shape inference in strict mode on a copy of the model with the given input shapes."""

    def accepts(shapes: dict[str, Dims]) -> bool:
        m = onnx.ModelProto()
        m.CopyFrom(model)
        for vi in m.graph.input:
            dims = shapes.get(vi.name)
            if dims is None:
                continue
            for d, size in zip(vi.type.tensor_type.shape.dim, dims):
                if size is not None:
                    d.Clear()
                    d.dim_value = size
        try:
            onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
        except Exception:  # noqa: BLE001
            return False
        return True

    return accepts

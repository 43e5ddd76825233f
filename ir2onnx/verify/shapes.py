"""Sizes for the dynamic dimensions of the model inputs that the model accepts.

Each dynamic dimension gets its own size (3, 4, 5, 6, ...: distinct sizes expose mixed-up axes, and a time axis
of 3 or more makes loops iterate several times), except where the model ties it: with openvino installed, every
dynamic dimension gets an OpenVINO symbol, shape inference carries the symbols through the graph and the loop
bodies, dimensions that end up with one symbol get one size, and a dimension that meets a weight (MatMul,
Convolution, the recurrent cells and sequences) takes the weight's size. A size is kept only when shape inference
accepts it together with the sizes already chosen (OpenVINO's `reshape` of the IR, else ONNX shape inference in
strict mode); otherwise sizes already chosen, then the static sizes found in the model, then 2 and 1 are tried.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import onnx

from ir2onnx.verify.worker import port_name

Dims = list[int | None]
Accepts = Callable[[dict[str, Dims]], bool]
Slot = tuple[str, int]  # (input name, axis)
DEFAULT_SIZES = (3, 4, 5, 6)
_MAX_CANDIDATES = 48


def choose_dims(specs: Sequence[tuple[str, Dims]], accepts: Accepts, model_sizes: Sequence[int],
                fixed: dict[Slot, int] | None = None, groups: Sequence[set[Slot]] = (),
                bounds: dict[Slot, tuple[int, int | None]] | None = None,
                uniform: bool = False) -> tuple[dict[str, list[int]], list[str]]:
    """Input name -> static shape, and notes about dimensions no accepted size was found for. `fixed`: sizes the
    weights require; `groups`: dimensions known to be equal; `bounds`: the IR's `lo..hi` range of a dimension (its
    sizes are tried from `lo`, and only sizes inside it). Free dimensions get different sizes (a transposition
    then shows), or with `uniform` one size (for models that need dimensions equal that shape inference cannot
    tell: attention's keys and values, a mask and its sequence)."""
    current: dict[str, Dims] = {name: list(dims) for name, dims in specs}
    notes: list[str] = []
    slots = [(name, axis) for name, dims in specs for axis, d in enumerate(dims) if d is None]
    chosen: list[int] = []
    given: dict[Slot, int] = {}
    fresh = 0
    for name, axis in slots:
        slot = (name, axis)
        mates = [given[m] for g in groups if slot in g for m in g if m in given]
        first = [fixed[slot]] if fixed and slot in fixed else mates[:1]
        default = DEFAULT_SIZES[0 if uniform else fresh % len(DEFAULT_SIZES)]
        if not first:
            fresh += 1
        candidates = _unique([*first, default, *chosen, *sorted(s for s in model_sizes if s > 1), 2, 1])
        if bounds and slot in bounds:
            lo, hi = bounds[slot]
            candidates = [lo, *(c for c in candidates if lo < c and (hi is None or c <= hi))]
            default = lo
        candidates = candidates[:_MAX_CANDIDATES]
        for size in candidates:
            trial = {k: list(v) for k, v in current.items()}
            trial[name][axis] = size
            if accepts(trial):
                break
        else:
            size = default
            notes.append(f"no size of dimension {axis} of input {name} passed shape inference; used {size}")
        current[name][axis] = size
        given[slot] = size
        chosen.append(size)
    if slots and not accepts(current):
        notes.append("shape inference rejects the chosen input shapes "
                     f"({', '.join(f'{n}{v}' for n, v in current.items())}); give inputs with --inputs")
    return {k: [int(d) for d in v] for k, v in current.items()}, notes  # type: ignore[arg-type]


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

    def accepts(self, shapes: dict[str, Dims]) -> bool:
        model = self.base.clone()
        try:
            model.reshape({model.inputs[self.ports[n]]: self.ov.PartialShape([-1 if d is None else d for d in dims])
                           for n, dims in shapes.items() if n in self.ports})
        except Exception:  # noqa: BLE001  any validation error means: not accepted
            return False
        return True

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

"""Inputs for a check: from an .npz file, or default ones chosen from what the IR does with each input (seeded).

Defaults: dynamic dimensions get sizes the model accepts (shapes.py); floats ~ N(0, 1); booleans at random,
except a Loop's initial condition (true); integers in [0, 3], except where the IR gives them a meaning
(input_roles.py): trip counts and loop bounds lie in [3, 7] (capped by what sliced inputs allow), indices in
range of the axis they index, TopK's k in [1, size], Range runs upwards from [0, 2] to [5, 9] by 1, sequence
lengths are the full length, divisors lie in [1, 3]; an LLM's attention mask and positions make one call of a
generation (`_decoder_call`). An input read as a shape or an axis has no safe default: the notes name it (give it
with --inputs). Where OpenVINO refuses to run the defaults, `DefaultInputs.retries` gives what to try next.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import onnx
from onnx import helper

from ir2onnx.errors import CheckError
from ir2onnx.ir.model import IRModel
from ir2onnx.ir.weights import Weights
from ir2onnx.verify.input_roles import Use, input_uses
from ir2onnx.verify.report import InputInfo
from ir2onnx.verify.shapes import (
    MAX_SIZE,
    Search,
    choose_dims,
    elements,
    onnx_accepts,
    openvino_shapes,
    search_sizes,
)

_GENERIC_INT = (0, 3)
_TRIP = (3, 7)


def input_specs(model: onnx.ModelProto, optional: bool = False) -> list[tuple[str, np.dtype, list[int | None]]]:
    """(name, dtype, dims) of the model's inputs; the `optional(tensor)` ones (variable states, which a run leaves out
    to start from their initial values) only with `optional`."""
    specs = []
    for vi in model.graph.input:
        tt = vi.type.tensor_type
        if vi.type.HasField("optional_type"):
            if not optional:
                continue
            tt = vi.type.optional_type.elem_type.tensor_type
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        specs.append((vi.name, dtype, dims))
    return specs


def default_inputs(model: onnx.ModelProto, ir_model: IRModel | None, weights: Weights | None,
                   seed: int = 0, uniform: bool = False) -> tuple[dict[str, np.ndarray], list[InputInfo], list[str]]:
    """Inputs that exercise the model, what each one is, and notes on inputs that need --inputs (`uniform`: free
    dimensions of one size, see `choose_dims`)."""
    return DefaultInputs(model, ir_model, weights, seed).make(uniform)


Feed = dict[str, np.ndarray]
_SEARCH_RUNS = 4  # OpenVINO runs on the search's inputs, at most


class DefaultInputs:
    """The default inputs of one model (`make`), and what to try when OpenVINO refuses them (`retries`)."""

    def __init__(self, model: onnx.ModelProto, ir_model: IRModel | None, weights: Weights | None,
                 seed: int = 0) -> None:
        from ir2onnx.translate.model import input_name

        self.model, self.seed = model, seed
        self.specs = input_specs(model)
        self.uses: dict[str, list[Use]] = {}
        self.model_sizes = _onnx_sizes(model.graph)
        self.ov_shapes = None
        if ir_model is not None:
            by_id = input_uses(ir_model.graph, weights)
            self.uses = {input_name(p, ir_model.ir_version == 10): by_id[p.id] for p in ir_model.graph.parameters}
            self.model_sizes |= {d for layer in ir_model.graph.walk() for port in (*layer.inputs, *layer.outputs)
                                 for d in port.dims if d is not None}
            self.ov_shapes = openvino_shapes(ir_model.xml_path, ir_model.bin_path)
        self.dim_specs = [(n, d) for n, _, d in self.specs]
        self.free = any(None in d for _, d in self.dim_specs)
        self._ties: tuple[dict, list] | None = None
        self.refusal: list[str] = []  # why the search found no inputs (notes), when it did not
        self.first_shape_notes: list[str] = []  # the notes on the sizes of the first inputs (make())

    def make(self, uniform: bool = False, search: Search | None = None,
             prefer: int | None = None) -> tuple[Feed, list[InputInfo], list[str]]:
        """Inputs that exercise the model, what each one is, and notes on inputs that need --inputs (free
        dimensions as `choose_dims` chooses them)."""
        shapes, shape_notes = self._shapes(uniform, search, prefer)
        if not uniform and search is None and prefer is None:
            self.first_shape_notes = shape_notes
        return self._fill(shapes, shape_notes)

    def _shapes(self, uniform: bool, search: Search | None,
                prefer: int | None) -> tuple[dict[str, list[int]], list[str]]:
        sizes = sorted(self.model_sizes)
        if self.ov_shapes is not None and self.free:
            if self._ties is None:
                self._ties = self.ov_shapes.ties()
            fixed, groups = self._ties
            return choose_dims(self.dim_specs, self.ov_shapes.accepts, sizes, fixed, groups, self.ov_shapes.bounds(),
                               uniform, search, prefer)
        return choose_dims(self.dim_specs, onnx_accepts(self.model), sizes, uniform=uniform, search=search,
                           prefer=prefer)

    def _fill(self, shapes: dict[str, list[int]], shape_notes: list[str]) -> tuple[Feed, list[InputInfo], list[str]]:
        rng = np.random.default_rng(self.seed)
        notes = list(shape_notes)
        dynamic = [s for (n, _, dims) in self.specs for s, d in zip(shapes[n], dims) if d is None]
        fallback_limit = min(dynamic) if dynamic else 2
        feed: Feed = {}
        infos: list[InputInfo] = []
        for name, dtype, _ in self.specs:
            shape = shapes[name]
            value, source = _value(rng, dtype, shape, self.uses.get(name, []), fallback_limit, name, notes)
            feed[name] = value
            infos.append(InputInfo(name, tuple(shape), str(dtype), source))
        _decoder_call(feed, infos)
        return feed, infos, notes

    def retries(self, first: Feed) -> Iterator[tuple[Feed, list[InputInfo], list[str], bool]]:
        """Inputs to try, in turn, after OpenVINO refused `first` (the default inputs), each with whether a search
        chose it: free dimensions of one size, as the check has always tried next; then free dimensions a search
        chose (`Search`: further sizes where shape inference refuses the first candidates, in OpenVINO's reshape of
        the IR, which costs no compilation), first each dimension's own, then all preferring one size: the IR's
        sizes, then powers of two. At most `_SEARCH_RUNS` searched inputs, each of new shapes and accepted by shape
        inference; `refusal` says why there were none."""
        seen = [self.shapes_of(first)]
        feed, infos, notes = self.make(uniform=True)
        if self.shapes_of(feed) not in seen:
            seen.append(self.shapes_of(feed))
            yield feed, infos, notes, False
        if not self.free:
            return
        explain = (lambda: self.ov_shapes.last_refusal) if self.ov_shapes is not None else (lambda: None)
        base = self.model_sizes | (self.ov_shapes.sizes() if self.ov_shapes is not None else set())
        search = Search(search_sizes(base), explain=explain)
        ladder = [*sorted(s for s in base if 2 <= s <= MAX_SIZE), *(1 << k for k in range(1, 17))]
        runs = 0
        for prefer in dict.fromkeys([None, *ladder]):
            shapes, shape_notes = self._shapes(False, search, prefer)
            if shape_notes:  # no size suits some dimension
                if prefer is None:
                    self.refusal = shape_notes
                    return
                continue
            if elements(shapes) > search.max_elements:  # type: ignore[arg-type]
                continue
            feed, infos, notes = self._fill(shapes, [])
            if self.shapes_of(feed) in seen:
                continue
            seen.append(self.shapes_of(feed))
            yield feed, infos, notes, True
            runs += 1
            if runs >= _SEARCH_RUNS or search.spent:
                return

    def shapes_of(self, feed: Feed) -> dict[str, list[int]]:
        return {n: list(np.shape(feed[n])) for n, _, _ in self.specs}

    def free_shapes(self, feed: Feed) -> str:
        """The shapes of the inputs with free dimensions: `x[3, 1024]`."""
        free = [n for n, dims in self.dim_specs if None in dims]
        return ", ".join(f"{n}{list(np.shape(feed[n]))}" for n in free)


def _decoder_call(feed: dict[str, np.ndarray], infos: list[InputInfo]) -> None:
    """An LLM with a KV cache (the inputs OpenVINO's LLM exports name: input_ids and attention_mask, with
    past_key_values.* [batch, heads, past, head size] or beam_idx) gets one call of a generation: a mask of ones over
    the past and the new tokens, positions following the past, one batch (the model indexes the mask with positions
    up to past + new: random sizes make OpenVINO read zeros past its end, and onnxruntime refuse)."""
    past = [v for n, v in feed.items() if n.startswith("past_key_values.")]
    if not ("input_ids" in feed and "attention_mask" in feed and (past or "beam_idx" in feed)) or \
            feed["input_ids"].ndim != 2 or feed["attention_mask"].ndim != 2 or any(v.ndim != 4 for v in past):
        return
    batch, new = feed["input_ids"].shape
    length = past[0].shape[2] if past else 0
    if any(v.shape[0] != batch or v.shape[2] != length for v in past) or \
            ("beam_idx" in feed and feed["beam_idx"].shape != (batch,)):
        return
    mask = f"ones over the {length} past and {new} new tokens" if length else f"ones over the {new} tokens"
    made = {"attention_mask": (np.ones((batch, length + new)), mask),
            "position_ids": (np.tile(np.arange(length, length + new), (batch, 1)), f"{length} to {length + new - 1}")}
    for i, info in enumerate(infos):
        if info.name in made and (info.name != "position_ids" or feed[info.name].shape == (batch, new)):
            value, what = made[info.name]
            feed[info.name] = value.astype(feed[info.name].dtype)
            infos[i] = InputInfo(info.name, value.shape, info.dtype, what)


def _onnx_sizes(graph: onnx.GraphProto) -> set[int]:
    """Static sizes of the weights (bodies included)."""
    sizes = {int(d) for t in graph.initializer for d in t.dims}
    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                sizes |= _onnx_sizes(a.g)
            elif a.type == onnx.AttributeProto.TENSOR:
                sizes |= {int(d) for d in a.t.dims}
    return sizes


def _ml_float(dtype: np.dtype) -> bool:
    """bfloat16 and the float8 types (ml_dtypes: numpy kind 'V')."""
    return dtype.name.startswith(("bfloat16", "float8"))


def _value(rng: np.random.Generator, dtype: np.dtype, shape: list[int], uses: list[Use], fallback_limit: int,
           name: str, notes: list[str]) -> tuple[np.ndarray, str]:
    roles = {u.role for u in uses}
    if dtype.kind in "OU":  # ONNX strings
        words = ["", "a", "ab", "xyz", "hello", "wörld", "日本", "a b"]
        return np.array(rng.choice(words, size=shape), dtype=str), "random strings"
    if dtype.kind == "b":
        if "condition" in roles:
            return np.ones(shape, dtype=bool), "true (a loop's initial condition)"
        return np.asarray(rng.random(shape) > 0.5), "random booleans"
    unsafe = [u for u in uses if u.role == "shape"]
    if unsafe:
        notes.append(f"input {name} is read as a shape or axes by {unsafe[0].where()}: no default is known to be "
                     "safe; give it with --inputs")
    ranges = []
    for u in uses:
        r = _range(u, fallback_limit)
        if r is not None and (dtype.kind in "iu" or u.role in ("trip", "range_start", "range_stop", "range_step",
                                                                "seq_len")):
            ranges.append((u, r))
    if not ranges:
        if dtype.kind == "f" or _ml_float(dtype):
            return np.asarray(rng.standard_normal(shape)).astype(dtype), "random normal"
        if dtype.kind in "iu":
            return rng.integers(*_GENERIC_INT, endpoint=True, size=shape).astype(dtype), "random in [0, 3]"
        return np.zeros(shape, dtype=dtype), "zeros"
    lo = max(r[0] for _, r in ranges)
    hi = min(r[1] for _, r in ranges)
    if lo > hi:
        notes.append(f"input {name} has conflicting uses ({', '.join(sorted({u.role for u, _ in ranges}))}); "
                     "give it with --inputs")
        lo, hi = ranges[0][1]
    value = rng.integers(lo, hi, endpoint=True, size=shape).astype(dtype)
    what = ", ".join(sorted({u.role.replace("_", " ") for u, _ in ranges}))
    return value, f"{what}: in [{lo}, {hi}]"


def _range(u: Use, fallback_limit: int) -> tuple[int, int] | None:
    limit = u.limit if u.limit is not None else fallback_limit
    if u.role == "trip":
        if u.limit is None:
            return _TRIP
        cap = fallback_limit if u.limit < 0 else u.limit
        return (min(_TRIP[0], cap), min(_TRIP[1], cap))
    if u.role == "bound":
        return _TRIP
    if u.role == "index":
        return (0, max(limit - 1, 0))
    if u.role == "k":
        return (1, max(limit, 1))
    if u.role == "range_start":
        return (0, 2)
    if u.role == "range_stop":
        return (5, 9)
    if u.role == "range_step":
        return (1, 1)
    if u.role == "seq_len":
        return (limit, limit)
    if u.role == "divisor":
        return (1, 3)
    if u.role == "condition":
        return (1, 1)
    return None


def load_inputs(path: str) -> dict[str, np.ndarray]:
    """The arrays of an .npz by key (validated against the model by `validate_inputs`)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: np.asarray(data[k]) for k in data.files}
    except (OSError, ValueError) as e:
        raise CheckError(f"cannot read inputs file {path}: {e}") from None


def input_aliases(ir_model: IRModel) -> dict[str, str]:
    """Every name OpenVINO accepts for an input (its tensor's names; the layer name too) -> the ONNX input's name."""
    from ir2onnx.translate.model import input_aliases as names_of
    from ir2onnx.translate.model import input_name

    legacy = ir_model.ir_version == 10
    out: dict[str, str] = {}
    for p in ir_model.graph.parameters:
        name = input_name(p, legacy)
        for alias in sorted(names_of(p, legacy) | {p.name}):
            out.setdefault(alias, name)
    return out


def validate_inputs(given: Mapping[str, np.ndarray], model: onnx.ModelProto,
                    aliases: Mapping[str, str] | None = None) -> dict[str, np.ndarray]:
    """`given` keyed by the ONNX model's input names, or by another of an input's names in `aliases` (what
    OpenVINO accepts for it); missing, unknown, doubly given or misshapen entries are named in the error."""
    specs = input_specs(model, optional=True)
    names = [s[0] for s in specs]
    problems = []
    if aliases:
        renamed: dict[str, np.ndarray] = {}
        for key, value in given.items():
            name = key if key in names else aliases.get(key, key)
            if name in renamed:
                problems.append(f"input {name} given twice (as {name} or one of its other names, and as {key})")
            renamed[name] = value
        given = renamed
    optional = {vi.name for vi in model.graph.input if vi.type.HasField("optional_type")}
    missing = [n for n in names if n not in given and n not in optional]
    unknown = [k for k in given if k not in names]
    if missing:
        problems.append(f"missing input(s): {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown input(s): {', '.join(unknown)} (the model's inputs are {', '.join(names)})")
    out: dict[str, np.ndarray] = {}
    for name, dtype, dims in specs:
        if name not in given:
            continue
        arr = np.asarray(given[name])
        if arr.dtype.kind == "V" and arr.dtype != dtype and arr.dtype.itemsize == dtype.itemsize:
            arr = arr.view(dtype)  # np.savez stores bfloat16 and float8 as raw bytes
        if arr.ndim != len(dims) or any(d is not None and d != s for d, s in zip(dims, arr.shape)):
            problems.append(f"input {name}: shape {list(arr.shape)} does not fit {['?' if d is None else d for d in dims]}")
        try:
            strings = dtype.kind == "O"
            out[name] = np.asarray(arr, dtype=str) if strings else np.asarray(arr.astype(dtype, copy=False))
        except (TypeError, ValueError):
            problems.append(f"input {name}: {arr.dtype} values cannot be converted to {dtype}")
    if problems:
        raise CheckError("; ".join(problems))
    return out


def describe(feed: Mapping[str, np.ndarray], source: str) -> list[InputInfo]:
    return [InputInfo(n, tuple(np.shape(v)), str(np.asarray(v).dtype), source) for n, v in feed.items()]


def random_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Default inputs chosen from the ONNX model alone (no IR: shape inference by ONNX, no use analysis)."""
    return default_inputs(model, None, None, seed)[0]


__all__: Sequence[str] = ["DefaultInputs", "default_inputs", "describe", "input_aliases", "input_specs", "load_inputs",
                          "random_inputs", "validate_inputs"]

"""What a converter sees: the IR layer, its input values, attributes, port types/ranks and known constants."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import onnx_ir as oir

from ir2onnx.errors import LayerConversionError
from ir2onnx.ir.element_types import ElementType, parse_element_type
from ir2onnx.ir.model import Graph, Layer

if TYPE_CHECKING:
    from ir2onnx.ir.weights import Weights
    from ir2onnx.translate.builder import GraphBuilder

_TYPE_META = "ir2onnx.element_type"
_RUNTIME_DIMS_META = "ir2onnx.runtime_dims"
_NO_DEFAULT = object()


def value_type(v: oir.Value) -> ElementType | None:
    """The OpenVINO element type recorded on a value when it was produced."""
    et = v.meta.get(_TYPE_META)
    return et if isinstance(et, ElementType) else None


def set_value_type(v: oir.Value, et: ElementType | None) -> None:
    if et is not None:
        v.meta[_TYPE_META] = et


def mark_runtime_dims(v: oir.Value, axes: Sequence[int] | None = None) -> oir.Value:
    """The value's dims (`axes` of them, or all) depend on the data (the rows NMS selects, a Loop's iterations): the
    IR's declared dims there do not hold."""
    old = v.meta.get(_RUNTIME_DIMS_META)
    if axes is None or old is True:
        v.meta[_RUNTIME_DIMS_META] = True
    else:
        v.meta[_RUNTIME_DIMS_META] = frozenset(old or ()) | frozenset(axes)
    return v


def has_runtime_dims(v: oir.Value) -> bool:
    """Every dim of the value depends on the data."""
    return v.meta.get(_RUNTIME_DIMS_META) is True


def runtime_axes(v: oir.Value) -> frozenset[int]:
    """The axes marked by mark_runtime_dims(v, axes) (empty where none or all are)."""
    axes = v.meta.get(_RUNTIME_DIMS_META)
    return axes if isinstance(axes, frozenset) else frozenset()


def copy_runtime_dims(src: oir.Value, dst: oir.Value) -> None:
    """`dst` (a copy or cast of `src`) has the same run-time dims."""
    if _RUNTIME_DIMS_META in src.meta:
        dst.meta[_RUNTIME_DIMS_META] = src.meta[_RUNTIME_DIMS_META]


def physical_memory() -> int:
    """Bytes of memory the machine has (Linux, macOS); effectively unlimited where the platform does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 1 << 62


def _items(raw: str) -> list[str]:
    return [p.strip() for p in raw.split(",") if p.strip()]


class _OutOfRange(ValueError):
    """An integer attribute that no int64 holds (OpenVINO refuses it; ONNX attributes are int64 too)."""


def _int64(raw: str) -> int:
    v = int(raw)
    if not -(1 << 63) <= v < 1 << 63:
        raise _OutOfRange(f"{v} is outside the int64 range")
    return v


def _parse_bool(raw: str) -> bool:
    low = raw.lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise ValueError(raw)


class _Inputs(list):  # type: ignore[type-arg]
    """A layer's input values; asking for one the layer does not have is the IR's fault, said so."""

    def __init__(self, values: Sequence[oir.Value], layer: Layer) -> None:
        super().__init__(values)
        self._layer = layer

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        if isinstance(i, int) and not -len(self) <= i < len(self):
            raise LayerConversionError(f"{self._layer.where()}: input {i} is missing: the layer has "
                                       f"{len(self)} input port(s)")
        return super().__getitem__(i)


@dataclass
class States:
    """The model's variables (ReadValue/Assign, ops/state.py): variable id -> its state input / its stored value."""

    inputs: dict[str, oir.Value] = field(default_factory=dict)
    outputs: dict[str, oir.Value] = field(default_factory=dict)


class BodyTranslator(Protocol):
    """What a converter uses of the conversion it is part of (translate/graph.py's Translator): the weights, the
    model's variables, and the translation loop, which control flow (If, Loop, TensorIterator) runs on its bodies."""

    weights: Weights | None
    states: States

    def translate(self, graph: Graph, b: GraphBuilder, bindings: Mapping[str, oir.Value]) -> dict[str, oir.Value]:
        """Emit `graph` into `b`. `bindings` gives each Parameter id its value; returns Result id -> value."""
        ...


class LayerContext:
    """Per-layer view handed to a converter. Converters emit nodes only through `self.b`.

    `version` is the opset the layer's `version` attribute names, as a number (`5` for "opset5"; see
    registry.layer_opset): the layer's string stays as the IR wrote it."""

    def __init__(self, layer: Layer, graph: Graph, inputs: Sequence[oir.Value], builder: GraphBuilder,
                 translator: BodyTranslator, version: int) -> None:
        self.layer = layer
        self.graph = graph
        self.inputs = _Inputs(inputs, layer)
        self.b = builder
        self.translator = translator
        self.version = version

    @property
    def opset(self) -> int:
        return self.b.opset

    def require_opset(self, opset: int, why: str) -> None:
        """This layer needs ONNX opset >= `opset` (for a reason known only now, e.g. a run-time input)."""
        self.b.require_opset(opset, why)

    # ---- errors
    def error(self, message: str) -> LayerConversionError:
        return LayerConversionError(f"{self.layer.where()}: {message}")

    # ---- attributes (`<data>` strings)
    def _attr(self, name: str, default: Any, parse: Callable[[str], Any], what: str) -> Any:
        raw = self.layer.data.get(name)
        if raw is None:
            if default is _NO_DEFAULT:
                raise self.error(f"missing attribute '{name}'")
            return default
        try:
            return parse(raw.strip())
        except _OutOfRange as e:
            raise self.error(f"attribute {name}: {e}") from None
        except ValueError:
            raise self.error(f"attribute {name}=\"{raw}\" is not {what}") from None

    def attr_str(self, name: str, default: Any = _NO_DEFAULT) -> str:
        return self._attr(name, default, str, "a string")  # type: ignore[no-any-return]

    def attr_int(self, name: str, default: Any = _NO_DEFAULT) -> int:
        return self._attr(name, default, _int64, "an integer")  # type: ignore[no-any-return]

    def attr_float(self, name: str, default: Any = _NO_DEFAULT) -> float:
        return self._attr(name, default, float, "a number")  # type: ignore[no-any-return]

    def attr_bool(self, name: str, default: Any = _NO_DEFAULT) -> bool:
        return bool(self._attr(name, default, _parse_bool, "a boolean"))

    def attr_ints(self, name: str, default: Any = _NO_DEFAULT) -> list[int]:
        return list(self._attr(name, default, lambda r: [_int64(p) for p in _items(r)], "a list of integers"))

    def attr_floats(self, name: str, default: Any = _NO_DEFAULT) -> list[float]:
        return list(self._attr(name, default, lambda r: [float(p) for p in _items(r)], "a list of numbers"))

    def attr_strs(self, name: str, default: Any = _NO_DEFAULT) -> list[str]:
        return list(self._attr(name, default, _items, "a list"))

    def attr_type(self, name: str) -> ElementType:
        raw = self.attr_str(name)
        et = parse_element_type(raw)
        if et is None:
            raise self.error(f"attribute {name}=\"{raw}\" is not a known element type")
        return et

    # ---- ports
    def input_type(self, i: int) -> ElementType:
        """Element type of input i: as produced (tracked), else the producer port's precision."""
        et = value_type(self.inputs[i])
        if et is None:
            src = self.graph.source(self.layer, i)
            et = src.layer.outputs[src.output].element_type
        if et is None:
            raise self.error(f"element type of input {i} is unknown")
        return et

    def float32_input(self, i: int) -> oir.Value:
        """Input i in float32 (cast unless it is f32): the type OpenVINO's CPU plugin computes many ops in."""
        v = self.inputs[i]
        return v if self.input_type(i).name == "f32" else self.b.cast(v, oir.DataType.FLOAT)

    def output_type(self, i: int = 0) -> ElementType:
        et = self.layer.outputs[i].element_type
        if et is None:
            raise self.error(f"output port {self.layer.outputs[i].id} has no precision")
        return et

    def input_rank(self, i: int) -> int:
        """Rank of input i from the IR port (ranks are reliable even where dims are stale)."""
        const = self.const(i)
        if const is not None:
            return const.ndim
        return len(self.layer.inputs[i].dims)

    def input_dims(self, i: int) -> tuple[int | None, ...]:
        """Informational dims of input i (may be stale inside bodies: prefer run-time shapes)."""
        const = self.const(i)
        if const is not None:
            return tuple(const.shape)
        return self.layer.inputs[i].dims

    def const(self, i: int) -> np.ndarray | None:
        """The value of input i when it is a constant known at conversion time."""
        if i >= len(self.inputs) or self.inputs[i] is None:
            return None
        cv = self.inputs[i].const_value
        return cv.numpy() if cv is not None else None

    def ints_or_value(self, i: int) -> list[int] | oir.Value:
        """Input i as a list of ints when constant, else as a run-time 1-D int64 value."""
        c = self.const(i)
        if c is not None:
            return [int(v) for v in c.reshape(-1)]
        return self.b.reshape(self.b.cast(self.inputs[i], oir.DataType.INT64), [-1])

    def int64_vector(self, i: int) -> oir.Value:
        """Input i (axes, a shape, pads...) as a 1-D int64 value, folded to a constant when it is one."""
        v = self.ints_or_value(i)
        return v if isinstance(v, oir.Value) else self.b.i64(v)

    def require_const(self, i: int, what: str) -> np.ndarray:
        v = self.const(i)
        if v is None:
            raise self.error(f"{what} (input {i}) must be a constant")
        return v

    def attr_count(self, name: str, default: Any = _NO_DEFAULT) -> int:
        """An attribute that counts or sizes parts (splits, a block, a group, a window): at least 1, as OpenVINO
        requires."""
        n = self.attr_int(name, default)
        if n < 1:
            raise self.error(f"{name}={n}: it must be at least 1")
        return n

    def check_fits(self, elements: int, what: str, itemsize: int = 4) -> None:
        """Attributes that size a tensor no run could hold (a pooled grid of 2^40 x 2^40 cells) are refused before
        anything is built: allocating tables that large does not reliably fail (a machine that overcommits memory
        hands out the pages and kills the process when they are touched)."""
        if elements * itemsize > physical_memory():
            raise self.error(f"converting this layer needs more memory than there is ({what}: {elements} elements "
                             f"of {itemsize} bytes): check its attributes")

    def check_divides(self, given: str, n: int, dim: int | oir.Value | None, what: str) -> None:
        """OpenVINO refuses a static `dim` that `n` (`given`, as the message names it) does not divide; a run-time or
        unknown dim passes."""
        if isinstance(dim, int) and dim % n:
            raise self.error(f"{given}: {n} does not divide the {dim} {what}")

    def attr_axis(self, name: str, rank: int, default: Any = _NO_DEFAULT) -> int:
        """An axis attribute as written (negative counts from the end), refused unless it lies in [-rank, rank)
        (ONNX's shape inference narrows an attribute to 32 bits, so an axis past that would pass as another)."""
        axis = self.attr_int(name, default)
        self.normalize_axis(axis, rank)
        return axis

    def normalize_axis(self, axis: int, rank: int) -> int:
        a = axis + rank if axis < 0 else axis
        if not 0 <= a < max(rank, 1):
            raise self.error(f"axis {axis} is out of range for rank {rank}")
        return a

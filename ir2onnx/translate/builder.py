"""One builder for the main graph and every body: globally unique names, zero-copy initializers."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import ml_dtypes
import numpy as np
import onnx_ir as oir

from ir2onnx.ir.element_types import ElementType

# OpenVINO element type -> name of the oir.DataType member (names, so that importing the converters needs no onnx-ir)
_ET_TO_ONNX: dict[str, str] = {
    "f64": "DOUBLE", "f32": "FLOAT", "f16": "FLOAT16", "bf16": "BFLOAT16", "i64": "INT64", "i32": "INT32",
    "i16": "INT16", "i8": "INT8", "u64": "UINT64", "u32": "UINT32", "u16": "UINT16", "u8": "UINT8",
    "boolean": "BOOL",
    # sub-byte and 8-bit float constants are unpacked/upcast when read (see onnx_dtype)
    "u1": "UINT8", "u2": "UINT8", "u3": "UINT8", "u4": "UINT8", "u6": "UINT8", "i4": "INT8", "nf4": "FLOAT",
    "f4e2m1": "FLOAT", "f8e4m3": "FLOAT", "f8e5m2": "FLOAT", "string": "STRING",
}


def onnx_dtype(et: ElementType) -> oir.DataType:
    """The ONNX element type that holds values of an OpenVINO element type."""
    return oir.DataType[_ET_TO_ONNX[et.name]]


_UNSAFE = re.compile(r"[^A-Za-z0-9_.:/\-]")


def _sanitize(hint: str) -> str:
    s = _UNSAFE.sub("_", hint).strip("_") or "t"
    return s[:120]


class Names:
    """Name authority shared by the main graph and all bodies: no name is ever used twice."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._counters: dict[str, int] = {}

    def reserve(self, name: str) -> bool:
        if name in self._used:
            return False
        self._used.add(name)
        return True

    def claim(self, name: str) -> str:
        """`name` itself when no value has it yet (a model input/output keeps the name it was asked for), else a
        fresh variant."""
        return name if self.reserve(name) else self.fresh(name)

    def fresh(self, hint: str) -> str:
        base = _sanitize(hint)
        if self.reserve(base):
            return base
        n = self._counters.get(base, 0)
        while True:
            n += 1
            cand = f"{base}__{n}"
            if self.reserve(cand):
                self._counters[base] = n
                return cand


# node.meta key of the IR layer a node was emitted for (messages about the ONNX model name that layer)
LAYER_META = "ir2onnx.layer"


class OpsetNeed(NamedTuple):
    """A layer whose translation needs at least ONNX opset `opset`, and why."""

    opset: int
    where: str
    why: str


if TYPE_CHECKING:
    AttrValue = int | float | str | Sequence[int] | Sequence[float] | Sequence[str] | oir.Graph | np.ndarray


class GraphBuilder:
    """Emits ONNX nodes into one graph. Children (bodies) share names and put constants in the root graph."""

    def __init__(self, opset: int, names: Names | None = None, parent: GraphBuilder | None = None) -> None:
        self.opset = opset
        self.names = names or Names()
        self.parent = parent
        self.root: GraphBuilder = parent.root if parent else self
        self.nodes: list[oir.Node] = []
        self.inputs: list[oir.Value] = []
        self.initializers: list[oir.Value] = []  # used on the root only
        self.hint = parent.hint if parent else "t"  # prefix for generated names: the IR layer being translated
        self.layer: object = parent.layer if parent else None  # that layer, recorded on every node (see LAYER_META)
        self.where = parent.where if parent else ""  # that layer's location, for messages
        self.opset_needs: list[OpsetNeed] = []  # used on the root only
        self.opset_forced = parent.opset_forced if parent else False  # the user chose the opset
        # "exact": FakeQuantize as OpenVINO computes it; "onnx": as QuantizeLinear + DequantizeLinear where its grid
        # is one (ops/quantization.py); `quantized` counts the FakeQuantize layers by the form they took
        self.quantization: str = parent.quantization if parent else "exact"
        self.quantized: dict[str, int] = parent.quantized if parent else {}
        self._const_cache: dict[tuple[Any, ...], oir.Value] = {}
        self._derived: dict[tuple[Any, ...], tuple[np.ndarray, oir.Value]] = {}
        self._produced: set[oir.Value] = set()

    # ---- values
    def child(self) -> GraphBuilder:
        return GraphBuilder(self.opset, self.names, self)

    def branch(self, name: str, specs: Sequence[tuple[oir.DataType, int]],
               fn: Callable[[GraphBuilder], Sequence[oir.Value]]) -> oir.Graph:
        """An If branch: the graph of fn(child builder), its outputs typed by `specs` (dtype, rank)."""
        cb = self.child()
        outs = [cb.identity(v) if not cb.owns(v) else v for v in fn(cb)]
        for v, (t, r) in zip(outs, specs):
            v.type, v.shape = oir.TensorType(t), oir.Shape([None] * r)
        return cb.build(outs, self.names.fresh(f"{name}/branch"))

    def loop_body(self, name: str) -> tuple[GraphBuilder, oir.Value, oir.Value]:
        """A child builder for an ONNX Loop body, with its first two inputs: iteration number and condition."""
        cb = self.child()
        it = cb.add_input(cb.names.fresh(f"{name}/iteration"), oir.DataType.INT64, [])
        cond = cb.add_input(cb.names.fresh(f"{name}/cond"), oir.DataType.BOOL, [])
        return cb, it, cond

    def add_input(self, name: str, dtype: oir.DataType, shape: Sequence[int | str | None] | None) -> oir.Value:
        v = oir.Value(name=name, type=oir.TensorType(dtype), shape=oir.Shape(list(shape)) if shape is not None else None)
        self.inputs.append(v)
        return v

    def owns(self, value: oir.Value) -> bool:
        """Whether `value` is produced by a node of this graph (not an input, constant or outer value)."""
        return value in self._produced

    def initializer(self, array: np.ndarray, hint: str = "const") -> oir.Value:
        """A constant kept as an initializer of the main graph, wrapping `array` without copying it."""
        array = _onnx_compatible(array)
        tensor = oir.StringTensor(array.reshape(-1), shape=oir.Shape(array.shape)) if array.dtype == object else \
            oir.Tensor(array, name=None)  # strings: UTF-8 bytes objects
        v = oir.Value(name=self.names.fresh(hint), const_value=tensor)
        v.const_value.name = v.name  # type: ignore[union-attr]
        v.type = oir.TensorType(v.const_value.dtype)  # type: ignore[union-attr]
        v.shape = oir.Shape(array.shape)
        self.root.initializers.append(v)
        return v

    def derived_initializer(self, source: np.ndarray, how: Hashable, make: Callable[[np.ndarray], np.ndarray],
                            hint: str = "w") -> oir.Value:
        """An initializer computed from the weight array `source` by `make(source)` (a reordering, a reshape), made
        once for each memory `source` views and each `how` (the layers sharing a weight share the result: written
        once). The source is held while cached, so no other array can take its memory meanwhile."""
        key = (source.__array_interface__["data"][0], source.shape, source.strides, source.dtype.str, how)
        found = self.root._derived.get(key)
        if found is not None:
            return found[1]
        v = self.initializer(make(source), hint)
        self.root._derived[key] = (source, v)
        return v

    def packed_initializer(self, packed: np.ndarray, dtype: oir.DataType, shape: Sequence[int],
                           hint: str = "const") -> oir.Value:
        """A 4-bit constant kept packed (two values a byte, the first in the low nibble, as OpenVINO stores them)."""
        v = oir.Value(name=self.names.fresh(hint), const_value=oir.PackedTensor(packed, dtype, shape=list(shape)))
        v.const_value.name = v.name  # type: ignore[union-attr]
        v.type = oir.TensorType(dtype)
        v.shape = oir.Shape(list(shape))
        self.root.initializers.append(v)
        return v

    def const(self, value: Any, dtype: Any = None) -> oir.Value:
        """A small constant (axes, shapes, scalars); identical ones are shared."""
        arr = np.asarray(value, dtype=dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        cached = self.root._const_cache.get(key)
        if cached is not None:
            return cached
        v = self.initializer(np.array(arr), "c")
        self.root._const_cache[key] = v
        return v

    def i64(self, values: Sequence[int] | int) -> oir.Value:
        return self.const(values, np.int64)

    def require_opset(self, opset: int, why: str) -> None:
        """Record that the layer being translated needs ONNX opset >= `opset`. Translation goes on as if it had it:
        the caller (convert_ir) translates again at a higher opset, or lists every such layer when forced lower."""
        if opset > self.opset:
            self.root.opset_needs.append(OpsetNeed(opset, self.where, why))

    # ---- nodes
    def op(
        self,
        op_type: str,
        inputs: Sequence[oir.Value | None],
        attrs: Mapping[str, AttrValue | None] | None = None,
        *,
        outputs: int = 1,
        domain: str = "",
    ) -> oir.Value:
        """Emit one node with a single output and return that output."""
        return self.op_multi(op_type, inputs, attrs, outputs=outputs, domain=domain)[0]

    def op_multi(
        self,
        op_type: str,
        inputs: Sequence[oir.Value | None],
        attrs: Mapping[str, AttrValue | None] | None = None,
        *,
        outputs: int = 1,
        domain: str = "",
    ) -> tuple[oir.Value, ...]:
        """Emit one node and return all its outputs."""
        attributes = [_attr(k, v) for k, v in (attrs or {}).items() if v is not None]
        outs = [oir.Value(name=self.names.fresh(f"{self.hint}/{op_type}" if outputs == 1 else f"{self.hint}/{op_type}_{i}"))
                for i in range(outputs)]
        node = oir.Node(domain, op_type, list(inputs), attributes, outputs=outs,
                       name=self.names.fresh(f"{self.hint}/{op_type}_node"))
        if self.layer is not None:
            node.meta[LAYER_META] = self.layer
        self.nodes.append(node)
        self._produced.update(outs)
        return tuple(outs)

    def identity(self, value: oir.Value) -> oir.Value:
        return self.op("Identity", [value])

    def build(self, outputs: Sequence[oir.Value], name: str) -> oir.Graph:
        g = oir.Graph(self.inputs, outputs, nodes=self.nodes, initializers=self.initializers if self.parent is None else (),
                     opset_imports={"": self.opset} if self.parent is None else None, name=name)
        return g

    def build_loop_body(self, cond: oir.Value, outputs: Sequence[oir.Value], name: str) -> oir.Graph:
        """The Loop body graph: the condition passed on unchanged, then `outputs` (whose types and shapes the caller
        has declared)."""
        cond_out = self.identity(cond)
        cond_out.type, cond_out.shape = oir.TensorType(oir.DataType.BOOL), oir.Shape([])
        return self.build([cond_out, *outputs], name)

    # ---- shared emit helpers (target-opset differences live here)
    def reduce(self, op_type: str, x: oir.Value, axes: Sequence[int] | oir.Value | None, keepdims: bool,
               noop_with_empty_axes: bool = False) -> oir.Value:
        """ReduceX with axes as an input (opset >= 18, or ReduceSum >= 13) or an attribute (older)."""
        axes_as_input = self.opset >= 18 or op_type == "ReduceSum"
        attrs: dict[str, AttrValue | None] = {"keepdims": int(keepdims)}
        if noop_with_empty_axes:
            attrs["noop_with_empty_axes"] = 1
        if axes is None:
            return self.op(op_type, [x], attrs)
        if axes_as_input:
            ax = axes if isinstance(axes, oir.Value) else self.i64(list(axes))
            return self.op(op_type, [x, ax], attrs)
        if isinstance(axes, oir.Value):
            self.require_opset(18, f"{op_type} with run-time axes")
            return self.op(op_type, [x, axes], attrs)
        attrs["axes"] = list(axes)
        return self.op(op_type, [x], attrs)

    def dft(self, x: oir.Value, axis: int, length: oir.Value | None = None, *, inverse: bool = False,
            onesided: bool = False) -> oir.Value:
        """ONNX DFT along one non-negative axis: an attribute up to opset 19, an input from 20."""
        attrs: dict[str, AttrValue | None] = {"inverse": int(inverse), "onesided": int(onesided)}
        if self.opset >= 20:
            return self.op("DFT", [x, length, self.i64(axis)], attrs)
        attrs["axis"] = axis
        return self.op("DFT", [x, length] if length is not None else [x], attrs)

    def cast(self, x: oir.Value, to: oir.DataType) -> oir.Value:
        return self.op("Cast", [x], {"to": int(to)})

    def shape_of(self, x: oir.Value, start: int | None = None, end: int | None = None) -> oir.Value:
        attrs: dict[str, AttrValue | None] = {}
        if start is not None:
            attrs["start"] = start
        if end is not None:
            attrs["end"] = end
        return self.op("Shape", [x], attrs)

    def squeeze(self, x: oir.Value, axes: Sequence[int]) -> oir.Value:
        return self.op("Squeeze", [x, self.i64(list(axes))])

    def unsqueeze(self, x: oir.Value, axes: Sequence[int]) -> oir.Value:
        return self.op("Unsqueeze", [x, self.i64(list(axes))])

    def reshape(self, x: oir.Value, shape: Sequence[int] | oir.Value, allowzero: bool = False) -> oir.Value:
        s = shape if isinstance(shape, oir.Value) else self.i64(list(shape))
        return self.op("Reshape", [x, s], {"allowzero": 1} if allowzero else None)

    def concat(self, xs: Sequence[oir.Value], axis: int) -> oir.Value:
        return xs[0] if len(xs) == 1 else self.op("Concat", list(xs), {"axis": axis})

    def slice(self, x: oir.Value, starts: Sequence[int] | oir.Value, ends: Sequence[int] | oir.Value,
              axes: Sequence[int], steps: Sequence[int] | None = None) -> oir.Value:
        ins = [x, starts if isinstance(starts, oir.Value) else self.i64(list(starts)),
               ends if isinstance(ends, oir.Value) else self.i64(list(ends)), self.i64(list(axes))]
        if steps is not None:
            ins.append(self.i64(list(steps)))
        return self.op("Slice", ins)


def _onnx_compatible(array: np.ndarray) -> np.ndarray:
    """8-bit floats have no ONNX type below opset 19: hold their (exact) values as float32."""
    if array.dtype in (np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)):
        return array.astype(np.float32)
    return array


def _attr(name: str, value: AttrValue) -> oir.Attr:
    if isinstance(value, oir.Graph):
        return oir.AttrGraph(name, value)
    if isinstance(value, bool):
        return oir.AttrInt64(name, int(value))
    if isinstance(value, (int, np.integer)):
        return oir.AttrInt64(name, int(value))
    if isinstance(value, (float, np.floating)):
        return oir.AttrFloat32(name, float(value))
    if isinstance(value, str):
        return oir.AttrString(name, value)
    if isinstance(value, np.ndarray):
        return oir.AttrTensor(name, oir.Tensor(value))
    seq = list(value)
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in seq):
        return oir.AttrInt64s(name, [int(v) for v in seq])
    if all(isinstance(v, (int, float, np.floating, np.integer)) for v in seq):
        return oir.AttrFloat32s(name, [float(v) for v in seq])
    if all(isinstance(v, str) for v in seq):
        return oir.AttrStrings(name, [str(v) for v in seq])
    raise TypeError(f"attribute {name}: unsupported value {value!r}")


__all__ = ["LAYER_META", "GraphBuilder", "Names", "OpsetNeed", "onnx_dtype"]

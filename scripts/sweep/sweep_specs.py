"""The sweep's table: for each op type ir2onnx converts, how to build it with openvino.opsetN, which element types,
input shapes and attribute values to try. `all_configs()` expands it into a deterministic list of configurations.

A spec's inputs are `In`s: `dtype=None` is the swept element type T; other inputs have a fixed type and usually a
fixed value. An input with `runtime=None` is tried both as a constant and as a model input (two configurations).
bf16 has no numpy type: bf16 inputs are fed as f32 (values exactly representable in bf16) through a Convert, and
bf16 outputs are converted back to f32.
"""

from __future__ import annotations

import importlib
import itertools
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

FLOATS = ("f32", "f16", "bf16", "f64")
INTS = ("i8", "u8", "i16", "u16", "i32", "i64", "u32", "u64")
NUMERIC = FLOATS + INTS
ALL = NUMERIC + ("boolean",)
SIGNED = ("f32", "f16", "bf16", "f64", "i8", "i16", "i32", "i64")

NP = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "bf16": np.float32, "i8": np.int8, "u8": np.uint8,
      "i16": np.int16, "u16": np.uint16, "i32": np.int32, "i64": np.int64, "u32": np.uint32, "u64": np.uint64,
      "boolean": np.bool_}


@dataclass(frozen=True)
class In:
    shape: tuple[int, ...]
    dtype: str | None = None  # None: the swept type
    domain: str = "any"  # how values are drawn (see _values)
    value: Any = None  # a fixed value
    runtime: bool | None = True  # None: both as a constant and as a model input


@dataclass(frozen=True)
class Spec:
    op: str  # OpenVINO's type name
    version: int  # the openvino.opsetN module that builds it
    family: str
    build: Callable[..., Any]  # (opset module, input nodes, **attrs) -> node or outputs
    types: Sequence[str]
    inputs: Sequence[Sequence[In]]  # input variants
    attrs: Sequence[dict] = ({},)
    tolerance_ulps: float = 1.0
    # where OpenVINO is wrong: (T, attrs) -> the bug's description or None, and the numpy reference then used
    ov_bug: Callable[[str, dict], str | None] | None = None
    numpy_reference: Callable[..., Sequence[np.ndarray]] | None = None


@dataclass
class Config:
    name: str
    op: str
    family: str
    type: str
    spec: Spec = field(repr=False)
    inputs: Sequence[In] = ()
    attrs: dict = field(default_factory=dict)
    runtime: bool = True
    ov_bug: str | None = None
    tolerance_ulps: float = 1.0

    def values(self) -> list[np.ndarray]:
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        return [_values(rng, i, self.type) for i in self.inputs]

    def make(self, in_f32: bool = False) -> tuple[Any, list[np.ndarray]]:
        """The ov.Model and the values to feed its inputs (`in_f32`: the swept f16/bf16 inputs as f32, same values)."""
        import openvino as ov
        import openvino.opset1 as o1

        o = importlib.import_module(f"openvino.opset{self.spec.version}")
        params, feed, nodes = [], [], []
        for k, (inp, val) in enumerate(zip(self.inputs, self.values())):
            et = inp.dtype or ("f32" if in_f32 else self.type)
            val = val.astype(NP[et]) if in_f32 and inp.dtype is None else val
            as_input = inp.runtime if inp.runtime is not None else self.runtime
            if as_input:
                p = o1.parameter(list(val.shape), NP[et], name=f"in{k}")
                params.append(p)
                feed.append(val)
                node = p.output(0)
            elif val.size == 0:  # openvino.opset1.constant refuses empty data
                node = ov.op.Constant(val.astype(NP[et])).output(0)
            else:
                node = o1.constant(val, NP[et]).output(0)
            if et == "bf16":
                node = o1.convert(node, "bf16").output(0)
            nodes.append(node)
        out = self.spec.build(o, *nodes, **self.attrs)
        outs = out.outputs() if isinstance(out, ov.Node) else list(out if isinstance(out, (list, tuple)) else [out])
        results = []
        for port in outs:
            if port.get_element_type() == ov.Type.bf16:
                port = o1.convert(port, "f32").output(0)
            results.append(o1.result(port))
        return ov.Model(results, params, self.spec.op), feed

    def numpy_reference(self, feed: Sequence[np.ndarray]) -> Sequence[np.ndarray]:
        assert self.spec.numpy_reference is not None
        if self.spec.numpy_reference is F32_REFERENCE:
            return self._f32_reference()
        vals = iter(feed)
        full = [next(vals) if (i.runtime if i.runtime is not None else self.runtime) else v
                for i, v in zip(self.inputs, self.values())]
        return self.spec.numpy_reference(*full, **self.attrs)


    def _f32_reference(self) -> list[np.ndarray]:
        """OpenVINO's f32 results on the same values, rounded once to the swept f16/bf16 type (bf16 results are
        compared as f32, as the sweep's models convert them)."""
        import ml_dtypes
        import openvino as ov

        model, feed = self.make(in_f32=True)
        compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        res = compiled.create_infer_request().infer(feed)
        out = []
        for o in compiled.outputs:
            r = np.array(res[o])
            if r.dtype == np.float32:
                r = r.astype(np.float16) if self.type == "f16" else \
                    r.astype(ml_dtypes.bfloat16).astype(np.float32)
            out.append(r)
        return out


def F32_REFERENCE(*_: Any, **__: Any) -> Sequence[np.ndarray]:
    """A spec's numpy_reference meaning: OpenVINO's own f32 computation, rounded once (Config._f32_reference)."""
    raise AssertionError("resolved by Config.numpy_reference")


def _values(rng: np.random.Generator, inp: In, t: str) -> np.ndarray:
    et = inp.dtype or t
    dt = np.dtype(NP[et])
    if inp.value is not None:
        return np.asarray(inp.value).astype(dt)
    shape, d = inp.shape, inp.domain
    if dt.kind == "b":
        return rng.random(shape) > 0.5
    if dt.kind == "f" and d == "distinct":  # no two values equal (where the order of ties is left open)
        return (rng.choice(np.arange(-20, 21), shape, replace=False) / 4).astype(dt)
    if dt.kind == "f":
        lo, hi = {"any": (-4, 4), "pos": (0.1, 4), "unit": (-0.95, 0.95), "ge1": (1.05, 4), "small": (-2, 2),
                  "nonzero": (0.5, 4), "shift": (0, 3)}.get(d, (-4, 4))
        v = rng.uniform(lo, hi, shape)
        if d == "nonzero":
            v *= rng.choice([-1, 1], shape)
        if d == "any" and v.size > 2:  # exact halves exercise rounding modes
            v.flat[::3] = np.round(v.flat[::3] * 2) / 2
        v = v.astype(dt)
        if et == "bf16":
            import ml_dtypes

            v = v.astype(ml_dtypes.bfloat16).astype(np.float32)
        return v
    info = np.iinfo(dt)
    if d == "full":  # the whole range: overflow wraps
        return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    if d == "shift":
        return rng.integers(0, dt.itemsize * 8, shape).astype(dt)
    lo, hi = {"any": (-20, 20), "pos": (1, 20), "unit": (-1, 1), "ge1": (1, 5), "small": (-3, 3),
              "nonzero": (1, 9)}.get(d, (-20, 20))
    if dt.kind == "u":
        lo, hi = max(lo, 0 if d not in ("pos", "nonzero", "ge1") else 1), hi + (20 if d in ("any", "distinct") else 0)
    if d == "distinct":  # no two values equal (where the order of ties is left open)
        return rng.choice(np.arange(lo, hi + 1), shape, replace=False).astype(dt)
    v = rng.integers(lo, hi, shape, endpoint=True)
    if d == "nonzero" and dt.kind == "i":
        v = v * rng.choice([-1, 1], shape)
    return v.astype(dt)


def _shape_text(inputs: Sequence[In]) -> str:
    return "x".join("(" + ",".join(map(str, i.shape)) + ")" for i in inputs)


def _attr_text(attrs: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(attrs.items())) or "-"


def expand(spec: Spec) -> list[Config]:
    out = []
    for t, inputs, attrs in itertools.product(spec.types, spec.inputs, spec.attrs):
        variants = [True, False] if any(i.runtime is None for i in inputs) else [True]
        for rt in variants:
            name = f"{spec.op}-opset{spec.version}/{t}/{_shape_text(inputs)}/{_attr_text(attrs)}"
            if len(variants) > 1:
                name += "/rt" if rt else "/const"
            bug = spec.ov_bug(t, attrs) if spec.ov_bug else None
            out.append(Config(name, spec.op, spec.family, t, spec, inputs, attrs, rt, bug, spec.tolerance_ulps))
    return out


def all_configs() -> list[Config]:
    from sweep_table import SPECS

    seen: set[str] = set()
    out = []
    for spec in SPECS:
        for c in expand(spec):
            base, n = c.name, 1
            while c.name in seen:
                n += 1
                c.name = f"{base}#{n}"
            seen.add(c.name)
            out.append(c)
    return out

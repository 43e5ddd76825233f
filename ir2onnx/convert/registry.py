"""Converter registry keyed by IR op type (case-insensitive) and the opset that introduced the op version."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Union

import onnx_ir as ir

if TYPE_CHECKING:
    from ir2onnx.convert.context import LayerContext
    from ir2onnx.ir.model import Layer

ConverterResult = Union[ir.Value, Sequence[ir.Value]]
Converter = Callable[["LayerContext"], ConverterResult]

# type (lower case) -> {opset number that introduced this version: converter}
_REGISTRY: dict[str, dict[int, Converter]] = {}
# converter -> the lowest ONNX opset its output needs (converters that need more only in some cases say so at
# conversion time through LayerContext.require_opset)
_MIN_ONNX_OPSET: dict[Converter, int] = {}
BASE_ONNX_OPSET = 17
# Types whose `version="experimental"`/"extension" means opset6 (as OpenVINO's reader redirects them).
_EXPERIMENTAL_AS_OPSET6 = {"grucell", "rnncell"}
_ALIASES = {"const": "constant"}


def _opset_number(version: str) -> int:
    m = re.fullmatch(r"opset(\d+)", version.strip())
    if not m:
        raise ValueError(f"not an opset name: {version!r}")
    return int(m.group(1))


def converter(op_types: str | Sequence[str], *versions: str,
              onnx_opset: int = BASE_ONNX_OPSET) -> Callable[[Converter], Converter]:
    """Register a converter for op type(s) at the opsets that introduced that op version, e.g. ("Gather", "opset8").

    `onnx_opset` is the lowest ONNX opset the converter can emit (it emits every opset from there up to the newest
    ir2onnx targets)."""
    types = [op_types] if isinstance(op_types, str) else list(op_types)
    nums = [_opset_number(v) for v in versions] or [1]

    def deco(fn: Converter) -> Converter:
        _MIN_ONNX_OPSET[fn] = onnx_opset
        for t in types:
            slot = _REGISTRY.setdefault(_ALIASES.get(t.lower(), t.lower()), {})
            for n in nums:
                if n in slot and slot[n] is not fn:
                    raise RuntimeError(f"two converters for {t} opset{n}")
                slot[n] = fn
        return fn

    return deco


def lookup(op_type: str, version: str) -> Converter | None:
    """The converter OpenVINO's reader would pick: the newest op version at or below the layer's opset."""
    key = _ALIASES.get(op_type.lower(), op_type.lower())
    slot = _REGISTRY.get(key)
    if not slot:
        return None
    v = version.strip()
    if v in ("experimental", "extension") and key in _EXPERIMENTAL_AS_OPSET6:
        n = 6
    elif v == "":
        n = min(slot)  # pre-opset IRs: the first version of the op
    else:
        try:
            n = _opset_number(v)
        except ValueError:
            return None
    eligible = [k for k in slot if k <= n]
    return slot[max(eligible)] if eligible else None


def lookup_layer(layer: Layer) -> Converter | None:
    return lookup(layer.type, layer.version)


def min_onnx_opset(fn: Converter) -> int:
    """The lowest ONNX opset `fn` can emit."""
    return _MIN_ONNX_OPSET.get(fn, BASE_ONNX_OPSET)


def registered() -> dict[str, list[int]]:
    """Supported types and the opsets of their registered versions (for docs and `info`)."""
    return {k: sorted(v) for k, v in sorted(_REGISTRY.items())}


def registered_onnx_opsets() -> dict[str, dict[int, int]]:
    """type -> {IR opset of the version: lowest ONNX opset its converter emits}."""
    return {k: {n: min_onnx_opset(fn) for n, fn in sorted(v.items())} for k, v in sorted(_REGISTRY.items())}

"""Converter registry keyed by IR op type (case-insensitive) and the opset that introduced the op version."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:  # the registry itself needs no onnx-ir: `ir2onnx ops` lists it without loading the graph library
    import onnx_ir as ir

    from ir2onnx.convert.context import LayerContext
    from ir2onnx.ir.model import Layer

ConverterResult = Union["ir.Value", Sequence["ir.Value"]]
Converter = Callable[["LayerContext"], ConverterResult]

# type (lower case) -> {opset number that introduced this version: converter}
_REGISTRY: dict[str, dict[int, Converter]] = {}
# Types whose `version="experimental"`/"extension" means opset6 (as OpenVINO's reader redirects them).
_EXPERIMENTAL_AS_OPSET6 = {"grucell", "rnncell"}
_ALIASES = {"const": "constant"}


def _opset_number(version: str) -> int:
    m = re.fullmatch(r"opset(\d+)", version.strip())
    if not m:
        raise ValueError(f"not an opset name: {version!r}")
    return int(m.group(1))


def converter(op_types: str | Sequence[str], *versions: str) -> Callable[[Converter], Converter]:
    """Register a converter for op type(s) at the opsets that introduced that op version, e.g. ("Gather", "opset8")."""
    types = [op_types] if isinstance(op_types, str) else list(op_types)
    nums = [_opset_number(v) for v in versions] or [1]

    def deco(fn: Converter) -> Converter:
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


def registered() -> dict[str, list[int]]:
    """Supported types and the opsets of their registered versions (for docs and `info`)."""
    return {k: sorted(v) for k, v in sorted(_REGISTRY.items())}

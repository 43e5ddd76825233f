"""Converter registry keyed by IR op type (case-insensitive) and the opset that introduced the op version."""

from __future__ import annotations

import functools
import re
import sys
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
# converter -> the lowest ONNX opset its output needs (converters that need more only in some cases say so at
# conversion time through LayerContext.require_opset)
_MIN_ONNX_OPSET: dict[Converter, int] = {}
BASE_ONNX_OPSET = 17
_DISPLAY: dict[str, str] = {}  # type (lower case) -> OpenVINO's spelling
_ONNX_FORM: dict[Converter, str] = {}  # converter -> a short description of what it emits (docs)
_MODULES: dict[str, set[str]] = {}  # type (lower case) -> the modules that register its converters
_NOT_CONVERTIBLE: dict[str, str] = {}  # type (lower case) -> why no exact ONNX form exists
# Types whose `version="experimental"`/"extension" means opset6 (as OpenVINO's reader redirects them).
_EXPERIMENTAL_AS_OPSET6 = {"grucell", "rnncell", "proposal", "experimentaldetectrondetectionoutput",
                           "experimentaldetectrongenerateproposalssingleimage",
                           "experimentaldetectronpriorgridgenerator", "experimentaldetectronroifeatureextractor",
                           "experimentaldetectrontopkrois"}
_ALIASES = {"const": "constant"}
# The opsets OpenVINO's IR reader knows (2026.4). Its opset17 is still being filled: it holds only these types.
NEWEST_OPSET = 17
_OPSET17_TYPES = {"parameter", "convert", "shapeof", "erfinv", "rgbtonv12", "bgrtonv12"}


@functools.cache  # a network has a few distinct versions and many layers
def _opset_number(version: str) -> int:
    m = re.fullmatch(r"opset(\d+)", version.strip())
    if not m:
        raise ValueError(f"not an opset name: {version!r}")
    return int(m.group(1))


def converter(op_types: str | Sequence[str], *versions: str, onnx_opset: int = BASE_ONNX_OPSET,
              onnx: str | None = None) -> Callable[[Converter], Converter]:
    """Register a converter for op type(s) at the opsets that introduced that op version, e.g. ("Gather", "opset8").

    `onnx_opset` is the lowest ONNX opset the converter can emit (it emits every opset from there up to the newest
    ir2onnx targets); `onnx` describes its ONNX form for the docs when the ops it calls do not say it."""
    types = [op_types] if isinstance(op_types, str) else list(op_types)
    nums = [_opset_number(v) for v in versions] or [1]
    module = sys._getframe(1).f_globals.get("__name__", "")  # the module that registers (not where fn is defined)

    def deco(fn: Converter) -> Converter:
        _MIN_ONNX_OPSET[fn] = onnx_opset
        if onnx is not None:
            _ONNX_FORM[fn] = onnx
        for t in types:
            _DISPLAY.setdefault(_ALIASES.get(t.lower(), t.lower()), t)
            _MODULES.setdefault(_ALIASES.get(t.lower(), t.lower()), set()).add(module)
            slot = _REGISTRY.setdefault(_ALIASES.get(t.lower(), t.lower()), {})
            for n in nums:
                if n in slot and slot[n] is not fn:
                    raise RuntimeError(f"two converters for {t} opset{n}")
                slot[n] = fn
        _FOUND.clear()
        return fn

    return deco


_LOADED: set[str] = set()  # types whose converter families have been imported


def _load(key: str) -> None:
    """Import the converter families that define `key` (the ops package imports them on demand)."""
    if key not in _LOADED:
        from ir2onnx.convert import ops

        ops.load([key])
        _LOADED.add(key)  # only once loaded: a failed import is not remembered as "nothing converts this type"


def _load_all() -> None:
    from ir2onnx.convert import ops

    ops.load_all()


_FOUND: dict[tuple[str, str], Converter | None] = {}  # lookup's answers: a network asks for a few types many times


def lookup(op_type: str, version: str) -> Converter | None:
    """The converter OpenVINO's reader would pick: the newest op version at or below the layer's opset."""
    try:
        return _FOUND[(op_type, version)]
    except KeyError:
        pass
    found = _lookup(op_type, version)
    _FOUND[(op_type, version)] = found
    return found


def _lookup(op_type: str, version: str) -> Converter | None:
    key = _ALIASES.get(op_type.lower(), op_type.lower())
    _load(key)
    slot = _REGISTRY.get(key)
    if not slot:
        return None
    v = version.strip()
    if v in ("experimental", "extension") and key in _EXPERIMENTAL_AS_OPSET6:
        n = 6
    elif v == "":
        n = min(slot)  # pre-opset IRs: the first version of the op
    else:
        if opset_problem(key, v) is not None:
            return None
        n = _opset_number(v)
    eligible = [k for k in slot if k <= n]
    return slot[max(eligible)] if eligible else None


def opset_problem(op_type: str, version: str) -> str | None:
    """Why OpenVINO's reader refuses this `version` attribute for `op_type`, or None when it accepts it."""
    key = _ALIASES.get(op_type.lower(), op_type.lower())
    v = version.strip()
    if v in ("experimental", "extension") and key in _EXPERIMENTAL_AS_OPSET6:
        return None
    known = f"the opsets OpenVINO knows are opset1 to opset{NEWEST_OPSET}"
    try:
        n = _opset_number(v)
    except ValueError:
        return f"'{v}' is not an opset name ({known})"
    if not 1 <= n <= NEWEST_OPSET:
        return f"{v} does not exist ({known})"
    if n == NEWEST_OPSET and key not in _OPSET17_TYPES:
        return f"OpenVINO's {v} has no {op_type} (its {v} is still being filled)"
    return None


def lookup_layer(layer: Layer) -> Converter | None:
    return lookup(layer.type, layer.version)


def not_convertible(op_type: str, reason: str) -> None:
    """Record that `op_type` has no exact ONNX form, and why (named in the unsupported-ops error and the docs)."""
    _NOT_CONVERTIBLE[op_type.lower()] = reason
    _DISPLAY.setdefault(op_type.lower(), op_type)


def refusal_reason(op_type: str) -> str | None:
    key = _ALIASES.get(op_type.lower(), op_type.lower())
    _load(key)
    return _NOT_CONVERTIBLE.get(key)


def display_name(key: str) -> str:
    return _DISPLAY.get(key, key)


def onnx_form(fn: Converter) -> str | None:
    return _ONNX_FORM.get(fn)


def registered_converters() -> dict[str, dict[int, Converter]]:
    """type (lower case) -> {IR opset of the version: converter}."""
    _load_all()
    return {k: dict(sorted(v.items())) for k, v in sorted(_REGISTRY.items())}


def registering_modules() -> dict[str, list[str]]:
    """type (lower case) -> the modules whose import registers its converters (what must be imported to use it)."""
    _load_all()
    return {k: sorted(v) for k, v in sorted(_MODULES.items())}


def not_convertible_types() -> dict[str, str]:
    _load_all()
    return dict(sorted(_NOT_CONVERTIBLE.items()))


def min_onnx_opset(fn: Converter) -> int:
    """The lowest ONNX opset `fn` can emit."""
    return _MIN_ONNX_OPSET.get(fn, BASE_ONNX_OPSET)


def registered() -> dict[str, list[int]]:
    """Supported types and the opsets of their registered versions (for docs and `info`)."""
    _load_all()
    return {k: sorted(v) for k, v in sorted(_REGISTRY.items())}


def registered_onnx_opsets() -> dict[str, dict[int, int]]:
    """type -> {IR opset of the version: lowest ONNX opset its converter emits}."""
    _load_all()
    return {k: {n: min_onnx_opset(fn) for n, fn in sorted(v.items())} for k, v in sorted(_REGISTRY.items())}

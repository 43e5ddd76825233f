"""Converter registry: one record per IR op type (case-insensitive) and opset that introduced the op version.

Converter modules (translate/ops) register with the `converter` decorator, or `register_made` for converters a factory
made; the translation asks `lookup`/`lookup_layer` for the converter OpenVINO's reader would pick for a layer."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar, Union

if TYPE_CHECKING:  # the registry itself needs no onnx-ir: `ir2onnx ops` lists it without loading the graph library
    import onnx_ir as oir

    from ir2onnx.ir.model import Layer
    from ir2onnx.translate.context import LayerContext

ConverterResult = Union["oir.Value", Sequence["oir.Value"]]
Converter = Callable[["LayerContext"], ConverterResult]
_C = TypeVar("_C", bound=Callable[..., object])

# The ONNX opset a converter emits unless it says otherwise (converters that need more only in some cases say so at
# conversion time through LayerContext.require_opset).
BASE_ONNX_OPSET = 17
# Types whose `version="experimental"`/"extension" means opset6 (as OpenVINO's reader redirects them).
_EXPERIMENTAL_AS_OPSET6 = frozenset({
    "grucell", "rnncell", "proposal", "experimentaldetectrondetectionoutput",
    "experimentaldetectrongenerateproposalssingleimage", "experimentaldetectronpriorgridgenerator",
    "experimentaldetectronroifeatureextractor", "experimentaldetectrontopkrois"})
_ALIASES = {"const": "constant"}
# The opsets OpenVINO's IR reader knows (2026.4). Its opset17 is still being filled: it holds only these types.
NEWEST_OPSET = 17
_OPSET17_TYPES = frozenset({"parameter", "convert", "shapeof", "erfinv", "rgbtonv12", "bgrtonv12"})
_OPS_PACKAGE = "ir2onnx.translate.ops."


@dataclass(frozen=True)
class Registration:
    """One registered converter: IR op `op_type` at the version that `opset` introduced."""

    op_type: str  # as the registering module spells it (OpenVINO's spelling)
    opset: int  # the IR opset that introduced this version of the op
    fn: Converter
    onnx_opset: int  # the lowest ONNX opset its output needs (it emits every opset from there up)
    onnx_form: str | None  # a short description of what it emits (docs), when the ops it calls do not say it
    module: str  # the module whose import registers it (the converter's own module)

    @property
    def key(self) -> str:
        """The type as the registry keys it (lower case, aliases resolved)."""
        return _key(self.op_type)

    @property
    def family(self) -> str:
        """The converter family: the module's name inside translate/ops (`elementwise`)."""
        return self.module.removeprefix(_OPS_PACKAGE)


def _key(op_type: str) -> str:
    low = op_type.lower()
    return _ALIASES.get(low, low)


@functools.cache  # a network has a few distinct versions and many layers
def _opset_number(version: str) -> int:
    m = re.fullmatch(r"opset(\d+)", version.strip())
    if not m:
        raise ValueError(f"not an opset name: {version!r}")
    return int(m.group(1))


def opset_problem(op_type: str, version: str) -> str | None:
    """Why OpenVINO's reader refuses this `version` attribute for `op_type`, or None when it accepts it."""
    key = _key(op_type)
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


def layer_opset(op_type: str, version: str) -> int:
    """The opset a layer's `version` attribute names, as a number: "opset5" -> 5; "experimental"/"extension" -> 6
    for the types OpenVINO's reader redirects there; no version (IRs before opsets) -> 1."""
    v = version.strip()
    if v in ("experimental", "extension") and _key(op_type) in _EXPERIMENTAL_AS_OPSET6:
        return 6
    if v == "":
        return 1
    return _opset_number(v)


class Registry:
    """Every registered converter (one Registration per type and version) and every type refused with a reason."""

    def __init__(self) -> None:
        self._by_type: dict[str, dict[int, Registration]] = {}  # type key -> {opset of the version: record}
        self._by_fn: dict[Converter, Registration] = {}  # a converter -> (one of) its records
        self._display: dict[str, str] = {}  # type key -> OpenVINO's spelling
        self._refused: dict[str, str] = {}  # type key -> why no exact ONNX form exists
        self._loaded: set[str] = set()  # type keys whose converter families have been imported
        self._found: dict[tuple[str, str], Registration | None] = {}  # lookup's answers (a network asks often)

    # ---- filling
    def add(self, record: Registration) -> None:
        key = record.key
        slot = self._by_type.setdefault(key, {})
        old = slot.get(record.opset)
        if old is not None and old.fn is not record.fn:
            raise RuntimeError(f"two converters for {record.op_type} opset{record.opset}")
        known = self._by_fn.get(record.fn)
        if known is not None and (known.onnx_opset, known.onnx_form) != (record.onnx_opset, record.onnx_form):
            raise RuntimeError(f"{record.fn.__qualname__} is registered with two ONNX opsets or forms")
        self._display.setdefault(key, record.op_type)
        slot[record.opset] = record
        self._by_fn[record.fn] = record
        self._found.clear()

    def refuse(self, op_type: str, reason: str) -> None:
        self._refused[op_type.lower()] = reason
        self._display.setdefault(op_type.lower(), op_type)

    # ---- importing the families on demand
    def _load(self, key: str) -> None:
        """Import the converter families that define `key` (the ops package imports them on demand)."""
        if key not in self._loaded:
            from ir2onnx.translate import ops

            ops.load([key])
            self._loaded.add(key)  # only once loaded: a failed import is not remembered as "nothing converts this"

    @staticmethod
    def load_all() -> None:
        from ir2onnx.translate import ops

        ops.load_all()

    # ---- questions
    def find(self, op_type: str, version: str) -> Registration | None:
        """The record OpenVINO's reader would pick: the newest op version at or below the layer's opset."""
        try:
            return self._found[(op_type, version)]
        except KeyError:
            pass
        found = self._find(op_type, version)
        self._found[(op_type, version)] = found
        return found

    def _find(self, op_type: str, version: str) -> Registration | None:
        key = _key(op_type)
        self._load(key)
        slot = self._by_type.get(key)
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

    def refusal_reason(self, op_type: str) -> str | None:
        key = _key(op_type)
        self._load(key)
        return self._refused.get(key)

    def of(self, fn: Converter) -> Registration | None:
        """A record of converter `fn` (its ONNX opset and form are the same in all of them), None if unregistered."""
        return self._by_fn.get(fn)

    def display_name(self, key: str) -> str:
        return self._display.get(key, key)

    def records(self) -> dict[str, dict[int, Registration]]:
        """type key -> {IR opset of the version: record}, sorted, after importing every family."""
        self.load_all()
        return {k: dict(sorted(v.items())) for k, v in sorted(self._by_type.items())}

    def loaded_opsets(self, key: str) -> list[int]:
        """The opsets of `key`'s versions registered so far (importing nothing)."""
        return sorted(self._by_type.get(key, {}))

    def refused(self) -> dict[str, str]:
        """type key -> why it is not convertible, after importing every family."""
        self.load_all()
        return dict(sorted(self._refused.items()))


REGISTRY = Registry()


def _snake(op_type: str) -> str:
    """LogicalAnd -> logical_and, ReduceL1 -> reduce_l1."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", op_type).lower()


def converter(op_types: str | Sequence[str], *versions: str, onnx_opset: int = BASE_ONNX_OPSET,
              onnx: str | None = None) -> Callable[[_C], _C]:
    """Register a converter for op type(s) at the opsets that introduced that op version, e.g. ("Gather", "opset8").

    `onnx_opset` is the lowest ONNX opset the converter can emit (it emits every opset from there up to the newest
    ir2onnx targets); `onnx` describes its ONNX form for the docs when the ops it calls do not say it. The converter's
    own module (`fn.__module__`) is the family that registers it: importing that module must register it."""
    types = [op_types] if isinstance(op_types, str) else list(op_types)
    nums = [_opset_number(v) for v in versions] or [1]

    def deco(fn: _C) -> _C:
        for t in types:
            for n in nums:
                REGISTRY.add(Registration(t, n, fn, onnx_opset, onnx, fn.__module__))  # type: ignore[arg-type]
        return fn

    return deco


def register_made(fn: _C, op_type: str, *versions: str, onnx_opset: int = BASE_ONNX_OPSET,
                  onnx: str | None = None) -> _C:
    """Register `fn`, a converter a factory made for `op_type` alone, under a name of its own (`convert_logical_and`,
    for tracebacks and listings) in place of the factory's inner name. The factory must be defined in the module
    that registers `fn`."""
    name = f"convert_{_snake(op_type)}"
    qualname = f"{fn.__qualname__.rpartition('.')[0]}.{name}".lstrip(".")
    names = {"co_name": name, **({"co_qualname": qualname} if sys.version_info >= (3, 11) else {})}
    fn.__code__ = fn.__code__.replace(**names)  # type: ignore[attr-defined]  (tracebacks name the code object)
    fn.__name__, fn.__qualname__ = name, qualname
    return converter(op_type, *versions, onnx_opset=onnx_opset, onnx=onnx)(fn)


def not_convertible(op_type: str, reason: str) -> None:
    """Record that `op_type` has no exact ONNX form, and why (named in the unsupported-ops error and the docs)."""
    REGISTRY.refuse(op_type, reason)


def lookup(op_type: str, version: str) -> Converter | None:
    """The converter OpenVINO's reader would pick: the newest op version at or below the layer's opset."""
    found = REGISTRY.find(op_type, version)
    return None if found is None else found.fn


def lookup_layer(layer: Layer) -> Converter | None:
    return lookup(layer.type, layer.version)


def refusal_reason(op_type: str) -> str | None:
    return REGISTRY.refusal_reason(op_type)


def display_name(key: str) -> str:
    return REGISTRY.display_name(key)


def onnx_form(fn: Converter) -> str | None:
    record = REGISTRY.of(fn)
    return None if record is None else record.onnx_form


def min_onnx_opset(fn: Converter) -> int:
    """The lowest ONNX opset `fn` can emit."""
    record = REGISTRY.of(fn)
    return BASE_ONNX_OPSET if record is None else record.onnx_opset


def registered_converters() -> dict[str, dict[int, Converter]]:
    """type (lower case) -> {IR opset of the version: converter}."""
    return {k: {n: r.fn for n, r in v.items()} for k, v in REGISTRY.records().items()}


def registering_modules() -> dict[str, list[str]]:
    """type (lower case) -> the modules whose import registers its converters (what must be imported to use it)."""
    return {k: sorted({r.module for r in v.values()}) for k, v in REGISTRY.records().items()}


def not_convertible_types() -> dict[str, str]:
    return REGISTRY.refused()


def registered() -> dict[str, list[int]]:
    """Supported types and the opsets of their registered versions (for docs and `info`)."""
    return {k: list(v) for k, v in REGISTRY.records().items()}


def registered_onnx_opsets() -> dict[str, dict[int, int]]:
    """type -> {IR opset of the version: lowest ONNX opset its converter emits}."""
    return {k: {n: r.onnx_opset for n, r in v.items()} for k, v in REGISTRY.records().items()}

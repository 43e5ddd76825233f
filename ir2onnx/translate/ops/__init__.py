"""Op converters, one module per family, imported on demand.

Importing every family costs more than converting a typical model, so the translation imports only the families
that define the model's layer types: `load(types)` looks them up in `index.py` (written by
`python scripts/gen/gen_operators.py` from the registry that importing every family builds; tests/test_docs.py checks
it is current). `load_all()` imports every module of this package (the docs table, `ir2onnx ops`).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable

# Always imported: the op types that have no exact ONNX form and why (named in the unsupported-ops error).
_ALWAYS = ("not_convertible",)


def load(types: Iterable[str]) -> None:
    """Import the families that convert these IR types (lower case); types no family converts are left alone."""
    from ir2onnx.translate.ops.index import FAMILIES_BY_TYPE

    wanted = set(_ALWAYS)
    for t in types:
        wanted.update(FAMILIES_BY_TYPE.get(t, ()))
    for family in sorted(wanted):
        importlib.import_module(f"{__name__}.{family}")


def load_all() -> None:
    """Import every module of this package (and so register every converter)."""
    for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        importlib.import_module(info.name)

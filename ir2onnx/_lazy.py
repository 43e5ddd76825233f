"""Deferred imports for commands that only need to import modules, not to use what they import."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any


class _Deferred(ModuleType):
    """Stands in sys.modules for a module that is not executed until one of its attributes is read."""

    def __getattr__(self, attr: str) -> Any:  # called only for attributes not set on the stand-in
        name = self.__name__
        if sys.modules.get(name) is self:
            del sys.modules[name]
        real = importlib.import_module(name)
        self.__dict__.update(real.__dict__)  # later reads find the real attributes directly
        return getattr(real, attr)


def defer_import(name: str) -> ModuleType:
    """Make `import name` cost nothing until an attribute of the module is read (then it is imported for real).

    A conversion imports onnx-ir, which imports sympy for symbolic dimensions it never needs here: deferring such
    modules keeps the start-up short. (importlib's LazyLoader does not help here: an `import` statement reads the
    module's `__spec__`, which loads it.)
    """
    if name in sys.modules:
        return sys.modules[name]
    parent = name.rpartition(".")[0]
    if parent and parent not in sys.modules:  # a submodule: finding its spec would import the parent now
        spec = None
    else:
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    stand_in = _Deferred(name)
    stand_in.__spec__ = spec
    sys.modules[name] = stand_in
    return stand_in


def defer_symbolic_shapes() -> None:
    """Defer sympy (about half of onnx-ir's import time): onnx-ir needs it only for arithmetic on symbolic
    dimensions, which a conversion does not do; should anything use it, it is imported then."""
    defer_import("sympy")
    defer_import("onnx_ir._symbolic_shapes")  # builds a table of sympy functions when imported

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
    parent, _, child = name.rpartition(".")
    if parent and parent not in sys.modules:  # a submodule: finding its spec would import the parent now
        spec = None
    else:
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    stand_in = _Deferred(name)
    stand_in.__spec__ = spec
    sys.modules[name] = stand_in
    if parent in sys.modules:  # `import a.b` then reads `a.b` as an attribute of a
        setattr(sys.modules[parent], child, stand_in)
    return stand_in


def defer_unused() -> None:
    """Defer what onnx and onnx-ir import for features a conversion does not use; should anything use one, it is
    imported then.

    * sympy (about half of onnx-ir's import time): onnx-ir needs it only for arithmetic on symbolic dimensions;
    * the onnx modules `import onnx` loads for its own API (model composition, the text parser and printer, the
      version converter, proto generation, utils: about 20 ms);
    * protobuf's text and JSON formats, which onnx imports to save models in them (about 8 ms);
    * hashlib (and OpenSSL), which onnx-ir imports for a pass that deduplicates initializers (about 4 ms)."""
    defer_import("sympy")
    defer_import("onnx_ir._symbolic_shapes")  # builds a table of sympy functions when imported
    for name in ("onnx.compose", "onnx.gen_proto", "onnx.parser", "onnx.printer", "onnx.utils",
                 "onnx.version_converter"):
        defer_import(name)
    # the package alone (it sets its version): the deferred modules are bound as its attributes, where `import
    # google.protobuf.text_format` reads them
    importlib.import_module("google.protobuf")
    for name in ("google.protobuf.json_format", "google.protobuf.text_format", "hashlib"):
        defer_import(name)

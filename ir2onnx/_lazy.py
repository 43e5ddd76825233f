"""Deferred imports for commands that only need to import modules, not to use what they import."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import re
import sys
from types import ModuleType
from typing import Any


class _Deferred(ModuleType):
    """Stands in sys.modules for a module that is not executed until one of its attributes is read."""

    def __getattr__(self, attr: str) -> Any:  # called only for attributes not set on the stand-in
        name = self.__name__
        if attr == "__path__" and self._find_package():  # importing a submodule: the package's code need not run
            return self.__path__
        if sys.modules.get(name) is self:
            del sys.modules[name]
        real = importlib.import_module(name)
        self.__dict__.update(real.__dict__)  # later reads find the real attributes directly
        return getattr(real, attr)

    def _find_package(self) -> bool:
        """Where the stand-in is a package's, set its `__path__` and `__spec__` (the parent is imported by now)."""
        parent = sys.modules.get(self.__name__.rpartition(".")[0]) if "." in self.__name__ else None
        path = getattr(parent, "__path__", None) if parent is not None else None
        spec = importlib.machinery.PathFinder.find_spec(self.__name__, path)
        if spec is None or spec.submodule_search_locations is None:
            return False
        self.__spec__, self.__path__ = spec, spec.submodule_search_locations
        return True


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


def _distribution_version(name: str) -> str:
    """`importlib.metadata.version(name)` without importing importlib.metadata (email, zipfile, csv...: 15-30 ms),
    where the first distribution of that name on sys.path is a plain `.dist-info` directory, as pip installs them;
    anything else (an egg, a zip on the path, no Version header, an import hook that lists distributions of its own)
    is left to importlib.metadata."""
    if any(hasattr(f, "find_distributions") and f is not importlib.machinery.PathFinder for f in sys.meta_path):
        return _real_metadata().version(name)
    wanted = re.sub(r"[-_.]+", "_", name).lower()  # as importlib.metadata normalises names
    for entry in sys.path:
        try:
            children = os.listdir(entry or ".")
        except FileNotFoundError:
            continue
        except OSError:  # a zip file, or unreadable: importlib.metadata knows what to do
            break
        for child in children:
            low = child.lower()
            stem, dot, kind = low.rpartition(".")
            if dot and kind in ("dist-info", "egg-info", "egg") and \
                    re.sub(r"[-_.]+", "_", stem.partition("-")[0]) == wanted:
                if kind == "dist-info":
                    version = _metadata_version(os.path.join(entry or ".", child, "METADATA"))
                    if version is not None:
                        return version
                return _real_metadata().version(name)
    return _real_metadata().version(name)


def _metadata_version(path: str) -> str | None:
    """The Version header of a distribution's METADATA file (headers end at the first empty line), or None."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    return None
                key, colon, value = line.partition(":")
                if colon and key.strip().lower() == "version":
                    return value.strip()
    except (OSError, UnicodeDecodeError):
        return None
    return None


def _real_metadata() -> ModuleType:
    stand_in = sys.modules.get("importlib.metadata")
    if isinstance(stand_in, _Deferred):
        stand_in.__getattr__("version")  # imports the real module; the stand-in takes its attributes
    return importlib.import_module("importlib.metadata")


def defer_numpy_docstrings() -> None:
    """numpy's `_add_newdocs` modules deferred, where numpy is not imported yet (see defer_unused)."""
    if "numpy" not in sys.modules:  # its package imports them by name: `from . import _add_newdocs`
        defer_import("numpy._core._add_newdocs")
        defer_import("numpy._core._add_newdocs_scalars")


def defer_unused() -> None:
    """Defer what onnx and onnx-ir import for features a conversion does not use; should anything use one, it is
    imported then.

    * sympy (about half of onnx-ir's import time): onnx-ir needs it only for arithmetic on symbolic dimensions;
    * the onnx modules `import onnx` loads for its own API (model composition, the text parser and printer, the
      version converter, proto generation, utils: about 20 ms);
    * protobuf's text and JSON formats, which onnx imports to save models in them (about 8 ms);
    * hashlib (and OpenSSL), which onnx-ir imports for a pass that deduplicates initializers (about 4 ms);
    * importlib.metadata (email, zipfile, csv...: 15-30 ms), from which `import onnx` reads only its own version:
      the stand-in answers `version` from the distribution's METADATA file;
    * onnx-ir's `passes.common` package, which imports all 17 of its passes (about 8 ms): ir2onnx imports the two it
      uses from their modules, which load without the package's own code;
    * packaging.version, which onnx-ir imports for saving safetensors (about 3 ms), and onnx-ir's `schemas` (op
      signatures: about 4 ms);
    * platform and uuid, which numpy and onnx import for functions a conversion does not call (about 4 ms);
    * numpy's `_add_newdocs` modules, which only attach docstrings (and the signatures `inspect` reads from them) to
      numpy's C functions and types (30-40 ms of numpy's 110-150): nothing in a conversion reads them. Deferred
      only where numpy is not imported yet, and imported should anything ask them for an attribute."""
    defer_numpy_docstrings()
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
    importlib.import_module("packaging")
    defer_import("packaging.version")
    defer_import("onnx_ir.passes.common")
    defer_import("onnx_ir.schemas")
    for name in ("platform", "uuid"):
        defer_import(name)
    if "importlib.metadata" not in sys.modules:
        defer_import("importlib.metadata").version = _distribution_version  # type: ignore[attr-defined]

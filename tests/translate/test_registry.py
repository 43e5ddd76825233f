"""Converter modules are imported on demand through ir2onnx/translate/ops/index.py: it must name, for every registered
type, each module that registers it (else a model would meet "unsupported" for a type we convert)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ops_index_is_current() -> None:
    spec = importlib.util.spec_from_file_location("gen_operators", ROOT / "scripts" / "gen" / "gen_operators.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert (ROOT / "ir2onnx" / "translate" / "ops" / "index.py").read_text() == gen.render_index(), \
        "ir2onnx/translate/ops/index.py is out of date: run python scripts/gen/gen_operators.py"


_PROBE = """
import json, sys
from ir2onnx.translate import ops, registry
types = json.loads(sys.argv[1])
ops.load(types)  # only the modules the index names for these types
print(json.dumps({t: registry.REGISTRY.loaded_opsets(t) for t in types}))
"""


def test_index_modules_alone_register_their_types() -> None:
    """In a fresh interpreter, importing only the modules the index names registers every version of those types."""
    import json
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    from ir2onnx.translate import registry
    from ir2onnx.translate.ops.index import FAMILIES_BY_TYPE

    expected = registry.registered()
    groups: dict[tuple[str, ...], list[str]] = {}
    for key, modules in FAMILIES_BY_TYPE.items():
        groups.setdefault(modules, []).append(key)

    def probe(types: list[str]) -> dict[str, list[int]]:
        r = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(types)], capture_output=True, text=True,
                           cwd=ROOT, timeout=120, check=True)
        return json.loads(r.stdout)

    with ThreadPoolExecutor(2) as pool:
        for found in pool.map(probe, groups.values()):
            for key, versions in found.items():
                assert versions == expected[key], f"{key}: the index's modules register {versions}, not {expected[key]}"

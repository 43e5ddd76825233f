"""`ir2onnx --help`, `ops` and `info` start at once: they never load onnx-ir's graph library, onnx, sympy,
onnxruntime or OpenVINO (checked in the process's sys.modules, not by timing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_PROBE = """
import json, os, runpy, sys
sys.argv = ["ir2onnx", *json.loads(sys.argv[1])]
os._exit = sys.exit  # the command ends with os._exit: let it return here, to list what it loaded
try:
    runpy.run_module("ir2onnx", run_name="__main__")
except SystemExit as e:
    code = e.code
else:
    code = 0
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""

HEAVY = ("onnx", "onnx_ir._core", "sympy", "onnxruntime", "openvino", "ir2onnx.api", "ir2onnx.translate.model")


@pytest.mark.parametrize("args", [["--help"], ["convert", "--help"], ["check", "--help"], ["ops"],
                                  ["info", str(ROOT / "samples" / "nested" / "model.xml")]])
def test_light_commands_load_no_heavy_modules(args: list[str]) -> None:
    r = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(args)], capture_output=True, text=True, cwd=ROOT,
                       timeout=120, check=False)
    result = json.loads(r.stderr.strip().splitlines()[-1])
    assert result["code"] in (0, None), r.stdout + r.stderr
    assert r.stdout.strip()
    loaded = set(result["modules"])
    heavy_here = HEAVY if args[0] == "info" else (*HEAVY, "rich")  # only info draws a table
    heavy = sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in heavy_here))
    assert not heavy, f"{args} loaded {heavy[:10]}"


def _child_says_ok(code: str) -> None:
    """Run `code` in a fresh interpreter: it must print ok."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_deferred_module_works_once_used() -> None:
    code = ("import sys; from ir2onnx._lazy import defer_import; defer_import('onnx_ir'); "
            "import onnx_ir as ir; assert 'onnx_ir._core' not in sys.modules; "
            "assert ir.DataType.FLOAT.name == 'FLOAT'; import onnx_ir.passes.common; "
            "assert ir.Value is sys.modules['onnx_ir'].Value; print('ok')")
    _child_says_ok(code)


def test_deferred_onnx_tools_work_once_used() -> None:
    """A conversion defers onnx's own tools (ir2onnx._lazy.defer_unused); code that uses one gets the real module."""
    code = ("import sys; from ir2onnx._lazy import defer_unused; defer_unused(); import onnx, onnx.helper as oh; "
            "assert type(sys.modules['onnx.printer']).__name__ == '_Deferred'; "
            "m = oh.make_model(oh.make_graph([oh.make_node('Relu', ['x'], ['y'])], 'g', "
            "[oh.make_tensor_value_info('x', 1, [2])], [oh.make_tensor_value_info('y', 1, [2])])); "
            "assert 'Relu' in onnx.printer.to_text(m); from onnx.compose import merge_models; "
            "assert onnx.parser.parse_graph and callable(merge_models) and onnx.utils.Extractor; "
            # protobuf's text and JSON formats, and hashlib: deferred too, each works once used
            "deferred = [type(sys.modules[n]).__name__ for n in ('google.protobuf.text_format', "
            "'google.protobuf.json_format', 'hashlib')]; assert deferred == ['_Deferred'] * 3, deferred; "
            "from onnx.serialization import registry; "
            "assert b'ir_version' in registry.get('textproto').serialize_proto(m); "
            "assert b'\"ir_version\"' in registry.get('json').serialize_proto(m); "
            "import hashlib; assert hashlib.sha256(b'').hexdigest().startswith('e3b0c442'); print('ok')")
    _child_says_ok(code)


def test_deferred_metadata_and_onnx_ir_passes_work_once_used() -> None:
    """`import onnx` reads its version through a stand-in for importlib.metadata, and ir2onnx imports two of onnx-ir's
    passes from their modules without running the `passes.common` package: each real module works once used."""
    code = ("import sys; from ir2onnx._lazy import defer_unused; defer_unused(); import onnx, ir2onnx.passes.pipeline; "
            "kinds = [type(sys.modules[n]).__name__ for n in ('importlib.metadata', 'onnx_ir.passes.common', "
            "'packaging.version', 'onnx_ir.schemas', 'platform', 'uuid')]; assert kinds == ['_Deferred'] * 6, kinds; "
            "assert 'email' not in sys.modules and 'onnx_ir.passes.common.inliner' not in sys.modules; "
            "import importlib.metadata as md; assert onnx.__version__ == md.version('onnx') != ''; "
            "assert md.distribution('onnx').version == onnx.__version__; "
            "assert type(sys.modules['importlib.metadata']).__name__ == 'module'; "
            "from onnx_ir.passes.common import InlinePass, NameFixPass; "
            "assert NameFixPass is ir2onnx.passes.pipeline.NameFixPass and InlinePass.__name__ == 'InlinePass'; "
            "import packaging.version as pv; assert pv.parse('1.10') > pv.parse('1.9'); "
            "import onnx_ir.schemas, platform, uuid; assert onnx_ir.schemas.OpSignature and platform.system(); "
            "assert uuid.uuid4().version == 4; "
            # numpy's docstrings for its C functions: absent until asked for
            "import numpy as np; assert np.ndarray.astype.__doc__ is None and float(np.add(1.5, 2)) == 3.5; "
            "docs = sys.modules['numpy._core._add_newdocs']; assert type(docs).__name__ == '_Deferred'; "
            "assert callable(docs.add_newdoc) and 'astype' in np.ndarray.astype.__doc__; print('ok')")
    _child_says_ok(code)


@pytest.mark.parametrize("name", ["onnx", "onnx-ir", "ONNX_IR", "numpy", "protobuf", "lxml", "pytest",
                                  "no-such-distribution-here"])
def test_distribution_version_is_importlib_metadatas(name: str) -> None:
    import importlib.metadata

    from ir2onnx._lazy import _distribution_version

    try:
        expected = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        with pytest.raises(importlib.metadata.PackageNotFoundError):
            _distribution_version(name)
    else:
        assert _distribution_version(name) == expected


def test_distribution_version_leaves_import_hooks_to_importlib_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    """An import hook that lists distributions of its own is asked by importlib.metadata first: so it is here."""
    import importlib.metadata

    from ir2onnx._lazy import _distribution_version

    class Listed(importlib.metadata.Distribution):
        def read_text(self, filename: str) -> str | None:
            return "Name: onnx\nVersion: 9.9\n" if filename in ("METADATA", "PKG-INFO") else None

        def locate_file(self, path: object) -> Path:
            return Path(str(path))

    class Hook:
        @staticmethod
        def find_distributions(context: object = None) -> list[importlib.metadata.Distribution]:
            return [Listed()] if getattr(context, "name", None) in ("onnx", None) else []

        @staticmethod
        def find_spec(*args: object) -> None:
            return None

    monkeypatch.setattr(sys, "meta_path", [Hook(), *sys.meta_path])
    assert importlib.metadata.version("onnx") == "9.9"
    assert _distribution_version("onnx") == "9.9"


def test_api_names_win_over_same_named_subpackages() -> None:
    code = ("import ir2onnx.translate.model, ir2onnx.verify.report, ir2onnx, sys; "
            "assert callable(ir2onnx.convert) and callable(ir2onnx.check), (ir2onnx.convert, ir2onnx.check); "
            "from ir2onnx import convert, check, convert_file; print(convert.__module__, check.__module__)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert r.returncode == 0 and r.stdout.split() == ["ir2onnx.api", "ir2onnx.api"], r.stderr


def test_convert_does_not_load_sympy(tmp_path: Path) -> None:
    args = ["convert", str(ROOT / "samples" / "ti_lstm" / "model.xml"), "-o", str(tmp_path / "m.onnx"), "--quiet"]
    r = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(args)], capture_output=True, text=True, cwd=ROOT,
                       timeout=120, check=False)
    result = json.loads(r.stderr.strip().splitlines()[-1])
    assert result["code"] in (0, None), r.stderr
    assert (tmp_path / "m.onnx").exists()
    loaded = set(result["modules"])
    assert "onnx_ir._core" in loaded and not any(m.startswith("sympy.") for m in loaded)
    # every converted model is loaded in an onnxruntime session before it is written, by a helper process where one
    # runs (tests/translate/test_ort_helper.py)
    assert not any(m.split(".")[0] == "openvino" for m in loaded)
    assert not any(m.startswith("ir2onnx.verify.") for m in loaded), "a conversion needs nothing of the check"
    # only the converter families the model's layer types need are imported
    families = {m.removeprefix("ir2onnx.translate.ops.") for m in loaded if m.startswith("ir2onnx.translate.ops.")}
    assert "control_flow.tensor_iterator" in families and "rnn" in families
    assert not families & {"detection", "nms", "roi", "pooling", "signal", "embedding"}, sorted(families)


def test_cli_weight_modes_are_the_writers() -> None:
    from ir2onnx.cli import WEIGHT_MODES
    from ir2onnx.write import WEIGHT_MODES as WRITER_MODES

    assert WEIGHT_MODES == WRITER_MODES


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts the process's threads in /proc")
@pytest.mark.parametrize(("user", "expected"), [(None, "1 None"), ("2", "2 2")])
def test_conversion_loads_numpy_with_one_blas_thread(user: str | None, expected: str) -> None:
    """OpenBLAS's extra threads spin after numpy loads: `convert` loads it with none, unless the user says otherwise,
    and leaves the environment as it was."""
    import os

    if user is not None and (os.cpu_count() or 1) < int(user):
        pytest.skip("OpenBLAS starts no more threads than there are cores")
    code = ("import os; from ir2onnx.cli import one_blas_thread\nwith one_blas_thread():\n    import numpy\n"
            "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    if user is not None:
        env["OPENBLAS_NUM_THREADS"] = user
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
                       check=False)
    assert r.stdout.split() == expected.split(), r.stderr


@pytest.mark.parametrize(("fewer", "expected"), [(True, "0 True 20000 True"), (False, "1 False 700 True")])
def test_collector_examines_no_import_after_a_conversion_process_imports(fewer: bool, expected: str) -> None:
    """The imports' objects are frozen before the collector runs again, where the process ends after the command:
    its first pass would otherwise examine all of them (about 20 ms). Elsewhere the collector is left as it was."""
    code = ("import gc, sys; from ir2onnx.cli import _no_gc\n"
            "gc.set_threshold(700, 10, 10); runs = []\n"
            "gc.callbacks.append(lambda phase, info: runs.append(info) if phase == 'start' else None)\n"
            "with _no_gc(fewer_passes_after=sys.argv[1] == 'True'):\n"
            "    loaded = [[i] for i in range(50_000)]\n"
            "after = [[i] for i in range(100)]\n"
            "print(len(runs), gc.get_freeze_count() >= 50_000, gc.get_threshold()[0], gc.isenabled())")
    r = subprocess.run([sys.executable, "-c", code, str(fewer)], capture_output=True, text=True, cwd=ROOT, timeout=120,
                       check=False)
    assert r.stdout.split() == expected.split(), r.stderr

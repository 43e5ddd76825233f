"""Write docs/operators.md: every OpenVINO op type and version, its ONNX form and opset, or why it is not converted.

    python scripts/gen/gen_operators.py

The list of OpenVINO op types and versions comes from the installed openvino package (its node factory for opsets
1 to 16); the ONNX side comes from ir2onnx's converter registry; the element types from the op sweep's last full run
(scripts/sweep/swept_types.json, written by `python scripts/sweep/sweep_openvino_ops.py --types-json
scripts/sweep/swept_types.json`).
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from pathlib import Path

from ir2onnx.translate import registry
from ir2onnx.translate.graph import STRUCTURAL_TYPES

OUT = Path(__file__).resolve().parents[2] / "docs" / "operators.md"
INDEX = Path(__file__).resolve().parents[2] / "ir2onnx" / "translate" / "ops" / "index.py"
SWEPT = Path(__file__).resolve().parents[2] / "scripts" / "sweep" / "swept_types.json"
FLOATS = ("f32", "f16", "bf16", "f64")
INTS = ("i8", "u8", "i16", "u16", "i32", "i64", "u32", "u64")
LAST_OPSET = 16

# Builder helpers that emit one ONNX op of the same meaning.
_HELPERS = {"slice": "Slice", "reshape": "Reshape", "cast": "Cast", "concat": "Concat", "squeeze": "Squeeze",
            "unsqueeze": "Unsqueeze", "shape_of": "Shape", "identity": "Identity", "dft": "DFT"}
_OP_CALL = re.compile(r"\.op(?:_multi)?\(\s*\"([A-Za-z]+)\"")
_OP_ARG = re.compile(r"\b_?[a-z_]+\((?:ctx,\s*)?\"([A-Z][A-Za-z]+)\"")  # an op name handed to a helper
_REDUCE_CALL = re.compile(r"\.reduce\(\s*\"([A-Za-z]+)\"")
_HELPER_CALL = re.compile(r"\bb\.(" + "|".join(_HELPERS) + r")\(")
_FN_CALL = re.compile(r"\b([a-z_][a-z0-9_]*)\(")
_ONNX_NAME = re.compile(r"[A-Z][A-Za-z]+")


def openvino_ops() -> dict[str, list[int]]:
    """OpenVINO op type -> the opsets that introduced its versions."""
    from openvino.utils.node_factory import NodeFactory

    names = {registry.display_name(k) for k in registry.registered()} | {
        registry.display_name(k) for k in registry.not_convertible_types()} | set(_candidates())
    found: dict[str, set[int]] = {}
    for opset in range(1, LAST_OPSET + 1):
        factory = NodeFactory(f"opset{opset}")
        for name in sorted(names):
            try:
                info = factory.create(name).get_type_info()
            except Exception:  # noqa: BLE001, S112  not an op of this opset
                continue
            found.setdefault(info.name, set()).add(int(str(info.version_id).removeprefix("opset")))
    return {k: sorted(v) for k, v in sorted(found.items())}


# Op types of OpenVINO's opset tables (openvino/opsets/opsetN_tbl.hpp) whose names the Python API's function names
# do not spell: no Python function (ExperimentalDetectron*, Col2Im, Xor), or a spelling the snake_case split misses.
_UNSPELLED = ("Col2Im", "ExperimentalDetectronDetectionOutput", "ExperimentalDetectronGenerateProposalsSingleImage",
              "ExperimentalDetectronPriorGridGenerator", "ExperimentalDetectronROIFeatureExtractor",
              "ExperimentalDetectronTopKROIs", "HSigmoid", "HSwish", "If", "IsNaN", "Loop", "MatMul", "PRelu",
              "Reverse", "SoftPlus", "SoftSign", "TensorIterator", "TopK", "Xor")


def _candidates() -> list[str]:
    """Op type names spelled from the Python API's function names (snake_case -> the CamelCase spellings), and
    the op types of OpenVINO's opset tables that those names miss."""
    import importlib
    import itertools

    out: set[str] = set(_UNSPELLED)
    for opset in range(1, LAST_OPSET + 1):
        try:
            module = importlib.import_module(f"openvino.opset{opset}")
        except ImportError:
            continue
        for fn_name, _ in inspect.getmembers(module, inspect.isfunction):
            words = fn_name.split("_")
            if len(words) > 6:
                continue
            spellings = [["to", "To"] if w == "to" else sorted({w.capitalize(), w.upper()}) for w in words]
            out.update("".join(p) for p in itertools.product(*spellings))
    return sorted(out)


@functools.cache
def _onnx_op_types() -> frozenset[str]:
    import onnx

    return frozenset(schema.name for schema in onnx.defs.get_all_schemas() if schema.domain in ("", "ai.onnx"))


def onnx_ops_of(fn: object) -> list[str]:
    """The ONNX ops a converter emits directly or through its module's helpers (read from the source)."""
    seen_fns: set[str] = {getattr(fn, "__name__", "")}  # its own `def name(` is no call
    ops: list[str] = []
    module = inspect.getmodule(fn)

    def visit(f: object, depth: int) -> None:
        try:
            src = inspect.getsource(f)  # type: ignore[arg-type]
        except (OSError, TypeError):
            return
        cells = [c.cell_contents for c in getattr(f, "__closure__", None) or ()]
        named = [c for c in cells if isinstance(c, str) and _ONNX_NAME.fullmatch(c)]  # made by a factory
        handed = [n for n in _OP_ARG.findall(src) if n in _onnx_op_types()]
        for found in (named + handed + _OP_CALL.findall(src) + _REDUCE_CALL.findall(src) +
                      [_HELPERS[h] for h in _HELPER_CALL.findall(src)]):
            if found not in ops:
                ops.append(found)
        if depth == 0:
            return
        for name in _FN_CALL.findall(src):
            target = getattr(module, name, None)
            if name not in seen_fns and inspect.isfunction(target):
                seen_fns.add(name)
                visit(target, depth - 1)

    visit(fn, 2)
    return ops


def element_types(swept: str | None) -> str:
    """The sweep's types of one op version ("f32 f16 i64* ...") as a table cell: named as a group where they are
    one, then those compared with numpy (OpenVINO wrong) and those failing."""
    if swept is None:
        return "-"
    marked = swept.split()
    types = [t.rstrip("*!") for t in marked]
    groups = {FLOATS + INTS + ("boolean",): "all", FLOATS + INTS: "all but boolean", FLOATS: "floats",
              INTS: "integers", INTS + ("boolean",): "integers, boolean"}
    key = tuple(t for t in FLOATS + INTS + ("boolean",) if t in types)
    text = groups.get(key, " ".join(types))
    numpy = [t[:-1] for t in marked if t.endswith("*")]
    failing = [t[:-1] for t in marked if t.endswith("!")]
    if numpy:
        text += f" (numpy: {' '.join(numpy)})"
    if failing:
        text += f" (failing: {' '.join(failing)})"
    return text


def render() -> tuple[str, dict[str, int]]:
    """The text of docs/operators.md and the counts of converted / not convertible / not converted yet versions."""
    ov_ops = openvino_ops()
    convs = registry.registered_converters()
    refused = registry.not_convertible_types()
    sweep = json.loads(SWEPT.read_text())
    rows: list[str] = []
    counts = {"converted": 0, "not convertible": 0, "not converted yet": 0}
    for name, versions in ov_ops.items():
        key = name.lower()
        if key in STRUCTURAL_TYPES:
            continue
        for v in versions:
            fn = registry.lookup(name, f"opset{v}")
            if fn is not None:
                form = registry.onnx_form(fn) or ", ".join(onnx_ops_of(fn)) or "-"
                used = max(k for k in convs[key] if k <= v)
                note = "" if used == v else f" (as opset{used})"
                types = element_types(sweep["ops"].get(name, {}).get(f"opset{v}"))
                rows.append(f"| {name} | opset{v}{note} | {form} | {registry.min_onnx_opset(fn)} | {types} |")
                counts["converted"] += 1
            elif key in refused:
                rows.append(f"| {name} | opset{v} | not convertible: {refused[key]} | - | - |")
                counts["not convertible"] += 1
            else:
                rows.append(f"| {name} | opset{v} | not converted yet | - | - |")
                counts["not converted yet"] += 1
    lines = [
        "# OpenVINO ops and their ONNX forms",
        "",
        ("Generated by `python scripts/gen/gen_operators.py` from ir2onnx's converter registry and the OpenVINO op set "
         f"(opsets 1 to {LAST_OPSET}). Each OpenVINO version is named by the opset that introduced it. \"ONNX form\" "
         "lists the ONNX ops a converter emits; \"ONNX opset\" is the lowest it can target (ir2onnx picks the lowest "
         "opset that expresses every layer of a model, so some layers raise it only when an input is known at run "
         "time)."),
        "",
        (f"Versions converted: {counts['converted']}; not convertible: {counts['not convertible']}; "
         f"not converted yet: {counts['not converted yet']}. Parameter, Result and Constant are handled by the "
         "translation itself."),
        "",
        ("\"Element types\" are those the op sweep (`python scripts/sweep/sweep_openvino_ops.py`, "
         f"{sweep['configurations']} single-op models over element types, shapes and attributes, OpenVINO "
         f"{sweep['openvino']}) converted and checked, out of f32, f16, bf16, f64, i8, u8, i16, u16, i32, u32, i64, "
         "u64 and boolean, where OpenVINO's CPU plugin runs the op: each converted model's outputs equal OpenVINO's "
         "(integers and booleans exactly, floats within 1 to 8 units in the last place of the type, by op). "
         "\"numpy\" names the types some of whose models are compared with numpy instead, where OpenVINO's CPU "
         "plugin is wrong (scripts/sweep/sweep_table.py names each defect); \"-\": the op is not in the sweep."),
        "",
        "| OpenVINO op | version | ONNX form | ONNX opset | element types |",
        "| --- | --- | --- | --- | --- |",
        *rows,
    ]
    return "\n".join(lines) + "\n", counts


def render_index() -> str:
    """ir2onnx/translate/ops/index.py: IR type -> the converter modules that register it (imported on demand) and
    the opsets of its converted versions (what `ir2onnx ops` lists without importing any converter)."""
    modules = "".join(f"    {key!r}: {tuple(m.removeprefix('ir2onnx.translate.ops.') for m in mods)!r},\n"
                      for key, mods in registry.registering_modules().items())  # imports every module
    versions = "".join(f"    {registry.display_name(key)!r}: {tuple(v)!r},\n"
                       for key, v in registry.registered().items())
    return ('"""What the converter registry holds, without importing the converters. Generated by '
            '`python scripts/gen/gen_operators.py`."""\n\n'
            "# IR op type (lower case) -> the modules whose import registers its converters\n"
            f"FAMILIES_BY_TYPE: dict[str, tuple[str, ...]] = {{\n{modules}}}\n\n"
            "# IR op type (OpenVINO's spelling) -> the opsets that introduced its converted versions\n"
            f"VERSIONS: dict[str, tuple[int, ...]] = {{\n{versions}}}\n")


def main() -> None:
    INDEX.write_text(render_index())
    print(f"wrote {INDEX}")
    text, counts = render()
    OUT.write_text(text)
    print(f"wrote {OUT}: {counts}")


if __name__ == "__main__":
    main()

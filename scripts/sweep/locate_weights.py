"""Does `check --layerwise` locate a changed weight? For each IR, the default conversion is made once; then, for a
sample of its float weights (Consts of the main graph and of TensorIterator/Loop bodies), a copy of the IR whose .bin
holds that weight changed (x * 1.5 + 0.01) is checked against that conversion with `--layerwise`. A weight counts as
located when the first divergence the report names is a layer that reads the weight, or the layer right after one
(through a Convert or a shape-only op, a weight reaches its reader a layer later), or, for a weight inside a loop's
body that the conversion fused, that loop. Also counted: checks that do not fail at all (a weight whose change the
outputs do not show).

    python scripts/sweep/locate_weights.py [MODEL.xml ...] [--per-ir N] [--seed S]

Without paths: the loop fixtures and real networks of tests/fixtures (every IR with a .bin). Prints one line per
weight and the totals.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
DEFAULT = ("tf_lstm_seq", "tf_gru_reset_after", "tf_simple_rnn", "tf_for_loop", "tf_scan", "tf_map_fn", "paddle_lstm",
           "paddle_crnn", "rnn_keras_lstm", "tf_lite_lstm_seq", "ov_ti_unnamed_ports", "net_crnn_ocr",
           "net_shufflenet", "net_transformer_ocr", "net_attention_kv", "tf_conv_lstm_2d")


def weights(xml: Path) -> list[tuple[str, int, int, set[str]]]:
    """(layer id path, .bin offset, size, ids (same scope) of the layers reading it) of every f32 Const with more than
    one value, bodies included."""
    found: list[tuple[str, int, int, set[str]]] = []

    def walk(net: ET.Element, prefix: str) -> None:
        layers, edges = net.find("layers"), net.find("edges")
        if layers is None:
            return
        readers: dict[str, set[str]] = {}
        for e in (edges if edges is not None else []):
            readers.setdefault(e.get("from-layer", ""), set()).add(e.get("to-layer", ""))
        for layer in layers:
            lid = layer.get("id", "")
            data = layer.find("data")
            if layer.get("type") == "Const" and data is not None and data.get("element_type") == "f32" \
                    and int(data.get("size", "0")) > 4:
                found.append((prefix + lid, int(data.get("offset", "0")), int(data.get("size", "0")),
                              readers.get(lid, set())))
            body = layer.find("body")
            if body is not None:
                walk(body, f"{prefix}{lid}/")

    walk(ET.parse(xml).getroot(), "")
    return found


def after(xml: Path, ids: set[str], scope: str) -> set[str]:
    """The layers (of the same scope) reading the layers `ids`."""
    root = ET.parse(xml).getroot()
    net = root
    for part in [p for p in scope.split("/") if p]:
        net = next(lay for lay in net.find("layers") if lay.get("id") == part).find("body")  # type: ignore
    out: set[str] = set()
    for e in net.find("edges") or []:
        if e.get("from-layer") in ids:
            out.add(e.get("to-layer", ""))
    return out


def locate(xml: Path, onnx_path: Path, weight: tuple[str, int, int, set[str]], work: Path) -> tuple[str, str]:
    path, offset, size, readers = weight
    changed = work / "changed"
    changed.mkdir(exist_ok=True)
    shutil.copy(xml, changed / "model.xml")
    data = bytearray(xml.with_suffix(".bin").read_bytes())
    values = np.frombuffer(bytes(data[offset:offset + size]), np.float32) * np.float32(1.5) + np.float32(0.01)
    data[offset:offset + size] = values.astype(np.float32).tobytes()
    (changed / "model.bin").write_bytes(bytes(data))
    report = work / "report.json"
    subprocess.run([sys.executable, "-m", "ir2onnx", "check", str(changed / "model.xml"), str(onnx_path),
                    "--layerwise", "-q", "--report", str(report)], capture_output=True, text=True, check=False,
                   timeout=600)
    if not report.exists():
        return "error", ""
    r = json.loads(report.read_text())
    report.unlink()
    if r.get("passed"):
        return "not shown", ""
    first = r.get("first_divergence")
    if first is None:
        return "not named", ""
    named = str(first["id"])
    scope, _, own = path.rpartition("/")
    scope = scope + "/" if scope else ""
    near = {scope + i for i in readers | after(xml, readers, scope)}
    loops = {"/".join(path.split("/")[:k]) for k in range(1, path.count("/") + 1)}
    if named in near or named in loops:
        return "located", f"{first['type']} {named}"
    return "elsewhere", f"{first['type']} {named} (reads it: {', '.join(sorted(scope + i for i in readers))})"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", type=Path)
    p.add_argument("--per-ir", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    models = a.models or [FIXTURES / n / "model.xml" for n in DEFAULT if (FIXTURES / n / "model.bin").exists()]
    rng = random.Random(a.seed)
    totals: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for xml in models:
            onnx_path = work / "model.onnx"
            done = subprocess.run([sys.executable, "-m", "ir2onnx", "convert", str(xml), "-o", str(onnx_path), "-q",
                                   "--weights", "copy"], capture_output=True, text=True, check=False)
            if done.returncode:
                print(f"{xml}: conversion failed: {done.stderr.strip()[:200]}")
                continue
            found = weights(xml)
            for w in rng.sample(found, min(a.per_ir, len(found))):
                status, detail = locate(xml, onnx_path, w, work)
                totals[status] = totals.get(status, 0) + 1
                print(f"{xml.parent.name} weight {w[0]}: {status} {detail}", flush=True)
    print("totals:", ", ".join(f"{k} {v}" for k, v in sorted(totals.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())

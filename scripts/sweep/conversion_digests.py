"""Digest of every sample's and fixture's conversion under each option set, to prove a refactoring changed none.

    python scripts/sweep/conversion_digests.py > before.json   # on the old code
    python scripts/sweep/conversion_digests.py --compare before.json   # on the new code: exits 1 on any difference

The digest is SHA-256 of the serialised ONNX model (weights inline, metadata included); a conversion that fails
records its error's type and first line instead.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
from pathlib import Path

import ir2onnx

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = {
    "default": {},
    "no-optimize": {"optimize": False},
    "no-fuse": {"fuse": False},
    "plain": {"optimize": False, "fuse": False},
    "cuda": {"device": "cuda"},
    "f16-as-f32": {"f16_as_f32": True},
}


def models() -> list[Path]:
    return sorted(p for d in ("samples", "tests/fixtures") for p in (ROOT / d).rglob("*.xml"))


def digest(xml: Path, options: dict) -> str:
    try:
        proto = ir2onnx.convert(xml, **options)
    except Exception as e:  # noqa: BLE001  a refusal is a result too
        return f"error {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return hashlib.sha256(proto.SerializeToString(deterministic=True)).hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", type=Path, help="a digest file written before: report every difference")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    found = {f"{xml.relative_to(ROOT)} [{name}]": digest(xml, opts) for xml in models() for name, opts in OPTIONS.items()}
    if args.compare is None:
        json.dump(found, sys.stdout, indent=1)
        print()
        return 0
    before = json.loads(args.compare.read_text())
    differ = [k for k in sorted(set(before) | set(found)) if before.get(k) != found.get(k)]
    for k in differ:
        print(f"{k}: {before.get(k)} -> {found.get(k)}")
    print(f"{len(found) - len(differ)} of {len(found)} conversions identical, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())

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


def digest(xml: Path, options: dict, strip: tuple[str, ...] = ()) -> str:
    try:
        proto = ir2onnx.convert(xml, **options)
    except Exception as e:  # noqa: BLE001  a refusal is a result too
        return f"error {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    kept = [p for p in proto.metadata_props if p.key not in strip]
    del proto.metadata_props[:]
    proto.metadata_props.extend(kept)
    return hashlib.sha256(proto.SerializeToString(deterministic=True)).hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", type=Path, help="a digest file written before: report every difference")
    parser.add_argument("--without", action="append", default=[], metavar="KEY",
                        help="leave this metadata entry out of the digest (e.g. ir2onnx.layer_outputs, to compare "
                             "the computation alone when the layer map is meant to change)")
    parser.add_argument("--only-existing", action="store_true",
                        help="with --compare: only the conversions the earlier file has (new fixtures left out)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    found = {f"{xml.relative_to(ROOT)} [{name}]": digest(xml, opts, tuple(args.without))
             for xml in models() for name, opts in OPTIONS.items()}
    if args.compare is None:
        json.dump(found, sys.stdout, indent=1)
        print()
        return 0
    before = json.loads(args.compare.read_text())
    if args.only_existing:
        found = {k: v for k, v in found.items() if k in before}
    differ = [k for k in sorted(set(before) | set(found)) if before.get(k) != found.get(k)]
    for k in differ:
        print(f"{k}: {before.get(k)} -> {found.get(k)}")
    print(f"{len(found) - len(differ)} of {len(found)} conversions identical, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())

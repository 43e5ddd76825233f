"""What validating the converted model costs on an IR with a few hundred MB of weights (time and peak memory).

Builds a TensorIterator network whose Consts hold ~`--mb` MB of f32 weights, converts it with and without the
validation step (each in a fresh process, so peak RSS is that conversion's), and prints the ratios.
Usage: python scripts/bench/bench_validation.py [--mb 300]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
import onnxruntime
import ir2onnx.api as api
from ir2onnx.translate.validate_onnx import validate_model
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
base = rss()
api.validate_model = lambda model: None
t = time.perf_counter()
model = api.convert_to_ir(sys.argv[1])
elapsed = time.perf_counter() - t
alone = 0.0
if sys.argv[2] == "on":
    t = time.perf_counter()
    validate_model(model)
    alone = time.perf_counter() - t
print(json.dumps({"s": elapsed + alone, "validate_s": alone, "rss_mb": rss() - base}))
"""


def build(directory: Path, mb: int) -> Path:
    import numpy as np
    import openvino as ov
    import openvino.opset13 as ops

    n = int((mb * (1 << 20) / 4 / 2) ** 0.5)  # two n x n f32 matrices
    rng = np.random.default_rng(0)
    x = ops.parameter([1, 4, n], np.float32, name="x")
    h0 = ops.parameter([1, n], np.float32, name="h0")
    bx = ops.parameter([1, 1, n], np.float32, name="bx")
    bh = ops.parameter([1, n], np.float32, name="bh")
    w = ops.constant((rng.standard_normal((n, n)) * 0.01).astype(np.float32))
    r = ops.constant((rng.standard_normal((n, n)) * 0.01).astype(np.float32))
    xt = ops.reshape(bx, ops.constant(np.array([1, n], np.int64)), False)
    nh = ops.tanh(ops.add(ops.matmul(xt, w, False, False), ops.matmul(bh, r, False, False)))
    r_h = ops.result(nh)
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_h], [bx, bh]))
    ti.set_sliced_input(bx, x.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(bh, h0.output(0), r_h.output(0))
    xml = directory / "big.xml"
    ov.save_model(ov.Model([ti.get_iter_value(r_h.output(0), -1)], [x, h0]), str(xml), compress_to_fp16=False)
    return xml


def run(xml: Path, mode: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(xml), mode], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        xml = build(Path(d), args.mb)
        weights = xml.with_suffix(".bin").stat().st_size / (1 << 20)
        off, on = run(xml, "off"), run(xml, "on")
    print(f"weights: {weights:.0f} MB")
    print(f"convert_to_ir without validation: {off['s']:.3f} s, peak RSS growth {off['rss_mb']:.0f} MB")
    print(f"convert_to_ir with validation:    {on['s']:.3f} s, peak RSS growth {on['rss_mb']:.0f} MB")
    print(f"validation alone: {on['validate_s']:.3f} s; time ratio with/without {on['s'] / off['s']:.2f}; "
          f"validation's extra peak memory {on['rss_mb'] - off['rss_mb']:.0f} MB "
          f"({(on['rss_mb'] - off['rss_mb']) / weights:.3f} x the weights)")


if __name__ == "__main__":
    main()

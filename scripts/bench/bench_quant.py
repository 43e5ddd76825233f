"""Time quantized networks (tests/fixtures/nncf_*, made by scripts/fixtures/make_nncf_fixtures.py) in onnxruntime and
OpenVINO, with equal thread counts.

For each INT8 (post-training quantized, `nncf_ptq_*`) fixture, in one run:

* onnxruntime on our `quantization="exact"` conversion (FakeQuantize as OpenVINO's arithmetic),
* onnxruntime on our `quantization="onnx"` conversion (QuantizeLinear + DequantizeLinear),
* onnxruntime on onnxruntime's own static quantizer's model (`quantize_static`, QDQ, per channel, MinMax, calibrated
  on the same inputs NNCF was) of our conversion of the original float fixture (net_*),
* onnxruntime on our conversion of the float fixture,
* OpenVINO on the INT8 IR (its defaults: low-precision transformations, int8 kernels where it has them),
* OpenVINO reading our `quantization="onnx"` ONNX model back.

Each runtime is timed in its own block (a fresh session or compiled model, warm-up runs, then the median of up to
`--repeat` runs), the blocks taken in turn for `--rounds` rounds so that the machine's load weighs on all alike; the
table gives the median of the block medians in ms and the median per-round ratios ours-onnx / ort-quantizer and
OpenVINO-on-our-onnx / OpenVINO-on-IR. `err` columns: the largest output error relative to the output's largest
magnitude, against the float network's outputs (the quantization's own effect) on the fixture's inputs.

Where OpenVINO refuses our ONNX model, it is timed with its per-channel MatMul/Gather weight views rewritten
(`leading_one_views`, the same values; an OpenVINO defect) and the table says so; where it cannot compile the IR
itself, the column says `fails` and the reason follows.

For the weight-compressed fixtures (`nncf_wc_*`): onnxruntime on our (default) conversion against OpenVINO on the IR
(its defaults), each runtime's resident memory after loading the model and running it once, over that of a process
that only imported the runtime (each measured in a fresh child process; `f32 MB`: onnxruntime on our conversion of
the float network), and the errors against OpenVINO computing the IR's own arithmetic (expected.npz): `ort err` ours,
`ov err` OpenVINO's defaults (bf16 where the CPU has it, activations quantized dynamically for compressed weights).

Needs openvino and onnxruntime (not nncf). Usage:

    python scripts/bench/bench_quant.py [--threads 2] [--rounds 5] [--repeat 200] [--only REGEX]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import openvino as ov

import ir2onnx
from ir2onnx.verify.worker import ort_session

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
sys.path.insert(0, str(ROOT / "scripts" / "fixtures"))
from make_nncf_fixtures import PTQ, SOURCES, WC, calibration_inputs

sys.path.insert(0, str(ROOT / "scripts" / "bench"))
from bench_recurrent import median_ms as recurrent_median_ms


def _inputs(name: str) -> list[np.ndarray]:
    z = np.load(FIXTURES / name / "inputs.npz")
    return [z[n] for n in z.files]


def _float_outputs(source: str) -> list[np.ndarray]:
    z = np.load(FIXTURES / source / "expected.npz")
    return [z[f"arr_{i}"] for i in range(len(z.files))]


def _error(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    return max(float(np.abs(np.asarray(g, np.float64) - w).max() / np.abs(w).max()) for g, w in zip(got, want))


# ---- timing

def median_ms(fn: Callable[[], object], repeat: int, budget_s: float) -> float:
    """bench_recurrent's median, after five warm-up runs: at least five timed runs."""
    return recurrent_median_ms(fn, repeat, budget_s, warmup=5, pause=0.2, least=5)


def timed_rounds(makers: dict[str, Callable[[], Callable[[], object]]], args: argparse.Namespace
                 ) -> dict[str, list[float]]:
    """Each runner made, timed and dropped in its own block; the blocks in turn, `rounds` times."""
    blocks: dict[str, list[float]] = {k: [] for k in makers}
    for _ in range(args.rounds):
        for k, make in makers.items():
            run = make()
            blocks[k].append(median_ms(run, args.repeat, args.budget))
            del run
    return blocks


def _ratio(blocks: dict[str, list[float]], a: str, b: str) -> float:
    return statistics.median(x / y for x, y in zip(blocks[a], blocks[b]))


# ---- runners

def ort_runner(path: Path, feed: list[np.ndarray], threads: int) -> Callable[[], Callable[[], object]]:
    def make() -> Callable[[], object]:
        session = ort_session(str(path), "cpu", threads=threads)
        names = [i.name for i in session.get_inputs()]
        inputs = dict(zip(names, feed))
        return lambda: session.run(None, inputs)
    return make


def ov_runner(path: Path, feed: list[np.ndarray], threads: int) -> Callable[[], Callable[[], object]]:
    def make() -> Callable[[], object]:
        compiled = ov.Core().compile_model(str(path), "CPU", {"INFERENCE_NUM_THREADS": threads})
        request = compiled.create_infer_request()
        return lambda: request.infer(feed)
    return make


def _ort_outputs(path: Path, feed: list[np.ndarray], threads: int) -> list[np.ndarray]:
    session = ort_session(str(path), "cpu", threads=threads)
    return session.run(None, dict(zip([i.name for i in session.get_inputs()], feed)))


def _ov_outputs(path: Path, feed: list[np.ndarray], threads: int) -> list[np.ndarray]:
    compiled = ov.Core().compile_model(str(path), "CPU", {"INFERENCE_NUM_THREADS": threads})
    return [np.array(v) for v in compiled.create_infer_request().infer(feed).values()]


def leading_one_views(proto: onnx.ModelProto) -> int:
    """Rewrite, in place, each per-channel weight DequantizeLinear that reads a [1, N, K] view with axis 1 (the view
    passes/compressed_weights.py and the quantized form give a weight per output channel) and reaches a MatMul, Gemm
    or Gather through its Reshape (and a Transpose) as a [N, 1, K] view with axis 0: the same bytes and values.
    OpenVINO 2026.4's CPU plugin mis-reads the first form there (its compressed FullyConnected refuses the model, its
    compressed Gather returns rows of N*K values); the second it runs. Convolutions keep their view: with the second
    one OpenVINO's bf16 low-precision path finds no kernel for the CRNN's first convolution. Returns how many were
    rewritten."""
    inits = {t.name: t for t in proto.graph.initializer}
    infos = {v.name: v for v in proto.graph.value_info}
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in proto.graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)

    def reaches_product(value: str, depth: int = 0) -> bool:
        return any(n.op_type in ("MatMul", "Gemm", "Gather") or (
            depth < 2 and n.op_type in ("Reshape", "Transpose") and reaches_product(n.output[0], depth + 1))
            for n in readers.get(value, []))

    count = 0
    for node in proto.graph.node:
        axis = next((a for a in node.attribute if a.name == "axis"), None)
        t = inits.get(node.input[0]) if node.op_type == "DequantizeLinear" and node.input else None
        if t is not None and axis is not None and axis.i == 1 and len(t.dims) == 3 and t.dims[0] == 1 \
                and len(readers.get(t.name, [])) == 1 and reaches_product(node.output[0]):
            t.dims[:] = [t.dims[1], 1, t.dims[2]]
            axis.i = 0
            for name in (node.input[0], node.output[0]):  # declared shapes follow
                if name in infos:
                    dims = infos[name].type.tensor_type.shape.dim
                    dims[0].dim_value, dims[1].dim_value = t.dims[0], 1
            count += 1
    return count


def openvino_readable(path: Path, feed: list[np.ndarray], threads: int) -> tuple[Path, str | None]:
    """`path`, or where OpenVINO fails to compile it, a copy with `leading_one_views` rewritten, and why."""
    try:
        _ov_outputs(path, feed, threads)
        return path, None
    except RuntimeError as e:
        why = next((ln.strip()[1:].split("]")[0] for ln in str(e).splitlines() if ln.strip().startswith("[")),
                   str(e).strip().splitlines()[-1][:80])
    proto = onnx.load(str(path))
    n = leading_one_views(proto)
    out = path.with_name(f"{path.stem}.ov_views.onnx")
    onnx.save(proto, str(out))
    return out, f"OpenVINO refuses our ONNX ({why}); 'ov onnx' ran it with {n} weight views [1,N,K] as [N,1,K]"


class _Reader:
    """onnxruntime's calibration reader over the calibration set NNCF used."""

    def __init__(self, names: list[str], samples: list[list[np.ndarray]]) -> None:
        self._it = iter([dict(zip(names, s)) for s in samples])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._it, None)


def ort_quantized(float_onnx: Path, source: str, out: Path) -> Path:
    """onnxruntime's static quantizer (QDQ, per channel, u8 activations, s8 weights, MinMax) on `float_onnx`."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    names = [i.name for i in onnx.load(str(float_onnx), load_external_data=False).graph.input]
    quantize_static(str(float_onnx), str(out), _Reader(names, calibration_inputs(source)),
                    quant_format=QuantFormat.QDQ, per_channel=True, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8)
    return out


# ---- memory

_MEMORY_CHILD = r"""
import json, sys, numpy as np
def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) * 1024
runtime, path, inputs, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
z = np.load(inputs); feed = [z[n] for n in z.files]
if runtime == "ort":
    from ir2onnx.verify.worker import ort_session
    base = rss()
    s = ort_session(path, "cpu", threads=threads)
    s.run(None, dict(zip([i.name for i in s.get_inputs()], feed)))
else:
    import openvino as ov
    core = ov.Core()
    base = rss()
    c = core.compile_model(path, "CPU", {"INFERENCE_NUM_THREADS": threads})
    c.create_infer_request().infer(feed)
print(json.dumps({"base": base, "after": rss()}))
"""


def memory_mb(runtime: str, path: Path, inputs: Path, threads: int) -> float:
    """Resident memory added by loading `path` and running it once, in a fresh process (MB)."""
    done = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, runtime, str(path), str(inputs), str(threads)],
                          capture_output=True, text=True, check=True)
    r = json.loads(done.stdout.strip().splitlines()[-1])
    return (r["after"] - r["base"]) / 1e6


# ---- the two tables

def bench_int8(name: str, args: argparse.Namespace, tmp: Path) -> None:
    source = SOURCES[name]
    xml, float_xml = FIXTURES / name / "model.xml", FIXTURES / source / "model.xml"
    feed = _inputs(name)
    want = _float_outputs(source)
    d = tmp / name
    d.mkdir()
    paths = {
        "exact": d / "exact.onnx", "onnx": d / "onnx.onnx", "float": d / "float.onnx",
    }
    onnx.save(ir2onnx.convert(xml, quantization="exact"), str(paths["exact"]))
    onnx.save(ir2onnx.convert(xml, quantization="onnx"), str(paths["onnx"]))
    onnx.save(ir2onnx.convert(float_xml), str(paths["float"]))
    notes = []
    try:
        paths["ortq"] = ort_quantized(paths["float"], source, d / "ortq.onnx")
    except Exception as e:  # noqa: BLE001  the table says why
        notes.append(f"onnxruntime's quantizer failed: {str(e).splitlines()[0][:100]}")
    makers: dict[str, Callable[[], Callable[[], object]]] = {
        k: ort_runner(p, feed, args.threads) for k, p in paths.items()}
    ov_onnx, why = openvino_readable(paths["onnx"], feed, args.threads)
    notes += [why] if why else []
    makers["ov_ir"] = ov_runner(xml, feed, args.threads)
    makers["ov_onnx"] = ov_runner(ov_onnx, feed, args.threads)
    errors = {k: _error(_ort_outputs(p, feed, args.threads), want) for k, p in paths.items()}
    for k, p in (("ov_ir", xml), ("ov_onnx", ov_onnx)):
        try:
            errors[k] = _error(_ov_outputs(p, feed, args.threads), want)
        except RuntimeError as e:  # the table says so
            del makers[k]
            notes.append(f"OpenVINO fails to compile {'the IR' if k == 'ov_ir' else 'our ONNX'}: "
                         f"{str(e).strip().splitlines()[-1][:90]}")
    blocks = timed_rounds(makers, args)
    t = {k: statistics.median(v) for k, v in blocks.items()}

    def ms(k: str) -> str:
        return f"{t[k]:>8.3f}" if k in t else f"{'fails' if k.startswith('ov') else 'n/a':>8}"

    def ratio(a: str, b: str) -> str:
        return f"{_ratio(blocks, a, b):>9.2f}" if a in t and b in t else f"{'n/a':>9}"
    print(f"{name:<26} {ms('exact')} {ms('onnx')} {ms('ortq')} {ms('float')} {ms('ov_ir')} {ms('ov_onnx')} "
          f"{ratio('onnx', 'ortq')} {ratio('ov_onnx', 'ov_ir')}", flush=True)
    errs = "  ".join(f"{k} {v:.1e}" for k, v in errors.items())
    print(f"{'':<26} err vs float: {errs}", flush=True)
    for n in notes:
        print(f"{'':<26} {n}", flush=True)


def bench_wc(name: str, args: argparse.Namespace, tmp: Path) -> None:
    source = SOURCES[name]
    xml = FIXTURES / name / "model.xml"
    feed = _inputs(name)
    d = tmp / name
    d.mkdir()
    ours, flt = d / "model.onnx", d / "float.onnx"
    onnx.save(ir2onnx.convert(xml), str(ours))
    onnx.save(ir2onnx.convert(FIXTURES / source / "model.xml"), str(flt))
    exact = np.load(FIXTURES / name / "expected.npz")  # OpenVINO computing the IR's own arithmetic
    exact_out = [exact[f"arr_{i}"] for i in range(len(exact.files))]
    err = _error(_ort_outputs(ours, feed, args.threads), exact_out)
    ov_err = _error(_ov_outputs(xml, feed, args.threads), exact_out)
    blocks = timed_rounds({"ort": ort_runner(ours, feed, args.threads), "ov": ov_runner(xml, feed, args.threads)},
                          args)
    inputs = FIXTURES / name / "inputs.npz"
    mem = {"ort": memory_mb("ort", ours, inputs, args.threads), "ov": memory_mb("ov", xml, inputs, args.threads),
           "ort_float": memory_mb("ort", flt, inputs, args.threads)}
    sizes = (FIXTURES / name / "model.bin").stat().st_size, (FIXTURES / source / "model.bin").stat().st_size
    print(f"{name:<38} {statistics.median(blocks['ort']):>8.3f} {statistics.median(blocks['ov']):>8.3f} "
          f"{_ratio(blocks, 'ort', 'ov'):>7.2f} {mem['ort']:>8.1f} {mem['ov']:>8.1f} {mem['ort_float']:>9.1f} "
          f"{sizes[0] / 1e3:>7.1f} {sizes[1] / 1e3:>7.1f} {err:>8.1e} {ov_err:>8.1e}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2, help="intra-op threads of both runtimes")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of blocks taken in turn")
    ap.add_argument("--repeat", type=int, default=200, help="timed runs per block (at most)")
    ap.add_argument("--budget", type=float, default=0.5, help="seconds per block once 5 runs are timed")
    ap.add_argument("--only", default="", help="fixtures whose name matches this regular expression")
    args = ap.parse_args()
    only = re.compile(args.only)
    print(f"onnxruntime {__import__('onnxruntime').__version__}, OpenVINO {ov.get_version()}, threads={args.threads}, "
          f"{os.cpu_count()} CPUs; medians of {args.rounds} block medians, ms", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        print(f"\n{'INT8 (nncf.quantize)':<26} {'ort exact':>8} {'ort onnx':>8} {'ort q':>8} {'ort f32':>8} "
              f"{'ov IR':>8} {'ov onnx':>8} {'onnx/q':>9} {'ovonnx/IR':>9}")
        for name in PTQ:
            if only.search(name):
                bench_int8(name, args, Path(tmp))
        print(f"\n{'weight-compressed (compress_weights)':<38} {'ort':>8} {'ov IR':>8} {'ort/ov':>7} {'ort MB':>8} "
              f"{'ov MB':>8} {'f32 MB':>9} {'.bin kB':>7} {'f32 kB':>7} {'ort err':>8} {'ov err':>8}")
        for name in WC:
            if only.search(name):
                bench_wc(name, args, Path(tmp))


if __name__ == "__main__":
    main()

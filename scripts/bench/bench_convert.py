"""Conversion speed and memory of `ir2onnx convert` on an IR with about 1 GB of f32 weights, per weight mode.

Builds (in a temporary directory) an IR whose weights are a chain of MatMuls with large constant matrices plus a
TensorIterator over an LSTMCell (its gate-reordered weights are computed, so they always go to the model's own
data file), then runs `ir2onnx convert` as a whole process once per weight mode and reports wall time, GB/s of
weights, peak RSS (VmHWM) and the peak of private memory (anonymous pages: RssAnon, what the process allocated;
file pages of the mapped .bin are page cache, shared and reclaimable, and are not counted); memory and CPU time
include the helper process that loads the model in onnxruntime. Next to them: a raw read of the .bin and OpenVINO's
read_model (when openvino is installed). The page cache is warmed first (the .bin
is read once), so the figures measure the converter, not the disk.

Needs `pip install openvino` to build the IR. Usage: python scripts/bench/bench_convert.py [--gb 1.07] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def build_ir(directory: Path, gbytes: float) -> Path:
    """MatMul chain with n x n f32 weights (about `gbytes` GB in all) and a TensorIterator over an LSTMCell."""
    import openvino as ov
    import openvino.opset13 as ops

    n, hidden, steps = 4096, 256, 8
    count = max(1, round(gbytes * 1e9 / (n * n * 4)))
    rng = np.random.default_rng(0)
    x = ops.parameter([1, n], np.float32, name="x")
    y = x
    for _ in range(count):  # distinct values: OpenVINO stores identical constants once
        y = ops.matmul(y, ops.constant(rng.random((n, n), dtype=np.float32) * (1 / n)), False, False)
    seq = ops.reshape(y, ops.constant(np.array([1, steps, n // steps], np.int64)), False)
    bx = ops.parameter([1, 1, n // steps], np.float32)
    bh = ops.parameter([1, hidden], np.float32)
    bc = ops.parameter([1, hidden], np.float32)
    cell = ops.lstm_cell(ops.squeeze(bx, [1]), bh, bc,
                         ops.constant(rng.standard_normal((4 * hidden, n // steps), dtype=np.float32) * 0.05),
                         ops.constant(rng.standard_normal((4 * hidden, hidden), dtype=np.float32) * 0.05),
                         ops.constant(np.zeros(4 * hidden, np.float32)), hidden)
    r_h, r_c = ops.result(cell.output(0)), ops.result(cell.output(1))
    r_y = ops.result(ops.unsqueeze(cell.output(0), 1))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_h, r_c, r_y], [bx, bh, bc]))
    ti.set_sliced_input(bx, seq.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(bh, ops.constant(np.zeros((1, hidden), np.float32)).output(0), r_h.output(0))
    ti.set_merged_input(bc, ops.constant(np.zeros((1, hidden), np.float32)).output(0), r_c.output(0))
    model = ov.Model([ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1)], [x], "bench")
    xml = directory / "model.xml"
    ov.save_model(model, str(xml), compress_to_fp16=False)
    return xml


def _status_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    """The processes `pid` started (`ir2onnx convert` starts one that loads the model in onnxruntime)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    except (OSError, IndexError, ValueError):
        return 0.0


def run_measured(cmd: list[str]) -> dict[str, float]:
    """Run `cmd`; sample its anonymous memory (RssAnon) and peak RSS (VmHWM) every 5 ms, each the sum over the
    process and the processes it started; CPU seconds they used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak_anon = 0
    peak_hwm = 0
    helper_cpu: dict[int, float] = {}  # the helper is not waited for by its parent: its CPU time is sampled
    done = threading.Event()

    def sample() -> None:
        nonlocal peak_anon, peak_hwm
        while not done.is_set():
            pids = [proc.pid, *_children(proc.pid)]
            peak_anon = max(peak_anon, sum(_status_kb(p, "RssAnon") for p in pids))
            peak_hwm = max(peak_hwm, sum(_status_kb(p, "VmHWM") for p in pids))
            for p in pids[1:]:
                helper_cpu[p] = max(helper_cpu.get(p, 0.0), _cpu_seconds(p))
            time.sleep(0.005)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    done.set()
    t.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{out}\n{err}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime + sum(helper_cpu.values())
    return {"wall": wall, "cpu": cpu, "anon_mb": peak_anon / 1024, "hwm_mb": peak_hwm / 1024}


def raw_read(path: Path) -> float:
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(64 << 20)
        view = memoryview(buf)
        while f.readinto(view):
            pass
    return time.perf_counter() - t0


def file_copy(path: Path, target: Path) -> float:
    """Copy the .bin as `cp` does: the least any converter that copies the weights pays on this disk."""
    t0 = time.perf_counter()
    shutil.copyfile(path, target)
    wall = time.perf_counter() - t0
    target.unlink()
    return wall


def openvino_read(xml: Path) -> float | None:
    code = (f"import time, openvino as ov; c = ov.Core(); t = time.perf_counter(); c.read_model({str(xml)!r}); "
            "print(time.perf_counter() - t)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    return float(r.stdout.strip()) if r.returncode == 0 else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.07, help="weights size in GB (default 1.07)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per mode; the median is reported")
    args = ap.parse_args()
    os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as an installed package has it
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        xml = build_ir(d, args.gb)
        bin_path = xml.with_suffix(".bin")
        size = bin_path.stat().st_size
        gb = size / 1e9
        raw_read(bin_path)  # warm the page cache
        print(f"IR: {gb:.3f} GB of weights; page cache warmed (the .bin read once before timing); "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; median of {args.repeat} runs "
              "after one warm-up run")
        t_raw = statistics.median(raw_read(bin_path) for _ in range(args.repeat))
        print(f"{'raw read of the .bin':34s} {t_raw:7.2f} s  {gb / t_raw:6.2f} GB/s")
        t_copy = statistics.median(file_copy(bin_path, d / "copy.bin") for _ in range(args.repeat))
        print(f"{'copy of the .bin (as cp)':34s} {t_copy:7.2f} s  {gb / t_copy:6.2f} GB/s  (the disk's speed)")
        ov_times = [t for t in (openvino_read(xml) for _ in range(args.repeat)) if t is not None]
        if ov_times:
            t_ov = statistics.median(ov_times)
            print(f"{'OpenVINO read_model (in process)':34s} {t_ov:7.2f} s  {gb / t_ov:6.2f} GB/s")
        for cli in (["--help"], ["ops"], ["info", str(xml)]):
            run_measured([sys.executable, "-m", "ir2onnx", *cli])
            t = statistics.median(run_measured([sys.executable, "-m", "ir2onnx", *cli])["wall"]
                                  for _ in range(args.repeat))
            print(f"{'ir2onnx ' + cli[0]:34s} {t:7.2f} s  (whole process)")
        print(f"{'ir2onnx convert --weights MODE':34s} {'time':>7s}    {'GB/s':>6s}  {'CPU':>6s}  {'peak RSS':>9s}  "
              f"{'peak private':>12s}  {'private/weights':>15s}")
        for mode in ("reference", "copy"):
            out = d / "out" / "model.onnx" if mode == "copy" else d / "model.onnx"
            cmd = [sys.executable, "-m", "ir2onnx", "convert", str(xml), "-o", str(out), "--weights", mode, "--quiet"]
            def fresh(out: Path = out, cmd: list[str] = cmd) -> dict[str, float]:
                for old in out.parent.glob(out.name + "*"):  # into a new file, as the copy of the .bin above
                    old.unlink()
                return run_measured(cmd)

            fresh()  # warm-up
            runs = [fresh() for _ in range(args.repeat)]
            wall = statistics.median(r["wall"] for r in runs)
            cpu = statistics.median(r["cpu"] for r in runs)
            anon = max(r["anon_mb"] for r in runs)
            hwm = max(r["hwm_mb"] for r in runs)
            written = sum(p.stat().st_size for p in out.parent.glob(out.name + "*"))
            print(f"{'  ' + mode:34s} {wall:7.2f} s  {gb / wall:6.2f}  {cpu:5.2f}s  {hwm:7.0f} MB  {anon:10.0f} MB  "
                  f"{anon * 1.048576e6 / size:15.3f}   (wrote {written / 1e9:.3f} GB)")


if __name__ == "__main__":
    main()

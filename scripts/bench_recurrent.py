"""Time a TensorIterator-over-LSTMCell IR in OpenVINO (CPU, f32) and its conversion in onnxruntime, in one run.

Prints the median latency of each and the ratio onnxruntime / OpenVINO (below 1 means the ONNX model is faster),
plus the ratio of the default conversion to the one without optimisation passes (--no-optimize form).
Needs `pip install openvino`. Usage: python scripts/bench_recurrent.py [--steps 100] [--hidden 256] [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops

import ir2onnx
from ir2onnx.check.onnxruntime_run import make_session


def ti_lstm(steps: int, batch: int, inputs: int, hidden: int) -> ov.Model:
    rng = np.random.default_rng(0)
    X = ops.parameter([batch, steps, inputs], np.float32, name="X")
    H0 = ops.parameter([batch, hidden], np.float32, name="H0")
    C0 = ops.parameter([batch, hidden], np.float32, name="C0")
    bx = ops.parameter([batch, 1, inputs], np.float32)
    bh = ops.parameter([batch, hidden], np.float32)
    bc = ops.parameter([batch, hidden], np.float32)
    cell = ops.lstm_cell(ops.squeeze(bx, [1]), bh, bc,
                         ops.constant((rng.standard_normal((4 * hidden, inputs)) * 0.05).astype(np.float32)),
                         ops.constant((rng.standard_normal((4 * hidden, hidden)) * 0.05).astype(np.float32)),
                         ops.constant(np.zeros(4 * hidden, np.float32)), hidden)
    r_h, r_c, r_y = ops.result(cell.output(0)), ops.result(cell.output(1)), ops.result(ops.unsqueeze(cell.output(0), 1))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_h, r_c, r_y], [bx, bh, bc]))
    ti.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(bh, H0.output(0), r_h.output(0))
    ti.set_merged_input(bc, C0.output(0), r_c.output(0))
    return ov.Model([ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1)], [X, H0, C0])


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--inputs", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    print(f"TensorIterator over LSTMCell: T={args.steps}, input={args.inputs}, hidden={args.hidden}")
    print(f"{'batch':>5} {'openvino ms':>12} {'onnx ms':>9} {'onnx/ov':>8} {'onnx unopt ms':>14} {'opt/unopt':>9}")
    with tempfile.TemporaryDirectory() as d:
        for batch in (1, 16):
            xml = Path(d) / f"ti_{batch}.xml"
            ov.save_model(ti_lstm(args.steps, batch, args.inputs, args.hidden), str(xml), compress_to_fp16=False)
            rng = np.random.default_rng(1)
            feed = [rng.standard_normal((batch, args.steps, args.inputs)).astype(np.float32),
                    np.zeros((batch, args.hidden), np.float32), np.zeros((batch, args.hidden), np.float32)]
            compiled = ov.Core().compile_model(str(xml), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
            request = compiled.create_infer_request()
            t_ov = median_ms(lambda: request.infer(feed), args.repeat)
            results = []
            for optimize in (True, False):
                session = make_session(ir2onnx.convert(xml, optimize=optimize))
                names = [i.name for i in session.get_inputs()]
                results.append(median_ms(lambda s=session: s.run(None, dict(zip(names, feed))), args.repeat))
            t_opt, t_unopt = results
            print(f"{batch:>5} {t_ov:>12.2f} {t_opt:>9.2f} {t_opt / t_ov:>8.2f} {t_unopt:>14.2f} {t_opt / t_unopt:>9.2f}")


if __name__ == "__main__":
    main()

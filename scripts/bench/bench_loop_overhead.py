"""Per-iteration cost of converted loop bodies against a minimal hand-written ONNX Scan / Loop of the same
computation, in onnxruntime (CPU).

The body is a generic (non-RNN-op) recurrence with outputs h' (state) and all h' stacked: "projection" is
h' = tanh(x_t W^T + h U + b), "elementwise" is h' = tanh(x_t * h + b). It is built twice in OpenVINO: as a
TensorIterator (-> ONNX Scan) and as a Loop-5 with a sliced input (-> ONNX Loop). The hand-written references
are what one would write directly in ONNX: a Scan over x's time axis, and a Loop that Gathers x_t, both with the
weight pre-transposed. The cost per iteration is the slope between two sequence lengths (so fixed costs outside the
loop cancel out); the ratio converted / hand-written is printed with the default passes and with --no-optimize.
Recurrent fusion is off here (the "projection" body is a spelled-out RNN cell, which fusion turns into one ONNX RNN
node): this measures what a loop body costs when it stays a loop.

Needs `pip install openvino`. Usage:

    python scripts/bench/bench_loop_overhead.py [--batch 1] [--size 64] [--repeat 50] [--rounds 7]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import ir2onnx
from ir2onnx.verify.onnxruntime_run import make_session


def weights(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((size, size)) * 0.1).astype(np.float32)
    u = (rng.standard_normal((size, size)) * 0.1).astype(np.float32)
    b = (rng.standard_normal(size) * 0.1).astype(np.float32)
    return w, u, b


def openvino_model(kind: str, body: str, batch: int, steps: int, size: int):  # type: ignore[no-untyped-def]
    import openvino as ov
    import openvino.opset13 as ops

    w, u, b = weights(size)
    X = ops.parameter([batch, steps, size], np.float32, name="X")
    H0 = ops.parameter([batch, size], np.float32, name="H0")
    bx = ops.parameter([batch, 1, size], np.float32)
    bh = ops.parameter([batch, size], np.float32)
    if body == "projection":
        pre = ops.add(ops.add(ops.matmul(ops.squeeze(bx, [1]), ops.constant(w), False, True),
                              ops.matmul(bh, ops.constant(u), False, False)), ops.constant(b))
    else:
        pre = ops.add(ops.multiply(ops.squeeze(bx, [1]), bh), ops.constant(b))
    h = ops.tanh(pre)
    r_h, r_y = ops.result(h), ops.result(ops.unsqueeze(h, 1))
    if kind == "scan":
        ti = ops.tensor_iterator()
        ti.set_body(ov.Model([r_h, r_y], [bx, bh]))
        ti.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 1)
        ti.set_merged_input(bh, H0.output(0), r_h.output(0))
        outs = [ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1), ti.get_iter_value(r_h.output(0), -1)]
    else:
        r_c = ops.result(ops.constant(np.array(True)))
        loop = ops.loop(ops.constant(np.array(steps, np.int64)), ops.constant(np.array(True)))
        loop.set_function(ov.Model([r_h, r_y, r_c], [bx, bh]))
        loop.set_special_body_ports([-1, 2])
        loop.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 1)
        loop.set_merged_input(bh, H0.output(0), r_h.output(0))
        outs = [loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1), loop.get_iter_value(r_h.output(0), -1)]
    return ov.Model(outs, [X, H0], kind)


def hand_written(kind: str, body_kind: str, batch: int, steps: int, size: int) -> onnx.ModelProto:
    """The same computation as one would write it in ONNX directly."""
    w, u, b = weights(size)
    inits = [numpy_helper.from_array(np.ascontiguousarray(w.T), "Wt"), numpy_helper.from_array(u, "U"),
             numpy_helper.from_array(b, "B")]
    f = TensorProto.FLOAT
    if body_kind == "projection":
        step = [helper.make_node("MatMul", ["x", "Wt"], ["xw"]), helper.make_node("MatMul", ["h", "U"], ["hu"]),
                helper.make_node("Add", ["xw", "hu"], ["s"])]
    else:
        step = [helper.make_node("Mul", ["x", "h"], ["s"])]
    step += [helper.make_node("Add", ["s", "B"], ["p"]), helper.make_node("Tanh", ["p"], ["h2"]),
             helper.make_node("Identity", ["h2"], ["y"])]
    h_in = helper.make_tensor_value_info("h", f, [batch, size])
    outs = [helper.make_tensor_value_info("h2", f, [batch, size]), helper.make_tensor_value_info("y", f, [batch, size])]
    if kind == "scan":
        body = helper.make_graph(step, "body", [h_in, helper.make_tensor_value_info("x", f, [batch, size])], outs)
        loop = helper.make_node("Scan", ["H0", "X"], ["H", "Y"], body=body, num_scan_inputs=1,
                                scan_input_axes=[1], scan_output_axes=[1])
        post = []
    else:
        gather = helper.make_node("Gather", ["X", "i"], ["x"], axis=1)
        body = helper.make_graph([gather, *step, helper.make_node("Identity", ["c"], ["c2"])], "body",
                                 [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                                  helper.make_tensor_value_info("c", TensorProto.BOOL, []), h_in],
                                 [helper.make_tensor_value_info("c2", TensorProto.BOOL, []), *outs])
        inits += [numpy_helper.from_array(np.array(steps, np.int64), "M"), numpy_helper.from_array(np.array(True), "C")]
        loop = helper.make_node("Loop", ["M", "C", "H0"], ["H", "Ys"], body=body)
        post = [helper.make_node("Transpose", ["Ys"], ["Y"], perm=[1, 0, 2])]
    graph = helper.make_graph([loop, *post], kind, [helper.make_tensor_value_info("X", f, [batch, steps, size]),
                                                    helper.make_tensor_value_info("H0", f, [batch, size])],
                              [helper.make_tensor_value_info("Y", f, None),
                               helper.make_tensor_value_info("H", f, None)],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def best_s(session, feed: dict[str, np.ndarray], repeat: int) -> float:  # type: ignore[no-untyped-def]
    time.sleep(0.1)  # the previous block's session stops spinning its worker threads
    session.run(None, feed)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        session.run(None, feed)
        times.append(time.perf_counter() - t0)
    return min(times)  # the least disturbed run: the machine may be shared


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--size", type=int, default=64, help="input and hidden size")
    ap.add_argument("--steps", type=int, nargs=2, default=(50, 250), help="two sequence lengths for the slope")
    ap.add_argument("--repeat", type=int, default=50, help="runs per block (the fastest counts)")
    ap.add_argument("--rounds", type=int, default=7, help="blocks per session, taken in turn")
    args = ap.parse_args()
    import openvino as ov

    print(f"batch {args.batch}, size {args.size}, steps {args.steps[0]} and {args.steps[1]}; per-iteration cost = "
          f"slope between the two lengths' fastest runs within a round, and its ratio to the hand-written model's in "
          f"that round, each the median of {args.rounds} rounds (a round times every model in turn, so a shared "
          "machine's phases cancel out of the ratio)")
    variants = ("hand-written", "converted", "converted --no-optimize")
    with tempfile.TemporaryDirectory() as tmp:
        for (kind, label), body in itertools.product((("scan", "TensorIterator -> Scan"), ("loop", "Loop-5 -> Loop")),
                                                     ("projection", "elementwise")):
            runs = {}
            for variant, steps in itertools.product(variants, args.steps):
                rng = np.random.default_rng(1)
                feed = {"X": rng.standard_normal((args.batch, steps, args.size)).astype(np.float32),
                        "H0": np.zeros((args.batch, args.size), np.float32)}
                if variant == "hand-written":
                    proto = hand_written(kind, body, args.batch, steps, args.size)
                else:
                    xml = Path(tmp) / f"{kind}_{body}_{steps}.xml"
                    if not xml.exists():
                        ov.save_model(openvino_model(kind, body, args.batch, steps, args.size), str(xml),
                                      compress_to_fp16=False)
                    proto = ir2onnx.convert(xml, optimize=variant == "converted", fuse=False)
                session = make_session(proto, "cpu")
                if variant != "hand-written":  # same numbers as the hand-written model
                    reference = hand_written(kind, body, args.batch, steps, args.size)
                    ref = make_session(reference, "cpu").run(None, feed)
                    got = dict(zip([o.name for o in session.get_outputs()], session.run(None, feed)))
                    np.testing.assert_allclose(next(iter(got.values())), ref[0], rtol=1e-4, atol=1e-5)
                for _ in range(3):
                    session.run(None, feed)
                runs[variant, steps] = (session, feed)
            lo, hi = args.steps
            slopes: dict[str, list[float]] = {v: [] for v in variants}
            ratios: dict[str, list[float]] = {v: [] for v in variants}
            for _ in range(args.rounds):
                best = {key: best_s(session, feed, args.repeat) for key, (session, feed) in runs.items()}
                per_iter = {v: (best[v, hi] - best[v, lo]) / (hi - lo) for v in variants}
                for v in variants:
                    slopes[v].append(per_iter[v])
                    ratios[v].append(per_iter[v] / per_iter["hand-written"])
            for variant in variants:
                print(f"{label:24s} {body:12s} {variant:26s} {statistics.median(slopes[variant]) * 1e6:8.2f} "
                      f"us/iteration   ratio {statistics.median(ratios[variant]):5.2f}")


if __name__ == "__main__":
    main()

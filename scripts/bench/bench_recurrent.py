"""Time recurrent networks in OpenVINO (CPU, f32) and their ONNX conversions in onnxruntime, with equal thread counts.

For each network: onnxruntime on the default conversion (recurrent loops fused into ONNX LSTM/GRU/RNN), onnxruntime
on the `fuse=False` conversion (the literal Scan/Loop), and OpenVINO on the IR. Outputs are compared before timing;
each runtime is warmed up and timed in its own block; medians in ms and the ratios onnxruntime / OpenVINO (below 1:
the ONNX model is faster) are printed.

Networks: the specification's TensorIterator over LSTMCell (input 512, hidden 256) at several lengths and batches,
the same with per-step work around the cell (a projection of the slice before it, tanh(h W_o + b_o) as the output),
the same over GRUCell and RNNCell, the same after OpenVINO's LowLatency2 as a streaming model runs it (states in
variables, chunks of 4 or 16 frames per call; onnxruntime fed the states the previous call stored), Keras LSTM / GRU / bidirectional LSTM layers (input 128, hidden 256, T=100) in the
form OpenVINO's TensorFlow frontend gives them (a Loop over MatMul + gate Split + Sigmoid/Tanh with counters, a
Gather per step and a TensorList buffer; rebuilt here with OpenVINO's Python API, the structure checked against
tests/fixtures/rnn_keras_*), PyTorch nn.LSTM / nn.GRU / nn.RNN (input 512, hidden 256) as OpenVINO's PyTorch frontend
gives them (a sequence op whose lengths are the input's time axis read at run time; checked against
tests/fixtures/torch_lstm), the same rewritten by OpenVINO's ConvertSequenceToTensorIterator (a TensorIterator over
the cell masked by a step counter against the lengths; also with the lengths as an input), and a Loop with a generic
(non-cell) body.

`--ir model.xml` times one IR of your own instead (random inputs of its static shapes, or `--shape` per input).

`--device cuda` converts for CUDA and runs onnxruntime on its CUDA execution provider (OpenVINO stays on the CPU).

The networks are built in recurrent_models.py (beside this script). Needs openvino. Usage:

    python scripts/bench/bench_recurrent.py [--threads 2] [--repeat 20] [--only REGEX] [--device cuda]
                                            [--quick | --sweep | --ir model.xml [--shape 4,20,8]...]
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import openvino as ov
from recurrent_models import (
    check_keras_form,
    check_torch_form,
    generic_loop,
    keras2_layer,
    keras_layer,
    products_model,
    streaming,
    ti_cell,
    ti_stacked,
    torch_layer,
)

import ir2onnx
from ir2onnx.errors import ConversionError
from ir2onnx.markers import STATES
from ir2onnx.verify.onnx_edit import all_nodes

# ---- timing


def median_ms(fn: Callable[[], object], repeat: int, budget_s: float, *, warmup: int = 2, pause: float = 0.3,
              least: int = 3) -> float:
    """Median wall time of up to `repeat` runs (at least `least`, then while within `budget_s`), after a pause (the
    other runtime's worker threads stop spinning: they would take cores from this one) and `warmup` runs."""
    time.sleep(pause)
    for _ in range(warmup):
        fn()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < repeat and (len(times) < least or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def timed_rounds(makers: dict[str, Callable[[], Callable[[], object]]],
                 args: argparse.Namespace) -> tuple[dict[str, float], dict[str, float]]:
    """Each runtime timed in its own block, the blocks repeated `rounds` times in turn (a shared machine's load then
    weighs on all of them alike). A block makes its runner (an onnxruntime session, an OpenVINO infer request) and
    drops it after: an idle session's thread pool would otherwise sit beside the next block's threads. Returns the
    median of each runtime's block medians and the median per-round ratio of each to "openvino"."""
    blocks: dict[str, list[float]] = {k: [] for k in makers}
    for _ in range(args.rounds):
        for k, make in makers.items():
            run = make()
            blocks[k].append(median_ms(run, args.repeat, args.budget))
            del run
    ratios = {k: statistics.median(a / b for a, b in zip(v, blocks["openvino"])) for k, v in blocks.items()}
    if "fused" in blocks and "loop" in blocks:
        ratios["fused/loop"] = statistics.median(a / b for a, b in zip(blocks["fused"], blocks["loop"]))
    return {k: statistics.median(v) for k, v in blocks.items()}, ratios


def ort_session(proto: Any, threads: int, device: str = "cpu") -> Any:
    """The check's session (on CUDA: full f32 products, as OpenVINO computes with its f32 precision hint)."""
    from ir2onnx.verify.worker import ort_session as make

    try:
        return make(proto.SerializeToString(), device, threads=threads)
    except RuntimeError as e:
        raise SystemExit(f"--device {device}: {e}") from None


def bench(name: str, model: ov.Model | Path, feed: list[np.ndarray], args: argparse.Namespace, d: Path,
          layer: tuple[str, int, int, int] | None = None) -> None:
    if isinstance(model, Path):  # an IR as it is (an IR v10 stays one)
        xml = model
    else:
        xml = d / "model.xml"
        ov.save_model(model, str(xml), compress_to_fp16=False)
    config = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": args.threads}
    compiled = ov.Core().compile_model(str(xml), "CPU", config)
    ref = [np.array(v) for v in compiled.create_infer_request().infer(feed).values()]
    runs = {}
    try:
        for label, fuse in (("fused", True), ("loop", False)):
            proto = ir2onnx.convert(xml, fuse=fuse, f16_as_f32=args.f16_as_f32, device=args.device)
            session = ort_session(proto, args.threads, args.device)
            names = [i.name for i in session.get_inputs()]
            got = session.run(None, dict(zip(names, feed)))
            err = max(float(np.max(np.abs(g - r))) for g, r in zip(got, ref))
            if err > 1e-3:
                raise SystemExit(f"{name} ({label}): max abs difference {err:.3g} from OpenVINO")
            kinds = collections.Counter(n.op_type for n in all_nodes(proto.graph)  # If branches: both forms
                                        if n.op_type in ("LSTM", "GRU", "RNN", "Scan", "Loop"))
            form = "+".join(f"{op}x{c}" if c > 1 else op for op, c in sorted(kinds.items()))
            runs[label] = (proto, names, err, form)
            del session
    except ConversionError as e:
        print(f"{name:<58} skipped: {str(e).splitlines()[0]} {str(e).splitlines()[1].strip()[:60]}", flush=True)
        return
    def openvino() -> Callable[[], object]:
        request = compiled.create_infer_request()
        return lambda: request.infer(feed)

    def onnxruntime(proto: Any, names: list[str]) -> Callable[[], object]:
        session = ort_session(proto, args.threads, args.device)
        pairs = json.loads({p.key: p.value for p in proto.metadata_props}.get(STATES, "[]"))
        if not pairs:
            return lambda: session.run(None, dict(zip(names, feed)))
        # a stateful model: each call starts from the values the previous one stored, as OpenVINO's request does
        outputs = [o.name for o in session.get_outputs()]
        states: dict[str, np.ndarray] = {}

        def call() -> None:
            got = dict(zip(outputs, session.run(None, {**dict(zip(names, feed)), **states})))
            states.update({p["input"]: got[p["output"]] for p in pairs if p["input"] and p["output"]})
        return call

    makers: dict[str, Callable[[], Callable[[], object]]] = {"openvino": openvino}
    for k, (proto, names, _, _) in runs.items():
        makers[k] = lambda p=proto, n=names: onnxruntime(p, n)
    if layer is not None:  # the layer's matrix products alone (products_model), fed the layer's input
        products = products_model(layer[0], *feed[0].shape[:2], *layer[1:])

        def floor_runner() -> Callable[[], object]:
            session = ort_session(products, args.threads, args.device)
            return lambda: session.run(None, {"x": feed[0]})
        makers["floor"] = floor_runner
    t, ratio = timed_rounds(makers, args)
    floor = f" {t['floor']:>9.2f} {ratio['floor']:>9.2f}" if "floor" in t else ""
    print(f"{name:<58} {t['openvino']:>9.2f} {t['fused']:>9.2f} {t['loop']:>9.2f} {ratio['fused']:>9.2f} "
          f"{ratio['loop']:>9.2f} {ratio['fused/loop']:>10.2f} {runs['fused'][3]:>8} {runs['fused'][2]:>9.1e}{floor}",
          flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2, help="intra-op threads of both runtimes")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs per measurement (at most)")
    ap.add_argument("--budget", type=float, default=5.0, help="seconds per block after 3 runs")
    ap.add_argument("--rounds", type=int, default=3, help="blocks per runtime, taken in turn")
    ap.add_argument("--quick", action="store_true", help="only T=100 of the specification network")
    ap.add_argument("--only", default="", help="only the networks whose name matches this regular expression")
    ap.add_argument("--ir", type=Path, help="time this IR (model.xml) instead, fed random inputs")
    ap.add_argument("--shape", action="append", default=[],
                    help="with --ir: an input's shape, e.g. 4,20,32,32,8 (once per input, in order; default: the "
                         "IR's own static shapes)")
    ap.add_argument("--f16-as-f32", action="store_true",
                    help="convert with f16_as_f32 (an f16 IR computed in f32, as OpenVINO's CPU plugin does)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="onnxruntime's execution provider (OpenVINO always runs on the CPU: it has no NVIDIA "
                         "plugin); with cuda, times include copying the inputs and outputs between host and GPU")
    ap.add_argument("--sweep", action="store_true",
                    help="other sizes instead: Keras layers, TensorIterator LSTMs and PyTorch layers at other "
                         "input/hidden sizes and lengths")
    ap.add_argument("--floor", action="store_true",
                    help="also time each recurrent layer's matrix products alone in onnxruntime (the input "
                         "projection and one Gemm per step and direction in a Scan, no gate arithmetic): a floor for "
                         "any exact translation where the products dominate (larger batches); columns floor (ms) and "
                         "floor/ov")
    ap.add_argument("--layer", help="with --ir: the IR's layer as CELL:INPUT:HIDDEN[:DIRECTIONS], e.g. gru:128:256 "
                                    "(its input the IR's first, [batch, steps, input]), timed as --floor does")
    args = ap.parse_args()
    args.floor = args.floor or bool(args.layer)
    check_keras_form()
    check_torch_form()
    print(f"threads={args.threads}; onnxruntime on {args.device}; times: medians of {args.rounds} blocks in ms; "
          "ratios: onnxruntime / OpenVINO and fused / loop (the fuse=False conversion), medians over the rounds")
    print(f"{'network':<58} {'openvino':>9} {'fused':>9} {'loop':>9} {'fused/ov':>9} {'loop/ov':>9} "
          f"{'fused/loop':>10} {'fused as':>8} {'max err':>9}" + (f" {'floor':>9} {'floor/ov':>9}" if args.floor else ""))
    rng = np.random.default_rng(1)

    def f32(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    layer = None
    if args.layer:
        cell, *sizes = args.layer.split(":")
        layer = (cell, int(sizes[0]), int(sizes[1]), int(sizes[2]) if len(sizes) > 2 else 1)
    cases = ir_case(args.ir, args.shape, layer) if args.ir else sweep_cases(f32) if args.sweep else \
        default_cases(f32, args.quick)
    for case in cases:
        if not re.search(args.only, case.name):
            continue
        with tempfile.TemporaryDirectory() as d:
            bench(case.name, case.make(), case.feed(), args, Path(d), case.layer if args.floor else None)


def _layer(kind: str, inputs: int, hidden: int) -> tuple[str, int, int, int]:
    """The --floor layer of a Keras case `kind` (keras_layer, keras2_layer; for two layers, the first's)."""
    cell = "gru" if kind.startswith("gru") else "lstm"
    return cell, inputs, hidden, 2 if kind.startswith("bi") else 1


class Case(NamedTuple):
    name: str
    make: Callable[[], ov.Model | Path]
    feed: Callable[[], list[np.ndarray]]
    layer: tuple[str, int, int, int] | None = None  # cell, input size, hidden size, directions: for --floor


def ir_case(xml: Path, shapes: list[str], layer: tuple[str, int, int, int] | None) -> list[Case]:
    """The IR at `xml`, fed random values of the given shapes (or of its inputs' static shapes)."""
    model = ov.Core().read_model(str(xml))
    rng = np.random.default_rng(2)
    feed = []
    for i, port in enumerate(model.inputs):
        if i < len(shapes):
            shape = [int(d) for d in shapes[i].split(",") if d]
        elif port.get_partial_shape().is_static:
            shape = list(port.get_shape())
        else:
            raise SystemExit(f"input {port.get_any_name()} has shape {port.get_partial_shape()}: give --shape")
        dtype = port.get_element_type().to_dtype()
        feed.append(rng.standard_normal(shape).astype(dtype) if np.issubdtype(dtype, np.floating)
                    else rng.integers(0, 4, shape).astype(dtype))
    return [Case(str(xml), lambda: xml, lambda: feed, layer)]


def sweep_cases(f32: Callable[..., np.ndarray]) -> list[Case]:
    """Sizes other than the default table's (input/hidden, T), batch 1 and 16."""
    cases: list[Case] = []
    for i, h, t in ((64, 64, 50), (128, 128, 100), (40, 256, 200), (256, 512, 50)):
        for kind in ("lstm", "gru", "bilstm", "lstm_last", "gru_last"):
            for b in (1, 16):
                cases.append(Case(f"Keras {kind} {i}/{h} T={t} B={b}",
                                  lambda k=kind, i=i, h=h, t=t: keras_layer(k, t, i, h),
                                  lambda b=b, i=i, t=t: [f32(b, t, i)], _layer(kind, i, h)))
    for i, h, t in ((64, 64, 50), (128, 128, 100), (40, 256, 200), (256, 512, 50), (512, 256, 300)):
        for b in (1, 16):
            cases.append(Case(f"TI LSTMCell {i}/{h} T={t} B={b}", lambda i=i, h=h, t=t, b=b: ti_cell("lstm", t, b, i, h),
                              lambda b=b, i=i, h=h, t=t: [f32(b, t, i), f32(b, h), f32(b, h)], ("lstm", i, h, 1)))
    for i, h in ((64, 64), (128, 128), (40, 256), (256, 512)):
        for kind in ("lstm", "gru", "rnn"):
            for b in (1, 16):
                cases.append(Case(f"PyTorch {kind} {i}/{h} T=100 B={b}", lambda k=kind, i=i, h=h: torch_layer(k, i, h),
                                  lambda b=b, i=i: [f32(b, 100, i)], (kind, i, h, 1)))
    return cases


def default_cases(f32: Callable[..., np.ndarray], quick: bool) -> list[Case]:
    cases: list[Case] = []
    for steps in ((100,) if quick else (25, 100, 1000)):
        for batch in (1, 16):
            cases.append(Case(f"TI LSTMCell 512/256 T={steps} B={batch}",
                              lambda s=steps, b=batch: ti_cell("lstm", s, b, 512, 256),
                              lambda s=steps, b=batch: [f32(b, s, 512), f32(b, 256), f32(b, 256)],
                              ("lstm", 512, 256, 1)))
    for steps, batch in ((4, 1), (16, 1), (4, 16)):
        cases.append(Case(f"TI LSTMCell LowLatency2 512/256 T={steps} B={batch}",
                      lambda s=steps, b=batch: streaming(s, b, 512, 256),
                      lambda s=steps, b=batch: [f32(b, s, 512), f32(b, 256), f32(b, 256)]))
    for batch in (1, 16):
        cases.append(Case(f"TI LSTMCell + projections 512/256 T=100 B={batch}",
                      lambda b=batch: ti_cell("lstm", 100, b, 512, 256, extra=True),
                      lambda b=batch: [f32(b, 100, 512), f32(b, 256), f32(b, 256)]))
    for batch in (1, 16):
        cases.append(Case(f"TI 2 stacked LSTMCells 512/256 T=100 B={batch}", lambda b=batch: ti_stacked(100, b, 512, 256),
                       lambda b=batch: [f32(b, 100, 512)]))
    for kind in ("gru", "rnn"):
        for batch in (1, 16):
            cases.append(Case(f"TI {kind.upper()}Cell 512/256 T=100 B={batch}",
                              lambda k=kind, b=batch: ti_cell(k, 100, b, 512, 256),
                              lambda b=batch: [f32(b, 100, 512), f32(b, 256)], (kind, 512, 256, 1)))
    for kind, label in (("lstm", "LSTM"), ("gru", "GRU"), ("bilstm", "bidirectional LSTM"), ("lstm2", "2 LSTM layers"),
                        ("masking", "Masking + LSTM"), ("lstm_last", "LSTM (last output)"),
                        ("gru_last", "GRU (last output)"), ("bilstm_last", "bidirectional LSTM (last output)")):
        for batch in (1, 16):
            cases.append(Case(f"Keras {label} 128/256 T=100 B={batch}", lambda k=kind: keras_layer(k, 100, 128, 256),
                              lambda b=batch: [f32(b, 100, 128)], _layer(kind, 128, 256)))
    for kind, label in (("lstm", "LSTM"), ("gru", "GRU"), ("lstm_last", "LSTM (last output)"),
                        ("gru_last", "GRU (last output)"), ("bilstm_last", "bidirectional LSTM (last output)")):
        for batch in (1, 16):
            cases.append(Case(f"tf_keras {label} 128/256 T=100 B={batch}", lambda k=kind: keras2_layer(k, 100, 128, 256),
                              lambda b=batch: [f32(b, 100, 128)], _layer(kind, 128, 256)))
    for kind, label in (("lstm", "LSTM"), ("gru", "GRU"), ("rnn", "RNN")):
        for batch in (1, 16):
            cases.append(Case(f"PyTorch {label} 512/256 T=100 B={batch}", lambda k=kind: torch_layer(k, 512, 256),
                              lambda b=batch: [f32(b, 100, 512)], (kind, 512, 256, 1)))
    for kind, label, lengths in (("lstm", "LSTM", False), ("gru", "GRU", False), ("lstm", "LSTM + lengths", True)):
        for batch in (1, 16):
            cases.append(Case(f"PyTorch {label} as TI 512/256 T=100 B={batch}",
                          lambda k=kind, n=lengths: torch_layer(k, 512, 256, as_ti=True, lengths_input=n),
                          lambda b=batch, n=lengths: [f32(b, 100, 512)] + ([np.full(b, 100, np.int32)] if n else [])))
    for batch in (1, 16):
        cases.append(Case(f"Loop generic body 256 T=100 B={batch}", lambda b=batch: generic_loop(100, b, 256),
                      lambda b=batch: [f32(100, b, 256), f32(b, 256)]))
    return cases


if __name__ == "__main__":
    main()

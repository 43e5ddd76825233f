"""Prefill and per-token decoding of a medium compressed LLM: onnxruntime on ir2onnx's conversion against OpenVINO.

The model is made at run time (not committed) in the virtual environment of scripts/fixtures/make_llm_fixtures.py
(torch, transformers, optimum-intel, nncf): a Llama with random weights (default: hidden 1024, 4 layers, 16 heads, 4
KV heads, intermediate 2816, vocabulary 32000), exported stateful by optimum-intel and compressed by NNCF
(INT8_ASYM; INT4_ASYM with groups of 64, the embedding and the head INT8_ASYM as NNCF keeps them). This script then
converts each IR with ir2onnx (`--weights reference`) and, for each, times:

* onnxruntime (CPU, default graph optimisations) on the conversion, the states fed back call after call, with its
  default session options (the MatMulNBits it fuses from each compressed MatMul weight quantizes the activations to
  int8: accuracy level 4) and with the check's (`session.qdq_matmulnbits_accuracy_level` 1: f32 compute);
* OpenVINO's CPU plugin with its defaults (bf16 inference precision where the CPU has AVX-512, dynamic quantization
  of activations, a u8 KV cache), with the f32 hint (`INFERENCE_PRECISION_HINT: f32`; activations still quantized
  dynamically, the KV cache in f16), and exact as the check runs it (verify/worker.py F32_CONFIG: the IR's f32
  math, which the conversion computes: its tokens are onnxruntime's with the check's options);

all with the same number of threads (2 by default: onnxruntime's intra-op threads, OpenVINO's
INFERENCE_NUM_THREADS), in interleaved rounds (each round runs every runtime once: a prompt of `--prompt` tokens,
then `--tokens` greedy tokens one call each). Medians over the rounds: prefill time, decode time per token (and its
ratio to OpenVINO's defaults), and how many of the generated tokens are those of OpenVINO computing the IR's math
(exact). Memory: each runtime loads the model in a fresh process; its resident memory after load (as is, and once
glibc has returned what was freed while loading: malloc_trim) and after one generation, less the process's before
loading, against the IR's `.bin` size.

    python scripts/bench/bench_llm.py --venv /tmp/llmvenv [--hidden 1024] [--layers 4] [--rounds 5] [--threads 2]

`--models DIR` keeps the exported IRs there (reused when present).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


# ---- making the models (runs in the virtual environment: `bench_llm.py make OUT HIDDEN LAYERS VOCAB`)
def make(out: Path, hidden: int, layers: int, vocab: int) -> None:
    import torch
    import transformers as tf
    from optimum.intel import OVModelForCausalLM, OVWeightQuantizationConfig

    torch.manual_seed(0)
    heads = max(hidden // 64, 1)
    config = tf.LlamaConfig(hidden_size=hidden, intermediate_size=int(hidden * 2.75) // 64 * 64,
                            num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=max(heads // 4, 1),
                            vocab_size=vocab, max_position_embeddings=2048)
    with tempfile.TemporaryDirectory() as tmp:
        tf.LlamaForCausalLM(config).eval().save_pretrained(tmp)
        for name, q in (("int8", OVWeightQuantizationConfig(bits=8, sym=False)),
                        ("int4", OVWeightQuantizationConfig(bits=4, sym=False, group_size=64, ratio=1.0))):
            model = OVModelForCausalLM.from_pretrained(tmp, export=True, stateful=True, compile=False,
                                                       quantization_config=q)
            model.save_pretrained(out / name)


# ---- one runtime, loaded in this process
class Runner:
    """Greedy generation with one runtime; `generate` returns (prefill s, decode s per token, tokens)."""

    def __init__(self, kind: str, xml: Path, onnx_path: Path, threads: int) -> None:
        self.kind = kind
        if kind.startswith("onnxruntime"):
            import onnxruntime as ort

            from ir2onnx.verify.onnxruntime_run import ACCURATE_SESSION_CONFIG

            opts = ort.SessionOptions()
            opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
            opts.log_severity_level = 3
            for key, value in ACCURATE_SESSION_CONFIG.items() if kind == ACCURATE else ():
                opts.add_session_config_entry(key, value)
            self.session = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
            meta = self.session.get_modelmeta().custom_metadata_map
            self.pairs = json.loads(meta["ir2onnx.states"])
            self.names = [o.name for o in self.session.get_outputs()]
        else:
            import openvino as ov

            from ir2onnx.verify.worker import F32_CONFIG

            config: dict[str, Any] = {"INFERENCE_NUM_THREADS": threads}
            if kind == "OpenVINO f32":
                config["INFERENCE_PRECISION_HINT"] = "f32"
            elif kind == "OpenVINO exact":
                config.update(F32_CONFIG)
            core = ov.Core()
            self.compiled = core.compile_model(core.read_model(str(xml)), "CPU", config)
            self.request = self.compiled.create_infer_request()

    def _call(self, feed: dict[str, np.ndarray], states: dict[str, np.ndarray]) -> tuple[np.ndarray, dict]:
        if self.kind.startswith("onnxruntime"):
            out = dict(zip(self.names, self.session.run(None, {**feed, **states})))
            return out["logits"], {p["input"]: out[p["output"]] for p in self.pairs}
        self.request.infer(feed)
        return self.request.get_output_tensor(0).data, states

    def generate(self, prompt: np.ndarray, tokens: int) -> tuple[float, float, list[int]]:
        if not self.kind.startswith("onnxruntime"):
            self.request.reset_state()
        ids, n, states, out = prompt, prompt.shape[1], {}, []
        beam = np.zeros(prompt.shape[0], np.int32)
        times = []
        for _ in range(tokens + 1):
            feed = {"input_ids": ids, "attention_mask": np.ones((prompt.shape[0], n), np.int64),
                    "position_ids": np.arange(n - ids.shape[1], n)[None].repeat(prompt.shape[0], 0), "beam_idx": beam}
            start = time.perf_counter()
            logits, states = self._call(feed, states)
            ids = logits[:, -1].argmax(-1)[:, None].astype(np.int64)
            times.append(time.perf_counter() - start)
            out.append(int(ids[0, 0]))
            n += 1
        return times[0], statistics.median(times[1:]), out


ACCURATE = "onnxruntime accurate"  # the check's session options
RUNTIMES = ("onnxruntime", ACCURATE, "OpenVINO defaults", "OpenVINO f32", "OpenVINO exact")


def _rss() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def _trim() -> None:
    """Have glibc return the heap memory freed so far to the system (malloc_trim), where it is the C library."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def memory(kind: str, xml: Path, onnx_path: Path, threads: int, prompt_len: int, tokens: int) -> dict[str, int]:
    """(run in a fresh process) resident memory added by loading (also once glibc has returned the memory freed
    while loading: onnxruntime's graph optimisations make and free copies of the weights), and by loading and one
    generation."""
    import onnxruntime  # noqa: F401  both runtimes imported before the baseline
    import openvino  # noqa: F401

    base = _rss()
    runner = Runner(kind, xml, onnx_path, threads)
    loaded = _rss() - base
    _trim()
    trimmed = _rss() - base
    runner.generate(np.arange(prompt_len, dtype=np.int64)[None] % 1000, tokens)
    return {"load": loaded, "trimmed": trimmed, "generate": _rss() - base}


def _memory_child(kind: str, xml: Path, onnx_path: Path, args: argparse.Namespace) -> dict[str, int]:
    code = (f"import sys, json; sys.path.insert(0, {str(Path(__file__).parent)!r}); import bench_llm as b; "
            f"from pathlib import Path; print(json.dumps(b.memory({kind!r}, Path({str(xml)!r}), "
            f"Path({str(onnx_path)!r}), {args.threads}, {args.prompt}, {args.tokens})))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def bench(name: str, xml: Path, args: argparse.Namespace) -> list[str]:
    import ir2onnx

    onnx_path = xml.with_suffix(".onnx")
    start = time.perf_counter()
    ir2onnx.convert_file(str(xml), str(onnx_path), weights="reference")
    converted = time.perf_counter() - start
    bin_size = xml.with_suffix(".bin").stat().st_size
    runners = {k: Runner(k, xml, onnx_path, args.threads) for k in RUNTIMES}
    prompt = np.random.default_rng(0).integers(0, 1000, (1, args.prompt)).astype(np.int64)
    for r in runners.values():  # warm-up
        r.generate(prompt, 2)
    prefill: dict[str, list[float]] = {k: [] for k in RUNTIMES}
    decode: dict[str, list[float]] = {k: [] for k in RUNTIMES}
    tokens: dict[str, list[int]] = {}
    for _ in range(args.rounds):
        for k, r in runners.items():
            p, d, t = r.generate(prompt, args.tokens)
            prefill[k].append(p)
            decode[k].append(d)
            tokens[k] = t
    del runners
    rows = []
    base = statistics.median(decode["OpenVINO defaults"])
    for k in RUNTIMES:
        mem = _memory_child(k, xml, onnx_path, args)
        same = sum(a == b for a, b in zip(tokens[k], tokens["OpenVINO exact"]))
        rows.append(f"| {name} | {k} | {statistics.median(prefill[k]) * 1e3:.1f} | "
                    f"{statistics.median(decode[k]) * 1e3:.2f} | {statistics.median(decode[k]) / base:.2f} | "
                    f"{same}/{len(tokens[k])} | {mem['load'] / 2**20:.0f} MB ({mem['load'] / bin_size:.2f}x), "
                    f"trimmed {mem['trimmed'] / 2**20:.0f} MB ({mem['trimmed'] / bin_size:.2f}x) | "
                    f"{mem['generate'] / 2**20:.0f} MB |")
    rows.append(f"| {name} | (`.bin` {bin_size / 2**20:.1f} MB; conversion {converted:.2f} s) | | | | | | |")
    return rows


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "make":
        make(Path(sys.argv[2]), *(int(a) for a in sys.argv[3:6]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", default="/tmp/llmvenv", help="virtual environment with optimum-intel and nncf")
    parser.add_argument("--models", help="keep the exported IRs in this folder (reused when present)")
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--prompt", type=int, default=64, help="prompt tokens (prefill)")
    parser.add_argument("--tokens", type=int, default=32, help="generated tokens (decode)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    tmp = None
    if args.models:
        models = Path(args.models)
    else:
        tmp = tempfile.TemporaryDirectory()
        models = Path(tmp.name)
    if not (models / "int4" / "openvino_model.xml").exists():
        subprocess.run([str(Path(args.venv) / "bin" / "python"), __file__, "make", str(models), str(args.hidden),
                        str(args.layers), str(args.vocab)], check=True)
    import onnxruntime as ort
    import openvino as ov

    print(f"Llama hidden {args.hidden}, {args.layers} layers, vocabulary {args.vocab}; prompt {args.prompt} tokens, "
          f"{args.tokens} generated; {args.threads} threads; {args.rounds} interleaved rounds; "
          f"onnxruntime {ort.__version__}, OpenVINO {ov.__version__.split('-')[0]}; load average "
          f"{os.getloadavg()[0]:.1f}")
    print("| model | runtime | prefill ms | decode ms/token | vs OpenVINO defaults | tokens as exact | memory after load | "
          "after generating |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in ("int8", "int4"):
        for row in bench(name, models / name / "openvino_model.xml", args):
            print(row, flush=True)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()

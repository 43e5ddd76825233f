"""Decoder LLMs as optimum-intel exports them (tests/fixtures/llm_*, made by scripts/fixtures/make_llm_fixtures.py):
Llama, Qwen2 and GPT-2 with random weights, stateful (KV cache in ReadValue/Assign variables, `beam_idx`) and with
`past_key_values` inputs and `present` outputs, uncompressed and NNCF-compressed (INT8_ASYM, INT4_ASYM group 32).

* Each conversion matches expected.npz (OpenVINO's outputs, as the check computes them) on the stored prompt, and the
  stateful ones expected_states.npz (the variables after the call) through the state outputs.
* Then two decode steps, the KV cache fed back (the state outputs as the state inputs, or `present.*` as
  `past_key_values.*`), the second step reordering the batch (`beam_idx`): every output and state equals OpenVINO's
  (one stateful infer request, or the same calls), as the check runs it (verify/worker.py: f32 KV cache, the
  f32 -> bf16 -> f32 Convert pairs of the pkv IRs as the identity).
* The f32 conversions give the PyTorch f32 source model's logits at each step (torch_logits.npz). On the pkv IRs that
  is what decides the Convert pairs: the source model does not round the KV cache to bf16 there, nor does OpenVINO
  on CPUs without AVX-512; rounding it (as ir2onnx did) moved the decode logits by up to 7.5e-3 from the source's.
* `ir2onnx convert --check` passes on each (default inputs: one call of a generation, verify/inputs.py).
* The README's greedy generation loop runs as written on a stateful fixture and ends in OpenVINO's state.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnx
import pytest

from ir2onnx.markers import STATES
from ir2onnx.verify.compare import compare_output
from ir2onnx.verify.onnxruntime_run import ACCURATE_SESSION_CONFIG
from tests.fixture_paths import FIXTURES, fixture_dir, fixture_names, load_fixture
from tests.utils import convert_checked, ov

ort = pytest.importorskip("onnxruntime")

ALL = fixture_names("llm_")
F32 = [n for n in ALL if n.endswith("_f32")]
RTOL, ATOL = 1e-4, 1e-5  # as the check: f32 arithmetic in another order (logits' RMS ~0.8)
TORCH_ATOL = 2e-5  # the f32 source model: another f32 order again (measured: at most 2.3e-6)
README = Path(__file__).resolve().parents[2] / "README.md"


def _pairs(proto: onnx.ModelProto) -> list[dict]:
    meta = {p.key: p.value for p in proto.metadata_props}
    return json.loads(meta[STATES]) if STATES in meta else []


def _session(proto: onnx.ModelProto):  # noqa: ANN202
    """onnxruntime as the check runs it: the MatMulNBits fused from compressed weights computes in f32."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    for key, value in ACCURATE_SESSION_CONFIG.items():
        options.add_session_config_entry(key, value)
    return ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _compiled(xml: Path):  # noqa: ANN202
    """OpenVINO as the check runs it."""
    from ir2onnx.verify.worker import F32_CONFIG, f32_round_trips

    core = ov.Core()
    model = core.read_model(str(xml))
    f32_round_trips(model)
    return core.compile_model(model, "CPU", F32_CONFIG)


def _assert_close(name: str, got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, f"{what}, {name}: {got.shape} {got.dtype} != " \
                                                                  f"{want.shape} {want.dtype}"
    c = compare_output(name, got, want, RTOL, ATOL, scaled=True)
    assert c.passed, f"{what}, {name}: {c.message} (max abs {c.max_abs_error})"


@pytest.fixture(scope="module")
def converted() -> dict[str, onnx.ModelProto]:
    return {}


def _convert(name: str, cache: dict[str, onnx.ModelProto]) -> onnx.ModelProto:
    if name not in cache:
        cache[name] = convert_checked(fixture_dir(name) / "model.xml")
    return cache[name]


def _step_feed(prompt: dict[str, np.ndarray], steps: dict[str, np.ndarray], k: int) -> dict[str, np.ndarray]:
    """Decode step k's new inputs (the KV cache apart): one token per row, the mask and position grown by k."""
    batch, length = prompt["input_ids"].shape
    feed = {"input_ids": steps[f"input_ids_{k}"], "attention_mask": np.ones((batch, length + k), np.int64),
            "position_ids": np.full((batch, 1), length + k - 1, np.int64)}
    if "beam_idx" in prompt:
        feed["beam_idx"] = steps[f"beam_idx_{k}"]
    return feed


def _generate(name: str, proto: onnx.ModelProto) -> tuple[list[dict[str, np.ndarray]], list[dict[str, np.ndarray]]]:
    """The prompt and two decode steps in onnxruntime and in OpenVINO: each call's outputs by ONNX output name (the
    state outputs included; OpenVINO's stored values under the same names)."""
    d = fixture_dir(name)
    prompt, steps = dict(np.load(d / "inputs.npz")), dict(np.load(d / "steps.npz"))
    pairs = _pairs(proto)
    session = _session(proto)
    names = [o.name for o in session.get_outputs()]
    compiled = _compiled(d / "model.xml")
    request = compiled.create_infer_request()
    ov_names = [o.get_any_name() for o in compiled.outputs]
    assert names[:len(ov_names)] == ov_names
    got, want = [], []
    states: dict[str, np.ndarray] = {}
    feed = prompt
    for k in range(3):
        if k:
            feed = _step_feed(prompt, steps, k)
            past = {n: np.take(got[-1][n.replace("past_key_values", "present")], steps[f"beam_idx_{k}"], axis=0)
                    for n in prompt if n.startswith("past_key_values.")}
            feed.update(past)
        out = dict(zip(names, session.run(None, {**feed, **states})))
        states = {p["input"]: out[p["output"]] for p in pairs}
        request.infer({p.get_any_name(): feed[p.get_any_name()] for p in compiled.inputs})
        ref = {n: np.array(request.get_output_tensor(i).data) for i, n in enumerate(ov_names)}
        stored = {s.name: np.array(s.state.data) for s in request.query_state()}
        ref |= {p["output"]: stored[p["variable"]] for p in pairs}
        got.append(out)
        want.append(ref)
    return got, want


@pytest.mark.parametrize("name", ALL)
def test_matches_expected(name: str, converted: dict[str, onnx.ModelProto]) -> None:
    proto = _convert(name, converted)
    xml, inputs, expected = load_fixture(name)
    pairs = _pairs(proto)
    assert ("stateful" in name) == bool(pairs), "stateful IRs have variables, pkv IRs none"
    if pairs:  # the KV cache: one variable per layer's keys and values, each an optional input and a .next output
        assert len(pairs) == 2 * 2 and all(p["input"] and p["output"] for p in pairs)
    session = _session(proto)
    feed = dict(zip([i.name for i in session.get_inputs()], inputs))
    out = dict(zip([o.name for o in session.get_outputs()], session.run(None, feed)))
    names = [o.name for o in proto.graph.output]
    for n, want in zip(names, expected):
        _assert_close(n, out[n], want, "prompt")
    if pairs:
        stored = dict(np.load(fixture_dir(name) / "expected_states.npz"))
        for p in pairs:
            _assert_close(p["output"], out[p["output"]], stored[p["variable"]], "prompt")


@pytest.mark.parametrize("name", ALL)
def test_decode_steps_match_openvino(name: str, converted: dict[str, onnx.ModelProto]) -> None:
    proto = _convert(name, converted)
    got, want = _generate(name, proto)
    for k, (g, w) in enumerate(zip(got, want)):
        assert set(g) == set(w)
        for n in g:
            _assert_close(n, g[n], w[n], f"call {k}")


@pytest.mark.parametrize("name", F32)
def test_f32_matches_torch(name: str, converted: dict[str, onnx.ModelProto]) -> None:
    """The uncompressed conversions give the f32 PyTorch source model's logits, decode steps included."""
    proto = _convert(name, converted)
    got, _ = _generate(name, proto)
    torch_logits = np.load(fixture_dir(name) / "torch_logits.npz")
    for g, key in zip(got, ("prefill", "step1", "step2")):
        err = np.abs(g["logits"] - torch_logits[key]).max()
        assert err <= TORCH_ATOL, f"{key}: logits {err:.2e} from PyTorch's"


def test_bf16_round_trips_are_identity(converted: dict[str, onnx.ModelProto]) -> None:
    """The pkv IRs' f32 -> bf16 -> f32 Convert pairs (8: each layer's past and present keys and values) leave no
    bf16 in the conversion; the stateful IRs have none."""
    for name in ALL:
        xml = (fixture_dir(name) / "model.xml").read_text()
        pairs = len(re.findall(r'destination_type="bf16"', xml))
        assert pairs == (8 if "_pkv_" in name else 0), name
        proto = _convert(name, converted)
        casts = [n for n in proto.graph.node if n.op_type == "Cast" and
                 any(a.name == "to" and a.i == onnx.TensorProto.BFLOAT16 for a in n.attribute)]
        assert not casts, f"{name}: {len(casts)} Casts to bf16 left"


@pytest.mark.parametrize("name", ["llm_gpt2_pkv_int4", "llm_llama_stateful_f32"])
def test_cli_check_passes(name: str, tmp_path: Path) -> None:
    """`ir2onnx convert --check` on default inputs (all 18 pass; two here, one of each form, for time)."""
    from ir2onnx.api import check

    proto = _convert(name, {})
    report = check(str(fixture_dir(name) / "model.xml"), proto)
    assert report.passed, report.to_dict()
    given = {i.name: i for i in report.inputs}
    assert given["attention_mask"].shape[1] == given["input_ids"].shape[1] + \
        (given["past_key_values.0.key"].shape[2] if "past_key_values.0.key" in given else 0)


def _readme_loop() -> str:
    text = README.read_text()
    section = text.split("### Generating text with onnxruntime", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_generation_loop(tmp_path: Path) -> None:
    """The README's loop, as written, on a stateful fixture: its last token and its KV cache are OpenVINO's after
    the same greedy generation."""
    name = "llm_llama_stateful_f32"
    xml = fixture_dir(name) / "model.xml"
    onnx.save(convert_checked(xml), tmp_path / "llm.onnx")
    code = _readme_loop().replace('"llm.onnx"', repr(str(tmp_path / "llm.onnx")))
    scope = {"json": json, "np": np, "ort": ort}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102
    request = _compiled(xml).create_infer_request()
    ids = np.array(json.loads(re.search(r"np\.array\((\[\[[\d, ]+\]\])\)", code).group(1)))  # the prompt
    n = ids.shape[1]
    for _ in range(8):
        request.infer({"input_ids": ids, "attention_mask": np.ones((1, n), np.int64),
                       "position_ids": np.arange(n - ids.shape[1], n)[None], "beam_idx": np.zeros(1, np.int32)})
        ids, n = request.get_output_tensor(0).data[:, -1].argmax(-1)[:, None], n + 1
    assert int(scope["ids"][0, 0]) == int(ids[0, 0]) and scope["n"] == n
    stored = {s.name: np.array(s.state.data) for s in request.query_state()}
    pairs = {p["input"]: p["variable"] for p in _pairs(onnx.load(tmp_path / "llm.onnx"))}
    assert len(scope["states"]) == len(pairs) == 4
    for name_, value in scope["states"].items():
        _assert_close(name_, value, stored[pairs[name_]], "README loop")


def test_fixture_sizes() -> None:
    sizes = {n: sum(f.stat().st_size for f in fixture_dir(n).iterdir()) for n in ALL}
    assert len(sizes) == 18 and max(sizes.values()) < 1 << 20 and sum(sizes.values()) < 8 << 20, sizes
    assert FIXTURES.exists()

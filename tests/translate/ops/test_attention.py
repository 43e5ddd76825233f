"""ScaledDotProductAttention (attention.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset13 as ops
import pytest

from tests.translate.ops.cases import Case, const, params, run_case

F, F16, B = np.float32, np.float16, np.bool_
RNG = np.random.default_rng(7)


def sdpa(*args, causal=False):  # type: ignore[no-untyped-def]
    return ops.scaled_dot_product_attention(*args, causal=causal)


def _bool_mask(shape: tuple[int, ...], empty_row: bool = False) -> np.ndarray:
    m = RNG.random(shape) > 0.3
    m[..., 0] = True
    if empty_row:
        m[(0,) * (len(shape) - 1)] = False
    return m


Q, K, V = ((2, 3, 4, 8), F), ((2, 3, 6, 8), F), ((2, 3, 6, 5), F)
CASES = [
    Case("plain", lambda q, k, v: sdpa(q, k, v), [Q, K, V]),
    Case("rank3", lambda q, k, v: sdpa(q, k, v), [((2, 4, 8), F), ((2, 6, 8), F), ((2, 6, 8), F)]),
    Case("rank5", lambda q, k, v: sdpa(q, k, v), [((1, 2, 2, 3, 4), F), ((1, 2, 2, 5, 4), F), ((1, 2, 2, 5, 3), F)]),
    Case("batch-broadcast", lambda q, k, v: sdpa(q, k, v), [((1, 3, 4, 8), F), ((2, 1, 6, 8), F), ((2, 3, 6, 5), F)]),
    Case("causal-l-less-s", lambda q, k, v: sdpa(q, k, v, causal=True), [Q, K, V]),
    Case("causal-l-greater-s", lambda q, k, v: sdpa(q, k, v, causal=True), [((2, 3, 6, 8), F), ((2, 3, 4, 8), F),
                                                                             ((2, 3, 4, 5), F)]),
    Case("causal-ignores-mask", lambda q, k, v, m: sdpa(q, k, v, m, causal=True), [Q, K, V, ((2, 1, 4, 6), B)],
         values=[*[RNG.standard_normal(s).astype(F) for s, _ in (Q, K, V)], _bool_mask((2, 1, 4, 6), True)]),
    Case("bool-mask", lambda q, k, v, m: sdpa(q, k, v, m), [Q, K, V, ((2, 1, 4, 6), B)],
         values=[*[RNG.standard_normal(s).astype(F) for s, _ in (Q, K, V)], _bool_mask((2, 1, 4, 6))]),
    Case("bool-mask-row-broadcast", lambda q, k, v, m: sdpa(q, k, v, m), [Q, K, V, ((2, 3, 1, 6), B)],
         values=[*[RNG.standard_normal(s).astype(F) for s, _ in (Q, K, V)], _bool_mask((2, 3, 1, 6))]),
    Case("bool-mask-empty-row-is-nan", lambda q, k, v, m: sdpa(q, k, v, m), [Q, K, V, ((2, 1, 4, 6), B)],
         values=[*[RNG.standard_normal(s).astype(F) for s, _ in (Q, K, V)], _bool_mask((2, 1, 4, 6), True)]),
    Case("float-mask", lambda q, k, v, m: sdpa(q, k, v, m), [Q, K, V, ((1, 1, 4, 6), F)]),
    Case("float-mask-2d", lambda q, k, v, m: sdpa(q, k, v, m), [Q, K, V, ((4, 6), F)]),
    Case("float-mask-zero-scalar", lambda q, k, v: sdpa(q, k, v, const(0.0)), [Q, K, V]),
    Case("float-mask-inf", lambda q, k, v: sdpa(q, k, v, const(np.where(np.arange(24).reshape(4, 6) % 5 == 3, -np.inf, 0.0))), [Q, K, V]),
    Case("scale-const", lambda q, k, v, m: sdpa(q, k, v, m, const(0.3)), [Q, K, V, ((4, 6), F)]),
    Case("scale-runtime", lambda q, k, v, m, s: sdpa(q, k, v, m, s), [Q, K, V, ((4, 6), F), ((), F)]),
    Case("scale-with-bool-mask", lambda q, k, v, m: sdpa(q, k, v, m, const(0.5)), [Q, K, V, ((2, 1, 4, 6), B)],
         values=[*[RNG.standard_normal(s).astype(F) for s, _ in (Q, K, V)], _bool_mask((2, 1, 4, 6))]),
    Case("f16", lambda q, k, v: sdpa(q, k, v), [((2, 4, 8), F16), ((2, 6, 8), F16), ((2, 6, 8), F16)],
         rtol=2e-3, atol=2e-3),
    Case("f16-causal-mask", lambda q, k, v, m: sdpa(q, k, v, m, causal=True),
         [((2, 4, 8), F16), ((2, 6, 8), F16), ((2, 6, 8), F16), ((4, 6), F16)], rtol=2e-3, atol=2e-3),
]


@pytest.mark.parametrize("case", params(CASES))
def test_attention(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)

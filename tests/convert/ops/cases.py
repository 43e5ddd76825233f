"""Table helpers: a case is a name, a function of the model's Parameters returning output nodes, and input specs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from tests.utils import check_model, rng_inputs


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[..., Any]
    inputs: Sequence[tuple[tuple[int, ...], Any]]
    values: Sequence[np.ndarray] | None = None  # explicit input values (else random)
    opset: int | None = None
    rtol: float = 1e-5
    atol: float = 1e-5


def params(cases: Sequence[Case]) -> list[Any]:
    return [pytest.param(c, id=c.name) for c in cases]


def run_case(case: Case, tmp_path: Path) -> None:
    ps = [ops.parameter(list(shape), dtype, name=f"in{i}") for i, (shape, dtype) in enumerate(case.inputs)]
    outs = case.build(*ps)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    results = []
    for o in outs:
        results.extend(o.outputs() if isinstance(o, ov.Node) else [o])
    model = ov.Model(results, ps)
    values = list(case.values) if case.values is not None else rng_inputs(case.inputs)
    kwargs: dict[str, Any] = {"rtol": case.rtol, "atol": case.atol}
    if case.opset is not None:
        kwargs["opset"] = case.opset
    check_model(model, values, tmp_path, **kwargs)


def const(values: Any, dtype: Any = np.float32) -> Any:
    return ops.constant(np.asarray(values, dtype=dtype))

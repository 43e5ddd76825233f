"""Table helpers: a case is a name, a function of the model's Parameters returning output nodes, and input specs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.utils import check_model, convert_checked, rng_inputs, save_ir

# whether OpenVINO's CPU plugin runs bf16 layers in bf16 kernels here (CPUs with bf16 instructions); elsewhere it
# computes them in f32 from unrounded values, and its bf16 results are only as close as bf16's precision
OPENVINO_BF16 = "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[..., Any]
    inputs: Sequence[tuple[tuple[int, ...], Any]]
    values: Sequence[np.ndarray] | None = None  # explicit input values (else random)
    opset: int | None = None
    rtol: float = 1e-5
    atol: float = 1e-5
    # where OpenVINO is wrong: the right outputs computed with numpy from the input values (then the converted
    # model is compared with these instead of OpenVINO's)
    expected: Callable[..., Sequence[np.ndarray]] | None = None
    convert: Mapping[str, Any] = field(default_factory=dict)  # conversion options (ir2onnx.convert's keywords)


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
    if case.expected is not None:
        check_against(model, values, case.expected(*values), tmp_path, case.rtol, case.atol, **case.convert)
        return
    kwargs: dict[str, Any] = {"rtol": case.rtol, "atol": case.atol, **case.convert}
    if case.opset is not None:
        kwargs["opset"] = case.opset
    check_model(model, values, tmp_path, **kwargs)


def check_against(model: Any, values: Sequence[np.ndarray], expected: Sequence[np.ndarray], tmp_path: Path,
                  rtol: float, atol: float, **convert: Any) -> None:
    """Convert and compare onnxruntime's outputs with `expected` (dtype, shape, values; integers exactly)."""
    proto = convert_checked(save_ir(model, tmp_path), **convert)
    got = run_onnxruntime(proto, {i.name: v for i, v in zip(proto.graph.input, values)})
    assert len(got) == len(expected)
    for g, want in zip(got, expected):
        want = np.asarray(want)
        assert g.dtype == want.dtype and g.shape == want.shape, f"{g.dtype}{g.shape} != {want.dtype}{want.shape}"
        if want.dtype.kind in "biu":
            np.testing.assert_array_equal(g, want)
        else:
            np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, equal_nan=True)


def const(values: Any, dtype: Any = np.float32) -> Any:
    return ops.constant(np.asarray(values, dtype=dtype))

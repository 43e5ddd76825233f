"""Inputs for a check: from an .npz file, or random ones valid for each graph input's type and shape (seeded)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
from onnx import helper

from ir2onnx.errors import CheckError

DYNAMIC_DIM = 2  # size given to dynamic dimensions


def input_specs(model: onnx.ModelProto) -> list[tuple[str, np.dtype, list[int | None]]]:
    specs = []
    for vi in model.graph.input:
        tt = vi.type.tensor_type
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        specs.append((vi.name, dtype, dims))
    return specs


def random_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Floats ~ N(0, 1); integers in [0, 3] (small: an integer input may be a trip count); booleans at random."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name, dtype, dims in input_specs(model):
        shape = [DYNAMIC_DIM if d is None else d for d in dims]
        if dtype.kind == "f":
            out[name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind == "b":
            out[name] = rng.random(shape) > 0.5
        else:
            out[name] = rng.integers(0, 4, size=shape).astype(dtype)
    return out


def load_inputs(path: str, model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Inputs from an .npz keyed by input name; missing, unknown or misshapen entries are named in the error."""
    try:
        with np.load(path, allow_pickle=False) as data:
            given = {k: np.asarray(data[k]) for k in data.files}
    except (OSError, ValueError) as e:
        raise CheckError(f"cannot read inputs file {path}: {e}") from None
    return validate_inputs(given, model)


def validate_inputs(given: Mapping[str, np.ndarray], model: onnx.ModelProto) -> dict[str, np.ndarray]:
    specs = input_specs(model)
    names = [s[0] for s in specs]
    problems = []
    missing = [n for n in names if n not in given]
    unknown = [k for k in given if k not in names]
    if missing:
        problems.append(f"missing input(s): {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown input(s): {', '.join(unknown)} (the model's inputs are {', '.join(names)})")
    out: dict[str, np.ndarray] = {}
    for name, dtype, dims in specs:
        if name not in given:
            continue
        arr = np.asarray(given[name])
        if arr.ndim != len(dims) or any(d is not None and d != s for d, s in zip(dims, arr.shape)):
            problems.append(f"input {name}: shape {list(arr.shape)} does not fit {['?' if d is None else d for d in dims]}")
        out[name] = arr.astype(dtype, copy=False)
    if problems:
        raise CheckError("; ".join(problems))
    return out

"""Sizes for the dynamic dimensions of the model inputs that the model accepts.

Each dynamic dimension gets its own size (3, 4, 5, 6, ...: distinct sizes expose mixed-up axes, and a time axis
of 3 or more makes loops iterate several times). A size is kept only when shape inference accepts it together with
the sizes already chosen (OpenVINO's `reshape` of the IR when openvino is installed, else ONNX shape inference in
strict mode); otherwise sizes already chosen, then the static sizes found in the model (a weight fixes a feature
dimension), then 2 and 1 are tried in turn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import onnx

Dims = list[int | None]
Accepts = Callable[[dict[str, Dims]], bool]
DEFAULT_SIZES = (3, 4, 5, 6)
_MAX_CANDIDATES = 48


def choose_dims(specs: Sequence[tuple[str, Dims]], accepts: Accepts, model_sizes: Sequence[int]) -> tuple[
        dict[str, list[int]], list[str]]:
    """Input name -> static shape, and notes about dimensions no accepted size was found for."""
    current: dict[str, Dims] = {name: list(dims) for name, dims in specs}
    notes: list[str] = []
    slots = [(name, axis) for name, dims in specs for axis, d in enumerate(dims) if d is None]
    chosen: list[int] = []
    for j, (name, axis) in enumerate(slots):
        default = DEFAULT_SIZES[j % len(DEFAULT_SIZES)]
        candidates = _unique([default, *chosen, *sorted(s for s in model_sizes if s > 1), 2, 1])[:_MAX_CANDIDATES]
        for size in candidates:
            trial = {k: list(v) for k, v in current.items()}
            trial[name][axis] = size
            if accepts(trial):
                break
        else:
            size = default
            notes.append(f"no size of dimension {axis} of input {name} passed shape inference; used {size}")
        current[name][axis] = size
        chosen.append(size)
    if slots and not accepts(current):
        notes.append("shape inference rejects the chosen input shapes "
                     f"({', '.join(f'{n}{v}' for n, v in current.items())}); give inputs with --inputs")
    return {k: [int(d) for d in v] for k, v in current.items()}, notes  # type: ignore[arg-type]


def _unique(values: Sequence[int]) -> list[int]:
    out: list[int] = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def openvino_accepts(xml_path: str, bin_path: str | None) -> Accepts | None:
    """`reshape` of the IR in OpenVINO (None without openvino or when the IR cannot be read)."""
    try:
        import openvino as ov
    except ImportError:
        return None
    try:
        core = ov.Core()
        base = core.read_model(xml_path, bin_path) if bin_path else core.read_model(xml_path)
    except Exception:  # noqa: BLE001  the check's own run reports an unreadable IR
        return None
    ports = {p.get_any_name(): i for i, p in enumerate(base.inputs)}

    def accepts(shapes: dict[str, Dims]) -> bool:
        model = base.clone()
        try:
            model.reshape({model.inputs[ports[n]]: ov.PartialShape([-1 if d is None else d for d in dims])
                           for n, dims in shapes.items() if n in ports})
        except Exception:  # noqa: BLE001  any validation error means: not accepted
            return False
        return True

    return accepts


def onnx_accepts(model: onnx.ModelProto) -> Accepts:
    """ONNX shape inference in strict mode on a copy of the model with the given input shapes."""

    def accepts(shapes: dict[str, Dims]) -> bool:
        m = onnx.ModelProto()
        m.CopyFrom(model)
        for vi in m.graph.input:
            dims = shapes.get(vi.name)
            if dims is None:
                continue
            for d, size in zip(vi.type.tensor_type.shape.dim, dims):
                if size is not None:
                    d.Clear()
                    d.dim_value = size
        try:
            onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
        except Exception:  # noqa: BLE001
            return False
        return True

    return accepts

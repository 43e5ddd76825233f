"""Input shapes given for a conversion: `--input NAME[1,3,224,224]`, OpenVINO's `ovc --input` spelling.

A shape fixes the dimensions of one model input before translation (ir/reshape.py applies it to the IR's Parameter),
so that the ONNX model is made for those shapes: static graph inputs and outputs, shape arithmetic folded into
constants (passes/static_shapes.py). TensorRT, mobile runtimes and compilers want exactly that.

Spellings (one `--input` may also hold several, separated by commas, as ovc takes them):

* `NAME[1,3,224,224]`: the input NAME (any of the names OpenVINO accepts for it) gets these dimensions;
* `[1,3,224,224]`: without a name, for a model of one input (or, given for every input, in the model's input order);
* `?` (or `-1`) leaves a dimension as the IR has it (free where the IR's is free); `[]` is a scalar.

ovc's ranges (`1..4`) bound a dimension that stays free, which ONNX cannot express: they are refused, naming the
input. This module only parses and checks the values (it loads nothing: the command line parses before importing the
converters).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping, Sequence

from ir2onnx.errors import ConversionError

Dims = tuple[int | None, ...]
# name -> dims, or dims by position (the model's input order) where no names were given
InputShapes = Mapping[str, Sequence[int | None]] | Sequence[Sequence[int | None]]

MAX_DIM = (1 << 63) - 1  # int64, as OpenVINO and ONNX hold dimensions
_RANGE = re.compile(r"^(\d*|\?|-1)\.\.(\d*|\?|-1)$")


def parse(specs: Sequence[str]) -> dict[str, Dims] | list[Dims]:
    """The `--input` values (each `NAME[dims]`, `[dims]`, or several of them separated by commas) as name -> dims,
    or as a list of dims by position when none is named. ConversionError, quoting the spelling, for anything else."""
    named: dict[str, Dims] = {}
    unnamed: list[Dims] = []
    for spec in specs:
        for name, dims in _split(spec):
            if name is None:
                unnamed.append(dims)
            elif name in named:
                raise ConversionError(f"--input {name}: given twice")
            else:
                named[name] = dims
    if named and unnamed:
        raise ConversionError("--input: either every shape names its input (NAME[dims]) or none does (the shapes are "
                              "then the model's inputs in order)")
    return named if named or not unnamed else unnamed


def _split(spec: str) -> list[tuple[str | None, Dims]]:
    """One `--input` value: `NAME[dims]` entries, separated by commas after each `]`."""
    out: list[tuple[str | None, Dims]] = []
    rest = spec.strip()
    if not rest:
        raise ConversionError("--input: empty; give NAME[dims], e.g. --input x[1,3,224,224]")
    while rest:
        close = rest.find("]")
        head = rest if close < 0 else rest[:close]
        open_ = head.rfind("[")
        if close < 0 and "[" in rest:
            raise ConversionError(f"--input {spec}: a '[' without its ']'")
        if close < 0 or open_ < 0:
            hint = " (an .npz of the check's inputs is given with --inputs)" if spec.strip().endswith(".npz") else ""
            raise ConversionError(f"--input {spec}: no shape in brackets; give NAME[dims], e.g. "
                                  f"--input x[1,3,224,224]{hint}")
        name = head[:open_].strip()
        out.append((name or None, _dims(head[open_ + 1:], spec)))
        rest = rest[close + 1:].lstrip()
        if rest.startswith(","):
            rest = rest[1:].lstrip()
            if not rest:
                raise ConversionError(f"--input {spec}: a comma with no shape after it")
        elif rest:
            raise ConversionError(f"--input {spec}: '{rest}' after the shape; give NAME[dims], several separated "
                                  "by commas")
    return out


def _dims(text: str, spec: str) -> Dims:
    if not text.strip():
        return ()
    dims: list[int | None] = []
    for part in text.split(","):
        p = part.strip()
        if p in ("?", "-1"):
            dims.append(None)
        elif _RANGE.match(p):
            raise ConversionError(f"--input {spec}: '{p}' is a range, which an ONNX input cannot express; give a "
                                  "size, or ? to keep the dimension free")
        elif p.isdigit():
            dims.append(_size(int(p), spec))
        else:
            raise ConversionError(f"--input {spec}: '{p}' is not a dimension (a size, or ? for a free one)")
    return tuple(dims)


def _size(d: int, what: str) -> int:
    if d > MAX_DIM:
        raise ConversionError(f"--input {what}: dimension {d} is larger than an int64 holds")
    return d


def normalize(shapes: InputShapes | None) -> dict[str, Dims] | list[Dims] | None:
    """The API's `input_shapes` (name -> dims, or dims by position) checked: every dimension a non-negative int or
    None. None or empty: no shapes given."""
    if not shapes:
        return None
    if isinstance(shapes, str):
        raise ConversionError(f"input_shapes: a mapping of input name to dimensions, not the string {shapes!r} "
                              "(ir2onnx.input_shapes.parse reads the command line's spelling)")
    if isinstance(shapes, Mapping):
        return {str(k): _checked(v, f"input_shapes[{k!r}]") for k, v in shapes.items()}
    return [_checked(v, f"input_shapes[{i}]") for i, v in enumerate(shapes)]


def _checked(dims: Sequence[int | None], what: str) -> Dims:
    if isinstance(dims, (str, bytes)) or not isinstance(dims, Sequence):
        raise ConversionError(f"{what}: a sequence of dimensions (int, or None for a free one), not {dims!r}")
    out: list[int | None] = []
    for d in dims:
        try:
            size = None if d is None or isinstance(d, bool) else operator.index(d)  # numpy's integers too
        except TypeError:
            size = None
        if d is None or size == -1:
            out.append(None)
        elif size is None or size < 0:
            raise ConversionError(f"{what}: {d!r} is not a dimension (a non-negative int, or None for a free one)")
        else:
            out.append(_size(size, what))
    return tuple(out)


def spelling(dims: Sequence[int | None] | None) -> str:
    """`[1,3,?,?]`; `[...]` for a dynamic rank."""
    if dims is None:
        return "[...]"
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


__all__ = ["Dims", "InputShapes", "normalize", "parse", "spelling"]

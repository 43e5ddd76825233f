"""Writing a converted model to disk: where its weights go (the weight modes) and atomic files.

ONNX external data is raw little-endian tensor bytes at an offset of a file named relative to the model. An IR's
.bin holds its Const values exactly that way, so a weight the conversion left unchanged (a contiguous view of the
mapped .bin) can be referenced where it lies instead of copied:

* ``reference``: unchanged weights point into the IR's .bin; weights the conversion computed (unpacked sub-byte
  types, upcast 8-bit floats, reordered gates, ...) go to ``OUT.onnx.data``. The ONNX file then needs the .bin at
  the same relative location, which ONNX only allows in the model's directory or below it (no ``..``).
* ``copy``: every weight goes to ``OUT.onnx.data`` (kernel-side copies from the .bin where the platform has them).
  For a large .bin that the model reads nearly all of as it is, that file is a copy of the whole .bin, made while
  the model was converted (bincopy.py), with the computed weights after it.
* ``inline``: every weight inside the .onnx file (protobuf's 2 GiB limit; the whole file is built in memory).

Tensors of at most ``INLINE_BYTES`` stay inside the .onnx in every mode. Nothing is left behind on failure: the
files are written under temporary names in the output's directory and renamed at the end.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as oir

from ir2onnx.bincopy import UNUSED_SHARE, BinCopy, bin_location, reference_refusal
from ir2onnx.errors import ConversionError
from ir2onnx.ir.weights import Weights
from ir2onnx.protos import complete_weightless

WEIGHT_MODES = ("reference", "copy", "inline")
INLINE_BYTES = 1024
_PROTOBUF_LIMIT = (1 << 31) - 1

# progress(bytes written, bytes to write)
Progress = Callable[[int, int], None]


def resolve_weight_mode(mode: str | None, out: Path, weights: Weights | None) -> str:
    """The mode to write with: `mode` itself (checked), or by default `reference` where ONNX tools accept a
    reference to the .bin from the output's location, else `copy`."""
    if mode is None:
        return "reference" if weights is not None and bin_location(weights.path, out.parent) is not None else "copy"
    if mode not in WEIGHT_MODES:
        raise ConversionError(f"unknown weight mode '{mode}' ({', '.join(WEIGHT_MODES)})")
    if mode == "reference" and weights is not None:
        refusal = reference_refusal(weights.path, out.parent)
        if refusal:
            raise ConversionError(f"weights 'reference': {refusal}; or use weights 'copy'")
    return mode


def write_model(model: oir.Model, out: Path, weights: Weights | None, mode: str | None = None,
                progress: Progress | None = None, before_commit: Callable[[], None] | None = None,
                weightless: onnx.ModelProto | None = None, bin_copy: BinCopy | None = None) -> Path:
    """Write `model` to `out` (and `out`.data when needed) atomically. Returns `out`.

    A stale `out`.data from an earlier conversion is removed when the new model does not use that file.
    `before_commit` runs once the files are written under temporary names, before they take their places; should
    it raise, they are removed and nothing is left behind. `weightless`: the model's `protos.weightless_proto`, made
    since it last changed (taken over); the file's proto is completed from it instead of serialising the model.
    `bin_copy`: the .bin being copied beside the output (taken over: used as the data file, or removed).
    """
    mode = resolve_weight_mode(mode, out, weights)
    out_dir = out.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    data_path = out_dir / (out.name + ".data")
    location = bin_location(weights.path, out_dir) if mode == "reference" and weights is not None else None
    values = [v for g in model.graphs() for v in g.initializers.values() if v.const_value is not None]
    original = [v.const_value for v in values]

    referenced: list[tuple[oir.Value, int]] = []
    to_data: list[tuple[oir.Value, int | None]] = []
    if mode == "inline":
        total = sum(t.nbytes for t in original)  # type: ignore[union-attr]
        if total > _PROTOBUF_LIMIT:
            raise ConversionError(f"weights 'inline': {total / 2**30:.2f} GiB of weights exceed protobuf's 2 GiB "
                                  "limit of one ONNX file; use weights 'reference' or 'copy'")
    else:
        for v, t in zip(values, original):
            if t.nbytes <= INLINE_BYTES or t.dtype == oir.DataType.STRING:  # type: ignore[union-attr]
                continue  # (ONNX external data holds no strings)
            offset = _bin_offset(t, weights)
            if location is not None and offset is not None:
                referenced.append((v, offset))
            else:
                to_data.append((v, offset))

    whole = _whole_bin(bin_copy, weights, to_data) if mode == "copy" else None
    if whole is not None:
        total = whole.size + sum(v.const_value.nbytes for v, off in to_data if off is None)  # type: ignore[union-attr]
        if not whole.finish(None if progress is None else lambda done: progress(done, total)):
            whole = None  # the copy failed: the weights are written one by one
    if bin_copy is not None and whole is None:
        bin_copy.discard()
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out_dir)
    os.close(fd)
    tmp_data = Path(tmp + ".data") if whole is None else Path(whole.path)
    try:
        if to_data:
            pending = [(v.const_value, off) for v, off in to_data]
            if whole is not None:
                offsets = _after_bin_copy(whole, pending, tmp_data, total, progress)  # type: ignore[arg-type]
            else:
                offsets = _write_data_file(pending, weights, tmp_data, progress)  # type: ignore[arg-type]
            for (v, _), off in zip(to_data, offsets):
                v.const_value = _external(v.const_value, data_path.name, off, out_dir)  # type: ignore[arg-type]
        for v, off in referenced:
            v.const_value = _external(v.const_value, location, off, out_dir)  # type: ignore[arg-type]
        proto = None
        if weightless is not None:
            proto = complete_weightless(model, weightless, [v for v, _ in referenced] + [v for v, _ in to_data])
        with open(tmp, "wb") as f:
            f.write((proto if proto is not None else oir.to_proto(model)).SerializeToString())
        if before_commit is not None:
            before_commit()
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the files the usual permissions
        if to_data:
            os.chmod(tmp_data, 0o666 & ~_umask())
            os.replace(tmp_data, data_path)
            if whole is not None:
                whole.kept = True
        os.replace(tmp, out)
    except BaseException:
        for p in (Path(tmp), tmp_data):
            p.unlink(missing_ok=True)
        raise
    finally:
        for v, t in zip(values, original):
            v.const_value = t
    if not to_data and data_path.is_file():
        data_path.unlink()
    return out


def _whole_bin(bin_copy: BinCopy | None, weights: Weights | None,
               to_data: list[tuple[oir.Value, int | None]]) -> BinCopy | None:
    """`bin_copy` when it copies the weights' .bin and the model reads all but at most UNUSED_SHARE of it as it is."""
    if bin_copy is None or weights is None or not to_data:
        return None
    try:
        if not os.path.samefile(bin_copy.source, weights.path):
            return None
    except OSError:
        return None
    ranges = sorted({(off, off + v.const_value.nbytes) for v, off in to_data  # type: ignore[union-attr]
                     if off is not None})
    read, end = 0, 0
    for start, stop in ranges:  # the bytes of the union of the ranges
        read += max(0, stop - max(start, end))
        end = max(end, stop)
    return bin_copy if bin_copy.size - read <= bin_copy.size * UNUSED_SHARE else None


def _after_bin_copy(copy: BinCopy, tensors: list[tuple[oir.TensorProtocol, int | None]], path: Path, total: int,
                    progress: Progress | None) -> list[int]:
    """The data file as the .bin's (finished) copy with the computed tensors after it (`total` bytes); their offsets
    (an unchanged view of the .bin at its offset there)."""
    offsets: list[int] = []
    end = copy.size
    with open(path, "r+b") as f:
        for t, off in tensors:
            if off is None:
                f.seek(end)
                if hasattr(t, "tofile"):
                    t.tofile(f)
                else:
                    f.write(t.tobytes())
                off, end = end, end + t.nbytes
                if progress is not None:
                    progress(end, total)
            offsets.append(off)
    return offsets


def _bin_offset(tensor: object, weights: Weights | None) -> int | None:
    """Where `tensor`'s bytes lie in the .bin when it wraps an unchanged view of it (else None; packed 4-bit
    tensors are stored as OpenVINO stores them)."""
    if weights is None or not isinstance(tensor, (oir.Tensor, oir.PackedTensor)):
        return None
    raw = tensor.raw
    if not isinstance(raw, np.ndarray) or raw.nbytes != tensor.nbytes:
        return None
    return weights.offset_of(raw)


def _external(tensor: oir.TensorProtocol, location: str, offset: int, base_dir: Path) -> oir.ExternalTensor:
    return oir.ExternalTensor(location, offset, tensor.nbytes, tensor.dtype, shape=oir.Shape(tensor.shape),
                             name=tensor.name or "", base_dir=str(base_dir))


def _write_data_file(tensors: list[tuple[oir.TensorProtocol, int | None]], weights: Weights | None, path: Path,
                     progress: Progress | None) -> list[int]:
    """Write the tensors one after the other into `path`; returns their offsets. Unchanged views of the .bin (with
    their offset there) are copied from file to file inside the kernel (copy_file_range, where the platform has it:
    about half the CPU time of writing from the mapping, and no page faults), the others written from memory."""
    sources: list[oir.TensorProtocol] = []
    for t, off in tensors:
        if off is not None and weights is not None:
            # an empty base_dir: the .bin is read where it is (containment checks are for loading models)
            sources.append(oir.ExternalTensor(os.path.abspath(weights.path), off, t.nbytes, t.dtype,
                                             shape=oir.Shape(t.shape), name=t.name or ""))
        else:
            sources.append(t)
    total = sum(t.nbytes for t in sources)
    done = 0

    def report(tensor: oir.TensorProtocol, info: object) -> None:  # called before each tensor is written
        nonlocal done
        if progress is not None:
            progress(done, total)
        done += tensor.nbytes

    written = oir.external_data.convert_tensors_to_external(sources, str(path.parent), path.name, callback=report)
    if progress is not None:
        progress(total, total)
    return [int(e.offset or 0) for e in written]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask

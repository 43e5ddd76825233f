"""The IR's .bin copied whole, in a thread, while the model is converted (weights 'copy').

Copying the weights is most of a large conversion in the 'copy' mode: on a 1 GB .bin, `cp` takes about as long as
the rest of the conversion. The copy (in the kernel: `copy_file_range`, which releases the GIL) starts as soon as the
command line is read, into a temporary file beside the output, and runs while Python imports the converters and
converts. `write.write_model` then makes that copy the start of the model's data file, the unchanged weights at
their offsets in the .bin and the weights the conversion computed appended after it, provided the model reads
nearly all of the .bin as it is (at most `UNUSED_SHARE` of it unread: the weights of a fused LSTM are reordered, so
its .bin is read only to compute new ones); else the copy is discarded and the weights written one by one.
A .bin below `MIN_BYTES` is written one weight at a time as before: the thread would gain nothing there.

This module imports only the standard library: the command line starts the copy before it imports numpy and onnx.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

MIN_BYTES = 64 << 20
UNUSED_SHARE = 1 / 16
# bytes per copy_file_range call: each call returns to Python, which then waits for the interpreter's lock while the
# conversion holds it (32 MiB calls took the copy from 0.5 s to 1-2 s there); per read and write where the kernel
# cannot copy (held in memory)
_KERNEL_CHUNK = 1 << 30
_CHUNK = 16 << 20


def bin_location(bin_path: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> str | None:
    """The .bin's location relative to the output's directory, as ONNX external data names it, or None where ONNX
    tools would refuse it: outside that directory (symlinks resolved: onnx's checker and loader and onnxruntime
    refuse locations that leave the model's directory) or with several hard links (onnx's loader refuses those)."""
    return None if reference_refusal(bin_path, out_dir) else Path(
        os.path.relpath(os.path.abspath(bin_path), os.path.abspath(out_dir))).as_posix()


def reference_refusal(bin_path: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> str | None:
    """Why an ONNX file in `out_dir` cannot reference `bin_path` (None when it can)."""
    rel = os.path.relpath(os.path.abspath(bin_path), os.path.abspath(out_dir))
    real = os.path.relpath(os.path.realpath(bin_path), os.path.realpath(out_dir))
    if any(p == os.pardir or os.path.isabs(p) or p.startswith(os.pardir + os.sep) for p in (rel, real)):
        return (f"an ONNX file can reference {bin_path} only when it is written into {Path(bin_path).parent} or one "
                "of its parent directories (ONNX external data locations are relative to the model and may not leave "
                "its directory)")
    try:
        links = os.stat(bin_path).st_nlink
    except OSError:
        links = 1
    if links > 1:
        return (f"{bin_path} has {links} hard links, and onnx's loader and checker refuse external data files with "
                "more than one")
    return None


class BinCopy:
    """A copy of `source` into a temporary file in `directory`, made by a thread. `copied` bytes are done so far."""

    def __init__(self, source: str, directory: Path, size: int) -> None:
        self.source = source
        self.size = size
        self.copied = 0
        self.error: BaseException | None = None
        self.kept = False  # the copy became the model's data file (renamed), or was removed: discard() leaves it
        fd, self.path = tempfile.mkstemp(prefix=".ir2onnx-", suffix=".data.tmp", dir=directory)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(fd,), name="ir2onnx-bin-copy", daemon=True)
        self._thread.start()

    def _run(self, fd: int) -> None:
        try:
            with open(self.source, "rb") as src:
                fast = hasattr(os, "copy_file_range")
                while self.copied < self.size and not self._stop.is_set():
                    n = min(_KERNEL_CHUNK if fast else _CHUNK, self.size - self.copied)
                    if fast:
                        try:
                            done = os.copy_file_range(src.fileno(), fd, n, self.copied, self.copied)
                        except OSError:  # not between these file systems, or not by this kernel
                            fast = False
                            continue
                    else:
                        done = os.pwrite(fd, os.pread(src.fileno(), n, self.copied), self.copied)
                    if done <= 0:
                        raise OSError(f"{self.source} ended after {self.copied} of {self.size} bytes")
                    self.copied += done
        except BaseException as e:  # noqa: BLE001  reported by finish(): the weights are then written one by one
            self.error = e
        finally:
            os.close(fd)

    def finish(self, progress: Callable[[int], None] | None = None) -> bool:
        """Wait for the copy (reporting the bytes copied); whether it is whole."""
        while self._thread.is_alive():
            self._thread.join(0.1)
            if progress is not None:
                progress(self.copied)
        return self.error is None and self.copied == self.size

    def discard(self) -> None:
        """Stop the copy and remove its file (unless kept). A copy under way ends after its current call, into the
        removed file, without being waited for."""
        self._stop.set()
        if self.kept:
            return
        self.kept = True  # (once)
        with contextlib.suppress(OSError):
            os.unlink(self.path)


# the copy the command line started, for the conversion of that .bin into that directory
_pending: BinCopy | None = None


def prefetch(bin_path: str | os.PathLike[str], out: Path, weights: str | None) -> None:
    """Start copying the .bin into `out`'s directory when the conversion will copy its weights there (`weights`
    'copy', or by default where `out` cannot reference the .bin) and it is large; `take` hands the copy over."""
    global _pending
    if os.name != "posix":  # (a file being written is not removed elsewhere)
        return
    source = os.path.abspath(bin_path)
    try:
        size = os.path.getsize(source)
        if size < MIN_BYTES or _pending is not None:
            return
        if weights is None:
            weights = "copy" if bin_location(source, out.parent) is None else "reference"
        if weights != "copy" or not out.parent.is_dir():
            return
        _pending = BinCopy(source, out.parent, size)
    except OSError:
        return  # the conversion reports what is wrong with these paths


def cancel() -> None:
    """Discard the copy `prefetch` started, if the conversion did not take it."""
    global _pending
    copy, _pending = _pending, None
    if copy is not None:
        copy.discard()


def take(bin_path: str | os.PathLike[str], out: Path) -> BinCopy | None:
    """The copy `prefetch` started for this .bin and output directory (the caller discards it when unused)."""
    global _pending
    copy, _pending = _pending, None
    if copy is None:
        return None
    try:
        same = os.path.samefile(copy.source, bin_path) and os.path.samefile(Path(copy.path).parent, out.parent)
    except OSError:
        same = False
    if not same:
        copy.discard()
        return None
    return copy

"""Loading a converted model in an onnxruntime session, in this process or in a helper process.

Every converted model is loaded in an onnxruntime session before it is handed out (validate_onnx). Importing
onnxruntime takes about 50 ms, a tenth of a whole `ir2onnx convert` of a small model: the command line therefore
starts a helper process that imports onnxruntime on another core while the conversion runs, and sends it the model
to load (`Helper.start()`, `using()`). The verdict is the same either way: the same session options, onnxruntime's
own error message. A helper that cannot start, dies or answers nonsense is dropped and the model is loaded in this
process, as without it. On a machine with one core the helper would only add its start-up to the conversion: none is started.

This module imports nothing heavy: the command line starts the helper before it loads onnx and the converters.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import IO

# The helper runs `serve()` with the importing process's module search path; it answers on a pipe of its own (its
# stdout could carry whatever a library or a site customisation prints). It starts without the site module (-S: its
# search path is given; 10-20 ms sooner ready), so the directory this package is imported from ends that path: an
# editable install finds the package through an import hook that only site's .pth processing would set up.
_CHILD = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); from ir2onnx.translate.ort_helper import serve; "
          "serve(int(sys.argv[2]))")
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # holds ir2onnx/
_HEADER = 8  # each message: its length (little-endian, 8 bytes), then the message
# y = Relu(x), x and y float [1], opset 17, IR version 8 (serialised: the helper does not import onnx)
WARM_UP_MODEL = (b'\x08\x08:9\n\x0c\n\x01x\x12\x01y"\x04Relu\x12\x07warm-upZ\x0f\n\x01x\x12\n\n\x08\x08\x01\x12\x04'
                 b'\n\x02\x08\x01b\x0f\n\x01y\x12\n\n\x08\x08\x01\x12\x04\n\x02\x08\x01B\x04\n\x00\x10\x11')
_REPLY_LIMIT = 1 << 20  # a verdict is a short JSON object; a longer "reply" is not one


class HelperFailed(Exception):
    """The helper process gave no verdict (it could not start, died or answered nonsense)."""


def load_error(model: bytes) -> str | None:
    """onnxruntime's error loading the serialised `model` in a CPU session, or None when it loads (or when onnxruntime
    is not installed: the ONNX checks still stand without it)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only: a failure is reported by the caller, not on stderr
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.intra_op_num_threads = 1  # the session never runs: no thread pool to start (~10 ms on 1,500 nodes)
    try:
        ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001  onnxruntime raises its own exception types (Fail, InvalidGraph, ...)
        return str(e)
    return None


class Helper:
    """A process that imports onnxruntime and then loads the models sent to it, one at a time."""

    def __init__(self, proc: subprocess.Popen[bytes], replies: IO[bytes]) -> None:
        self._proc = proc
        self._replies = replies

    @classmethod
    def start(cls) -> Helper | None:
        """A new helper, or None where one would not help (one core, no onnxruntime) or cannot start (it needs
        POSIX, to be given its reply pipe, and a Python interpreter: a frozen application's executable is not one)."""
        import importlib.util

        if os.name != "posix" or getattr(sys, "frozen", False) or not sys.executable or _cores() < 2 \
                or importlib.util.find_spec("onnxruntime") is None:
            return None
        # numpy (imported by onnxruntime) starts OpenBLAS's threads, which spin for about 0.1 s of CPU time: on a
        # machine with two cores, the helper's and this process's would slow this process down more than the helper
        # saves. The helper computes nothing with numpy.
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
        read_end, write_end = os.pipe()
        try:
            path = [*sys.path, _PACKAGE_ROOT]
            proc = subprocess.Popen([sys.executable, "-S", "-c", _CHILD, json.dumps(path), str(write_end)],
                                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    pass_fds=(write_end,), env=env)
        except (OSError, ValueError):
            os.close(read_end)
            return None
        finally:
            os.close(write_end)
        return cls(proc, os.fdopen(read_end, "rb"))

    def load_error(self, model: bytes) -> str | None:
        """As `load_error(model)`, computed by the helper; HelperFailed when it gives no verdict."""
        self.send(model)
        return self.verdict()

    def send(self, model: bytes) -> None:
        """Send `model` to be loaded; its verdict is read by `verdict()` (one model at a time)."""
        try:
            assert self._proc.stdin is not None
            _send(self._proc.stdin, model)
        except (OSError, ValueError) as e:
            self.close()
            raise HelperFailed(str(e)) from None

    def verdict(self) -> str | None:
        """The verdict on the model sent last: as `load_error(model)`; HelperFailed when the helper gives none."""
        try:
            reply = json.loads(_receive(self._replies, _REPLY_LIMIT))
            return None if reply["error"] is None else str(reply["error"])
        except (OSError, ValueError, KeyError, TypeError, EOFError) as e:
            self.close()
            raise HelperFailed(str(e)) from None

    def close(self) -> None:
        """End the helper: it exits by itself, without waiting for it, once its input closes."""
        for stream in (self._proc.stdin, self._replies):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


_active: Helper | None = None


@contextlib.contextmanager
def using(helper: Helper | None) -> Iterator[None]:
    """Within the block, models are loaded by `helper` (in this process when None); it is closed at the end."""
    global _active
    previous, _active = _active, helper
    try:
        yield
    finally:
        _active = previous
        if helper is not None:
            helper.close()


def session_load_error(model: bytes) -> str | None:
    """`load_error(model)`, by the active helper when there is one, else in this process."""
    return start_session_load(model)()


def start_session_load(model: bytes) -> Callable[[], str | None]:
    """Start `session_load_error(model)`: the active helper loads the model while this process goes on; the function
    returned gives the verdict (waiting for it, or loading the model in this process without a helper). Call it
    before loading another model."""
    global _active
    helper = _active
    if helper is not None:
        try:
            helper.send(model)
        except HelperFailed:
            _active = helper = None

    def verdict() -> str | None:
        global _active
        if helper is not None:
            try:
                return helper.verdict()
            except HelperFailed:
                if _active is helper:
                    _active = None
        return load_error(model)

    return verdict


def serve(reply_fd: int) -> None:
    """The helper's side: import onnxruntime, then answer each model read from stdin with its verdict on the pipe
    `reply_fd`, until stdin closes."""
    from ir2onnx._lazy import defer_numpy_docstrings

    defer_numpy_docstrings()  # onnxruntime imports numpy; loading models reads none of its docstrings
    import onnxruntime  # noqa: F401  imported before the first model arrives: that is the point of the helper

    load_error(WARM_UP_MODEL)  # so is onnxruntime's set-up at its first session (6-14 ms: kernel registry, threads)
    stdin, replies = sys.stdin.buffer, os.fdopen(reply_fd, "wb")
    while True:
        try:
            model = _receive(stdin)
        except EOFError:  # no more models: exit now (tearing the interpreter down would only cost time)
            os._exit(0)
        _send(replies, json.dumps({"error": load_error(model)}).encode())


def _send(stream: IO[bytes], message: bytes) -> None:
    stream.write(len(message).to_bytes(_HEADER, "little"))
    stream.write(message)
    stream.flush()


def _receive(stream: IO[bytes], limit: int | None = None) -> bytes:
    header = stream.read(_HEADER)
    if len(header) < _HEADER:
        raise EOFError("the stream ended")
    size = int.from_bytes(header, "little")
    if limit is not None and size > limit:
        raise ValueError(f"a message of {size} bytes, more than the {limit} expected")
    message = stream.read(size)
    if len(message) < size:
        raise EOFError("the stream ended within a message")
    return message


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1

"""Recursion as deep as a network: walks over a value's producers recurse once per layer.

Deriving a value's shape or constant value walks its producers back to the graph's inputs, one Python call per
layer, a few frames each. A plain chain of a few hundred layers (a 24-block transformer encoder) exceeds Python's
default recursion limit of 1,000 frames. `deep_call` runs such a walk again, where it ran out, on a thread with a large stack and a recursion
limit to match, instead of failing the conversion.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T")

STACK_BYTES = 512 << 20  # address space, reserved by the thread and touched only as deep as the walk goes
RECURSION_LIMIT = 200_000  # frames (a layer takes a few): chains of tens of thousands of layers
_lock = threading.Lock()
_running = 0  # deep calls under way (they may nest, or run in several threads)
_saved_limit = 0


def deep_call(fn: Callable[[], _T]) -> _T:
    """`fn()` on a thread with a STACK_BYTES stack and at least RECURSION_LIMIT frames allowed; its result, or the
    exception it raised."""
    global _running, _saved_limit
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as e:  # noqa: BLE001  handed to the calling thread
            outcome["error"] = e

    worker = threading.Thread(target=run, name="ir2onnx-deep", daemon=True)
    with _lock:  # the stack size (for threads started from now on) and the recursion limit are process-wide
        if _running == 0:
            _saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_saved_limit, RECURSION_LIMIT))
        _running += 1
        previous = threading.stack_size()
        try:
            threading.stack_size(STACK_BYTES)
            worker.start()
        except (ValueError, RuntimeError) as e:  # no settable stack size, or no address space for it
            outcome["error"] = RecursionError(f"a walk over the graph recursed deeper than Python allows ({e})")
        finally:
            threading.stack_size(previous)
    try:
        if worker.ident is not None:
            worker.join()
    finally:
        with _lock:
            _running -= 1
            if _running == 0:
                sys.setrecursionlimit(_saved_limit)
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]

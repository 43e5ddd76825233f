"""ir2onnx.deep: walks deeper than Python's recursion limit run on a deep stack."""

from __future__ import annotations

import sys
import threading

import pytest

from ir2onnx.deep import RECURSION_LIMIT, deep_call


def _depth(n: int) -> int:
    return 0 if n == 0 else 1 + _depth(n - 1)


def test_deep_call_goes_past_the_recursion_limit_and_restores_it() -> None:
    limit = sys.getrecursionlimit()
    with pytest.raises(RecursionError):
        _depth(limit + 100)
    assert deep_call(lambda: _depth(50_000)) == 50_000
    assert sys.getrecursionlimit() == limit
    assert threading.stack_size() == 0  # the default again, for threads started later


def test_deep_call_raises_what_the_call_raised() -> None:
    def fail() -> None:
        raise KeyError("x")

    with pytest.raises(KeyError):
        deep_call(fail)
    with pytest.raises(RecursionError):
        deep_call(lambda: _depth(RECURSION_LIMIT + 10))


def test_nested_deep_calls() -> None:
    limit = sys.getrecursionlimit()
    assert deep_call(lambda: deep_call(lambda: _depth(30_000)) + _depth(20_000)) == 50_000
    assert sys.getrecursionlimit() == limit

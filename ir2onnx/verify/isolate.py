"""Runtimes in child processes with a time limit: a loop that never ends (a wrong conversion can do that) is
stopped and reported, and a crash of a runtime cannot take the check down with it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ir2onnx.verify.worker import load_arrays, save_arrays

DEFAULT_TIMEOUT = 60.0  # seconds per runtime


class RuntimeFailure(Exception):
    """A runtime failed, crashed or ran past its time limit; the message says which and why."""

    def __init__(self, runtime: str, reason: str, timed_out: bool = False) -> None:
        self.runtime = runtime
        self.reason = reason
        self.timed_out = timed_out
        super().__init__(f"{runtime}: {reason}")


@dataclass
class RunResult:
    info: dict[str, Any]
    arrays: list[np.ndarray] = field(default_factory=list)


class Job:
    """One runtime run in a child process; `wait` returns its result or raises RuntimeFailure."""

    def __init__(self, runtime: str, spec: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
                 timeout: float | None) -> None:
        self.runtime = runtime
        self.timeout = timeout
        self.dir = Path(tempfile.mkdtemp(prefix="ir2onnx-check-"))
        names = list(inputs)
        dtypes = save_arrays(self.dir / "in.npz", [np.asarray(inputs[n]) for n in names])
        job = {**spec, "input_names": names, "input_dtypes": dtypes}
        (self.dir / "job.json").write_text(json.dumps(job))
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("worker.py")), str(self.dir)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)

    def wait(self) -> RunResult:
        if self.proc is None:
            self.start()
        assert self.proc is not None
        try:
            remaining = None if self.timeout is None else max(0.0, self.timeout - (time.monotonic() - self.started))
            try:
                _, stderr = self.proc.communicate(timeout=remaining)
            except subprocess.TimeoutExpired:
                self.kill()
                raise RuntimeFailure(self.runtime, f"did not finish within {self.timeout:g} s (stopped; a loop that "
                                     "does not terminate on these inputs?)", timed_out=True) from None
            out_json = self.dir / "out.json"
            if not out_json.exists():
                tail = stderr.decode(errors="replace").strip().splitlines()[-3:]
                raise RuntimeFailure(self.runtime, f"crashed (exit status {self.proc.returncode})"
                                     + (f": {' '.join(tail)}" if tail else ""))
            info = json.loads(out_json.read_text())
            if "error" in info:
                raise RuntimeFailure(self.runtime, info["error"])
            return RunResult(info, load_arrays(self.dir / "out.npz", info["dtypes"]))
        finally:
            self.close()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the worker and anything it started
            except ProcessLookupError:
                pass
            self.proc.wait()

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def run_jobs(jobs: list[Job]) -> list[RunResult | RuntimeFailure]:
    """Run jobs one after the other (a runaway one cannot slow the others down), each with its own time limit."""
    results: list[RunResult | RuntimeFailure] = []
    try:
        for job in jobs:
            try:
                results.append(job.wait())
            except RuntimeFailure as e:
                results.append(e)
    finally:
        for job in jobs:
            job.close()
    return results

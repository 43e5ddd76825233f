"""What a loop view holds: carried states, per-step outputs, buffers written one row per iteration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import onnx_ir as oir

from ir2onnx.passes.analysis.affine import Index
from ir2onnx.passes.rewrite import Emitter


class State(NamedTuple):
    body_in: oir.Value
    body_out: oir.Value
    init: oir.Value  # the outer initial value
    final: oir.Value  # the loop's output with the last value

class StepOutput(NamedTuple):
    body_out: oir.Value
    outer: oir.Value  # the loop's stacked output
    axis: int  # where the steps are stacked
    reverse: bool  # stacked from the last step backwards

class Buffer(NamedTuple):
    """A carried tensor, [steps, ...] from the start, whose row k is overwritten with `row` at step k (`last`: a
    one-row tensor whose row 0 is overwritten at every step, as TensorFlow keeps only the last output)."""

    state: State
    row: oir.Value
    last: bool = False

@dataclass
class LoopView:
    node: oir.Node
    x: oir.Value  # the body value holding the current step of the sequence
    stack_x: Callable[[Emitter], oir.Value]  # emits the sequence (outer, time on axis 0, in time order)
    reverse: bool  # step k reads time T-1-k
    states: list[State] = field(default_factory=list)
    outputs: list[StepOutput] = field(default_factory=list)
    buffers: list[Buffer] = field(default_factory=list)
    counters: list[tuple[State, int]] = field(default_factory=list)  # (state, value at step 0), +1 per step
    steps: int | None = None  # the number of steps when known
    index: Index | None = None  # a Loop body's integer arithmetic (the step k)
    capped_by: oir.Value | None = None  # the loop may stop at the longest of these lengths (see Index._min_max)

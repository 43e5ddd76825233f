"""Which pass broke a conversion: when the default conversion fails the check and the plain translation passes, the
optimising passes are bisected (a conversion running only the first k of them, `pass_limit=k`, checked each time)
down to the first whose output diverges, and the IR layers whose ONNX nodes it changed are named."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_nodes
from ir2onnx.passes.pipeline import APPLIED
from ir2onnx.translate.builder import LAYER_META

log = logging.getLogger("ir2onnx")


@dataclass(frozen=True)
class Bisection:
    """The first optimising pass after which the check fails: its stage and class name, its place among the passes
    the conversion ran (1-based, of `of`), the IR layers whose ONNX nodes it changed, and how many checks it took."""

    stage: str
    pass_name: str
    index: int
    of: int
    layers: tuple[str, ...]
    checks: int

    def describe(self, shown: int = 5) -> str:
        where = ", ".join(self.layers[:shown]) + (f" and {len(self.layers) - shown} more"
                                                  if len(self.layers) > shown else "")
        return (f"the first pass whose output diverges is {self.pass_name} (stage '{self.stage}', pass {self.index} "
                f"of {self.of}, found in {self.checks} checks); "
                + (f"it changed the ONNX nodes of {where}" if self.layers else
                   "it changed no node's op or attributes (constants or wiring only)"))


def first_diverging_pass(convert: Callable[..., oir.Model], passes: Callable[[oir.Model], bool]) -> Bisection | None:
    """`convert(pass_limit=k)` converts running only the first k optimising passes (None: all); `passes(model)` checks
    one conversion. None when the full conversion passes, or the conversion without optimising passes fails too
    (a translation defect, not a pass's)."""
    full = convert(pass_limit=None)
    applied: list[tuple[str, str]] = list(full.meta.get(APPLIED, []))
    checks = 1
    if passes(full):
        return None
    checks += 1
    if not applied or not passes(convert(pass_limit=0)):
        return None
    good, bad = 0, len(applied)  # the check passes with `good` passes and fails with `bad`
    while bad - good > 1:
        mid = (good + bad) // 2
        checks += 1
        if passes(convert(pass_limit=mid)):
            good = mid
        else:
            bad = mid
    stage, name = applied[bad - 1]
    layers = _changed_layers(convert(pass_limit=bad - 1), convert(pass_limit=bad))
    return Bisection(stage, name, bad, len(applied), layers, checks)


def bisect_conversion(xml_path: str, *, bin_path: str | None = None, check_options: dict[str, Any],
                      **convert_options: Any) -> Bisection | None:
    """first_diverging_pass for an IR: conversions with `convert_options` (ir2onnx.convert_to_ir's), each checked
    with `check_options` (ir2onnx.check's) on the same inputs."""
    from ir2onnx import api

    def convert(pass_limit: int | None) -> oir.Model:
        return api.convert_to_ir(xml_path, bin_path, pass_limit=pass_limit, **convert_options)

    def passes(model: oir.Model) -> bool:
        return api.check(xml_path, oir.to_proto(model), bin_path=bin_path, **check_options).passed

    return first_diverging_pass(convert, passes)


def _changed_layers(before: oir.Model, after: oir.Model) -> tuple[str, ...]:
    """IR layers (by their location) whose ONNX nodes differ in op or attributes between two conversions, in the
    order of the later model's nodes."""
    def nodes_by_layer(model: oir.Model) -> dict[str, Counter[str]]:
        out: dict[str, Counter[str]] = {}
        for node in all_nodes(model.graph):
            layer = node.meta.get(LAYER_META)
            where = layer.where() if hasattr(layer, "where") else "(no IR layer)"
            attrs = ",".join(f"{k}={a.value!r}" for k, a in sorted(node.attributes.items())
                             if a.type not in (oir.AttributeType.GRAPH, oir.AttributeType.GRAPHS))
            out.setdefault(where, Counter())[f"{node.op_type}({attrs})"] += 1
        return out

    a, b = nodes_by_layer(before), nodes_by_layer(after)
    changed = [w for w in dict.fromkeys([*b, *a]) if a.get(w) != b.get(w)]
    return tuple(changed)

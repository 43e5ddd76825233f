"""A Loop body whose condition output is the constant true returns its condition input instead.

A Loop runs its body only while the condition is true (`for i < M and cond`), so inside the body the condition input
is always true and returning it computes the same. Returning an outer constant makes onnxruntime pass that value into
every iteration (one more implicit input); returning the input, as a hand-written ONNX for-loop does, does not.
Measured with scripts/bench/bench_loop_overhead.py (Loop, elementwise body, batch 1, size 64): 1.07-1.08x the hand-written
loop's cost per iteration before, 1.00-1.05x after. Loops without a condition input are left as they are.
"""

from __future__ import annotations

from collections.abc import MutableSet

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import input_at, is_default_domain, loops_innermost_first
from ir2onnx.passes.analysis.values import literal_array
from ir2onnx.passes.rewrite import all_names, fresh_name, inherit_meta


class LoopConditionPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        names = all_names(model.graph)
        modified = False
        for node, body, _ in list(loops_innermost_first(model.graph)):
            if node.op_type == "Loop" and input_at(node, 1) is not None and len(body.inputs) >= 2 and body.outputs:
                modified |= _return_condition_input(node, body, names)
        return oir.passes.PassResult(model, modified=modified)


def _return_condition_input(loop: oir.Node, body: oir.Graph, names: MutableSet[str]) -> bool:
    out, cond_in = body.outputs[0], body.inputs[1]
    copy = out.producer()
    source = copy.inputs[0] if copy is not None and copy.op_type == "Identity" and is_default_domain(copy) else out
    value = literal_array(source)
    if source is None or value is None or value.size != 1 or not bool(value.reshape(-1)[0]):
        return False
    if copy is not None and source is not out and copy.graph is body and not out.uses() and \
            sum(o is out for o in body.outputs) == 1:
        copy.replace_input_with(0, cond_in)
        return True
    step = oir.Value(name=fresh_name(names, f"{loop.name or 'Loop'}/condition"), type=cond_in.type, shape=cond_in.shape)
    body.append(inherit_meta(oir.Node("", "Identity", [cond_in], outputs=[step],
                                     name=fresh_name(names, f"{loop.name or 'Loop'}/condition_node")), loop))
    body.outputs[0] = step
    return True

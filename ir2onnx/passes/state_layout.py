"""Loop-carried states kept in the layout their body computes in, instead of transposed in and out every iteration.

OpenVINO's TensorFlow frontend keeps a TensorFlow model's NHWC layout at the edges of a loop body whose ops compute
in NCHW (Keras ConvLSTM2D: its states h and c are carried NHWC, each transposed to NCHW as the body reads it and back
to NHWC as the body returns it): two Transposes per state and iteration. When every read of a carried value in the
body is the same Transpose P and the body returns it as Transpose(u, P^-1), the loop carries u instead: its
initial value is transposed by P once before the loop, and where the final value is read after the loop it is
transposed back by P^-1 there. Pure data movement: the results are the same bits.
"""

from __future__ import annotations

from collections.abc import MutableSet

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import carried_count, explicit_perm, loops_innermost_first, producer
from ir2onnx.passes.rewrite import all_names, distinct_output, fresh_name, inherit_meta, record


class CarriedLayoutPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        names = all_names(model.graph)
        modified = False
        for loop, body, outer in list(loops_innermost_first(model.graph)):
            first_in, first_out = (2, 1) if loop.op_type == "Loop" else (0, 0)
            for i in range(carried_count(loop)):
                modified |= _carry_transposed(loop, body, outer, first_in + i, first_out + i, i, names)
        return oir.passes.PassResult(model, modified=modified)


def _carry_transposed(loop: oir.Node, body: oir.Graph, outer: oir.Graph, body_in: int, body_out: int, state: int,
                      names: MutableSet[str]) -> bool:
    """Carry state `state` (body input `body_in`, body output `body_out`, loop input `body_in`, loop output `state`)
    as its body's transposed layout when the body reads it through one permutation only and returns it through the
    inverse one."""
    v_in, v_out = body.inputs[body_in], body.outputs[body_out]
    readers = [u.node for u in v_in.uses()]
    perms = [explicit_perm(n) if n.op_type == "Transpose" and n.graph is body else None for n in readers]
    if not readers or v_in.is_graph_output() or any(p is None for p in perms) or any(p != perms[0] for p in perms) \
            or any(n.outputs[0].is_graph_output() for n in readers):
        return False
    perm = perms[0]
    assert perm is not None
    back = producer(v_out, "Transpose")
    if back is None or back.graph is not body or explicit_perm(back) != [perm.index(k) for k in range(len(perm))]:
        return False
    init = loop.inputs[body_in]
    if init is None:
        return False
    hint = loop.name or loop.op_type
    # before the loop: the initial value in the body's layout
    moved_init = oir.Value(name=fresh_name(names, f"{hint}/state{state}_transposed"), type=init.type)
    outer.insert_before(loop, inherit_meta(oir.Node("", "Transpose", [init], [oir.AttrInt64s("perm", perm)],
                                                   outputs=[moved_init],
                                                   name=fresh_name(names, f"{hint}/state{state}_transpose")), loop))
    loop.replace_input_with(body_in, moved_init)
    # in the body: the readers read the carried value itself; the body returns it untransposed
    new_in = oir.Value(name=fresh_name(names, f"{v_in.name}/transposed"), type=v_in.type)
    for n in readers:
        record(n.outputs[0], new_in)
        n.outputs[0].replace_all_uses_with(new_in, replace_graph_outputs=True)
        body.remove(n, safe=True)
    body.inputs[body_in] = new_in
    u = back.inputs[0]
    assert u is not None
    body.outputs[body_out] = distinct_output(u, body, names, f"{hint}/state{state}", loop)
    if not v_out.uses() and not v_out.is_graph_output():
        body.remove(back, safe=True)
    # after the loop: the final value back in the original layout, where it is read
    final = loop.outputs[state]
    if final.uses() or final.is_graph_output():
        restored = oir.Value(name=fresh_name(names, f"{final.name}/restored"), type=final.type, shape=final.shape)
        record(final, restored)
        final.replace_all_uses_with(restored, replace_graph_outputs=True)
        if restored.is_graph_output():
            restored.name, final.name = final.name, fresh_name(names, f"{final.name}/transposed")
        outer.insert_after(loop, inherit_meta(oir.Node("", "Transpose", [final], [oir.AttrInt64s("perm", explicit_perm(back))],
                                                      outputs=[restored],
                                                      name=fresh_name(names, f"{hint}/state{state}_restore")),
                                              loop))
    final.shape = None
    return True

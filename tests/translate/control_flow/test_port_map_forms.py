"""Port-map forms other producers write: body Parameters without a port_map input, TensorIterators with nothing
sliced or concatenated, sliced Parameters that are also back-edge targets. OpenVINO's CPU plugin is the reference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest
from lxml import etree

from ir2onnx.errors import IRValidationError
from ir2onnx.verify.openvino_ref import run_openvino
from tests.utils import assert_equivalent, convert_checked, rng_inputs, save_ir

F = np.float32
X23 = [((2, 3), F)]


def _loop_or_ti(kind: str, body_results: list[Any], body_params: list[Any], trip: int = 3) -> Any:
    """A Loop (constant trip count, condition always true, no current_iteration port) or a TensorIterator."""
    if kind == "loop":
        r_c = ops.result(ops.constant(True))
        op = ops.loop(ops.constant(np.int64(trip)), ops.constant(True))
        op.set_function(ov.Model([r_c, *body_results], body_params))
        op.set_special_body_ports([-1, 0])
        return op
    op = ops.tensor_iterator()
    op.set_body(ov.Model(body_results, body_params))
    return op


def _edit(xml: Path, fn: Any) -> Path:
    tree = etree.parse(str(xml))
    fn(tree.getroot())
    tree.write(str(xml))
    return xml


def _only(root: etree._Element, op_type: str) -> etree._Element:
    (layer,) = [la for la in root.find("layers") if la.get("type") == op_type]
    return layer


def _drop_input(root: etree._Element, op_type: str, external_port_id: str) -> None:
    """Remove the op's input `external_port_id`: its port_map entry, its port and the edge into it."""
    layer = _only(root, op_type)
    pm = layer.find("port_map")
    pm.remove(next(e for e in pm if e.tag == "input" and e.get("external_port_id") == external_port_id))
    ports = layer.find("input")
    ports.remove(next(p for p in ports if p.get("id") == external_port_id))
    edges = root.find("edges")
    edges.remove(next(e for e in edges
                      if e.get("to-layer") == layer.get("id") and e.get("to-port") == external_port_id))


def _add_back_edge(root: etree._Element, op_type: str, from_name: str, to_name: str) -> None:
    layer = _only(root, op_type)
    ids = {la.get("name"): la.get("id") for la in layer.find("body").find("layers")}
    be = layer.find("back_edges")
    if be is None:
        be = etree.SubElement(layer, "back_edges")
    etree.SubElement(be, "edge", {"from-layer": ids[from_name], "to-layer": ids[to_name]})


def _accumulate(kind: str, extra: Any, read_extra: bool) -> ov.Model:
    """state <- state * 0.5 + x (+ extra); `extra` is a body Parameter the port map never mentions."""
    X = ops.parameter([2, 3], F, name="X")
    bx = ops.parameter([2, 3], F, name="bx")
    bs = ops.parameter([2, 3], F, name="bs")
    ns = ops.add(ops.multiply(bs, ops.constant(F(0.5))), bx)
    if read_extra:
        ns = ops.add(ns, ops.convert(extra, F) if extra.get_element_type() != ov.Type.f32 else extra)
    r_s = ops.result(ns)
    r_e = ops.result(ops.add(ns, ops.constant(F(1))))
    op = _loop_or_ti(kind, [r_s, r_e], [bx, bs, extra])
    op.set_invariant_input(bx, X.output(0))
    op.set_merged_input(bs, X.output(0), r_s.output(0))
    return ov.Model([op.get_iter_value(r_s.output(0), -1), op.get_iter_value(r_e.output(0), -1)], [X])


@pytest.mark.parametrize("kind", ["loop", "tensor_iterator"])
@pytest.mark.parametrize("extra", [([], np.int64), ([1], np.int32), ([2, 3], F)], ids=["i64-scalar", "i32-1", "f32"])
def test_unmapped_unused_parameter(tmp_path: Path, kind: str, extra: tuple[list[int], Any]) -> None:
    """OpenVINO writes Loop bodies with an iteration-number Parameter that no port feeds and nothing reads."""
    model = _accumulate(kind, ops.parameter(extra[0], extra[1], name="extra"), read_extra=False)
    assert_equivalent(save_ir(model, tmp_path), rng_inputs(X23))


@pytest.mark.parametrize("kind", ["loop", "tensor_iterator"])
@pytest.mark.parametrize("extra", [([2, 3], F), ([1, 3], np.int32), ([], np.float16)], ids=["f32", "i32", "f16-scalar"])
def test_unmapped_parameter_that_is_read_is_zeros(tmp_path: Path, kind: str, extra: tuple[list[int], Any]) -> None:
    """OpenVINO's CPU plugin feeds such a Parameter zeros of its declared shape (same result for every input)."""
    model = _accumulate(kind, ops.parameter(extra[0], extra[1], name="extra"), read_extra=True)
    xml = save_ir(model, tmp_path)
    assert_equivalent(xml, rng_inputs(X23))
    plain = _accumulate(kind, ops.parameter(extra[0], extra[1], name="extra"), read_extra=False)
    x = rng_inputs(X23, seed=3)
    for got, want in zip(run_openvino(str(xml), x), run_openvino(str(save_ir(plain, tmp_path, "plain")), x)):
        np.testing.assert_array_equal(got, want)  # zeros: adding the Parameter changes nothing


def test_unmapped_parameter_with_a_back_edge_stays_zeros(tmp_path: Path) -> None:
    """A back edge to a Parameter without a port_map input is ignored: it is zeros on every iteration."""
    xml = save_ir(_accumulate("loop", ops.parameter([2, 3], F, name="extra"), read_extra=False), tmp_path)
    _edit(xml, lambda root: _drop_input(root, "Loop", "3"))  # the state's initial value: bs becomes unmapped
    ref = run_openvino(str(xml), [np.ones((2, 3), F)])
    np.testing.assert_array_equal(ref[0], np.ones((2, 3), F))  # 0 * 0.5 + x on the last iteration
    assert_equivalent(xml, [np.ones((2, 3), F)])
    assert_equivalent(xml, rng_inputs(X23))


def test_unmapped_parameter_of_dynamic_shape_is_refused(tmp_path: Path) -> None:
    model = _accumulate("loop", ops.parameter([-1, 3], F, name="extra"), read_extra=True)
    xml = save_ir(model, tmp_path)
    with pytest.raises(RuntimeError, match="non static shape"):
        run_openvino(str(xml), rng_inputs(X23))
    with pytest.raises(IRValidationError, match="'extra'.*no port_map input and a dynamic shape"):
        convert_checked(xml)


def _run_once_ti(extra_last: bool) -> ov.Model:
    X = ops.parameter([2, 3], F, name="X")
    Inv = ops.parameter([2, 3], F, name="I")
    bs = ops.parameter([2, 3], F, name="bs")
    bi = ops.parameter([2, 3], F, name="bi")
    ns = ops.add(ops.multiply(bs, ops.constant(F(2))), bi)
    r_s, r_t = ops.result(ns), ops.result(ops.tanh(ns))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_s, r_t], [bs, bi]))
    ti.set_merged_input(bs, X.output(0), r_s.output(0))
    ti.set_invariant_input(bi, Inv.output(0))
    outs = [ti.get_iter_value(r_s.output(0), -1)] + ([ti.get_iter_value(r_t.output(0), -1)] if extra_last else [])
    return ov.Model(outs, [X, Inv])


@pytest.mark.parametrize("extra_last", [False, True])
def test_tensor_iterator_without_sliced_or_concatenated_ports_runs_once(tmp_path: Path, extra_last: bool) -> None:
    xml = save_ir(_run_once_ti(extra_last), tmp_path)
    x, inv = np.ones((2, 3), F), np.full((2, 3), 0.5, F)
    np.testing.assert_array_equal(run_openvino(str(xml), [x, inv])[0], 2 * x + inv)  # one iteration
    assert_equivalent(xml, [x, inv])
    assert_equivalent(xml, rng_inputs(X23 * 2))


def test_tensor_iterator_identity_body_with_back_edge(tmp_path: Path) -> None:
    """OpenVINO's IR reader tests: body Parameter -> Result, merged by a back edge, one last-value output."""
    X = ops.parameter([1, 2, 3], F, name="X")
    p = ops.parameter([1, 2, 3], F, name="p")
    r = ops.result(p)
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r], [p]))
    ti.set_merged_input(p, X.output(0), r.output(0))
    assert_equivalent(save_ir(ov.Model([ti.get_iter_value(r.output(0), -1)], [X]), tmp_path),
                      rng_inputs([((1, 2, 3), F)]))


@pytest.mark.parametrize(("kind", "reverse"), [("tensor_iterator", False), ("tensor_iterator", True), ("loop", False)])
def test_sliced_parameter_with_back_edge(tmp_path: Path, kind: str, reverse: bool) -> None:
    """The back edge has no effect: the slice is fed on every iteration (OpenVINO's IR reader tests have this form).
    Loop slices forward only (OpenVINO accepts stride 1 only there)."""
    X = ops.parameter([2, 3, 4], F, name="X")
    bx = ops.parameter([2, 3, 1], F, name="bx")
    y = ops.add(ops.multiply(bx, ops.constant(F(2))), ops.constant(F(1)))
    r_y = ops.result(y)
    op = _loop_or_ti("loop" if kind == "loop" else "ti", [r_y], [bx], trip=4)
    start, stride, end = (-1, -1, 0) if reverse else (0, 1, -1)
    op.set_sliced_input(bx, X.output(0), start, stride, 1, end, 2)
    model = ov.Model([op.get_concatenated_slices(r_y.output(0), start, stride, 1, end, 2),
                      op.get_iter_value(r_y.output(0), -1)], [X])
    xml = save_ir(model, tmp_path)
    x = rng_inputs([((2, 3, 4), F)])
    plain = run_openvino(str(xml), x)
    op_type = "Loop" if kind == "loop" else "TensorIterator"
    _edit(xml, lambda root: _add_back_edge(root, op_type, r_y.get_friendly_name(), "bx"))
    assert "back_edges" in xml.read_text()
    for got, want in zip(run_openvino(str(xml), x), plain):
        np.testing.assert_array_equal(got, want)
    assert_equivalent(xml, x)


@pytest.mark.parametrize("read", [False, True])
def test_if_branch_with_unmapped_parameter(tmp_path: Path, read: bool) -> None:
    """If branches follow the same rule: zeros when read, dropped when not."""
    X = ops.parameter([2, 3], F, name="X")
    C = ops.parameter([], np.bool_, name="c")
    tx = ops.parameter([2, 3], F, name="tx")
    extra = ops.parameter([2, 3], F, name="extra")
    then_body = ov.Model([ops.result(ops.add(tx, extra) if read else ops.relu(tx))], [tx, extra])
    ex = ops.parameter([2, 3], F, name="ex")
    else_body = ov.Model([ops.result(ops.negative(ex))], [ex])
    op = ops.if_op(C)
    op.set_then_body(then_body)
    op.set_else_body(else_body)
    op.set_input(X.output(0), tx, ex)
    out = op.set_output(then_body.get_results()[0], else_body.get_results()[0])
    xml = save_ir(ov.Model([out], [X, C]), tmp_path)
    for cond in (True, False):
        assert_equivalent(xml, [rng_inputs(X23)[0], np.array(cond)])

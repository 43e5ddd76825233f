"""If-8: branches with different ops, inside a Loop body (conditional per iteration)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from tests.utils import check_model


def _if(cond: ov.Output, x: ov.Output) -> ov.Output:
    tx = ops.parameter([2], np.float32)
    ex = ops.parameter([2], np.float32)
    then_b = ov.Model([ops.result(ops.multiply(tx, ops.constant(np.float32(2))))], [tx])
    else_b = ov.Model([ops.result(ops.negative(ex))], [ex])
    node = ops.if_op(cond)
    node.set_then_body(then_b)
    node.set_else_body(else_b)
    node.set_input(x, tx, ex)
    return node.set_output(then_b.get_results()[0], else_b.get_results()[0])


@pytest.mark.parametrize("cond", [True, False])
def test_if(tmp_path: Path, cond: bool) -> None:
    X = ops.parameter([2], np.float32, name="X")
    C = ops.parameter([], np.bool_, name="C")
    check_model(ov.Model([_if(C.output(0), X.output(0))], [X, C]),
                [np.array([1.5, -2.0], np.float32), np.array(cond)], tmp_path)


def test_if_inside_loop(tmp_path: Path) -> None:
    """x = 2x on even iterations, -x on odd ones."""
    X = ops.parameter([2], np.float32, name="X")
    it = ops.parameter([], np.int64, name="it")
    bx = ops.parameter([2], np.float32, name="bx")
    even = ops.equal(ops.floor_mod(it, ops.constant(np.int64(2))), ops.constant(np.int64(0)))
    nx = _if(even.output(0), bx.output(0))
    r_c, r_x = ops.result(ops.constant(True)), ops.result(nx)
    loop = ops.loop(ops.constant(np.int64(5)), ops.constant(True))
    loop.set_function(ov.Model([r_c, r_x], [it, bx]))
    loop.set_special_body_ports([0, 0])
    loop.set_merged_input(bx, X.output(0), r_x.output(0))
    check_model(ov.Model([loop.get_iter_value(r_x.output(0), -1)], [X]), [np.array([1.5, -2.0], np.float32)],
                tmp_path)

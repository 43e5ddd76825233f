"""What OpenVINO re-derives on reading (ir.infer) and what it refuses (ir.validate), on hand-edited loop IRs.

Each accepted edit is checked against OpenVINO on the edited IR; each refused one gives a message naming the layer.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

import ir2onnx
from ir2onnx.errors import IRValidationError
from tests.translate.control_flow.builders import loop_model, ti_accumulate
from tests.utils import assert_equivalent, rng_inputs, save_ir

TI_INPUTS = rng_inputs([((2, 4, 3), np.float32), ((2, 3), np.float32)], 3)


def _ti(tmp_path: Path) -> tuple[Path, str]:
    xml = save_ir(ti_accumulate([2, 4, 3], 1, 0, -1, 1, 1), tmp_path)
    return xml, xml.read_text()


def _edit(xml: Path, text: str, old: str, new: str, count: int = 1) -> None:
    assert old in text, old
    xml.write_text(text.replace(old, new, count))


# (case, old, new): edits OpenVINO accepts and runs; the conversion must match it
ACCEPTED = [
    # output port precisions are ignored: OpenVINO infers every output type
    ("stale-output-precision", '<port id="2" precision="FP32">', '<port id="2" precision="FP16">'),
    # a body Parameter's declared shape is replaced by the outer input's (the chunk for a sliced input); OpenVINO
    # first validates the body with the declared shape, so only a shape the body accepts is a valid edit
    ("stale-sliced-parameter-shape", '<data shape="2,1,3" element_type="f32" />',
     '<data shape="2,2,3" element_type="f32" />'),
    # a TensorIterator has no special ports: `purpose` in its port map means nothing
    ("tensor-iterator-purpose", '<input external_port_id="1" internal_layer_id="1" />',
     '<input external_port_id="1" internal_layer_id="1" purpose="current_iteration" />'),
]


@pytest.mark.parametrize(("case", "old", "new"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_stale_ir_converted_as_openvino_reads_it(tmp_path: Path, case: str, old: str, new: str) -> None:
    xml, text = _ti(tmp_path)
    _edit(xml, text, old, new)
    assert_equivalent(xml, TI_INPUTS)


def test_loop_current_iteration_that_also_reads_an_input(tmp_path: Path) -> None:
    xml = save_ir(loop_model(3, True), tmp_path)
    text = xml.read_text()
    m = re.search(r'<input external_port_id="2" internal_layer_id="(\d+)" />', text)
    assert m is not None
    _edit(xml, text, m.group(0), m.group(0).replace(" />", ' purpose="current_iteration" />'))
    with pytest.raises(IRValidationError, match=r"Loop.*current iteration and also reads input 2"):
        ir2onnx.convert(xml)


# (case, old, new, message): edits OpenVINO refuses (or cannot run) and so does ir2onnx
REFUSED = [
    ("concat-output-stride-0", 'end="-1" stride="1" part_size="1" />\n\t\t\t\t<output external_port_id="4"',
     'end="-1" stride="0" part_size="1" />\n\t\t\t\t<output external_port_id="4"', "port_map output .* stride != 0"),
    ("concat-output-axis", '<output axis="1" external_port_id="3"', '<output axis="5" external_port_id="3"',
     "axis 5 is out of range"),
    ("float-axes", '<data element_type="i64" shape="1" offset="4" size="8" />',
     '<data element_type="f64" shape="1" offset="4" size="8" />', "must be an integer tensor.*not f64"),
    ("nf4-outside-convert", '<data element_type="i64" shape="1" offset="4" size="8" />',
     '<data element_type="nf4" shape="1" offset="4" size="8" />', "nf4 Const holds compressed weights"),
    ("unknown-parameter-type", '<data shape="2,3" element_type="f32" />', '<data shape="2,3" element_type="q7" />',
     "unknown element type 'q7'"),
]


@pytest.mark.parametrize(("case", "old", "new", "message"), REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_as_openvino_refuses(tmp_path: Path, case: str, old: str, new: str, message: str) -> None:
    xml, text = _ti(tmp_path)
    _edit(xml, text, old, new)
    with pytest.raises(IRValidationError, match=message) as info:
        ir2onnx.convert_file(xml, tmp_path / "out.onnx")
    assert "line " in str(info.value)
    assert not (tmp_path / "out.onnx").exists()


@pytest.mark.parametrize(("trip", "body_cond", "stale"), [(None, "true", True), (5, "data", True), (3, "true", False)],
                         ids=["run-time-count", "data-dependent-stop", "fixed-count"])
def test_loop_concatenation_size_is_not_taken_from_a_stale_ir(tmp_path: Path, trip: int | None, body_cond: str,
                                                              stale: bool) -> None:
    """Model Optimizer wrote one iteration's size on a Loop's concatenated output whose count is known only at run
    time (an arange Loop of a YOLOv3 IR: `<dim>1</dim>` for 5 values). OpenVINO re-infers it as dynamic; so does
    the conversion, instead of declaring the stale 1 (onnxruntime then warns of the mismatch at every run). A
    constant count with a constant-true condition keeps its static size, as OpenVINO infers it."""
    xml = save_ir(loop_model(trip, True, body_cond=body_cond, limit=40.0), tmp_path)
    text = xml.read_text()
    if stale:
        assert "<dim>-1</dim>" in text
        xml.write_text(text.replace("<dim>-1</dim>", "<dim>1</dim>"))
    inputs = [np.arange(6, dtype=np.float32).reshape(2, 3)] + ([np.array(4, np.int64)] if trip is None else [])
    proto = assert_equivalent(xml, inputs)
    concat = proto.graph.output[1].type.tensor_type.shape.dim
    if stale:
        assert not concat[0].HasField("dim_value"), concat
    else:
        assert concat[0].dim_value == 3, concat


def test_loop_with_its_condition_carried_unchanged_keeps_its_size(tmp_path: Path) -> None:
    """A constant trip count whose body condition is the initial (constant true) one carried through a back edge, as
    an arange Loop of a YOLOv3 IR has it: every trip runs, so the concatenated size is static, as OpenVINO infers."""
    start = ops.parameter([], np.int32, name="start")
    cond_in, prev = ops.parameter([], np.bool_), ops.parameter([], np.int32)
    r_cond, r_next = ops.result(cond_in), ops.result(ops.add(prev, ops.constant(np.int32(2))))
    r_y = ops.result(ops.unsqueeze(prev, ops.constant(np.int64(0))))
    loop = ops.loop(ops.constant(np.int64(5)), ops.constant(True))
    loop.set_function(ov.Model([r_cond, r_next, r_y], [cond_in, prev]))
    loop.set_special_body_ports([-1, 0])
    loop.set_merged_input(cond_in, ops.constant(True).output(0), r_cond.output(0))
    loop.set_merged_input(prev, start.output(0), r_next.output(0))
    y = loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0)
    xml = save_ir(ov.Model([y], [start]), tmp_path)
    proto = assert_equivalent(xml, [np.array(3, np.int32)])
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_value == 5


def test_split_of_a_loop_output_reads_its_size_where_the_ir_is_stale(tmp_path: Path) -> None:
    """A VariadicSplit with run-time lengths over a Loop's concatenated output, the Loop's count known at run time
    and the IR declaring one iteration's size (Model Optimizer's stale `<dim>1</dim>`): the -1 is what the other
    lengths leave of the run-time size, not of the declared 1."""
    start, trip = ops.parameter([], np.int32, name="start"), ops.parameter([], np.int64, name="trip")
    lengths = ops.parameter([2], np.int64, name="lengths")
    prev = ops.parameter([], np.int32)
    r_cond, r_next = ops.result(ops.constant(True)), ops.result(ops.add(prev, ops.constant(np.int32(2))))
    r_y = ops.result(ops.unsqueeze(prev, ops.constant(np.int64(0))))
    loop = ops.loop(trip, ops.constant(True))
    loop.set_function(ov.Model([r_cond, r_next, r_y], [prev]))
    loop.set_special_body_ports([-1, 0])
    loop.set_merged_input(prev, start.output(0), r_next.output(0))
    y = loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0)
    split = ops.variadic_split(y, ops.constant(np.int64(0)), lengths)
    xml = save_ir(ov.Model(split.outputs(), [start, trip, lengths]), tmp_path)
    text = xml.read_text()
    assert "<dim>-1</dim>" in text
    xml.write_text(text.replace("<dim>-1</dim>", "<dim>1</dim>"))
    assert_equivalent(xml, [np.array(3, np.int32), np.array(4, np.int64), np.array([-1, 1], np.int64)])

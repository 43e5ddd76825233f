"""passes/pipeline.py: the options select stages there alone, every pass can be left out, and the layer map follows
the values a ReplacingPass replaces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx_ir as oir
import pytest

import ir2onnx
from ir2onnx.errors import ConversionError
from ir2onnx.passes import pipeline
from ir2onnx.passes.replacing import ReplacingPass
from ir2onnx.translate import layer_map
from tests.utils import assert_equivalent

TI = Path(__file__).resolve().parents[2] / "samples" / "ti_lstm" / "model.xml"
OPTIMISED = ["fusion", "fusion after moving work", "sequence clean-up", "lean loops", "quantized layout", "clean-up"]
CW = "compressed weights"


@pytest.mark.parametrize(("options", "expected"), [
    (pipeline.Options(), [CW, "types", *OPTIMISED[:3], "CPU RNN lowering", "lean loops", "CPU recurrent kernels",
                          "quantized layout", "clean-up", "runtime legalisation"]),
    (pipeline.Options(device="cuda"), [CW, "types", *OPTIMISED, "runtime legalisation"]),
    (pipeline.Options(optimize=False, fuse=False), ["types", "runtime legalisation"]),
    (pipeline.Options(optimize=False), ["types", "fusion", "runtime legalisation"]),
    (pipeline.Options(fuse=False, device="cuda"), [CW, "types", *OPTIMISED[2:], "runtime legalisation"]),
    (pipeline.Options(optimize=False, fuse=False, f16_as_f32=True), ["f16 as f32", "types", "runtime legalisation"]),
    (pipeline.Options(device="cuda", skip=frozenset({"lean loops", "fusion after moving work"})),
     [CW, "types", "fusion", "sequence clean-up", "quantized layout", "clean-up", "runtime legalisation"]),
], ids=["default", "cuda", "plain", "no-optimize", "no-fuse-cuda", "f16-as-f32", "skip-stages"])
def test_options_select_stages(options: pipeline.Options, expected: list[str]) -> None:
    assert [s.name for s in pipeline.stages(options)] == expected


def test_a_skipped_pass_is_left_out_of_its_stage_and_rounds() -> None:
    skip = frozenset({"FuseRecurrentLoopsPass", "HoistLoopInvariantsPass"})
    stages = pipeline.stages(pipeline.Options(skip=skip))
    names = [pipeline.pass_name(m) for s in stages
             for r in (s.rounds if isinstance(s, pipeline.FuseAfterMovingWork) else [s]) for m in r.passes]
    assert not skip & set(names)
    assert "LiftLoopInputsPass" in names and "PrefixMaskPass" in names
    full = pipeline.stages(pipeline.Options())
    assert [pipeline.pass_name(m) for m in full[2].passes] == ["FullScatterPass", "SplitStackedCellsPass",
                                                               "FuseRecurrentLoopsPass"]  # the declared one intact


def test_every_pass_is_named_once_per_place_and_unknown_names_are_refused() -> None:
    assert {"FuseRecurrentLoopsPass", "GRUAsScanPass", "lean loops", "OrtTypesPass"} <= pipeline.names()
    with pytest.raises(ConversionError, match="unknown pass or stage 'NoSuchPass'"):
        ir2onnx.convert(TI, skip_passes=["NoSuchPass"])


def test_skipping_fusion_keeps_the_loop_and_what_it_computes() -> None:
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((1, 25, 64)).astype(np.float32), np.zeros((1, 32), np.float32),
              np.zeros((1, 32), np.float32)]
    fused = assert_equivalent(TI, inputs)
    kept = assert_equivalent(TI, inputs, skip_passes=["FuseRecurrentLoopsPass"])
    assert "LSTM" in {n.op_type for n in fused.graph.node}
    assert "LSTM" not in {n.op_type for n in kept.graph.node}
    assert "Scan" in {n.op_type for n in kept.graph.node}


class _DoubleNegation(ReplacingPass):
    """Replaces every graph output's producer's output by Neg(Neg(it)): a new value computing the same."""

    def call(self, model: oir.Model) -> oir.passes.PassResult:
        for v in list(model.graph.outputs):
            node = v.producer()
            if node is None:
                continue
            first = oir.Node("", "Neg", [v], name=f"{node.name}/neg1")
            second = oir.Node("", "Neg", [first.outputs[0]], name=f"{node.name}/neg2")
            model.graph.insert_after(node, [first, second])
            new = second.outputs[0]
            new.dtype, new.shape = v.dtype, v.shape
            self.replaced[v] = new
        return oir.passes.PassResult(model, bool(self.replaced))


def test_the_layer_map_follows_what_a_replacing_pass_replaced() -> None:
    model = ir2onnx.convert_to_ir(TI, optimize=False, fuse=False)
    values = model.meta["ir2onnx.layer_values"]
    before = dict(values)
    stage = pipeline.Stage("test", (_DoubleNegation,))
    stage(model)
    moved = [k for k in values if values[k] is not before[k]]
    assert moved, "no layer's value followed the replacement"
    assert all(values[k].producer().op_type == "Neg" for k in moved)
    assert {k: v for k, v in layer_map.read(model.metadata_props).items() if k in moved} == \
        {k: values[k].name for k in moved}

"""The one declared sequence of ONNX passes run after translation.

A conversion runs the stages below, in order, on the translated model; the options select stages here and nowhere
else:

| stage | runs when | what for |
| --- | --- | --- |
| f16 as f32 | `f16_as_f32` | the IR's f16 computation in f32, as OpenVINO's CPU plugin runs it |
| compressed weights | `optimize` | integer weights' decompression chains as one DequantizeLinear |
| static shapes | `static_inputs` | shape arithmetic that given input shapes make constant, folded |
| types | always | element types onnxruntime's CPU kernels take |
| fusion | `fuse` | loops running one LSTM/GRU/RNN cell become one ONNX LSTM/GRU/RNN node |
| fusion after moving work | `fuse` and `optimize` | fusion tried again once per-step work is moved out of loops |
| sequence clean-up | `optimize` | full scatters, full-length `sequence_lens` and reversals in their plain form |
| CPU RNN lowering | `optimize`, device "cpu" | onnxruntime's RNN kernel is slow: a Scan instead |
| lean loops | `optimize` | per-step work moved out of loops, loop-carried layouts and glue simplified |
| CPU recurrent kernels | `optimize`, device "cpu" | long sequences chunked, GRUs at larger batches as Scans |
| quantized layout | `optimize` | quantized values in the groups onnxruntime runs in integers (QLinearConv, ...) |
| clean-up | `optimize` | unused nodes and initializers removed, fresh names made unique |
| runtime legalisation | always | what onnxruntime needs to run the model (empty inputs, empty reductions, quantized outer reads) |
| static shapes, last | `static_inputs` | the same, after the passes; every value's static shape |
| portable | `portable` | forms every ONNX consumer reads (passes/portable/); with it, no CPU-only stage runs |

Each pass keeps what the model computes; the plain translation (`optimize=False, fuse=False`: types and runtime
legalisation only, and the static shapes stages where input shapes were given) stays simple and correct without them.
The layer map (translate/layer_map.py, which ONNX value carries each IR layer's output) follows every value a pass
replaces: those the rewriting toolkit (rewrite.py) replaces, recorded as they happen, and those a `ReplacingPass`
declares.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import onnx_ir as oir
from onnx_ir.passes.common.naming import NameFixPass  # from the modules: see ir2onnx._lazy.defer_unused
from onnx_ir.passes.common.unused_removal import RemoveUnusedNodesPass

from ir2onnx.passes.analysis.graph import LOOP_OPS, all_nodes
from ir2onnx.passes.compressed_weights import DequantizeWeightsPass
from ir2onnx.passes.empty_inputs import GuardEmptyInputsPass
from ir2onnx.passes.empty_reduce import EmptyReductionsPass
from ir2onnx.passes.f16_as_f32 import F16AsF32Pass
from ir2onnx.passes.full_scatter import FullScatterPass
from ir2onnx.passes.hoist import HoistLoopInvariantsPass
from ir2onnx.passes.identity import RemoveIdentityPass
from ir2onnx.passes.lift_inputs import LiftLoopInputsPass, SliceReadsAsGathersPass
from ir2onnx.passes.loop_condition import LoopConditionPass
from ir2onnx.passes.ort_types import OrtTypesPass
from ir2onnx.passes.portable import (
    BodyInputShapesPass,
    CastLikeAsCastPass,
    EmptyConstantsPass,
    ExplicitPadsPass,
    ForwardScanAxesPass,
    KnownIfsPass,
    LowestOpsetPass,
    ReshapeWithoutAllowZeroPass,
    ScanCapturesAsStatesPass,
)
from ir2onnx.passes.quantized_layout import QuantizedLayoutPass
from ir2onnx.passes.quantized_reads import QuantizedImplicitReadsPass
from ir2onnx.passes.recurrent.chunk_rnn import ChunkRecurrentPass
from ir2onnx.passes.recurrent.full_lengths import DropFullSequenceLensPass, FullReversalPass
from ir2onnx.passes.recurrent.fuse import FuseRecurrentLoopsPass
from ir2onnx.passes.recurrent.gru_scan import GRUAsScanPass
from ir2onnx.passes.recurrent.prefix_mask import PrefixMaskPass
from ir2onnx.passes.recurrent.rnn_scan import RNNAsScanPass
from ir2onnx.passes.recurrent.split_cells import SplitStackedCellsPass
from ir2onnx.passes.replacing import ReplacingPass
from ir2onnx.passes.reshape_chains import CollapseReshapeChainsPass
from ir2onnx.passes.rewrite import recording
from ir2onnx.passes.sibling_convs import MergeSiblingConvsPass
from ir2onnx.passes.sink_outputs import SinkStepOutputsPass
from ir2onnx.passes.stacked_outputs import StackedOutputsPass
from ir2onnx.passes.state_layout import CarriedLayoutPass
from ir2onnx.passes.static_shapes import FoldStaticShapesPass
from ir2onnx.passes.tensor_lists import TensorListOutputsPass
from ir2onnx.passes.unused_initializers import RemoveUnusedSubgraphInitializersPass
from ir2onnx.translate import layer_map

DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class Options:
    """What a conversion asks of the pipeline (the API's and the command line's options of the same names)."""

    optimize: bool = True
    fuse: bool = True
    device: str = "cpu"
    f16_as_f32: bool = False
    skip: frozenset[str] = frozenset()  # passes (class names) or stages left out: to find which one changes a result
    limit: int | None = None  # run only the first `limit` optimising passes (the bisection of verify/bisect.py)
    static_inputs: bool = False  # input shapes were given (ir2onnx/input_shapes.py): fold what they make constant
    portable: bool = False  # forms every ONNX consumer reads, and device-neutral (passes/portable/)


# stages that are not optimisations: `Options.limit` does not count or stop them
ALWAYS = ("f16 as f32", "static shapes", "types", "runtime legalisation", "static shapes, last", "portable")
APPLIED = "ir2onnx.passes_applied"  # model.meta: (stage, pass) of every optimising pass run, in order
_BUDGET = "ir2onnx.pass_budget"


PassFactory = Callable[[], oir.passes.PassBase]


class Stage(oir.passes.InPlacePass):
    """Passes run in order, each made afresh; the layer map follows the values a `ReplacingPass` replaced."""

    def __init__(self, name: str, passes: Sequence[PassFactory]) -> None:
        super().__init__()
        self.name = name
        self.passes = tuple(passes)

    def call(self, model: oir.Model) -> oir.passes.PassResult:
        modified = False
        counted = self.name not in ALWAYS
        for make in self.passes:
            if counted:
                budget = model.meta.get(_BUDGET)
                if budget is not None:
                    if budget[0] <= 0:
                        continue
                    budget[0] -= 1
                model.meta.setdefault(APPLIED, []).append((self.name, pass_name(make)))
            p = make()
            with recording() as replaced:  # what the rewriting toolkit replaced
                modified = p(model).modified or modified
            if isinstance(p, ReplacingPass):
                replaced.update(p.replaced)
            layer_map.substitute(model, replaced)
        return oir.passes.PassResult(model, modified)

    def without(self, skip: frozenset[str]) -> Stage:
        """This stage without the passes named in `skip` (itself when none is)."""
        kept = tuple(m for m in self.passes if pass_name(m) not in skip)
        return self if len(kept) == len(self.passes) else Stage(self.name, kept)

    def __repr__(self) -> str:
        return f"Stage({self.name!r}, {[pass_name(m) for m in self.passes]})"


def pass_name(make: PassFactory) -> str:
    return getattr(make, "__name__", type(make).__name__)


class FuseAfterMovingWork(Stage):
    """A body that computes its per-step output from the new state (tanh(h_t @ W_o)), or projects or activates its
    slice before the cell (x_t @ W + b -> Relu -> LSTMCell), holds the cell alone once SinkStepOutputsPass, then
    LiftLoopInputsPass, have moved that work out (the reads left behind removed): fusion is tried after each round.
    Sinking comes first: a cell spelled out with its input projection matches only while the projection is in the
    body. This runs before the other optimisations (RNNAsScanPass lowers the one-step RNN of a body, which would hide
    the cell). A round runs only while the model still holds a loop."""

    def __init__(self, name: str, rounds: Sequence[Sequence[PassFactory]]) -> None:
        super().__init__(name, ())
        self.rounds = [Stage(f"{name} round {i + 1}",
                             (*r, RemoveUnusedNodesPass, FuseRecurrentLoopsPass, PrefixMaskPass))
                       for i, r in enumerate(rounds)]

    def without(self, skip: frozenset[str]) -> Stage:
        if not any(pass_name(m) in skip for r in self.rounds for m in r.passes):
            return self
        out = FuseAfterMovingWork(self.name, ())
        out.rounds = [r.without(skip) for r in self.rounds]
        return out

    def call(self, model: oir.Model) -> oir.passes.PassResult:
        modified = False
        for stage in self.rounds:
            if not any(n.op_type in LOOP_OPS for n in all_nodes(model.graph)):
                break
            modified = stage(model).modified or modified
        return oir.passes.PassResult(model, modified)


@dataclass(frozen=True)
class Step:
    """A stage of the pipeline and the options it runs under."""

    stage: Stage
    when: Callable[[Options], bool]


def _always(_: Options) -> bool:
    return True


def _on_cpu(o: Options) -> bool:
    return o.optimize and o.device == "cpu" and not o.portable


PIPELINE: tuple[Step, ...] = (
    Step(Stage("f16 as f32", (
        F16AsF32Pass,  # the IR's f16 computation in f32, as OpenVINO's CPU plugin runs it
    )), lambda o: o.f16_as_f32),
    Step(Stage("compressed weights", (DequantizeWeightsPass,)), lambda o: o.optimize),  # before types: see the pass
    Step(Stage("static shapes", (
        FoldStaticShapesPass,  # given input shapes: shape arithmetic folded, before the passes read the shapes
    )), lambda o: o.static_inputs),
    Step(Stage("types", (
        OrtTypesPass,  # element types onnxruntime's CPU kernels lack computed in a wider type, exactly
    )), _always),
    Step(Stage("fusion", (
        FullScatterPass,  # a ScatterND overwriting every row of a fresh buffer with one tensor's rows is that tensor
        SplitStackedCellsPass,  # a Scan running several cells one after another as one Scan per cell
        FuseRecurrentLoopsPass,  # a loop running one LSTM/GRU/RNN cell over a sequence as one ONNX node
    )), lambda o: o.fuse),
    Step(FuseAfterMovingWork("fusion after moving work", (
        (RemoveIdentityPass, HoistLoopInvariantsPass, SinkStepOutputsPass, SplitStackedCellsPass,
         SliceReadsAsGathersPass),
        (LiftLoopInputsPass,),
    )), lambda o: o.fuse and o.optimize),
    Step(Stage("sequence clean-up", (
        FullScatterPass,
        DropFullSequenceLensPass,  # sequence_lens that mean every step (PyTorch frontend) dropped, for the passes below
        FullReversalPass,  # a ReverseSequence over every row's whole length is a Slice with step -1 (Keras Bidirectional)
    )), lambda o: o.optimize),
    Step(Stage("CPU RNN lowering", (
        RNNAsScanPass,  # onnxruntime's RNN kernel is slow: a Scan over MatMul + Add + activation instead
    )), _on_cpu),
    Step(Stage("lean loops", (
        RemoveIdentityPass,  # no Identity chains
        HoistLoopInvariantsPass,  # loop-invariant nodes computed once, before the loop
        LiftLoopInputsPass,  # per-slice work on sliced inputs (input projections) batched before the loop
        HoistLoopInvariantsPass,  # what lifting out of an inner loop made invariant in an outer one
        MergeSiblingConvsPass,  # convolutions of one input (a gated convolutional cell's gates) as one, split after
        TensorListOutputsPass,  # a carried buffer written one row per iteration returned as a scan output
        CarriedLayoutPass,  # a state the body transposes in and out carried in the body's layout
        SinkStepOutputsPass,  # per-step work feeding only a stacked output done once, on the stacked tensor
        StackedOutputsPass,  # per-iteration values stacked without their unit slice axis, added once after the loop
        LoopConditionPass,  # a Loop body's constant-true condition output returns its condition input
        CollapseReshapeChainsPass,  # reshape-only glue with static shapes merged; Transposes of unit axes reduced
    )), lambda o: o.optimize),
    Step(Stage("CPU recurrent kernels", (
        ChunkRecurrentPass,  # long LSTM/GRU sequences as a chain of cache-sized nodes; bidirectional ones split
        GRUAsScanPass,  # at larger batches onnxruntime's GRU kernel is slower than a Scan over Gemm + gate arithmetic
    )), _on_cpu),
    Step(Stage("quantized layout", (
        QuantizedLayoutPass,  # Q/DQ groups onnxruntime runs in integers: biases into Convs, grids kept after moves
    )), lambda o: o.optimize),
    Step(Stage("clean-up", (
        RemoveUnusedNodesPass,  # nodes nothing reads, bodies included
        RemoveUnusedSubgraphInitializersPass,  # bodies' and branches' initializers nothing reads any more
        NameFixPass,  # new values get names unique across the model
    )), lambda o: o.optimize),
    Step(Stage("runtime legalisation", (
        GuardEmptyInputsPass,  # onnxruntime fails on some empty inputs: such nodes run behind an If
        EmptyReductionsPass,  # and on reductions dropping an empty axis
        QuantizedImplicitReadsPass,  # and aborts on quantized values a subgraph reads from outside
    )), _always),
    Step(Stage("static shapes, last", (
        FoldStaticShapesPass,  # what the passes left foldable, and every value's static shape
    )), lambda o: o.static_inputs),
    Step(Stage("portable", (
        CastLikeAsCastPass,  # CastLike as Cast to the type it reads
        ReshapeWithoutAllowZeroPass,  # allowzero only where the shape may hold a 0 read otherwise without it
        ExplicitPadsPass,  # SAME_UPPER/SAME_LOWER as pads (or a Pad); pooling pads the same on both sides
        KnownIfsPass,  # an If whose condition the shapes decide (an empty-input guard) as its branch
        ScanCapturesAsStatesPass,  # a Scan body reads no outer value: each is carried as a state
        ForwardScanAxesPass,  # Scans slice and stack forward on axis 0: Transposes and reversals outside
        BodyInputShapesPass,  # Loop and Scan body inputs declare the shapes known for them
        EmptyConstantsPass,  # constants without elements as ConstantOfShape (OpenVINO reads them as scalars)
        LowestOpsetPass,  # the lowest opset at which every node means the same
    )), lambda o: o.portable),
)

def stages(options: Options) -> list[Stage]:
    """The stages a conversion with `options` runs, in order."""
    if options.device not in DEVICES:
        raise ValueError(f"unknown device '{options.device}' (cpu or cuda)")
    return [s.stage.without(options.skip) for s in PIPELINE if s.when(options) and s.stage.name not in options.skip]


def names() -> frozenset[str]:
    """The names `Options.skip` takes: every stage's, and every pass's (class name)."""
    out: set[str] = set()
    for s in PIPELINE:
        out.add(s.stage.name)
        rounds = s.stage.rounds if isinstance(s.stage, FuseAfterMovingWork) else [s.stage]
        out.update(pass_name(m) for r in rounds for m in r.passes)
    return frozenset(out)


def run(model: oir.Model, options: Options = Options(), *, only: Sequence[str] | None = None) -> None:
    """Run the pipeline for `options` on `model`, in place (`only`: just the stages of those names, in pipeline
    order). `model.meta[APPLIED]` lists the optimising passes run."""
    model.meta[APPLIED] = []
    if options.limit is not None:
        model.meta[_BUDGET] = [options.limit]
    try:
        for s in stages(options):
            if only is None or s.name in only:
                s(model)
    finally:
        model.meta.pop(_BUDGET, None)


OPTIMISATIONS = ("sequence clean-up", "CPU RNN lowering", "lean loops", "CPU recurrent kernels", "quantized layout",
                 "clean-up")


def optimize(model: oir.Model, *, device: str = "cpu") -> None:
    """The optimisation stages alone (no fusion, no type or runtime legalisation): what tests of one optimisation
    run on a model built for them."""
    run(model, Options(device=device), only=OPTIMISATIONS)

"""ONNX-level passes applied after translation.

Recurrent fusion (`fuse=True`, default; `fuse=False` / `--no-fuse` keeps the loops) runs first; then the default
optimisations (`optimize=False` / `--no-optimize` skips them). Each pass keeps what the model computes; the plain
translation stays simple and correct without them. Three of them work around onnxruntime's CPU kernels for RNN
and GRU nodes and are left out for a model converted for CUDA (`device="cuda"`), whose cuDNN kernels run the fused
nodes faster than the Scans they would become.
"""

from __future__ import annotations

import onnx_ir as ir
from onnx_ir.passes.common.naming import NameFixPass  # from the modules: see ir2onnx._lazy.defer_unused
from onnx_ir.passes.common.unused_removal import RemoveUnusedNodesPass

from ir2onnx.passes.chunk_rnn import ChunkRecurrentPass
from ir2onnx.passes.full_lengths import DropFullSequenceLensPass, FullReversalPass
from ir2onnx.passes.full_scatter import FullScatterPass
from ir2onnx.passes.fuse_rnn import FuseRecurrentLoopsPass
from ir2onnx.passes.gru_scan import GRUAsScanPass
from ir2onnx.passes.hoist import HoistLoopInvariantsPass
from ir2onnx.passes.identity import RemoveIdentityPass
from ir2onnx.passes.lift_inputs import LiftLoopInputsPass, SliceReadsAsGathersPass
from ir2onnx.passes.loop_condition import LoopConditionPass
from ir2onnx.passes.loop_utils import LOOP_OPS, all_nodes
from ir2onnx.passes.prefix_mask import PrefixMaskPass
from ir2onnx.passes.reshape_chains import CollapseReshapeChainsPass
from ir2onnx.passes.rnn_scan import RNNAsScanPass
from ir2onnx.passes.sibling_convs import MergeSiblingConvsPass
from ir2onnx.passes.sink_outputs import SinkStepOutputsPass
from ir2onnx.passes.split_cells import SplitStackedCellsPass
from ir2onnx.passes.stacked_outputs import StackedOutputsPass
from ir2onnx.passes.state_layout import CarriedLayoutPass
from ir2onnx.passes.tensor_lists import TensorListOutputsPass
from ir2onnx.passes.unused_initializers import RemoveUnusedSubgraphInitializersPass

DEFAULT_PASSES = (
    FullScatterPass,  # a ScatterND overwriting every row of a fresh buffer with one tensor's rows is that tensor
    DropFullSequenceLensPass,  # sequence_lens that mean every step (PyTorch frontend) dropped, for the passes below
    FullReversalPass,  # a ReverseSequence over every row's whole length is a Slice with step -1 (Keras Bidirectional)
    RNNAsScanPass,  # onnxruntime's RNN kernel is slow: a Scan over MatMul + Add + activation instead
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
    ChunkRecurrentPass,  # long LSTM/GRU sequences as a chain of cache-sized nodes; bidirectional ones split
    GRUAsScanPass,  # at larger batches onnxruntime's GRU kernel is slower than a Scan over Gemm + gate arithmetic
    RemoveUnusedNodesPass,  # nodes nothing reads, bodies included
    RemoveUnusedSubgraphInitializersPass,  # bodies' and branches' initializers nothing reads any more
    NameFixPass,  # new values get names unique across the model
)
CPU_ONLY_PASSES = (RNNAsScanPass, ChunkRecurrentPass, GRUAsScanPass)


def apply_default_passes(model: ir.Model, *, fuse: bool = False, device: str = "cpu") -> None:
    """Apply the default passes in place (for a model to run on `device`: "cpu" or "cuda"). `fuse`: loops the
    recurrent fusion left are tried again first, once the per-step work around their cell has been moved out of
    them."""
    if fuse:
        _fuse_after_moving_work(model)
    for make in DEFAULT_PASSES:
        if device == "cpu" or make not in CPU_ONLY_PASSES:
            make()(model)


def _fuse_after_moving_work(model: ir.Model) -> None:
    """A body that computes its per-step output from the new state (tanh(h_t @ W_o)), or projects or activates its
    slice before the cell (x_t @ W + b -> Relu -> LSTMCell), holds the cell alone once SinkStepOutputsPass, then
    LiftLoopInputsPass, have moved that work out (the reads left behind removed): fusion is tried after each. Sinking
    comes first: a cell spelled out with its input projection matches only while the projection is in the body.
    This runs before the other passes (RNNAsScanPass lowers the one-step RNN of a body, which would hide the cell)."""
    for stage in ((RemoveIdentityPass, HoistLoopInvariantsPass, SinkStepOutputsPass, SplitStackedCellsPass,
                   SliceReadsAsGathersPass),
                  (LiftLoopInputsPass,)):
        if not any(n.op_type in LOOP_OPS for n in all_nodes(model.graph)):
            return
        for make in (*stage, RemoveUnusedNodesPass, FuseRecurrentLoopsPass, PrefixMaskPass):
            make()(model)


def fuse_recurrent(model: ir.Model) -> None:
    """Replace loops that run one LSTM/GRU/RNN cell over a sequence with one ONNX LSTM/GRU/RNN node, in place; a Scan
    running several cells one after another is first split into one Scan per cell."""
    FullScatterPass()(model)
    SplitStackedCellsPass()(model)
    FuseRecurrentLoopsPass()(model)

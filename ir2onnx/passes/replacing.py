"""The contract of a pass that replaces values: the pipeline makes the layer map follow what it replaced."""

from __future__ import annotations

import onnx_ir as oir


class ReplacingPass(oir.passes.InPlacePass):
    """An in-place pass that replaces values by others computing the same. After a call, `replaced` maps each value
    it replaced to the value computing it now; the pipeline (passes/pipeline.py) hands that to the layer map, so a
    layer-by-layer check still finds every IR layer's output."""

    def __init__(self) -> None:
        super().__init__()
        self.replaced: dict[oir.Value, oir.Value] = {}

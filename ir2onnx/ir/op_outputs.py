"""How many outputs an op has, whatever its layer declares.

A producer may leave an unused output port out of a layer (an old IR's ExperimentalDetectronROIFeatureExtractor
declaring its features but not its rois). OpenVINO still builds the op with all its outputs, and the count shows in
an IR v10's legacy output names: `name` for an op of one output, `name.index` for one of several.
"""

from __future__ import annotations

import functools
import re

from ir2onnx.ir.model import Layer

# op type (lower case) -> (the first opset whose op has that many outputs, the count); ops of one output left out
_COUNTS: dict[str, tuple[int, int]] = {
    "adaptivemaxpool": (8, 2),
    "ctcgreedydecoderseqlen": (6, 2),
    "experimentaldetectrondetectionoutput": (6, 3),
    "experimentaldetectrongenerateproposalssingleimage": (6, 2),
    "experimentaldetectronroifeatureextractor": (6, 2),
    "generateproposals": (9, 3),
    "grusequence": (5, 2),
    "lstmcell": (1, 2),
    "lstmsequence": (1, 3),
    "matrixnms": (8, 3),
    "maxpool": (8, 2),
    "multiclassnms": (8, 3),
    "nmsrotated": (13, 3),
    "nonmaxsuppression": (5, 3),
    "proposal": (4, 2),
    "rnnsequence": (5, 2),
    "topk": (1, 2),
    "unique": (10, 4),
}


@functools.cache  # a network has a few distinct versions and many layers
def _opset(version: str) -> int:
    """The opset number of a layer's `version` (OpenVINO reads `experimental` and `extension` ops as opset6)."""
    m = re.fullmatch(r"\s*opset(\d+)\s*", version)
    if m:
        return int(m.group(1))
    return 6 if version.strip() in ("experimental", "extension") else 1


def output_count(layer: Layer) -> int:
    """The number of outputs OpenVINO gives `layer`'s op: its declared ports, or more where the op has more."""
    count = len(layer.outputs)
    if layer.type.lower() == "split" and str(layer.data.get("num_splits", "")).strip().isdigit():
        return max(count, int(layer.data["num_splits"]))
    first, n = _COUNTS.get(layer.type.lower(), (0, 0))
    return max(count, n) if _opset(layer.version) >= first else count

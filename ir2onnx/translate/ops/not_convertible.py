"""OpenVINO ops with no exact ONNX form, and why; named in the unsupported-ops error and in docs/operators.md."""

from __future__ import annotations

from ir2onnx.translate.registry import not_convertible

_RANDOM = ("ONNX random ops do not define their generator, so OpenVINO's seeded (Philox) sequence cannot be "
           "reproduced")
_STRINGS = "ONNX has no op that builds strings from, or splits them into, begins/ends/byte tensors"

for _op, _why in (
    ("RandomUniform", _RANDOM),
    ("Multinomial", _RANDOM),
    ("StringTensorPack", _STRINGS),
    ("StringTensorUnpack", _STRINGS),
):
    not_convertible(_op, _why)

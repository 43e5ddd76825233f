"""OpenVINO element types: names, legacy port precisions, numpy dtypes and bit widths."""

from __future__ import annotations

from typing import NamedTuple

import ml_dtypes
import numpy as np


class ElementType(NamedTuple):
    """One OpenVINO element type; `numpy` is the dtype its values are held in after unpacking."""

    name: str
    bits: int
    numpy: np.dtype
    packed: bool = False  # several elements per byte in the .bin

    @property
    def is_float(self) -> bool:
        return self.numpy.kind == "f" or self.name in ("bf16", "f8e4m3", "f8e5m2")



def _et(name: str, bits: int, dtype: object, packed: bool = False) -> ElementType:
    return ElementType(name, bits, np.dtype(dtype), packed)  # type: ignore[call-overload]


ELEMENT_TYPES: dict[str, ElementType] = {
    e.name: e
    for e in (
        _et("f64", 64, np.float64),
        _et("f32", 32, np.float32),
        _et("f16", 16, np.float16),
        _et("bf16", 16, ml_dtypes.bfloat16),
        _et("f8e4m3", 8, ml_dtypes.float8_e4m3fn),
        _et("f8e5m2", 8, ml_dtypes.float8_e5m2),
        _et("i64", 64, np.int64),
        _et("i32", 32, np.int32),
        _et("i16", 16, np.int16),
        _et("i8", 8, np.int8),
        _et("u64", 64, np.uint64),
        _et("u32", 32, np.uint32),
        _et("u16", 16, np.uint16),
        _et("u8", 8, np.uint8),
        _et("boolean", 8, np.bool_),
        _et("u1", 1, np.uint8, packed=True),
        _et("u2", 2, np.uint8, packed=True),
        _et("u3", 3, np.uint8, packed=True),
        _et("u4", 4, np.uint8, packed=True),
        _et("u6", 6, np.uint8, packed=True),
        _et("i4", 4, np.int8, packed=True),
        _et("nf4", 4, np.float32, packed=True),
        _et("f4e2m1", 4, np.float32, packed=True),
        _et("string", 0, object),  # variable length: a block of offsets and UTF-8 bytes (weights.py); held as bytes
    )
}

# Legacy port `precision` spellings (and a few aliases) -> element type names.
_PRECISIONS = {
    "FP64": "f64", "FP32": "f32", "FP16": "f16", "BF16": "bf16",
    "I64": "i64", "I32": "i32", "I16": "i16", "I8": "i8",
    "U64": "u64", "U32": "u32", "U16": "u16", "U8": "u8",
    "BOOL": "boolean", "BOOLEAN": "boolean", "BIN": "u1", "U1": "u1", "U4": "u4", "I4": "i4",
    "NF4": "nf4", "F8E4M3": "f8e4m3", "F8E5M2": "f8e5m2",
}
_ALIASES = {"bool": "boolean", "fp32": "f32", "fp16": "f16", "fp64": "f64", "float": "f32"}


def parse_element_type(text: str) -> ElementType | None:
    """An element type from `element_type="..."` or a port `precision="..."`; None when unknown or dynamic."""
    key = text.strip()
    if key in ELEMENT_TYPES:
        return ELEMENT_TYPES[key]
    if key.upper() in _PRECISIONS:
        return ELEMENT_TYPES[_PRECISIONS[key.upper()]]
    lowered = key.lower()
    if lowered in ELEMENT_TYPES:
        return ELEMENT_TYPES[lowered]
    if lowered in _ALIASES:
        return ELEMENT_TYPES[_ALIASES[lowered]]
    return None


# IR v10 ("legacy") models: OpenVINO's read_model presents f16 inputs as f32, integer outputs of 32 and 64 bits as
# i32 (values wrap) and every other output that is not f32 as f32, converting at the model's boundary (the
# Inference Engine API's precisions, kept for IR v10 only).
_LEGACY_INT_OUTPUTS = ("i64", "u64", "i32", "u32")


def legacy_input_type(et: ElementType) -> ElementType:
    """The element type OpenVINO presents for an IR v10 model input of type `et`."""
    return ELEMENT_TYPES["f32"] if et.name == "f16" else et


def legacy_output_type(et: ElementType) -> ElementType:
    """The element type OpenVINO presents for an IR v10 model output of type `et`."""
    if et.name in _LEGACY_INT_OUTPUTS:
        return ELEMENT_TYPES["i32"]
    return ELEMENT_TYPES["f32"]

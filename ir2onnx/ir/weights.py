"""The .bin weights file, memory-mapped once; every Const becomes a zero-copy numpy view of it."""

from __future__ import annotations

import itertools
import math
import os
import sys

import numpy as np

from ir2onnx.errors import IRReadError
from ir2onnx.ir.element_types import ElementType
from ir2onnx.ir.model import ConstData

# NF4 code book (the 16 values OpenVINO's nf4 indices point to).
_NF4 = np.array(
    [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
     -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
     0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
     0.7229568362236023, 1.0],
    dtype=np.float32,
)
# f4e2m1 code points (sign bit 3, 2 exponent bits, 1 mantissa bit).
_F4E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0],
                   dtype=np.float32)


def needed_bytes(element_type: ElementType, shape: tuple[int, ...]) -> int:
    """Bytes of a Const's data: whole groups of lcm(bits, 8) bits (u3 and u6 fill 3-byte groups of 8 and 4 values
    even when the last group is partial; other types whole bytes). For strings, the header (count and offsets)."""
    count = math.prod(shape)
    if element_type.name == "string":
        return _string_header(count)
    group_bits = math.lcm(element_type.bits, 8)
    per_group = group_bits // element_type.bits
    return -(-count // per_group) * (group_bits // 8)


class Weights:
    """A memory-mapped weights file. Views it hands out stay valid while this object lives."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self.size = os.path.getsize(path)
        except OSError as e:
            raise IRReadError(f"cannot read weights file {path}: {e.strerror}") from None
        if self.size == 0:
            self._data = np.zeros(0, dtype=np.uint8)
        else:
            try:
                self._data = np.memmap(path, dtype=np.uint8, mode="r")
            except (OSError, ValueError) as e:
                raise IRReadError(f"cannot map weights file {path}: {e}") from None

    def raw(self, offset: int, size: int) -> np.ndarray:
        """Bytes [offset, offset+size) as a uint8 view."""
        return self._data[offset : offset + size]

    def offset_of(self, array: np.ndarray) -> int | None:
        """The byte offset in the file of `array` when it is an unchanged view of it: C-contiguous, little-endian
        (or single-byte) and lying inside the mapping. Such an array's bytes are the file's bytes at that offset,
        so a writer can reference or copy them from the file."""
        order = array.dtype.byteorder
        little = order in ("<", "|") or (order == "=" and sys.byteorder == "little")
        if self.size == 0 or array.nbytes == 0 or not array.flags.c_contiguous or not little or array.dtype.hasobject:
            return None
        base = self._data.__array_interface__["data"][0]
        start = array.__array_interface__["data"][0]
        # an address inside the mapped range can only belong to the mapping (kept alive by this object)
        if base <= start and start + array.nbytes <= base + self.size:
            return start - base
        return None

    def array(self, const: ConstData) -> np.ndarray:
        """The Const's values: a zero-copy view for byte-sized types, an unpacked array for sub-byte ones, UTF-8
        bytes objects for strings."""
        et, shape = const.element_type, const.shape
        count = math.prod(shape)
        if et.name == "string":
            return unpack_strings(self.raw(const.offset, const.size), count).reshape(shape)
        raw = self.raw(const.offset, needed_bytes(et, shape))
        if not et.packed:
            return np.frombuffer(raw, dtype=et.numpy.newbyteorder("<"), count=count).reshape(shape)
        return _unpack(raw, et, count).reshape(shape)


def _string_header(count: int) -> int:
    """Bytes before a string Const's characters: the count and count + 1 offsets, int32 each."""
    return 4 * (count + 2)


def unpack_strings(raw: np.ndarray, count: int) -> np.ndarray:
    """A string Const's block: int32 N, N + 1 int32 offsets into the bytes that follow (the first 0, the last their
    length), then the bytes; ["ab", "", "xyz"] is 03000000 00000000 02000000 02000000 05000000 'abxyz'."""
    head = _string_header(count)
    if raw.size < head:
        raise IRReadError(f"a string constant of {count} elements needs at least {head} bytes, has {raw.size}")
    n = int(raw[:4].view("<i4")[0])
    if n != count:
        raise IRReadError(f"a string constant of {count} elements holds {n}")
    offsets = raw[4:head].view("<i4").astype(np.int64)
    data = raw[head:]
    if offsets[0] != 0 or np.any(np.diff(offsets) < 0) or offsets[-1] > data.size:
        raise IRReadError(f"a string constant's offsets {offsets.tolist()[:8]} do not lie within its {data.size} "
                          "bytes in order")
    blob = data.tobytes()
    out = np.empty(count, dtype=object)
    out[:] = [blob[a:b] for a, b in itertools.pairwise(offsets.tolist())]
    return out


def _unpack(raw: np.ndarray, et: ElementType, count: int) -> np.ndarray:
    if et.bits == 1:  # first element in the most significant bit
        return np.unpackbits(raw, bitorder="big")[:count].astype(np.uint8)
    if et.bits == 2:  # four per byte, first element in the lowest two bits
        parts = [(raw >> s) & 0x3 for s in (0, 2, 4, 6)]
        return np.stack(parts, axis=-1).reshape(-1)[:count].astype(np.uint8)
    if et.bits in (3, 6):  # 3-byte groups: the low 2 (u3) or 4 (u6) bits of each value, then their high bits
        return _unpack_split(raw.reshape(-1, 3), {3: 2, 6: 4}[et.bits], et.bits)[:count]
    # 4-bit: two per byte, first element in the low nibble
    nibbles = np.stack([raw & 0x0F, raw >> 4], axis=-1).reshape(-1)[:count]
    if et.name == "u4":
        return nibbles.astype(np.uint8)
    if et.name == "i4":
        return ((nibbles.astype(np.int8) ^ 0x8) - 0x8).astype(np.int8)
    if et.name == "nf4":
        return _NF4[nibbles]
    if et.name == "f4e2m1":
        return _F4E2M1[nibbles]
    raise IRReadError(f"unpacking element type {et.name} is not supported")


def _unpack_split(groups: np.ndarray, low_bits: int, bits: int) -> np.ndarray:
    """u3 / u6: each 3-byte group holds 8 / 4 values: two bytes of their low 2 / 4 bits, then one byte of their
    remaining bits (1 / 2 each); first value in the most significant bits of each byte (OpenVINO's layout: u3
    [0..7] is 1b 1b 0f, u6 [1, 2, 3, 63] is 12 3f 03)."""
    def fields(b: np.ndarray, width: int) -> np.ndarray:
        shifts = np.arange(8 - width, -1, -width).astype(np.uint8)
        return ((b[..., None] >> shifts) & ((1 << width) - 1)).reshape(len(b), -1)

    low = fields(groups[:, :2], low_bits)
    high = fields(groups[:, 2:], bits - low_bits)
    return ((high << low_bits) | low).reshape(-1).astype(np.uint8)

"""numpy references of the sweep: what an op computes where OpenVINO's CPU plugin is wrong (sweep_table.py names
each defect and uses these instead of OpenVINO's outputs)."""

from __future__ import annotations

import numpy as np


def sat8(fn):
    """numpy reference of 8-bit arithmetic as the CPU plugin computes it: exact, then saturated."""
    def ref(a, b, **_):
        with np.errstate(over="ignore"):
            if a.dtype in (np.int8, np.uint8):
                info = np.iinfo(a.dtype)
                return [np.clip(fn(a.astype(np.int64), b.astype(np.int64)), info.min, info.max).astype(a.dtype)]
            return [np.asarray(fn(a, b)).astype(a.dtype) if fn(a, b).dtype.kind != "b" else fn(a, b)]
    return ref


def shift_ref(direction: str):
    """Shift counts modulo the width (32 for types up to 32 bits), results wrapped into the type."""
    def ref(a, s, **_):
        width = 64 if a.dtype.itemsize == 8 else 32
        n = (s.astype(np.int64) % width).astype(np.uint64)
        if direction == "left":
            return [(a.astype(np.uint64) << n).astype(a.dtype)]
        wide = a.astype(np.int64) if a.dtype.kind == "i" else a.astype(np.uint64)
        return [(wide >> n.astype(wide.dtype)).astype(a.dtype)]
    return ref


def atanh_int(a, **_):
    """atanh in f32, rounded half to even, saturated (+-inf at +-1), NaN (|x| > 1) to the type's minimum; u16, u32
    and u64 through int32 and wrapped, as the CPU plugin converts f32 to them (its atanh(2) on u32 is 2^31, on u64
    2^64 - 2^31: int32's minimum wrapped), so atanh(1) is 2^31 - 1 there."""
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.round(np.arctanh(a.astype(np.float32)).astype(np.float64))
    if a.dtype in (np.uint16, np.uint32, np.uint64):
        y = np.where(np.isnan(y), -2.0**31, np.clip(y, -2.0**31, 2.0**31 - 1))
        return [y.astype(np.int64).astype(a.dtype)]
    info = np.iinfo(a.dtype)
    y = np.where(np.isnan(y), info.min, np.clip(y, info.min, float(info.max) if a.dtype.itemsize < 8 else
                                                 float(np.nextafter(np.float64(info.max), 0))))
    return [y.astype(a.dtype)]


def plugin_converts(y: np.ndarray, dt: np.dtype) -> np.ndarray:
    """An f32 result in type dt as the CPU plugin converts it (ir2onnx's precision.from_f32): integers rounded half
    to even and saturated (u16 to u64 through int32, wrapped; NaN the lowest), booleans as u8, then != 0."""
    if dt.kind == "f":
        return y.astype(dt)
    if dt.kind == "b":
        return plugin_converts(y, np.dtype(np.uint8)) != 0
    y = np.rint(y.astype(np.float64))
    if dt in (np.uint16, np.uint32, np.uint64):
        return np.nan_to_num(np.clip(y, -2.0**31, 2.0**31 - 1), nan=-2.0**31).astype(np.int64).astype(dt)
    info = np.iinfo(dt)
    hi = float(info.max) if dt.itemsize < 8 else float(np.nextafter(np.float64(info.max), 0))
    return np.nan_to_num(np.clip(y, info.min, hi), nan=info.min).astype(dt)


def log_softmax_int(x, axis, **_):
    """LogSoftmax in f32, converted as the plugin converts f32 (its own integer LogSoftmax rounds inside: i8 rows
    give 0 for -0.55)."""
    f = x.astype(np.float32)
    z = f - f.max(axis=axis, keepdims=True)
    return [plugin_converts(z - np.log(np.exp(z).sum(axis=axis, keepdims=True)), x.dtype)]


def stable_topk(a, k, mode, sort, **_):
    """The k first of a stable sort (ties in index order), in value or index order."""
    key = a.astype(np.float64)
    order = np.argsort(-key if mode == "max" else key, axis=-1, kind="stable")[..., :int(k)]
    if sort == "index":
        order = np.sort(order, axis=-1)
    return [np.take_along_axis(a, order, -1), order.astype(np.int64)]


def f64_to_bf16(a, **_):
    """f64 to bf16 as the converter computes it: rounded to f32 (where the CPU plugin holds f64), then to bf16."""
    import ml_dtypes

    return [a.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)]


def exact_reduce(op: str):
    """Integer reductions over axis 1 in exact arithmetic, wrapped into the type (means truncated toward zero;
    i8/u8 sums, norms and products saturated, as the CPU plugin's 8-bit arithmetic)."""
    fn = {"ReduceSum": sum, "ReduceL1": lambda r: sum(abs(v) for v in r), "ReduceMax": max, "ReduceMin": min,
          "ReduceProd": lambda r: int(np.prod(np.asarray(r, dtype=object))),
          "ReduceMean": lambda r: abs(sum(r)) // len(r) * (1 if sum(r) >= 0 else -1)}[op]

    def ref(a, ax, **_):
        exact = [int(fn([int(v) for v in row])) for row in a]
        info, bits = np.iinfo(a.dtype), a.dtype.itemsize * 8
        if a.dtype in (np.int8, np.uint8) and op != "ReduceMean":
            return [np.array([min(max(v, info.min), info.max) for v in exact], a.dtype)]
        wrapped = [v % 2**bits - (2**bits if info.min < 0 and v % 2**bits >= 2**(bits - 1) else 0) for v in exact]
        return [np.array(wrapped, a.dtype)]
    return ref


def mvn_int(x, ax, normalize_variance, eps_mode, **_):
    """MVN in f32, converted as the plugin converts f32."""
    f, axes = x.astype(np.float32), tuple(int(a) % x.ndim for a in ax.reshape(-1))
    c = f - f.mean(axis=axes, keepdims=True)
    if normalize_variance:
        var = (c * c).mean(axis=axes, keepdims=True)
        c = c / (np.sqrt(var + np.float32(1e-5)) if eps_mode == "inside_sqrt" else np.sqrt(var) + np.float32(1e-5))
    return [plugin_converts(c, x.dtype)]


def normalize_l2_int(x, ax, eps_mode, **_):
    """NormalizeL2 in f32, converted as the plugin converts f32."""
    f, axes = x.astype(np.float32), tuple(int(a) % x.ndim for a in ax.reshape(-1))
    sq = (f * f).sum(axis=axes, keepdims=True)
    sq = sq + np.float32(1e-6) if eps_mode == "add" else np.maximum(sq, np.float32(1e-6))
    return [plugin_converts(f / np.sqrt(sq), x.dtype)]


def max_pool_2x2(a):
    """MaxPool of kernel 2x2, stride 2, end padding 1 (NCHW): values and flat indices of the first largest value
    of each window in row-major order."""
    n, c, h, w = a.shape
    oh, ow = h // 2 + (h % 2), w // 2 + (w % 2)
    vals, idx = np.zeros((n, c, oh, ow), a.dtype), np.zeros((n, c, oh, ow), np.int64)
    for i, j, y, x in np.ndindex(n, c, oh, ow):
        cells = [(yy, xx) for yy in (2 * y, 2 * y + 1) for xx in (2 * x, 2 * x + 1) if yy < h and xx < w]
        best = max(cells, key=lambda p: (a[i, j][p], -cells.index(p)))
        vals[i, j, y, x], idx[i, j, y, x] = a[i, j][best], ((i * c + j) * h + best[0]) * w + best[1]
    return [vals, idx]

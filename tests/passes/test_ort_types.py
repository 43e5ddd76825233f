"""The onnxruntime kernel-coverage pass on hand-built ONNX graphs: every rewritten model runs in onnxruntime and
computes what numpy computes in the original element type (integers exactly, wrap-around included)."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import onnx_ir as oir
import pytest
from onnx import TensorProto as TP
from onnx import helper as oh

import ir2onnx
from ir2onnx.passes import ort_types
from ir2onnx.passes.ort_types import UNSUPPORTED_META, OrtTypesPass

ort = pytest.importorskip("onnxruntime")


def _model(nodes: list[onnx.NodeProto], inputs: list[tuple[str, int, list]], outputs: list[tuple[str, int, list]],
           opset: int = 17, initializers: list[onnx.TensorProto] | None = None) -> oir.Model:
    graph = oh.make_graph(nodes, "g", [oh.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [oh.make_tensor_value_info(n, t, s) for n, t, s in outputs], initializer=initializers or [])
    proto = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)], ir_version=8)
    proto = onnx.shape_inference.infer_shapes(proto, strict_mode=True)
    return oir.from_proto(proto)


def _runs(model: oir.Model) -> bool:
    try:
        ort.InferenceSession(oir.to_proto(model).SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001
        return False
    return True


def _run(model: oir.Model, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    proto = oir.to_proto(model)
    onnx.checker.check_model(proto, full_check=True)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return [np.asarray(o) for o in sess.run(None, feed)]


def _full(dtype: np.dtype, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


AXES = oh.make_tensor("axes", TP.INT64, [1], [1])
# (ONNX op, attributes, element type, numpy function of the input(s)): onnxruntime has no CPU kernel for these
CASES = [
    ("Max", {}, np.int16, lambda a, b: np.maximum(a, b)),
    ("Min", {}, np.uint16, lambda a, b: np.minimum(a, b)),
    ("Clip", {}, np.int16, lambda a, b: np.minimum(np.maximum(a, np.minimum(a, b)), np.maximum(a, b))),
    ("ReduceMax", {"keepdims": 0}, np.uint64, lambda a: a.max(axis=1)),
    ("ReduceMin", {"keepdims": 0}, np.uint32, lambda a: a.min(axis=1)),
    ("ReduceSum", {"keepdims": 0}, np.uint32, lambda a: a.sum(axis=1, dtype=np.uint32)),
    ("ReduceL1", {"keepdims": 0}, np.uint32, lambda a: a.sum(axis=1, dtype=np.uint32)),
    ("ArgMax", {"axis": 1, "keepdims": 0}, np.uint64, lambda a: a.argmax(axis=1)),
    ("ArgMin", {"axis": 1, "keepdims": 0}, np.int16, lambda a: a.argmin(axis=1)),
    ("CumSum", {}, np.uint64, lambda a: np.cumsum(a, axis=1, dtype=np.uint64)),
    ("Relu", {}, np.int16, lambda a: np.maximum(a, 0)),
]


def _case_model(op: str, attrs: dict, dtype: type, fn) -> tuple[oir.Model, list[np.ndarray]]:
    tp = oh.np_dtype_to_tensor_dtype(np.dtype(dtype))
    arity = fn.__code__.co_argcount
    xs = [_full(np.dtype(dtype), (4, 5), seed) for seed in range(arity)]
    if op == "Clip":  # Clip's bounds are scalars
        xs = [xs[0], np.array(xs[1].flat[0]), np.array(xs[1].flat[1])]
        lo, hi = sorted([xs[1], xs[2]])
        xs[1], xs[2] = lo, hi
    with np.errstate(over="ignore"):
        want = fn(*xs[:2]) if op != "Clip" else np.clip(xs[0], xs[1], xs[2])
    names = [f"x{i}" for i in range(len(xs))]
    ins = names + (["axes"] if op.startswith("Reduce") else ["axis"] if op == "CumSum" else [])
    inits = [AXES] if op.startswith("Reduce") else [oh.make_tensor("axis", TP.INT64, [], [1])] if op == "CumSum" else []
    out_tp = oh.np_dtype_to_tensor_dtype(np.asarray(want).dtype)
    m = _model([oh.make_node(op, ins, ["y"], **attrs)], [(n, tp, list(x.shape)) for n, x in zip(names, xs)],
               [("y", out_tp, list(np.shape(want)))], opset=18, initializers=inits)
    return m, xs + [np.asarray(want)]


@pytest.mark.parametrize(("op", "attrs", "dtype", "fn"), CASES, ids=[f"{c[0]}-{c[2].__name__}" for c in CASES])
def test_integer_ops_full_range_exact(op: str, attrs: dict, dtype: type, fn) -> None:
    m, (*xs, want) = _case_model(op, attrs, dtype, fn)
    assert not _runs(m), f"onnxruntime gained a {op} kernel for {dtype.__name__}: pick another case"
    OrtTypesPass()(m)
    (y,) = _run(m, {f"x{i}": x for i, x in enumerate(xs)})
    assert y.dtype == want.dtype
    np.testing.assert_array_equal(y, want)


def test_integer_products_take_the_widest_type() -> None:
    """onnxruntime's integer ReduceProd saturates (and goes through double in int64): an int16 product of three
    full-range values (up to 2^45) is exact, and wraps into int16, where it is computed in int64, not in int32."""
    axes = oh.make_tensor("axes", TP.INT64, [1], [1])
    m = _model([oh.make_node("ReduceProd", ["x", "axes"], ["y"], keepdims=0)], [("x", TP.INT16, [6, 3])],
               [("y", TP.INT16, [6])], opset=18, initializers=[axes])
    assert not _runs(m)
    OrtTypesPass()(m)
    assert [n.op_type for n in m.graph].count("Cast") == 2
    assert any(n.op_type == "Cast" and n.attributes["to"].as_int() == TP.INT64 for n in m.graph)
    x = _full(np.dtype(np.int16), (6, 3), seed=3)
    (y,) = _run(m, {"x": x})
    np.testing.assert_array_equal(y, np.prod(x, axis=1, dtype=np.int16))


def test_uint64_order_at_opset17_uses_wrapping_add() -> None:
    m = _model([oh.make_node("Max", ["a", "b"], ["y"])], [("a", TP.UINT64, [6]), ("b", TP.UINT64, [6])],
               [("y", TP.UINT64, [6])], opset=17)
    OrtTypesPass()(m)
    a = np.array([0, 1, 2**63 - 1, 2**63, 2**64 - 1, 5], np.uint64)
    b = np.array([2**64 - 1, 2**63, 2**63 + 1, 3, 0, 5], np.uint64)
    (y,) = _run(m, {"a": a, "b": b})
    np.testing.assert_array_equal(y, np.maximum(a, b))


def test_topk_uint64_values_and_indices() -> None:
    k = oh.make_tensor("k", TP.INT64, [1], [3])
    m = _model([oh.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=1)], [("x", TP.UINT64, [2, 5])],
               [("v", TP.UINT64, [2, 3]), ("i", TP.INT64, [2, 3])], initializers=[k])
    OrtTypesPass()(m)
    x = np.array([[1, 2**64 - 1, 2**63, 7, 2**63 - 1], [0, 3, 2, 2**62, 9]], np.uint64)
    v, i = _run(m, {"x": x})
    want_i = np.argsort(-x.astype(object), axis=1, kind="stable")[:, :3].astype(np.int64)
    np.testing.assert_array_equal(i, want_i)
    np.testing.assert_array_equal(v, np.take_along_axis(x, want_i, 1))


@pytest.mark.parametrize(("op", "fn"), [("Add", np.add), ("Mul", np.multiply), ("Div", np.divide)])
def test_bfloat16_rounds_once(op: str, fn) -> None:
    """bf16 values enter and leave through f32 (numpy feeds no bf16 to onnxruntime)."""
    bf = TP.BFLOAT16
    nodes = [oh.make_node("Cast", ["a"], ["a16"], to=bf), oh.make_node("Cast", ["b"], ["b16"], to=bf),
             oh.make_node(op, ["a16", "b16"], ["y16"]), oh.make_node("Cast", ["y16"], ["y"], to=TP.FLOAT)]
    m = _model(nodes, [("a", TP.FLOAT, [50]), ("b", TP.FLOAT, [50])], [("y", TP.FLOAT, [50])])
    assert not _runs(m)
    OrtTypesPass()(m)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(50).astype(ml_dtypes.bfloat16).astype(np.float32)
    b = (rng.standard_normal(50) * 100).astype(ml_dtypes.bfloat16).astype(np.float32)
    (y,) = _run(m, {"a": a, "b": b})
    want = fn(a, b).astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(y, want)


def test_float16_range_and_where_int16() -> None:
    nodes = [oh.make_node("Range", ["s", "e", "d"], ["r"]), oh.make_node("Where", ["c", "a", "b"], ["w"])]
    m = _model(nodes, [("s", TP.FLOAT16, []), ("e", TP.FLOAT16, []), ("d", TP.FLOAT16, []), ("c", TP.BOOL, [3]),
                       ("a", TP.INT16, [3]), ("b", TP.INT16, [3])], [("r", TP.FLOAT16, [None]), ("w", TP.INT16, [3])])
    assert not _runs(m)
    OrtTypesPass()(m)
    r, w = _run(m, {"s": np.array(0.5, np.float16), "e": np.array(3, np.float16), "d": np.array(0.75, np.float16), "c": np.array([1, 0, 1], bool),
                    "a": np.array([-32768, 2, 3], np.int16), "b": np.array([7, 32767, 9], np.int16)})
    np.testing.assert_array_equal(r, np.arange(0.5, 3, 0.75, dtype=np.float16))
    np.testing.assert_array_equal(w, np.array([-32768, 32767, 3], np.int16))


def test_body_nodes_are_rewritten() -> None:
    then = oh.make_graph([oh.make_node("Max", ["a", "b"], ["t"])], "then", [], [oh.make_tensor_value_info(
        "t", TP.INT16, [3])])
    other = oh.make_graph([oh.make_node("Min", ["a", "b"], ["o"])], "else", [], [oh.make_tensor_value_info(
        "o", TP.INT16, [3])])
    m = _model([oh.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
               [("c", TP.BOOL, []), ("a", TP.INT16, [3]), ("b", TP.INT16, [3])], [("y", TP.INT16, [3])])
    OrtTypesPass()(m)
    a, b = np.array([1, -5, 300], np.int16), np.array([2, -7, -300], np.int16)
    np.testing.assert_array_equal(_run(m, {"c": np.array(True), "a": a, "b": b})[0], np.maximum(a, b))
    np.testing.assert_array_equal(_run(m, {"c": np.array(False), "a": a, "b": b})[0], np.minimum(a, b))


def test_graph_output_keeps_name_and_type() -> None:
    m = _model([oh.make_node("Max", ["a", "b"], ["y"])], [("a", TP.INT16, [2]), ("b", TP.INT16, [2])],
               [("y", TP.INT16, [2])])
    p = OrtTypesPass()
    p(m)
    out = m.graph.outputs[0]
    assert out.name == "y" and out.type.dtype == oir.DataType.INT16
    assert len(p.replaced) == 1


def test_no_exact_form_is_left_alone_and_reported() -> None:
    axes = oh.make_tensor("axes", TP.INT64, [1], [0])
    m = _model([oh.make_node("ReduceMean", ["x", "axes"], ["y"])], [("x", TP.UINT64, [4])], [("y", TP.UINT64, [1])],
               opset=18, initializers=[axes])
    before = [n.op_type for n in m.graph]
    OrtTypesPass()(m)
    assert [n.op_type for n in m.graph] == before
    assert len(m.meta[UNSUPPORTED_META]) == 1 and "ReduceMean" in m.meta[UNSUPPORTED_META][0]


def test_supported_nodes_are_untouched() -> None:
    m = _model([oh.make_node("Add", ["a", "b"], ["y"])], [("a", TP.FLOAT, [2]), ("b", TP.FLOAT, [2])],
               [("y", TP.FLOAT, [2])])
    assert not OrtTypesPass()(m).modified
    assert [n.op_type for n in m.graph] == ["Add"]


def test_without_onnxruntime_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ort_types, "_cpu_kernels", lambda: None)
    m = _model([oh.make_node("Max", ["a", "b"], ["y"])], [("a", TP.INT16, [2]), ("b", TP.INT16, [2])],
               [("y", TP.INT16, [2])])
    assert not OrtTypesPass()(m).modified
    assert [n.op_type for n in m.graph] == ["Max"]



def test_builds_with_gpu_providers_use_the_shipped_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """onnxruntime-gpu cannot be asked for its kernels (asking crashes where TensorRT is absent): it uses the CPU
    build's list, shipped with the package, and adapts types with it."""
    ort_types._cpu_kernels.cache_clear()
    monkeypatch.setattr(ort_types, "installed_onnxruntime_version", lambda: "0.0.0")  # not the table's version
    monkeypatch.setattr(ort_types, "_SAFE_PROVIDERS", set())
    try:
        shipped = ort_types._cpu_kernels()
        assert shipped and ("", "Max") in shipped
        m = _model([oh.make_node("Max", ["a", "b"], ["y"])], [("a", TP.INT16, [3]), ("b", TP.INT16, [3])],
                   [("y", TP.INT16, [3])])
        assert OrtTypesPass()(m).modified
        a, b = np.array([-7, 300, 2], np.int16), np.array([5, -300, 2], np.int16)
        (got,) = _run(m, {"a": a, "b": b})
        np.testing.assert_array_equal(got, np.maximum(a, b))
    finally:
        ort_types._cpu_kernels.cache_clear()


def test_shipped_table_is_the_installed_cpu_build_list() -> None:
    """Where the installed onnxruntime is the table's version and platform, the conversion reads the table instead
    of asking onnxruntime: it must be exactly what that build lists."""
    table = json.loads(ort_types.KERNEL_TABLE.read_text())
    assert ort_types.installed_onnxruntime_version() == ort.__version__
    if (ort.__version__, ort_types.kernel_platform()) != (table["onnxruntime"], table["platform"]):
        pytest.skip(f"the table is onnxruntime {table['onnxruntime']} on {table['platform']}; installed: "
                    f"{ort.__version__} on {ort_types.kernel_platform()}")
    if not set(ort.get_available_providers()) <= ort_types._SAFE_PROVIDERS:
        pytest.skip("this onnxruntime build cannot be asked for its kernels")
    listed = json.loads(json.dumps(ort_types.listed_cpu_kernels()))
    assert listed == table["kernels"], "regenerate it: python scripts/gen/gen_ort_kernels.py"


def test_table_read_by_op_is_the_whole_table() -> None:
    """The conversion reads the shipped table a line a row, grouped by op, decoding only the ops it asks about: the
    rows and header it finds are exactly the JSON file's, and so are the kernels built from them."""
    table = json.loads(ort_types.KERNEL_TABLE.read_text())
    header, rows = ort_types._shipped_kernels()
    assert header == {k: v for k, v in table.items() if k != "kernels"}
    read = [json.loads(r) for group in rows.values() for r in group]
    assert sorted(map(json.dumps, read)) == sorted(map(json.dumps, table["kernels"]))
    for key, group in rows.items():
        assert all(ort_types._op_key(*json.loads(r)[:2]) == key for r in group)
    from_listing = ort_types._KernelIndex(ort_types._rows_by_op(table["kernels"]))
    shipped = ort_types._KernelIndex(rows)
    for key in rows:
        assert key in from_listing and shipped.get(key) == from_listing.get(key)
    assert shipped.get(("", "NoSuchOp")) is None and ("", "NoSuchOp") not in shipped


def test_other_versions_ask_onnxruntime(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another version of the CPU build is asked for its own list, not given the table."""
    if not set(ort.get_available_providers()) <= ort_types._SAFE_PROVIDERS:
        pytest.skip("this onnxruntime build cannot be asked for its kernels")
    asked = []
    listed = ort_types.listed_cpu_kernels
    monkeypatch.setattr(ort_types, "installed_onnxruntime_version", lambda: "0.0.0")
    monkeypatch.setattr(ort_types, "listed_cpu_kernels", lambda: asked.append(1) or listed())
    ort_types._cpu_kernels.cache_clear()
    try:
        assert ("", "Max") in ort_types._cpu_kernels() and asked == [1]
    finally:
        ort_types._cpu_kernels.cache_clear()


def test_conversion_with_the_table_does_not_list_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """A conversion asks onnxruntime for nothing when the table is the installed build's list."""
    table = json.loads(ort_types.KERNEL_TABLE.read_text())
    if (ort.__version__, ort_types.kernel_platform()) != (table["onnxruntime"], table["platform"]):
        pytest.skip("the installed onnxruntime is not the table's version and platform")

    def refuse() -> None:
        raise AssertionError("onnxruntime was asked for its kernels")

    monkeypatch.setattr(ort_types, "listed_cpu_kernels", refuse)
    ort_types._cpu_kernels.cache_clear()
    try:
        xml = Path(__file__).resolve().parents[2] / "samples" / "ti_lstm" / "model.xml"
        assert ir2onnx.convert(xml).graph.node
    finally:
        ort_types._cpu_kernels.cache_clear()


def test_kernel_platform_is_platform_machine() -> None:
    """kernel_platform reads os.uname (a conversion does not import platform): the same as platform.machine()."""
    import platform
    import sys

    from ir2onnx.passes.ort_types import kernel_platform

    assert kernel_platform() == f"{sys.platform}-{platform.machine().lower()}"

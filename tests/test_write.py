"""Weight modes of convert_file: references into the IR's .bin, the model's own data file, inline; atomic files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import openvino.opset13 as ops
import pytest

import ir2onnx
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.utils import assert_equivalent, ov, rng_inputs

ROOT = Path(__file__).resolve().parent.parent


def mixed_weights_ir(directory: Path, computed: bool = True) -> Path:
    """x @ W (f32, kept as it is) + f16 bias (kept) + u4 weights (unpacked by the conversion: computed)."""
    rng = np.random.default_rng(0)
    x = ops.parameter([2, 64], np.float32, name="x")
    w = ops.constant(rng.standard_normal((64, 64)).astype(np.float32))
    bias = ops.convert(ops.constant(rng.standard_normal((64, 64)).astype(np.float16)), np.float32)
    y = ops.add(ops.matmul(x, w, False, False), ops.reduce_sum(bias, [0], True))
    if computed:
        nibbles = ov.op.Constant(ov.Type.u4, ov.Shape([64, 64]), rng.integers(0, 16, 64 * 64).tolist())
        y = ops.add(y, ops.reduce_sum(ops.convert(nibbles, np.float32), [0], True))
    y = ops.multiply(y, ops.constant(np.float32(0.5)))  # small: stays inline
    directory.mkdir(parents=True, exist_ok=True)
    xml = directory / "model.xml"
    ov.save_model(ov.Model([y], [x], "mixed"), str(xml), compress_to_fp16=False)
    return xml


def locations(path: Path) -> dict[str, list[tuple[str, int, int]]]:
    """Initializer name -> external (location, offset, length); inline ones absent."""
    proto = onnx.load(str(path), load_external_data=False)
    out = {}
    for t in proto.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            e = {kv.key: kv.value for kv in t.external_data}
            out[t.name] = (e["location"], int(e.get("offset", 0)), int(e["length"]))
    return out


def runs_like_openvino(xml: Path, onnx_path: Path) -> None:
    onnx.checker.check_model(str(onnx_path))  # includes the external-data location checks
    assert_equivalent(xml, rng_inputs([((2, 64), np.float32)]), proto=onnx.load(str(onnx_path)))


def test_reference_points_into_the_bin(tmp_path: Path) -> None:
    xml = mixed_weights_ir(tmp_path)
    # the default beside the IR: reference; at opset 17 the u4 weights are unpacked (computed: to the data file)
    out = ir2onnx.convert_file(xml, tmp_path / "m.onnx", opset=17)
    locs = locations(out)
    by_file = sorted({loc for loc, _, _ in locs.values()})
    assert by_file == ["m.onnx.data", "model.bin"], locs
    raw = (tmp_path / "model.bin").read_bytes()
    model = ir2onnx.convert_to_ir(xml)
    for name, (loc, offset, length) in locs.items():
        if loc == "model.bin":  # the referenced bytes are the initializer's bytes
            assert raw[offset:offset + length] == model.graph.initializers[name].const_value.tobytes()
    data = (tmp_path / "m.onnx.data").stat().st_size
    assert data == sum(n for loc, _, n in locs.values() if loc == "m.onnx.data") > 0  # the u4 weights, repacked
    runs_like_openvino(xml, out)


def test_packed_4bit_weights_are_referenced_in_the_bin(tmp_path: Path) -> None:
    """At the automatic opset (21 here) u4 weights stay packed, byte for byte as in the .bin: referenced too."""
    xml = mixed_weights_ir(tmp_path)
    out = ir2onnx.convert_file(xml, tmp_path / "m.onnx")
    locs = locations(out)
    assert {loc for loc, _, _ in locs.values()} == {"model.bin"}
    assert sorted(n for _, _, n in locs.values()) == [64 * 64 // 2, 64 * 64 * 2, 64 * 64 * 4]
    assert not (tmp_path / "m.onnx.data").exists()
    runs_like_openvino(xml, out)


def test_grouped_convolution_weights_are_referenced_in_the_bin(tmp_path: Path) -> None:
    """GroupConvolution's [G, O, I, k...] weights become ONNX's [G*O, I, k...]: the same bytes, so referenced."""
    rng = np.random.default_rng(0)
    x = ops.parameter([1, 8, 9, 9], np.float32, name="x")
    w = rng.standard_normal((4, 6, 2, 3, 3)).astype(np.float32)
    y = ops.group_convolution(x, ops.constant(w), [1, 1], [1, 1], [1, 1], [1, 1])
    xml = tmp_path / "model.xml"
    ov.save_model(ov.Model([y], [x], "grouped"), str(xml), compress_to_fp16=False)
    out = ir2onnx.convert_file(xml, tmp_path / "m.onnx", weights="reference")
    assert list(locations(out).values()) == [("model.bin", 0, w.nbytes)]
    assert not (tmp_path / "m.onnx.data").exists()
    onnx.checker.check_model(str(out))
    assert_equivalent(xml, rng_inputs([((1, 8, 9, 9), np.float32)]), proto=onnx.load(str(out)))


@pytest.mark.parametrize("compressed", [False, True])
def test_weights_two_layers_share_are_computed_and_written_once(tmp_path: Path, compressed: bool) -> None:
    """Two GroupConvolutions sharing their weights, and two LSTMCells sharing theirs (gate-reordered by the
    conversion): each result is one initializer, written once to the data file (f32, or f16 weights decompressed)."""
    rng = np.random.default_rng(0)
    x = ops.parameter([1, 8, 9, 9], np.float32, name="x")
    w = ops.constant(rng.standard_normal((4, 6, 2, 3, 3)).astype(np.float32))
    convs = [ops.group_convolution(x, w, [1, 1], [1, 1], [1, 1], [1, 1]).output(0) for _ in range(2)]
    hidden, size = 16, 12
    cell_w = ops.constant(rng.standard_normal((4 * hidden, size)).astype(np.float32))
    cell_r = ops.constant(rng.standard_normal((4 * hidden, hidden)).astype(np.float32))
    cell_b = ops.constant(rng.standard_normal(4 * hidden).astype(np.float32))
    xs = [ops.parameter([2, size], np.float32, name=f"x{i}") for i in range(2)]
    h0 = ops.constant(np.zeros((2, hidden), np.float32))
    cells = [ops.lstm_cell(xi, h0, h0, cell_w, cell_r, cell_b, hidden).output(0) for xi in xs]
    xml = tmp_path / "model.xml"
    ov.save_model(ov.Model([*convs, *cells], [x, *xs], "shared"), str(xml), compress_to_fp16=compressed)
    out = ir2onnx.convert_file(xml, tmp_path / "m.onnx", weights="copy")
    sizes = sorted(n for _, _, n in locations(out).values())
    # the convolutions' weights and the cells' W and R, once each (tensors up to 1 KiB, the cells' bias among them,
    # stay inline; f16 weights stay f16, decompressed in the graph)
    itemsize = 2 if compressed else 4
    expected = [n * itemsize for n in (4 * 6 * 2 * 9, 4 * hidden * size, 4 * hidden * hidden) if n * itemsize > 1024]
    assert sizes == sorted(expected), sizes
    assert (tmp_path / "m.onnx.data").stat().st_size == sum(sizes)
    onnx.checker.check_model(str(out))
    inputs = rng_inputs([((1, 8, 9, 9), np.float32), ((2, size), np.float32), ((2, size), np.float32)])
    assert_equivalent(xml, inputs, proto=onnx.load(str(out)))


def test_reference_from_a_parent_directory_survives_moving_both(tmp_path: Path) -> None:
    xml = mixed_weights_ir(tmp_path / "project" / "ir", computed=False)
    out = ir2onnx.convert_file(xml, tmp_path / "project" / "m.onnx", weights="reference")
    assert {loc for loc, _, _ in locations(out).values()} == {"ir/model.bin"}
    assert sorted(p.name for p in out.parent.iterdir()) == ["ir", "m.onnx"]
    feed = {"x": rng_inputs([((2, 64), np.float32)])[0]}
    before = run_onnxruntime(str(out), feed)[0]
    moved = tmp_path / "elsewhere"
    shutil.move(str(tmp_path / "project"), str(moved))
    runs_like_openvino(moved / "ir" / "model.xml", moved / "m.onnx")
    np.testing.assert_array_equal(run_onnxruntime(str(moved / "m.onnx"), feed)[0], before)


def test_output_outside_the_ir_directory(tmp_path: Path) -> None:
    xml = mixed_weights_ir(tmp_path / "ir")
    with pytest.raises(ir2onnx.ConversionError, match="only when it is written into .*parent directories"):
        ir2onnx.convert_file(xml, tmp_path / "out" / "m.onnx", weights="reference")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    out = ir2onnx.convert_file(xml, tmp_path / "out" / "m.onnx")  # the default there: copy
    assert {loc for loc, _, _ in locations(out).values()} == {"m.onnx.data"}
    runs_like_openvino(xml, out)


def test_symlink_leaving_the_output_directory_is_not_referenced(tmp_path: Path) -> None:
    xml = mixed_weights_ir(tmp_path / "ir")
    (tmp_path / "out").mkdir()
    os.symlink(tmp_path / "ir", tmp_path / "out" / "ir")
    with pytest.raises(ir2onnx.ConversionError, match="parent directories"):
        ir2onnx.convert_file(tmp_path / "out" / "ir" / "model.xml", tmp_path / "out" / "m.onnx", weights="reference")
    out = ir2onnx.convert_file(tmp_path / "out" / "ir" / "model.xml", tmp_path / "out" / "m.onnx")
    assert {loc for loc, _, _ in locations(out).values()} == {"m.onnx.data"}
    runs_like_openvino(xml, out)


def test_hard_linked_bin_is_not_referenced(tmp_path: Path) -> None:
    xml = mixed_weights_ir(tmp_path)
    os.link(tmp_path / "model.bin", tmp_path / "copy.bin")
    with pytest.raises(ir2onnx.ConversionError, match="hard links"):
        ir2onnx.convert_file(xml, tmp_path / "m.onnx", weights="reference")
    out = ir2onnx.convert_file(xml, tmp_path / "m.onnx")
    assert {loc for loc, _, _ in locations(out).values()} == {"m.onnx.data"}
    runs_like_openvino(xml, out)


@pytest.mark.parametrize("weights", ["copy", "inline"])
def test_copy_and_inline(tmp_path: Path, weights: str) -> None:
    xml = mixed_weights_ir(tmp_path)
    out = ir2onnx.convert_file(xml, tmp_path / "m.onnx", weights=weights)
    locs = locations(out)
    if weights == "copy":
        assert {loc for loc, _, _ in locs.values()} == {"m.onnx.data"}
        assert (tmp_path / "m.onnx.data").stat().st_size == sum(n for _, _, n in locs.values())
    else:
        assert locs == {} and not (tmp_path / "m.onnx.data").exists()
    runs_like_openvino(xml, out)


def test_stale_data_file_is_removed(tmp_path: Path) -> None:
    xml = mixed_weights_ir(tmp_path, computed=False)
    ir2onnx.convert_file(xml, tmp_path / "m.onnx", weights="copy")
    assert (tmp_path / "m.onnx.data").exists()
    out = ir2onnx.convert_file(xml, tmp_path / "m.onnx", weights="reference")
    assert not (tmp_path / "m.onnx.data").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "model.bin", "model.xml"]
    runs_like_openvino(xml, out)


def test_inline_refuses_more_than_protobuf_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ir2onnx.write

    xml = mixed_weights_ir(tmp_path)
    monkeypatch.setattr(ir2onnx.write, "_PROTOBUF_LIMIT", 10_000)
    with pytest.raises(ir2onnx.ConversionError, match="2 GiB"):
        ir2onnx.convert_file(xml, tmp_path / "m.onnx", weights="inline")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.bin", "model.xml"]


def test_bad_mode_and_contradiction(tmp_path: Path) -> None:
    xml = mixed_weights_ir(tmp_path)
    with pytest.raises(ir2onnx.ConversionError, match="unknown weight mode"):
        ir2onnx.convert_file(xml, tmp_path / "m.onnx", weights="mmap")
    with pytest.raises(ir2onnx.ConversionError, match="contradicts"):
        ir2onnx.convert_file(xml, tmp_path / "m.onnx", weights="reference", external_data=True)


def test_data_file_may_not_be_the_bin(tmp_path: Path) -> None:
    xml = mixed_weights_ir(tmp_path)
    os.rename(tmp_path / "model.bin", tmp_path / "m.onnx.data")
    with pytest.raises(ir2onnx.ConversionError, match="overwrite"):
        ir2onnx.convert_file(xml, tmp_path / "m.onnx", tmp_path / "m.onnx.data")


def test_cli_weight_modes(tmp_path: Path) -> None:
    xml = mixed_weights_ir(tmp_path / "ir")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "ir2onnx", "convert", str(xml), *args], capture_output=True,
                              text=True, cwd=ROOT, timeout=300, check=False)

    r = run("-o", str(tmp_path / "out" / "m.onnx"), "--weights", "reference")
    assert r.returncode == 2 and "parent directories" in r.stderr and "Traceback" not in r.stderr
    r = run("-o", str(tmp_path / "out" / "m.onnx"), "--weights", "copy", "--quiet")
    assert r.returncode == 0 and r.stdout == "", r.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["m.onnx", "m.onnx.data"]
    r = run("-o", str(tmp_path / "ir" / "m.onnx"), "--opset", "17")  # u4 unpacked: computed, to the data file
    assert r.returncode == 0 and "wrote" in r.stdout, r.stderr
    assert {loc for loc, _, _ in locations(tmp_path / "ir" / "m.onnx").values()} == {"model.bin", "m.onnx.data"}


def test_progress_reports_the_bytes_written(tmp_path: Path) -> None:
    xml = mixed_weights_ir(tmp_path)
    calls: list[tuple[int, int]] = []
    out = ir2onnx.convert_file(xml, tmp_path / "m.onnx", weights="copy", progress=lambda d, t: calls.append((d, t)))
    total = (tmp_path / "m.onnx.data").stat().st_size
    assert calls[-1] == (total, total) and all(t == total for _, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls) and len(calls) >= 3
    runs_like_openvino(xml, out)


def sized_weights_ir(directory: Path) -> Path:
    """Weights of each size that the written proto treats differently: inline in the file (<= 1 KiB), external but
    inline in the validated weightless copy (up to 64 KiB), and left out of that copy (above 64 KiB); f32 ones kept
    as they are and u1 ones unpacked (computed), with a scalar Const between them."""
    rng = np.random.default_rng(1)
    x = ops.parameter([4, 128], np.float32, name="x")
    y = x
    for rows in (1, 4, 256):
        w = ops.constant(rng.standard_normal((rows, 128)).astype(np.float32))
        y = ops.add(ops.multiply(y, ops.constant(np.float32(0.5))), ops.reduce_sum(w, [0], True))
    for rows in (16, 1024):
        bits = ov.op.Constant(ov.Type.u1, ov.Shape([rows, 128]), rng.integers(0, 2, rows * 128).tolist())
        y = ops.add(y, ops.reduce_sum(ops.convert(bits, np.float32), [0], True))
    directory.mkdir(parents=True, exist_ok=True)
    xml = directory / "model.xml"
    ov.save_model(ov.Model([y], [x], "sized"), str(xml), compress_to_fp16=False)
    return xml


@pytest.mark.parametrize("weights", ["reference", "copy", "inline"])
@pytest.mark.parametrize("source", ["sized", "samples/ti_lstm", "samples/nested", "samples/while_loop"])
def test_written_proto_completed_from_the_validated_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       weights: str, source: str) -> None:
    """The file's proto is completed from the weightless copy that validation serialised (protos.complete_weightless),
    byte for byte what serialising the model gives."""
    import ir2onnx.write

    if source == "sized":
        xml = sized_weights_ir(tmp_path / "ir")
    else:
        shutil.copytree(ROOT / source, tmp_path / "ir")
        xml = tmp_path / "ir" / "model.xml"
    completed = []
    complete = ir2onnx.write.complete_weightless
    monkeypatch.setattr(ir2onnx.write, "complete_weightless", lambda *a: completed.append(complete(*a)) or completed[-1])
    files = {}
    for how in ("completed", "serialised"):
        out = (tmp_path / "ir" if weights == "reference" else tmp_path / how) / "m.onnx"
        ir2onnx.convert_file(xml, out, weights=weights)
        data = out.parent / "m.onnx.data"
        files[how] = (out.read_bytes(), data.read_bytes() if data.exists() else None)
        monkeypatch.setattr(ir2onnx.write, "complete_weightless", lambda *a: None)
    assert len(completed) == 1 and completed[0] is not None
    assert files["completed"] == files["serialised"]
    if source == "sized" and weights == "reference":
        proto = onnx.load(str(tmp_path / "ir" / "m.onnx"), load_external_data=False)
        external = [t for t in proto.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
        assert len(external) == 4 and len(proto.graph.initializer) > 4  # the 512-byte weight and the scalars inline
        assert {loc for loc, _, _ in locations(tmp_path / "ir" / "m.onnx").values()} == {"model.bin", "m.onnx.data"}


def weights_and_bits_ir(directory: Path, rows: int, bit_rows: int) -> Path:
    """x + sum(W) + sum(B): W f32 [rows, 128] (read as it is), B u1 [bit_rows, 128] (unpacked: computed)."""
    rng = np.random.default_rng(2)
    x = ops.parameter([2, 128], np.float32, name="x")
    w = ops.constant(rng.standard_normal((rows, 128)).astype(np.float32))
    bits = ov.op.Constant(ov.Type.u1, ov.Shape([bit_rows, 128]), rng.integers(0, 2, bit_rows * 128).tolist())
    y = ops.add(ops.add(x, ops.reduce_sum(w, [0], True)), ops.reduce_sum(ops.convert(bits, np.float32), [0], True))
    directory.mkdir(parents=True, exist_ok=True)
    xml = directory / "model.xml"
    ov.save_model(ov.Model([y], [x], "bits"), str(xml), compress_to_fp16=False)
    return xml


def _no_temporary_files(directory: Path) -> None:
    assert not [p.name for p in directory.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("bit_rows, whole", [(16, True), (1024, False)], ids=["bin-copied-whole", "per-weight"])
def test_copy_of_the_whole_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bit_rows: int, whole: bool) -> None:
    """A .bin the model reads nearly all of as it is is copied whole while converting (bincopy.py), the computed
    weights after it; one with more unread (here the packed bits the conversion unpacks) is written weight by weight
    and the copy removed."""
    import ir2onnx.bincopy

    monkeypatch.setattr(ir2onnx.bincopy, "MIN_BYTES", 0)
    xml = weights_and_bits_ir(tmp_path / "ir", 256, bit_rows)
    (tmp_path / "out").mkdir()  # (the copy starts only into an existing directory: none is made for a failure)
    out = ir2onnx.convert_file(xml, tmp_path / "out" / "m.onnx", weights="copy")
    data = (tmp_path / "out" / "m.onnx.data").read_bytes()
    original = xml.with_suffix(".bin").read_bytes()
    locs = locations(out)
    assert {loc for loc, _, _ in locs.values()} == {"m.onnx.data"}
    if whole:
        assert data[:len(original)] == original
        assert len(data) == len(original) + bit_rows * 128  # the unpacked bits (a byte each) after the .bin
    else:
        assert len(data) == sum(n for _, _, n in locs.values())
    _no_temporary_files(tmp_path / "out")
    onnx.checker.check_model(str(out))
    assert_equivalent(xml, rng_inputs([((2, 128), np.float32)]), proto=onnx.load(str(out)))


def test_failed_copy_falls_back_to_writing_each_weight(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ir2onnx.bincopy

    class FailingReads:
        """The os module, whose reads fail (for the copy's thread only)."""

        def __getattr__(self, name: str) -> object:
            return getattr(os, name)

        @staticmethod
        def copy_file_range(*args: object) -> int:
            raise OSError(5, "input/output error")

        pread = copy_file_range

    monkeypatch.setattr(ir2onnx.bincopy, "MIN_BYTES", 0)
    monkeypatch.setattr(ir2onnx.bincopy, "os", FailingReads())
    xml = weights_and_bits_ir(tmp_path / "ir", 256, 16)
    (tmp_path / "out").mkdir()
    out = ir2onnx.convert_file(xml, tmp_path / "out" / "m.onnx", weights="copy")
    locs = locations(out)
    assert (tmp_path / "out" / "m.onnx.data").stat().st_size == sum(n for _, _, n in locs.values())
    _no_temporary_files(tmp_path / "out")
    assert_equivalent(xml, rng_inputs([((2, 128), np.float32)]), proto=onnx.load(str(out)))


def test_copy_removed_when_the_conversion_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ir2onnx.bincopy

    monkeypatch.setattr(ir2onnx.bincopy, "MIN_BYTES", 0)
    xml = weights_and_bits_ir(tmp_path / "ir", 256, 16)
    xml.write_text(xml.read_text().replace('type="ReduceSum"', 'type="NoSuchOp"', 1))
    (tmp_path / "out").mkdir()
    with pytest.raises(ir2onnx.errors.ConversionError):
        ir2onnx.convert_file(xml, tmp_path / "out" / "m.onnx", weights="copy")
    assert list((tmp_path / "out").iterdir()) == []


def test_prefetch_only_for_copied_weights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line's early copy: started only where the weights will be copied there, handed over only to the
    conversion of that .bin into that directory (else removed)."""
    from ir2onnx import bincopy

    monkeypatch.setattr(bincopy, "MIN_BYTES", 0)
    xml = weights_and_bits_ir(tmp_path / "ir", 256, 16)
    bin_path, elsewhere = xml.with_suffix(".bin"), tmp_path / "elsewhere"
    elsewhere.mkdir()
    bincopy.prefetch(bin_path, xml.with_suffix(".onnx"), None)  # beside the .bin: referenced by default
    assert bincopy.take(bin_path, xml.with_suffix(".onnx")) is None
    bincopy.prefetch(bin_path, elsewhere / "m.onnx", "inline")
    assert bincopy.take(bin_path, elsewhere / "m.onnx") is None
    bincopy.prefetch(bin_path, elsewhere / "m.onnx", None)  # elsewhere: copied by default
    assert bincopy.take(bin_path, tmp_path / "ir" / "m.onnx") is None  # another directory: removed
    assert list(elsewhere.iterdir()) == []
    bincopy.prefetch(bin_path, elsewhere / "m.onnx", "copy")
    copy = bincopy.take(bin_path, elsewhere / "m.onnx")
    assert copy is not None and copy.finish() and Path(copy.path).read_bytes() == bin_path.read_bytes()
    copy.discard()
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("failure", ["device", "none"])
def test_cli_copy_leaves_only_its_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str) -> None:
    """The command line starts the copy before it imports the converters; a failure before the conversion (an
    unknown device) removes it, a conversion uses it."""
    import ir2onnx.bincopy
    from ir2onnx.cli import run

    monkeypatch.setattr(ir2onnx.bincopy, "MIN_BYTES", 0)
    xml = weights_and_bits_ir(tmp_path / "ir", 256, 16)
    (tmp_path / "out").mkdir()
    extra = ["--device", "tpu"] if failure == "device" else []
    code = run(["convert", str(xml), "-o", str(tmp_path / "out" / "m.onnx"), "--weights", "copy", "--quiet", *extra])
    if failure == "device":
        assert code != 0 and list((tmp_path / "out").iterdir()) == []
    else:
        assert code == 0 and sorted(p.name for p in (tmp_path / "out").iterdir()) == ["m.onnx", "m.onnx.data"]
        assert (tmp_path / "out" / "m.onnx.data").read_bytes().startswith(xml.with_suffix(".bin").read_bytes())

"""`ir2onnx convert DIR -o OUTDIR` (ir2onnx/batch.py) through the real entry point: a folder of mixed IRs (samples,
stored fixtures, one nested, a truncated .bin, an unknown op type) converted by two workers; the outputs mirrored and
run in onnxruntime, the table, JSON and HTML rows, exit codes, the skip of up-to-date outputs and --force, a worker
that aborts, and Ctrl-C. The worker hooks are ir2onnx.batch.HOOK_ENV's."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from ir2onnx.batch import HOOK_ENV, Row, Task, crash_words, one_line
from ir2onnx.batch_report import render_html
from tests.fixture_paths import fixture_dir
from tests.test_cli import UNSUPPORTED  # an IR with two ops ir2onnx does not convert

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
# in the folder -> from; the fixtures with inputs.npz and expected.npz are compared with them
GOOD = {"ti_lstm.xml": SAMPLES / "ti_lstm" / "model.xml",
        "sub/deep/while_loop.xml": SAMPLES / "while_loop" / "model.xml",
        "fixtures/torch_gru/model.xml": fixture_dir("torch_gru") / "model.xml",
        "fixtures/tf_while_loop/model.xml": fixture_dir("tf_while_loop") / "model.xml"}
BAD = ("broken.xml", "unsupported.xml")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ir2onnx", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, check=False, env=_env(env))


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != HOOK_ENV}
    return {**env, "COLUMNS": "250", **(extra or {})}  # a table wide enough that no cell wraps


def make_irs(d: Path, *, bad: bool = True) -> Path:
    """The folder of IRs (and an XML that is no IR, which is not converted)."""
    for rel, xml in GOOD.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(xml, d / rel)
        shutil.copy(xml.with_suffix(".bin"), (d / rel).with_suffix(".bin"))
    if bad:
        shutil.copy(GOOD["ti_lstm.xml"], d / "broken.xml")
        (d / "broken.bin").write_bytes((SAMPLES / "ti_lstm" / "model.bin").read_bytes()[:1000])
        (d / "unsupported.xml").write_text(UNSUPPORTED)
        (d / "unsupported.bin").write_bytes(b"")
    (d / "sub" / "settings.xml").write_text('<?xml version="1.0"?>\n<settings/>\n')
    return d


def outputs(out: Path) -> list[str]:
    return sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())


def leftovers(out: Path) -> list[str]:
    return sorted(p.relative_to(out).as_posix() for p in out.rglob(".*"))


def onnx_path(out: Path, rel: str) -> Path:
    return out / Path(rel).with_suffix(".onnx")


def run_in_onnxruntime(model: Path, source: Path) -> None:
    """The model runs; a fixture's outputs match its framework's (expected.npz)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    stored = source.parent / "inputs.npz"
    if stored.exists():
        inputs = dict(np.load(stored))
    else:
        rng = np.random.default_rng(0)
        inputs = {i.name: rng.standard_normal([d if isinstance(d, int) else 2 for d in i.shape]).astype(np.float32)
                  for i in session.get_inputs()}
    got = session.run(None, inputs)
    expected = source.parent / "expected.npz"
    if expected.exists():
        want = np.load(expected)
        for i, g in enumerate(got):
            np.testing.assert_allclose(g, want[f"arr_{i}"], rtol=1e-4, atol=1e-5)


def report_rows(path: Path) -> dict[str, dict]:
    return {m["ir"]: m for m in json.loads(path.read_text())["models"]}


def test_converts_checks_and_reports(tmp_path: Path) -> None:
    src, out, rep = make_irs(tmp_path / "irs"), tmp_path / "out", tmp_path / "rep" / "batch.json"
    r = run("convert", str(src), "-o", str(out), "--jobs", "2", "--check", "--report", str(rep))
    assert r.returncode == 1, r.stdout + r.stderr  # two IRs refused
    assert "Traceback" not in r.stderr
    assert outputs(out) == sorted(["fixtures/tf_while_loop/model.onnx", "fixtures/torch_gru/model.onnx",
                                   "sub/deep/while_loop.onnx", "ti_lstm.onnx", "ti_lstm.onnx.data"])
    assert not leftovers(out)
    for rel, xml in GOOD.items():
        run_in_onnxruntime(onnx_path(out, rel), xml)

    rows = report_rows(rep)
    assert sorted(rows) == sorted([*GOOD, *BAD])  # settings.xml is no IR
    for rel in GOOD:
        row = rows[rel]
        assert row["conversion"] == "converted" and row["ok"], row
        assert row["check"] in ("passed", "ran") and row["check_report"]["passed"], row
        if row["check"] == "passed":  # (OpenVINO installed)
            assert row["check_detail"].startswith("max abs err") and row["status"] == "check passed"
        assert row["output"] == Path(rel).with_suffix(".onnx").as_posix()
        assert row["bin_bytes"] == (src / rel).with_suffix(".bin").stat().st_size
        assert row["onnx_bytes"] == onnx_path(out, rel).stat().st_size
        assert row["seconds"] > 0
    assert rows["ti_lstm.xml"]["data_bytes"] == (out / "ti_lstm.onnx.data").stat().st_size
    broken, unsupported = rows["broken.xml"], rows["unsupported.xml"]
    assert broken["conversion"] == unsupported["conversion"] == "refused"
    assert broken["check"] is None and not broken["ok"] and broken["onnx_bytes"] is None
    assert "truncated" in broken["reason"] and "\n" not in broken["reason"]
    assert unsupported["reason"].startswith("2 unsupported op type(s): FancyOp (opset1)")
    assert "OtherOp (opset9)" in unsupported["reason"] and "\n" in unsupported["error"]
    doc = json.loads(rep.read_text())
    assert doc["exit_code"] == 1 and doc["check"] and doc["jobs"] == 2 and doc["counts"]["refused"] == 2

    table = r.stdout  # one row per IR, the reason on it
    for rel in [*GOOD, *BAD]:
        assert rel in table
    assert "truncated" in table and "FancyOp (opset1)" in table and table.count("refused") >= 2
    page = rep.with_suffix(".html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page and "http" not in page
    for rel in [*GOOD, *BAD]:
        assert f"<td>{rel}</td>" in page
    assert "layer 1 &#x27;a&#x27; (FancyOp, line 6)" in page  # escaped text


def test_rerun_skips_up_to_date_outputs_unless_forced(tmp_path: Path) -> None:
    src, out, rep = make_irs(tmp_path / "irs", bad=False), tmp_path / "out", tmp_path / "r.json"
    r = run("convert", str(src), "-o", str(out), "--jobs", "2", "-q")
    assert r.returncode == 0, r.stdout + r.stderr
    made = {p: p.stat().st_mtime_ns for p in out.rglob("*.onnx")}
    assert len(made) == len(GOOD)

    changed = "sub/deep/while_loop.xml"  # its .bin newer than its output: converted again, the others skipped
    later = time.time() + 5
    os.utime((src / changed).with_suffix(".bin"), (later, later))
    r = run("convert", str(src), "-o", str(out), "--jobs", "2", "--report", str(rep))
    assert r.returncode == 0, r.stdout + r.stderr
    rows = report_rows(rep)
    assert rows[changed]["conversion"] == "converted"
    assert all(m["conversion"] == "up to date" and m["ok"] for k, m in rows.items() if k != changed)
    assert sum(".xml" in line and "up to date" in line for line in r.stdout.splitlines()) == len(GOOD) - 1
    assert all(p.stat().st_mtime_ns == t for p, t in made.items() if p != onnx_path(out, changed))

    r = run("convert", str(src), "-o", str(out), "--jobs", "2", "--force", "--report", str(rep))
    assert r.returncode == 0, r.stdout + r.stderr
    assert {m["conversion"] for m in report_rows(rep).values()} == {"converted"}
    assert all(p.stat().st_mtime_ns > made[p] for p in made)


def test_a_worker_that_aborts_is_one_failed_row(tmp_path: Path) -> None:
    src, out, rep = make_irs(tmp_path / "irs"), tmp_path / "out", tmp_path / "r.json"
    r = run("convert", str(src), "-o", str(out), "--jobs", "2", "--report", str(rep),
            env={HOOK_ENV: "abort:ti_lstm.xml"})
    assert r.returncode == 1, r.stdout + r.stderr
    rows = report_rows(rep)
    crashed = rows["ti_lstm.xml"]
    assert crashed["conversion"] == "failed" and "crashed" in crashed["reason"] and "SIGABRT" in crashed["reason"]
    assert not onnx_path(out, "ti_lstm.xml").exists()
    for rel in GOOD:  # the pool went on
        if rel != "ti_lstm.xml":
            assert rows[rel]["conversion"] == "converted" and onnx_path(out, rel).is_file()
    assert {rows[b]["conversion"] for b in BAD} == {"refused"}
    assert not leftovers(out)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the processes in /proc")
def test_ctrl_c_stops_workers_and_leaves_no_partial_files(tmp_path: Path) -> None:
    src, out = make_irs(tmp_path / "irs"), tmp_path / "out"
    token = uuid.uuid4().hex  # in the environment of every process the command starts
    proc = subprocess.Popen([sys.executable, "-m", "ir2onnx", "convert", str(src), "-o", str(out), "--jobs", "2"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env({HOOK_ENV: "stall:ti_lstm.xml", "IR2ONNX_TEST_TOKEN": token}),
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not list(out.glob(".ti_lstm.onnx.*.tmp")):  # stalled while writing its weights
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, stdout + stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert not leftovers(out) and not onnx_path(out, "ti_lstm.xml").exists()
    import onnx

    for p in out.rglob("*.onnx"):  # what was written is whole
        onnx.load(str(p))
    deadline = time.monotonic() + 30
    while _running_with(token):  # workers and their fork server end
        assert time.monotonic() < deadline, _running_with(token)
        time.sleep(0.1)


def _running_with(token: str) -> list[int]:
    """Processes (not zombies) whose environment holds `token`."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if token.encode() in (d / "environ").read_bytes() and \
                    "\nState:\tZ" not in (d / "status").read_text():
                found.append(int(d.name))
        except OSError:
            continue
    return found


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before anything is converted (in this process: no worker starts)."""
    from ir2onnx.cli import run as cli

    src = make_irs(tmp_path / "irs", bad=False)
    xml_before = (src / "ti_lstm.xml").read_bytes()
    (tmp_path / "empty").mkdir()
    o = str(tmp_path / "o")
    cases = [
        ([str(src)], "needs -o OUTDIR"),
        ([str(src), "-o", str(src / "ti_lstm.xml")], "not a folder"),  # an IR's file as OUTDIR
        ([str(src), "-o", o, "--jobs", "0"], "--jobs 0"),
        ([str(src), "-o", o, "--bin", str(src / "ti_lstm.bin")], "--bin applies to one model"),
        ([str(src), "-o", o, "--skip-pass", "NoSuchPass"], "unknown pass or stage 'NoSuchPass'"),
        ([str(tmp_path / "empty"), "-o", o], "no IR"),
        ([str(src / "ti_lstm.xml"), "-o", str(tmp_path / "m.onnx"), "--force"], "apply to a folder"),
        ([str(src), "-o", str(src)], "would overwrite an input file"),  # with the link below
    ]
    (src / "ti_lstm.onnx").symlink_to(src / "ti_lstm.bin")  # OUTDIR = DIR, and an output that is an input
    for args, says in cases:
        code = cli(["convert", *args])
        err = capsys.readouterr().err
        assert code == 2 and says in err and "Traceback" not in err, (args, err)
    assert (src / "ti_lstm.xml").read_bytes() == xml_before and not (tmp_path / "o").exists()
    assert not (tmp_path / "m.onnx").exists()


def test_one_line_reasons() -> None:
    assert one_line("first line\nsecond") == "first line"
    assert one_line("2 unsupported op type(s):\n  - A (opset1) x1: here\n  - B (opset2) x3: there") == \
        "2 unsupported op type(s): A (opset1) x1: here; B (opset2) x3: there"
    assert len(one_line("x" * 1000)) == 400
    stderr = ("terminate called after throwing an instance of 'Ort::Exception'\n  what():  bad graph\n"
              "Fatal Python error: Aborted\n\nCurrent thread 0x1 (most recent call first):\n"
              '  File "/x/ort_helper.py", line 51 in load_error\n  File "/x/api.py", line 3 in convert_file\n')
    assert crash_words(stderr) == ("terminate called after throwing an instance of 'Ort::Exception' what():  bad "
                                   'graph (in File "/x/ort_helper.py", line 51 in load_error)')


def test_leftovers_of_a_killed_worker_are_removed(tmp_path: Path) -> None:
    from ir2onnx.batch import _remove_leftovers

    out = tmp_path / "m.onnx"
    mine = [tmp_path / ".m.onnx.abc.tmp", tmp_path / ".m.onnx.abc.tmp.data", tmp_path / ".ir2onnx-x.data.tmp"]
    for p in mine:
        p.write_bytes(b"partial")
    (tmp_path / "..m.onnx.abc.tmp.data.xyz").mkdir()
    keep = [tmp_path / "m.onnx.data", tmp_path / ".other.onnx.abc.tmp", tmp_path / "m.xml"]
    for p in keep:
        p.write_bytes(b"")
    _remove_leftovers(Task("m.xml", tmp_path / "m.xml", tmp_path / "m.bin", out, "m.onnx"), time.time())
    assert sorted(tmp_path.iterdir()) == sorted(keep)


def test_html_page_escapes_text() -> None:
    row = Row("a<b>.xml", "a<b>.onnx", "refused", reason="bad <script>alert(1)</script> & co", bin_bytes=10)
    page = render_html([row], {"input_dir": "in", "output_dir": "out", "summary": "1 IRs", "jobs": 1,
                               "check": False, "exit_code": 1, "ir2onnx": "0"})
    assert "<script>" not in page and "&lt;script&gt;" in page and "a&lt;b&gt;.xml" in page and "&amp; co" in page


def test_check_verdict_names_the_worst_error() -> None:
    from ir2onnx.batch_report import check_verdict
    from ir2onnx.verify.report import CheckReport, OutputComparison

    def out(name: str, err: float | None, passed: bool, message: str = "") -> OutputComparison:
        return OutputComparison(name, (2,), (2,), "float32", err, err, passed, message)

    ok = CheckReport((out("a", 1e-7, True), out("b", 3e-6, True)), reference=True, device="cpu")
    assert check_verdict(ok) == ("passed", "max abs err 3e-06 ('b')")
    bad = CheckReport((out("a", 0.5, False, "values differ"), out("b", 2.0, False, "values differ"),
                       out("c", 0.0, True)), reference=True, device="cpu")
    assert check_verdict(bad) == ("failed", "output 'b': values differ (max abs err 2, max rel err 2)")
    shape = CheckReport((out("a", 2.0, False, "x"), out("s", None, False, "shape differs")), reference=True,
                        device="cpu")
    assert check_verdict(shape)[1].startswith("output 's': shape differs")
    crashed = CheckReport((), reference=True, device="cpu", failure="onnxruntime: crashed (exit status -6)\nmore")
    assert check_verdict(crashed) == ("failed", "onnxruntime: crashed (exit status -6)")
    alone = CheckReport((out("a", None, True, "not compared"),), reference=False, device="cpu")
    assert check_verdict(alone)[0] == "ran"

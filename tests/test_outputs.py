"""Where reports go (issue 41, "nothing lost, round three"): a regular file is replaced atomically;
a FIFO, a device, a descriptor of this process and ``-`` (standard output) are written in place,
never replaced; a symlink stays a link.

Never a real ``/dev`` entry: the FIFO, the device nodes (twins of /dev/full and /dev/null, made
with ``os.mknod`` as root) and the links are made in a temporary directory.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pytest_xai.reports import files
from pytest_xai.reports.files import REPORT_FAILED

REF = "pytest_xai.explainers"
ES = f"--xai-explainer={REF}:exact_shapley"
QUIET = ("-p", "no:cacheprovider", "-p", "no:randomly")
ONE = ("-k", "symmetry and cough_and_fever and not 10_90")  # one fast suite test
REPORT = '{"schema": "pytest-xai/report", "version": 1, "results": []}'
FULL, NULL = (1, 7), (1, 3)  # the device numbers of /dev/full and /dev/null on Linux


class Reader:
    """A process's end of a FIFO: a thread that reads it whole, as ``cat FIFO`` would."""

    def __init__(self, fifo: Path):
        self.data: bytes | None = None
        self.thread = threading.Thread(target=self._read, args=(fifo,), daemon=True)
        self.thread.start()

    def _read(self, fifo: Path) -> None:
        with open(fifo, "rb") as fh:
            self.data = fh.read()

    def result(self, timeout: float = 30.0) -> bytes | None:
        self.thread.join(timeout)
        return self.data


def _twin(path: Path, device: tuple[int, int]) -> Path:
    """A character device with ``device``'s numbers at ``path`` (root only, else the test skips)."""
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(*device))
    except PermissionError:
        pytest.skip("this container may not make device nodes")
    return path


def _is_char_device(path: Path) -> bool:
    return stat.S_ISCHR(os.lstat(path).st_mode)


def _cli(*args: str, stdin: int | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest_xai", *args], capture_output=True, text=True, check=False, timeout=120
    )


# ------------------------------------------------------------------------------ files.write_text


def test_a_fifo_is_written_in_place_never_replaced(tmp_path):
    """Before: the atomic rename put a regular file where the FIFO was, and its reader waited forever."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = Reader(fifo)
    files.write_text(fifo, "through the pipe\n")
    assert reader.result() == b"through the pipe\n"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_device_node_is_written_in_place_never_replaced(tmp_path):
    """As root, ``merge -o /dev/full`` replaced the machine's /dev/full with a regular file: here a
    twin of it fails the write (no space left), a twin of /dev/null takes it, and both stay devices."""
    full, null = _twin(tmp_path / "full", FULL), _twin(tmp_path / "null", NULL)
    with pytest.raises(OSError, match="No space left on device"):
        files.write_text(full, "lost\n")
    files.write_text(null, "discarded\n")
    assert _is_char_device(full) and _is_char_device(null)
    assert sorted(os.listdir(tmp_path)) == ["full", "null"]  # no temporary file left


def test_a_symlink_stays_a_link_and_its_target_is_replaced_atomically(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "r.json"
    target.write_text("old")
    link, chain, dangling = tmp_path / "link.json", tmp_path / "chain.json", tmp_path / "dangling.json"
    link.symlink_to(target)
    chain.symlink_to(link)
    dangling.symlink_to(tmp_path / "real" / "new.json")
    files.write_text(chain, "via two links")
    assert chain.is_symlink() and link.is_symlink() and target.read_text() == "via two links"
    files.write_text(dangling, "created")
    assert dangling.is_symlink() and (tmp_path / "real" / "new.json").read_text() == "created"
    fifo = tmp_path / "real" / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "to-fifo").symlink_to(fifo)
    reader = Reader(fifo)
    files.write_text(tmp_path / "to-fifo", "through a link")
    assert reader.result() == b"through a link" and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["fifo", "new.json", "r.json"]


def test_a_descriptor_of_this_process_is_written_where_it_stands(tmp_path):
    """``/dev/stdout`` of a run redirected to a file (``> log``) is ``/proc/self/fd/1``: reopened,
    its offset is 0 and the report overwrote the log's beginning; replaced, the log was lost.  It
    is written through the descriptor itself: after what came before, before what follows."""
    log = tmp_path / "log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, b"before\n")
        files.write_text(f"/proc/self/fd/{fd}", "report\n")
        os.write(fd, b"after\n")
    finally:
        os.close(fd)
    assert log.read_text() == "before\nreport\nafter\n"
    read, write = os.pipe()
    try:
        files.write_text(f"/proc/self/fd/{write}", "piped")
        os.close(write)
        assert os.read(read, 100) == b"piped"
    finally:
        os.close(read)


def test_a_dash_is_standard_output(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files.write_text("-", "to stdout\n")
    assert capsys.readouterr().out == "to stdout\n"
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- the run's reports


def test_a_runs_reports_keep_a_fifo_and_a_link(pytester, tmp_path):
    """Before: ``--xai-report=FIFO`` left a regular file there (its reader waiting forever) and
    ``--xai-save-baseline=LINK`` replaced the link by a file."""
    fifo, real, link = tmp_path / "fifo", tmp_path / "real.json", tmp_path / "link.json"
    os.mkfifo(fifo)
    link.symlink_to(real)
    reader = Reader(fifo)
    result = pytester.runpytest(*QUIET, ES, *ONE, f"--xai-report={fifo}", f"--xai-save-baseline={link}")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    assert [r["status"] for r in json.loads(reader.result() or b"null")["results"]] == ["PASS"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink()
    assert [r["status"] for r in json.loads(real.read_text())["results"]] == ["PASS"]


def test_a_runs_report_to_a_full_device_fails_alone_and_leaves_the_device(pytester, tmp_path):
    """Before: the twin of /dev/full became a regular file holding the HTML report, exit 0."""
    full = _twin(tmp_path / "full", FULL)
    result = pytester.runpytest(*QUIET, ES, *ONE, f"--xai-report={tmp_path / 'r.json'}", f"--xai-html={full}")
    assert result.ret == REPORT_FAILED
    assert _is_char_device(full)
    assert f"could not write the HTML report {full}: OSError: [Errno 28] No space left on device" in (
        result.stderr.str()
    )
    assert [r["status"] for r in json.loads((tmp_path / "r.json").read_text())["results"]] == ["PASS"]


def test_a_runs_report_to_dash_goes_to_standard_output(pytester):
    result = pytester.runpytest(*QUIET, ES, *ONE, "--xai-report=-")
    assert result.ret == pytest.ExitCode.OK
    text = result.stdout.str()
    doc, _ = json.JSONDecoder().raw_decode(text[text.index('{\n  "schema"') :])
    assert [r["status"] for r in doc["results"]] == ["PASS"]
    assert not (pytester.path / "-").exists()


# ------------------------------------------------------------------------ python -m pytest_xai


def test_merge_and_html_write_a_fifo_a_link_and_dash_in_place(tmp_path):
    report = tmp_path / "a.json"
    report.write_text(REPORT)
    fifo, real, link = tmp_path / "fifo", tmp_path / "real.html", tmp_path / "link.html"
    os.mkfifo(fifo)
    link.symlink_to(real)
    reader = Reader(fifo)
    done = _cli("merge", str(report), "-o", str(fifo), "--html", str(link))
    assert done.returncode == 0, done.stderr
    assert json.loads(reader.result() or b"null")["results"] == []
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink() and "<!DOCTYPE html>" in real.read_text()
    done = _cli("merge", str(report), "-o", "-")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"] == []  # the JSON alone: the summary line went to stderr
    assert "merged 1 reports, 0 results: -" in done.stderr
    done = _cli("html", str(report), "-o", "-")
    assert done.returncode == 0 and done.stdout.startswith("<!DOCTYPE html>") and "HTML report: -" in done.stderr
    assert not (Path.cwd() / "-").exists()


def test_merge_to_a_full_device_fails_in_one_line_and_leaves_the_device(tmp_path):
    """As root, ``merge -o /dev/full`` replaced the machine's /dev/full with a regular file."""
    report = tmp_path / "a.json"
    report.write_text(REPORT)
    full = _twin(tmp_path / "full", FULL)
    done = _cli("merge", str(report), "-o", str(full))
    assert done.returncode == 1
    assert done.stderr.strip() == f"pytest_xai merge: could not write {full}: [Errno 28] No space left on device"
    assert _is_char_device(full)
    done = _cli("html", str(report), "-o", str(full))
    assert done.returncode == 1 and "could not write" in done.stderr and _is_char_device(full)


def test_pictures_of_a_report_on_a_stream_go_to_the_working_directory(tmp_path, monkeypatch):
    """The pictures are drawn beside the JSON report (``<report>-pictures``): of ``-`` that was
    ``./--pictures``, of ``/dev/null`` a folder made in /dev.  A report written to standard output
    or to a device of /dev or /proc draws in ``xai-report-pictures`` of the working directory; a
    FIFO of the user's own folder still has its pictures beside it."""
    from pytest_xai.reports import embed

    monkeypatch.chdir(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    read, write = os.pipe()
    try:
        for stream in ("-", f"/proc/self/fd/{write}"):
            assert embed.folder(stream) == Path("xai-report-pictures"), stream
    finally:
        os.close(read)
        os.close(write)
    assert embed.folder(fifo) == tmp_path / "fifo-pictures"
    assert embed.folder(tmp_path / "r.json") == tmp_path / "r-pictures"
    assert embed.folder("r.json") == Path("r-pictures")


# ------------------------------------------------------------- checked before anything runs


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--xai-report=r.json", "--xai-html=r.json"), "--xai-report=r.json and --xai-html=r.json are one file"),
        (("--junitxml=r.json", "--xai-report=r.json"), "--xai-report=r.json and --junitxml=r.json are one file"),
        (
            ("--xai-save-baseline=out/b.json", "--xai-html=out/../out/b.json"),
            "--xai-save-baseline=out/b.json and --xai-html=out/../out/b.json are one file",
        ),
        (("--xai-report=link.json", "--xai-html=r.json"), "--xai-report=link.json and --xai-html=r.json are one file"),
        (("--xai-report=-", "--xai-html=-"), "--xai-report=- and --xai-html=- are one file (standard output)"),
        (
            ("--xai-report=-", "--xai-html=/proc/self/fd/1"),
            "--xai-report=- and --xai-html=/proc/self/fd/1 are one file (standard output)",
        ),
        (("--html=r.html", "--xai-html=r.html"), "--xai-html=r.html and --html=r.html are one file"),
    ],
    ids=["json-html", "junit", "dotdot", "symlink", "dash", "dash-fd1", "pytest-html"],
)
def test_two_outputs_at_one_path_are_a_usage_error(pytester, args, message):
    """Before: exit 0, and r.json held the HTML report (``--xai-html`` written last), or the JUnit
    XML was silently replaced by the JSON report."""
    if any(arg.startswith("--html=") for arg in args):
        pytest.importorskip("pytest_html")
    (pytester.path / "link.json").symlink_to("r.json")
    result = pytester.runpytest(*QUIET, ES, *ONE, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}*: give each report its own path"])
    assert not (pytester.path / "r.json").exists() and not (pytester.path / "out").exists()


@pytest.mark.parametrize("option", ["--junitxml", "--xai-report", "--xai-html", "--xai-save-baseline"])
def test_an_output_where_no_file_can_be_made_is_a_usage_error(pytester, option):
    """``/proc`` passes ``os.access`` as root but takes no new file.  Before, with ``--junitxml``:
    pytest's JUnit writer raised at session finish, before the plugin's writers ran (no JSON report,
    no table, INTERNALERROR); with one of ours, the run ended with exit 6."""
    other = () if option == "--xai-report" else (f"--xai-report={pytester.path / 'r.json'}",)
    result = pytester.runpytest(*QUIET, ES, *ONE, f"{option}=/proc/x.xml", *other)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {option}=/proc/x.xml: no file can be created in /proc (*); choose another*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


# ------------------------------------------------------------------- at the end: each on its own

TAKES = """
import os

def test_passes_and_takes_the_path(xai_explainer):
    os.makedirs({path!r})
"""


def test_a_junit_writer_that_fails_at_the_end_costs_no_xai_report(pytester, tmp_path):
    """pytest's JUnit writer raises at session finish when its path became a directory during the
    run; the plugin's writers ran after it and never got there (no JSON report, no HTML report).
    They run whatever the other session-finish hooks do, and say what they wrote on stderr, since
    pytest's summary is lost with the error."""
    junit = tmp_path / "j.xml"
    pytester.makepyfile(test_takes=TAKES.format(path=str(junit)))
    json_path, html = tmp_path / "r.json", tmp_path / "r.html"
    result = pytester.runpytest(
        *QUIET,
        ES,
        "test_takes.py",
        "--xai-no-suite",
        f"--junitxml={junit}",
        f"--xai-report={json_path}",
        f"--xai-html={html}",
    )
    assert "IsADirectoryError" in result.stdout.str() + result.stderr.str()  # pytest's own error
    assert [r["status"] for r in json.loads(json_path.read_text())["results"]] == ["PASS"]
    assert "<!DOCTYPE html>" in html.read_text()
    result.stderr.fnmatch_lines([f"pytest-xai: JSON report: {json_path}", f"pytest-xai: HTML report: {html}"])


def test_the_footer_names_only_the_reports_written(pytester, tmp_path):
    """Before: ``JSON report: PATH`` after a JSON report that could not be written."""
    json_path, html, base = tmp_path / "r.json", tmp_path / "r.html", tmp_path / "b.json"
    pytester.makepyfile(test_takes=TAKES.format(path=str(json_path)))
    result = pytester.runpytest(
        *QUIET,
        ES,
        "test_takes.py",
        "--xai-no-suite",
        f"--xai-report={json_path}",
        f"--xai-html={html}",
        f"--xai-save-baseline={base}",
    )
    assert result.ret == REPORT_FAILED
    out = result.stdout.str()
    assert f"JSON report: {json_path}" not in out
    result.stdout.fnmatch_lines(
        [
            "*xai scores*",
            f"JSON report not written: {json_path} (IsADirectoryError: *)",
            f"baseline saved: {base}",
            f"HTML report: {html}",
        ]
    )
    assert [r["status"] for r in json.loads(base.read_text())["results"]] == ["PASS"]


@pytest.mark.parametrize(
    "args",
    [
        ("merge", "a.json", "-o", "all.json", "--html", "all.json"),
        ("merge", "a.json", "-o", "-", "--html", "-"),
        ("merge", "a.json", "-o", "a.json"),
        ("html", "a.json", "-o", "link.json"),
    ],
    ids=["json-html", "dash", "input", "input-by-link"],
)
def test_the_commands_refuse_two_uses_of_one_file(tmp_path, monkeypatch, args):
    """As ``--xai-report``/``--xai-html`` of a run: before, ``merge -o all.json --html all.json`` left
    the HTML in all.json, and ``html a.json -o a.json`` replaced the report it rendered."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.json").write_text(REPORT)
    (tmp_path / "link.json").symlink_to("a.json")
    done = _cli(*args)
    assert done.returncode == 2 and "are one file" in done.stderr, done.stderr
    assert (tmp_path / "a.json").read_text() == REPORT and not (tmp_path / "all.json").exists()
    assert done.stdout == ""

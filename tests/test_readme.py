"""The README stays true and short: its two set-up commands are the ones CI runs, its figures are
the script's from a real run, and it is the home page of a documentation site that builds."""

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _figures_script():
    spec = importlib.util.spec_from_file_location("readme_figures", ROOT / "scripts" / "readme_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ci_runs_the_readme_commands():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## Set-up: two commands.*?```bash\n(.*?)```", readme, re.DOTALL).group(1)
    commands = [line for line in block.splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2
    install, main_job = commands[0].split(" && ")
    ci = (ROOT / ".ci" / "run").read_text()
    for command in (install, main_job, commands[1]):
        assert command.replace("pip install", "python -m pip install --quiet") in ci or command in ci, command


def test_the_readme_is_short_and_task_first():
    """Issue 44: 597 lines before, the first how-to at line 176."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    headings = re.findall(r"^## (.+)$", readme, re.MULTILINE)
    tasks = [
        "Set-up: two commands",
        "Test your explainer",
        "Test your explainer on your model",
        "Compare explainers",
        "CI",
    ]
    assert headings[: len(tasks)] == tasks, headings


def test_the_readme_figures_are_the_scripts_from_its_last_run():
    """Every figure of the README is in the block scripts/readme_figures.py writes from a run's JSON
    report (its extract kept in docs/figures/main-job.json); no other number is typed by hand."""
    script = _figures_script()
    readme = (ROOT / "README.md").read_text()
    figures = json.loads(script.EXTRACT.read_text())
    assert script.readme_block(readme) == script.render(figures), "run scripts/readme_figures.py"
    outside = script.BLOCK.sub("", readme)
    prose = re.sub(r"```.*?```", "", outside, flags=re.DOTALL)  # commands and code hold no measurement
    assert not re.findall(r"\b\d[\d,.]*\s*(?:s|ms|min|tests|passed|failed|skipped|%)\b", prose)


def test_the_figures_script_reads_a_report(tmp_path):
    """Counts in pytest's order, only the excerpt's rows, the run's own aggregates."""
    script = _figures_script()
    rows = [
        {"row": row, "explainer": "e", "outcome": outcome, "status": status, "category": "fidelity", "score": 0.5}
        for row, outcome, status in (
            ("symmetry[cough_and_fever]", "failed", "FAIL"),
            ("dummy[digits_data_dummy]", "passed", "PASS"),
            ("ngt[chess_cnn_mate]", "skipped", "SKIP"),
        )
    ]
    report = {
        "created": "2026-12-07T00:00:00+00:00",
        "options": {"explainers": ["pkg.mod:e"]},
        "results": [{**r, "case": None, "check": None, "seconds": 0.1, "evaluations": 10} for r in rows],
        "summary": {
            "e": {
                "overall": {
                    "tests": 3,
                    "ran": 2,
                    "skipped": 1,
                    "passed": 1,
                    "errors": 0,
                    "timeouts": 0,
                    "mean_score": 0.5,
                    "mean_seconds": 0.1,
                    "mean_evaluations": 10,
                },
                "categories": {},
            }
        },
    }
    figures = script.extract(report)
    assert figures["outcomes"] == {"passed": 1, "failed": 1, "skipped": 1} and figures["explainers"] == ["e"]
    assert [r["row"] for r in figures["rows"]] == ["symmetry[cough_and_fever]", "ngt[chess_cnn_mate]"]
    text = script.render(figures)
    assert "gave 3 tests: 1 passed, 1 failed, 1 skipped" in text and "dummy" not in text
    assert re.search(r"^overall\s+1/2, 0\.500, 10 ev, wall 0\.10s/call$", text, re.MULTILINE), text


def _build_site(project: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_docs_site_builds_with_the_readme_as_its_home_page(tmp_path):
    built = _build_site(ROOT, tmp_path / "site")
    assert built.returncode == 0, built.stderr[-3000:]
    home = (tmp_path / "site" / "index.html").read_text()
    assert "Set-up: two commands" in home and 'href="explainers/"' in home  # README's docs/ links, made relative
    for page in (ROOT / "docs").glob("*.md"):
        assert (tmp_path / "site" / page.stem / "index.html").exists(), page.name


def test_a_broken_link_fails_the_docs_build(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    for name in ("README.md", "mkdocs.yml"):
        shutil.copy(ROOT / name, project / name)
    shutil.copytree(ROOT / "docs", project / "docs")
    shutil.copytree(ROOT / "scripts", project / "scripts")
    page = project / "docs" / "first-run.md"
    page.write_text(page.read_text() + "\nSee [the missing page](missing.md).\n")
    built = _build_site(project, tmp_path / "site")
    assert built.returncode != 0 and "missing.md" in built.stderr

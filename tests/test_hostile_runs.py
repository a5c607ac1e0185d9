"""Explainers that try to break the run itself (issue 29): modules that exit, hang or raise when
imported, and explainers that kill or stop the worker zygote.  Each ends with a verdict for the
healthy explainer and every report written, serially and under ``-n 2``."""

from __future__ import annotations

import json

import pytest

from tests.test_plugin import QUIET, REF

TOY = ("-k", "symmetry and cough_and_fever and not 10_90")
IMPORTS = {  # module: (its source, the cause its test must name)
    "exits_at_import": ("import os\nos._exit(0)\n", "ended with exit status 0 before the import finished"),
    "sysexit_at_import": ("import sys\nsys.exit(0)\n", "importing it raised SystemExit: 0"),
    "hangs_at_import": ("import time\ntime.sleep(10_000)\n", "was idle: it used"),
    "raises_at_import": ("raise RuntimeError('config missing')\n", "raised RuntimeError: config missing"),
}


def _by_explainer(path) -> dict:
    return {r["explainer"]: r for r in json.loads(path.read_text())["results"]}


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_module_that_exits_hangs_or_raises_at_import_fails_only_its_own_tests(pytester, xdist):
    """Before: ``os._exit(0)`` at import ended the run with exit 0, no table and no JSON (the
    plugin imported user modules in its own process at configure); the hang hung the run."""
    if xdist:
        pytest.importorskip("xdist")
    for name, (source, _) in IMPORTS.items():
        pytester.makepyfile(**{name: source + "\ndef explain(inputs):\n    return inputs\n"})
    report = pytester.path / "r.json"
    specs = [f"--xai-explainer={name}:explain" for name in IMPORTS]
    result = pytester.runpytest_subprocess(*QUIET, *xdist, *TOY, *specs, f"--xai-explainer={REF}:exact_shapley",
                                           "--xai-timeout=2", f"--xai-report={report}", timeout=240)
    result.assert_outcomes(passed=1, failed=len(IMPORTS))
    assert result.ret == 1
    results = _by_explainer(report)
    assert results["exact_shapley"]["status"] == "PASS"
    for name, (_, cause) in IMPORTS.items():
        rec = results[f"{name}:explain"]
        assert rec["status"] in ("ERROR", "TIMEOUT") and cause in rec["error"], (name, rec["error"])
    result.stdout.fnmatch_lines(["*xai scores*"])

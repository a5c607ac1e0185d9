"""Optional dependencies: which extra of pytest-xai installs a module, and what to tell a user
who lacks it (pure Python: no pytest, no numpy).

A test that needs a missing optional library is skipped with the install line, the convention of
``pytest.importorskip`` (README "Set-up: two commands", where the score table's ``skip`` is
explained): ``case units_weighted_features needs torch, which is not installed: pip install
"pytest-xai[torch]"``.  ``--xai-require=EXTRA,...`` fails such a test instead (:func:`required_failure`),
and the lines under the score table count what was missing (:func:`summary`).
"""

from __future__ import annotations

import re
from collections import Counter

#: Top-level module -> the extra of ``pyproject.toml`` that installs it (``tests/test_extras.py``
#: checks each against the extra's requirements).
EXTRAS = {
    "torch": "torch",
    "captum": "torch",
    "transformers": "llm",
    "shap": "shap",
    "xgboost": "shap",
    "sklearn": "shap",
    "lime": "lime",
    "chess": "chess",
    "matplotlib": "plot",
}


def install_line(module: str) -> str:
    """``pip install "pytest-xai[EXTRA]"`` for the top-level ``module``."""
    return f'pip install "pytest-xai[{EXTRAS[module]}]"'


def missing(exc: BaseException | None) -> str | None:
    """The optional top-level module whose absence raised ``exc`` (following ``raise ... from``
    and the exception being handled), or None when ``exc`` is about something else."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ModuleNotFoundError) and exc.name:
            top = exc.name.partition(".")[0]
            if top in EXTRAS:
                return top
        exc = exc.__cause__ or exc.__context__
    return None


def skip_reason(what: str, exc: BaseException) -> str | None:
    """Why ``what`` (e.g. ``case chess_oracle_check``) is skipped, or None when ``exc`` is no
    missing optional dependency (then it is a real error)."""
    module = missing(exc)
    if module is None:
        return None
    return f"{what} needs {module}, which is not installed: {install_line(module)}"


#: The install line of :func:`install_line`, as every skip for a missing library names it.
INSTALL = re.compile(r'pip install "pytest-xai\[([A-Za-z0-9_-]+)\]"')
#: What a skip turned into a failure by ``--xai-require`` says after the skip's reason.
REQUIRED = re.compile(r"; required by (--xai-require|ini xai_require)=")


def names() -> list[str]:
    """The extras that install optional libraries of :data:`EXTRAS`, sorted."""
    return sorted(set(EXTRAS.values()))


def check_require(value: str, source: str = "--xai-require") -> tuple[str, ...]:
    """The extras ``--xai-require`` (or ini ``xai_require``) names: comma- or space-separated, ``all``
    for every one."""
    from pytest_xai.options import OptionError

    given = [name for name in re.split(r"[,\s]+", value.strip()) if name]
    for name in given:
        if name not in names() and name != "all":
            raise OptionError(
                f"{source}={value}: {name!r} is no extra of pytest-xai; give some of {', '.join(names())} "
                f"(or all), comma-separated"
            )
    return tuple(names()) if "all" in given else tuple(dict.fromkeys(given))


def required_failure(reason: str, require: tuple[str, ...], source: str) -> str | None:
    """What a test that skipped with ``reason`` fails with when its missing library belongs to an
    extra of ``require`` (``--xai-require``), else None."""
    if not any(extra in require for extra in INSTALL.findall(reason)):
        return None
    return f"{reason}; required by {source}={','.join(require)}"


def summary(records: list) -> list[str]:
    """The lines under the score table about missing libraries (records of
    :class:`pytest_xai.reports.record.Record`): extras ``--xai-require`` named that were missing,
    tests skipped for a missing library, and explainers none of whose tests ran."""
    lines = []
    required: dict[tuple[str, str], int] = Counter()
    skipped: Counter[str] = Counter()
    for rec in records:
        detail = rec.detail or ""
        match = REQUIRED.search(detail)
        if match and rec.status != "SKIP":
            for extra in dict.fromkeys(INSTALL.findall(detail[: match.start()])):
                required[(match.group(1), extra)] += 1
        elif rec.status == "SKIP":
            for extra in dict.fromkeys(INSTALL.findall(detail)):
                skipped[extra] += 1
    for (source, extra), n in required.items():
        lines.append(
            f"xai: {source}: the extra {extra} is missing ({n} test{'s' * (n != 1)} needed it): "
            f'pip install "pytest-xai[{extra}]"'
        )
    if skipped:
        tests = sum(1 for rec in records if rec.status == "SKIP" and INSTALL.search(rec.detail or ""))
        counts = ", ".join(f"{extra} ({n})" for extra, n in skipped.most_common())
        wanted = ",".join(extra for extra, _ in skipped.most_common())
        lines.append(
            f"xai: {tests} test{'s' * (tests != 1)} skipped for a missing library: {counts}: "
            f'pip install "pytest-xai[{wanted}]"; --xai-require={wanted} makes it an error'
        )
    for explainer in dict.fromkeys(rec.explainer for rec in records if rec.explainer):
        mine = [rec for rec in records if rec.explainer == explainer]
        if all(rec.status == "SKIP" for rec in mine) and any(INSTALL.search(rec.detail or "") for rec in mine):
            lines.append(f"xai: every test of {explainer} skipped for a missing library: it was never run")
    return lines

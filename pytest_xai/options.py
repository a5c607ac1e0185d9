"""Validation of the plugin's options, before anything runs (pure Python: no pytest, no numpy).

Each function returns the cleaned value or raises :class:`OptionError` (a ``ValueError``) whose
message names the option, the bad value and what to do; the plugin turns it into a usage error
(exit code 4).  The rules are in docs/reference.md, "Options".
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MAX_SEED = 2**31 - 1  # sklearn's random_state takes < 2**32; case builders add small offsets


class OptionError(ValueError):
    """An option value is unusable; the message names the option, the value and the fix."""


def _number(value: Any, source: str, what: str) -> float:
    try:
        return float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise OptionError(f"{source}={value!r}: not a number; give {what}") from None


def gate_may_be_off(param: str) -> bool:
    """Whether ``+inf`` is meaningful for a threshold: only upper bounds (``max_*``), where it
    switches the gate off.  ``rtol`` is a tolerance inside the check's arithmetic, ``min_*`` a lower
    bound (0 is the loosest) and the others are selection parameters: all must be finite."""
    return param.startswith("max_")


def check_threshold(param: str, value: Any, source: str) -> float:
    """A threshold value: a number >= 0, finite, or ``inf`` for a ``max_*`` gate (gate off)."""
    number = _number(value, source, "a number >= 0")
    if math.isnan(number):
        raise OptionError(f"{source}: nan is not a threshold; give a number >= 0")
    if number < 0:
        raise OptionError(f"{source}: {number:g} is negative; thresholds are >= 0")
    if math.isinf(number) and not gate_may_be_off(param):
        loosest = "0 (the loosest lower bound)" if param.startswith("min_") else "a finite number"
        raise OptionError(f"{source}: inf is only allowed for max_* thresholds (gate off); {param!r} needs {loosest}")
    return number


def parse_thresholds(
    entries: list[str], source: str, known_checks: Mapping[str, Mapping[str, float]]
) -> dict[str, dict[str, float]]:
    """``CHECK.PARAM=VALUE`` entries -> ``{check: {param: value}}``; ``known_checks`` maps each
    check name to its thresholds (name -> default)."""
    out: dict[str, dict[str, float]] = {}
    for entry in entries:
        key, sep, raw = entry.partition("=")
        name, dot, param = key.strip().partition(".")
        param = param.strip()
        if not sep or not dot:
            raise OptionError(f"{source} {entry!r}: expected CHECK.PARAM=VALUE, e.g. symmetry.rtol=0.1")
        if name not in known_checks:
            close = difflib.get_close_matches(name, known_checks, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise OptionError(f"{source} {entry!r}: no check named {name!r}; {hint}known: {', '.join(known_checks)}")
        known = known_checks[name]
        if param not in known:
            raise OptionError(
                f"{source} {entry!r}: check {name!r} has no threshold {param!r}; it has: {', '.join(known)}"
            )
        try:
            number = float(raw)
        except ValueError:
            raise OptionError(f"{source} {entry!r}: {raw.strip()!r} is not a number") from None
        out.setdefault(name, {})[param] = check_threshold(param, number, f"{source} {entry!r}")
    return out


def check_timeout(value: Any, source: str = "--xai-timeout") -> float:
    """Seconds per explainer call: a finite number >= 0 (0 = in-process, no limit)."""
    what = "a finite number of seconds >= 0 (0 runs explainers in-process without a limit)"
    number = _number(value, source, what)
    if math.isnan(number) or number < 0:
        raise OptionError(f"{source}={value!r}: must be {what}")
    if math.isinf(number):
        raise OptionError(
            f"{source}={value!r}: no infinite limit; give 0 to run explainers in-process without "
            f"a limit, or a large number of seconds (e.g. 86400) to keep them in a child process"
        )
    return number


def check_seed(value: Any, source: str = "--xai-seed") -> int:
    """The base seed: an integer in [0, 2**31 - 1]."""
    what = f"an integer from 0 to {MAX_SEED}"
    if isinstance(value, bool):
        raise OptionError(f"{source}={value!r}: not an integer; give {what}")
    if isinstance(value, int):
        number = value
    else:
        try:
            number = int(str(value).strip())
        except ValueError:
            raise OptionError(f"{source}={value!r}: not an integer; give {what}") from None
    if not 0 <= number <= MAX_SEED:
        raise OptionError(f"{source}={value!r}: out of range; give {what}")
    return number


def check_repeat(value: Any, source: str = "--xai-repeat") -> int:
    """Seeds per (case, explainer): an integer from 1 to 100."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100:
        raise OptionError(
            f"{source}={value!r}: give an integer from 1 to 100 (e.g. 5 seeds for a stochastic "
            f"explainer; deterministic ones are run once whatever N is)"
        )
    return value


def check_budget(value: Any, source: str = "--xai-budget") -> int:
    """Model evaluations per explainer call (:mod:`pytest_xai.engine.budget`): a whole number >= 1000."""
    what = "a whole number of model evaluations >= 1000, e.g. 1000000 or 1e6"
    number = _number(value, source, what)
    if not (math.isfinite(number) and number >= 1000 and number == int(number)):
        raise OptionError(f"{source}={value!r}: must be {what}")
    return int(number)


def check_evaluations_factor(value: Any, source: str = "--xai-baseline-evaluations-factor") -> float | None:
    """How many times the baseline's model evaluations a test may spend before it regresses: a
    finite number >= 1, or ``0`` / ``off`` to compare no evaluations (None)."""
    if isinstance(value, str) and value.strip().lower() == "off":
        return None
    what = "a finite factor >= 1 (e.g. 2: a test spending over twice the baseline's evaluations regresses), or 0 / off"
    number = _number(value, source, what)
    if number == 0:
        return None
    if not (math.isfinite(number) and number >= 1):
        raise OptionError(f"{source}={value!r}: must be {what}")
    return number


def _first_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            return candidate
    return Path(os.sep)


def check_report_path(path: Any, source: str = "--xai-report", *, probe: bool = False) -> str | None:
    """An output file (a report): ``-`` (standard output), a FIFO, a device or a descriptor that
    can be written (in place), or a file that is not a directory, under a directory that exists
    (or can be created) and is writable.  With ``probe`` a file is created there and removed, since
    ``os.access`` says yes where none can be (``/proc`` as root): the report would be lost at the
    end of the run, after the tests."""
    from pytest_xai.reports import files

    if path is None:
        return None
    text = os.fspath(path)
    if not text.strip():
        raise OptionError(f"{source}={text!r}: empty path; give a file name such as xai-report.json")
    try:
        where = files.target(text)
    except IsADirectoryError:
        raise OptionError(
            f"{source}={text}: is a directory; give a file name, e.g. {Path(text) / 'xai-report.json'}"
        ) from None
    except OSError as exc:
        raise OptionError(f"{source}={text}: {exc.strerror or exc}; choose another path") from None
    if where.kind == "fd":
        try:
            os.fstat(where.fd or 0)
        except OSError:
            raise OptionError(f"{source}={text}: descriptor {where.fd} is not open; choose another path") from None
    if where.kind == "stream" and not os.access(where.path, os.W_OK):
        raise OptionError(f"{source}={text}: {where.path} is not writable; choose another path")
    if where.kind != "file":
        return text
    target = Path(where.path)
    existing = _first_existing(target.parent)
    if not existing.is_dir():
        raise OptionError(
            f"{source}={text}: {existing} is a file, not a directory, so the report cannot be "
            f"written under it; choose another path"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OptionError(f"{source}={text}: directory {existing} is not writable; choose another path")
    if probe:
        try:
            os.unlink(files.create_temp(existing / ".pytest-xai-probe"))
        except OSError as exc:
            raise OptionError(
                f"{source}={text}: no file can be created in {existing} ({exc.strerror or exc}); choose another path"
            ) from None
    return text


def check_outputs(outputs: list[tuple[str, str]]) -> None:
    """``[(option, path), ...]``, the run's outputs (ours and another writer's, such as
    ``--junitxml``): two that lead to one file (a link, ``..``, ``-`` and ``/dev/stdout``) would
    overwrite each other at the end of the run, so they are refused before it starts."""
    from pytest_xai.reports import files

    seen: dict[tuple[Any, ...], tuple[str, str]] = {}
    for option, path in outputs:
        try:
            identity = files.target(path).identity
        except OSError:  # refused by check_report_path, or another writer's business
            continue
        if identity in seen:
            first = "=".join(seen[identity])
            what = {("fd", 1): " (standard output)"}.get(
                identity, f" (descriptor {identity[1]})" if identity[0] == "fd" else ""
            )
            raise OptionError(f"{first} and {option}={path} are one file{what}: give each report its own path")
        seen[identity] = (option, path)


def check_data_dir(path: Any, source: str = "--xai-data-dir") -> str | None:
    """The directory of the user's real data sets: it must exist and be a directory."""
    if path is None:
        return None
    text = os.fspath(path)
    target = Path(text)
    if not target.exists():
        raise OptionError(
            f"{source}={text}: no such directory (misspelled?); give the directory holding "
            f"your downloaded files, or leave the option out to use synthetic data"
        )
    if not target.is_dir():
        raise OptionError(f"{source}={text}: is a file, not a directory; give the directory that contains it")
    return text

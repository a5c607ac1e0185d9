"""The registries of the suite: families, cases and checks (pure Python: no numpy, no pytest).

Three tables, filled as modules are imported, under one rule: a name is claimed by one origin (the
module, or the function a module defines), an origin imported again (pytest's in-process runs)
registers again silently, and the same name from another origin is an error naming both.

- :data:`FAMILIES`: :class:`Family`, each family's one declaration, made by the module that
  registers its cases::

      FAMILY = Family("units", source="Lee et al. 2025, XAI-Units (arXiv 2506.01059)",
                      smoke=("units_mse", "units_weighted_features"))

      @FAMILY.case(checks={"units_mse": {}}, source="weighted features")
      def units_weighted_features(info, *, seed, cache): ...

  The built-in ones (every module of :mod:`pytest_xai.cases`) and those of the entry-point group
  ``pytest_xai.families`` alike, so the fast gate (:func:`pytest_xai.cases.smoke`) and pytest's
  header (:func:`pytest_xai.cases.headers`) are derived from the declarations.
- :data:`CASES`: :class:`~pytest_xai.case.CaseInfo` by case name (:func:`register_case`, public as
  ``pytest_xai.register_case``; built by :func:`pytest_xai.cases.get`).
- :data:`CHECKS`: :class:`CheckInfo` by check name (:func:`register_check`, public as
  ``pytest_xai.register_check`` and ``pytest_xai.checks.check``).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_xai.case import CATEGORIES, CaseInfo

if TYPE_CHECKING:
    from pytest_xai.case import Case, Score

#: A check: ``check(attributions, case, **params) -> Score``.
CheckFunc = Callable[..., "Score"]
#: What a case builder may ask for by parameter name.
BUILD_ARGUMENTS = ("info", "seed", "cache", "data_dir")

FAMILIES: dict[str, Family] = {}
CASES: dict[str, CaseInfo] = {}
CHECKS: dict[str, CheckInfo] = {}
_ORIGINS: dict[tuple[str, str], str] = {}  # (kind, name) -> the origin that claimed it

T = TypeVar("T")


def _claim(table: dict[str, T], kind: str, name: str, value: T, origin: str, rename: str) -> None:
    """Put ``value`` in ``table`` under ``name`` for ``origin``: the one duplicate rule of the registries."""
    old = _ORIGINS.get((kind, name))
    if name in table and old is not None and old != origin:
        raise ValueError(f"{kind} {name!r} is registered twice ({old} and {origin}); rename one ({rename})")
    table[name] = value
    _ORIGINS[(kind, name)] = origin


def lookup(table: Mapping[str, T], name: str, kind: str) -> T:
    """``table[name]``, else a KeyError naming the closest names (or every name when none is close)."""
    try:
        return table[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, table, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(table)}"
        raise KeyError(f"no {kind} named {name!r}{hint}") from None


def _origin(func: Callable[..., Any] | None) -> str:
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', '?')}"


class Family:
    """A family of cases: its ``name`` (the ``family`` of its cases in every report), the ``source``
    it follows (paper or benchmark), ``smoke``, the ``(check, case)`` of its one test in the fast
    gate (``-m xai_smoke``, ``docs/ci.md``), ``header``, a function returning a line for pytest's
    header (e.g. a shipped model's measured accuracy), called once a run that has explainers, and
    ``libraries``, the model libraries its cases' builders import (a case may name its own; None,
    unknown, has the zygote import all it knows).

    ``module`` is the module that declared it (the family's origin).
    """

    def __init__(
        self,
        name: str,
        *,
        source: str = "",
        smoke: tuple[str, str] | None = None,
        header: Callable[[], str] | None = None,
        libraries: tuple[str, ...] | None = None,
    ):
        if not (isinstance(name, str) and name.isidentifier()):
            raise ValueError(f"Family({name!r}): the name must be an identifier, e.g. 'units'")
        if smoke is not None and not (
            isinstance(smoke, tuple) and len(smoke) == 2 and all(isinstance(s, str) for s in smoke)
        ):
            raise ValueError(
                f"Family({name!r}, smoke={smoke!r}): give the (check, case) pair of the family's test "
                f"in the fast gate, e.g. ('symmetry', 'cough_and_fever')"
            )
        self.name, self.source, self.smoke, self.header = name, source, smoke, header
        self.libraries = None if libraries is None else tuple(libraries)
        self.module: str = sys._getframe(1).f_globals.get("__name__", "?")
        _claim(FAMILIES, "family", name, self, self.module, "the first argument of Family")

    def __repr__(self) -> str:
        return f"Family({self.name!r}, module={self.module!r})"

    def case(
        self,
        *,
        category: str = "fidelity",
        source: str = "",
        checks: Mapping[str, Mapping[str, Any]] | list[str] | tuple[str, ...] = (),
        name: str | None = None,
        smoke: bool | list[str] | tuple[str, ...] = False,
        libraries: tuple[str, ...] | None = None,
    ) -> Callable[[Callable[..., Case]], Callable[..., Case]]:
        """Register a builder as a case of this family (:func:`register_case` with the family's
        name); ``source`` says where in the family's source the case comes from (a section, a test),
        appended to it; ``libraries`` replaces the family's."""
        full = f"{self.source}, {source}" if self.source and source else self.source or source
        return _register(
            family=self.name,
            category=category,
            source=full,
            checks=checks,
            name=name,
            smoke=smoke,
            libraries=self.libraries if libraries is None else tuple(libraries),
        )


#: The checks calibrated on a user case's reference (:mod:`pytest_xai.reference`): a case declaring
#: one of them gets ``gt_shapley`` too, unless it lists ``"-gt_shapley"``.
CALIBRATED = ("faithfulness", "monotonicity", "infidelity")


def user_checks(checks: Mapping[str, Mapping[str, Any]] | list[str] | tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """A user case's checks as {name: arguments}, with ``gt_shapley`` added (at the game of the first
    calibrated check, its ``conditional``) when the case declares faithfulness, monotonicity or
    infidelity: they forgive errors within their tolerance that the comparison with the reference
    itself catches (README "A reference for your model").  Added so, it holds the explainers that
    claim Shapley values (``explain.completeness = "background"``) and skips for the others and on a
    case without a reference; ``"-gt_shapley"`` in the list (or as a key) opts out."""
    given = {c: {} for c in checks} if isinstance(checks, (list, tuple)) else {k: dict(v) for k, v in checks.items()}
    if given.pop("-gt_shapley", None) is not None or "gt_shapley" in given:
        return given
    calibrated = [given[c] for c in CALIBRATED if c in given]
    if calibrated:
        game = {"convention": calibrated[0]["conditional"]} if "conditional" in calibrated[0] else {}
        given["gt_shapley"] = {**game, "if_claimed": True}
    return given


def register_case(
    *,
    family: str = "user",
    category: str = "fidelity",
    source: str = "",
    checks: Mapping[str, Mapping[str, Any]] | list[str] | tuple[str, ...] = (),
    name: str | None = None,
    smoke: bool | list[str] | tuple[str, ...] = False,
) -> Callable[[Callable[..., Case]], Callable[..., Case]]:
    """Declare a builder as a case named after the function (or ``name``); public as
    ``pytest_xai.register_case`` (a family's module uses :meth:`Family.case`).

    The builder asks by parameter name for any of ``info`` (the case's :class:`CaseInfo`), ``seed``,
    ``cache`` (always a :class:`pytest_xai.cache.Cache`; ``Cache(None)`` when there is no disk cache, so
    ``cache.arrays(...)`` and its siblings simply build) and ``data_dir``, and returns a
    :class:`Case` (e.g. from :func:`pytest_xai.make_case`; its ``info`` is replaced by the registered
    one).  ``checks`` lists the checks the suite runs on the case, by name, or maps each name to the
    case's own arguments and thresholds (``{"max_sensitivity": {"max_ratio": 0.3}}``); ``gt_shapley``
    joins faithfulness, monotonicity and infidelity unless ``"-gt_shapley"`` is listed
    (:func:`user_checks`).  ``smoke=True`` puts one test per check of the case into the fast gate
    (``-m xai_smoke``, ``docs/ci.md``); a list names the checks that go there.
    """
    return _register(
        family=family, category=category, source=source, checks=user_checks(checks), name=name, smoke=smoke
    )


def _register(
    *,
    family: str,
    category: str,
    source: str,
    checks: Mapping[str, Mapping[str, Any]] | list[str] | tuple[str, ...],
    name: str | None,
    smoke: bool | list[str] | tuple[str, ...],
    libraries: tuple[str, ...] | None = None,
) -> Callable[[Callable[..., Case]], Callable[..., Case]]:
    if category not in CATEGORIES:
        raise ValueError(f"category must be one of {CATEGORIES}, got {category!r}")
    checks = {c: {} for c in checks} if isinstance(checks, (list, tuple)) else dict(checks)
    if isinstance(smoke, bool):
        in_smoke = tuple(checks) if smoke else ()
    else:
        in_smoke = tuple(smoke)
        if isinstance(smoke, str) or set(in_smoke) - set(checks):
            raise ValueError(
                f"smoke={smoke!r}: give True (every check of the case) or a list of its checks "
                f"({', '.join(checks) or 'it declares none'})"
            )

    def decorate(build: Callable[..., Case]) -> Callable[..., Case]:
        case_name = name or build.__name__
        unknown = {
            p.name
            for p in inspect.signature(build).parameters.values()
            if p.name not in BUILD_ARGUMENTS and p.default is p.empty
        }
        if unknown:
            raise TypeError(
                f"case {case_name!r}: the builder asks for {sorted(unknown)}; it may ask only for "
                f"{', '.join(BUILD_ARGUMENTS)}"
            )
        doc = (build.__doc__ or "").strip().splitlines()
        _claim(
            CASES,
            "case",
            case_name,
            CaseInfo(
                name=case_name,
                family=family,
                category=category,
                source=source,
                checks={k: dict(v) for k, v in checks.items()},
                build=build,
                description=doc[0] if doc else "",
                smoke=in_smoke,
                libraries=libraries,
            ),
            _origin(build),
            "register_case(name=...)",
        )
        return build

    return decorate


@dataclass(frozen=True)
class CheckInfo:
    """A registered check.  ``passes_by_construction`` maps the members of the degenerate-explainer
    zoo (:mod:`pytest_xai.explainers.degenerate`) the check cannot fail, by its definition, to the
    reason; a key ``"member@case_glob"`` limits the exemption to the cases matching the glob.
    Every other zoo member must fail the check on every case (``tests/test_zoo.py``).  ``reference``
    is ``reference(case, params) -> array``: the correct attributions of the check on a case (the
    ground truth the zoo corrupts, e.g. ``case.truth["shapley"]``); it raises
    :class:`pytest_xai.NotApplicable` for a case without one, and is None for a check whose zoo
    verdicts are not tested (the test lists those with the reason)."""

    name: str
    func: CheckFunc
    marker: str
    thresholds: Mapping[str, float]
    doc: str
    passes_by_construction: Mapping[str, str] = field(default_factory=dict)
    reference: Callable[[Case, Mapping[str, Any]], Any] | None = None

    def exemption(self, member: str, case: str) -> str | None:
        """The declared reason why ``member`` passes this check on ``case``, or None (it must fail)."""
        import fnmatch

        if member in self.passes_by_construction:
            return self.passes_by_construction[member]
        for key, reason in self.passes_by_construction.items():
            name, sep, pattern = key.partition("@")
            if sep and name == member and fnmatch.fnmatchcase(case, pattern):
                return reason
        return None


def register_check(
    *,
    marker: str | None = None,
    thresholds: Mapping[str, float] = {},
    passes_by_construction: Mapping[str, str] = {},
    reference: Callable[[Case, Mapping[str, Any]], Any] | None = None,
    name: str | None = None,
) -> Callable[[CheckFunc], CheckFunc]:
    """Register ``func`` as a check named after it (or ``name``); public as ``pytest_xai.register_check``.

    ``thresholds`` are its tunable parameters and defaults.  ``marker`` is the pytest marker of the
    property (default ``xai_<name>``), registered with pytest automatically, its help text built from
    the docstring's first line and the threshold names (:func:`markers`); marker kwargs, then
    ``--xai-threshold NAME.PARAM=VALUE`` / ini ``xai_thresholds``, then the case, then these
    defaults decide each threshold.  ``passes_by_construction`` declares the zoo members the check
    cannot fail, with the reason (``{"input_minus_mean@x0_plus_x1_*": "it is the interventional
    Shapley value of x0 + x1"}``); the check's docstring must say why too.  ``reference(case,
    params)`` returns the correct attributions of the check on a case (see :class:`CheckInfo`); with
    it, ``tests/test_zoo.py`` asserts the declared zoo verdicts of the check on every case.  A check
    that re-runs the explainer asks for a ``reexplain`` parameter (see ``docs`` of
    :func:`pytest_xai.engine.runner.Runner.reexplain`).
    """

    def decorate(func: CheckFunc) -> CheckFunc:
        check_name = name or func.__name__
        doc = (func.__doc__ or "").strip().splitlines()
        _claim(
            CHECKS,
            "check",
            check_name,
            CheckInfo(
                check_name,
                func,
                marker or f"xai_{check_name}",
                dict(thresholds),
                doc[0] if doc else "",
                dict(passes_by_construction),
                reference,
            ),
            _origin(func),
            "register_check(name=...)",
        )
        return func

    return decorate


def markers() -> dict[str, str]:
    """The help text of every check marker, built from :data:`CHECKS` (the one source of marker docs).

    Checks sharing a marker (``xai_sanity``) are listed together."""
    docs: dict[str, list[str]] = {}
    for info in CHECKS.values():
        kwargs = f" (kwargs: {', '.join(info.thresholds)})" if info.thresholds else ""
        docs.setdefault(info.marker, []).append(f"{info.name}: {info.doc.rstrip('.') or 'a check'}{kwargs}")
    return {marker: "; ".join(parts) for marker, parts in docs.items()}

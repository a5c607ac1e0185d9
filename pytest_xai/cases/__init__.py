"""The catalogue of cases, one module per family.

A family module declares its cases with :func:`register` (public as ``pytest_xai.register_case``);
building is lazy and seeded::

    from pytest_xai import cases
    case = cases.get("cough_and_fever")          # built once, memoised
    cases.names()                                # every registered case

Cases come from the built-in families (:data:`FAMILIES`), from any module that registers cases
when imported (a user's ``conftest.py``), and from third-party packages through the entry-point
group :data:`ENTRY_POINTS` (each entry point names a module that registers cases and checks).
"""

from __future__ import annotations

import importlib
import inspect
import threading
from collections.abc import Callable, Mapping
from typing import Any

from pytest_xai.case import CATEGORIES, Case, CaseInfo

# Family modules, imported on first use of the catalogue (they import numpy).
FAMILIES = (
    "pytest_xai.cases.tabular",
    "pytest_xai.cases.units",
    "pytest_xai.cases.sanity",
    "pytest_xai.cases.human",
    "pytest_xai.cases.gaussian",
    "pytest_xai.cases.additive",
    "pytest_xai.cases.digits",
    "pytest_xai.cases.stress",
    "pytest_xai.cases.interactions",
    "pytest_xai.cases.fooling",
    "pytest_xai.cases.chess",
    "pytest_xai.cases.generic",
)
#: Entry-point group of third-party families: ``[project.entry-points."pytest_xai.families"]``.
ENTRY_POINTS = "pytest_xai.families"

_REGISTRY: dict[str, CaseInfo] = {}
_BUILT: dict[tuple, Case] = {}
_BUILDING: dict[tuple, threading.RLock] = {}  # one lock per key: a case is built once, by one thread
_GUARD = threading.Lock()
_LOADED: list[bool] = []
BUILD_ARGUMENTS = ("info", "seed", "cache", "data_dir")


def register(
    *, family: str = "user", category: str = "fidelity", source: str = "",
    checks: Mapping[str, Mapping[str, Any]] | list[str] | tuple[str, ...] = (), name: str | None = None,
    smoke: bool | list[str] | tuple[str, ...] = False,
) -> Callable[[Callable[..., Case]], Callable[..., Case]]:
    """Declare a builder as a case named after the function (or ``name``).

    The builder asks by parameter name for any of ``info`` (the case's :class:`CaseInfo`), ``seed``,
    ``cache`` (always a :class:`pytest_xai.cache.Cache`; ``Cache(None)`` when there is no disk cache, so
    ``cache.arrays(...)`` and its siblings simply build) and ``data_dir``, and returns a
    :class:`Case` (e.g. from :func:`pytest_xai.make_case`; its ``info`` is replaced by the registered
    one).  ``checks`` lists the checks the suite runs on the case, by name, or maps each name to the
    case's own arguments and thresholds (``{"max_sensitivity": {"max_ratio": 0.3}}``).  A module
    imported again (pytest's in-process runs) re-registers its own cases silently.  ``smoke=True``
    puts one test per check of the case into the fast gate (``-m xai_smoke``, ``docs/ci.md``);
    a list names the checks that go there.
    """
    if category not in CATEGORIES:
        raise ValueError(f"category must be one of {CATEGORIES}, got {category!r}")
    checks = {c: {} for c in checks} if isinstance(checks, (list, tuple)) else dict(checks)
    if isinstance(smoke, bool):
        in_smoke = tuple(checks) if smoke else ()
    else:
        in_smoke = tuple(smoke)
        if isinstance(smoke, str) or set(in_smoke) - set(checks):
            raise ValueError(f"smoke={smoke!r}: give True (every check of the case) or a list of its checks "
                             f"({', '.join(checks) or 'it declares none'})")

    def decorate(build: Callable[..., Case]) -> Callable[..., Case]:
        case_name = name or build.__name__
        unknown = {p.name for p in inspect.signature(build).parameters.values()
                   if p.name not in BUILD_ARGUMENTS and p.default is p.empty}
        if unknown:
            raise TypeError(f"case {case_name!r}: the builder asks for {sorted(unknown)}; it may ask only for "
                            f"{', '.join(BUILD_ARGUMENTS)}")
        old = _REGISTRY.get(case_name)
        if old is not None and _origin(old.build) != _origin(build):
            raise ValueError(f"case {case_name!r} is registered twice ({_origin(old.build)} and {_origin(build)}); "
                             f"rename one (register_case(name=...))")
        doc = (build.__doc__ or "").strip().splitlines()
        _REGISTRY[case_name] = CaseInfo(
            name=case_name, family=family, category=category, source=source,
            checks={k: dict(v) for k, v in checks.items()}, build=build,
            description=doc[0] if doc else "", smoke=in_smoke,
        )
        for key in [key for key in _BUILT if key[0] == case_name]:
            del _BUILT[key]
        return build

    return decorate


def _origin(func: Callable[..., Any] | None) -> str:
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', '?')}"


def _load_families() -> None:
    if _LOADED:
        return
    for module in FAMILIES:
        importlib.import_module(module)
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINTS):
        try:
            point.load()
        except Exception as exc:
            raise ImportError(f"pytest-xai family {point.name!r} (entry point {point.value!r} in group "
                              f"{ENTRY_POINTS!r}) failed to load: {type(exc).__name__}: {exc}; fix or uninstall "
                              f"the package that declares it") from exc
    _LOADED.append(True)


def headers() -> list[str]:
    """Lines families want in pytest's header (e.g. a shipped model's measured accuracy)."""
    return [importlib.import_module(m).report_header() for m in FAMILIES
            if hasattr(importlib.import_module(m), "report_header")]


def infos() -> list[CaseInfo]:
    """Every registered case, in declaration order."""
    _load_families()
    return list(_REGISTRY.values())


def names() -> list[str]:
    return [info.name for info in infos()]


def info(name: str) -> CaseInfo:
    _load_families()
    try:
        return _REGISTRY[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, _REGISTRY, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(_REGISTRY)}"
        raise KeyError(f"no case named {name!r}{hint}") from None


def registered(name: str | None) -> CaseInfo | None:
    """The registered case ``name``, or None (no error: a name the caller only hopes is a case)."""
    _load_families()
    return _REGISTRY.get(name) if name is not None else None


def get(name: str, *, seed: int = 0, cache: Any = None, data_dir: Any = None, fresh: bool = False) -> Case:
    """Build (or return the memoised) case ``name``.

    ``cache`` is a :class:`pytest_xai.cache.Cache` for trained models and generated data; ``None``
    keeps everything in memory (the builder receives ``Cache(None)``, which builds without
    storing).  ``data_dir`` is where a user keeps real datasets that some cases can read instead of
    their synthetic stand-ins (passed to builders that accept it).  ``fresh`` builds a new copy that
    nothing else shares (from the disk cache), without memoising it.  Safe to call from several
    threads: each case is built once.
    """
    from pytest_xai.cache import NO_CACHE

    cache = NO_CACHE if cache is None else cache
    key = (name, seed, cache.root, data_dir)
    if fresh:
        return _build(name, seed, cache, data_dir)
    if key not in _BUILT:
        with _GUARD:
            lock = _BUILDING.setdefault(key, threading.RLock())
        with lock:  # another thread building it (the plugin's prefetch): wait for its case
            if key not in _BUILT:
                _BUILT[key] = _build(name, seed, cache, data_dir)
    return _BUILT[key]


def _build(name: str, seed: int, cache: Any, data_dir: Any) -> Case:
    case_info = info(name)
    given = {"info": case_info, "seed": seed, "cache": cache, "data_dir": data_dir}
    build = case_info.build
    assert build is not None  # register() always records the builder
    wanted = inspect.signature(build).parameters
    case = build(**{k: v for k, v in given.items() if k in wanted})
    if not isinstance(case, Case):
        raise TypeError(f"the builder of case {name!r} returned a {type(case).__name__}, not a Case; "
                        f"return pytest_xai.make_case(...)")
    if case.info is not case_info:
        import dataclasses

        case = dataclasses.replace(case, info=case_info)
    return case


def built_with(case: Case) -> tuple[str, int, Any, Any] | None:
    """``(name, seed, cache root, data_dir)`` that :func:`get` built ``case`` from, or None for a
    case made by hand (then it can only be copied, not rebuilt)."""
    return next((key for key, built in _BUILT.items() if built is case), None)

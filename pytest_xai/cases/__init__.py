"""The catalogue of cases, one module per family.

A family module declares its family and registers its cases (:class:`pytest_xai.registry.Family`,
whose ``case`` is :func:`register`, public as ``pytest_xai.register_case``, with the family's name);
building is lazy and seeded::

    from pytest_xai import cases
    case = cases.get("cough_and_fever")          # built once, memoised
    cases.names()                                # every registered case

Cases come from the built-in families (every module of this package, :data:`MODULES`), from any
module that registers cases when imported (a user's ``conftest.py``), and from third-party packages
through the entry-point group :data:`ENTRY_POINTS` (each entry point names a module that registers
cases and checks).  The fast gate (:func:`smoke`) and pytest's header lines (:func:`headers`)
derive from the families' declarations; the registries themselves are :mod:`pytest_xai.registry`'s.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import threading
from typing import Any

from pytest_xai.case import Case, CaseInfo
from pytest_xai.registry import CASES, FAMILIES, Family, lookup
from pytest_xai.registry import register_case as register

__all__ = [
    "CASES",
    "ENTRY_POINTS",
    "FAMILIES",
    "MODULES",
    "built_with",
    "families",
    "get",
    "headers",
    "info",
    "infos",
    "names",
    "register",
    "smoke",
]

#: The built-in family modules: every module and package of this one, imported on first use of the
#: catalogue (they import numpy).  A new family is a new module here; nothing else lists it.
MODULES = tuple(f"{__name__}.{module.name}" for module in pkgutil.iter_modules(__path__))
#: Entry-point group of third-party families: ``[project.entry-points."pytest_xai.families"]``.
ENTRY_POINTS = "pytest_xai.families"

_BUILT: dict[tuple, Case] = {}
_BUILDING: dict[tuple, threading.RLock] = {}  # one lock per key: a case is built once, by one thread
_GUARD = threading.Lock()
_LOADED: list[bool] = []


def _load_families() -> None:
    if _LOADED:
        return
    for module in MODULES:
        importlib.import_module(module)
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINTS):
        try:
            point.load()
        except Exception as exc:
            raise ImportError(
                f"pytest-xai family {point.name!r} (entry point {point.value!r} in group "
                f"{ENTRY_POINTS!r}) failed to load: {type(exc).__name__}: {exc}; fix or uninstall "
                f"the package that declares it"
            ) from exc
    _LOADED.append(True)


def families() -> dict[str, Family]:
    """Every declared family by name (the built-in ones and those of entry points), loaded."""
    _load_families()
    return dict(FAMILIES)


def headers() -> list[str]:
    """Lines families want in pytest's header (e.g. a shipped model's measured accuracy)."""
    return [family.header() for family in families().values() if family.header is not None]


def smoke() -> list[tuple[str, str]]:
    """The ``(check, case)`` pairs of the fast gate (``-m xai_smoke``, ``docs/ci.md``): each family's
    declared test, then the checks of cases registered with ``smoke=``."""
    pairs = []
    for family in families().values():
        if family.smoke is None:
            continue
        check, case = family.smoke
        known = CASES.get(case)
        if known is None or known.family != family.name or check not in known.checks:
            why = (
                f"no case {case!r} is registered"
                if known is None
                else f"case {case!r} is of family {known.family!r}"
                if known.family != family.name
                else f"case {case!r} does not declare the check {check!r} (it declares {', '.join(known.checks)})"
            )
            raise ValueError(
                f"family {family.name!r} ({family.module}) names the smoke test {check}[{case}], but "
                f"{why}; give smoke=(check, case) of a case the family registers"
            )
        pairs.append((check, case))
    return pairs + [(check, info.name) for info in infos() for check in info.smoke if (check, info.name) not in pairs]


def infos() -> list[CaseInfo]:
    """Every registered case, in declaration order."""
    _load_families()
    return list(CASES.values())


def names() -> list[str]:
    return [info.name for info in infos()]


def info(name: str) -> CaseInfo:
    """The registered case ``name``, else a KeyError naming the closest names."""
    _load_families()
    return lookup(CASES, name, "case")


def registered(name: str | None) -> CaseInfo | None:
    """The registered case ``name``, or None (no error: a name the caller only hopes is a case)."""
    _load_families()
    return CASES.get(name) if name is not None else None


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
    registered = info(name)  # a case registered again (a module imported again) is built again
    if key not in _BUILT or _BUILT[key].info is not registered:
        with _GUARD:
            lock = _BUILDING.setdefault(key, threading.RLock())
        with lock:  # another thread building it (the plugin's prefetch): wait for its case
            if key not in _BUILT or _BUILT[key].info is not registered:
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
        raise TypeError(
            f"the builder of case {name!r} returned a {type(case).__name__}, not a Case; "
            f"return pytest_xai.make_case(...)"
        )
    if case.info is not case_info:
        case = case.but(info=case_info)
    return case


def built_with(case: Case) -> tuple[str, int, Any, Any] | None:
    """``(name, seed, cache root, data_dir)`` that :func:`get` built ``case`` from, or None for a
    case made by hand (then it can only be copied, not rebuilt)."""
    return next((key for key, built in _BUILT.items() if built is case), None)

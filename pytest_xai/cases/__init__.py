"""The catalogue of ground-truth cases, one module per family.

A family module declares its cases with :func:`register`; building is lazy and seeded::

    from pytest_xai import cases
    case = cases.get("cough_and_fever")          # built once, memoised
    cases.names()                                # every registered case
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Callable, Mapping

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
)

_REGISTRY: dict[str, CaseInfo] = {}
_BUILT: dict[tuple, Case] = {}


def register(
    *, family: str, category: str, source: str, checks: Mapping[str, Mapping[str, Any]]
) -> Callable[[Callable[..., Case]], Callable[..., Case]]:
    """Declare ``build(info, *, seed, cache) -> Case`` as a case named after the function."""
    if category not in CATEGORIES:
        raise ValueError(f"category must be one of {CATEGORIES}, got {category!r}")

    def decorate(build: Callable[..., Case]) -> Callable[..., Case]:
        name = build.__name__
        if name in _REGISTRY:
            raise ValueError(f"case {name!r} is registered twice")
        doc = (build.__doc__ or "").strip().splitlines()
        _REGISTRY[name] = CaseInfo(
            name=name, family=family, category=category, source=source,
            checks={k: dict(v) for k, v in checks.items()}, build=build,
            description=doc[0] if doc else "",
        )
        return build

    return decorate


def _load_families() -> None:
    for module in FAMILIES:
        importlib.import_module(module)


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


def get(name: str, *, seed: int = 0, cache: Any = None, data_dir: Any = None, fresh: bool = False) -> Case:
    """Build (or return the memoised) case ``name``.

    ``cache`` is a :class:`pytest_xai.cache.Cache` for trained models and generated data; ``None``
    keeps everything in memory.  ``data_dir`` is where a user keeps real datasets that some cases
    can read instead of their synthetic stand-ins (passed to builders that accept it).  ``fresh``
    builds a new copy that nothing else shares (from the disk cache), without memoising it.
    """
    key = (name, seed, getattr(cache, "root", None), data_dir)
    if fresh or key not in _BUILT:
        case_info = info(name)
        extra = {"data_dir": data_dir} if "data_dir" in inspect.signature(case_info.build).parameters else {}
        case = case_info.build(case_info, seed=seed, cache=cache, **extra)
        if fresh:
            return case
        _BUILT[key] = case
    return _BUILT[key]


def built_with(case: Case) -> tuple[str, int, Any, Any] | None:
    """``(name, seed, cache root, data_dir)`` that :func:`get` built ``case`` from, or None for a
    case made by hand (then it can only be copied, not rebuilt)."""
    return next((key for key, built in _BUILT.items() if built is case), None)

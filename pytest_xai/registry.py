"""The families of cases, each declared once (pure Python: no numpy, no pytest).

A family is declared by the module that registers its cases, and everything the suite needs to know
about it is in that one declaration::

    FAMILY = Family("units", source="Lee et al. 2025, XAI-Units (arXiv 2506.01059)",
                    smoke=("units_mse", "units_weighted_features"))

    @FAMILY.case(checks={"units_mse": {}}, source="weighted features")
    def units_weighted_features(info, *, seed, cache): ...

:data:`FAMILIES` (name -> :class:`Family`) fills as family modules are imported: the built-in ones
(every module of :mod:`pytest_xai.cases`) and those of the entry-point group ``pytest_xai.families``
alike, so the fast gate (:func:`pytest_xai.cases.smoke`) and pytest's header
(:func:`pytest_xai.cases.headers`) are derived from the declarations, never from a list kept by hand.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_xai.case import Case

#: Every declared family by name, in the order the declaring modules were imported.
FAMILIES: dict[str, Family] = {}


class Family:
    """A family of cases: its ``name`` (the ``family`` of its cases in every report), the ``source``
    it follows (paper or benchmark), ``smoke``, the ``(check, case)`` of its one test in the fast
    gate (``-m xai_smoke``, ``docs/ci.md``), and ``header``, a function returning a line for pytest's
    header (e.g. a shipped model's measured accuracy), called once a run that has explainers.

    ``module`` is the module that declared it.  A module imported again (pytest's in-process runs)
    declares its family again silently; the same name declared by another module is an error.
    """

    def __init__(self, name: str, *, source: str = "", smoke: tuple[str, str] | None = None,
                 header: Callable[[], str] | None = None):
        if not (isinstance(name, str) and name.isidentifier()):
            raise ValueError(f"Family({name!r}): the name must be an identifier, e.g. 'units'")
        if smoke is not None and not (isinstance(smoke, tuple) and len(smoke) == 2
                                      and all(isinstance(s, str) for s in smoke)):
            raise ValueError(f"Family({name!r}, smoke={smoke!r}): give the (check, case) pair of the family's test "
                             f"in the fast gate, e.g. ('symmetry', 'cough_and_fever')")
        self.name, self.source, self.smoke, self.header = name, source, smoke, header
        self.module: str = sys._getframe(1).f_globals.get("__name__", "?")
        old = FAMILIES.get(name)
        if old is not None and old.module != self.module:
            raise ValueError(f"family {name!r} is declared twice ({old.module} and {self.module}); rename one")
        FAMILIES[name] = self

    def __repr__(self) -> str:
        return f"Family({self.name!r}, module={self.module!r})"

    def case(self, *, category: str = "fidelity", source: str = "",
             checks: Mapping[str, Mapping[str, Any]] | list[str] | tuple[str, ...] = (), name: str | None = None,
             smoke: bool | list[str] | tuple[str, ...] = False) -> Callable[[Callable[..., Case]], Callable[..., Case]]:
        """Register a builder as a case of this family (``pytest_xai.register_case`` with the family's
        name); ``source`` says where in the family's source the case comes from (a section, a test),
        appended to it."""
        from pytest_xai.cases import register

        full = f"{self.source}, {source}" if self.source and source else self.source or source
        return register(family=self.name, category=category, source=full, checks=checks, name=name, smoke=smoke)

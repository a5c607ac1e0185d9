"""pytest-xai: explainers (SHAP, LIME, Integrated Gradients, yours) as systems under test.

Only light names live here, so that ``import pytest_xai`` (and the pytest plugin) stay free of
numpy, torch and friends.  Everything heavy is imported by the modules that need it.

Your own model and data (docs/your-model.md): :func:`make_case` builds a
case, :func:`register_case` adds a case builder to the suite, :func:`register_check` a check, and
:class:`Family` declares a family of cases (a package's, shipped through entry points).

PYTEST_DONT_REWRITE: under ``pytest -n N`` the xdist workers are forks of a process that imported
this package (``docs/design.md``, "Isolation"), so pytest could not rewrite its asserts there and
would warn in every worker; it has none to rewrite.
"""

import importlib
import importlib.abc
import importlib.util
import sys

from pytest_xai.case import Case, CaseInfo, Score
from pytest_xai.errors import NotApplicable
from pytest_xai.registry import Family, register_case, register_check

__version__ = "0.1.0"

#: Modules that moved into ``engine/`` and ``reports/`` (docs/design.md, "Architecture"): their old
#: import paths (``pytest_xai.runner``, ``pytest_xai.report``...) still give the same module object.
MOVED = {
    **{f"pytest_xai.{name}": f"pytest_xai.engine.{name}" for name in (
        "runner", "isolate", "zygote", "worker", "xdist_worker", "wire", "watch", "probe", "contract",
        "evaluations", "budget", "judge",
    )},
    **{f"pytest_xai.{name}": f"pytest_xai.reports.{name}" for name in (
        "report", "htmlreport", "merge", "baseline", "gate", "shard", "files", "record", "pictures", "embed",
        "chartlabels",
    )},
}  # fmt: skip


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import pytest_xai.runner`` imports ``pytest_xai.engine.runner`` and names it under both."""

    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name in MOVED else None

    def create_module(self, spec):
        module = importlib.import_module(MOVED[spec.name])
        self._spec = module.__spec__  # importlib sets the alias's spec on it; exec_module puts it back
        return module

    def exec_module(self, module):
        module.__spec__ = self._spec


sys.meta_path.append(_OldPaths())


def make_case(inputs, **kwargs) -> Case:
    """A case from your model and data; see :func:`pytest_xai.usercase.make_case`."""
    from pytest_xai.usercase import make_case as make

    return make(inputs, **kwargs)


__all__ = [
    "Case",
    "CaseInfo",
    "Family",
    "NotApplicable",
    "Score",
    "__version__",
    "make_case",
    "register_case",
    "register_check",
]

"""Checks: properties that score an explanation against a case, and what every check shares.

A check is ``check(attributions, case, **params) -> Score``. ``attributions`` is an array shaped
like ``case.inputs`` or an :class:`pytest_xai.engine.contract.Explanation`; ``params`` are the
case-specific arguments the case declares (which features are symmetric, which are dummies...) and
the thresholds, whose defaults are declared with :func:`check`. Thresholds are relative (scale-free)
so that multiplying the model output by 100 changes no verdict.

Every check is proven able to fail: the self-tests run it with a reference explainer that passes it
and with one that fails it.

Checks are registered with :func:`check` (public as ``pytest_xai.register_check``; the registry,
:data:`CHECKS`, is :mod:`pytest_xai.registry`'s, re-exported here) by the family whose cases they
score, next to those cases: the Compare-xAI ones in :mod:`pytest_xai.cases.tabular.checks`,
:mod:`pytest_xai.cases.stress` and :mod:`pytest_xai.cases.interactions`, the checks for any model in
:mod:`pytest_xai.cases.generic`; they register when the families load (``cases.infos()``).  This
module holds what they share: the attributions and importance of an explanation, rows flattened,
the case's truth as a check's reference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pytest_xai.case import Case, Score
from pytest_xai.registry import CHECKS, CheckFunc, CheckInfo, markers
from pytest_xai.registry import register_check as check

if TYPE_CHECKING:  # numpy is imported inside the functions: the plugin imports this module on every run
    import numpy as np
    from numpy.typing import NDArray

    Floats = NDArray[np.float64]

__all__ = [
    "CHECKS",
    "CheckFunc",
    "CheckInfo",
    "Score",
    "attributions_of",
    "check",
    "flat",
    "importance_of",
    "markers",
    "truth_reference",
]


def attributions_of(explanation: Any) -> Floats:
    """The attribution array of an explanation (an Explanation or a plain array)."""
    import numpy as np

    return np.asarray(getattr(explanation, "attributions", explanation), dtype=float)


#: Attributions within this fraction of the map's largest |a| are float noise: a float32 model gives
#: ~1e-8 where a perturbation changes nothing, and a map normalised to its maximum shows them blank.
FLOAT_NOISE = 1e-6


def denoised(explanation: Any) -> Floats:
    """:func:`attributions_of` with the values within :data:`FLOAT_NOISE` of the largest |a| set to 0."""
    import numpy as np

    A = attributions_of(explanation)
    top = float(np.abs(A).max()) if A.size else 0.0
    cleaned: Floats = np.where(np.abs(A) > FLOAT_NOISE * top, A, 0.0)
    return cleaned


def importance_of(explanation: Any) -> Floats:
    """Global importance: the explainer's own if it returned one, else mean |attribution| over rows."""
    import numpy as np

    own = getattr(explanation, "importance", None)
    importance: Floats = (
        np.abs(np.asarray(own, dtype=float)) if own is not None else np.abs(attributions_of(explanation)).mean(axis=0)
    )
    return importance


def flat(array: Floats) -> Floats:
    """Each row of ``array`` flattened: (n, features) for any (n, *feature_shape); 1-D unchanged."""
    return array.reshape(array.shape[0], -1) if array.ndim > 1 else array


def truth_reference(key: str) -> Callable[[Case, Mapping[str, Any]], Any]:
    """A ``reference`` for :func:`check`: ``case.truth[key]``, NotApplicable when the case has none."""

    def reference(case: Case, params: Mapping[str, Any]) -> Any:
        from pytest_xai.errors import NotApplicable

        if key not in case.truth:
            raise NotApplicable(f"case {case.name!r} has no truth {key!r} (it has {sorted(case.truth)})")
        return case.truth[key]

    reference.__qualname__ = f"truth_reference({key!r})"
    return reference

"""The judge: an explanation scored by a check, with no pytest in sight (docs/design.md, "Engine").

The plugin's ``xai_check`` fixture only turns a :class:`Verdict` into pass, fail or skip.  The
judge takes each threshold from the strongest level that sets it (:func:`~pytest_xai.engine.runner.resolve_thresholds`),
refuses a marker keyword that is none of the check's thresholds (:class:`MarkerError`), hands the
check what it asks for by name besides the case's arguments (``reexplain``: the explainer again,
through the runner; ``claim``: what the explainer claims; ``conditional``: the game it declares),
and under ``--xai-repeat`` scores every seed's explanation (:func:`~pytest_xai.engine.runner.combine_repeats`).
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_xai.errors import ExplainerError

if TYPE_CHECKING:
    from pytest_xai.case import Case, Score
    from pytest_xai.engine.contract import Explainer
    from pytest_xai.engine.runner import Runner
    from pytest_xai.registry import CheckInfo


class MarkerError(ValueError):
    """A check's marker got a keyword that is none of its thresholds (a misspelling, usually)."""


class ReexplainError(ExplainerError):
    """The explainer failed on a variant of the case a check asked for (``reexplain``); the message
    names the explainer, the variant and the case."""


@dataclass(frozen=True)
class Verdict:
    """A check's score, the level each threshold came from (:data:`~pytest_xai.engine.runner.LEVELS`) and,
    under ``--xai-repeat``, the summary of the seeds (``repeat``) and whether they left it undecided."""

    score: Score
    sources: dict[str, str]
    repeat: dict[str, Any] | None = None
    flaky: bool = False


@dataclass(frozen=True)
class Repeats:
    """``--xai-repeat``: each seed's explanation (the first seed's first), and whether the explainer
    proved deterministic (then its one explanation stands for all ``n`` seeds)."""

    runs: list[tuple[int, Any]]
    deterministic: bool
    n: int


def marker_thresholds(marker: str) -> list[str]:
    """The thresholds a check marker takes: those of every check that shares it (``xai_human``)."""
    from pytest_xai.registry import CHECKS

    names: dict[str, None] = {}
    for info in CHECKS.values():
        if info.marker == marker:
            names.update(dict.fromkeys(info.thresholds))
    return list(names)


def check_marker(marker: str, kwargs: Mapping[str, Any]) -> None:
    """Refuse the keywords of ``@pytest.mark.MARKER(**kwargs)`` that are no threshold of its checks."""
    known = marker_thresholds(marker)
    unknown = [name for name in kwargs if name not in known]
    if not unknown:
        return
    close = [match for name in unknown for match in difflib.get_close_matches(name, known, n=1)]
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    keywords = f"keyword{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}"
    thresholds = f"its thresholds are {', '.join(known)}" if known else "it takes no thresholds"
    raise MarkerError(f"{marker} got unknown {keywords}; {thresholds}{hint}")


class Judge:
    """Scores explanations for one session.  ``runner`` re-explains (:meth:`Runner.reexplain`);
    ``thresholds`` are the overrides of the command line and the ini file,
    ``{"command line": {check: {param: value}}, "ini": {...}}``."""

    def __init__(self, runner: Runner, thresholds: Mapping[str, Mapping[str, Mapping[str, float]]]):
        self.runner, self.thresholds = runner, thresholds

    def score(
        self,
        name: str,
        explanation: Any,
        case: Case,
        *,
        explainer: Explainer | None = None,
        call: Mapping[str, Any] | None = None,
        markers: Iterable[tuple[str, Mapping[str, Any]]] = (),
        repeats: Repeats | None = None,
    ) -> Verdict:
        """Score ``explanation`` of ``case`` with the check ``name``.

        ``call`` are the keyword arguments of the ``xai_check`` call; ``markers`` the test's marks as
        ``(name, kwargs)``, the farthest first (the closest wins).  Raises KeyError for an unknown
        check (naming the closest), :class:`MarkerError`, :class:`ReexplainError` and the check's
        own ``NotApplicable``.
        """
        from pytest_xai.engine.runner import resolve_thresholds
        from pytest_xai.registry import CHECKS, lookup

        info = lookup(CHECKS, name, "check")  # a misspelt name: the closest ones
        call = dict(call or {})
        marker: dict[str, Any] = {}
        for mark, kwargs in markers:
            if mark == info.marker:
                check_marker(mark, kwargs)
                marker.update({k: v for k, v in kwargs.items() if k in info.thresholds})
        own = case.info.checks.get(name, {})
        thresholds, sources = resolve_thresholds(
            info.thresholds,
            call=call,
            marker=marker,
            command_line=self.thresholds.get("command line", {}).get(name),
            ini=self.thresholds.get("ini", {}).get(name),
            case=own,
        )
        params = {**own, **call, **thresholds}
        reseed = self._hidden(info, params, explainer, case)
        score: Score = info.func(explanation, case, **params)
        if repeats is None or not repeats.runs or repeats.runs[0][1] is not explanation:
            return Verdict(score, sources)  # the test scored an explanation of its own
        from pytest_xai.engine.runner import combine_repeats

        scores = [score] + [
            info.func(expl, case, **(params if reseed is None else {**params, "reexplain": reseed(seed)}))
            for seed, expl in repeats.runs[1:]
        ]
        score, repeat, flaky = combine_repeats(
            scores, seeds=[seed for seed, _ in repeats.runs], n=repeats.n, deterministic=repeats.deterministic
        )
        return Verdict(score, sources, repeat, flaky)

    def _hidden(
        self, info: CheckInfo, params: dict[str, Any], explainer: Explainer | None, case: Case
    ) -> Callable[[int], Any] | None:
        """Add to ``params`` what the check asks for by name and the test does not pass: ``reexplain``,
        ``claim`` (``explain.completeness = "background"``) and ``conditional`` (``explain.reference =
        "baseline"``: judged against baseline Shapley values).  Returns how to re-explain under another
        seed (each ``--xai-repeat`` seed's own), or None."""
        wanted = inspect.signature(info.func).parameters
        reseed = None
        if "reexplain" in wanted and "reexplain" not in params:
            if explainer is None:
                raise TypeError(f"check {info.name!r} re-runs the explainer: pass explainer=")
            params["reexplain"] = self.reexplainer(explainer, case)
            reseed = lambda seed: self.reexplainer(explainer, case, seed)
        if "claim" in wanted and "claim" not in params and explainer is not None:
            params["claim"] = explainer.claim(info.name)
        game = explainer.declared("reference") if explainer is not None else None
        if game is not None and "conditional" in wanted and "conditional" not in params:
            params["conditional"] = game
        return reseed

    def reexplainer(self, explainer: Explainer, case: Case, seed: int | None = None) -> Callable[..., Any]:
        """``reexplain(model=None, *, other_seed=False, rows=None, perturb=None)``: the explainer on a
        variant of ``case`` (another model, a subset of rows, perturbed inputs), under the same time
        limit and validation as the first call (:meth:`Runner.reexplain`); ``seed``: that of the
        explanation compared (a repeat's), else the ordinary one."""

        def reexplain(
            model: Any = None,
            *,
            other_seed: bool = False,
            rows: list[int] | None = None,
            perturb: tuple[int, float] | None = None,
        ) -> Any:
            try:
                return self.runner.reexplain(
                    explainer, case, model, other_seed=other_seed, rows=rows, perturb=perturb, seed=seed
                )
            except ExplainerError as exc:
                what = (
                    "a randomised model"
                    if model is not None
                    else "a subset of its rows"
                    if rows is not None
                    else "perturbed inputs"
                    if perturb is not None
                    else "a repeated call"
                )
                raise ReexplainError(f"explainer {explainer.name!r} on {what} of case {case.name!r}: {exc}") from None

        return reexplain

"""The judge: an explanation scored by a check, with no pytest in sight (docs/design.md, "Engine").

The plugin's ``xai_check`` fixture only turns a :class:`Verdict` into pass, fail or skip.  The
judge takes each threshold from the strongest level that sets it
(:func:`~pytest_xai.engine.runner.resolve_thresholds`), refuses a marker keyword that is none of the
check's thresholds (:class:`MarkerError`), hands the check what it asks for by name besides the
case's arguments (``reexplain``: the explainer again, through the runner; ``claim``: what the
explainer claims; ``conditional``: the game it declares), under ``--xai-repeat`` scores every seed's
explanation (:func:`~pytest_xai.engine.runner.combine_repeats`) and draws the worst example.

:class:`Judge` scores where the case is.  With a time limit that is the judge's worker process
(:data:`~pytest_xai.engine.worker.JUDGE`, forked by the zygote like an explainer's, under the same
limits), never pytest's: :class:`Remote` sends it the request and reads back the verdict; a check's
``reexplain`` comes back to pytest's process as a question (:class:`Asking`), which runs the
explainer in the explainer's own worker.  Before a case's first call its model is vetted there
(:func:`vet`): a model that hangs, raises, returns NaN or the wrong shape, or is not deterministic,
is the case's fault (:class:`~pytest_xai.errors.CaseFault`), not the explainer's.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_xai.errors import CaseFault, CheckFault, ExplainerError, NotApplicable

if TYPE_CHECKING:
    from pathlib import Path

    from pytest_xai.case import Case, CaseRef, Score
    from pytest_xai.engine.contract import Explainer
    from pytest_xai.engine.runner import Runner
    from pytest_xai.registry import CheckInfo


#: What an explainer declares about itself that a check asks for by the same name: ``estimator``
#: (True, "consistent" or False: whether it estimates Shapley values by sampling) and ``exact``
#: (True: it claims exact values), read by :mod:`pytest_xai.cases.games.checks`.
DECLARED = ("estimator", "exact")


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
    picture: str | None = None  # the worst example drawn there (``picture=`` of :meth:`Judge.score`)
    picture_error: str | None = None  # why it could not be drawn

    def to_wire(self) -> dict[str, Any]:
        """The verdict as builtin values, for the judge's worker to send (:mod:`pytest_xai.engine.wire`)."""
        s = self.score
        score = {
            "check": s.check,
            "value": float(s.value),
            "passed": bool(s.passed),
            "threshold": repr(float(s.threshold)),  # a string: "inf" (a gate switched off) is no JSON number
            "detail": str(s.detail),
            "worst": None if s.worst is None else _builtin(dict(s.worst)),
            "reference": _builtin(s.params.get("reference")),
        }
        return {
            "score": score,
            "sources": dict(self.sources),
            "repeat": _builtin(self.repeat),
            "flaky": bool(self.flaky),
            "picture": self.picture,
            "picture_error": self.picture_error,
        }

    @classmethod
    def from_wire(cls, reply: Mapping[str, Any]) -> Verdict:
        """The verdict a judge's worker sent; ValueError when it is not one."""
        from pytest_xai.case import Score

        s = reply["score"]
        params = {"reference": s["reference"]} if s.get("reference") is not None else {}
        score = Score(
            check=str(s["check"]),
            value=float(s["value"]),
            passed=s["passed"] is True,
            threshold=float(s["threshold"]),
            detail=str(s["detail"]),
            params=params,
            worst=s["worst"] if isinstance(s["worst"], dict) else None,
        )
        sources = {str(k): str(v) for k, v in dict(reply["sources"]).items()}
        repeat = reply.get("repeat") if isinstance(reply.get("repeat"), dict) else None
        picture, error = reply.get("picture"), reply.get("picture_error")
        return cls(
            score,
            sources,
            repeat,
            reply.get("flaky") is True,
            picture if isinstance(picture, str) else None,
            error if isinstance(error, str) else None,
        )


def _builtin(value: Any) -> Any:
    """``value`` as JSON's builtin values: numpy scalars and arrays as numbers and lists, tuples as
    lists, non-finite floats as None, anything else as its text."""
    import math

    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _builtin(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_builtin(v) for v in value]
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return _builtin(value.tolist())
    return str(value)


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
        picture: Path | None = None,
    ) -> Verdict:
        """Score ``explanation`` of ``case`` with the check ``name``.

        ``call`` are the keyword arguments of the ``xai_check`` call; ``markers`` the test's marks as
        ``(name, kwargs)``, the farthest first (the closest wins); ``picture``: where to draw the
        worst example, if the case draws and the score names a row.  Raises KeyError for an unknown
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
        repeat, flaky = None, False
        if repeats is not None and repeats.runs and repeats.runs[0][1] is explanation:  # else: a test's own
            from pytest_xai.engine.runner import combine_repeats

            scores = [score] + [
                info.func(expl, case, **(params if reseed is None else {**params, "reexplain": reseed(seed)}))
                for seed, expl in repeats.runs[1:]
            ]
            score, repeat, flaky = combine_repeats(
                scores, seeds=[seed for seed, _ in repeats.runs], n=repeats.n, deterministic=repeats.deterministic
            )
        drawn, error = draw(picture, case, explanation, score) if picture is not None else (None, None)
        return Verdict(score, sources, repeat, flaky, drawn, error)

    def _hidden(
        self, info: CheckInfo, params: dict[str, Any], explainer: Explainer | None, case: Case
    ) -> Callable[[int], Any] | None:
        """Add to ``params`` what the check asks for by name and the test does not pass: ``reexplain``,
        ``claim`` (``explain.completeness = "background"``), the declarations of :data:`DECLARED`
        (``explain.estimator = True``) and ``conditional`` (gt_shapley's ``convention``;
        ``explain.reference = "baseline"``: judged against baseline Shapley values).  Returns how to
        re-explain under another seed (each ``--xai-repeat`` seed's own), or None."""
        wanted = inspect.signature(info.func).parameters
        reseed = None
        if "reexplain" in wanted and "reexplain" not in params:
            if explainer is None:
                raise TypeError(f"check {info.name!r} re-runs the explainer: pass explainer=")
            params["reexplain"] = self.reexplainer(explainer, case)
            reseed = lambda seed: self.reexplainer(explainer, case, seed)
        if "claim" in wanted and "claim" not in params and explainer is not None:
            params["claim"] = explainer.claim("completeness")  # also what gt_shapley reads: Shapley values
        for name in DECLARED:
            if name in wanted and name not in params and explainer is not None:
                params[name] = explainer.claim(name)
        game = explainer.declared("reference") if explainer is not None else None
        for key in ("conditional", "convention"):  # gt_shapley calls the game its convention
            if game is not None and key in wanted and key not in params:
                params[key] = game
        return reseed

    def reexplainer(self, explainer: Explainer, case: Case, seed: int | None = None) -> Callable[..., Any]:
        """``reexplain(model=None, *, other_seed=False, rows=None, perturb=None, budget=None,
        stderr=False)``: the explainer on a variant of ``case`` (another model, a subset of rows,
        perturbed inputs, another seed or budget; with ``stderr``, ``(attributions, stderr)``), under
        the same time limit and validation as the first call (:meth:`Runner.reexplain`); ``seed``:
        that of the explanation compared (a repeat's), else the ordinary one."""

        def reexplain(
            model: Any = None,
            *,
            other_seed: bool | int = False,
            rows: list[int] | None = None,
            perturb: tuple[int, float] | None = None,
            budget: int | None = None,
            stderr: bool = False,
        ) -> Any:
            try:
                return self.runner.reexplain(
                    explainer,
                    case,
                    model,
                    other_seed=other_seed,
                    rows=rows,
                    perturb=perturb,
                    seed=seed,
                    budget=budget,
                    stderr=stderr,
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


def draw(path: Path, case: Case, explanation: Any, score: Score) -> tuple[str | None, str | None]:
    """Draw the worst example of ``score`` at ``path`` when the case draws and the score names a row:
    ``(path drawn, None)``, ``(None, why it failed)``, or ``(None, None)``.  A picture is a
    convenience: its warnings are not the test's, and a failure never fails the test."""
    import warnings

    from pytest_xai.checks import attributions_of

    if case.draw is None or (score.worst or {}).get("row") is None:
        return None, None
    assert score.worst is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            case.draw(path, case, attributions_of(explanation), int(score.worst["row"]))
        except Exception as exc:  # noqa: BLE001 - reported at the end of the session
            path.unlink(missing_ok=True)  # never an older run's picture in its place
            return None, f"{type(exc).__name__}: {exc}"
    return str(path), None


# ------------------------------------------------------------------------- the case's model, vetted


class Guarded:
    """The case's ``predict`` as the judge's worker calls it: a model that raises, or returns
    non-finite values or the wrong number of rows, is a :class:`~pytest_xai.errors.CaseFault`
    naming the case, never a check's failure nor the explainer's."""

    def __init__(self, predict: Callable[[Any], Any], case: str):
        self.predict, self.case = predict, case

    def __call__(self, x: Any) -> Any:
        import numpy as np

        n = len(x)
        try:
            out = self.predict(x)
        except Exception as exc:
            raise CaseFault(_model_fault(self.case, f"raised {type(exc).__name__}: {exc}", n)) from exc
        problem = _bad_output(np.asarray(out), n)
        if problem is not None:
            raise CaseFault(_model_fault(self.case, problem, n))
        return out


def _model_fault(case: str, what: str, rows: int) -> str:
    return (
        f"the model of case {case!r} {what} (called on {rows} rows); the case is at fault, not the "
        f"explainer: fix the model or the case's builder"
    )


def _bad_output(out: Any, n: int) -> str | None:
    """What is wrong with a model's output for ``n`` rows, or None."""
    import numpy as np

    if out.dtype.kind not in "biuf":
        return f"returned a {out.dtype} array, not numbers"
    if out.ndim not in (1, 2) or len(out) != n:
        return f"returned shape {out.shape} for {n} rows (expected ({n},) or ({n}, classes))"
    if not np.isfinite(out).all():
        return f"returned non-finite values ({int((~np.isfinite(out)).sum())} of {out.size})"
    return None


def vet(case: Case) -> str | None:
    """What is wrong with ``case`` before any explainer runs on it, or None: the widths of its
    background and baseline against its inputs, and its model on the inputs and background rows
    (it must return finite numbers of the right shape, the same twice, and have the target class)."""
    import numpy as np

    x = np.asarray(case.inputs)
    width = x.shape[1:]
    name = case.name
    if case.background is not None:
        b = np.asarray(case.background)
        if b.ndim != x.ndim or b.shape[1:] != width:
            return (
                f"case {name!r}: its background has rows of shape {b.shape[1:]} but its inputs {width}; "
                f"pass background rows shaped like the inputs"
            )
    if case.baseline is not None:
        base = np.asarray(case.baseline)
        if base.size and base.shape not in (width, (1, *width), x.shape):
            return (
                f"case {name!r}: its baseline has shape {base.shape} but its inputs {x.shape}; pass one "
                f"row shaped like an input {width}, or one per input"
            )
    predict = case.predict.predict if isinstance(case.predict, Guarded) else case.predict
    if not callable(predict):  # a hand-made case with a torch model only: the explainer calls that
        return None
    outputs = []
    for rows in (x, x):
        try:
            out = np.asarray(predict(rows))
        except Exception as exc:  # noqa: BLE001 - the model is the user's: every failure is the case's
            return _model_fault(name, f"raised {type(exc).__name__}: {exc}", len(rows))
        problem = _bad_output(out, len(rows))
        if problem is not None:
            return _model_fault(name, problem, len(rows))
        outputs.append(out.astype(float))
    if not np.allclose(outputs[0], outputs[1], rtol=1e-6, atol=1e-9 * (1 + float(np.abs(outputs[0]).max()))):
        gap = float(np.abs(outputs[0] - outputs[1]).max())
        return _model_fault(
            name,
            f"gave two different outputs for the same inputs (largest difference {gap:.3g}): it is not "
            f"deterministic (dropout left on, unseeded noise?), so no verdict on an explainer of it holds",
            len(x),
        )
    if case.background is not None and len(case.background):
        rows = np.asarray(case.background)[:64]
        try:
            problem = _bad_output(np.asarray(predict(rows)), len(rows))
        except Exception as exc:  # noqa: BLE001 - as above
            problem = f"raised {type(exc).__name__}: {exc}"
        if problem is not None:
            return _model_fault(name, problem + " on background rows", len(rows))
    out = outputs[0]
    if case.target is not None and out.ndim == 2:
        classes = int(out.shape[1])
        targets = np.atleast_1d(np.asarray(case.target))
        if targets.min() < 0 or targets.max() >= classes:
            return f"case {name!r}: target {case.target!r} is not a class of its model's {classes} outputs"
    return None


# ------------------------------------------------------------------- in the judge's worker process


class Asking:
    """The runner a :class:`Judge` in the judge's worker has: ``reexplain`` is a question to pytest's
    process, which runs the explainer in its own worker and answers with the attributions.  A model
    the check swaps in is named by its path in the case (:func:`~pytest_xai.engine.runner.variant_of`)."""

    def __init__(self, ask: Callable[[dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]]):
        self.ask = ask

    def reexplain(
        self,
        explainer: Any,
        case: Case,
        model: Any = None,
        *,
        other_seed: bool | int = False,
        rows: list[int] | None = None,
        perturb: tuple[int, float] | None = None,
        seed: int | None = None,
        budget: int | None = None,
        stderr: bool = False,
    ) -> Any:
        from pytest_xai.engine.runner import variant_of

        variant = None
        if model is not None and model is not case.model:
            variant = variant_of(case, model)
            if variant is None:
                raise CheckFault(f"a check re-explained case {case.name!r} on a model it does not hold")
        answer, arrays = self.ask(
            {
                "variant": variant,
                "other_seed": int(other_seed),
                "rows": None if rows is None else [int(r) for r in rows],
                "perturb": None if perturb is None else [int(perturb[0]), float(perturb[1])],
                "seed": seed,
                "budget": None if budget is None else int(budget),
            }
        )
        if answer.get("kind") != "ok" or "attributions" not in arrays:
            raise ExplainerError(str(answer.get("message", "the explainer gave no attributions")))
        return (arrays["attributions"], arrays.get("stderr")) if stderr else arrays["attributions"]


@dataclass(frozen=True)
class Declared:
    """What a check asks of the explainer in the judge's worker (no explainer is loaded there): its
    name, its claims (``explain.completeness = "background"``) and the game it declares."""

    name: str
    claims: Mapping[str, Any]

    def claim(self, name: str) -> Any:
        return self.claims.get(name)

    def declared(self, name: str) -> Any:
        return self.claims.get(name)


def score_in_worker(case: Case, request: dict[str, Any], ask: Callable[..., Any]) -> dict[str, Any]:
    """The judge's worker's answer to one check request (sent by :class:`Remote`): the verdict, or
    what went wrong, by kind: the check does not apply, a misspelt marker keyword or check name, the
    explainer failing on a variant, the case's model misbehaving, or the check raising."""
    import traceback

    from pytest_xai.engine import contract
    from pytest_xai.engine.wire import clip

    if callable(case.predict) and not isinstance(case.predict, Guarded):
        case.predict = Guarded(case.predict, case.name)
    explanation = request["explanation"]
    try:
        contract.coerce({"attributions": explanation.attributions}, case)  # the explainer's worker is untrusted
    except ExplainerError as exc:
        return {"kind": "invalid", "message": clip(exc, 2000)}
    explainer: Any = None
    if request["explainer"] is not None and request["claims"] is not None:
        explainer = Declared(request["explainer"], request["claims"])
    elif request["explainer"] is not None:  # a reference explainer, not imported by the plugin: ours, read here
        explainer = contract.load(request["spec"], option="--xai-explainer").renamed(request["explainer"])
    try:
        verdict = Judge(Asking(ask), request["thresholds"]).score(  # type: ignore[arg-type]
            request["check"],
            explanation,
            case,
            explainer=explainer,
            call=request["call"],
            markers=request["markers"],
            repeats=request["repeats"],
            picture=request["picture"],
        )
    except NotApplicable as exc:
        return {"kind": "not_applicable", "message": clip(exc, 2000)}
    except (MarkerError, ReexplainError) as exc:
        return {"kind": type(exc).__name__, "message": clip(exc, 4000)}
    except KeyError as exc:  # an unknown check: lookup names the closest
        return {"kind": "KeyError", "message": clip(exc.args[0] if exc.args else exc, 2000)}
    except CaseFault as exc:
        return {"kind": "case", "message": clip(exc, 4000), "traceback": clip(_trace(exc))}
    except Exception as exc:  # noqa: BLE001 - a check's own bug, reported as such
        return {
            "kind": "check",
            "message": clip(f"check {request['check']!r} raised {type(exc).__name__}: {exc}", 4000),
            "traceback": clip("".join(traceback.format_exception(type(exc), exc, exc.__traceback__))),
        }
    return {"kind": "verdict", **verdict.to_wire()}


def _trace(exc: BaseException) -> str:
    import traceback

    cause = exc.__cause__ or exc
    return "".join(traceback.format_exception(type(cause), cause, cause.__traceback__))


# ------------------------------------------------------------------------- in pytest's own process


class Remote:
    """The session's judge when calls run in worker processes: it sends each check to the judge's
    worker (built cases, the reference and every model call are there, under the limits) and
    answers that worker's ``reexplain`` questions by running the explainer (``runner.reexplain``).
    Same ``score`` as :class:`Judge`; a fault of the case raises :class:`~pytest_xai.errors.CaseFault`,
    of a check :class:`~pytest_xai.errors.CheckFault`."""

    def __init__(self, runner: Runner, thresholds: Mapping[str, Mapping[str, Mapping[str, float]]]):
        self.runner, self.thresholds = runner, thresholds

    def score(
        self,
        name: str,
        explanation: Any,
        case: Case | CaseRef,
        *,
        explainer: Explainer | None = None,
        call: Mapping[str, Any] | None = None,
        markers: Iterable[tuple[str, Mapping[str, Any]]] = (),
        repeats: Repeats | None = None,
        picture: Path | None = None,
    ) -> Verdict:
        from pytest_xai.registry import CHECKS, lookup

        info = lookup(CHECKS, name, "check")  # here, so that a misspelt name needs no worker
        claims = None
        if explainer is not None:
            claims = explainer.claims if explainer.claims is not None or not explainer.loaded else None
            if claims is None and explainer.loaded:
                claims = {key: explainer.claim(key) for key in (info.name, "reference", "completeness", *DECLARED)}
        from pytest_xai.engine.runner import module_of

        request = {
            "modules": module_of(info.func),  # a check registered in a user's conftest: imported there too
            "check": name,
            "explanation": explanation,
            "explainer": None if explainer is None else explainer.name,
            "spec": None if explainer is None else explainer.spec,
            "claims": claims,
            "call": dict(call or {}),
            "markers": [(mark, dict(kwargs)) for mark, kwargs in markers],
            "thresholds": self.thresholds,
            "repeats": repeats,
            "picture": picture,
        }

        def answer(question: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
            if explainer is None:
                return {"kind": "error", "message": f"check {name!r} re-runs the explainer: pass explainer="}, {}
            try:
                attributions, stderr = self.runner.reexplain(
                    explainer,
                    case,
                    variant=question.get("variant"),
                    other_seed=int(question.get("other_seed") or 0),
                    rows=question.get("rows"),
                    perturb=question.get("perturb"),
                    seed=question.get("seed"),
                    budget=question.get("budget"),
                    stderr=True,
                )
            except ExplainerError as exc:
                return {"kind": "error", "message": str(exc)}, {}
            return {"kind": "ok"}, {"attributions": attributions, "stderr": stderr}

        reply = self.runner.judge(case, request, answer)
        kind = reply.get("kind")
        message = str(reply.get("message", ""))
        if kind == "verdict":
            try:
                return Verdict.from_wire(reply)
            except (KeyError, TypeError, ValueError) as exc:
                raise CheckFault(f"check {name!r} sent a verdict that is not one ({exc!r})") from None
        trace = str(reply.get("traceback", ""))
        if kind in ("case", "raised"):  # "raised": the model raised past the check (SystemExit, say)
            raise CaseFault(message or f"the model of case {case.name!r} raised {reply.get('type')}", trace)
        if kind == "check":
            raise CheckFault(message, trace)
        errors: dict[Any, type[Exception]] = {
            "not_applicable": NotApplicable,
            "MarkerError": MarkerError,
            "ReexplainError": ReexplainError,
            "KeyError": KeyError,
            "invalid": ExplainerError,
        }
        raise errors.get(kind, CheckFault)(message or f"the judge's worker sent an unknown reply ({kind!r})")

"""The explainer contract: loading a spec, injecting arguments by name, validating the output.

An explainer is any callable that asks for what it needs by parameter name, the way a pytest test
asks for fixtures (``docs/design.md``, "Explainer contract")::

    def explain(inputs, predict, background, seed): ...       # model-agnostic
    def explain(model: torch.nn.Module, inputs, target): ...  # gradient-based; skipped on xgboost cases

It returns attributions shaped like ``inputs`` (numpy, torch tensor, list, or an object with
``.values`` such as ``shap.Explanation``), or a mapping with ``attributions`` and optionally
``importance`` (global, one value per feature), ``interactions`` (d x d) and ``stderr`` (the
standard error of each attribution, for a sampling estimator: judged by ``coverage``).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import os
import pkgutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_xai.errors import ExplainerError, NotApplicable, SpecError

if TYPE_CHECKING:  # numpy is imported where it is used: loading an explainer spec needs none
    import numpy as np
    from numpy.typing import NDArray

    from pytest_xai.case import Case

    Floats = NDArray[np.float64]

#: Names an explainer may ask for, and what each receives.
CONTRACT = {
    "inputs": "np.ndarray (n, *feature_shape): the points to explain (a copy)",
    "predict": "numpy in, numpy out: regression (n,), classification (n, classes) probabilities",
    "model": "the native model (xgboost model, torch.nn.Module, or plain callable)",
    "target": "class index to explain, one per row (np.ndarray (n,) of int), or None for regression",
    "targets": "alias of target (Quantus' explain_func convention: one label per row is allowed)",
    "background": "np.ndarray of reference rows (summarised, <= a few hundred)",
    "baseline": "the reference input the ground truth is defined against (e.g. zeros)",
    "feature_names": "list of str",
    "seed": "int, fixed per test, for stochastic explainers",
    "budget": "int: model evaluations (rows passed to the model) this call may spend; size samples from it",
    "groups": "int array shaped like one input, or None: features with the same id move together "
    "(a chess square's 12 planes, a superpixel); ids 0..G-1, as captum's feature_mask",
    "output": "what the case explains of a torch model's class outputs: 'probabilities' (softmax over them, "
    "as predict gives) or 'logits' (as the model returns them, a ModelOutput's logits), or None: its model "
    "returns what predict gives (docs/hf.md)",
    "pad_token_id": "int, or None: the padding id of a case over token ids (attention mask ids != pad_token_id, "
    "the all-padding row as baseline)",
    "tokenizer": "a transformers tokenizer of the case's token ids (language-model cases; others skip the explainer)",
    "target_ids": "np.ndarray (n, T) of int: the generated tokens explained per prompt, T = 1 for the next token "
    "(language-model cases; others skip the explainer)",
}


class Explainer:
    """A loaded explainer: ``name`` is what reports and test ids show.

    ``func`` and ``wants`` may be left to ``load(spec)`` on first use (:func:`check_without_import`),
    so that a process that only hands calls to its workers never imports the explainer's library.

    An explainer function may carry a ``prepare`` attribute: a no-argument callable run once in
    each worker process before its first call, under the same limits, e.g. to JIT-compile what
    every call needs.

    A user's explainer described by :mod:`pytest_xai.engine.probe` is never imported here: ``claims`` are
    its simple attributes, and ``broken`` is ``(kind, message)`` when importing it failed.
    """

    __slots__ = ("_func", "_option", "_wants", "broken", "claims", "name", "spec")

    def __init__(
        self,
        name: str,
        spec: str,
        func: Callable[..., Any] | None = None,
        wants: tuple[str, ...] = (),
        *,
        option: str = "--xai-explainer",
        claims: dict[str, Any] | None = None,
        broken: tuple[str, str] | None = None,
    ) -> None:
        self.name, self.spec, self._func, self._wants, self._option = name, spec, func, wants, option
        self.claims, self.broken = claims, broken

    @property
    def func(self) -> Callable[..., Any]:
        return self._loaded()[0]

    @property
    def loaded(self) -> bool:
        """Whether the function is imported in this process (a reference explainer is not, until used)."""
        return self._func is not None

    @property
    def wants(self) -> tuple[str, ...]:
        return self._wants or self._loaded()[1]

    def _loaded(self) -> tuple[Callable[..., Any], tuple[str, ...]]:
        if self._func is None:
            loaded = load(self.spec, self._option)
            self._func, self._wants = loaded._loaded()
        return self._func, self._wants

    def declared(self, name: str) -> Any:
        """An attribute the function declares (``explain.reference = "baseline"``), None without one; a
        reference explainer not imported yet is not imported for it (none of them declares one); a
        user's explainer answers from the claims its probe read (:mod:`pytest_xai.engine.probe`)."""
        if self.claims is not None:
            return self.claims.get(name)
        return None if self._func is None else getattr(self._func, name, None)

    @property
    def prepare(self) -> Callable[[], None] | None:
        return getattr(self.func, "prepare", None)

    def claim(self, name: str) -> Any:
        """The explainer's attribute ``name`` (e.g. ``completeness``), or None."""
        if self.claims is not None:
            return self.claims.get(name)
        return getattr(self.func, name, None)

    def renamed(self, name: str) -> Explainer:
        """The same explainer (loaded or not) under another name."""
        return Explainer(
            name, self.spec, self._func, self._wants, option=self._option, claims=self.claims, broken=self.broken
        )

    def __repr__(self) -> str:
        return f"Explainer({self.name!r}, spec={self.spec!r})"


@dataclass(frozen=True)
class Explanation:
    """Validated output of one explainer call on one case."""

    attributions: Floats
    seconds: float
    importance: Floats | None = None
    interactions: Floats | None = None
    evaluations: int | None = None  # rows the model evaluated during the call (pytest_xai.engine.evaluations)
    stderr: Floats | None = None  # the standard error of each attribution an estimator reports


# --------------------------------------------------------------------------------------- loading


def _import_file(path: str) -> Any:
    name = "xai_explainer_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # a path without a .py suffix has no source loader
        raise ImportError(f"cannot import {path!r} as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load(spec: str, option: str = "--xai-explainer") -> Explainer:
    """Resolve ``module:attr`` or ``path/to/file.py:attr`` into an :class:`Explainer`.

    Every failure raises :class:`SpecError` with a message naming ``option``, the bad value and
    the fix.
    """
    where = f"{option}={spec}"
    loader: Callable[[], Any]
    module_part, sep, attr = spec.partition(":")
    if not sep or not module_part or not attr or ":" in attr:
        raise SpecError(
            f"{where}: expected 'module:function' or 'path/to/file.py:function', "
            f"e.g. {option}=pytest_xai.explainers:exact_shapley"
        )
    if module_part.endswith(".py") or os.sep in module_part or "/" in module_part:
        if not os.path.isfile(module_part):
            raise SpecError(f"{where}: file {module_part!r} does not exist (relative to {os.getcwd()})")
        loader, label = (lambda: _import_file(module_part)), f"file {module_part!r}"
    else:
        missing_parent: ImportError | ValueError | None
        try:
            found = importlib.util.find_spec(module_part)
        except (ImportError, ValueError) as exc:
            found, missing_parent = None, exc
        else:
            missing_parent = None
        if found is None:
            hint = f" ({missing_parent})" if missing_parent else ""
            path = f"{module_part.replace('.', '/')}.py"
            raise SpecError(
                f"{where}: module {module_part!r} not found{hint} {_searched()}; check the spelling, install "
                f"it, or name its file: {option}=path/to/{path}:{attr}"
            )
        loader, label = (lambda: importlib.import_module(module_part)), f"module {module_part!r}"
    try:
        module = loader()
    except Exception as exc:
        raise SpecError(
            f"{where}: importing {label} raised {type(exc).__name__}: {exc}\n"
            f"(fix the error above; for pytest_xai.explainers, install the extra it needs, "
            f"e.g. pip install 'pytest-xai[shap]')"
        ) from exc
    try:
        func = _getattr_path(module, attr)
    except AttributeError:
        public = [n for n in dir(module) if not n.startswith("_")]
        public += list(getattr(module, "__all__", []))
        close = difflib.get_close_matches(attr.split(".")[-1], public, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise SpecError(f"{where}: {label} has no attribute {attr!r}{hint}") from None
    except Exception as exc:  # a lazy attribute may fail to import its optional dependency
        raise SpecError(
            f"{where}: loading {attr!r} from {label} raised {type(exc).__name__}: {exc}\n"
            f"(install the extra it needs, e.g. pip install 'pytest-xai[shap]')"
        ) from exc
    if not callable(func):
        raise SpecError(f"{where}: {attr!r} is a {type(func).__name__}, not a callable explainer")
    return Explainer(attr.split(".")[-1], spec, func, _wanted(func, where))


def _searched() -> str:
    """The folders a module was looked for in (``sys.path``), the current directory named first."""
    here = os.getcwd()
    folders = [f for f in dict.fromkeys(os.path.abspath(entry or here) for entry in sys.path) if os.path.exists(f)]
    others = ", ".join(folder for folder in folders if folder != here) or "no other folder"
    if here in folders:
        return f"in {here} (the current directory), nor in {others}"
    return f"in {others} (not in the current directory {here}: it is not on sys.path)"


REFERENCE_MODULE = "pytest_xai.explainers"


def check_without_import(
    spec: str, option: str = "--xai-explainer", probe: Callable[[str, str], dict[str, Any]] | None = None
) -> Explainer:
    """:func:`load`, but a reference explainer (``pytest_xai.explainers:NAME``) is checked by its
    name and by its library being installed, and imported only on first use of ``func``.

    The processes of the plugin hand every call to workers (:mod:`pytest_xai.engine.isolate`), which load
    the explainer themselves: ``import shap`` alone took 3.7 s there, before the first test (the
    controller of ``pytest -n N`` made every xdist worker wait for it).  Any other spec is loaded
    now, so that a bad one still stops pytest at once, with the same message: in this process when
    ``probe`` is None, else in a throwaway one (:mod:`pytest_xai.engine.probe`; ``probe(spec, option)``
    returns its description) so that its module cannot end or hang this one.
    """
    module_part, _, attr = spec.partition(":")
    from pytest_xai import explainers

    if module_part != REFERENCE_MODULE or attr not in explainers.__all__ or attr == "degenerate":  # the zoo's module
        if probe is None:
            return load(spec, option)
        return described(spec, option, probe(spec, option))
    library = explainers.library_of(attr)
    if library is not None and importlib.util.find_spec(library) is None:
        raise SpecError(
            f"{option}={spec}: loading {attr!r} from module {module_part!r} raised ModuleNotFoundError: No module "
            f"named {library!r}\n(install the extra it needs, e.g. pip install 'pytest-xai[{library}]')"
        )
    return Explainer(attr, spec, option=option)


def described(spec: str, option: str, description: dict[str, Any]) -> Explainer:
    """The explainer a probe described (:func:`pytest_xai.engine.probe.describe`); a bad spec raises SpecError."""
    if "usage" in description:
        raise SpecError(str(description["usage"]))
    name = spec.partition(":")[2].split(".")[-1]
    if "broken" in description:
        return Explainer(
            name,
            spec,
            option=option,
            claims={},
            broken=(str(description.get("kind") or "crash"), str(description["broken"])),
        )
    return Explainer(name, spec, option=option, wants=tuple(description["wants"]), claims=description["claims"])


def _getattr_path(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def from_function(func: Callable[..., Any], *, spec: str | None = None, where: str = "explainer") -> Explainer:
    """An :class:`Explainer` of a function in hand (a notebook, a test, a replay), named after it; the
    contract names it asks for are read from its signature (a name the contract does not know is a
    :class:`SpecError` naming ``where``).  ``spec`` is what messages call it (default: its name)."""
    name = getattr(func, "__name__", "explainer")
    return Explainer(name, spec or name, func, _wanted(func, where))


def _wanted(func: Callable[..., Any], where: str) -> tuple[str, ...]:
    """The contract names ``func`` asks for; unknown required parameters are a usage error."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        raise SpecError(f"{where}: cannot read the signature of {func!r}; wrap it in a def") from None
    wants = []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.name in CONTRACT:
            if param.kind is param.POSITIONAL_ONLY:
                raise SpecError(f"{where}: parameter {param.name!r} is positional-only; make it a normal parameter")
            wants.append(param.name)
        elif param.default is param.empty:
            close = difflib.get_close_matches(param.name, CONTRACT, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise SpecError(
                f"{where}: parameter {param.name!r} is not one the contract provides "
                f"(known: {', '.join(CONTRACT)}).{hint} Rename it, or give it a default."
            )
    if not wants:
        raise SpecError(f"{where}: the explainer asks for none of {', '.join(CONTRACT)}; it needs at least 'inputs'")
    return tuple(wants)


def dedupe(explainers: list[Explainer]) -> list[Explainer]:
    """Drop repeated specs (first wins) and make names unique by falling back to the full spec."""
    seen: dict[str, Explainer] = {}
    for explainer in explainers:
        seen.setdefault(explainer.spec, explainer)
    unique = list(seen.values())
    names = [e.name for e in unique]
    return [e if names.count(e.name) == 1 else e.renamed(e.spec) for e in unique]


# --------------------------------------------------------------------------------------- calling


def _model_for(explainer: Explainer, case: Case) -> Any:
    """The native model, or the torch twin when ``model`` is annotated as a torch module.

    An annotation the case cannot satisfy makes the explainer not applicable (a skip).
    """
    try:
        annotation = inspect.signature(explainer.func).parameters["model"].annotation
    except (KeyError, TypeError, ValueError):
        return case.model
    if annotation is inspect.Parameter.empty:
        return case.model
    if isinstance(annotation, str):  # postponed annotations: "torch.nn.Module"
        try:
            annotation = pkgutil.resolve_name(annotation.strip("'\""))
        except Exception:  # noqa: BLE001 - resolving imports the user's modules, which may raise anything
            return case.model
    if not isinstance(annotation, type):
        return case.model
    for candidate in (case.model, case.torch_model):
        if candidate is not None and isinstance(candidate, annotation):
            return candidate
    raise NotApplicable(
        f"explainer {explainer.name!r} wants model: {annotation.__module__}.{annotation.__qualname__}; "
        f"case {case.name!r} has a {type(case.model).__name__}"
        + (" and no differentiable twin" if case.torch_model is None else "")
    )


class ModelTypeError(TypeError):
    """An explainer with an unannotated ``model`` raised on the model it was given: the message
    names the model's type and how to annotate the parameter so that such cases are skipped."""


def _unannotated_model(explainer: Explainer) -> bool:
    if "model" not in explainer.wants:
        return False
    try:
        return inspect.signature(explainer.func).parameters["model"].annotation is inspect.Parameter.empty
    except (KeyError, TypeError, ValueError):
        return False


def arguments(explainer: Explainer, case: Case, seed: int, budget: int | None = None) -> dict[str, Any]:
    """The keyword arguments ``explainer`` asked for, built from ``case`` (arrays are copies).

    ``budget`` is the call's budget of model evaluations (:mod:`pytest_xai.engine.budget`)."""
    import numpy as np

    from pytest_xai.engine import budget as budgets

    values: dict[str, Callable[[], Any]] = {
        "inputs": lambda: np.array(case.inputs, dtype=float, copy=True),
        "predict": lambda: case.predict,
        "model": lambda: _model_for(explainer, case),
        "target": lambda: case.target,
        "targets": lambda: case.target,
        "background": lambda: None if case.background is None else np.array(case.background, dtype=float, copy=True),
        "baseline": lambda: None if case.baseline is None else np.array(case.baseline, dtype=float, copy=True),
        "feature_names": lambda: list(case.feature_names),
        "seed": lambda: int(seed),
        "budget": lambda: budgets.for_case(case, budget),
        "groups": lambda: None if case.meta.get("groups") is None else np.array(case.meta["groups"], copy=True),
        "output": lambda: case.meta.get("output"),
        "pad_token_id": lambda: case.meta.get("pad_token_id"),
        "tokenizer": lambda: _language_model(case, "tokenizer"),
        "target_ids": lambda: np.array(_language_model(case, "target_ids"), copy=True),
    }
    return {name: values[name]() for name in explainer.wants}


def _language_model(case: Case, name: str) -> Any:
    """``case.meta[name]`` of a language-model case, else NotApplicable (the explainer is skipped)."""
    if name not in case.meta:
        raise NotApplicable(f"case {case.name!r} is not a language-model case: it has no {name} (the llm family has)")
    return case.meta[name]


def coerce(output: Any, case: Case) -> tuple[Floats, Floats | None, Floats | None]:
    """Turn an explainer's output into validated float arrays: (attributions, importance, interactions).

    Raises :class:`ExplainerError` naming what is wrong and how to fix it.
    """
    return coerce_shaped(output, tuple(case.inputs.shape), case.target)


def coerce_shaped(
    output: Any, expected: tuple[int, ...], target: Any = None
) -> tuple[Floats, Floats | None, Floats | None]:
    """:func:`coerce` against the shape of the inputs (``expected``) and the ``target`` (for the
    message only), without the case: what pytest's process checks of a worker's reply."""
    import numpy as np

    importance = interactions = None
    if isinstance(output, dict):
        unknown = set(output) - {"attributions", "importance", "interactions", "stderr"}
        if unknown or "attributions" not in output:
            raise ExplainerError(
                f"returned a dict with keys {sorted(output)}; expected 'attributions' and optionally "
                f"'importance', 'interactions' and 'stderr'"
            )
        stderr_of(output, expected)  # validated here, read by run (and the runner) with the same function
        importance = output.get("importance")
        interactions = output.get("interactions")
        output = output["attributions"]
    attributions = _array(output, "attributions")
    n_features = int(np.prod(expected[1:]))
    if attributions.shape != expected:
        if attributions.ndim == len(expected) + 1 and (
            attributions.shape[:-1] == expected
            or attributions.shape[1:] == expected
            or attributions.shape[:1] + attributions.shape[2:] == expected
        ):
            raise ExplainerError(
                f"returned shape {attributions.shape}, expected {expected}: it looks like one attribution "
                f"map per class; return only the attributions of the `target` class "
                f"(ask for `target`; here target={target})"
            )
        raise ExplainerError(f"returned shape {attributions.shape}, expected {expected} (the shape of `inputs`)")
    _finite(attributions, "attributions")
    if importance is not None:
        importance = _array(importance, "importance")
        if importance.shape != expected[1:]:
            raise ExplainerError(f"returned importance of shape {importance.shape}, expected {expected[1:]}")
        _finite(importance, "importance")
    if interactions is not None:
        interactions = _array(interactions, "interactions")
        pair = (n_features, n_features)
        if interactions.shape not in (pair, (expected[0],) + pair):
            raise ExplainerError(
                f"returned interactions of shape {interactions.shape}, expected {pair} "
                f"(or {(expected[0],) + pair} per explained point)"
            )
        _finite(interactions, "interactions")
    return attributions, importance, interactions


def stderr_of(output: Any, expected: tuple[int, ...]) -> Floats | None:
    """The ``stderr`` an explainer returned beside its attributions (None without one), validated:
    shaped like the inputs, finite and >= 0."""

    if not isinstance(output, dict) or output.get("stderr") is None:
        return None
    stderr = _array(output["stderr"], "stderr")
    if stderr.shape != tuple(expected):
        raise ExplainerError(
            f"returned stderr of shape {stderr.shape}, expected {tuple(expected)} (one per attribution)"
        )
    _finite(stderr, "stderr")
    if (stderr < 0).any():
        raise ExplainerError(f"returned {int((stderr < 0).sum())} negative stderr value(s); a standard error is >= 0")
    return stderr


def _array(value: Any, what: str) -> Floats:
    import numpy as np

    if value is None:
        raise ExplainerError(f"returned None instead of {what}; did the function forget to `return`?")
    if isinstance(value, (str, bytes)):
        raise ExplainerError(f"returned a {type(value).__name__} ({value[:40]!r}) instead of numeric {what}")
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    elif not isinstance(value, np.ndarray) and hasattr(value, "values"):
        value = value.values  # shap.Explanation, pandas objects
        if callable(value):
            raise ExplainerError(f"returned a {type(value).__name__}-like mapping instead of an array of {what}")
    if isinstance(value, np.ma.MaskedArray) and np.ma.is_masked(value):  # np.asarray would drop the mask
        raise ExplainerError(
            f"returned {what} as a masked array with {int(np.ma.count_masked(value))} masked "
            f"value(s); return plain numbers (e.g. .filled(0.0) where nothing is attributed)"
        )
    try:
        array = np.asarray(value)
    except Exception as exc:  # noqa: BLE001 - a user object's __array__ may raise anything; the message names it
        raise ExplainerError(f"returned {type(value).__name__} that numpy cannot read as {what}: {exc}") from None
    if array.dtype.kind not in "iuf":  # not bool, complex, object, strings, nor timedelta64 (an integer to numpy)
        raise ExplainerError(f"returned {what} of dtype {array.dtype} ({type(value).__name__}); expected real numbers")
    return array.astype(float)


def _finite(array: Any, what: str) -> None:
    import numpy as np

    bad = ~np.isfinite(array)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ExplainerError(
            f"returned {int(bad.sum())} non-finite {what} value(s) (NaN or inf), first at index {first}: {array[first]}"
        )
    with np.errstate(over="ignore"):
        total = float(np.abs(array).sum())
    if total == np.inf:  # every check sums or differences attributions: they would read as inf, or 0
        raise ExplainerError(
            f"returned {what} so large (up to {float(np.abs(array).max()):.3g}) that their sum "
            f"overflows float64; return them in the units of the model's output"
        )


def _unchanged(before: Any, after: Any, what: str) -> None:
    import numpy as np

    if before is not None and not np.array_equal(np.asarray(before, dtype=float), after, equal_nan=True):
        raise ExplainerError(
            f"modified its `{what}` argument in place; copy it before writing (np.array(x, copy=True))"
        )


def run(explainer: Explainer, case: Case, *, seed: int = 0, budget: int | None = None) -> Explanation:
    """Call ``explainer`` on ``case`` in this process and return the validated explanation.

    Raises :class:`NotApplicable` (skip) or :class:`ExplainerError` (fail); any other exception
    the explainer raises propagates unchanged.  The rows the model evaluates during the call are
    counted (:mod:`pytest_xai.engine.evaluations`).
    """
    from pytest_xai.engine import evaluations

    kwargs = arguments(explainer, case, seed, budget)
    try:
        with evaluations.counting(kwargs, also=(case.built_twin(),)) as (given, tally):  # a Later one: unreachable
            start = time.perf_counter()
            output = explainer.func(**given)
            seconds = time.perf_counter() - start
    except Exception as exc:
        if not _unannotated_model(explainer) or isinstance(exc, (NotApplicable, ExplainerError)):
            raise
        kind = type(kwargs["model"])
        raise ModelTypeError(
            f"{type(exc).__name__}: {exc}\n(it was given model = a {kind.__module__}.{kind.__qualname__} on case "
            f"{case.name!r}; if it cannot use that type, annotate the parameter with the type it needs, e.g. "
            f'`model: sklearn.base.BaseEstimator` or `model: "torch.nn.Module"`, and cases without one are '
            f"skipped)"
        ) from exc
    for name in ("inputs", "background", "baseline"):
        if name in kwargs:
            _unchanged(getattr(case, name), kwargs[name], name)
    attributions, importance, interactions = coerce(output, case)
    if importance is None:  # the README's contract: mean |attribution| over the explained rows
        importance = abs(attributions).mean(axis=0)
    stderr = stderr_of(output, tuple(case.inputs.shape))
    return Explanation(attributions, seconds, importance, interactions, tally.rows, stderr)

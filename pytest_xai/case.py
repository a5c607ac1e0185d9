"""The two value types of the core: a ground-truth problem (``Case``) and a verdict (``Score``).

No numpy at import time: the plugin imports this module on every pytest run.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # annotations only: see above
    import numpy as np
    from numpy.typing import NDArray

CATEGORIES = ("fidelity", "fragility", "stability", "stress")
#: ``meta`` keys that were run-time hooks before they became fields of :class:`Case`.
_HOOKS = {"draw": "draw", "with_model": "swap_model", "variants": "variants"}


class Draw(Protocol):
    """Draws the worst example of a test: ``draw(path, case, attributions, row)`` writes a PNG."""

    def __call__(self, path: Path, case: Case, attributions: Any, row: int) -> Any: ...


class SwapModel(Protocol):
    """``swap(case, model)``: ``case`` with ``model`` in place of its own (randomisation checks)."""

    def __call__(self, case: Case, model: Any) -> Case: ...


class Variants(Protocol):
    """``variants(case)`` builds the case's randomised models into ``case.meta`` on first use."""

    def __call__(self, case: Case) -> None: ...


class Later:
    """A field value built on first read, once for every copy of the case: a case's torch twin
    given as ``torch_model=Later(build)`` imports torch only when an explainer or a check asks for
    it, so that a worker that needs no twin starts without torch (docs/design.md, "Fixed cost")."""

    __slots__ = ("build", "built", "value")

    def __init__(self, build: Callable[[], Any]):
        self.build, self.value, self.built = build, None, False

    def get(self) -> Any:
        if not self.built:
            self.value, self.built = self.build(), True
        return self.value


class _Deferred:
    """A :class:`Case` field that may hold a :class:`Later`: read, it gives the built value."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, case: Any, owner: type | None = None) -> Any:
        if case is None:  # the dataclass asks for the field's default
            return None
        value = case.__dict__.get(self.name)
        return value.get() if isinstance(value, Later) else value

    def __set__(self, case: Any, value: Any) -> None:
        case.__dict__[self.name] = value


@dataclass(frozen=True)
class CaseInfo:
    """What is known about a case without building it (used at collection time).

    ``checks`` maps a check name (see ``pytest_xai.checks``) to the case-specific arguments that
    check needs, e.g. ``{"symmetry": {"features": (0, 1), "mirror": (0, 2, 1, 3)}}``.
    """

    name: str
    family: str
    category: str
    source: str
    checks: Mapping[str, Mapping[str, Any]]
    build: Callable[..., Case] | None
    description: str = ""
    smoke: tuple[str, ...] = ()  # the checks of this case in the fast gate (-m xai_smoke)
    #: The model libraries the builder imports (``("xgboost",)``), for the zygote to import once
    #: before its first fork; None when unknown (a user's case): then all of them.
    libraries: tuple[str, ...] | None = None


@dataclass(eq=False)
class Case:
    """A ground-truth problem an explainer is run on.

    The fields named like the explainer contract (``inputs``, ``predict``, ``model``, ``target``,
    ``background``, ``baseline``, ``feature_names``) are what an explainer may ask for. ``truth``
    holds ground-truth arrays keyed by name (e.g. ``"shapley"`` for exact interventional values
    against ``background``); ``torch_model`` is a differentiable twin of ``model`` when one exists
    (given as a :class:`Later`, it is built on first read).
    ``target`` is one class index, one per explained row (Quantus' convention), or None (regression).
    Build one from your own model and data with :func:`pytest_xai.make_case`.

    Three optional hooks, each a module-level function so that a case pickles (hand-made cases
    travel to worker processes pickled, without their hooks; registered ones are rebuilt there):
    ``draw`` draws the worst example (``--xai-report`` pictures), ``swap_model`` makes the case
    with another model (:meth:`with_model`), ``variants`` builds randomised models into ``meta``
    on first use (:meth:`build_variants`).
    """

    info: CaseInfo
    inputs: Any
    predict: Callable[[Any], Any]
    feature_names: list[str]
    model: Any = None
    target: Any = None
    background: Any = None
    baseline: Any = None
    torch_model: Any = _Deferred()  # may be given as a Later
    truth: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    draw: Draw | None = None
    swap_model: SwapModel | None = None
    variants: Variants | None = None

    def __post_init__(self) -> None:
        old = [key for key in _HOOKS if key in self.meta]
        if old:
            raise TypeError(
                f"case {self.info.name!r}: meta[{old[0]!r}] is no longer read; pass "
                f"{_HOOKS[old[0]]}= to Case instead (a field of pytest_xai.Case)"
            )

    @property
    def name(self) -> str:
        return self.info.name

    def but(self, **fields: Any) -> Case:
        """A copy with ``fields`` changed; a :class:`Later` twin stays unbuilt (``dataclasses.replace``
        reads every field, so it would build it)."""
        other = copy.copy(self)
        for name, value in fields.items():
            setattr(other, name, value)
        return other

    def built_twin(self) -> Any:
        """``torch_model`` if it exists already, without building a :class:`Later` one (None then)."""
        value = self.__dict__.get("torch_model")
        return None if isinstance(value, Later) and not value.built else self.torch_model

    def with_model(self, model: Any) -> Case:
        """This case with ``model`` in place of its own (itself for its own model or None)."""
        if model is None or model is self.model:
            return self
        if self.swap_model is None:
            raise TypeError(f"case {self.name!r} cannot swap its model: it has no swap_model hook")
        return self.swap_model(self, model)

    def build_variants(self) -> None:
        """Build the randomised models of ``variants`` (idempotent); nothing for a case without."""
        if self.variants is not None:
            self.variants(self)

    def without_hooks(self) -> Case:
        """A copy without hooks or builder (often lambdas): what a worker process needs, picklable."""
        return replace(self, info=replace(self.info, build=None), draw=None, swap_model=None, variants=None)

    @property
    def output_range(self) -> float:
        """R = max f - min f over the explained points: the natural unit of attributions."""
        out = self.outputs()
        return float(out.max() - out.min())

    def outputs(self, inputs: Any = None) -> NDArray[np.float64]:
        """The explained output per row of ``inputs`` (default: the case's): the regression output,
        or the probability of the target class (one class, or one per row)."""
        import numpy as np

        out = np.asarray(self.predict(self.inputs if inputs is None else inputs), dtype=float)
        if out.ndim == 2 and out.shape[1] == 1 and self.target is None:
            return out[:, 0]
        if out.ndim == 2:
            target = np.broadcast_to(np.asarray(self.target, dtype=int), (len(out),))
            chosen: NDArray[np.float64] = out[np.arange(len(out)), target]  # numpy types fancy indexing as Any
            return chosen
        return out

    def __repr__(self) -> str:
        shape = getattr(self.inputs, "shape", None)
        return f"Case({self.name!r}, family={self.info.family!r}, inputs={shape})"


@dataclass(frozen=True, eq=False)
class CaseRef:
    """A registered case, named and not built: what pytest's process holds (docs/design.md, "Engine").

    The explainer's worker and the judge's worker each build the case from these four values
    (from the shared disk cache), so pytest's process never runs a builder or a model.  Reading
    any field of :class:`Case` (``ref.inputs``, ``ref.predict``) builds the case in the reading
    process, memoised (``cases.get``): a test of your own may, the built-in suite never does.
    """

    info: CaseInfo
    seed: int
    cache_root: str | None
    data_dir: str | None

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def key(self) -> tuple[str, int, str | None, str | None]:
        """What ``cases.get`` builds it from, and what its workers memoise it by."""
        return self.name, self.seed, self.cache_root, self.data_dir

    def build(self) -> Case:
        """The case itself, built in this process (memoised)."""
        from pytest_xai import cases
        from pytest_xai.cache import Cache

        return cases.get(self.name, seed=self.seed, cache=Cache(self.cache_root), data_dir=self.data_dir)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.build(), name)

    def __repr__(self) -> str:
        return f"CaseRef({self.name!r}, family={self.info.family!r}, seed={self.seed})"


@dataclass(frozen=True)
class Score:
    """The verdict of one check on one explanation.

    ``value`` is in [0, 1], higher is better; ``passed`` compares a statistic with ``threshold``
    (the parameter named in ``params`` that decides); ``detail`` is one line a human can act on;
    ``worst`` locates the worst example (row, feature, values) when there is one.
    """

    check: str
    value: float
    passed: bool
    threshold: float
    detail: str
    params: Mapping[str, Any] = field(default_factory=dict)
    worst: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.value <= 1.0:
            raise ValueError(f"Score.value must be in [0, 1], got {self.value!r}")

    def __bool__(self) -> bool:
        return self.passed

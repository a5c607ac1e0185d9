"""The two value types of the core: a ground-truth problem (``Case``) and a verdict (``Score``).

No numpy at import time: the plugin imports this module on every pytest run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

CATEGORIES = ("fidelity", "fragility", "stability", "stress")


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
    build: Callable[..., "Case"] | None
    description: str = ""


@dataclass(eq=False)
class Case:
    """A ground-truth problem an explainer is run on.

    The fields named like the explainer contract (``inputs``, ``predict``, ``model``, ``target``,
    ``background``, ``baseline``, ``feature_names``) are what an explainer may ask for. ``truth``
    holds ground-truth arrays keyed by name (e.g. ``"shapley"`` for exact interventional values
    against ``background``); ``torch_model`` is a differentiable twin of ``model`` when one exists.
    ``target`` is one class index, one per explained row (Quantus' convention), or None (regression).
    Build one from your own model and data with :func:`pytest_xai.make_case`.
    """

    info: CaseInfo
    inputs: Any
    predict: Callable[[Any], Any]
    feature_names: list[str]
    model: Any = None
    target: Any = None
    background: Any = None
    baseline: Any = None
    torch_model: Any = None
    truth: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def output_range(self) -> float:
        """R = max f - min f over the explained points: the natural unit of attributions."""
        out = self.outputs()
        return float(out.max() - out.min())

    def outputs(self, inputs: Any = None):
        """The explained output per row of ``inputs`` (default: the case's): the regression output,
        or the probability of the target class (one class, or one per row)."""
        import numpy as np

        out = np.asarray(self.predict(self.inputs if inputs is None else inputs), dtype=float)
        if out.ndim == 2 and out.shape[1] == 1 and self.target is None:
            return out[:, 0]
        if out.ndim == 2:
            target = np.broadcast_to(np.asarray(self.target, dtype=int), (len(out),))
            return out[np.arange(len(out)), target]
        return out

    def __repr__(self) -> str:
        shape = getattr(self.inputs, "shape", None)
        return f"Case({self.name!r}, family={self.info.family!r}, inputs={shape})"


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

"""Optional dependencies: which extra of pytest-xai installs a module, and what to tell a user
who lacks it (pure Python: no pytest, no numpy).

A test that needs a missing optional library is skipped with the install line, the convention of
``pytest.importorskip`` (README "Install"): ``case units_weighted_features needs torch, which is
not installed: pip install "pytest-xai[torch]"``.
"""

from __future__ import annotations

#: Top-level module -> the extra of ``pyproject.toml`` that installs it (``tests/test_extras.py``
#: checks each against the extra's requirements).
EXTRAS = {
    "torch": "torch",
    "captum": "torch",
    "transformers": "llm",
    "shap": "shap",
    "xgboost": "shap",
    "sklearn": "shap",
    "lime": "lime",
    "chess": "chess",
    "matplotlib": "plot",
}


def install_line(module: str) -> str:
    """``pip install "pytest-xai[EXTRA]"`` for the top-level ``module``."""
    return f'pip install "pytest-xai[{EXTRAS[module]}]"'


def missing(exc: BaseException | None) -> str | None:
    """The optional top-level module whose absence raised ``exc`` (following ``raise ... from``
    and the exception being handled), or None when ``exc`` is about something else."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ModuleNotFoundError) and exc.name:
            top = exc.name.partition(".")[0]
            if top in EXTRAS:
                return top
        exc = exc.__cause__ or exc.__context__
    return None


def skip_reason(what: str, exc: BaseException) -> str | None:
    """Why ``what`` (e.g. ``case chess_oracle_check``) is skipped, or None when ``exc`` is no
    missing optional dependency (then it is a real error)."""
    module = missing(exc)
    if module is None:
        return None
    return f"{what} needs {module}, which is not installed: {install_line(module)}"

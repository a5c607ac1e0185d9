"""Self-tests run pytest in-process (pytester), which drops modules first imported by the inner run.
numpy and friends cannot be imported twice in one process, so import them once, at configure time.

Not when this checkout runs the built-in suite alone (``pytest --xai-explainer=...`` with no test
path, the README's main job): that run collects no test here, and the preload would cost it
about 7 CPU seconds of imports it never uses.
"""

import contextlib
import sys

import pytest


def pytest_configure(config):
    if config.getoption("xai_explainer") and config.args_source != pytest.Config.ArgsSource.ARGS:
        return
    import numpy  # noqa: F401
    import xgboost  # noqa: F401

    import pytest_xai.cases
    import pytest_xai.explainers.baselines
    import pytest_xai.strategies

    pytest_xai.cases.infos()
    for optional in (
        "matplotlib.backends.backend_agg",
        "PIL.Image",
        "torch",
        "sklearn.ensemble",
        "sklearn.datasets",
        "sklearn.model_selection",
        "sklearn.neural_network",
        "shap",
        "lime.lime_tabular",
        "captum.attr",
        "chess",
    ):
        with contextlib.suppress(ImportError):
            __import__(optional)


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """One torch thread per test process (``docs/design.md``, "Speed rules"), restored afterwards."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)

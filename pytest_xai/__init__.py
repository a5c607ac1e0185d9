"""pytest-xai: explainers (SHAP, LIME, Integrated Gradients, yours) as systems under test.

Only light names live here, so that ``import pytest_xai`` (and the pytest plugin) stay free of
numpy, torch and friends.  Everything heavy is imported by the modules that need it.
"""

from pytest_xai.case import Case, Score
from pytest_xai.errors import NotApplicable

__version__ = "0.1.0"
__all__ = ["Case", "NotApplicable", "Score", "__version__"]

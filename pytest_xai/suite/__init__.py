"""The built-in battery, collected when an explainer is configured (see ``xai_suite.py``)."""

"""The built-in battery, collected when an explainer is configured (see ``battery.py``)."""

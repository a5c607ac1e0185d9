"""Exceptions shared by the core and the plugin."""


class NotApplicable(Exception):
    """Raised by an explainer that cannot handle a case; the test is skipped with the reason.

    >>> raise NotApplicable("needs a torch model")
    """


class ExplainerError(Exception):
    """The explainer under test misbehaved: it raised, hung, or returned something invalid.

    The message always says what was wrong; the plugin adds the explainer and case names.
    """


class ExplainerTimeout(ExplainerError):
    """The explainer did not return within the time limit and was stopped."""


class SpecError(ValueError):
    """An explainer spec (``module:attr``) cannot be loaded; the message says why and what to do."""

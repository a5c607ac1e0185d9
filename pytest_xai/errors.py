"""Exceptions shared by the core and the plugin."""

from __future__ import annotations

#: How an explainer call can fail (``ExplainerError.kind``, the ``kind`` of a JSON report record):
#: stopped at the time limit, its worker process died or sent garbage, it returned something the
#: contract rejects, or it raised.
ERROR_KINDS = ("timeout", "crash", "invalid", "raised")


class NotApplicable(Exception):
    """Raised by an explainer that cannot handle a case; the test is skipped with the reason.

    >>> raise NotApplicable("needs a torch model")
    """


class ExplainerError(Exception):
    """The explainer under test misbehaved: it raised, hung, crashed, or returned something invalid.

    The message always says what was wrong; the plugin adds the explainer and case names.  ``kind``
    (one of :data:`ERROR_KINDS`) says which, so that no caller reads it from the message.
    """

    kind = "invalid"


class ExplainerTimeout(ExplainerError):
    """The explainer did not return within the time limit and was stopped."""

    kind = "timeout"


class ExplainerCrash(ExplainerError):
    """The explainer's worker process died, or sent a reply that is not one (malformed, forged)."""

    kind = "crash"


class ExplainerRaised(ExplainerError):
    """The explainer raised; ``.traceback`` holds its formatted traceback."""

    kind = "raised"

    def __init__(self, message: str, traceback_text: str = ""):
        super().__init__(message)
        self.traceback = traceback_text


class SpecError(ValueError):
    """An explainer spec (``module:attr``) cannot be loaded; the message says why and what to do."""

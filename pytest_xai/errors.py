"""Exceptions shared by the core and the plugin."""

from __future__ import annotations

#: How a test can end without a verdict (``ExplainerError.kind``, the ``kind`` of a JSON report
#: record): the explainer was stopped at the time limit, its worker process died or sent garbage, it
#: returned something the contract rejects, or it raised; or the fault is not the explainer's:
#: ``case`` (the case's builder or model hung, raised, returned NaN or the wrong shape, or is not
#: deterministic) or ``check`` (a check raised: a registered check's own bug).
ERROR_KINDS = ("timeout", "crash", "invalid", "raised", "case", "check")


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


class CaseFault(ExplainerError):
    """The case is at fault, not the explainer: its builder or its model hung, raised, returned
    non-finite values or the wrong shape, or gave two answers to one question.  ``stopped``: it was
    stopped at the time limit (a TIMEOUT, not an ERROR)."""

    kind = "case"

    def __init__(self, message: str, traceback_text: str = "", *, stopped: bool = False):
        super().__init__(message)
        self.traceback, self.stopped = traceback_text, stopped


class CheckFault(ExplainerError):
    """A check raised (not the case's model, not the explainer): the check's own bug."""

    kind = "check"

    def __init__(self, message: str, traceback_text: str = ""):
        super().__init__(message)
        self.traceback = traceback_text


class SpecError(ValueError):
    """An explainer spec (``module:attr``) cannot be loaded; the message says why and what to do."""

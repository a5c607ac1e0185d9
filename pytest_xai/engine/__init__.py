"""The engine: the only place user code runs (docs/design.md, "Engine").

An explainer, a case's model, a user's case builder and every check or reference that calls the
model run in worker processes forked by the zygote, under CPU-second limits; pytest's process only
dispatches requests and reads the replies (:mod:`~pytest_xai.engine.runner`,
:mod:`~pytest_xai.engine.judge`).
"""

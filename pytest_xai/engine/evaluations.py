"""Model evaluations: the rows an explainer's calls of the model evaluate over one explanation.

A perturbation explainer's cost is the rows it asks the model to evaluate (:mod:`pytest_xai.engine.budget`).
Unlike seconds, that count does not move with the machine or its load: the same seeded explainer on
the same case spends the same evaluations in every run, serially or under ``pytest -n N``, so a
baseline can gate it (``--xai-baseline-evaluations-factor``).  :func:`counting` counts them around
one call of the explainer (``contract.run``, in its worker process) by instrumenting what the call
receives, and undoes it afterwards:

- ``predict``: a wrapper counting the rows of each call (``len`` of its first argument);
- ``model`` and the case's torch twin: a ``torch.nn.Module`` counts the batch of each forward of
  that top module, or of the layer owning its first parameter when the layers are called one by
  one (the process's forward hooks, not the module's own; rows after the hooks that ran before, so
  captum's DeepLift, which appends its baselines, counts both halves); an estimator (scikit-learn,
  xgboost, anything with them) counts its ``predict``, ``predict_proba``, ``decision_function``,
  ``predict_log_proba`` and an xgboost ``Booster``'s ``inplace_predict``, patched on the instance; a
  plain function is
  wrapped like ``predict``.  A callable object without such methods, or a scripted torch module
  (which takes no hooks), is counted only through ``predict``.

A call inside another counted call is not counted again (a re-entrancy guard, per thread):
``predict_proba`` calling ``decision_function``, a case's ``predict`` calling its torch model.  Rows
evaluated in a copy of the model made by pickling, or in another process, are not counted.  0 means
the explainer never called the model through what it was handed: TreeSHAP reads the trees, a
negative control returns noise.  What the count proves, and what an explainer can still hide:
docs/reference.md, "Model evaluations".
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

#: An estimator's methods that evaluate the model (scikit-learn's, xgboost's ``Booster`` too).
METHODS = ("predict", "predict_proba", "decision_function", "predict_log_proba", "inplace_predict")
_ABSENT = object()  # an instance had no attribute of that name before it was patched


class Tally:
    """The rows counted by one :func:`counting`, thread-safe; ``depth`` guards nested calls per thread."""

    def __init__(self) -> None:
        self.rows = 0
        self._lock = threading.Lock()
        self._local = threading.local()

    def enter(self, rows: Callable[[], int] | None) -> bool:
        """A model call begins: count ``rows()`` unless it is inside another; True when outermost."""
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        if depth == 0 and rows is not None:
            self.add(rows())
        return depth == 0

    def leave(self) -> bool:
        """A model call ends: True when it was the outermost."""
        self._local.depth = max(0, getattr(self._local, "depth", 1) - 1)
        return self._local.depth == 0

    def add(self, rows: int) -> None:
        with self._lock:
            self.rows += rows


def rows(x: Any) -> int:
    """The rows of one model input: its first dimension (numpy, torch, pandas, scipy), an xgboost
    ``DMatrix``'s ``num_row()``, a list's length; 1 for a scalar or anything without them.  A numpy
    array's and a torch tensor's are read from the buffer's own shape, never from a ``shape`` that a
    subclass overrides."""
    numpy, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    try:
        if numpy is not None and isinstance(x, numpy.ndarray):
            shape = numpy.ndarray.shape.__get__(x)
        elif torch is not None and isinstance(x, torch.Tensor):
            shape = torch._C.TensorBase.size(x)
        else:
            shape = getattr(x, "shape", None)
        if shape is not None:
            return int(shape[0]) if len(shape) else 1
        if callable(getattr(x, "num_row", None)):
            return int(x.num_row())
        return len(x)
    except Exception:  # noqa: BLE001 - a user object's shape or len may raise anything: it is one row
        return 1


def _first(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return args[0] if args else next(iter(kwargs.values()), None)


def _uncounted(func: Callable[..., Any]) -> Callable[..., Any]:
    return func


#: What each :class:`Counted` wraps and counts into, kept off the object the explainer holds.
_COUNTED: weakref.WeakKeyDictionary[Counted, tuple[Callable[..., Any], Tally]] = weakref.WeakKeyDictionary()


class Counted:
    """``func`` counting the rows of each call in ``tally``.  Pickled (or deep-copied), it is ``func``
    itself: a model or ``predict`` sent to another process still pickles as it did, uncounted there.

    The object carries neither ``func`` nor ``tally`` (no ``__wrapped__``, no counter to reset): an
    explainer that wants the uncounted function must go looking for it in this module."""

    __slots__ = ("__weakref__",)

    def __init__(self, func: Callable[..., Any], tally: Tally):
        _COUNTED[self] = (func, tally)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        func, tally = _COUNTED[self]
        tally.enter(lambda: rows(_first(args, kwargs)))
        try:
            return func(*args, **kwargs)
        finally:
            tally.leave()

    def __reduce__(self) -> tuple[Any, ...]:
        return _uncounted, (_COUNTED[self][0],)

    @property
    def __name__(self) -> str:  # the function's, for introspection
        return str(getattr(_COUNTED[self][0], "__name__", type(self).__name__))

    @property
    def __signature__(self) -> inspect.Signature | None:
        try:
            return inspect.signature(_COUNTED[self][0])
        except (TypeError, ValueError):
            return None


def _is_function(obj: Any) -> bool:
    return (
        inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.isbuiltin(obj) or isinstance(obj, functools.partial)
    )


def _torch_module(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


def _hook_torch(module: Any, tally: Tally) -> Callable[[], None] | None:
    """Count each forward of ``module`` (the top module: its submodules' forwards are its own); None
    when it takes no hooks (a ``torch.jit.ScriptModule``: counted through ``predict`` only).  The
    rows are counted after the forward, from the arguments it received (after its own pre-hooks:
    captum's DeepLift appends its baselines).

    The hooks are the whole process's (``register_module_forward_pre_hook``), not the module's, so
    that clearing its hook dictionaries hides nothing; a pass that calls the layers one by one is
    counted at the layer that owns the model's first parameter, once per pass, and one through
    ``module.forward`` at its outermost submodule holding that layer."""
    import torch

    if isinstance(module, torch.jit.ScriptModule):
        return None
    first = next(module.parameters(), None)
    entry = next(
        (m for m in module.modules() if first is not None and any(p is first for p in m.parameters(False))), None
    )
    # the top module, the entry layer and every module between them: a pass through ``forward``
    # itself (captum's LLMAttribution calls ``model.forward(**inputs)``) runs no hook of the top
    # module, and is counted at its outermost submodule that holds the entry layer
    counted = {id(m) for m in module.modules() if entry is not None and any(e is entry for e in m.modules())}
    counted.add(id(module))
    ours = {id(m) for m in module.modules()}

    def before(mod: Any, _args: Any) -> None:
        if id(mod) in ours:
            tally.enter(None)

    def after(mod: Any, args: Any, _output: Any) -> None:  # always called, even when forward raised
        if id(mod) in ours and tally.leave() and id(mod) in counted:
            tally.add(rows(_first(tuple(args), {})))

    hooks = torch.nn.modules.module
    handles = [
        hooks.register_module_forward_pre_hook(before),
        hooks.register_module_forward_hook(after, always_call=True),
    ]

    def undo() -> None:
        for handle in handles:
            handle.remove()

    return undo


def _patch_methods(obj: Any, tally: Tally) -> Callable[[], None] | None:
    """Count ``obj``'s prediction methods (:data:`METHODS`) through instance attributes; None when
    it has none or takes no instance attributes."""
    own = getattr(obj, "__dict__", None)
    if not isinstance(own, dict):
        return None
    patched: dict[str, Any] = {}
    for name in METHODS:
        try:
            method = getattr(obj, name)  # scikit-learn's available_if raises AttributeError: not there
        except Exception:  # noqa: BLE001, S112 - a property of a user's model may raise anything: not counted
            continue
        if callable(method):
            patched[name] = own.get(name, _ABSENT)
            own[name] = Counted(method, tally)
    if not patched:
        return None

    def undo() -> None:
        for name, before in patched.items():
            if before is _ABSENT:
                own.pop(name, None)
            else:
                own[name] = before

    return undo


@contextlib.contextmanager
def counting(arguments: dict[str, Any], also: tuple[Any, ...] = ()) -> Iterator[tuple[dict[str, Any], Tally]]:
    """``(arguments to call the explainer with, tally)``: ``arguments`` (the contract's, left as they
    are) with ``predict`` and ``model`` counted, and torch modules in ``also`` (the case's twin)
    hooked; ``tally.rows`` is the count once the call has returned.  Everything is undone on exit."""
    tally = Tally()
    given = dict(arguments)
    undo: list[Callable[[], None]] = []
    predict = given.get("predict")
    if callable(predict):
        given["predict"] = Counted(predict, tally)
    model: Any = given.get("model")
    hooked: list[Any] = []
    for obj in (model, *also):
        if obj is None or any(obj is seen for seen in hooked):
            continue
        hooked.append(obj)
        if _torch_module(obj):
            if (unhook := _hook_torch(obj, tally)) is not None:
                undo.append(unhook)
        elif obj is model:
            if _is_function(obj):
                given["model"] = Counted(obj, tally)
            elif (restore := _patch_methods(obj, tally)) is not None:
                undo.append(restore)
    try:
        yield given, tally
    finally:
        for step in reversed(undo):
            step()


def compact(n: float | None) -> str:
    """``n`` evaluations in a few characters: 0, 950, 4.1k, 12k, 3.4M, 5M."""
    if n is None:
        return ""
    value = float(n)
    if round(value) < 1000:
        return f"{value:.0f}"
    for unit in ("k", "M", "G", "T"):
        value /= 1000
        text = f"{value:.1f}" if value < 9.95 else f"{value:.0f}"
        if float(text) < 1000 or unit == "T":
            return text.removesuffix(".0") + unit
    raise AssertionError("unreachable")  # pragma: no cover

"""Explainers that misbehave on purpose: each must fail only its own test, with a clear message."""

import ctypes
import itertools
import time

import numpy as np

from pytest_xai.explainers.baselines import exact_shapley


def raises(inputs):
    raise ValueError("boom from the explainer")


def returns_nan(inputs):
    out = np.zeros(inputs.shape)
    out[0, 0] = np.nan
    return out


def returns_inf(inputs):
    return np.full(inputs.shape, np.inf)


def returns_none(inputs):
    return None


def returns_string(inputs):
    return "not an attribution"


def wrong_shape(inputs):
    return np.zeros((inputs.shape[0], inputs.shape[1] + 1))


def extra_class_axis(inputs):
    return np.zeros(inputs.shape + (2,))


def tensor_requires_grad(inputs, predict, background, target):
    import torch

    values = torch.tensor(exact_shapley(inputs, predict, background, target), requires_grad=True)
    return values * 1.0


def mutates_inputs(inputs, predict, background, target):
    values = exact_shapley(inputs, predict, background, target)
    inputs[:] = 0.0
    return values


def sleeps_forever(inputs):
    time.sleep(10_000)


def spins_in_c(inputs):
    """A C loop that holds the GIL: no signal or thread can interrupt it."""
    return sum(itertools.repeat(1))


def segfaults(inputs):
    ctypes.string_at(0)


def not_applicable(inputs):
    from pytest_xai import NotApplicable

    raise NotApplicable("this explainer only handles images")


def swapped_features(inputs, predict, background, target):
    """Exact Shapley values with the first two features' columns swapped: fails every ranking."""
    values = exact_shapley(inputs, predict, background, target)
    values[:, [0, 1]] = values[:, [1, 0]]
    return values


def zeros(inputs):
    """Attributes nothing: fails symmetry (degenerate), dummy (guard) and ranking (ties)."""
    return np.zeros(inputs.shape)


# Routes to end the session green or lose its report (each must fail only its own test).


class _Payload(str):
    """A str whose unpickling runs code: what an unpickling plugin would execute."""

    def __reduce__(self):
        import os

        return (os._exit, (0,))


class _PoisonedError(Exception):
    def __str__(self):
        return _Payload("poisoned message")


def raises_poisoned_message(inputs):
    raise _PoisonedError()


class _UnprintableError(Exception):
    def __str__(self):
        raise RuntimeError("no text for you")


def raises_unprintable(inputs):
    raise _UnprintableError()


def exits_process(inputs):
    import os

    os._exit(0)


def raises_system_exit(inputs):
    raise SystemExit(0)


def raises_keyboard_interrupt(inputs):
    raise KeyboardInterrupt


def forges_result(inputs, predict, background, target):
    """Finds the worker's result channel and writes a result of its own there, then returns."""
    import os
    import sys

    from pytest_xai.engine import wire

    frame = sys._getframe()
    while frame is not None and "reply_fd" not in frame.f_locals:
        frame = frame.f_back
    message = wire.pack({"kind": "ok", "token": "forged", "seconds": 0.0}, {"attributions": inputs * 0})
    os.write(frame.f_locals["reply_fd"], message)
    return exact_shapley(inputs, predict, background, target)


def leaves_grandchild(inputs, predict, background, target):
    """Starts a process that outlives the call and keeps every inherited descriptor open."""
    import os
    import subprocess
    import sys

    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        close_fds=False,
        pass_fds=tuple(int(fd) for fd in os.listdir("/proc/self/fd") if int(fd) > 2),
    )
    if os.environ.get("XAI_PID_FILE"):
        with open(os.environ["XAI_PID_FILE"], "a") as fh:
            fh.write(f"{child.pid}\n")
    return exact_shapley(inputs, predict, background, target)


def huge_message(inputs):
    raise ValueError("x" * 20_000_000)


def mutates_model(model, inputs):
    """Sabotages the case's model in place (its predictions become 0): no other explainer may see it."""
    model.predict = lambda X, *args, **kwargs: np.zeros(len(X))
    return np.zeros(inputs.shape)


def prepared_exits(inputs):
    return np.zeros(inputs.shape)


prepared_exits.prepare = lambda: __import__("os")._exit(0)


def prepared_sleeps(inputs):
    return np.zeros(inputs.shape)


prepared_sleeps.prepare = lambda: time.sleep(25)


def prepared_changes_the_process(inputs):
    return np.zeros(inputs.shape)


def _change_the_process():
    import os

    np.seterr(all="raise")
    os.chdir("/")
    os.environ["XAI_HOSTILE"] = "1"


prepared_changes_the_process.prepare = _change_the_process


def raises_lone_surrogate(inputs):
    """A message no UTF-8 file can hold as such."""
    raise ValueError("bad \ud800 half of a pair </title><script>document.title='pwned'</script>")


def _zygote_of_this_worker() -> int | None:
    """The zygote that forked this worker (its parent), or None when the worker was spawned (by a
    pytest process, maybe an xdist worker forked from the zygote: same command line, but threads)."""
    import os

    parent = os.getppid()
    with open(f"/proc/{parent}/cmdline", "rb") as fh:
        zygote = b"pytest_xai.engine.zygote" in fh.read() and len(os.listdir(f"/proc/{parent}/task")) == 1
    return parent if zygote else None


def kills_the_zygote(inputs):
    import os
    import signal

    zygote = _zygote_of_this_worker()
    if zygote is not None:
        os.kill(zygote, signal.SIGKILL)
    return np.zeros(inputs.shape)


def stops_the_zygote(inputs):
    import os
    import signal

    zygote = _zygote_of_this_worker()
    if zygote is not None:
        os.kill(zygote, signal.SIGSTOP)
    return np.zeros(inputs.shape)


def sends_a_truncated_reply(inputs):
    """Writes the first bytes of a message on its worker's result channel (the one pipe it may
    write), then hangs."""
    import fcntl
    import os
    import stat

    for name in os.listdir("/proc/self/fd"):
        try:
            fd = int(name)
            if stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
                os.write(fd, b"XAI\x01\x10")
        except OSError:
            continue
    time.sleep(10_000)

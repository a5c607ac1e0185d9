"""Deterministic shards of one suite run (``--xai-shard=K/N``, ``docs/ci.md``; pure Python).

Each (case, explainer) group of the suite goes whole to one shard, so that its checks share one
explanation; other tests are groups of one.  Membership depends only on what is collected and on
files every shard reads alike: groups are spread by weight, costliest first, each to the lightest
shard (ties by name), the weight being the seconds the baseline recorded (``--xai-baseline``, a
committed file) or else the number of tests.  pytest's cost cache, which differs from job to job,
only orders the work inside a shard.
"""

from __future__ import annotations

from collections.abc import Mapping


def parse(value: str, source: str = "--xai-shard") -> tuple[int, int]:
    """``"K/N"`` -> ``(K, N)`` with 1 <= K <= N."""
    from pytest_xai.options import OptionError

    k_text, slash, n_text = str(value).partition("/")
    try:
        k, n = int(k_text), int(n_text)
    except ValueError:
        k = n = 0
    if not slash or not 1 <= k <= n:
        raise OptionError(f"{source}={value!r}: give K/N with 1 <= K <= N, e.g. 1/3 for the first of three shards")
    return k, n


def assign(weights: Mapping[str, float], n: int) -> dict[str, int]:
    """Group -> shard (1..n): longest processing time first over ``weights``, deterministic."""
    loads = [0.0] * n
    out = {}
    for group in sorted(weights, key=lambda g: (-weights[g], g)):
        shard = min(range(n), key=lambda i: (loads[i], i))
        loads[shard] += weights[group]
        out[group] = shard + 1
    return out

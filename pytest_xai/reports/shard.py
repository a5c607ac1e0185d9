"""Deterministic shards of one suite run (``--xai-shard=K/N``, ``docs/ci.md``; pure Python).

Each (case, explainer) group of the suite goes whole to one shard, so that its checks share one
explanation; other tests are groups of one.  Membership depends only on what is collected and on
files every shard reads alike: groups are spread by weight, costliest first, each to the lightest
shard (ties by name), the weight being the seconds the baseline recorded (``--xai-baseline``, a
committed file) or else the number of tests.  pytest's cost cache, which differs from job to job,
only orders the work inside a shard.

Each shard's report names what its run was (issue 41): the digests of the tests the whole run
selected (``selection``: -k, -m, test paths and explainers), of the options that change verdicts
(``options``) and of its own tests (``tests``), from which ``merge`` refuses shards of other runs
and a shard whose results are not the tests it was given (:mod:`pytest_xai.reports.merge`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

#: The most shards a run may be split into (a CI matrix holds at most a few hundred jobs); the
#: partition sizes a list by N, so N is bounded before anything is built from it.
MAX_SHARDS = 1000
_K_OF_N = re.compile(r"([0-9]+)/([0-9]+)")  # ASCII digits only: int() also reads "1_0", "+1", " 2", "١"


def parse(value: str, source: str = "--xai-shard") -> tuple[int, int]:
    """``"K/N"`` -> ``(K, N)`` with 1 <= K <= N <= :data:`MAX_SHARDS`, compared as integers of any
    size (``1/99999999999999999999`` is refused, not an overflow)."""
    from pytest_xai.options import OptionError

    given = _K_OF_N.fullmatch(str(value))
    k, n = (int(given[1]), int(given[2])) if given and len(str(value)) <= 50 else (0, 0)
    if not 1 <= k <= n <= MAX_SHARDS:
        raise OptionError(
            f"{source}={value!r}: give K/N with 1 <= K <= N <= {MAX_SHARDS}, e.g. 1/3 for the first of three shards"
        )
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


def digest(value: Any) -> str:
    """``sha256:`` and the hex digest of ``value`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def tests_digest(keys: Iterable[tuple[str, str]]) -> str:
    """The digest of a set of tests by their ``(row, explainer)`` keys
    (:meth:`pytest_xai.reports.record.Record.key`: the suite's rows do not depend on where it is
    installed, so every machine of a matrix computes the same), in any order."""
    return digest(sorted([row, explainer] for row, explainer in keys))

"""Put the JSON reports of a sharded suite back together (pure Python, no pytest).

Shards are slices of one suite run in several CI jobs (pytest-split's ``--splits/--group``, ``-k``
slices).  Their reports merge into one equal to the unsharded report up to timings: the same
results, the summary recomputed.  Reports with other seeds or library versions describe other
runs and are refused unless the caller allows it (the matrix workflow is in ``docs/ci.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from pytest_xai.reports import embed, files, report, shard
from pytest_xai.reports.record import Record


class MergeError(ValueError):
    """The reports cannot be merged; the message names the files and what differs."""


def _check(docs: Sequence[tuple[str, Mapping[str, Any]]], allow_mismatch: bool) -> list[str]:
    """Differences between the shards' seeds, versions and thresholds; raises unless allowed."""
    first_path, first = docs[0]
    problems = []
    for path, doc in docs[1:]:
        for field in ("seed", "repeat", "budget"):
            default = 1 if field == "repeat" else None
            if doc.get(field, default) != first.get(field, default):
                problems.append(
                    f"{field} {first.get(field, default)} in {first_path}, {doc.get(field, default)} in {path}"
                )
        changed = {
            k: (first["versions"].get(k), doc["versions"].get(k))
            for k in set(first.get("versions", {})) | set(doc.get("versions", {}))
            if first.get("versions", {}).get(k) != doc.get("versions", {}).get(k)
        }
        if changed:
            problems.append(
                f"versions differ between {first_path} and {path}: "
                + ", ".join(f"{k} {a} vs {b}" for k, (a, b) in sorted(changed.items()))
            )
        a, b = (d.get("options", {}).get("thresholds") for d in (first, doc))
        if a != b:
            problems.append(f"threshold overrides differ between {first_path} and {path}")
        digests = [(d.get("shard") or {}).get("options") for d in (first, doc)]
        if not problems and None not in digests and digests[0] != digests[1]:
            problems.append(
                f"options that change verdicts differ between {first_path} and {path} ({_differing(first, doc)})"
            )
    if problems and not allow_mismatch:
        raise MergeError(
            "the reports come from different runs: "
            + "; ".join(problems)
            + ". Shards of one suite share seed, versions and thresholds; pass --allow-mismatch "
            "to merge them anyway"
        )
    return problems


def _differing(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    """Which of the verdict options two reports show differ (the digest covers more)."""
    shown = [
        k
        for k in ("explainers", "timeout", "wall_timeout")
        if a.get("options", {}).get(k) != b.get("options", {}).get(k)
    ]
    shown += ["gate"] if a.get("gate") != b.get("gate") else []
    return ", ".join(shown) or "the baseline, its tolerances or factors"


def _check_shards(docs: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
    """Reports of ``--xai-shard=K/N`` runs: every shard once, holding together every test collected."""
    shards = [(path, doc.get("shard")) for path, doc in docs]
    given = [(path, s) for path, s in shards if isinstance(s, Mapping)]
    if not given:
        return
    if len(given) < len(shards):
        raise MergeError(
            f"{next(p for p, s in shards if not isinstance(s, Mapping))} is no --xai-shard report, "
            f"{given[0][0]} is one: merge the reports of one --xai-shard=K/N matrix"
        )
    n = {s.get("n") for _, s in given}
    if len(n) > 1:
        raise MergeError(
            f"the shards split the run in different numbers of parts ({sorted(map(str, n))}); "
            f"give every job the same N in --xai-shard=K/N"
        )
    total = n.pop()
    if not isinstance(total, int):
        raise MergeError(f"{given[0][0]}: its shard record has no number of shards; rewrite it with --xai-shard=K/N")
    ks = [s.get("k") for _, s in given]
    missing = [k for k in range(1, total + 1) if k not in ks]
    if missing:
        raise MergeError(
            f"shard {', '.join(f'{k}/{total}' for k in missing)} missing: its tests are in no report; "
            f"merge the reports of all {total} shards"
        )
    selections = [(path, s.get("selection")) for path, s in given]
    if any(digest for _, digest in selections):
        unmarked = [path for path, digest in selections if not digest]
        if unmarked:
            raise MergeError(
                f"{unmarked[0]} holds no digest of its run's tests (an older pytest-xai wrote it), "
                f"the other shards do: rerun it with this version"
            )
        first_path, first = selections[0]
        for path, digest in selections[1:]:
            if digest != first:
                raise MergeError(
                    f"{first_path} and {path} were run on different selections of tests (-k, -m, "
                    f"--xai-category, test paths or explainers differ), so their shards are not one run; "
                    f"run every shard with the same selection"
                )
    collected = {s.get("collected") for _, s in given}
    results = sum(len(doc["results"]) for _, doc in docs)
    if len(collected) == 1 and isinstance(c := next(iter(collected)), int) and results < c:
        raise MergeError(
            f"the shards hold {results} of the {c} tests their run collected: {c - results} ran in "
            f"no shard (a job stopped early?); rerun the shard that lost them"
        )
    if not selections[0][1]:
        return
    everything = []
    for path, doc in docs:
        record = doc["shard"]
        keys = [Record.from_dict(r).key() for r in doc["results"]]
        if shard.tests_digest(keys) != record.get("tests"):
            which = f"{record.get('k')}/{record.get('n')}"
            raise MergeError(
                f"{path}: its {len(keys)} results are not the {record.get('assigned')} tests its shard "
                f"{which} was given (results removed, added or edited since the run, or the job stopped "
                f"early); rerun shard {which}"
            )
        everything += keys
    if shard.tests_digest(everything) != selections[0][1]:
        raise MergeError(
            "the shards' results together are not the tests their run selected (shards partitioned "
            "with different baselines?); rerun every shard with the same options"
        )


def _merge_baselines(docs: Sequence[tuple[str, Mapping[str, Any]]]) -> dict | None:
    given = [doc.get("baseline") for _, doc in docs]
    if not any(given):
        return None
    bases: list[Mapping[str, Any]] = [b for b in given if b]
    if len(bases) < len(given) or len({b.get("path") for b in bases}) > 1:
        raise MergeError(
            "only some shards were compared with a baseline, or with different ones; compare every "
            "shard with the same --xai-baseline"
        )
    diff: dict[str, Any] = {"regressions": [], "improvements": [], "new": [], "unchanged": 0}
    for b in bases:
        for key in ("regressions", "improvements", "new"):
            diff[key] += b["diff"][key]
        diff["unchanged"] += b["diff"]["unchanged"]
    # a baseline test is "not run" only when no shard ran it: every shard lists it as vanished
    vanished = [{(e["row"], e["explainer"]): e for e in b["diff"]["vanished"]} for b in bases]
    common = set.intersection(*(set(v) for v in vanished))
    diff["vanished"] = [vanished[0][k] for k in sorted(common)]
    return {**bases[0], "diff": diff}


def merge(docs: Sequence[tuple[str, Mapping[str, Any]]], *, allow_mismatch: bool = False) -> dict:
    """One report from ``[(path, doc), ...]``; a test in two shards is an error (overlapping slices)."""
    if not docs:
        raise MergeError("no reports given")
    for path, doc in docs:
        try:
            files.check_report(doc, path)
        except files.ReportError as exc:
            raise MergeError(str(exc)) from None
    mismatches = _check(docs, allow_mismatch)
    _check_shards(docs)
    seen: dict[str, str] = {}
    results = []
    for path, doc in docs:
        for rec in map(Record.from_dict, doc["results"]):
            if rec.nodeid in seen:
                raise MergeError(
                    f"{rec.nodeid} is in both {seen[rec.nodeid]} and {path}: the shards overlap; "
                    f"give each test to one shard"
                )
            seen[rec.nodeid] = path
            results.append(rec)
    first = docs[0][1]
    out = {
        **{k: first.get(k) for k in ("schema", "version", "seed", "options", "versions", "machine")},
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "exitstatus": max((doc.get("exitstatus") or 0 for _, doc in docs), default=0),
        "repeat": first.get("repeat", 1),
        **(
            {"shard": {k: first["shard"].get(k) for k in ("n", "collected", "selection", "options")}}
            if isinstance(first.get("shard"), Mapping)
            else {}
        ),
        "shards": [
            {
                "path": path,
                "created": doc.get("created"),
                "exitstatus": doc.get("exitstatus"),
                "results": len(doc["results"]),
                "args": (doc.get("options") or {}).get("args"),
            }
            for path, doc in docs
        ],
        "summary": report.summary(results),
        "results": [rec.to_dict() for rec in sorted(results, key=lambda rec: rec.nodeid)],
    }
    pictures = {
        nodeid: data
        for path, doc in docs
        for nodeid, data in {**embed.carried(doc), **embed.collect(path, doc["results"])}.items()
    }
    if pictures:  # as data: the merged report is read where the shards' folders are not
        out["pictures"] = pictures
    if mismatches:
        out["merge_mismatches"] = mismatches
    baseline = _merge_baselines(docs)
    if baseline is not None:
        out["baseline"] = baseline
    return out

"""The xdist controller under ``pytest -n N`` with explainers (docs/design.md, "Engine"): its scheduler,
which sends the checks of one (case, explainer) to one worker, and what it does when a worker dies.

Part of the plugin; imported by ``pytest_xdist_make_scheduler`` and ``pytest_handlecrashitem``
only, so only under xdist.  The scheduler is xdist's ``loadscope`` (one scope a (case, explainer),
any other test a scope of its own) without what that scheduler gets wrong when a worker dies
(pytest-xdist 3.8; its issues 1189, 1323, 1327 and 1378, pull request 1371).  When a test killed
its own xdist worker, or an explainer its parent, a run of ours:

- waited for ever: the dead worker's next test went to the replacement alone, behind the one it
  died on, and a worker starts a test only once it knows the next one or is told to stop (the
  controller waited for that worker's next event, the worker for the controller's next command);
- ran the test that killed the worker again on each replacement, which it killed too, until
  ``--max-worker-restart`` was spent (8 under ``-n 2``; xdist had reported it failed already);
- ended in INTERNALERROR (``KeyError``): a replacement still collecting was handed work.

And the scopes a dead worker had completed went back on the queue as well, handed out later as
empty work that never completes.

Here, as in xdist's default ``load``: the test a worker died on is reported once, failed, and not
run again; the tests it had not started go back to the front of the queue, completed scopes do
not; a worker always holds two tests or has been told to stop; one that has not collected yet
waits for its own collection.  An xai test whose worker died keeps its record in the reports
(:func:`crash_record`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xdist.scheduler import LoadScopeScheduling

from pytest_xai.plugin import SUITE
from pytest_xai.reports.record import Record


class OneExplanationPerWorker(LoadScopeScheduling):
    """xdist's ``loadscope`` over the (case, explainer) groups of the built-in suite, safe when a worker dies."""

    def _split_scope(self, nodeid: str) -> str:
        path, _, test = nodeid.partition("::")
        if Path(path).name == SUITE.name and "[" in test:
            return "xai-suite[" + test.partition("[")[2]  # e.g. xai-suite[cough_and_fever-shap_kernel]
        return nodeid

    def remove_node(self, node: Any) -> str | None:
        """Forget ``node`` (it finished, or died); return the test it died on, which xdist reports
        failed and which is not run again.  The tests it had not started go back to the front of
        the queue (they were handed out first: the costliest), for the next worker that asks."""
        workload: dict[str, dict[str, bool]] = self.assigned_work.pop(node)
        if self.collection is None:  # gone before the first distribution: its collection is not the run's
            self.registered_collections.pop(node, None)
        unfinished = [nodeid for unit in workload.values() for nodeid, done in unit.items() if not done]
        if not unfinished:
            return None
        crashitem = unfinished[0]  # a worker runs its tests in the order they were sent
        for scope, unit in reversed(workload.items()):
            unit.pop(crashitem, None)
            if not all(unit.values()):
                self.workqueue[scope] = unit
                self.workqueue.move_to_end(scope, last=False)
        for other in self.nodes:
            self._reschedule(other)
        return crashitem

    def add_node_collection(self, node: Any, collection: Any) -> None:
        """A replacement whose collection differs from the run's (xdist logs how) gets no test: it
        is told to stop rather than left waiting."""
        super().add_node_collection(node, collection)
        if node not in self.registered_collections:
            node.shutdown()

    def _reschedule(self, node: Any) -> None:
        """More work for ``node``: a scope while it has two tests or fewer left, more until it has
        two (a worker starts a test only once it knows the next one, or is told to stop); told to
        stop once the queue is empty.  A worker that has not collected yet is scheduled when it has."""
        if node.shutting_down or node not in self.registered_collections:
            return
        if self.workqueue and self._pending_of(self.assigned_work[node]) <= 2:
            self._assign_work_unit(node)
        while self.workqueue and self._pending_of(self.assigned_work[node]) < 2:
            self._assign_work_unit(node)
        if not self.workqueue:
            node.shutdown()


def crash_record(nodeid: str, worker: str, explainers: list[str]) -> Record | None:
    """The record (ERROR, kind ``crash``) of the xai test ``nodeid``, whose xdist worker ``worker``
    died while running it, from its node id (the controller has no items: xdist collects in the
    workers); None for a test of no explainer.  The record the test had begun went with the worker."""
    base, _, params = nodeid.partition("[")
    parts = params.removesuffix("]").split("-") if params else []
    explainer = next((part for part in parts if part in explainers), None)
    if explainer is None:
        return None
    rest = [part for part in parts if part != explainer]
    rec = Record(
        explainer=explainer,
        kind="crash",
        error=f"xdist worker {worker} died while running this test (the test or its explainer ended that process)",
    )
    path, _, test = base.partition("::")
    if Path(path).name == SUITE.name and rest:  # the suite's check[case-explainer]
        from pytest_xai import cases

        info = cases.registered("-".join(rest))
        if info is not None:
            rec.case, rec.family, rec.category, rec.check = info.name, info.family, info.category, test
            rec.row = f"{test}[{info.name}]"
            return rec
    rec.row = f"{base}[{'-'.join(rest)}]" if rest else base  # as a user's test's row (plugin._row_of)
    return rec

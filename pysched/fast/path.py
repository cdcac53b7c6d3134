"""The vectorised hot path: a profile's filters and scores over the snapshot's NodeTable.

The arithmetic lives with the plugins: each plugin that can owns a batch twin of its per-node
method (``filter_batch``/``score_batch``, framework.interfaces.BatchFilterPlugin and
BatchScorePlugin). This module only drives them: after PreFilter it asks every active filter
for its mask (and remembers, per row, the first plugin that rejects it); after PreScore it asks
every active score plugin for its normalised scores and sums them by weight. Whenever an active
plugin has no twin, or its twin declines for this pod (returns None), the answer is ``None`` and
the scheduler runs the plugins one node at a time instead. Plugins that PreFilter/PreScore
marked Skip take no part, as in the framework.

The scheduler takes the rotated prefix holding the first N feasible rows (kube-scheduler's
cut-off). The Status of each infeasible node in it comes from the plugin the masks say rejects
it first (the whole chain for nodes with nominated pods); when the pod fits elsewhere these
statuses are only computed on demand (Diagnosis.resolve). A plugin that disagrees with its mask
is counted in ``stats["mismatch"]`` (tests assert it stays 0); any unexpected exception falls
back to the plugins (``stats["errors"]``).

Nominated pods (priority >= the pod's) are counted in their nodes' columns when every active
filter is resource-monotone; otherwise those nodes go through the plugins' two passes.

tests/unit/pysched/fast/test_fast_path.py compares both paths on randomised clusters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from pykubelet.api.types import Pod
from pysched.framework.cycle_state import CycleState
from pysched.framework.interfaces import BatchFilterPlugin, BatchScorePlugin
from pysched.framework.labels import RequirementError
from pysched.framework.node_table import Ints, Mask, NodeTable, NominatedLoad
from pysched.framework.runtime import Framework

STAT_FAST_FILTER = "fast_filter"
STAT_PLAIN_FILTER = "plain_filter"
STAT_FAST_SCORE = "fast_score"
STAT_PLAIN_SCORE = "plain_score"
STAT_MISMATCH = "mismatch"
STAT_ERRORS = "errors"
STAT_NOMINATED_LOAD = "nominated_load"

# A twin that trips on input its plugin would report as an error: let the plugins say so.
_DECLINED = (RequirementError, ValueError)
_T = TypeVar("_T")


@dataclass
class FilterAnalysis:
    """Feasibility per row, and for each infeasible row the index (into ``plugins``) of the
    first plugin that rejects it (-1: feasible)."""

    feasible: Mask
    first_fail: NDArray[np.int32]
    plugins: list[BatchFilterPlugin] = field(default_factory=list)


@dataclass
class ScoreColumns:
    """Per active score plugin its normalised scores over the scored rows, and the weighted
    totals (what the framework's RunScorePlugins sums)."""

    names: list[str]
    weights: list[int]
    per_plugin: list[Ints]
    totals: Ints

    def plugin_scores(self, j: int) -> dict[str, int]:
        """Normalised score per plugin for the ``j``-th scored row."""
        return {n: int(s[j]) for n, s in zip(self.names, self.per_plugin, strict=True)}


@dataclass(slots=True)
class _Plan:
    """A profile's filter and score plugins with their twins (None: none) and weights."""

    filters: list[tuple[str, BatchFilterPlugin | None]]
    scores: list[tuple[str, BatchScorePlugin | None, int]]


class FastPath:
    """Drives the plugins' batch twins for the scheduler (see module doc)."""

    def __init__(self) -> None:
        self.stats = {
            STAT_FAST_FILTER: 0,
            STAT_PLAIN_FILTER: 0,
            STAT_FAST_SCORE: 0,
            STAT_PLAIN_SCORE: 0,
            STAT_MISMATCH: 0,
            STAT_ERRORS: 0,
            STAT_NOMINATED_LOAD: 0,
        }

        self._plans: dict[Framework, _Plan] = {}

    def _plan(self, fwk: Framework) -> _Plan:
        """Each plugin's twin, found once per profile (isinstance against a runtime-checkable
        Protocol costs microseconds)."""
        plan = self._plans.get(fwk)
        if plan is None:
            plan = self._plans[fwk] = _Plan(
                [
                    (pl.name(), pl if isinstance(pl, BatchFilterPlugin) else None)
                    for pl in fwk.filter_plugins
                ],
                [
                    (
                        pl.name(),
                        pl if isinstance(pl, BatchScorePlugin) else None,
                        fwk.score_plugin_weight[pl.name()],
                    )
                    for pl in fwk.score_plugins
                ],
            )
        return plan

    def nomination_safe(self, fwk: Framework, state: CycleState) -> bool:
        """Every active filter is resource-monotone: nominated pods may be counted in the
        columns (NominatedLoad) instead of through the plugins' two passes."""
        skip = state.skip_filter_plugins
        return all(
            pl is not None and pl.resource_monotone()
            for name, pl in self._plan(fwk).filters
            if name not in skip
        )

    def filter_mask(
        self, fwk: Framework, state: CycleState, pod: Pod, table: NodeTable
    ) -> Mask | None:
        """Feasibility of every table row, or None when some active filter has no twin."""
        res = self.filter_analysis(fwk, state, pod, table)
        return None if res is None else res.feasible

    def filter_analysis(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        nominated: NominatedLoad | None = None,
    ) -> FilterAnalysis | None:
        """The masks of every active filter, or None when one has no twin or declines.
        ``nominated``: nominated pods' requests (only when ``nomination_safe``)."""
        res = self._guarded(self._filter_analysis, fwk, state, pod, table, nominated)
        self.stats[STAT_PLAIN_FILTER if res is None else STAT_FAST_FILTER] += 1
        return res

    def _filter_analysis(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        nominated: NominatedLoad | None,
    ) -> FilterAnalysis | None:
        first_fail = np.full(table.n, -1, np.int32)
        plugins: list[BatchFilterPlugin] = []
        skip = state.skip_filter_plugins
        for name, pl in self._plan(fwk).filters:
            if name in skip:
                continue
            if pl is None:
                return None
            ok = pl.filter_batch(state, pod, table, nominated)
            if ok is None:
                return None
            if ok is table.every_row or ok.all():
                continue
            first_fail[(first_fail < 0) & ~ok] = len(plugins)
            plugins.append(pl)
        return FilterAnalysis(first_fail < 0, first_fail, plugins)

    def scores(
        self, fwk: Framework, state: CycleState, pod: Pod, table: NodeTable, rows: Ints
    ) -> ScoreColumns | None:
        """Every active score plugin's normalised scores over ``rows`` and the weighted
        totals, or None when one has no twin or declines."""
        res = self._guarded(self._scores, fwk, state, pod, table, rows)
        self.stats[STAT_PLAIN_SCORE if res is None else STAT_FAST_SCORE] += 1
        return res

    def _guarded(self, fn: Callable[..., _T | None], *args: Any) -> _T | None:
        """``fn(*args)``, or None when a twin trips: on input its plugin reports as an error
        (the plugins say so), or out of step with its plugin (counted; never a crash)."""
        try:
            return fn(*args)
        except _DECLINED:
            return None
        except Exception:
            self.stats[STAT_ERRORS] += 1
            return None

    def _scores(
        self, fwk: Framework, state: CycleState, pod: Pod, table: NodeTable, rows: Ints
    ) -> ScoreColumns | None:
        names: list[str] = []
        weights: list[int] = []
        per_plugin: list[Ints] = []
        total: Ints | None = None
        skip = state.skip_score_plugins
        for name, pl, w in self._plan(fwk).scores:
            if name in skip:
                continue
            if pl is None:
                return None
            s = pl.score_batch(state, pod, table, rows)
            if s is None:
                return None
            if total is None:
                total = s * w  # a new array: the plugin's column stays as it returned it
            else:
                total += s if w == 1 else s * w
            names.append(name)
            weights.append(w)
            per_plugin.append(s)
        if total is None:
            total = np.zeros(len(rows), np.int64)
        return ScoreColumns(names, weights, per_plugin, total)

    def plugin_scores(
        self, fwk: Framework, state: CycleState, pod: Pod, table: NodeTable, rows: Ints
    ) -> dict[str, Ints] | None:
        """Normalised scores per plugin (tests compare these with the plugins')."""
        cols = self.scores(fwk, state, pod, table, rows)
        if cols is None:
            return None
        return dict(zip(cols.names, cols.per_plugin, strict=True))

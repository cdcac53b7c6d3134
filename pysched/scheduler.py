"""schedule_one: one pod through the framework (pkg/scheduler/schedule_one.go).

The scheduling cycle runs synchronously: snapshot the cache, PreFilter, Filter over the nodes
starting at a round-robin index until ``num_feasible_nodes_to_find`` feasible nodes are found
(the nominated node first, when the pod has one), PreScore/Score, select the host (a uniform
choice among the best totals, with an injectable RNG), assume, Reserve, Permit. The binding
cycle (PreBind, Bind, PostBind) then runs off the scheduling path: inline by default, or on a
worker thread (``async_binding=True``) as kube-scheduler's goroutine does.

Filtering is sequential: the nodes evaluated are exactly the rotated prefix that contains the
first N feasible nodes, so the next cycle's start index is deterministic. (kube-scheduler checks
nodes in parallel and may look at a few more before it stops; the feasible set is the same.)

When a pod and profile allow it, the hot path runs vectorised: every active filter and score
plugin's batch twin over the snapshot's columnar NodeTable (pysched.fast drives them), with the
same decisions. Each attempt's CycleRecord goes to ``on_decision`` (the embedding API keeps
the last one per pod: pysched.decisions).
"""

from __future__ import annotations

import copy
import operator
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pykubelet.api.types import Pod
from pysched.cache import Cache, Snapshot
from pysched.diagnosis import Diagnosis, FitError, NodeToStatus, NoNodesAvailableError
from pysched.extender import EXTENDER_NAME, MAX_EXTENDER_PRIORITY, ExtenderError, HTTPExtender
from pysched.fast.path import STAT_MISMATCH, STAT_NOMINATED_LOAD, FastPath
from pysched.framework.cycle_state import CycleState
from pysched.framework.node_table import NominatedLoad
from pysched.framework.runtime import Framework
from pysched.framework.status import Code, Status
from pysched.framework.types import (
    MAX_NODE_SCORE,
    NodeInfo,
    NodePluginScores,
    PluginScore,
    PodInfo,
)
from pysched.metrics import ERROR, SCHEDULED, UNSCHEDULABLE, SchedulerMetrics
from pysched.plugins import default_preemption
from pysched.preemption import EXTENDER_NOTES_STATE_KEY, VICTIMS_STATE_KEY
from pysched.queue import (
    EVENT_ASSIGNED_POD_DELETE,
    NominatingInfo,
    PriorityQueue,
    QueuedPodInfo,
)

MIN_FEASIBLE_NODES_TO_FIND = 100
# binding cycles in flight at once with async_binding: kube-scheduler starts a goroutine per
# binding cycle (no bound); threads here, each mostly waiting on the API's write. Four made a
# 100-pod burst queue ~2 s for its bindings (issue 23 item 2).
MAX_BINDINGS_IN_FLIGHT = 32
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
# upstream numberOfHighestScoredNodesToReport: how many nodes' scores a decision keeps
NUMBER_OF_HIGHEST_SCORED_NODES_TO_REPORT = 3
# rejected nodes whose reasons a recorded decision computes when the fast path deferred them
# (each costs a Filter call: a bound keeps big clusters as fast as before; simulate resolves
# them all)
DECISION_VERDICTS = 16

CLEAR_NOMINATED_NODE = NominatingInfo("", mode_override=True)
_NO_ROWS = np.zeros(0, np.int64)
_INT64_MIN = int(np.iinfo(np.int64).min)


def num_feasible_nodes_to_find(percentage_of_nodes_to_score: int, num_all_nodes: int) -> int:
    """numFeasibleNodesToFind: all below 100 nodes; else 50 - nodes/125 percent (floor 5%),
    at least 100 nodes; a configured percentage replaces the adaptive one."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    percentage = percentage_of_nodes_to_score
    if percentage == 0:
        percentage = 50 - num_all_nodes // 125
        if percentage < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            percentage = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    num = num_all_nodes * percentage // 100
    if num < MIN_FEASIBLE_NODES_TO_FIND:
        return MIN_FEASIBLE_NODES_TO_FIND
    return num


def select_host(scores: list[NodePluginScores], rng: random.Random) -> str:
    """The node with the highest total; ties broken uniformly (one RNG draw when tied).

    kube-scheduler pops a heap ordered by (total, Randomizer); the random tie-breaker is meant
    for every node (kubernetes#141024) and the feasible order is already random there, so ties
    are uniform. Here one draw over the tied nodes in feasible order does the same, reproducibly
    for a seeded RNG, and identically in the vectorised path."""
    if not scores:
        raise ValueError("empty priorityList")
    best = max(s.total_score for s in scores)
    ties = [s.name for s in scores if s.total_score == best]
    if len(ties) == 1:
        return ties[0]
    return ties[rng.randrange(len(ties))]


def _pick(nodes: list[NodeInfo], idx: list[int]) -> list[NodeInfo]:
    """``[nodes[i] for i in idx]`` in C (itemgetter): the feasible prefix is ~500 rows a pod
    at 5,000 nodes, and the comprehension cost ~20 us of it."""
    if len(idx) < 2:
        return [nodes[i] for i in idx]
    return list(operator.itemgetter(*idx)(nodes))


def reported_nodes(totals: Any, chosen: int) -> list[int]:
    """Which scored nodes a decision reports (their indices): the chosen one first, then the
    highest totals (ties in feasible order), NUMBER_OF_HIGHEST_SCORED_NODES_TO_REPORT in all."""
    t = np.array(totals, np.int64)  # a copy: taken nodes are knocked out below
    floor = _INT64_MIN
    top = [chosen]
    t[chosen] = floor
    while len(top) < min(NUMBER_OF_HIGHEST_SCORED_NODES_TO_REPORT, len(t)):
        j = int(t.argmax())  # the first of the best: ties in feasible order
        top.append(j)
        t[j] = floor
    return top


@dataclass(slots=True)
class ReportedScores:
    """The reported nodes' scores (reported_nodes: the chosen node first): per node its
    normalised score per plugin (0..100, in ``plugins`` order) and its weighted total."""

    plugins: tuple[str, ...]
    nodes: list[str]
    normalized: list[list[int]]
    totals: list[int]

    @classmethod
    def from_plugin_scores(
        cls, scores: list[NodePluginScores], weights: dict[str, int], chosen: int
    ) -> ReportedScores:
        """From the framework's weighted per-plugin scores (the plugins' path)."""
        top = [scores[j] for j in reported_nodes([s.total_score for s in scores], chosen)]
        plugins = tuple(ps.name for ps in top[0].scores)
        return cls(
            plugins,
            [s.name for s in top],
            [[ps.score // (weights.get(ps.name, 1) or 1) for ps in s.scores] for s in top],
            [s.total_score for s in top],
        )


@dataclass
class ScheduleResult:
    suggested_host: str = ""
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    nominating_info: NominatingInfo | None = None


@dataclass
class CycleRecord:
    """What one scheduling attempt decided, for simulate/explain/bench (not used for decisions)."""

    pod: Pod
    result: str = ""  # scheduled | unschedulable | error
    node: str = ""
    message: str = ""
    nominated_node: str = ""
    victims: list[Pod] = field(default_factory=list)
    diagnosis: Diagnosis | None = None
    scores: ReportedScores | None = None  # when two or more nodes were scored
    feasible_infos: list[NodeInfo] = field(default_factory=list)
    evaluated_nodes: int = 0
    duration: float = 0.0
    profile: str = ""  # the schedulerName whose profile decided
    # what each extender call said: {"extender", "verb", "result", ...} (pykubectl why)
    extenders: list[dict[str, Any]] = field(default_factory=list)

    @property
    def feasible(self) -> list[str]:
        """Names of the feasible nodes found (the evaluated prefix only)."""
        return [ni.name for ni in self.feasible_infos]


class Scheduler:
    """kube-scheduler's Scheduler: profiles (frameworks), cache, queue, and the cycle."""

    def __init__(
        self,
        frameworks: dict[str, Framework],
        cache: Cache,
        queue: PriorityQueue,
        snapshot: Snapshot,
        *,
        percentage_of_nodes_to_score: int = 0,
        rng: random.Random | None = None,
        metrics: SchedulerMetrics | None = None,
        async_binding: bool = False,
        pod_getter: Callable[[Pod], Pod | None] | None = None,
        on_failure: Callable[[Pod, str, str, NominatingInfo | None], None] | None = None,
        on_decision: Callable[[CycleRecord], None] | None = None,
        fast: FastPath | None = None,
        timer: Callable[[], float] = time.perf_counter,
        extenders: list[HTTPExtender] | None = None,
        on_extender_bound: Callable[[Pod, str], None] | None = None,
    ) -> None:
        self.frameworks = frameworks
        self.extenders = list(extenders or [])
        # told when an extender bound a pod (the Binder never saw it): the Scheduled event
        self.on_extender_bound = on_extender_bound
        self.cache = cache
        self.queue = queue
        self.snapshot = snapshot
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.rng = rng or random.Random()
        self.metrics = metrics or SchedulerMetrics()
        self.next_start_node_index = 0
        self.pod_getter = pod_getter
        self.on_failure = on_failure
        self.on_decision = on_decision
        self.fast = fast
        self._timer = timer
        self._executor = (ThreadPoolExecutor(max_workers=MAX_BINDINGS_IN_FLIGHT,
                                             thread_name_prefix="binding")
                          if async_binding else None)
        # the binding cycles not finished yet (each leaves the set when done: pruning a list
        # at every pod scanned hundreds of queued bindings per pod during a burst)
        self._bindings: set[Future[Any]] = set()
        self._bind_lock = threading.Lock()
        self.last_record: CycleRecord | None = None
        self._fast_rows: np.ndarray = _NO_ROWS

    # ------------------------------------------------------------------ the loop body
    def schedule_one(self, timeout: float | None = 0.0) -> CycleRecord | None:
        """Pop one pod and run its scheduling cycle (and binding, unless asynchronous)."""
        pinfo = self.queue.pop(timeout)
        if pinfo is None:
            return None
        return self.schedule_queued(pinfo)

    def schedule_queued(self, pinfo: QueuedPodInfo) -> CycleRecord | None:
        """Schedule a pod already taken from the queue (popped or marked in flight)."""
        pod = pinfo.pod
        fwk = self.frameworks.get(pod.spec.scheduler_name)
        if fwk is None:
            self.queue.done(pod)
            return None
        if pod.metadata.deletion_timestamp is not None or self.cache.is_assumed_pod(pod):
            self.queue.done(pod)
            return None
        start = self._timer()
        state = CycleState()
        record = CycleRecord(pod=pod, profile=fwk.profile_name)
        self.last_record = record
        result, assumed_pinfo, status = self.scheduling_cycle(state, fwk, pinfo, start, record)
        if not status.is_success():
            self.handle_scheduling_failure(
                fwk, assumed_pinfo, status, result.nominating_info, start, record
            )
            return record
        record.evaluated_nodes = result.evaluated_nodes
        if self.on_decision is not None:
            if record.diagnosis is not None:
                # the verdicts the fast path deferred (the pod fits): a decision names the
                # reasons of the nodes it rejected (up to a bound, so that big clusters keep
                # the fast path's speed), here, on the snapshot the attempt read
                record.diagnosis.resolve(DECISION_VERDICTS)
            self.on_decision(record)  # a binding failure later records again
        if self._executor is not None:
            fut = self._executor.submit(
                self.binding_cycle, state, fwk, result, assumed_pinfo, start, record
            )
            with self._bind_lock:
                self._bindings.add(fut)
            fut.add_done_callback(self._binding_done)
        else:
            self.binding_cycle(state, fwk, result, assumed_pinfo, start, record)
        return record

    def _binding_done(self, fut: Future[Any]) -> None:
        with self._bind_lock:
            self._bindings.discard(fut)

    def wait_for_bindings(self) -> None:
        with self._bind_lock:
            futs = list(self._bindings)
        for f in futs:
            f.result()

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)

    def scheduling_cycle(
        self,
        state: CycleState,
        fwk: Framework,
        pinfo: QueuedPodInfo,
        start: float,
        record: CycleRecord,
    ) -> tuple[ScheduleResult, QueuedPodInfo, Status]:
        pod = pinfo.pod
        try:
            result = self.schedule_pod(fwk, state, pod, record)
        except NoNodesAvailableError as err:
            st = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [str(err)], error=err)
            return ScheduleResult(nominating_info=CLEAR_NOMINATED_NODE), pinfo, st
        except FitError as fit_err:
            record.diagnosis = fit_err.diagnosis
            if not fwk.has_post_filter_plugins():
                st = Status(Code.UNSCHEDULABLE, [], error=fit_err)
                return ScheduleResult(nominating_info=CLEAR_NOMINATED_NODE), pinfo, st
            pf_result, pf_status = fwk.run_post_filter_plugins(
                state, pod, fit_err.diagnosis.node_to_status
            )
            fit_err.diagnosis.post_filter_msg = pf_status.message() if pf_status else ""
            record.extenders.extend(state.get(EXTENDER_NOTES_STATE_KEY) or ())
            nominating = None
            if pf_result is not None:
                nominating = NominatingInfo(
                    pf_result.nominated_node_name, mode_override=pf_result.mode == "Override"
                )
                if pf_result.nominated_node_name:
                    record.nominated_node = pf_result.nominated_node_name
                victims = state.get(VICTIMS_STATE_KEY)
                if victims:
                    record.victims = list(victims)
            if default_preemption.NAME in fwk.plugins_map:
                self.metrics.observe_preemption(len(record.victims))
            st = Status(Code.UNSCHEDULABLE, [], error=fit_err)
            return ScheduleResult(nominating_info=nominating), pinfo, st
        except Exception as err:  # an internal error: retry after backoff
            return (
                ScheduleResult(nominating_info=CLEAR_NOMINATED_NODE),
                pinfo,
                Status.as_status(err),
            )

        host = result.suggested_host
        assumed = with_node_name(pod, host)
        assumed_pinfo = _copy_pinfo(pinfo, assumed)
        try:
            self.cache.assume_pod(assumed)
        except Exception as err:
            return (
                ScheduleResult(nominating_info=CLEAR_NOMINATED_NODE),
                assumed_pinfo,
                Status.as_status(err),
            )
        self.queue.delete_nominated_pod_if_exists(assumed)

        refused = fwk.run_reserve_plugins_reserve(state, assumed, host)
        if _ok(refused):
            refused = fwk.run_permit_plugins(state, assumed, host)
            if refused.code == Code.WAIT:
                refused = Status()
        if not _ok(refused):  # Reserve or Permit said no: undo the assumption
            fwk.run_reserve_plugins_unreserve(state, assumed, host)
            self.cache.forget_pod(assumed)
            return (
                ScheduleResult(nominating_info=CLEAR_NOMINATED_NODE),
                assumed_pinfo,
                self._one_node_fit_error(pod, host, refused),
            )
        record.node = host
        return result, assumed_pinfo, Status()

    def _one_node_fit_error(self, pod: Pod, host: str, sts: Status) -> Status:
        if not sts.is_rejected():
            return sts
        d = Diagnosis()
        d.node_to_status.set(host, sts)
        d.add_plugin_status(sts)
        return Status(sts.code, [], error=FitError(pod, 1, d))

    def binding_cycle(
        self,
        state: CycleState,
        fwk: Framework,
        result: ScheduleResult,
        assumed_pinfo: QueuedPodInfo,
        start: float,
        record: CycleRecord,
    ) -> Status:
        assumed = assumed_pinfo.pod
        host = result.suggested_host
        wait = getattr(fwk, "wait_on_permit", None)
        status = wait(assumed) if wait is not None else None
        if status is not None and status.is_rejected():
            status = self._one_node_fit_error(record.pod, host, status)
        if _ok(status):
            self.queue.done(assumed)
            status = fwk.run_pre_bind_plugins(state, assumed, host)
            if _ok(status):
                by_extender, status = self._extenders_binding(assumed, host, record)
                if not by_extender:
                    status = fwk.run_bind_plugins(state, assumed, host)
                elif _ok(status):
                    if self.on_extender_bound is not None:
                        self.on_extender_bound(assumed, host)
                    if self.on_decision is not None:
                        self.on_decision(record)  # it says which extender bound the pod
                self.cache.finish_binding(assumed)
        if not _ok(status):
            assert status is not None
            self._handle_binding_cycle_error(
                state, fwk, assumed_pinfo, start, result, status, record
            )
            return status
        record.result = SCHEDULED
        record.node = host
        record.duration = self._timer() - start
        self.metrics.observe_attempt(SCHEDULED, fwk.profile_name, record.duration)
        fwk.run_post_bind_plugins(state, assumed, host)
        return Status()

    def _handle_binding_cycle_error(
        self,
        state: CycleState,
        fwk: Framework,
        pinfo: QueuedPodInfo,
        start: float,
        result: ScheduleResult,
        status: Status,
        record: CycleRecord,
    ) -> None:
        assumed = pinfo.pod
        fwk.run_reserve_plugins_unreserve(state, assumed, result.suggested_host)
        try:
            self.cache.forget_pod(assumed)
        except Exception:  # already gone: nothing to undo
            pass
        else:
            key = f"{assumed.metadata.namespace}/{assumed.metadata.name}"
            self.queue.move_all_to_active_or_backoff_queue(
                EVENT_ASSIGNED_POD_DELETE,
                assumed,
                None,
                None
                if not status.is_rejected()
                else (lambda p: f"{p.metadata.namespace}/{p.metadata.name}" != key),
            )
        record.node = ""
        self.handle_scheduling_failure(fwk, pinfo, status, CLEAR_NOMINATED_NODE, start, record)

    # ------------------------------------------------------------------ failures
    def handle_scheduling_failure(
        self,
        fwk: Framework,
        pinfo: QueuedPodInfo,
        status: Status,
        nominating_info: NominatingInfo | None,
        start: float,
        record: CycleRecord,
    ) -> None:
        reason = "Unschedulable" if status.is_rejected() else "SchedulerError"
        record.duration = self._timer() - start
        record.result = UNSCHEDULABLE if status.is_rejected() else ERROR
        self.metrics.observe_attempt(record.result, fwk.profile_name, record.duration)
        err = status.error
        if isinstance(err, FitError):
            record.evaluated_nodes = err.num_all_nodes
            pinfo.unschedulable_plugins = set(err.diagnosis.unschedulable_plugins)
            pinfo.pending_plugins = set(err.diagnosis.pending_plugins)
            record.diagnosis = err.diagnosis
            msg = err.message()
        else:
            pinfo.unschedulable_plugins = set()
            pinfo.pending_plugins = set()
            msg = status.message() if status.reasons else str(err or "")
        record.message = msg
        pod = pinfo.pod
        if self.pod_getter is not None:
            current = self.pod_getter(pod)  # the informer's (unassigned) version
        else:
            current = with_node_name(pod, "") if pod.spec.node_name else pod
        requeued = False
        if current is not None and not current.spec.node_name:
            if current is not pinfo.pod:
                pinfo = _copy_pinfo(pinfo, current)
                pinfo.pod_info = PodInfo(current)
            try:
                self.queue.add_unschedulable_if_not_present(pinfo, self.queue.scheduling_cycle)
                requeued = True
            except ValueError:
                pass
        if not requeued:
            self.queue.done(pod)
        if current is not None:
            self.queue.add_nominated_pod(pinfo.pod_info, nominating_info)
        if self.on_failure is not None and current is not None:
            self.on_failure(pod, reason, msg, nominating_info)
        if self.on_decision is not None and current is not None:
            self.on_decision(record)

    # ------------------------------------------------------------------ the algorithm
    def schedule_pod(
        self, fwk: Framework, state: CycleState, pod: Pod, record: CycleRecord | None = None
    ) -> ScheduleResult:
        self.cache.update_snapshot(self.snapshot)
        self._fast_rows = _NO_ROWS
        if self.snapshot.num_nodes() == 0:
            raise NoNodesAvailableError()
        feasible, diagnosis = self.find_nodes_that_fit_pod(fwk, state, pod, record)
        if not feasible:
            raise FitError(pod, self.snapshot.num_nodes(), diagnosis)
        if record is not None:
            record.diagnosis = diagnosis
            record.feasible_infos = feasible
        if len(feasible) == 1:
            return ScheduleResult(feasible[0].name, 1 + diagnosis.num_rejected(), 1)
        evaluated = len(feasible) + diagnosis.num_rejected()
        table = self.snapshot.table
        if self.fast is not None and table is not None and fwk.has_score_plugins():
            st = fwk.run_pre_score_plugins(state, pod, feasible)
            if not _ok(st):
                assert st is not None
                raise st.as_error() or RuntimeError(st.message())
            rows = self._fast_rows if len(self._fast_rows) == len(feasible) else None
            if rows is None or table.infos[int(rows[0])] is not feasible[0]:
                index_of = self.snapshot.index_of
                rows = np.fromiter((index_of[ni.name] for ni in feasible), np.int64, len(feasible))
            cols = self.fast.scores(fwk, state, pod, table, rows)
            if cols is not None and self.extenders:
                for ext_name, w, per_host in self._extender_scores(pod, feasible, record):
                    col = np.fromiter(
                        (per_host.get(ni.name, 0) for ni in feasible), np.int64, len(feasible)
                    )
                    cols.names.append(ext_name)
                    cols.weights.append(w)
                    cols.per_plugin.append(col)
                    cols.totals = cols.totals + col * w
            if cols is not None:
                totals = cols.totals
                best = totals.max()
                ties = np.flatnonzero(totals == best)
                k = int(ties[0]) if len(ties) == 1 else int(ties[self.rng.randrange(len(ties))])
                if record is not None:
                    top = reported_nodes(totals, k)
                    record.scores = ReportedScores(
                        tuple(cols.names),
                        [feasible[j].name for j in top],
                        [[int(c[j]) for c in cols.per_plugin] for j in top],  # 3 of ~500 rows
                        totals[top].tolist(),
                    )
                return ScheduleResult(feasible[k].name, evaluated, len(feasible))
            scores, st = _split(fwk.run_score_plugins(state, pod, feasible))
            if not _ok(st):
                assert st is not None
                raise st.as_error() or RuntimeError(st.message())
        else:
            scores = self.prioritize_nodes(fwk, state, pod, feasible, record)
        weights = fwk.score_plugin_weight
        if self.extenders:
            ext_scores = self._extender_scores(pod, feasible, record)
            if ext_scores:
                weights = dict(weights)
                for ext_name, w, per_host in ext_scores:
                    weights[ext_name] = w or 1
                    for ns in scores:
                        sc = per_host.get(ns.name)
                        if sc is not None:
                            ns.scores.append(PluginScore(ext_name, sc * w))
                            ns.total_score += sc * w
        host = select_host(scores, self.rng)
        if record is not None:
            chosen = next(j for j, s in enumerate(scores) if s.name == host)
            record.scores = ReportedScores.from_plugin_scores(scores, weights, chosen)
        return ScheduleResult(host, evaluated, len(feasible))

    def find_nodes_that_fit_pod(
        self, fwk: Framework, state: CycleState, pod: Pod, record: CycleRecord | None = None
    ) -> tuple[list[NodeInfo], Diagnosis]:
        diagnosis = Diagnosis()
        all_nodes = self.snapshot.list()
        pre_res, s, unsched_plugins = fwk.run_pre_filter_plugins(state, pod)
        diagnosis.unschedulable_plugins = set(unsched_plugins or ())
        if not _ok(s):
            assert s is not None
            if not s.is_rejected():
                raise s.as_error() or RuntimeError(s.message())
            diagnosis.node_to_status.set_absent_nodes_status(s)
            diagnosis.pre_filter_msg = s.message()
            diagnosis.add_plugin_status(s)
            return [], diagnosis

        nnn = pod.status.nominated_node_name
        if nnn:
            ni = self.snapshot.node_info_map.get(nnn)
            if ni is not None:
                feasible = self._find_nodes_that_pass_filters(
                    fwk, state, pod, diagnosis, [ni], use_index=False
                )
                if feasible and self.extenders:
                    feasible = self._find_nodes_that_pass_extenders(
                        pod, feasible, diagnosis, record
                    )
                if feasible:
                    return feasible, diagnosis

        nodes = all_nodes
        if pre_res is not None and not pre_res.all_nodes():
            nodes = [self.snapshot.node_info_map[n] for n in self._ordered(pre_res.node_names)]
            diagnosis.node_to_status.set_absent_nodes_status(
                Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    [f"node(s) didn't satisfy plugin(s) [{_join_sorted(unsched_plugins)}]"],
                )
            )
        feasible = self._find_nodes_that_pass_filters(fwk, state, pod, diagnosis, nodes)
        processed = len(feasible) + diagnosis.num_rejected()
        if all_nodes:
            self.next_start_node_index = (self.next_start_node_index + processed) % len(all_nodes)
        if self.extenders and feasible:
            feasible = self._find_nodes_that_pass_extenders(pod, feasible, diagnosis, record)
        return feasible, diagnosis

    # ------------------------------------------------------------------ extenders
    def _find_nodes_that_pass_extenders(
        self,
        pod: Pod,
        feasible: list[NodeInfo],
        diagnosis: Diagnosis,
        record: CycleRecord | None,
    ) -> list[NodeInfo]:
        """findNodesThatPassExtenders: each interested filter in turn narrows the nodes;
        its unresolvable verdicts win over its failed ones (and keep preemption off those
        nodes); an error fails the attempt unless the extender is ignorable."""
        before = len(feasible)
        for ext in self.extenders:
            if not feasible:
                break
            if not ext.is_filter() or not ext.is_interested(pod):
                continue
            try:
                passed, failed, unresolvable = ext.filter(pod, feasible)
            except ExtenderError as err:
                _note(record, ext, "filter", error=str(err), ignored=ext.is_ignorable())
                if ext.is_ignorable():
                    continue
                raise
            for name, msg in unresolvable.items():
                diagnosis.node_to_status.set(
                    name, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [msg], plugin=ext.name())
                )
            for name, msg in failed.items():
                if name not in unresolvable:
                    diagnosis.node_to_status.set(
                        name, Status(Code.UNSCHEDULABLE, [msg], plugin=ext.name())
                    )
            _note(record, ext, "filter", passed=len(passed), failed=len(failed),
                  unresolvable=len(unresolvable))
            feasible = passed
            self._fast_rows = _NO_ROWS  # the extender's order and subset: rows found again
        if len(feasible) != before:
            # extenders have no queueing hints: any cluster event may requeue the pod
            diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        return feasible

    def _extender_scores(
        self, pod: Pod, nodes: list[NodeInfo], record: CycleRecord | None
    ) -> list[tuple[str, int, dict[str, int]]]:
        """prioritizeNodes' extender part: per interested prioritizer (concurrently when
        several) its name, weight and host -> score × MaxNodeScore/MaxExtenderPriority;
        an error only loses that extender's scores."""
        exts = [e for e in self.extenders if e.is_prioritizer() and e.is_interested(pod)]
        if not exts:
            return []
        scale = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY

        def one(ext: HTTPExtender) -> tuple[str, int, dict[str, int]] | None:
            try:
                listed, weight = ext.prioritize(pod, nodes)
            except ExtenderError as err:
                _note(record, ext, "prioritize", error=str(err), ignored=True)
                return None
            _note(record, ext, "prioritize", weight=weight)
            return ext.name(), weight, {h: sc * scale for h, sc in listed}

        if len(exts) == 1:
            results = [one(exts[0])]
        else:
            with ThreadPoolExecutor(max_workers=len(exts)) as pool:
                results = list(pool.map(one, exts))
        return [r for r in results if r is not None]

    def _extenders_binding(
        self, pod: Pod, node: str, record: CycleRecord
    ) -> tuple[bool, Status | None]:
        """extendersBinding: the first interested binder binds (an ignorable one that fails
        leaves it to the next, then to the Bind plugins)."""
        for ext in self.extenders:
            if not ext.is_binder() or not ext.is_interested(pod):
                continue
            try:
                ext.bind(pod, node)
            except ExtenderError as err:
                _note(record, ext, "bind", error=str(err), ignored=ext.is_ignorable())
                if ext.is_ignorable():
                    continue
                return True, Status.as_status(err)
            _note(record, ext, "bind", node=node)
            return True, None
        return False, None

    def _ordered(self, names: set[str] | None) -> list[str]:
        """PreFilterResult names that exist in the snapshot, in snapshot order (deterministic)."""
        idx = self.snapshot.index_of
        return sorted((n for n in names or () if n in idx), key=idx.__getitem__)

    def _find_nodes_that_pass_filters(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        diagnosis: Diagnosis,
        nodes: list[NodeInfo],
        use_index: bool = True,
    ) -> list[NodeInfo]:
        n = len(nodes)
        if n == 0:
            return []
        to_find = num_feasible_nodes_to_find(self._percentage(fwk), n)
        if not fwk.has_score_plugins():
            to_find = 1
        start = self.next_start_node_index if use_index else 0
        if not fwk.has_filter_plugins():
            return [nodes[(start + i) % n] for i in range(min(to_find, n))]
        table = self.snapshot.table
        if (
            self.fast is not None
            and use_index
            and table is not None
            and nodes is self.snapshot.node_info_list
            and table.n == n
        ):
            per_row = self._nominated_rows(pod)
            load = None
            if per_row and self.fast.nomination_safe(fwk, state):
                load = NominatedLoad(per_row)  # their requests, counted in the columns
                self.fast.stats[STAT_NOMINATED_LOAD] += 1
            res = self.fast.filter_analysis(fwk, state, pod, table, load)
            if res is not None:
                mask, first_fail, plugins = res.feasible, res.first_fail, res.plugins
                for i in per_row:
                    if load is None:  # the plugins' two passes decide (usually a few nodes)
                        st = fwk.run_filter_plugins_with_nominated_pods(state, pod, nodes[i])
                        mask[i] = st.is_success()
                    first_fail[i] = -2  # its status comes from the whole chain
                return self._fast_pass_filters(
                    fwk, state, pod, diagnosis, nodes, mask, start, to_find, first_fail, plugins
                )
        feasible: list[NodeInfo] = []
        for i in range(n):
            ni = nodes[(start + i) % n]
            st = fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)
            if st.code == Code.ERROR:
                raise st.as_error() or RuntimeError(st.message())
            if st.is_success():
                feasible.append(ni)
                if len(feasible) >= to_find:
                    break
            else:
                diagnosis.node_to_status.set(ni.name, st)
                diagnosis.add_plugin_status(st)
        return feasible

    def _nominated_rows(self, pod: Pod) -> dict[int, list[PodInfo]]:
        """Rows of nodes with nominated pods that count for ``pod`` (priority >= its own)."""
        out: dict[int, list[PodInfo]] = {}
        nominator = self.queue.nominator
        names = nominator.node_names()
        if not names:
            return out
        prio = pod.spec.priority or 0
        uid = pod.metadata.uid
        index_of = self.snapshot.index_of
        for name in names:
            i = index_of.get(name)
            if i is None:
                continue
            pis = [
                pi
                for pi in nominator.nominated_pods_for_node(name)
                if (pi.pod.spec.priority or 0) >= prio and pi.pod.metadata.uid != uid
            ]
            if pis:
                out[i] = pis
        return out

    def _fast_pass_filters(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        diagnosis: Diagnosis,
        nodes: list[NodeInfo],
        mask: np.ndarray,
        start: int,
        to_find: int,
        first_fail: np.ndarray,
        plugins: list[Any],
    ) -> list[NodeInfo]:
        """The rotated prefix holding the first ``to_find`` feasible rows; the infeasible rows
        in it get their exact Status from the plugins."""
        n = len(nodes)
        if mask.all():  # every row feasible: the prefix is the next to_find rows, in order
            end = start + min(to_find, n)
            self._fast_rows = np.arange(start, end) % n
            return nodes[start:end] if end <= n else nodes[start:] + nodes[: end - n]
        rotated = np.concatenate((mask[start:], mask[:start])) if start else mask
        pos = np.flatnonzero(rotated)
        if len(pos) >= to_find:
            pos = pos[:to_find]
            end = int(pos[-1]) + 1
        else:
            end = n
        rows = (pos + start) % n
        self._fast_rows = rows
        if end > len(pos):
            index_of = self.snapshot.index_of

            done = 0

            def resolve(d: Diagnosis, limit: int | None = None) -> int:
                """The statuses of the next ``limit`` infeasible rows (None: all the rest);
                returns how many rows are still deferred."""
                nonlocal done
                bad = (np.flatnonzero(~rotated[:end]) + start) % n
                todo = (bad[done:] if limit is None else bad[done:done + limit]).tolist()
                done += len(todo)
                infos = [nodes[i] for i in todo]
                ks = first_fail[todo].tolist() if todo else []
                self._statuses_by_plugin(fwk, state, pod, d, infos, ks, plugins)
                return len(bad) - done

            if len(pos):  # the pod fits: their statuses are only needed on demand
                count = end - len(pos)
                for name in diagnosis.node_to_status.node_to_status:  # the nominated node
                    r = index_of.get(name)
                    if r is not None and (r - start) % n < end and not rotated[(r - start) % n]:
                        count -= 1  # already has its status
                diagnosis.deferred_count = count
                diagnosis.deferred_resolver = resolve
            else:
                resolve(diagnosis)
        return _pick(nodes, rows.tolist())

    def _statuses_by_plugin(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        diagnosis: Diagnosis,
        infos: list[NodeInfo],
        first: list[int],
        plugins: list[Any],
    ) -> None:
        """Each infeasible node's Status from the plugin that rejects it first (the vectorised
        masks say which; the plugins before it pass), as run_filter_plugins would report it.
        Nodes with nominated pods, or any surprise, go through the whole chain."""
        rest: list[NodeInfo] = []
        for ni, k in zip(infos, first, strict=True):
            if k < 0:
                rest.append(ni)
                continue
            pl = plugins[k]
            st = pl.filter(state, pod, ni)
            if st is None or st.code not in (
                Code.UNSCHEDULABLE,
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                Code.PENDING,
            ):
                rest.append(ni)
                continue
            st.plugin = pl.name()
            diagnosis.node_to_status.set(ni.name, st)
            diagnosis.add_plugin_status(st)
        if rest:
            self._statuses(fwk, state, pod, diagnosis, rest)

    def _statuses(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        diagnosis: Diagnosis,
        infos: list[NodeInfo],
    ) -> None:
        for ni in infos:
            st = fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)
            if st.code == Code.ERROR:
                raise st.as_error() or RuntimeError(st.message())
            if st.is_success():
                if self.fast is not None:
                    self.fast.stats[STAT_MISMATCH] += 1
                continue
            diagnosis.node_to_status.set(ni.name, st)
            diagnosis.add_plugin_status(st)

    def _percentage(self, fwk: Framework) -> int:
        p = getattr(fwk, "percentage_of_nodes_to_score", None)
        if p is None:
            return self.percentage_of_nodes_to_score
        return int(p)

    def prioritize_nodes(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        nodes: list[NodeInfo],
        record: CycleRecord | None = None,
    ) -> list[NodePluginScores]:
        if not fwk.has_score_plugins():
            return [NodePluginScores(ni.name, [], 1) for ni in nodes]
        st = fwk.run_pre_score_plugins(state, pod, nodes)
        if not _ok(st):
            assert st is not None
            raise st.as_error() or RuntimeError(st.message())
        scores, st = _split(fwk.run_score_plugins(state, pod, nodes))
        if not _ok(st):
            assert st is not None
            raise st.as_error() or RuntimeError(st.message())
        return scores


# ---------------------------------------------------------------------------------------------
def _note(record: CycleRecord | None, ext: HTTPExtender, verb: str, **what: Any) -> None:
    """One extender call's verdict, in the attempt's record."""
    if record is not None:
        record.extenders.append({"extender": ext.name(), "verb": verb, **what})


def _join_sorted(names: set[str] | None) -> str:
    return " ".join(sorted(names or ()))


def _ok(status: Status | None) -> bool:
    return status is None or status.code == Code.SUCCESS


def _split(ret: Any) -> tuple[list[NodePluginScores], Status | None]:
    if isinstance(ret, tuple):
        return ret[0], ret[1]
    return ret, None


def _shallow(obj: Any) -> Any:
    """A shallow copy (much cheaper than copy.copy's reduce protocol)."""
    cls = type(obj)
    new = object.__new__(cls)
    state = getattr(obj, "__dict__", None)
    if state is not None:  # the model's classes (their mixins' empty __slots__ aside)
        new.__dict__.update(state)
        return new
    slots = getattr(cls, "__slots__", None)
    if slots is None:
        return copy.copy(obj)
    for f in slots:
        if hasattr(obj, f):
            setattr(new, f, getattr(obj, f))
    return new


def with_node_name(pod: Pod, node_name: str) -> Pod:
    """A shallow copy of the pod with spec.nodeName set (the assumed pod)."""
    p = _shallow(pod)
    p.spec = _shallow(pod.spec)
    p.spec.node_name = node_name
    return p


def _copy_pinfo(pinfo: QueuedPodInfo, pod: Pod) -> QueuedPodInfo:
    c = _shallow(pinfo)
    pi = _shallow(pinfo.pod_info)
    pi.pod = pod
    c.pod_info = pi
    return c


__all__ = [
    "CycleRecord",
    "NodeToStatus",
    "ScheduleResult",
    "Scheduler",
    "num_feasible_nodes_to_find",
    "select_host",
    "with_node_name",
]

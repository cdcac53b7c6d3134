"""DefaultPreemption: the PostFilter plugin and its evaluator.

Mirrors pkg/scheduler/framework/preemption/preemption.go and
plugins/defaultpreemption/default_preemption.go (synchronous preemption):

1. the preemptor must be eligible (preemptionPolicy not Never; no victim of an earlier
   preemption still terminating on its nominated node);
2. candidates: nodes whose filter status was Unschedulable (not Unresolvable); dry-run on at most
   ``max(10% of them, 100)`` starting at a random offset, stopping once enough are found (and at
   least one violates no PDB);
3. on each node: remove every lower-priority pod, check the preemptor fits, then reprieve pods in
   order of importance (PDB-violating ones first), keeping as victims those that must go (when
   every active filter only compares requests with allocatable, this walk runs on the request
   sums instead of through the plugins: same steps, same victims, no copies);
4. pick one node: fewest PDB violations, lowest highest-victim priority, smallest priority sum,
   fewest victims, latest start of the highest-priority victims, then the first;
5. evict the victims (through the handle's ``evict`` extra), clear the nomination of
   lower-priority pods nominated to that node, and nominate the node for the preemptor.

Messages have upstream's shape, e.g. ``preemption: 0/3 nodes are available: 1 No preemption
victims found for incoming pod, 2 Preemption is not helpful for scheduling.``
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from pykubelet.api.machinery.timeutil import parse_time_or_none
from pykubelet.api.objects import PodDisruptionBudget
from pykubelet.api.types import Pod
from pysched.diagnosis import Diagnosis, FitError, NodeToStatus
from pysched.framework.cycle_state import CycleState
from pysched.framework.interfaces import BatchFilterPlugin
from pysched.framework.labels import label_selector_as_selector
from pysched.framework.status import Code, Status
from pysched.framework.types import NodeInfo, PodInfo, PostFilterResult
from pysched.plugins import node_resources_fit

NAME = "DefaultPreemption"
VICTIMS_STATE_KEY = "pysched/preemption-victims"
EXTENDER_NOTES_STATE_KEY = "pysched/extender-notes"  # what preempt verbs said (the record's)
PREEMPT_NEVER = "Never"


def pod_priority(pod: Pod) -> int:
    return pod.spec.priority if pod.spec.priority is not None else 0


def _start_time(pod: Pod) -> float:
    """GetPodStartTime: status.startTime, or 'now' (later than any real start) when unset."""
    st = pod.status.start_time
    if not st:
        return math.inf
    t = parse_time_or_none(st)
    return math.inf if t is None else t.timestamp()


def more_important_pod(a: Pod, b: Pod) -> bool:
    """util.MoreImportantPod: higher priority, then the one that started earlier."""
    pa, pb = pod_priority(a), pod_priority(b)
    if pa != pb:
        return pa > pb
    return _start_time(a) < _start_time(b)


def _importance_key(pi: PodInfo) -> tuple[int, float]:
    return (-pod_priority(pi.pod), _start_time(pi.pod))


def pod_terminating_by_preemption(pod: Pod) -> bool:
    if pod.metadata.deletion_timestamp is None:
        return False
    for c in pod.status.conditions:
        if c.type == "DisruptionTarget":
            return c.status == "True" and c.reason == "PreemptionByScheduler"
    return False


def filter_pods_with_pdb_violation(
    pod_infos: list[PodInfo], pdbs: list[PodDisruptionBudget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """(violating, non-violating), order preserved; each match spends one allowed disruption."""
    allowed = [pdb.status.disruptions_allowed for pdb in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pi in pod_infos:
        pod = pi.pod
        violated = False
        if pod.metadata.labels:
            for i, pdb in enumerate(pdbs):
                if pdb.metadata.namespace != pod.metadata.namespace:
                    continue
                sel = pdb.spec.selector
                if sel is None or (not sel.match_labels and not sel.match_expressions):
                    continue  # a nil or empty selector matches nothing
                try:
                    matches = label_selector_as_selector(sel).matches(pod.metadata.labels)
                except ValueError:
                    continue
                if not matches:
                    continue
                if pod.metadata.name in pdb.status.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pi)
    return violating, non_violating


@dataclass
class Candidate:
    name: str
    victims: list[Pod]
    num_pdb_violations: int


def pick_one_node_for_preemption(candidates: list[Candidate]) -> str:
    if not candidates:
        return ""
    by_name = {c.name: c for c in candidates}
    names = [c.name for c in candidates]

    def earliest_start_of_highest(c: Candidate) -> float:
        best_prio = pod_priority(c.victims[0])
        earliest = _start_time(c.victims[0])
        for p in c.victims:
            pp = pod_priority(p)
            if pp == best_prio:
                earliest = min(earliest, _start_time(p))
            elif pp > best_prio:
                best_prio, earliest = pp, _start_time(p)
        return earliest

    score_funcs = [
        lambda n: -by_name[n].num_pdb_violations,
        lambda n: -pod_priority(by_name[n].victims[0]),
        lambda n: -sum(pod_priority(p) + 2**31 for p in by_name[n].victims),
        lambda n: -len(by_name[n].victims),
        lambda n: earliest_start_of_highest(by_name[n]),
    ]
    for f in score_funcs:
        scored = [(f(n), n) for n in names]
        best = max(s for s, _ in scored)
        names = [n for s, n in scored if s == best]
        if len(names) == 1:
            return names[0]
    return names[0]


class DefaultPreemption:
    """The PostFilter plugin. ``handle`` is the framework Handle; extras it reads:
    ``pdb_lister`` (() -> list of PDBs), ``evict`` ((victim, preemptor, node) -> None),
    ``clear_nomination`` ((pod) -> None), ``pod_getter`` ((pod) -> latest pod or None),
    ``preemption_rng`` (random.Random for the dry-run offset)."""

    def __init__(
        self,
        handle: Any,
        min_candidate_nodes_percentage: int = 10,
        min_candidate_nodes_absolute: int = 100,
        rng: random.Random | None = None,
    ) -> None:
        if not 0 <= min_candidate_nodes_percentage <= 100:
            raise ValueError(
                "minCandidateNodesPercentage: must be in [0, 100], got "
                f"{min_candidate_nodes_percentage}"
            )
        if min_candidate_nodes_absolute < 0:
            raise ValueError(
                f"minCandidateNodesAbsolute: must be >= 0, got {min_candidate_nodes_absolute}"
            )
        if min_candidate_nodes_percentage == 0 and min_candidate_nodes_absolute == 0:
            raise ValueError(
                "minCandidateNodesPercentage and minCandidateNodesAbsolute cannot both be zero"
            )
        self.handle = handle
        self.pct = min_candidate_nodes_percentage
        self.abs = min_candidate_nodes_absolute
        self._rng = rng
        self.arithmetic = True  # resource-only profiles: victims chosen on request sums

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> list[Any]:
        return []  # async preemption is off: this plugin never rejects a pod by itself

    def _extra(self, key: str) -> Any:
        fn = getattr(self.handle, "extra", None)
        return fn(key) if fn is not None else None

    @property
    def rng(self) -> random.Random:
        if self._rng is None:
            self._rng = self._extra("preemption_rng") or random.Random()
        return self._rng

    # ------------------------------------------------------------------ PostFilter
    def post_filter(
        self, state: CycleState, pod: Pod, m: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        result, status = self.preempt(state, pod, m)
        msg = status.message()
        if msg:
            return result, Status(status.code, [f"preemption: {msg}"])
        return result, status

    def preempt(
        self, state: CycleState, pod: Pod, m: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        getter = self._extra("pod_getter")
        if getter is not None:
            latest = getter(pod)
            if latest is None:
                return None, Status(Code.ERROR, [f"pod {pod.key} not found"])
            pod = latest
        ok, msg = self.pod_eligible_to_preempt_others(pod, m.get(pod.status.nominated_node_name))
        if not ok:
            return None, Status(Code.UNSCHEDULABLE, [msg])
        all_nodes = self.handle.snapshot_shared_lister().node_infos().list()
        candidates, node_to_status = self.find_candidates(state, all_nodes, pod, m)
        if not candidates:
            d = Diagnosis(node_to_status=node_to_status)
            d.node_to_status.set_absent_nodes_status(
                Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    ["Preemption is not helpful for scheduling"],
                )
            )
            fit = FitError(pod, len(all_nodes), d)
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, [fit.message()])
        candidates, ext_status = self.call_extenders(state, pod, candidates)
        if not ext_status.is_success():
            return None, ext_status
        best = self.select_candidate(candidates)
        if best is None or not best.name:
            return None, Status(Code.UNSCHEDULABLE, ["no candidate node for preemption"])
        st = self.prepare_candidate(best, pod)
        if not st.is_success():
            return None, st
        state.write(VICTIMS_STATE_KEY, list(best.victims))
        return PostFilterResult(best.name), Status()

    def call_extenders(
        self, state: CycleState, pod: Pod, candidates: list[Candidate]
    ) -> tuple[list[Candidate], Status]:
        """callExtenders: each interested extender with a preempt verb may drop candidate
        nodes or change their victims (the ``extenders`` extra); an error fails preemption
        unless the extender is ignorable."""
        from pysched.extender import ExtenderError, Victims

        extenders = [
            e
            for e in (self._extra("extenders") or ())
            if e.supports_preemption() and e.is_interested(pod)
        ]
        if not extenders or not candidates:
            return candidates, Status()
        victims = {c.name: Victims(list(c.victims), c.num_pdb_violations) for c in candidates}
        lister = self.handle.snapshot_shared_lister().node_infos()

        def node_info(name: str) -> Any:
            try:
                return lister.get(name)
            except Exception:
                return None

        notes = state.get(EXTENDER_NOTES_STATE_KEY)
        if notes is None:
            notes = []
            state.write(EXTENDER_NOTES_STATE_KEY, notes)
        for ext in extenders:
            try:
                answer = ext.process_preemption(pod, victims, node_info)
            except ExtenderError as err:
                notes.append({"extender": ext.name(), "verb": "preempt", "error": str(err),
                              "ignored": ext.is_ignorable()})
                if ext.is_ignorable():
                    continue
                return [], Status.as_status(err)
            for name in list(answer):
                if not answer[name].pods:
                    if ext.is_ignorable():
                        del answer[name]
                        continue
                    return [], Status.as_status(
                        ExtenderError(f'expected at least one victim pod on node "{name}"')
                    )
            notes.append({"extender": ext.name(), "verb": "preempt",
                          "candidates": len(victims), "kept": sorted(answer)})
            victims = answer
            if not victims:
                break
        return [Candidate(n, v.pods, v.num_pdb_violations) for n, v in victims.items()], Status()

    def pod_eligible_to_preempt_others(
        self, pod: Pod, nominated_status: Status
    ) -> tuple[bool, str]:
        if pod.spec.preemption_policy == PREEMPT_NEVER:
            return False, "not eligible due to preemptionPolicy=Never."
        nnn = pod.status.nominated_node_name
        if nnn:
            if nominated_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            lister = self.handle.snapshot_shared_lister().node_infos()
            try:
                ni = lister.get(nnn)
            except KeyError:
                ni = None
            if ni is not None:
                prio = pod_priority(pod)
                for pi in ni.pods:
                    if pod_priority(pi.pod) < prio and pod_terminating_by_preemption(pi.pod):
                        return False, "not eligible due to a terminating pod on the nominated node."
        return True, ""

    def calculate_num_candidates(self, num_nodes: int) -> int:
        n = num_nodes * self.pct // 100
        n = max(n, self.abs)
        return min(n, num_nodes)

    def find_candidates(
        self, state: CycleState, all_nodes: list[NodeInfo], pod: Pod, m: NodeToStatus
    ) -> tuple[list[Candidate], NodeToStatus]:
        if not all_nodes:
            raise RuntimeError("no nodes available")
        potential = m.nodes_for_status_code(all_nodes, Code.UNSCHEDULABLE)
        if not potential:
            return [], NodeToStatus()
        lister = self._extra("pdb_lister")
        pdbs = list(lister()) if lister is not None else []
        offset = self.rng.randrange(len(potential))
        return self.dry_run_preemption(
            state, pod, potential, pdbs, offset, self.calculate_num_candidates(len(potential))
        )

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: Pod,
        potential: list[NodeInfo],
        pdbs: list[PodDisruptionBudget],
        offset: int,
        candidates_num: int,
    ) -> tuple[list[Candidate], NodeToStatus]:
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses = NodeToStatus()
        n = len(potential)
        nrf = self._resource_only_filters(state) if self.arithmetic else None
        for i in range(n):
            ni = potential[(offset + i) % n]
            out = None
            if nrf is not None:  # reads the node and state, changes neither: no copies
                out = self._select_victims_by_sums(state, pod, ni, pdbs, nrf)
            if out is None:
                out = self._select_victims_with_plugins(state.clone(), pod, ni.clone(), pdbs)
            victims, num_viol, st = out
            if st.is_success() and victims:
                c = Candidate(ni.name, victims, num_viol)
                (non_violating if num_viol == 0 else violating).append(c)
                if non_violating and len(non_violating) + len(violating) >= candidates_num:
                    break
                continue
            if st.is_success():
                st = Status(Code.ERROR, [f'expected at least one victim pod on node "{ni.name}"'])
            statuses.set(ni.name, st)
        return (non_violating[:candidates_num] + violating[:candidates_num]), statuses

    def select_victims_on_node(
        self, state: CycleState, pod: Pod, ni: NodeInfo, pdbs: list[PodDisruptionBudget]
    ) -> tuple[list[Pod], int, Status]:
        """SelectVictimsOnNode. With only resource-monotone filters active (the plugins would
        only compare requests with allocatable) the same walk runs on the sums directly."""
        if self.arithmetic:
            nrf = self._resource_only_filters(state)
            if nrf is not None:
                out = self._select_victims_by_sums(state, pod, ni, pdbs, nrf)
                if out is not None:
                    return out
        return self._select_victims_with_plugins(state, pod, ni, pdbs)

    def _resource_only_filters(self, state: CycleState) -> node_resources_fit.Fit | None:
        """The NodeResourcesFit plugin when every active filter is resource-monotone."""
        plugins = getattr(self.handle, "filter_plugins", None)
        if plugins is None:
            return None
        skip = state.skip_filter_plugins
        nrf = None
        for pl in plugins:
            if pl.name() in skip:
                continue
            if not (isinstance(pl, BatchFilterPlugin) and pl.resource_monotone()):
                return None
            if isinstance(pl, node_resources_fit.Fit):
                nrf = pl
        return nrf

    def _select_victims_by_sums(
        self,
        state: CycleState,
        pod: Pod,
        ni: NodeInfo,
        pdbs: list[PodDisruptionBudget],
        nrf: node_resources_fit.Fit,
    ) -> tuple[list[Pod], int, Status] | None:
        """The plugin walk on request sums (None: let the plugins decide, e.g. to report why
        the pod does not fit even without the victims)."""
        req = state.get(node_resources_fit.PRE_FILTER_STATE_KEY)
        if req is None or ni.node is None:
            return None
        prio = pod_priority(pod)
        potential = [pi for pi in ni.pods if pod_priority(pi.pod) < prio]
        if not potential:
            return (
                [],
                0,
                Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    ["No preemption victims found for incoming pod"],
                ),
            )
        ignored, groups = nrf.ignored, nrf.ignored_groups
        r = ni.requested
        used = [len(ni.pods), r.milli_cpu, r.memory, r.ephemeral_storage]
        scal = dict(r.scalar)

        def shift(pi: PodInfo, sign: int) -> None:
            res = pi.calculate_resource()[0]
            used[0] += sign
            used[1] += sign * res.milli_cpu
            used[2] += sign * res.memory
            used[3] += sign * res.ephemeral_storage
            for k, q in res.scalar.items():
                scal[k] = scal.get(k, 0) + sign * q

        for pi in potential:
            shift(pi, -1)
        nominator = getattr(self.handle, "nominator", None)
        if nominator is not None:  # the first of the plugins' two passes counts them
            for npi in nominator.nominated_pods_for_node(ni.name):
                if pod_priority(npi.pod) >= prio and npi.pod.metadata.uid != pod.metadata.uid:
                    shift(npi, 1)
        a = ni.allocatable

        def fits() -> bool:
            if used[0] + 1 > a.allowed_pod_number:
                return False
            if (
                req.milli_cpu == 0
                and req.memory == 0
                and req.ephemeral_storage == 0
                and not req.scalar
            ):
                return True
            if req.milli_cpu > 0 and req.milli_cpu > a.milli_cpu - used[1]:
                return False
            if req.memory > 0 and req.memory > a.memory - used[2]:
                return False
            if req.ephemeral_storage > 0 and req.ephemeral_storage > a.ephemeral_storage - used[3]:
                return False
            for k, q in req.scalar.items():
                if q == 0 or node_resources_fit.is_ignored(k, ignored, groups):
                    continue
                if q > a.scalar.get(k, 0) - scal.get(k, 0):
                    return False
            return True

        if not fits():
            return None
        potential.sort(key=_importance_key)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []
        num_violating = 0
        for group, count in ((violating, True), (non_violating, False)):
            for pi in group:
                shift(pi, 1)
                if not fits():
                    shift(pi, -1)
                    victims.append(pi)
                    if count:
                        num_violating += 1
        if violating and non_violating:
            victims.sort(key=_importance_key)
        return [pi.pod for pi in victims], num_violating, Status()

    def _select_victims_with_plugins(
        self, state: CycleState, pod: Pod, ni: NodeInfo, pdbs: list[PodDisruptionBudget]
    ) -> tuple[list[Pod], int, Status]:
        h = self.handle
        prio = pod_priority(pod)

        def remove(pi: PodInfo) -> Status:
            ni.remove_pod(pi.pod)
            return h.run_pre_filter_extension_remove_pod(state, pod, pi, ni)

        def add(pi: PodInfo) -> Status:
            ni.add_pod_info(pi)
            return h.run_pre_filter_extension_add_pod(state, pod, pi, ni)

        potential = [pi for pi in ni.pods if pod_priority(pi.pod) < prio]
        for pi in potential:
            st = remove(pi)
            if st is not None and not st.is_success():
                return [], 0, st
        if not potential:
            return (
                [],
                0,
                Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    ["No preemption victims found for incoming pod"],
                ),
            )
        st = h.run_filter_plugins_with_nominated_pods(state, pod, ni)
        if not st.is_success():
            return [], 0, st
        potential.sort(key=_importance_key)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []
        num_violating = 0

        def reprieve(pi: PodInfo) -> tuple[bool, Status | None]:
            s = add(pi)
            if s is not None and not s.is_success():
                return False, s
            fits = h.run_filter_plugins_with_nominated_pods(state, pod, ni).is_success()
            if not fits:
                s = remove(pi)
                if s is not None and not s.is_success():
                    return False, s
                victims.append(pi)
            return fits, None

        for pi in violating:
            fits, err = reprieve(pi)
            if err is not None:
                return [], 0, err
            if not fits:
                num_violating += 1
        for pi in non_violating:
            _, err = reprieve(pi)
            if err is not None:
                return [], 0, err
        if violating and non_violating:
            victims.sort(key=_importance_key)
        return [pi.pod for pi in victims], num_violating, Status()

    def select_candidate(self, candidates: list[Candidate]) -> Candidate | None:
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        name = pick_one_node_for_preemption(candidates)
        for c in candidates:
            if c.name == name:
                return c
        return candidates[0]

    def prepare_candidate(self, c: Candidate, pod: Pod) -> Status:
        evict = self._extra("evict")
        for victim in c.victims:
            if victim.metadata.deletion_timestamp is not None:
                continue
            if evict is not None:
                try:
                    evict(victim, pod, c.name)
                except Exception as err:  # the API refused: retry later
                    return Status.as_status(err)
        nominator = getattr(self.handle, "nominator", None)
        clear = self._extra("clear_nomination")
        if nominator is not None:
            prio = pod_priority(pod)
            for pi in nominator.nominated_pods_for_node(c.name):
                if pod_priority(pi.pod) < prio and clear is not None:
                    clear(pi.pod)
        return Status()


def new(args: Any, handle: Any) -> DefaultPreemption:
    """Plugin factory: args may carry minCandidateNodesPercentage / minCandidateNodesAbsolute."""
    pct, absolute = 10, 100
    if args:
        get = args.get if isinstance(args, dict) else (lambda k, d: getattr(args, k, d))
        pct = get("minCandidateNodesPercentage", get("min_candidate_nodes_percentage", pct))
        absolute = get("minCandidateNodesAbsolute", get("min_candidate_nodes_absolute", absolute))
    return DefaultPreemption(handle, int(pct), int(absolute))

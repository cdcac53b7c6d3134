"""NodeResourcesFit: requests must fit allocatable minus requested; scores by a strategy.

Filter reasons, in upstream order: "Too many pods", "Insufficient cpu",
"Insufficient memory", "Insufficient ephemeral-storage", "Insufficient <scalar>".
A request larger than the node's whole allocatable makes the status
UnschedulableAndUnresolvable (preemption cannot help).
Scoring (LeastAllocated default, MostAllocated, RequestedToCapacityRatio) uses the
node's non-zero requested sums and the pod's requests with missing cpu/memory
defaulted to 100m/200Mi.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pykubelet.api.types import Pod
from pysched.framework.cycle_state import CycleState
from pysched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from pysched.framework.node_table import Ints, Mask, NodeTable, NominatedLoad
from pysched.framework.status import Code, Status
from pysched.framework.types import MAX_NODE_SCORE, NodeInfo, PreFilterResult, Resource
from pysched.plugins import node_fits
from pysched.plugins.args import (
    LEAST_ALLOCATED,
    MAX_CUSTOM_PRIORITY_SCORE,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    ResourceSpec,
)
from pysched.plugins.helper import broken_linear_function, go_div, go_round

# the per-node checks, plain Python (the kubelet's admission reads them without numpy)
from pysched.plugins.node_fits import (
    compute_pod_resource_request,
    fits_request,
    is_ignored,
)
from pysched.resources import (
    NON_ZERO_DEFAULTS,
    is_scalar_resource_name,
    pod_requests,
)

NAME = node_fits.NODE_RESOURCES_FIT
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
MAX_UTILIZATION = 100

Scorer = Callable[[list[int], list[int], list[int]], int]


def fits_request_batch(
    req: Resource,
    t: NodeTable,
    nominated: NominatedLoad | None = None,
    ignored: frozenset[str] = frozenset(),
    ignored_groups: frozenset[str] = frozenset(),
    rows: Ints | None = None,
) -> Mask:
    """fits_request over every table row, or over ``rows`` (True: nothing insufficient);
    ``nominated`` requests (every row only) are counted on their rows."""

    def col(c: Ints) -> Ints:
        return c if rows is None else c[rows]

    num_pods, used_cpu, used_mem, used_eph = t.num_pods, t.req_cpu, t.req_mem, t.req_eph
    if nominated is not None:
        assert rows is None
        num_pods = nominated.added(num_pods, nominated.count)
        used_cpu = nominated.added(used_cpu, nominated.cpu)
        used_mem = nominated.added(used_mem, nominated.mem)
        used_eph = nominated.added(used_eph, nominated.eph)
    bad = col(num_pods) + 1 > col(t.alloc_pods)
    if req.milli_cpu == 0 and req.memory == 0 and req.ephemeral_storage == 0 and not req.scalar:
        return ~bad
    if req.milli_cpu > 0:
        bad |= req.milli_cpu > col(t.alloc_cpu) - col(used_cpu)
    if req.memory > 0:
        bad |= req.memory > col(t.alloc_mem) - col(used_mem)
    if req.ephemeral_storage > 0:
        bad |= req.ephemeral_storage > col(t.alloc_eph) - col(used_eph)
    for name, q in req.scalar.items():
        if q == 0 or is_ignored(name, ignored, ignored_groups):
            continue
        a, u = t.scalar(name)
        if nominated is not None and name in nominated.scalar:
            u = nominated.added(u, nominated.scalar[name])
        bad |= q > col(a) - col(u)
    return ~bad


# ---------------------------------------------------------------- scoring


def pod_resource_request_list(
    pod: Pod, resources: list[ResourceSpec], use_requested: bool
) -> list[int]:
    """calculatePodResourceRequestList: the pod's request per scored resource."""
    reqs = pod_requests(pod, non_missing=None if use_requested else NON_ZERO_DEFAULTS)
    return [reqs.get(r.name, 0) for r in resources]


def allocatable_and_requested(
    ni: NodeInfo, resource: str, pod_request: int, use_requested: bool
) -> tuple[int, int, int]:
    """calculateResourceAllocatableRequest: (allocatable, node requested + pod, node requested).

    cpu/memory read the non-zero sums unless `use_requested`; a scalar resource the pod does
    not request, or one the node lacks, gives (0, 0, 0) and is left out of the score.
    """
    if pod_request == 0 and is_scalar_resource_name(resource):
        return 0, 0, 0
    req = ni.requested if use_requested else ni.non_zero_requested
    if resource == "cpu":
        return ni.allocatable.milli_cpu, req.milli_cpu + pod_request, req.milli_cpu
    if resource == "memory":
        return ni.allocatable.memory, req.memory + pod_request, req.memory
    if resource == "ephemeral-storage":
        e = ni.requested.ephemeral_storage
        return ni.allocatable.ephemeral_storage, e + pod_request, e
    if resource in ni.allocatable.scalar:
        s = ni.requested.scalar.get(resource, 0)
        return ni.allocatable.scalar[resource], s + pod_request, s
    return 0, 0, 0


def allocatable_and_requested_batch(
    t: NodeTable, rows: Ints, resource: str, pod_request: int, use_requested: bool
) -> tuple[Ints, Ints, Ints]:
    """allocatable_and_requested for table rows ``rows``, as three columns."""
    zero = np.zeros(len(rows), np.int64)
    if pod_request == 0 and is_scalar_resource_name(resource):
        return zero, zero, zero
    if resource == "cpu":
        r = (t.req_cpu if use_requested else t.nz_cpu)[rows]
        return t.alloc_cpu[rows], r + pod_request, r
    if resource == "memory":
        r = (t.req_mem if use_requested else t.nz_mem)[rows]
        return t.alloc_mem[rows], r + pod_request, r
    if resource == "ephemeral-storage":
        r = t.req_eph[rows]
        return t.alloc_eph[rows], r + pod_request, r
    if resource in t.scalar_alloc:
        a, u = t.scalar(resource)
        r = u[rows]
        return a[rows], r + pod_request, r
    return zero, zero, zero


def resource_allocation_score(
    ni: NodeInfo,
    resources: list[ResourceSpec],
    pod_req: list[int],
    use_requested: bool,
    scorer: Scorer,
) -> int:
    """resourceAllocationScorer.score: gather (requested, allocated, allocatable) per resource
    (entries with no allocatable stay 0) and hand them to the strategy's scorer."""
    req = ni.requested if use_requested else ni.non_zero_requested
    alloc = ni.allocatable
    if len(resources) == 2 and resources[0].name == "cpu" and resources[1].name == "memory":
        # the default resource list, without the generic loop
        a0, al0 = alloc.milli_cpu, req.milli_cpu
        a1, al1 = alloc.memory, req.memory
        r0, r1 = al0 + pod_req[0], al1 + pod_req[1]
        if a0 == 0:
            r0 = al0 = 0
        if a1 == 0:
            r1 = al1 = 0
        return scorer([r0, r1], [al0, al1], [a0, a1])
    requested: list[int] = []
    allocated: list[int] = []
    allocatable: list[int] = []
    for r, pr in zip(resources, pod_req, strict=True):
        name = r.name
        if name == "cpu":  # the common resources first, without the generic lookup
            a, al = alloc.milli_cpu, req.milli_cpu
            rq = al + pr
        elif name == "memory":
            a, al = alloc.memory, req.memory
            rq = al + pr
        else:
            a, rq, al = allocatable_and_requested(ni, name, pr, use_requested)
        if a == 0:
            a = rq = al = 0
        requested.append(rq)
        allocated.append(al)
        allocatable.append(a)
    return scorer(requested, allocated, allocatable)


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    x = (capacity - requested) * MAX_NODE_SCORE
    return x // capacity if capacity > 0 else go_div(x, capacity)


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    requested = min(requested, capacity)
    x = requested * MAX_NODE_SCORE
    return x // capacity if x >= 0 and capacity > 0 else go_div(x, capacity)


def _weighted_sum(
    resources: list[ResourceSpec],
    requested: list[int],
    allocatable: list[int],
    resource_score: Callable[[int, int], int],
    positive_only: bool = False,
) -> tuple[int, int]:
    """(sum of score × weight, sum of weights) over the resources the node has
    (allocatable > 0): what every scoring strategy weighs. ``positive_only``: a resource
    scoring 0 or less is left out (RequestedToCapacityRatio's ``if resourceScore > 0``).
    One plain loop: it runs per node on the plain path."""
    node_score = weight_sum = 0
    for i, rq in enumerate(requested):
        a = allocatable[i]
        if a == 0:
            continue
        s = resource_score(rq, a)
        if positive_only and s <= 0:
            continue
        w = resources[i].weight
        node_score += s * w
        weight_sum += w
    return node_score, weight_sum


def weighted_resource_scorer(
    resources: list[ResourceSpec], resource_score: Callable[[int, int], int]
) -> Scorer:
    """The weighted mean of ``resource_score(requested, allocatable)`` over the resources a
    node has (LeastAllocated and MostAllocated differ only in ``resource_score``)."""

    def f(requested: list[int], _allocated: list[int], allocatable: list[int]) -> int:
        node_score, weight_sum = _weighted_sum(resources, requested, allocatable, resource_score)
        if weight_sum == 0:
            return 0
        return node_score // weight_sum if node_score >= 0 else go_div(node_score, weight_sum)

    return f


def least_resource_scorer(resources: list[ResourceSpec]) -> Scorer:
    return weighted_resource_scorer(resources, least_requested_score)


def most_resource_scorer(resources: list[ResourceSpec]) -> Scorer:
    return weighted_resource_scorer(resources, most_requested_score)


def scaled_utilization(requested: int, capacity: int, maximum: int) -> int:
    """requested * max / capacity with requested clamped to [0, capacity] (exact ints)."""
    if capacity <= 0 or requested <= 0:
        return 0
    if requested >= capacity:
        return maximum
    return requested * maximum // capacity


def requested_to_capacity_ratio_scorer(
    resources: list[ResourceSpec], shape: list[tuple[int, int]]
) -> Scorer:
    """Shape points (utilization 0..100, score 0..10) scaled to 0..100 scores."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    raw = broken_linear_function([(u, s * scale) for u, s in shape])

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return int(raw(MAX_UTILIZATION))
        return int(raw(scaled_utilization(requested, capacity, MAX_UTILIZATION)))

    def f(requested: list[int], _allocated: list[int], allocatable: list[int]) -> int:
        node_score, weight_sum = _weighted_sum(
            resources, requested, allocatable, resource_score, positive_only=True
        )
        if weight_sum == 0:
            return 0
        return go_round(node_score / weight_sum)

    return f


def allocated_score_batch(
    t: NodeTable, rows: Ints, resources: list[ResourceSpec], pod_req: list[int], most: bool
) -> Ints:
    """The LeastAllocated (or MostAllocated) scorer over table rows ``rows``."""
    if len(resources) == 2 and resources[0].name == "cpu" and resources[1].name == "memory":
        pair = _cpu_memory_allocated(t, rows, resources, pod_req, most)
        if pair is not None:
            return pair
    score = np.zeros(len(rows), np.int64)
    wsum = np.zeros(len(rows), np.int64)
    uniform = True  # every node has every resource: one weight sum for all
    wtotal = 0
    for r, pr in zip(resources, pod_req, strict=True):
        a, rq, _ = allocatable_and_requested_batch(t, rows, r.name, pr, False)
        valid = a != 0
        if valid.all():
            safe_a = a
            wsum += r.weight
            wtotal += r.weight
        else:
            uniform = uniform and not valid.any()
            safe_a = np.where(valid, a, 1)
            wsum += np.where(valid, r.weight, 0)
        if most:
            s = (np.minimum(rq, a) * MAX_NODE_SCORE) // safe_a
        else:
            s = np.where(rq > a, 0, ((safe_a - rq) * MAX_NODE_SCORE) // safe_a)
        if safe_a is not a:
            s = np.where(valid, s, 0)  # resources a node lacks are left out
        score += s * r.weight
    if uniform:
        return score // wtotal if wtotal else np.zeros(len(rows), np.int64)
    out: Ints = np.where(wsum > 0, score // np.where(wsum > 0, wsum, 1), 0)
    return out


def _cpu_memory_allocated(
    t: NodeTable, rows: Ints, resources: list[ResourceSpec], pod_req: list[int], most: bool
) -> Ints | None:
    """allocated_score_batch for the default resources (cpu, memory) when every row has both:
    the same integer arithmetic in fewer passes (LeastAllocated's ``where(rq > a, 0, x)`` is
    ``maximum(x, 0)``: x < 0 exactly when rq > a); None otherwise (the general loop)."""
    a0 = t.alloc_cpu[rows]
    a1 = t.alloc_mem[rows]
    if not (a0.all() and a1.all()):
        return None
    w0, w1 = resources[0].weight, resources[1].weight
    if w0 + w1 == 0:
        return None
    rq0 = t.nz_cpu[rows]
    rq0 += pod_req[0]
    rq1 = t.nz_mem[rows]
    rq1 += pod_req[1]
    if most:
        s0 = (np.minimum(rq0, a0) * MAX_NODE_SCORE) // a0
        s1 = (np.minimum(rq1, a1) * MAX_NODE_SCORE) // a1
    else:
        s0 = np.maximum(((a0 - rq0) * MAX_NODE_SCORE) // a0, 0)
        s1 = np.maximum(((a1 - rq1) * MAX_NODE_SCORE) // a1, 0)
    out: Ints = (s0 * w0 + s1 * w1) // (w0 + w1)
    return out


class Fit:
    def __init__(self, args: NodeResourcesFitArgs) -> None:
        self.ignored = frozenset(args.ignored_resources)
        self.ignored_groups = frozenset(args.ignored_resource_groups)
        st = args.scoring_strategy
        self.strategy = st.type
        self.resources = list(st.resources)
        if st.type == LEAST_ALLOCATED:
            self.scorer = least_resource_scorer(self.resources)
        elif st.type == MOST_ALLOCATED:
            self.scorer = most_resource_scorer(self.resources)
        elif st.type == REQUESTED_TO_CAPACITY_RATIO:
            shape = sorted((p.utilization, p.score) for p in st.requested_to_capacity_ratio_shape)
            self.scorer = requested_to_capacity_ratio_scorer(self.resources, shape)
        else:
            raise ValueError(f"scoring strategy {st.type} is not supported")

    def name(self) -> str:
        return NAME

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write(PRE_FILTER_STATE_KEY, compute_pod_resource_request(pod))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        req = state.get(PRE_FILTER_STATE_KEY)
        if req is None:
            return Status(Code.ERROR, [f"error reading {PRE_FILTER_STATE_KEY!r} from cycleState"])
        insufficient = fits_request(req, node_info, self.ignored, self.ignored_groups)
        if not insufficient:
            return None
        code = Code.UNSCHEDULABLE
        for r in insufficient:
            if r.unresolvable:
                code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return Status(code, [r.reason for r in insufficient])

    def filter_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, nominated: NominatedLoad | None
    ) -> Mask | None:
        req = state.get(PRE_FILTER_STATE_KEY)
        if req is None:
            return None
        if nominated is not None:
            return fits_request_batch(req, table, nominated, self.ignored, self.ignored_groups)
        # a per-row verdict: kept by the table while pods of this shape keep coming
        key = (self, "filter", req.milli_cpu, req.memory, req.ephemeral_storage,
               tuple(sorted(req.scalar.items())))
        return table.per_row(
            key,
            lambda rows: fits_request_batch(
                req, table, None, self.ignored, self.ignored_groups, rows
            ),
            None,
            lambda ni: not fits_request(req, ni, self.ignored, self.ignored_groups),
        )

    def resource_monotone(self) -> bool:
        return True  # only requests against allocatable

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, pod_resource_request_list(pod, self.resources, False))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        reqs = state.get(PRE_SCORE_STATE_KEY)
        if reqs is None:
            reqs = pod_resource_request_list(pod, self.resources, False)
        return resource_allocation_score(node_info, self.resources, reqs, False, self.scorer), None

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: Ints) -> Ints | None:
        if self.strategy not in (LEAST_ALLOCATED, MOST_ALLOCATED):
            return None  # RequestedToCapacityRatio: the per-node method
        reqs = state.get(PRE_SCORE_STATE_KEY)
        if reqs is None:
            return None
        most = self.strategy == MOST_ALLOCATED
        # a per-row score: kept by the table while pods of this shape keep coming
        return table.per_row(
            (self, "score", tuple(reqs)),
            lambda rs: allocated_score_batch(
                table, table.rows_or_every(rs), self.resources, reqs, most
            ),
            rows,
            lambda ni: resource_allocation_score(ni, self.resources, reqs, False, self.scorer),
        )

    def score_extensions(self) -> None:
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE), _scheduled_pod_deleted
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
                )
            ),
        ]


def _scheduled_pod_deleted(pod: Any, old: Any, new: Any) -> QueueingHint:
    """Only the deletion of a scheduled (or nominated) pod can free resources."""
    if (
        new is None
        and old is not None
        and not old.spec.node_name
        and not old.status.nominated_node_name
    ):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def new(args: Any, handle: Any) -> Fit:
    return Fit(args if isinstance(args, NodeResourcesFitArgs) else NodeResourcesFitArgs())

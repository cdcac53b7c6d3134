"""Framework: one profile's plugins, run per extension point (upstream frameworkImpl).

The Framework is also the Handle its plugins receive: it hands out the snapshot
lister, the nominator, the binder, namespace labels and named extras from
`FrameworkDeps`. `FrameworkDeps` is shared and mutable, so the scheduler can
create frameworks first and plug the snapshot in afterwards
(``deps.snapshot = snap``), as upstream passes one Snapshot object that the
cache refreshes in place.

Return conventions the engine relies on:
- run_pre_filter_plugins -> (PreFilterResult | None, Status | None, set[str])
- run_filter_plugins / run_filter_plugins_with_nominated_pods -> Status (never None)
- run_score_plugins -> (list[NodePluginScores], Status | None); scores are weighted
- run_post_filter_plugins -> (PostFilterResult | None, Status)

Metrics: when ``deps.extras["metrics"]`` has ``observe_extension_point(point, status,
profile, seconds)``, every per-cycle extension point (PreFilter, PostFilter, PreScore,
Score, Reserve, Unreserve, Permit, PreBind, Bind, PostBind) reports its duration, as
scheduler_framework_extension_point_duration_seconds{extension_point,status,profile}.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pykubelet.api.objects import Namespace
from pykubelet.api.types import Pod
from pysched.framework.cycle_state import CycleState
from pysched.framework.events import ClusterEventWithHint
from pysched.framework.interfaces import (
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from pysched.framework.status import Code, Status
from pysched.framework.types import (
    MAX_NODE_SCORE,
    MAX_TOTAL_SCORE,
    MIN_NODE_SCORE,
    NodeInfo,
    NodePluginScores,
    NodeScore,
    PluginScore,
    PodInfo,
    PostFilterResult,
    PreFilterResult,
)

MAX_PERMIT_TIMEOUT = 15 * 60.0  # upstream maxTimeout for Permit waits

# Extension points in config order (KubeSchedulerConfiguration .plugins keys) and the
# Protocol each one requires.
EXTENSION_POINTS: dict[str, type] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}


def _status_of(ret: Any) -> Status | None:
    if isinstance(ret, Status):
        return ret
    if isinstance(ret, tuple):
        for v in ret:
            if isinstance(v, Status):
                return v
    return None


def _refusal(point: str, plugin: str, s: Status) -> Status:
    """A plugin's non-success as the runtime reports it: a rejection keeps its code and names
    the plugin; anything else becomes an Error naming the extension point."""
    if s.is_rejected():
        s.plugin = plugin
        return s
    return Status(
        Code.ERROR,
        [f"running {point} plugin {plugin!r}: {s.message()}"],
        plugin=plugin,
        error=s.error,
    )


def _timed(point: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Record scheduler_framework_extension_point_duration_seconds through the ``metrics``
    extra's ``observe_extension_point(point, status, profile, seconds)``, when one is set."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(self: Framework, *args: Any, **kwargs: Any) -> Any:
            m = self.deps.extras.get("metrics")
            observe = getattr(m, "observe_extension_point", None) if m is not None else None
            if observe is None:
                return fn(self, *args, **kwargs)
            t0 = time.perf_counter()
            ret = fn(self, *args, **kwargs)
            st = _status_of(ret)
            code = st.code if st is not None else Code.SUCCESS
            observe(point, str(code), self.profile_name, time.perf_counter() - t0)
            return ret

        return wrapper

    return deco


def go_duration(seconds: float) -> str:
    """Go's time.Duration.String() for a non-negative number of seconds (e.g. 1m30s, 10ms)."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    if ns < 1000:
        return f"{ns}ns"
    if ns < 1_000_000:
        return f"{_trim(ns / 1e3)}µs"
    if ns < 1_000_000_000:
        return f"{_trim(ns / 1e6)}ms"
    h, rem = divmod(ns, 3600 * 10**9)
    m, rem = divmod(rem, 60 * 10**9)
    sec = _trim(rem / 1e9)
    if h:
        return f"{h}h{m}m{sec}s"
    if m:
        return f"{m}m{sec}s"
    return f"{sec}s"


def _trim(x: float) -> str:
    return f"{x:.9f}".rstrip("0").rstrip(".")


class FrameworkError(ValueError):
    """A profile that cannot be built (unknown plugin, duplicate, missing queueSort/bind)."""


@dataclass
class FrameworkDeps:
    """What the Handle gives plugins. All optional; set `snapshot` before scheduling."""

    snapshot: Any = None  # SharedLister: .node_infos() -> NodeInfoLister (list/get/...)
    nominator: Any = None  # .nominated_pods_for_node(name) -> list[PodInfo]
    binder: Any = None  # .bind(pod, node_name); raises on failure
    namespaces: Callable[[], Sequence[Namespace]] | None = None  # all namespaces (for selectors)
    extras: dict[str, Any] = field(default_factory=dict)  # e.g. pdb_lister, evict, pod_getter


@dataclass(slots=True)
class _WaitingPod:
    pod: Pod
    pending: dict[str, float]  # plugin -> deadline (monotonic)
    timeouts: dict[str, float] = field(default_factory=dict)  # plugin -> wait (seconds)
    cond: threading.Condition = field(default_factory=threading.Condition)
    result: Status | None = None

    def allow(self, plugin: str) -> None:
        with self.cond:
            self.pending.pop(plugin, None)
            if not self.pending and self.result is None:
                self.result = Status()
            self.cond.notify_all()

    def reject(self, plugin: str, msg: str) -> None:
        with self.cond:
            if self.result is None:
                self.result = Status(Code.UNSCHEDULABLE, [msg], plugin=plugin)
            self.cond.notify_all()


class Framework:
    """Runs one profile's plugins. Build it with `pysched.config.build_frameworks`."""

    def __init__(
        self,
        profile_name: str,
        plugins: dict[str, Any],
        points: dict[str, list[Any]],
        score_weights: dict[str, int],
        deps: FrameworkDeps | None = None,
        percentage_of_nodes_to_score: int | None = None,
    ) -> None:
        self.profile_name = profile_name
        self.deps = deps or FrameworkDeps()
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self._waiting: dict[str, _WaitingPod] = {}
        self._waiting_lock = threading.Lock()
        self.set_plugins(plugins, points, score_weights)

    def set_plugins(
        self, plugins: dict[str, Any], points: dict[str, list[Any]], score_weights: dict[str, int]
    ) -> None:
        """The profile's plugins per extension point (plugins are built with this Framework
        as their handle, so they come after it)."""
        self.plugins_map = plugins
        self.pre_enqueue_plugins: list[PreEnqueuePlugin] = points.get("preEnqueue", [])
        self.queue_sort_plugins: list[QueueSortPlugin] = points.get("queueSort", [])
        self.pre_filter_plugins: list[PreFilterPlugin] = points.get("preFilter", [])
        self.filter_plugins: list[FilterPlugin] = points.get("filter", [])
        self.post_filter_plugins: list[PostFilterPlugin] = points.get("postFilter", [])
        self.pre_score_plugins: list[PreScorePlugin] = points.get("preScore", [])
        self.score_plugins: list[ScorePlugin] = points.get("score", [])
        self.reserve_plugins: list[ReservePlugin] = points.get("reserve", [])
        self.permit_plugins: list[PermitPlugin] = points.get("permit", [])
        self.pre_bind_plugins: list[PreBindPlugin] = points.get("preBind", [])
        self.bind_plugins: list[BindPlugin] = points.get("bind", [])
        self.post_bind_plugins: list[PostBindPlugin] = points.get("postBind", [])
        self.score_plugin_weight = score_weights
        self._filters = [(p.name(), p.filter) for p in self.filter_plugins]

    # ------------------------------------------------------------------ Handle
    def snapshot_shared_lister(self) -> Any:
        return self.deps.snapshot

    @property
    def nominator(self) -> Any:
        return self.deps.nominator

    @property
    def binder(self) -> Any:
        return self.deps.binder

    def list_namespaces(self) -> Sequence[Namespace]:
        return self.deps.namespaces() if self.deps.namespaces is not None else ()

    def namespace_labels(self, namespace: str) -> dict[str, str] | None:
        """The labels of a namespace, or None when unknown (treated as no labels)."""
        for ns in self.list_namespaces():
            if ns.metadata.name == namespace:
                return ns.metadata.labels
        return None

    def extra(self, key: str) -> Any:
        return self.deps.extras.get(key)

    # ------------------------------------------------------------------ introspection
    def has_filter_plugins(self) -> bool:
        return bool(self.filter_plugins)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter_plugins)

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    def list_plugins(self) -> dict[str, list[str]]:
        """Extension point -> plugin names in run order (for tests and --explain)."""
        out: dict[str, list[str]] = {}
        for point in EXTENSION_POINTS:
            attr = {
                "preEnqueue": "pre_enqueue_plugins",
                "queueSort": "queue_sort_plugins",
                "preFilter": "pre_filter_plugins",
                "filter": "filter_plugins",
                "postFilter": "post_filter_plugins",
                "preScore": "pre_score_plugins",
                "score": "score_plugins",
                "reserve": "reserve_plugins",
                "permit": "permit_plugins",
                "preBind": "pre_bind_plugins",
                "bind": "bind_plugins",
                "postBind": "post_bind_plugins",
            }[point]
            names = [p.name() for p in getattr(self, attr)]
            if names:
                out[point] = names
        return out

    # ------------------------------------------------------------------ queue
    def queue_sort_less(self, a: Any, b: Any) -> bool:
        return bool(self.queue_sort_plugins[0].less(a, b))

    def queue_sort_func(self) -> Callable[[Any, Any], bool]:
        return self.queue_sort_plugins[0].less

    def run_pre_enqueue_plugins(self, pod: Pod) -> Status:
        """The first non-success PreEnqueue status (plugin recorded), else success."""
        for pl in self.pre_enqueue_plugins:
            s = pl.pre_enqueue(pod)
            if s is not None and not s.is_success():
                s.plugin = pl.name()
                return s
        return Status()

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Plugin name -> the events (with hints) that may make its rejected pods schedulable."""
        out: dict[str, list[ClusterEventWithHint]] = {}
        for name, pl in self.plugins_map.items():
            if isinstance(pl, EnqueueExtensions):
                out[name] = pl.events_to_register()
        return out

    # ------------------------------------------------------------------ PreFilter
    @_timed("PreFilter")
    def run_pre_filter_plugins(
        self, state: CycleState, pod: Pod
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """RunPreFilterPlugins: Skip marks the plugin's Filter skipped; Unresolvable stops at once;
        Unschedulable is remembered and the rest still run; PreFilterResults intersect."""
        result: PreFilterResult | None = None
        plugins_with_nodes: set[str] = set()
        skip: set[str] = set()
        return_status: Status | None = None
        lister = self.deps.snapshot
        nodes = lister.node_infos().list() if lister is not None else []
        for pl in self.pre_filter_plugins:
            name = pl.name()
            r, s = pl.pre_filter(state, pod, nodes)
            if s is not None and s.code == Code.SKIP:
                skip.add(name)
                continue
            if s is not None and s.code != Code.SUCCESS:
                s.plugin = name
                if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return None, s, set()
                if s.code == Code.UNSCHEDULABLE:
                    return_status = s
                    continue
                err = Status(
                    Code.ERROR,
                    [f"running PreFilter plugin {name!r}: {s.message()}"],
                    plugin=name,
                    error=s.error,
                )
                return None, err, set()
            if r is not None and not r.all_nodes():
                plugins_with_nodes.add(name)
            result = r if result is None else result.merge(r)
            if result is not None and not result.all_nodes() and not result.node_names:
                names = sorted(plugins_with_nodes)
                if len(names) == 1:
                    msg = f"node(s) didn't satisfy plugin {names[0]}"
                else:
                    msg = f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                return (
                    result,
                    Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [msg]),
                    plugins_with_nodes,
                )
        state.skip_filter_plugins = skip
        return result, return_status, plugins_with_nodes

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status:
        return self._run_pre_filter_extension(
            "AddPod", state, pod_to_schedule, pod_info_to_add, node_info
        )

    def run_pre_filter_extension_remove_pod(
        self,
        state: CycleState,
        pod_to_schedule: Pod,
        pod_info_to_remove: PodInfo,
        node_info: NodeInfo,
    ) -> Status:
        return self._run_pre_filter_extension(
            "RemovePod", state, pod_to_schedule, pod_info_to_remove, node_info
        )

    def _run_pre_filter_extension(
        self, op: str, state: CycleState, pod: Pod, pod_info: PodInfo, node_info: NodeInfo
    ) -> Status:
        """AddPod or RemovePod on every active PreFilter plugin's extensions."""
        for pl in self.pre_filter_plugins:
            name = pl.name()
            if name in state.skip_filter_plugins:
                continue
            ext = pl.pre_filter_extensions()
            if ext is None:
                continue
            call = ext.add_pod if op == "AddPod" else ext.remove_pod
            s = call(state, pod, pod_info, node_info)
            if s is not None and not s.is_success():
                return Status(
                    Code.ERROR,
                    [f"running {op} on PreFilter plugin {name!r}: {s.message()}"],
                    plugin=name,
                    error=s.error,
                )
        return Status()

    # ------------------------------------------------------------------ Filter
    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        """Stops at the first plugin that does not succeed and records it in `.plugin`."""
        skip = state.skip_filter_plugins
        for name, fn in self._filters:
            if skip and name in skip:
                continue
            s = fn(state, pod, node_info)
            if s is not None and s.code != Code.SUCCESS:
                if s.code not in (
                    Code.UNSCHEDULABLE,
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    Code.PENDING,
                ):
                    s = Status(
                        Code.ERROR,
                        [f"running {name!r} filter plugin: {s.message()}"],
                        error=s.error,
                    )
                s.plugin = name
                return s
        return Status()

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status:
        """Two passes as upstream: with equal-or-higher-priority nominated pods added, then
        (only if some were added and the first pass passed) without them."""
        status = Status()
        pods_added = False
        for i in range(2):
            state_to_use, info_to_use = state, node_info
            if i == 0:
                pods_added, state_to_use, info_to_use = self._add_ge_nominated_pods(
                    pod, state, node_info
                )
            elif not pods_added or not status.is_success():
                break
            status = self.run_filter_plugins(state_to_use, pod, info_to_use)
            if not status.is_success() and not status.is_rejected():
                return status
        return status

    def _add_ge_nominated_pods(
        self, pod: Pod, state: CycleState, node_info: NodeInfo
    ) -> tuple[bool, CycleState, NodeInfo]:
        nominator = self.deps.nominator
        if nominator is None or node_info is None or node_info.node is None:
            return False, state, node_info
        nominated = nominator.nominated_pods_for_node(node_info.name)
        if not nominated:
            return False, state, node_info
        prio = pod.spec.priority or 0
        info_out: NodeInfo | None = None
        state_out: CycleState | None = None
        added = False
        for pi in nominated:
            if (pi.pod.spec.priority or 0) >= prio and pi.pod.metadata.uid != pod.metadata.uid:
                if info_out is None:
                    info_out, state_out = node_info.clone(), state.clone()
                assert state_out is not None
                info_out.add_pod_info(pi)
                s = self.run_pre_filter_extension_add_pod(state_out, pod, pi, info_out)
                if not s.is_success():
                    raise RuntimeError(s.message())
                added = True
        if not added or info_out is None or state_out is None:
            return False, state, node_info
        return True, state_out, info_out

    # ------------------------------------------------------------------ PostFilter
    @_timed("PostFilter")
    def run_post_filter_plugins(
        self, state: CycleState, pod: Pod, filtered_node_status_map: Any
    ) -> tuple[PostFilterResult | None, Status]:
        result: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        for pl in self.post_filter_plugins:
            name = pl.name()
            r, s = pl.post_filter(state, pod, filtered_node_status_map)
            if s is None or s.is_success():
                return r, s or Status()
            if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                s.plugin = name
                return r, s
            if not s.is_rejected():
                return None, Status(Code.ERROR, [s.message()], plugin=name, error=s.error)
            if r is not None and r.mode != "Noop":
                result = r
            reasons.extend(s.reasons)
            if not rejector:
                rejector = name
        return result, Status(Code.UNSCHEDULABLE, reasons, plugin=rejector)

    # ------------------------------------------------------------------ Score
    @_timed("PreScore")
    def run_pre_score_plugins(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        skip: set[str] = set()
        for pl in self.pre_score_plugins:
            s = pl.pre_score(state, pod, nodes)
            if s is None or s.code == Code.SUCCESS:
                continue
            if s.code == Code.SKIP:
                skip.add(pl.name())
                continue
            return Status(
                Code.ERROR,
                [f"running PreScore plugin {pl.name()!r}: {s.message()}"],
                plugin=pl.name(),
                error=s.error,
            )
        state.skip_score_plugins = skip
        return None

    @_timed("Score")
    def run_score_plugins(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodePluginScores], Status | None]:
        """Score, NormalizeScore, range check (0..100), weight. PluginScore.score is weighted."""
        skip = state.skip_score_plugins
        plugins = [p for p in self.score_plugins if p.name() not in skip]
        per_plugin: list[list[int]] = []
        for pl in plugins:
            name = pl.name()
            fn = pl.score
            raw: list[int] = []
            for ni in nodes:
                sc, s = fn(state, pod, ni)
                if s is not None and s.code != Code.SUCCESS:
                    return [], Status(
                        Code.ERROR,
                        [f"running Score plugins: plugin {name!r} failed with: {s.message()}"],
                        error=s.error,
                    )
                raw.append(sc)
            ext = pl.score_extensions()
            if ext is not None:
                lst = [NodeScore(ni.name, sc) for ni, sc in zip(nodes, raw, strict=True)]
                s = ext.normalize_score(state, pod, lst)
                if s is not None and not s.is_success():
                    return [], Status(
                        Code.ERROR,
                        [
                            f"running Normalize on Score plugins: plugin {name!r} failed with: "
                            f"{s.message()}"
                        ],
                        error=s.error,
                    )
                raw = [ns.score for ns in lst]
            for score in raw:
                if score > MAX_NODE_SCORE or score < MIN_NODE_SCORE:
                    return [], Status(
                        Code.ERROR,
                        [
                            f"applying score defaultWeights on Score plugins: plugin {name!r} "
                            f"returns an invalid score {score}, it should in the range of "
                            f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                        ],
                    )
            per_plugin.append(raw)
        weights = [self.score_plugin_weight[p.name()] for p in plugins]
        names = [p.name() for p in plugins]
        out: list[NodePluginScores] = []
        cols = list(zip(names, weights, per_plugin, strict=True))
        for i, ni in enumerate(nodes):
            scores = [PluginScore(name, raw[i] * w) for name, w, raw in cols]
            out.append(NodePluginScores(ni.name, scores, sum(ps.score for ps in scores)))
        return out, None

    # ------------------------------------------------------------------ Reserve .. PostBind
    @_timed("Reserve")
    def run_reserve_plugins_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for pl in self.reserve_plugins:
            s = pl.reserve(state, pod, node_name)
            if s is not None and not s.is_success():
                return _refusal("Reserve", pl.name(), s)
        return Status()

    @_timed("Unreserve")
    def run_reserve_plugins_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Unreserve runs in reverse order, and never fails."""
        for pl in reversed(self.reserve_plugins):
            pl.unreserve(state, pod, node_name)

    @_timed("Permit")
    def run_permit_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        waits: dict[str, float] = {}
        for pl in self.permit_plugins:
            s, timeout = pl.permit(state, pod, node_name)
            if s is None or s.is_success():
                continue
            if s.code == Code.WAIT:
                waits[pl.name()] = min(float(timeout), MAX_PERMIT_TIMEOUT)
                continue
            return _refusal("Permit", pl.name(), s)
        if waits:
            now = time.monotonic()
            wp = _WaitingPod(pod, {k: now + v for k, v in waits.items()}, dict(waits))
            with self._waiting_lock:
                self._waiting[pod.metadata.uid] = wp
            return Status(
                Code.WAIT,
                [
                    f"one or more plugins asked to wait and no plugin rejected "
                    f"pod {pod.metadata.name!r}"
                ],
            )
        return Status()

    def get_waiting_pod(self, uid: str) -> _WaitingPod | None:
        with self._waiting_lock:
            return self._waiting.get(uid)

    def wait_on_permit(self, pod: Pod) -> Status:
        """Block until every waiting Permit plugin allowed the pod, one rejected it, or timeout."""
        with self._waiting_lock:
            wp = self._waiting.get(pod.metadata.uid)
        if wp is None:
            return Status()
        try:
            with wp.cond:
                while wp.result is None:
                    if not wp.pending:
                        wp.result = Status()
                        break
                    plugin, deadline = min(wp.pending.items(), key=lambda kv: kv[1])
                    left = deadline - time.monotonic()
                    if left <= 0:
                        waited = go_duration(wp.timeouts.get(plugin, 0.0))
                        wp.result = Status(
                            Code.UNSCHEDULABLE,
                            [f"rejected due to timeout after waiting {waited} at plugin {plugin}"],
                            plugin=plugin,
                        )
                        break
                    wp.cond.wait(left)
            return wp.result
        finally:
            with self._waiting_lock:
                self._waiting.pop(pod.metadata.uid, None)

    @_timed("PreBind")
    def run_pre_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for pl in self.pre_bind_plugins:
            if pl.name() in state.skip_pre_bind_plugins:
                continue
            s = pl.pre_bind(state, pod, node_name)
            if s is not None and not s.is_success():
                return _refusal("PreBind", pl.name(), s)
        return Status()

    @_timed("Bind")
    def run_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        if not self.bind_plugins:
            return Status(Code.SKIP)
        status = Status(Code.SKIP)
        for pl in self.bind_plugins:
            s = pl.bind(state, pod, node_name) or Status()
            if s.code == Code.SKIP:
                status = s
                continue
            if not s.is_success():
                if s.is_rejected():
                    s.plugin = pl.name()
                    return s
                return Status(
                    Code.ERROR,
                    [f"binding {pod.key!r}: {s.message()}"],
                    plugin=pl.name(),
                    error=s.error,
                )
            return s
        return status

    @_timed("PostBind")
    def run_post_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for pl in self.post_bind_plugins:
            pl.post_bind(state, pod, node_name)

    def __repr__(self) -> str:
        return f"Framework({self.profile_name!r})"


def check_score_weights(weights: dict[str, int]) -> None:
    """Upstream getScoreWeights' overflow guard."""
    total = 0
    for name, w in weights.items():
        if w * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
            raise FrameworkError(f"total score of Score plugins could overflow (at {name})")
        total += w * MAX_NODE_SCORE

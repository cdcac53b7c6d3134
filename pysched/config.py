"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): strict decoding, defaults,
validation, and building one Framework per profile.

Decoding is strict: an unknown field, an unknown plugin name (in any plugin set or in
pluginConfig) or an ill-typed value raises ConfigError naming the field. Defaults follow
pkg/scheduler/apis/config/v1 (defaults.go, default_plugins.go): the default profile is
``default-scheduler`` with the multiPoint plugin list and weights of kube-scheduler's
default profile; custom plugin sets merge into the defaults as upstream's mergePlugins.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from pykubelet.api.machinery.errors import DecodeError
from pykubelet.api.types import TopologySpreadConstraint
from pysched import decode as sched_decode
from pysched.configfields import field_path, known_object, typed
from pysched.extender import (
    ExtenderConfig,
    ExtenderConfigError,
    decode_extenders,
    ignored_extended_resources,
)
from pysched.framework.registry import Registry, in_tree_registry
from pysched.framework.runtime import (
    EXTENSION_POINTS,
    Framework,
    FrameworkDeps,
    FrameworkError,
    check_score_weights,
)
from pysched.plugins.args import (
    LIST_DEFAULTING,
    MAX_CUSTOM_PRIORITY_SCORE,
    REQUESTED_TO_CAPACITY_RATIO,
    SCORING_STRATEGIES,
    SYSTEM_DEFAULTING,
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
    VolumeBindingArgs,
    default_resource_spec,
)

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
MULTI_POINT = "multiPoint"
PLUGIN_SET_KEYS = ("multiPoint", *EXTENSION_POINTS)

# getDefaultPlugins (v1.36, DynamicResourceAllocation on): name, weight (None: not a scorer
# or weight unset).
DEFAULT_MULTI_POINT: list[tuple[str, int | None]] = [
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", None),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
]

# Plugins removed from kubescheduler.config.k8s.io/v1; naming them is an error upstream too.
REMOVED_PLUGINS = {
    "NodeResourcesLeastAllocated",
    "NodeResourcesMostAllocated",
    "RequestedToCapacityRatio",
    "SelectorSpread",
    "NodePreferAvoidPods",
    "ServiceAffinity",
    "NodeLabel",
    "EBSLimits",
    "GCEPDLimits",
    "AzureDiskLimits",
    "CinderLimits",
}


class ConfigError(ValueError):
    """A configuration that does not decode or validate; the message names the field."""


# ---------------------------------------------------------------- data model


@dataclass(slots=True)
class PluginRef:
    name: str
    weight: int | None = None


@dataclass(slots=True)
class PluginSet:
    enabled: list[PluginRef] = field(default_factory=list)
    disabled: list[PluginRef] = field(default_factory=list)


@dataclass
class Profile:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    percentage_of_nodes_to_score: int | None = None
    plugins: dict[str, PluginSet] = field(default_factory=dict)  # merged with the defaults
    plugin_config: dict[str, Any] = field(default_factory=dict)  # name -> typed args

    def enabled_names(self) -> list[str]:
        names: list[str] = []
        for ps in self.plugins.values():
            for p in ps.enabled:
                if p.name not in names:
                    names.append(p.name)
        return names


@dataclass
class SchedulerConfiguration:
    profiles: list[Profile] = field(default_factory=list)
    percentage_of_nodes_to_score: int = 0  # 0: adaptive (50% - nodes/125, at least 5%)
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    parallelism: int = 16
    extenders: list[ExtenderConfig] = field(default_factory=list)

    def profile(self, scheduler_name: str) -> Profile:
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        raise KeyError(scheduler_name)


# ---------------------------------------------------------------- strict decoding helpers


def _obj(v: Any, path: str, known: set[str]) -> dict[str, Any]:
    return {} if v is None else known_object(v, path, known, ConfigError)


def _int(d: Mapping[str, Any], key: str, path: str, default: int | None = None) -> int | None:
    return typed(d, key, path, default, int, ConfigError)


def _str(d: Mapping[str, Any], key: str, path: str, default: str = "") -> str:
    return typed(d, key, path, default, str, ConfigError)


def _bool(d: Mapping[str, Any], key: str, path: str, default: bool = False) -> bool:
    return typed(d, key, path, default, bool, ConfigError)


def _list(d: Mapping[str, Any], key: str, path: str) -> list[Any]:
    return typed(d, key, path, [], list, ConfigError)


# ---------------------------------------------------------------- plugin args


def _resources(items: list[Any], path: str) -> list[ResourceSpec]:
    out = []
    for i, r in enumerate(items):
        rp = f"{path}[{i}]"
        d = _obj(r, rp, {"name", "weight"})
        name = _str(d, "name", rp)
        if not name:
            raise ConfigError(f"{rp}.name: Required value")
        w = _int(d, "weight", rp, 0) or 0
        if w < 0 or w > 100:
            raise ConfigError(
                f"{rp}.weight: Invalid value: {w}: resource weight of {name} "
                "not in valid range [1, 100]"
            )
        out.append(ResourceSpec(name, w or 1))  # 0 / unset -> 1, as SetDefaults does
    return out


def _decode_fit_args(d: dict[str, Any], path: str) -> NodeResourcesFitArgs:
    _obj(
        d,
        path,
        {"apiVersion", "kind", "ignoredResources", "ignoredResourceGroups", "scoringStrategy"},
    )
    args = NodeResourcesFitArgs(
        ignored_resources=[str(x) for x in _list(d, "ignoredResources", path)],
        ignored_resource_groups=[str(x) for x in _list(d, "ignoredResourceGroups", path)],
    )
    for i, g in enumerate(args.ignored_resource_groups):
        if "/" in g:
            raise ConfigError(
                f"{path}.ignoredResourceGroups[{i}]: Invalid value: {g!r}: "
                "resource group name can't contain '/'"
            )
    sp = field_path(path, "scoringStrategy")
    if d.get("scoringStrategy") is not None:
        sd = _obj(d["scoringStrategy"], sp, {"type", "resources", "requestedToCapacityRatio"})
        typ = _str(sd, "type", sp) or "LeastAllocated"
        if typ not in SCORING_STRATEGIES:
            raise ConfigError(
                f"{sp}.type: Unsupported value: {typ!r}: supported values: "
                + ", ".join(f'"{s}"' for s in SCORING_STRATEGIES)
            )
        res = _resources(_list(sd, "resources", sp), f"{sp}.resources") or default_resource_spec()
        shape: list[UtilizationShapePoint] = []
        rp = f"{sp}.requestedToCapacityRatio"
        if sd.get("requestedToCapacityRatio") is not None:
            rd = _obj(sd["requestedToCapacityRatio"], rp, {"shape"})
            for i, pt in enumerate(_list(rd, "shape", rp)):
                pp = f"{rp}.shape[{i}]"
                pd = _obj(pt, pp, {"utilization", "score"})
                u = _int(pd, "utilization", pp, 0) or 0
                s = _int(pd, "score", pp, 0) or 0
                if not 0 <= u <= 100:
                    raise ConfigError(
                        f"{pp}.utilization: Invalid value: {u}: not in valid range [0, 100]"
                    )
                if not 0 <= s <= MAX_CUSTOM_PRIORITY_SCORE:
                    raise ConfigError(
                        f"{pp}.score: Invalid value: {s}: not in valid range "
                        f"[0, {MAX_CUSTOM_PRIORITY_SCORE}]"
                    )
                if shape and u <= shape[-1].utilization:
                    raise ConfigError(
                        f"{pp}.utilization: Invalid value: {u}: utilization values "
                        "must be sorted in increasing order"
                    )
                shape.append(UtilizationShapePoint(u, s))
        if typ == REQUESTED_TO_CAPACITY_RATIO and not shape:
            raise ConfigError(f"{rp}.shape: Required value: at least one point must be specified")
        if typ != REQUESTED_TO_CAPACITY_RATIO and sd.get("requestedToCapacityRatio") is not None:
            raise ConfigError(
                f"{rp}: Forbidden: only valid with type {REQUESTED_TO_CAPACITY_RATIO}"
            )
        args.scoring_strategy = ScoringStrategy(typ, res, shape)
    return args


def _decode_balanced_args(d: dict[str, Any], path: str) -> NodeResourcesBalancedAllocationArgs:
    _obj(d, path, {"apiVersion", "kind", "resources"})
    res = _resources(_list(d, "resources", path), field_path(path, "resources"))
    for i, r in enumerate(res):
        if r.weight != 1:
            raise ConfigError(f"{path}.resources[{i}].weight: Invalid value: {r.weight}: must be 1")
    return NodeResourcesBalancedAllocationArgs(res or default_resource_spec())


def _decode_ipa_args(d: dict[str, Any], path: str) -> InterPodAffinityArgs:
    _obj(
        d,
        path,
        {"apiVersion", "kind", "hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"},
    )
    w = _int(d, "hardPodAffinityWeight", path, 1)
    assert w is not None
    if not 0 <= w <= 100:
        raise ConfigError(
            f"{path}.hardPodAffinityWeight: Invalid value: {w}: not in valid range [0, 100]"
        )
    return InterPodAffinityArgs(w, _bool(d, "ignorePreferredTermsOfExistingPods", path))


def _decode_node_affinity_args(d: dict[str, Any], path: str) -> NodeAffinityArgs:
    _obj(d, path, {"apiVersion", "kind", "addedAffinity"})
    args = NodeAffinityArgs()
    ap = field_path(path, "addedAffinity")
    if d.get("addedAffinity") is not None:
        ad = _obj(
            d["addedAffinity"],
            ap,
            {
                "requiredDuringSchedulingIgnoredDuringExecution",
                "preferredDuringSchedulingIgnoredDuringExecution",
            },
        )
        try:
            req = ad.get("requiredDuringSchedulingIgnoredDuringExecution")
            if req is not None:
                args.added_required = sched_decode.node_selector(
                    req, f"{ap}.requiredDuringSchedulingIgnoredDuringExecution"
                )
            args.added_preferred = [
                sched_decode.preferred_scheduling_term(
                    t, f"{ap}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
                )
                for i, t in enumerate(
                    _list(ad, "preferredDuringSchedulingIgnoredDuringExecution", ap)
                )
            ]
        except DecodeError as exc:
            raise ConfigError(str(exc)) from None
    return args


def _decode_spread_args(d: dict[str, Any], path: str) -> PodTopologySpreadArgs:
    _obj(d, path, {"apiVersion", "kind", "defaultConstraints", "defaultingType"})
    typ = _str(d, "defaultingType", path) or SYSTEM_DEFAULTING
    if typ not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        raise ConfigError(
            f"{path}.defaultingType: Unsupported value: {typ!r}: supported values: "
            f'"{SYSTEM_DEFAULTING}", "{LIST_DEFAULTING}"'
        )
    cs: list[TopologySpreadConstraint] = []
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(_list(d, "defaultConstraints", path)):
        cp = f"{path}.defaultConstraints[{i}]"
        if isinstance(c, dict) and c.get("labelSelector") is not None:
            raise ConfigError(
                f"{cp}.labelSelector: Forbidden: constraint must not define a "
                "selector, as they deduced for each pod"
            )
        try:
            tc = sched_decode.topology_spread_constraint(c, cp)
        except DecodeError as exc:
            raise ConfigError(str(exc)) from None
        key = (tc.topology_key, tc.when_unsatisfiable)
        if key in seen:
            raise ConfigError(
                f"{cp}: Duplicate value: {{{tc.topology_key!r}, {tc.when_unsatisfiable!r}}}"
            )
        seen.add(key)
        cs.append(tc)
    if typ == SYSTEM_DEFAULTING and cs:
        raise ConfigError(
            f"{path}.defaultingType: Invalid value: {typ!r}: when .defaultConstraints "
            "are not empty, defaultingType must be List"
        )
    return PodTopologySpreadArgs(cs, typ)


def _decode_preemption_args(d: dict[str, Any], path: str) -> DefaultPreemptionArgs:
    _obj(
        d, path, {"apiVersion", "kind", "minCandidateNodesPercentage", "minCandidateNodesAbsolute"}
    )
    pct = _int(d, "minCandidateNodesPercentage", path, 10)
    absolute = _int(d, "minCandidateNodesAbsolute", path, 100)
    assert pct is not None
    assert absolute is not None
    if not 0 <= pct <= 100:
        raise ConfigError(
            f"{path}.minCandidateNodesPercentage: Invalid value: {pct}: not in valid range [0, 100]"
        )
    if absolute < 0:
        raise ConfigError(
            f"{path}.minCandidateNodesAbsolute: Invalid value: {absolute}: not in "
            "valid range [0, inf)"
        )
    if pct == 0 and absolute == 0:
        raise ConfigError(
            f"{path}: Invalid value: both minCandidateNodesPercentage and "
            "minCandidateNodesAbsolute cannot be zero"
        )
    return DefaultPreemptionArgs(pct, absolute)


def _decode_volume_binding_args(d: dict[str, Any], path: str) -> VolumeBindingArgs:
    _obj(d, path, {"apiVersion", "kind", "bindTimeoutSeconds", "shape"})
    t = _int(d, "bindTimeoutSeconds", path, 600)
    assert t is not None
    if t < 0:
        raise ConfigError(
            f"{path}.bindTimeoutSeconds: Invalid value: {t}: invalid "
            "BindTimeoutSeconds, should not be a negative value"
        )
    return VolumeBindingArgs(t)


def _decode_dra_args(d: dict[str, Any], path: str) -> DynamicResourcesArgs:
    _obj(d, path, {"apiVersion", "kind", "filterTimeout", "bindingTimeout"})
    return DynamicResourcesArgs(_str(d, "filterTimeout", path) or "10s")


ARGS_DECODERS: dict[str, Callable[[dict[str, Any], str], Any]] = {
    "NodeResourcesFit": _decode_fit_args,
    "NodeResourcesBalancedAllocation": _decode_balanced_args,
    "InterPodAffinity": _decode_ipa_args,
    "NodeAffinity": _decode_node_affinity_args,
    "PodTopologySpread": _decode_spread_args,
    "DefaultPreemption": _decode_preemption_args,
    "VolumeBinding": _decode_volume_binding_args,
    "DynamicResources": _decode_dra_args,
}


def default_args(name: str) -> Any:
    """The defaulted args object of a plugin (None for plugins without args)."""
    dec = ARGS_DECODERS.get(name)
    return dec({}, f"{name}Args") if dec is not None else None


def _decode_args(name: str, v: Any, path: str) -> Any:
    dec = ARGS_DECODERS.get(name)
    if dec is None:
        if v not in (None, {}):
            raise ConfigError(f"{path}: plugin {name} takes no args")
        return None
    d = _obj(v, path, set(v.keys()) if isinstance(v, dict) else set())
    kind = d.get("kind")
    if kind is not None and kind != f"{name}Args":
        raise ConfigError(f"{path}.kind: expected {name}Args, got {kind!r}")
    api = d.get("apiVersion")
    if api is not None and api != API_VERSION:
        raise ConfigError(f"{path}.apiVersion: expected {API_VERSION}, got {api!r}")
    return dec(d, path)


# ---------------------------------------------------------------- plugins and profiles


def default_plugins() -> dict[str, PluginSet]:
    return {MULTI_POINT: PluginSet([PluginRef(n, w) for n, w in DEFAULT_MULTI_POINT], [])}


def _decode_plugin_set(v: Any, path: str, known: set[str]) -> PluginSet:
    d = _obj(v, path, {"enabled", "disabled"})
    ps = PluginSet()
    for key, target in (("enabled", ps.enabled), ("disabled", ps.disabled)):
        for i, p in enumerate(_list(d, key, path)):
            pp = f"{path}.{key}[{i}]"
            pd = _obj(p, pp, {"name", "weight"})
            name = _str(pd, "name", pp)
            if not name:
                raise ConfigError(f"{pp}.name: Required value")
            if name in REMOVED_PLUGINS:
                raise ConfigError(
                    f"{pp}.name: Invalid value: {name!r}: was removed in version "
                    f"{API_VERSION} (KubeSchedulerConfiguration is version "
                    f"{API_VERSION})"
                )
            if name != "*" and name not in known:
                raise ConfigError(f"{pp}.name: Invalid value: {name!r}: plugin does not exist")
            if name == "*" and key == "enabled":
                raise ConfigError(f"{pp}.name: Invalid value: '*': only valid in disabled")
            w = _int(pd, "weight", pp)
            if w is not None and w < 0:
                raise ConfigError(
                    f"{pp}.weight: Invalid value: {w}: must be greater than or equal to zero"
                )
            target.append(PluginRef(name, w))
    return ps


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """mergePluginSet: drop disabled defaults, replace re-configured ones in place, append new."""
    disabled = {p.name for p in custom.disabled} | {p.name for p in default.disabled}
    custom_idx = {p.name: (i, p) for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled:
        for p in default.enabled:
            if p.name in disabled:
                continue
            if p.name in custom_idx:
                i, cp = custom_idx[p.name]
                p = cp
                replaced.add(i)
            enabled.append(p)
    for i, p in enumerate(custom.enabled):
        if i not in replaced:
            enabled.append(p)
    return PluginSet(enabled, [PluginRef(p.name) for p in custom.disabled + default.disabled])


def _decode_profile(v: Any, path: str, known: set[str], single: bool) -> Profile:
    d = _obj(v, path, {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"})
    name = _str(d, "schedulerName", path)
    if not name:
        if not single:
            raise ConfigError(f"{path}.schedulerName: Required value")
        name = DEFAULT_SCHEDULER_NAME
    pct = _int(d, "percentageOfNodesToScore", path)
    if pct is not None and not 0 <= pct <= 100:
        raise ConfigError(
            f"{path}.percentageOfNodesToScore: Invalid value: {pct}: not in valid range [0, 100]"
        )
    plugins = default_plugins()
    pp = field_path(path, "plugins")
    pd = _obj(d.get("plugins"), pp, set(PLUGIN_SET_KEYS))
    for key in PLUGIN_SET_KEYS:
        custom = _decode_plugin_set(pd.get(key), f"{pp}.{key}", known)
        plugins[key] = merge_plugin_set(plugins.get(key, PluginSet()), custom)
    prof = Profile(name, pct, plugins, {})
    cp = field_path(path, "pluginConfig")
    for i, c in enumerate(_list(d, "pluginConfig", path)):
        ip = f"{cp}[{i}]"
        cd = _obj(c, ip, {"name", "args"})
        pname = _str(cd, "name", ip)
        if not pname:
            raise ConfigError(f"{ip}.name: Required value")
        if pname not in known:
            raise ConfigError(f"{ip}.name: Invalid value: {pname!r}: plugin does not exist")
        if pname in prof.plugin_config:
            raise ConfigError(f"{ip}: Duplicate value: {pname!r}")
        prof.plugin_config[pname] = _decode_args(pname, cd.get("args"), f"{ip}.args")
    for pname in prof.enabled_names():
        if pname not in prof.plugin_config and pname in ARGS_DECODERS:
            prof.plugin_config[pname] = default_args(pname)
    return prof


def load_config(
    source: str | os.PathLike[str] | Mapping[str, Any] | None, registry: Registry | None = None
) -> SchedulerConfiguration:
    """Decode, default and validate a KubeSchedulerConfiguration (file path, YAML text or dict).

    None gives the default configuration. Raises ConfigError naming the bad field.
    """
    reg = registry if registry is not None else in_tree_registry()
    if source is None:
        data: Any = {}
    elif isinstance(source, Mapping):
        data = dict(source)
    else:
        text = str(source)
        looks_like_path = "\n" not in text and (
            text.endswith((".yaml", ".yml", ".json")) or (os.sep in text and ": " not in text)
        )
        if isinstance(source, os.PathLike) or os.path.exists(text) or looks_like_path:
            try:
                with open(source, encoding="utf-8") as fh:
                    text = fh.read()
            except OSError as exc:
                raise ConfigError(
                    f"{text}: cannot read the configuration: {exc.strerror}"
                ) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"invalid YAML: {exc}") from None
        if data is None:
            data = {}
    top = _obj(
        data,
        "",
        {
            "apiVersion",
            "kind",
            "parallelism",
            "leaderElection",
            "clientConnection",
            "enableProfiling",
            "enableContentionProfiling",
            "percentageOfNodesToScore",
            "podInitialBackoffSeconds",
            "podMaxBackoffSeconds",
            "profiles",
            "extenders",
            "delayCacheUntilActive",
        },
    )
    if data and top.get("apiVersion") != API_VERSION:
        raise ConfigError(f"apiVersion: expected {API_VERSION!r}, got {top.get('apiVersion')!r}")
    if data and top.get("kind") != KIND:
        raise ConfigError(f"kind: expected {KIND!r}, got {top.get('kind')!r}")
    cfg = SchedulerConfiguration()
    try:
        cfg.extenders = decode_extenders(_list(top, "extenders", ""))
    except ExtenderConfigError as exc:
        raise ConfigError(str(exc)) from None
    cfg.parallelism = _int(top, "parallelism", "", 16) or 0
    if cfg.parallelism <= 0:
        raise ConfigError(
            f"parallelism: Invalid value: {cfg.parallelism}: should be an integer "
            "value greater than zero"
        )
    pct = _int(top, "percentageOfNodesToScore", "", 0)
    assert pct is not None
    if not 0 <= pct <= 100:
        raise ConfigError(
            f"percentageOfNodesToScore: Invalid value: {pct}: not in valid range [0, 100]"
        )
    cfg.percentage_of_nodes_to_score = pct
    ib = _int(top, "podInitialBackoffSeconds", "", 1)
    mb = _int(top, "podMaxBackoffSeconds", "", 10)
    assert ib is not None
    assert mb is not None
    if ib <= 0:
        raise ConfigError(f"podInitialBackoffSeconds: Invalid value: {ib}: must be greater than 0")
    if mb < ib:
        raise ConfigError(
            f"podMaxBackoffSeconds: Invalid value: {mb}: must be greater than or "
            "equal to PodInitialBackoffSeconds"
        )
    cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds = ib, mb
    known = set(reg)
    raw_profiles = _list(top, "profiles", "")
    if not raw_profiles:
        raw_profiles = [{}]
    single = len(raw_profiles) == 1
    names: set[str] = set()
    for i, rp in enumerate(raw_profiles):
        prof = _decode_profile(rp, f"profiles[{i}]", known, single)
        if prof.scheduler_name in names:
            raise ConfigError(
                f"profiles[{i}].schedulerName: Duplicate value: {prof.scheduler_name!r}"
            )
        names.add(prof.scheduler_name)
        cfg.profiles.append(prof)
    _validate_common_queue_sort(cfg)
    _ignore_extender_resources(cfg)
    return cfg


def _ignore_extender_resources(cfg: SchedulerConfiguration) -> None:
    """New(): resources an extender manages with ignoredByScheduler become every profile's
    NodeResourcesFit ignoredResources (they replace the configured list, as upstream)."""
    ignored = ignored_extended_resources(cfg.extenders)
    if not ignored:
        return
    for prof in cfg.profiles:
        args = prof.plugin_config.get("NodeResourcesFit")
        if isinstance(args, NodeResourcesFitArgs):
            args.ignored_resources = list(ignored)


def _validate_common_queue_sort(cfg: SchedulerConfiguration) -> None:
    """validateCommonQueueSort: one queue, so every profile's queueSort set must be identical."""

    def key(p: Profile) -> tuple[list[tuple[str, int | None]], list[str]]:
        ps = p.plugins.get("queueSort", PluginSet())
        return [(r.name, r.weight) for r in ps.enabled], [r.name for r in ps.disabled]

    if not cfg.profiles:
        return
    first = key(cfg.profiles[0])
    if len(first[0]) > 1:
        raise ConfigError(
            f"profiles[0].plugins.queueSort.enabled: Invalid value: {len(first[0])}: "
            "only one queue sort plugin can be enabled"
        )
    for i, p in enumerate(cfg.profiles[1:], start=1):
        if key(p) != first:
            raise ConfigError(
                f"profiles[{i}].plugins.queueSort: Invalid value: must be the same for all profiles"
            )


def default_config() -> SchedulerConfiguration:
    return load_config(None)


# ---------------------------------------------------------------- frameworks


def _implements(plugin: Any, point: str) -> bool:
    return isinstance(plugin, EXTENSION_POINTS[point])


def expand_points(prof: Profile, plugins: dict[str, Any]) -> dict[str, list[Any]]:
    """Per extension point, the plugin instances in run order (expandMultiPointPlugins):
    plugins re-configured at the point (their order), then multiPoint ones, then the rest."""
    out: dict[str, list[Any]] = {}
    mp = prof.plugins.get(MULTI_POINT, PluginSet())
    for point in EXTENSION_POINTS:
        ps = prof.plugins.get(point, PluginSet())
        enabled = [r.name for r in ps.enabled]
        for name in enabled:
            if not _implements(plugins[name], point):
                raise FrameworkError(f"plugin {name!r} does not extend {point} plugin")
        if len(set(enabled)) != len(enabled):
            dup = next(n for n in enabled if enabled.count(n) > 1)
            raise FrameworkError(f"plugin {dup!r} already registered as {point!r}")
        disabled = {r.name for r in ps.disabled}
        if "*" in disabled:
            out[point] = [plugins[n] for n in enabled]
            continue
        overrides: list[str] = []
        multi: list[str] = []
        for r in mp.enabled:
            pl = plugins[r.name]
            if not _implements(pl, point) or r.name in disabled:
                continue
            if r.name in enabled:
                if r.name not in overrides:
                    overrides.append(r.name)
                continue
            if r.name in multi:
                raise FrameworkError(f"plugin {r.name!r} already registered as {point!r}")
            multi.append(r.name)
        # part 1 keeps the regular extension point's order, as upstream
        order = [n for n in enabled if n in overrides]
        order += [n for n in multi if n not in order]
        order += [n for n in enabled if n not in order]
        out[point] = [plugins[n] for n in order]
    return out


def score_weights(prof: Profile, plugins: dict[str, Any]) -> dict[str, int]:
    """getScoreWeights: the score point's own weight wins over multiPoint's; 0/unset -> 1."""
    weights: dict[str, int] = {}
    refs = (
        prof.plugins.get("score", PluginSet()).enabled
        + prof.plugins.get(MULTI_POINT, PluginSet()).enabled
    )
    for r in refs:
        if not _implements(plugins[r.name], "score") or r.name in weights:
            continue
        weights[r.name] = r.weight or 1
    return weights


def build_framework(
    prof: Profile, deps: FrameworkDeps | None = None, registry: Registry | None = None
) -> Framework:
    """NewFramework for one profile: instantiate enabled plugins once, wire the points."""
    reg = registry if registry is not None else in_tree_registry()
    fw = Framework(prof.scheduler_name, {}, {}, {}, deps, prof.percentage_of_nodes_to_score)
    plugins: dict[str, Any] = {}
    for name in prof.enabled_names():
        factory = reg.get(name)
        if factory is None:
            raise FrameworkError(f"plugin {name!r} does not exist")
        try:
            plugins[name] = factory(prof.plugin_config.get(name), fw)
        except ValueError as exc:
            raise FrameworkError(f"initializing plugin {name!r}: {exc}") from None
    points = expand_points(prof, plugins)
    if len(points["queueSort"]) != 1:
        raise FrameworkError(
            f"only one queue sort plugin required for profile with scheduler "
            f"name {prof.scheduler_name!r}, but got {len(points['queueSort'])}"
        )
    if not points["bind"]:
        raise FrameworkError(
            f"at least one bind plugin is needed for profile with scheduler "
            f"name {prof.scheduler_name!r}"
        )
    weights = score_weights(prof, plugins)
    weights = {p.name(): weights.get(p.name(), 1) for p in points["score"]}
    check_score_weights(weights)
    fw.set_plugins(plugins, points, weights)
    return fw


def build_frameworks(
    cfg: SchedulerConfiguration,
    handle_factory: FrameworkDeps | Callable[[Profile], FrameworkDeps] | None = None,
    registry: Registry | None = None,
) -> dict[str, Framework]:
    """One Framework per profile, keyed by schedulerName.

    `handle_factory` is the FrameworkDeps shared by all profiles, or a callable giving each
    profile its own (the contract's name; a plain FrameworkDeps is the common case).
    """
    out: dict[str, Framework] = {}
    shared = handle_factory if isinstance(handle_factory, FrameworkDeps) else None
    for prof in cfg.profiles:
        if shared is not None:
            deps = shared
        elif handle_factory is not None:
            deps = handle_factory(prof)  # type: ignore[operator]
        else:
            deps = FrameworkDeps()
        out[prof.scheduler_name] = build_framework(prof, deps, registry)
    return out

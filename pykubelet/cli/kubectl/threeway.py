"""The patch ``kubectl apply`` sends (apimachinery's strategicpatch.CreateThreeWayMergePatch,
pure functions over JSON-like data).

The patch is the change from the live object (*current*) to the manifest (*modified*),
ignoring fields the manifest does not mention (the server and controllers own those), plus
the deletions from the last applied manifest (*original*) to this one. Lists of objects
with a patch merge key (containers by ``name``, ports by ``containerPort``, ...) are diffed
item by item, with ``$setElementOrder`` and ``{"$patch": "delete"}`` directives; lists of
primitives with the merge strategy (``finalizers``) by value, with
``$deleteFromPrimitiveList``; ``volumes`` items carry ``$retainKeys``; every other list is
replaced whole. With ``strategic=False`` (kinds the client has no schema for) the result is a
JSON merge patch: no directives, lists replaced.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# upstream's patchMergeKey tags of the core kinds, by field name (unambiguous across the
# kinds served here; the API server merges with the same table)
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "conditions": "type",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "ownerReferences": "uid",
    "addresses": "type",
    "podIPs": "ip",
    "hostIPs": "ip",
    "resourceClaims": "name",
    "schedulingGates": "name",
}
SET_LISTS = frozenset({"finalizers"})  # lists of primitives merged as sets
RETAIN_KEYS = frozenset({"volumes"})  # items carry $retainKeys

SET_ORDER = "$setElementOrder/"
DELETE_FROM_PRIMITIVE = "$deleteFromPrimitiveList/"


@dataclass(frozen=True)
class _Options:
    ignore_deletions: bool = False
    ignore_changes: bool = False
    set_order: bool = True
    retain_keys: bool = False
    strategic: bool = True


def three_way_patch(original: Mapping[str, Any] | None, modified: Mapping[str, Any],
                    current: Mapping[str, Any], strategic: bool = True) -> dict[str, Any]:
    """The apply patch; ``{}`` when nothing is to change."""
    delta = _diff_maps(current, modified, _Options(ignore_deletions=True,
                                                   set_order=strategic, strategic=strategic))
    deletions = _diff_maps(original or {}, modified,
                           _Options(ignore_changes=True, set_order=strategic,
                                    strategic=strategic))
    return _merge(deletions, delta)


def _same_type(a: Any, b: Any) -> bool:
    """Go decodes every JSON number as float64: 1 and 1.0 are one type, true is not."""
    def t(v: Any) -> type:
        if isinstance(v, bool):
            return bool
        if isinstance(v, int | float):
            return float
        return type(v)
    return t(a) is t(b)


def _equal(a: Any, b: Any) -> bool:
    if not _same_type(a, b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _diff_maps(original: Mapping[str, Any], modified: Mapping[str, Any],
               opts: _Options) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    for key, mv in modified.items():
        if key not in original:
            if not opts.ignore_changes:
                patch[key] = mv
            continue
        ov = original[key]
        if not _same_type(ov, mv):
            if not opts.ignore_changes:
                patch[key] = mv
            continue
        if isinstance(mv, dict):
            sub = _diff_maps(ov, mv, _child(opts))
            if sub:
                patch[key] = sub
        elif isinstance(mv, list):
            _diff_slice(key, ov, mv, patch, opts)
        elif not opts.ignore_changes and not _equal(ov, mv):
            patch[key] = mv
    if not opts.ignore_deletions:
        for key in original:
            if key not in modified:
                patch[key] = None
    if opts.retain_keys and (patch or _has_new_field(original, modified)):
        keys = sorted(k for k, v in modified.items() if v is not None)
        if keys:
            patch["$retainKeys"] = keys
    return patch


def _child(opts: _Options, retain_keys: bool = False) -> _Options:
    return _Options(opts.ignore_deletions, opts.ignore_changes, opts.set_order, retain_keys,
                    opts.strategic)


def _has_new_field(original: Mapping[str, Any], modified: Mapping[str, Any]) -> bool:
    return any(v is not None and k not in modified for k, v in original.items())


def _diff_slice(key: str, original: list[Any], modified: list[Any], patch: dict[str, Any],
                opts: _Options) -> None:
    merge_key = MERGE_KEYS.get(key) if opts.strategic else None
    if merge_key and _keyed(original, merge_key) and _keyed(modified, merge_key):
        add, order = _diff_keyed(key, original, modified, merge_key, opts)
        if add:
            patch[key] = add
        if order:
            patch[SET_ORDER + key] = order
        return
    if opts.strategic and key in SET_LISTS and _scalars(original) and _scalars(modified):
        add, delete, order = _diff_scalars(original, modified, opts)
        if add:
            patch[key] = add
        if delete:
            patch[DELETE_FROM_PRIMITIVE + key] = delete
        if order:
            patch[SET_ORDER + key] = order
        return
    if not opts.ignore_changes and not _equal(original, modified):
        patch[key] = modified


def _keyed(items: list[Any], merge_key: str) -> bool:
    return all(isinstance(i, dict) and merge_key in i for i in items)


def _scalars(items: list[Any]) -> bool:
    return all(not isinstance(i, dict | list) for i in items)


def _key_text(v: Any) -> str:
    from pykubelet.cli.kubectl.printers import go_string

    return go_string(v)


def _diff_keyed(key: str, original: list[dict[str, Any]], modified: list[dict[str, Any]],
                mk: str, opts: _Options) -> tuple[list[Any], list[Any]]:
    if not original:
        if not modified or opts.ignore_changes:
            return [], []
        return list(modified), []
    by_orig = {_key_text(o[mk]): o for o in original}
    by_mod = {_key_text(m[mk]): m for m in modified}
    patch_list: list[Any] = []
    deletions: list[Any] = []
    for k in sorted(set(by_orig) | set(by_mod)):
        o, m = by_orig.get(k), by_mod.get(k)
        if o is not None and m is not None:
            sub = _diff_maps(o, m, _child(opts, retain_keys=key in RETAIN_KEYS))
            if sub:
                sub[mk] = m[mk]
                patch_list.append(sub)
        elif m is not None:
            if not opts.ignore_changes:
                patch_list.append(m)
        elif o is not None and not opts.ignore_deletions:
            deletions.append({"$patch": "delete", mk: o[mk]})
    position = {_key_text(m[mk]): i for i, m in enumerate(modified)}
    patch_list.sort(key=lambda p: position.get(_key_text(p[mk]), len(position)))
    same_order = len(original) == len(modified) and all(
        _key_text(o[mk]) == _key_text(m[mk]) for o, m in zip(original, modified, strict=True))
    patch_list += deletions
    order: list[Any] = []
    if opts.set_order and ((not opts.ignore_changes and (patch_list or not same_order))
                           or (not opts.ignore_deletions and patch_list)):
        order = [{mk: m[mk]} for m in modified]
    return patch_list, order


def _diff_scalars(original: list[Any], modified: list[Any],
                  opts: _Options) -> tuple[list[Any], list[Any], list[Any]]:
    orig = {_key_text(v): v for v in original}
    mod = {_key_text(v): v for v in modified}
    add = [] if opts.ignore_changes else [mod[k] for k in sorted(mod) if k not in orig]
    delete = [] if opts.ignore_deletions else [orig[k] for k in sorted(orig) if k not in mod]
    order: list[Any] = []
    if opts.set_order and ((not opts.ignore_deletions and delete) or (
            not opts.ignore_changes and not _equal(original, modified))):
        order = list(modified)
    return add, delete, order


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Two patches of one object as one (the deletions, then the changes)."""
    out = dict(base)
    for key, v in extra.items():
        b = out.get(key)
        if isinstance(b, dict) and isinstance(v, dict):
            out[key] = _merge(b, v)
        elif isinstance(b, list) and isinstance(v, list) and key in MERGE_KEYS:
            out[key] = _merge_keyed(b, v, MERGE_KEYS[key])
        else:
            out[key] = v
    for key, v in out.items():
        if isinstance(v, list) and key in MERGE_KEYS and key in base and key in extra:
            out[key] = _ordered(v, MERGE_KEYS[key], out.get(SET_ORDER + key))
    return out


def _ordered(items: list[Any], mk: str, order: list[Any] | None) -> list[Any]:
    """kubectl's order for a merged list: items in the manifest's order, deletions last."""
    position = {_key_text(o.get(mk)): i for i, o in enumerate(order or [])
                if isinstance(o, dict)}
    keep = [i for i in items if not (isinstance(i, dict) and i.get("$patch") == "delete")]
    gone = [i for i in items if isinstance(i, dict) and i.get("$patch") == "delete"]
    keep.sort(key=lambda i: position.get(_key_text(i.get(mk)) if isinstance(i, dict) else "",
                                         len(position)))
    return keep + gone


def _merge_keyed(base: list[Any], extra: list[Any], mk: str) -> list[Any]:
    out = list(base)
    for item in extra:
        idx = next((i for i, b in enumerate(out) if isinstance(b, dict) and isinstance(item, dict)
                    and mk in b and b.get(mk) == item.get(mk)
                    and b.get("$patch") != "delete"), None)
        if idx is None:
            out.append(item)
        else:
            out[idx] = _merge(out[idx], item)
    return out

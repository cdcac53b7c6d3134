"""The field manager (structured-merge-diff's merge.Updater behind kube-apiserver's
FieldManager): Apply merges a configuration into the live object, owns what it sets,
refuses (409) to take fields other managers own unless forced, and removes what it set
before and no longer sets when nobody else owns it; Update (create, update, any other
patch) gives the writer what it changed and takes those fields from the others."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pykubelet.controlplane.registry.fieldmanager import fieldpath as fp
from pykubelet.controlplane.registry.fieldmanager import managed as mf
from pykubelet.controlplane.registry.fieldmanager import schema, typed
from pykubelet.controlplane.registry.fieldmanager.fieldpath import FieldSet, Path
from pykubelet.controlplane.registry.fieldmanager.managed import Key, Managed, Managers

# what no manager owns (stripmeta.go): the type, identity and system fields
_META = "f:metadata"
STRIPPED: frozenset[Path] = frozenset(
    {("f:apiVersion",), ("f:kind",), (_META,)}
    | {(_META, fp.field(f)) for f in (
        "name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
        "selfLink", "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds")})


@dataclass(frozen=True)
class Conflict:
    manager: Key
    path: Path


class ApplyConflictError(Exception):
    """An apply that would take fields other managers own (409 Conflict)."""

    def __init__(self, conflicts: list[Conflict], managers: Managers) -> None:
        self.conflicts = conflicts
        self.managers = managers
        super().__init__(self.message)

    @property
    def message(self) -> str:
        """upstream's getConflictMessage."""
        c = self.conflicts
        if len(c) == 1:
            return (f"Apply failed with 1 conflict: conflict with "
                    f"{mf.describe(c[0].manager, self.managers)}: {fp.describe(c[0].path)}")
        lines: list[str] = []
        by: dict[str, list[Path]] = {}
        for x in c:
            by.setdefault(mf.describe(x.manager, self.managers), []).append(x.path)
        for name in sorted(by):
            lines.append(f"conflicts with {name}:")
            lines.extend(f"- {fp.describe(p)}" for p in by[name])
        return f"Apply failed with {len(c)} conflicts: " + "\n".join(lines)

    def causes(self) -> list[dict[str, str]]:
        return [{"reason": "FieldManagerConflict",
                 "message": f"conflict with {mf.describe(x.manager, self.managers)}",
                 "field": fp.describe(x.path)} for x in self.conflicts]


def main_resource(path: Path) -> bool:
    """What a write to the main resource may own: anything but status (the strategies'
    reset fields)."""
    return not path or path[0] != "f:status"


def status_subresource(path: Path) -> bool:
    """What a write to /status may own: status and metadata."""
    return not path or path[0] in ("f:status", _META)


class FieldManager:
    """One resource version's field manager: ``definition`` is the kind's OpenAPI
    definition (None: schemaless), ``owns`` filters what a write may own (the reset
    fields of the main resource or of a subresource)."""

    def __init__(self, definition: str | None, api_version: str, subresource: str = "",
                 owns: Callable[[Path], bool] | None = None) -> None:
        self.root = schema.root(definition)
        self.api_version = api_version
        self.subresource = subresource
        self.owns = owns or (status_subresource if subresource == "status"
                             else main_resource)

    def _filter(self, fields: set[Path] | FieldSet) -> FieldSet:
        return frozenset(p for p in fields if p not in STRIPPED and self.owns(p))

    def update(self, live: Any, new: Any, managers: Managers, manager: str,
               now: str) -> Managers:
        """The managers after ``manager`` wrote ``new`` over ``live`` (None: a create):
        it owns what it added or changed, merged into its earlier Update entry, which then
        gets the time; the others lose those fields and whatever was removed."""
        cmp = typed.compare(live if live is not None else {}, new, self.root)
        taken = self._filter(cmp.added | cmp.modified)
        removed = frozenset(cmp.removed)
        out: Managers = {}
        for key, m in managers.items():
            rest = m.fields - taken - removed
            if rest:
                out[key] = m.with_fields(rest)
        if taken:
            key = mf.identity(manager, mf.UPDATE, self.api_version, self.subresource)
            before = out[key].fields if key in out else fp.EMPTY
            out[key] = Managed(manager, mf.UPDATE, self.api_version, before | taken, now,
                               self.subresource)
        return out

    def apply(self, live: Any, config: dict[str, Any], managers: Managers, manager: str,
              force: bool, now: str) -> tuple[Any, Managers]:
        """(the object after applying ``config`` over ``live`` (None: absent), the
        managers after); ApplyConflictError when not forced and others own what it changes."""
        base = live if live is not None else {}
        merged = typed.merge(base, config, self.root)
        key = mf.identity(manager, mf.APPLY, self.api_version, self.subresource)
        last = managers.get(key)
        applied = self._filter(typed.to_field_set(config, self.root))
        managers = dict(managers)
        managers[key] = Managed(manager, mf.APPLY, self.api_version, applied,
                                last.time if last else now, self.subresource)
        if last is not None:
            merged = self._prune(merged, managers, last.fields - applied)
        cmp = typed.compare(base, merged, self.root)
        changed = self._filter(cmp.added | cmp.modified)
        conflicts = [Conflict(k, p) for k, m in sorted(managers.items()) if k != key
                     for p in sorted(m.fields & changed)]
        if conflicts and not force:
            raise ApplyConflictError(conflicts, managers)
        out: Managers = {}
        for k, m in managers.items():
            rest = m.fields if k == key else m.fields - changed - frozenset(cmp.removed)
            if rest:
                out[k] = m.with_fields(rest)
        if merged != base and key in out:
            out[key] = Managed(manager, mf.APPLY, self.api_version, applied, now,
                               self.subresource)
        return merged, out

    def _prune(self, merged: Any, managers: Managers, dropped: FieldSet) -> Any:
        """``merged`` without what the applier no longer sets, unless another manager
        (or its own new configuration) owns that node or anything below it."""
        owned = frozenset().union(*(m.fields for m in managers.values()))
        gone = frozenset(p for p in dropped if not fp.under(owned, p))
        return typed.remove(merged, gone, self.root)


MAX_UPDATE_MANAGERS = 10  # DefaultMaxUpdateManagers
ANCIENT_CHANGES = "ancient-changes"


def cap_updaters(managers: Managers, limit: int = MAX_UPDATE_MANAGERS) -> Managers:
    """At most ``limit`` Update entries (capManagersManager): the oldest are merged, per
    apiVersion, into an ``ancient-changes`` entry that takes the newest merged time."""
    updaters = sorted((m for m in managers.values() if m.operation == mf.UPDATE),
                      key=lambda m: (m.time, m.key))
    if len(updaters) <= limit:
        return managers
    out = dict(managers)
    first: dict[str, Key] = {}
    length = len(updaters)
    for m in updaters:
        if length <= limit:
            break
        if m.api_version not in first:
            first[m.api_version] = m.key
            continue
        bucket = mf.identity(ANCIENT_CHANGES, mf.UPDATE, m.api_version)
        if bucket not in out:
            seed = out.pop(first[m.api_version])
            out[bucket] = Managed(ANCIENT_CHANGES, mf.UPDATE, m.api_version, seed.fields,
                                  seed.time)
        out[bucket] = Managed(ANCIENT_CHANGES, mf.UPDATE, m.api_version,
                              out[bucket].fields | m.fields, m.time)
        del out[m.key]
        length -= 1
    return out

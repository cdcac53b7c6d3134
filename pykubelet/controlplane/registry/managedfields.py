"""The registry's side of server-side apply (kube-apiserver's FieldManager as its
create, update and patch handlers call it): every write records who changed what in
``metadata.managedFields``, an apply merges its configuration as its manager. The merge
itself is :mod:`.fieldmanager`; this module picks the schema and the subresource, and
turns the field manager's errors into API Status errors."""

from __future__ import annotations

from typing import Any

from pykubelet.api.machinery.timeutil import now, rfc3339
from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.fieldmanager import managed as mf
from pykubelet.controlplane.registry.fieldmanager.managed import Managers
from pykubelet.controlplane.registry.fieldmanager.manager import (
    ApplyConflictError,
    FieldManager,
    cap_updaters,
)
from pykubelet.controlplane.registry.fieldmanager.typed import SchemaError

FIELD_MANAGER_MAX_LENGTH = 128  # validation.FieldManagerMaxLength
BEFORE_FIRST_APPLY = "before-first-apply"
DEFAULT_MANAGER = "pykubelet"  # the control plane's own writers (its user agent's prefix)
_OPTIONS = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions"}


def manager_or_user_agent(manager: str, user_agent: str) -> str:
    """The manager a write is recorded under (managerOrUserAgent): the fieldManager
    parameter, else the user agent up to its first "/" (``kubectl/v1.31.0 ...``:
    ``kubectl``)."""
    return manager or user_agent.split("/")[0]


def check_options(method: str, manager: str, force: str | None, apply: bool) -> None:
    """ValidatePatchOptions/ValidateCreateOptions/ValidateUpdateOptions on fieldManager
    and force: 422 ``PatchOptions.meta.k8s.io "" is invalid: ...``."""
    problems: list[str] = []
    if method == "PATCH":
        if not apply and force is not None:
            problems.append("force: Forbidden: may not be specified for non-apply patch")
        if apply and not manager:
            problems.append("fieldManager: Required value: is required for apply patch")
    if len(manager) > FIELD_MANAGER_MAX_LENGTH:
        problems.append(f"fieldManager: Too long: may not be more than "
                        f"{FIELD_MANAGER_MAX_LENGTH} bytes")
    for i, ch in enumerate(manager):
        if not ch.isprintable():
            problems.append(f'fieldManager: Invalid value: "{manager}": invalid character '
                            f"U+{ord(ch):04X} (at position {i})")
    if problems:
        raise errors.invalid(_OPTIONS.get(method, "PatchOptions"), "meta.k8s.io", "",
                             [errors.cause(p) for p in problems])


def _manager(strategy: Any, api_version: str, subresource: str) -> FieldManager:
    # custom resources (and CRDs) have no upstream definition here: schemaless, as
    # upstream's deduced type (maps granular, lists atomic)
    kind = getattr(strategy, "kind", None)
    cls = getattr(kind, "cls", None)
    definition = vars(cls).get("__k8s__") if cls is not None else None
    return FieldManager(definition, api_version, subresource)


def _managers(obj: dict[str, Any]) -> Managers:
    try:
        return mf.decode((obj.get("metadata") or {}).get("managedFields"))
    except ValueError:
        return {}


def track(strategy: Any, api_version: str, subresource: str, manager: str,
          old: dict[str, Any] | None, new: dict[str, Any]) -> None:
    """Record a create (``old`` None), update or patch in ``new``'s managedFields:
    over the entries a write to the main resource sends (``[{}]`` clears them), else
    over the live object's (FieldManager.Update: a subresource write, or entries that are
    absent, empty or do not decode, never replace them)."""
    meta = new.setdefault("metadata", {})
    sent = meta.get("managedFields")
    if sent == [{}] and not subresource:
        meta.pop("managedFields", None)
        return
    base: Managers = {}
    if sent and not subresource and (old is None or sent != (old.get("metadata") or {})
                                     .get("managedFields")):
        base = _managers(new)
    if not base and old is not None:
        base = _managers(old)
    try:
        managers = cap_updaters(_manager(strategy, api_version, subresource).update(
            old, new, base, manager or DEFAULT_MANAGER, rfc3339(now())))
    except SchemaError:
        managers = base  # as UpdateNoErrors: a write is never refused for its tracking
    _store(meta, managers)


def apply(strategy: Any, api_version: str, subresource: str, manager: str, force: bool,
          live: dict[str, Any] | None, config: Any) -> dict[str, Any]:
    """The object after applying ``config`` over ``live`` (None: it does not exist
    yet), its managedFields set; 400 for a body of another kind or version, 409 for
    conflicts."""
    if not isinstance(config, dict):
        raise errors.bad_request("error decoding YAML: the apply body must be an object")
    kind, version = config.get("kind"), config.get("apiVersion")
    expected_kind = getattr(getattr(strategy, "info", None), "kind", "")
    if kind != expected_kind or version != api_version:
        group, _, ver = str(version or "").rpartition("/")
        raise errors.bad_request(f"invalid object type: {group}/{ver}, Kind={kind or ''}")
    if (config.get("metadata") or {}).get("managedFields") is not None:
        raise errors.bad_request("metadata.managedFields must be nil")
    fm = _manager(strategy, api_version, subresource)
    base = _managers(live) if live is not None else {}
    live_obj = None
    t = rfc3339(now())
    if live is not None:
        live_obj = dict(live)
        live_obj["metadata"] = {k: v for k, v in (live.get("metadata") or {}).items()
                                if k != "managedFields"}
    try:
        if live_obj is not None and not base:
            # an object nobody is recorded for (written before managedFields were kept):
            # what it holds belongs to "before-first-apply" (skipNonAppliedManager)
            base = fm.update(None, live_obj, {}, BEFORE_FIRST_APPLY, t)
        merged, managers = fm.apply(live_obj, config, base, manager, force, t)
    except ApplyConflictError as exc:
        raise errors.StatusError(409, errors.CONFLICT, exc.message,
                                 {"causes": exc.causes()}) from None
    except SchemaError as exc:
        raise errors.bad_request(str(exc)) from None
    _store(merged.setdefault("metadata", {}), managers)
    return dict(merged)


def _store(meta: dict[str, Any], managers: Managers) -> None:
    entries = mf.encode(managers)
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)

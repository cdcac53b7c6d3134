"""pods/eviction's rule (pkg/registry/core/pod/storage/eviction.go): a delete that takes
one disruption from the pod's PodDisruptionBudget first, or is refused (429). In the
registry so the disruption controller reads budgets' selectors the same way."""

from __future__ import annotations

from pykubelet.api.machinery.timeutil import now, rfc3339
from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.resources import PDBS
from pykubelet.controlplane.registry.selectors import LabelSelector, Requirement
from pykubelet.controlplane.registry.store import Context, DeleteOptions, GenericStore, Obj
from pykubelet.controlplane.registry.strategy import StatusStrategy


def _pod_ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def selector_of(pdb: Obj) -> LabelSelector | None:
    """A PDB's metav1.LabelSelector as a selector (None matches nothing, as upstream)."""
    sel = (pdb.get("spec") or {}).get("selector")
    if sel is None:
        return None
    reqs = [Requirement(k, "=", (v,)) for k, v in (sel.get("matchLabels") or {}).items()]
    for e in sel.get("matchExpressions") or []:
        op = {"In": "in", "NotIn": "notin", "Exists": "exists",
              "DoesNotExist": "!"}.get(e.get("operator", ""), "")
        reqs.append(Requirement(e.get("key", ""), op, tuple(e.get("values") or ())))
    return LabelSelector(tuple(reqs))


async def evict(store: GenericStore, ctx: Context, namespace: str, name: str,
                options: DeleteOptions) -> None:
    """EvictionREST.Create: delete the pod unless its budget forbids it (429). A pod that
    is not running (Succeeded, Failed, Pending) or already being deleted ignores budgets;
    more than one matching budget is an error, as upstream."""
    pod = store.get(namespace, name).obj()
    phase = (pod.get("status") or {}).get("phase")
    ignore_pdb = phase in ("Succeeded", "Failed", "Pending") or bool(
        (pod.get("metadata") or {}).get("deletionTimestamp"))
    if not ignore_pdb:
        pdb_store = store.registry.store(PDBS)
        labels = (pod.get("metadata") or {}).get("labels") or {}
        matching = []
        for entry in pdb_store.select(namespace, None):
            sel = selector_of(entry.obj())
            if sel is not None and not sel.empty and sel.matches(labels):
                matching.append(entry)
        if len(matching) > 1:
            raise errors.internal("This pod has more than one PodDisruptionBudget, which the "
                                  "eviction subresource does not support.")
        if matching:
            await _take_budget(pdb_store, matching[0].attrs.name, namespace, name, pod, ctx)
    await store.delete(ctx, namespace, name, options)


async def _take_budget(pdb_store: GenericStore, pdb_name: str, ns: str, pod_name: str,
                       pod: Obj, ctx: Context) -> None:
    def take(pdb: Obj) -> Obj:
        status = pdb.setdefault("status", {})
        gen = (pdb.get("metadata") or {}).get("generation", 0)
        if status.get("observedGeneration", 0) < gen:
            raise errors.StatusError(
                429, errors.TOO_MANY_REQUESTS,
                "Cannot evict pod as it would violate the pod's disruption budget.",
                {"causes": [{"reason": "DisruptionBudget", "message": "The disruption budget "
                             f"{pdb_name} is still being processed by the server."}]})
        allowed = int(status.get("disruptionsAllowed") or 0)
        if allowed <= 0 and not (not _pod_ready(pod) and (pdb.get("spec") or {}).get(
                "unhealthyPodEvictionPolicy") == "AlwaysAllow"):
            healthy = status.get("currentHealthy", 0)
            desired = status.get("desiredHealthy", 0)
            raise errors.StatusError(
                429, errors.TOO_MANY_REQUESTS,
                "Cannot evict pod as it would violate the pod's disruption budget.",
                {"causes": [{"reason": "DisruptionBudget", "message": f"The disruption budget "
                             f"{pdb_name} needs {desired} healthy pods and has {healthy} "
                             "currently"}]})
        status["disruptionsAllowed"] = allowed - 1 if allowed > 0 else 0
        status.setdefault("disruptedPods", {})[pod_name] = rfc3339(now())
        return pdb

    if not ctx.dry_run:
        await pdb_store.guaranteed_update(ns, pdb_name, take, StatusStrategy(pdb_store.strategy))

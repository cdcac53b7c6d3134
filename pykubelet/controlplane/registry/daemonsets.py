"""DaemonSets (apps/v1, pkg/registry/apps/daemonset): the generation moves with the spec,
status is the controller's (written through ``status``), and the template generation
(the internal spec.templateGeneration, which apps/v1 shows as the
``deprecated.daemonset.template.generation`` annotation) is 1 on create and +1 with each
update that changes the pod template; a client cannot set it."""

from __future__ import annotations

from typing import Any

from pykubelet.api.daemonset import TEMPLATE_GENERATION_ANNOTATION
from pykubelet.controlplane.registry.resources import DAEMON_SETS
from pykubelet.controlplane.registry.strategy import Obj, Strategy


def template_generation(obj: Obj) -> int:
    """The template generation an object's annotation says (0 when none or unreadable)."""
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(
        TEMPLATE_GENERATION_ANNOTATION)
    try:
        return int(text) if text is not None else 0
    except ValueError:
        return 0


def _set_template_generation(obj: Obj, generation: int) -> None:
    meta = obj.setdefault("metadata", {})
    annotations = meta.get("annotations") or {}
    annotations[TEMPLATE_GENERATION_ANNOTATION] = str(generation)
    meta["annotations"] = annotations


class DaemonSetStrategy(Strategy):
    info = DAEMON_SETS
    has_status = True
    tracks_generation = True

    def prepare_for_create(self, obj: Obj, typed: Any = None) -> None:
        super().prepare_for_create(obj, typed)
        # status cleared, as apps/v1 writes an empty DaemonSetStatus (four counts
        # without omitempty)
        obj["status"] = {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                         "desiredNumberScheduled": 0, "numberReady": 0}
        _set_template_generation(obj, max(template_generation(obj), 1))

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        generation = template_generation(old)
        if (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
            generation += 1
        _set_template_generation(new, generation)

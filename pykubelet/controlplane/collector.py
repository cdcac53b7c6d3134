"""The control plane process's cyclic garbage collector, tuned once it serves.

Startup leaves ~150,000 long-lived objects (modules, the object model's plans, schemas,
RBAC rules, the watch cache's initial state); CPython's full collections walk them all
(~90 ms each under a create load here) and the young generation, collected every 700 net
allocations, is emptied ~300 times a second by a pod create's short-lived dicts and
dataclasses: about a tenth of the process's CPU under api_bench. After start the live
objects are moved to the permanent generation (``gc.freeze``, as the CPython docs advise
for long-running servers) and the first generation's threshold is raised, so collections
are rarer and walk only what was made since. Reference counting still frees everything
that is not in a cycle at once; the cycles made after start are still collected."""

from __future__ import annotations

import gc

# young objects between collections (CPython's default: 700); the older generations keep
# their defaults (10, 10)
GEN0_THRESHOLD = 10_000


def tune_after_start() -> None:
    """Collect what startup left, freeze the survivors, raise the first threshold."""
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, gen1, gen2)

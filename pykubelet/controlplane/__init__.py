"""The control plane: the Kubernetes API on a durable store and the control loops beside
it (the scheduler, node lifecycle, pod GC, namespace deletion, disruption budgets, event
expiry and store compaction, with leader election among several) (DESIGN.md "Cluster").

Floors, bottom up: ``storage/`` (the seam: a revisioned key-value log, SQLite by default),
``cacher`` (the watch cache every read and watch is served from), ``registry/`` (one generic
store driven by one strategy per resource), ``apiserver/`` (HTTP: routing, auth, patches,
tables, discovery), ``controllers/`` (the loops above) and ``server`` (the wiring a
``pykubelet control-plane`` process runs).
"""

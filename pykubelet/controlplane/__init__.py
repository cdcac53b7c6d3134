"""The control plane: the Kubernetes API on a durable store, the scheduler loop, node
lifecycle and pod garbage collection (DESIGN.md "Cluster").

Floors, bottom up: ``storage/`` (the seam: a revisioned key-value log, SQLite by default),
``cacher`` (the watch cache every read and watch is served from), ``registry/`` (one generic
store driven by one strategy per resource), ``apiserver/`` (HTTP: routing, auth, patches,
tables, discovery), ``controllers/`` (scheduler runner, node lifecycle, pod GC, disruption
budgets) and ``server`` (the wiring a ``pykubelet control-plane`` process runs).
"""

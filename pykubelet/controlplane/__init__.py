"""The control plane: the Kubernetes API on a durable store and the control loops beside
it, with leader election among several (DESIGN.md "Cluster"): the scheduler and
kube-controller-manager's controllers as ``controllers/__init__`` lists them (node
lifecycle, pod GC, namespace deletion, disruption budgets, the garbage collector, the
workload controllers), event expiry and store compaction.

Floors, bottom up, as k8s.io/apiserver's layers (tests/unit/test_layering.py holds them):
``storage/`` (the seam: a revisioned key-value log, SQLite by default, and ``cacher``, the
watch cache every read and watch is served from), ``registry/`` (one generic store driven by
one strategy per resource; patches, binding and eviction), ``apiserver/`` (HTTP: routing,
the filters, one handler per verb, Tables, discovery), ``controllers/`` (the loops above,
clients of the registry, never of HTTP) and ``server`` (the wiring a ``pykubelet
control-plane`` process runs).
"""

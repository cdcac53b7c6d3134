"""kube-scheduler's default plugins, one module per plugin; each has NAME and new(args, handle).

The registry of them all is ``registry`` (upstream's plugins/registry.go), not this package's
``__init__``: importing one plugin (as pysched.preemption imports NodeResourcesFit) must not
import every plugin, or the plugins that build on the engine's modules close a circle.
"""

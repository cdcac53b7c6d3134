"""The garbage collector (kube-controller-manager's pkg/controller/garbagecollector):
objects whose owners (``metadata.ownerReferences``) are gone are deleted, and the
foreground and orphan deletions the API server marks with finalizers are carried out.

``graph.py`` keeps who owns whom, fed by the watch cache's events for every served
resource (upstream's GraphBuilder over its informers); ``decisions.py`` decides, from the
objects alone, what to do with one object (attemptToDeleteItem, processDeletingDependents,
orphanDependents), table-tested without a server; ``collector.py`` runs the two queues
(attemptToDelete, attemptToOrphan) and carries the decisions out through the registry,
retrying an object that fails with back-off."""

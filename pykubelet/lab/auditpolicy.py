"""The audit policy a lab's control planes use with ``lab up --audit`` (the audit log is
off otherwise, as kube-apiserver's without --audit-log-path): every request at Metadata,
writes with their request bodies, nothing for health checks and the nodes' lease
renewals (the log's noise), Secrets, ConfigMaps and TokenReviews at Metadata only, as
upstream's example policies (cluster/gce/gci/configure-helper.sh) keep them."""

from __future__ import annotations

POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/livez*", "/readyz*", "/version", "/metrics"]
- level: None
  userGroups: ["system:nodes"]
  verbs: ["get", "update"]
  resources: [{group: coordination.k8s.io, resources: [leases]}]
- level: Metadata
  resources:
  - {group: "", resources: [secrets, configmaps]}
  - {group: authentication.k8s.io, resources: [tokenreviews]}
- level: Request
  verbs: [create, update, patch, delete, deletecollection]
- level: Metadata
"""

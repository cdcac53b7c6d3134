"""The audit log (kube-apiserver's staging/src/k8s.io/apiserver/pkg/audit and
apis/audit/v1): a policy file says at which level each request is recorded
(:mod:`.policy`), events are audit.k8s.io/v1 Event objects (:mod:`.events`), written as
JSON lines to a rotated file (:mod:`.backend`) by the audit filter
(:mod:`pykubelet.controlplane.apiserver.filters.audit`)."""

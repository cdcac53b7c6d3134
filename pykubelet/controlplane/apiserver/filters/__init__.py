"""The request filters every API request passes before a handler, as kube-apiserver's
endpoints/filters: authentication (who is asking), impersonation (who they act as) and
authorization (may they)."""

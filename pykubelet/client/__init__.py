"""Clients of the Kubernetes API: kubeconfig files, a REST client over HTTPS and an
informer (list, then watch from the list's resourceVersion)."""

"""Kubernetes v1 API objects as the node reads and writes them: pure data, no I/O.

`types` holds the dataclasses (snake_case attributes, Kubernetes camelCase on the
wire), `decode` turns dicts into them strictly and back, `defaults` applies the API
server's defaulting, `validation` its checks, and `manifest` reads YAML documents.
"""

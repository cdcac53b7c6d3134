"""Fixtures of the agent's integration tests; they live in agent_harness.py."""

from __future__ import annotations

from agent_harness import (  # noqa: F401 (pytest finds fixtures by name here)
    agent_factory,
    containerd_endpoint,
    endpoint,
    pykubelet_endpoint,
    runtime_name,
)

"""The embedded scheduler's configuration: a kubescheduler.config.k8s.io/v1
KubeSchedulerConfiguration file (``--scheduler-config``, ``controlPlane.schedulerConfig``),
read as kube-scheduler reads its ``--config``: decoded strictly and validated by pysched,
and every profile's framework built once, so a bad file stops the control plane before it
starts, with one line naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class SchedulerConfigError(ValueError):
    """A scheduler configuration that does not load; one line, naming the file and field."""


def load_scheduler_config(path: str | Path | None) -> Any:
    """The decoded configuration, or None (the default profile) when no file is given."""
    if path is None or str(path) == "":
        return None
    from pysched.config import ConfigError, build_frameworks, load_config
    from pysched.framework.runtime import FrameworkError

    p = Path(path)
    if not p.is_file():
        raise SchedulerConfigError(f"{p}: no such file")
    try:
        cfg = load_config(p)
        build_frameworks(cfg)  # plugins that do not fit their extension points, etc.
    except (ConfigError, FrameworkError) as exc:
        raise SchedulerConfigError(f"{p}: {_one_line(str(exc))}") from None
    return cfg


def _one_line(text: str) -> str:
    return " ".join(text.split())

"""The fieldValidation modes of a write, and the error strict decoding raises: what the
registry adds around the object model (``pykubelet.api.kinds``), which decodes, defaults
and validates every kind."""

from __future__ import annotations

STRICT, WARN, IGNORE = "Strict", "Warn", "Ignore"


class UnknownFieldsError(ValueError):
    """Strict decoding found fields the kind does not have (400 BadRequest)."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        if len(paths) == 1:
            msg = f'strict decoding error: unknown field "{paths[0]}"'
        else:
            msg = "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in paths)
        super().__init__(msg)

"""Errors of the API layer: each names the field path and the problem, as the API
server's field.Error does (`spec.containers[0].image: Required value`)."""

from __future__ import annotations

from collections.abc import Iterable


class APIError(ValueError):
    """Base of the errors raised while reading an object."""


class DecodeError(APIError):
    """An unknown or ill-typed field."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)


class ValidationError(APIError):
    """One or more field errors, reported together as the API server does."""

    def __init__(self, errors: Iterable[str], *, kind: str = "Pod", name: str = "") -> None:
        self.errors = list(errors)
        self.kind = kind
        self.name = name
        head = f'{kind} "{name}" is invalid' if name else f"{kind} is invalid"
        if len(self.errors) == 1:
            message = f"{head}: {self.errors[0]}"
        else:
            message = f"{head}: [{', '.join(self.errors)}]"
        super().__init__(message)

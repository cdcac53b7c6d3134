"""The errors raised while reading or judging an object: one family for every kind.

DecodeError: the document is not an object of its kind (an unknown field, a value of the wrong
type); its path is where, as kubectl prints it (`spec.containers[0].resources.limits.cpu`).
The API server answers it with 400 BadRequest (or, for unknown fields under
fieldValidation=Warn/Ignore, a warning; see codec.decode's `unknown` collector).

ValidationError: the object decoded but breaks the API's rules; it carries every FieldError
plus the kind and name, and renders upstream's 422 Invalid Status (`status()`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pykubelet.api.machinery.field import FieldError, messages


class APIError(ValueError):
    """Base of the errors raised while reading an object."""


class DecodeError(APIError):
    """An unknown or ill-typed field, or a document that is no object of its kind."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)


class UnknownFieldError(DecodeError):
    """A field the kind does not have (strict decoding's `unknown field "spec.foo"`)."""

    def __init__(self, path: str) -> None:
        super().__init__(path, "unknown field")


class ValidationError(APIError):
    """One or more field errors, reported together as the API server does (NewInvalid)."""

    def __init__(
        self,
        errors: Iterable[FieldError],
        *,
        kind: str = "Pod",
        name: str = "",
        group: str = "",
    ) -> None:
        self.errors: list[FieldError] = list(errors)
        self.kind = kind
        self.name = name
        self.group = group
        super().__init__(self.message())

    @property
    def qualified_kind(self) -> str:
        """schema.GroupKind.String(): `Pod`, `PodDisruptionBudget.policy`."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    def message(self) -> str:
        head = f'{self.qualified_kind} "{self.name}" is invalid'
        texts = messages(self.errors)
        if not texts:
            return head
        if len(texts) == 1:
            return f"{head}: {texts[0]}"
        return f"{head}: [{', '.join(texts)}]"

    def causes(self) -> list[dict[str, str]]:
        return [err.cause() for err in self.errors]

    def status(self) -> dict[str, Any]:
        """The metav1.Status body of the 422 answer (StatusReasonInvalid)."""
        details: dict[str, Any] = {"name": self.name}
        if self.group:
            details["group"] = self.group
        details["kind"] = self.kind
        details["causes"] = self.causes()
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message(),
            "reason": "Invalid",
            "details": details,
            "code": 422,
        }

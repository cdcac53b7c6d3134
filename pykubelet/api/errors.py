"""Errors of the API layer: each names the field path and the problem, as the API
server's field.Error does (`spec.containers[0].image: Required value`).

The classes live in the machinery (pykubelet.api.machinery) so pysched's decoder raises the
very same types; this module is where pykubelet code names them."""

from __future__ import annotations

from pykubelet.api.machinery.errors import (
    APIError,
    DecodeError,
    UnknownFieldError,
    ValidationError,
)
from pykubelet.api.machinery.field import ErrorType, FieldError

__all__ = [
    "APIError",
    "DecodeError",
    "ErrorType",
    "FieldError",
    "UnknownFieldError",
    "ValidationError",
]

"""API errors as ``metav1.Status`` objects, with upstream's reasons, codes and message
texts (apimachinery's api/errors), so kubectl and client libraries print ours as they print
a real cluster's (``Error from server (NotFound): pods "x" not found``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pykubelet.api.machinery.field import shorten

MAX_FIELD_SHOWN = 1024  # of a field path in a cause (a map key in it may be any size)

# reasons (metav1.StatusReason)
NOT_FOUND = "NotFound"
ALREADY_EXISTS = "AlreadyExists"
CONFLICT = "Conflict"
INVALID = "Invalid"
BAD_REQUEST = "BadRequest"
UNAUTHORIZED = "Unauthorized"
FORBIDDEN = "Forbidden"
GONE = "Gone"
EXPIRED = "Expired"
METHOD_NOT_ALLOWED = "MethodNotAllowed"
REQUEST_ENTITY_TOO_LARGE = "RequestEntityTooLarge"
UNSUPPORTED_MEDIA_TYPE = "UnsupportedMediaType"
NOT_ACCEPTABLE = "NotAcceptable"
TIMEOUT = "Timeout"
TOO_MANY_REQUESTS = "TooManyRequests"
INTERNAL_ERROR = "InternalError"
SERVICE_UNAVAILABLE = "ServiceUnavailable"


class StatusError(Exception):
    """An error the API answers with a Status body and an HTTP code (apierrors.StatusError;
    the client raises its own, pykubelet.client.rest.StatusError, from such a body). Not the
    object model's APIError, which is an object that does not decode or validate."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        list_meta: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details) if details is not None else None
        self.headers = dict(headers) if headers else {}
        self.list_meta = dict(list_meta) if list_meta else {}  # Status.metadata (ListMeta)

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.list_meta),
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:  # StatusReasonUnknown ("") is omitted
            out["reason"] = self.reason
        if self.details is not None:  # upstream's {} too: kubectl reads details.name
            out["details"] = self.details
        out["code"] = self.code
        return out


def qualified(resource: str, group: str) -> str:
    """``pods`` or ``leases.coordination.k8s.io``, as messages name a resource."""
    return f"{resource}.{group}" if group else resource


def _details(resource: str, group: str, name: str) -> dict[str, Any]:
    """metav1.StatusDetails: name, group, kind (the resource), each omitted when empty."""
    d: dict[str, Any] = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    if resource:
        d["kind"] = resource
    return d


def not_found(resource: str, group: str, name: str) -> StatusError:
    return StatusError(404, NOT_FOUND, f'{qualified(resource, group)} "{name}" not found',
                    _details(resource, group, name))


def already_exists(resource: str, group: str, name: str) -> StatusError:
    return StatusError(409, ALREADY_EXISTS,
                    f'{qualified(resource, group)} "{name}" already exists',
                    _details(resource, group, name))


def conflict(resource: str, group: str, name: str, why: str | None = None) -> StatusError:
    why = why or (
        "the object has been modified; please apply your changes to the latest version and "
        "try again"
    )
    target = f'{qualified(resource, group)} "{name}"'
    return StatusError(409, CONFLICT, f"Operation cannot be fulfilled on {target}: {why}",
                    _details(resource, group, name))


def invalid(kind: str, group: str, name: str, causes: Iterable[Mapping[str, str]]) -> StatusError:
    """422: ``Pod "x" is invalid: <field>: <message>`` with one cause per field error."""
    causes = [{**c, "field": shorten(c["field"], MAX_FIELD_SHOWN)} if c.get("field") else c
              for c in causes]
    texts = [f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes]
    body = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    qualified_kind = f"{kind}.{group}" if group else kind
    name = shorten(name)
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [dict(c) for c in causes]
    return StatusError(422, INVALID, f'{qualified_kind} "{name}" is invalid: {body}', details)


def unprocessable(server_message: str) -> StatusError:
    """NewGenericServerResponse(422, ...): a generic message, the reason in one cause (what
    a JSON patch that does not apply gets)."""
    return StatusError(422, INVALID, "the server rejected our request due to an error in our "
                    "request", {"causes": [{"reason": "UnexpectedServerResponse",
                                            "message": server_message}]})


def bad_request(message: str) -> StatusError:
    return StatusError(400, BAD_REQUEST, message)


def unauthorized(message: str = "Unauthorized") -> StatusError:
    return StatusError(401, UNAUTHORIZED, message)


def forbidden(
    user: str, verb: str, resource: str, group: str, namespace: str, name: str = "",
    subresource: str = "", why: str = "",
) -> StatusError:
    res = f"{resource}/{subresource}" if subresource else resource
    scope = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    target = f'{qualified(resource, group)} "{name}"' if name else qualified(resource, group)
    message = (f'{target} is forbidden: User "{user}" cannot {verb} resource "{res}" in API '
               f'group "{group}"{scope}')
    if why:
        message += f": {why}"
    return StatusError(403, FORBIDDEN, message, _details(resource, group, name))


def expired(message: str, list_meta: Mapping[str, Any] | None = None) -> StatusError:
    return StatusError(410, EXPIRED, message, list_meta=list_meta)


def method_not_allowed(verb: str, kind: str) -> StatusError:
    """NewMethodNotSupported."""
    return StatusError(405, METHOD_NOT_ALLOWED,
                    f'{verb} is not supported on resources of kind "{kind}"', {"kind": kind})


def path_not_found() -> StatusError:
    """NewNotFound(GroupResource{}, ""): what an unknown path or resource gets, with the
    empty details upstream always sends."""
    return StatusError(404, NOT_FOUND, "the server could not find the requested resource", {})


def method_not_allowed_here() -> StatusError:
    """A method the route does not serve (go-restful's 405 through
    NewGenericServerResponse): POST to a named object, PUT to a collection."""
    return StatusError(405, METHOD_NOT_ALLOWED,
                    "the server does not allow this method on the requested resource", {})


def too_large(limit: int) -> StatusError:
    return entity_too_large(f"Request entity too large: limit is {limit}")


def entity_too_large(message: str) -> StatusError:
    return StatusError(413, REQUEST_ENTITY_TOO_LARGE, message)


def unsupported_media_type(content_type: str) -> StatusError:
    return StatusError(415, UNSUPPORTED_MEDIA_TYPE,
                    f'the body of the request was in an unknown format - accepted media types '
                    f'include: application/json-patch+json, application/merge-patch+json, '
                    f'application/strategic-merge-patch+json, application/apply-patch+yaml '
                    f'(got "{content_type}")')


def timeout(message: str, retry_after: int = 1) -> StatusError:
    """NewTimeoutError: the message prefixed "Timeout: ", details.retryAfterSeconds (and
    the Retry-After header responsewriters set from it)."""
    return StatusError(504, TIMEOUT, f"Timeout: {message}", {"retryAfterSeconds": retry_after},
                    {"Retry-After": str(retry_after)})


TOO_LARGE_RV = "Too large resource version"


def too_large_resource_version(wanted: int, current: int, retry_after: int = 1) -> StatusError:
    """storage.NewTooLargeResourceVersionError: a timeout whose cause ResourceVersionTooLarge
    tells clients (client-go's IsTooLargeResourceVersion) to relist, not to give up."""
    err = timeout(f"{TOO_LARGE_RV}: {wanted}, current: {current}", retry_after)
    assert err.details is not None
    err.details["causes"] = [{"reason": "ResourceVersionTooLarge", "message": TOO_LARGE_RV}]
    return err


def internal(message: str) -> StatusError:
    return StatusError(500, INTERNAL_ERROR, f"Internal error occurred: {message}",
                    {"causes": [{"message": message}]})


def service_unavailable(message: str) -> StatusError:
    return StatusError(503, SERVICE_UNAVAILABLE, message)


def success(kind: str, name: str, uid: str = "", group: str = "") -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    if uid:
        details["uid"] = uid
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": details}


# field.Error types as their message prefixes name them (for errors that come as text)
_FIELD_REASONS = (
    ("Required value", "FieldValueRequired"),
    ("Invalid value", "FieldValueInvalid"),
    ("Unsupported value", "FieldValueNotSupported"),
    ("Duplicate value", "FieldValueDuplicate"),
    ("Not found", "FieldValueNotFound"),
    ("Forbidden", "FieldValueForbidden"),
    ("Too long", "FieldValueTooLong"),
    ("Too many", "FieldValueTooMany"),
    ("Internal error", "InternalError"),
)


def cause(field_error: Any) -> dict[str, str]:
    """One ``details.causes`` entry from a field error: a structured one (``type``,
    ``field``, ``detail`` attributes, as field.Error) or its ``path: message`` text."""
    if hasattr(field_error, "cause"):  # a field.Error: it knows its cause
        return dict(field_error.cause())
    field = getattr(field_error, "field", None)
    ftype = getattr(field_error, "type", None)
    if field is not None and ftype is not None:
        text = str(field_error)
        message = text[len(field) + 2:] if field and text.startswith(field + ": ") else text
        return {"reason": str(ftype), "message": message, "field": str(field)}
    text = str(field_error)
    path, sep, message = text.partition(": ")
    if not sep or " " in path:
        return {"reason": "FieldValueInvalid", "message": text, "field": ""}
    reason = "FieldValueInvalid"
    for prefix, r in _FIELD_REASONS:
        if message.startswith(prefix):
            reason = r
            break
    return {"reason": reason, "message": message, "field": path}

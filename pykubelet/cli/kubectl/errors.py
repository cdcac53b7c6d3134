"""How pykubectl reports failures: one line on stderr (kubectl's wording for the server's
Status errors) and exit status 1, never a traceback for a user's mistake."""

from __future__ import annotations

import re
from typing import Any

from pykubelet.client.rest import ClientError, StatusError


class CommandError(Exception):
    """A failure to report as is (``error: ...``), with kubectl's exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def usage_error(message: str) -> CommandError:
    return CommandError(f"error: {message}")


def with_source(err: StatusError, verb: str, source: str) -> StatusError:
    """cmdutil.AddSourceToErr: the file an object came from goes into the message."""
    if not source:
        return err
    status = dict(err.status)
    status["message"] = f'error when {verb} "{source}": {err.message}'
    status.setdefault("code", err.code)
    return StatusError(status, err.code)


def enhance_list_error(err: StatusError, subject: str, label_selector: str = "",
                       field_selector: str = "") -> StatusError:
    """cli-runtime's EnhanceListError: a list's 400 or 404 says what was being listed."""
    if err.code not in (400, 404):
        return err
    status = dict(err.status)
    if not label_selector and not field_selector:
        status["message"] = f'Unable to list "{subject}": {err.message}'
    else:
        status["message"] = (f'Unable to find "{subject}" that match label selector '
                             f'"{label_selector}", field selector "{field_selector}": '
                             f"{err.message}")
    status.setdefault("code", err.code)
    return StatusError(status, err.code)


def status_text(err: StatusError) -> str:
    """kubectl's text for a server Status error (checkErr / StandardErrorMessage)."""
    status: dict[str, Any] = err.status
    if err.reason == "Invalid":
        return _invalid_text(status)
    if err.reason == "Unauthorized":
        return f"error: You must be logged in to the server ({err.message})"
    if err.reason:
        return f"Error from server ({err.reason}): {err.message}"
    return f"Error from server: {err.message}"


def _invalid_text(status: dict[str, Any]) -> str:
    details = status.get("details")
    message = str(status.get("message") or "")
    if not details:
        return "The request is invalid" + (f": {message}" if message else "")
    kind, name = details.get("kind") or "", details.get("name") or ""
    causes = details.get("causes") or []
    if kind or name:
        head = f'The {kind} "{name}" is invalid'
    elif message and not causes:
        head = f"The request is invalid: {message}"
    else:
        head = "The request is invalid"
    lines: list[str] = []
    for c in causes:
        line = f"{c.get('field', '')}: {c.get('message', '')}"
        if line not in lines:
            lines.append(line)
    if not lines:
        return head
    if len(lines) == 1:
        return f"{head}: {lines[0]}"
    return f"{head}: \n" + "\n".join(f"* {line}" for line in lines)


def client_text(err: ClientError, server: str) -> str:
    """kubectl's text when the server cannot be reached."""
    text = str(err)
    if "Connection refused" in text or "ConnectionRefused" in text:
        host = re.sub(r"^[a-z]+://", "", server).split("/", 1)[0]
        return (f"The connection to the server {host} was refused - did you specify the "
                "right host or port?")
    reason = text[len(server) + 2:] if text.startswith(server + ": ") else text
    return f"Unable to connect to the server: {reason}"


def error_text(exc: BaseException, server: str = "") -> str:
    """The line kubectl would print for ``exc``."""
    if isinstance(exc, StatusError):
        return status_text(exc)
    if isinstance(exc, ClientError):
        return client_text(exc, server)
    if isinstance(exc, CommandError):
        return str(exc)
    text = str(exc)
    return text if text.startswith("error: ") else f"error: {text}"

"""Server Status errors read as kubectl prints them."""

from __future__ import annotations

from pykubelet.cli.kubectl.errors import error_text, with_source
from pykubelet.client.rest import ClientError, StatusError


def status(reason: str, message: str, code: int, **details: object) -> StatusError:
    body = {"kind": "Status", "status": "Failure", "reason": reason, "message": message,
            "code": code}
    if details:
        body["details"] = details
    return StatusError(body, code)


def test_plain_reasons() -> None:
    assert error_text(status("NotFound", 'pods "x" not found', 404)) == (
        'Error from server (NotFound): pods "x" not found')
    assert error_text(status("", "boom", 500)) == "Error from server: boom"
    assert error_text(status("Unauthorized", "Unauthorized", 401)) == (
        "error: You must be logged in to the server (Unauthorized)")


def test_invalid_uses_the_causes() -> None:
    one = status("Invalid", "ignored", 422, kind="Pod", name="x",
                 causes=[{"field": "metadata.name", "message": "Invalid value: \"X\""}])
    assert error_text(one) == 'The Pod "x" is invalid: metadata.name: Invalid value: "X"'
    two = status("Invalid", "ignored", 422, kind="Pod", name="x",
                 causes=[{"field": "a", "message": "m1"}, {"field": "b", "message": "m2"}])
    assert error_text(two) == 'The Pod "x" is invalid: \n* a: m1\n* b: m2'


def test_source_goes_into_the_message() -> None:
    err = with_source(status("AlreadyExists", 'pods "d" already exists', 409), "creating",
                      "STDIN")
    assert error_text(err) == ('Error from server (AlreadyExists): error when creating "STDIN": '
                               'pods "d" already exists')


def test_unreachable_server() -> None:
    err = ClientError("https://127.0.0.1:1: <conn>: Failed to establish a new connection: "
                      "[Errno 111] Connection refused")
    assert error_text(err, "https://127.0.0.1:1") == (
        "The connection to the server 127.0.0.1:1 was refused - did you specify the right "
        "host or port?")
    assert error_text(ValueError("bad")) == "error: bad"

"""The request deadline: a request that is not long-running ends with a 504 once its time
is up, whatever it waits on (a store that answers slowly or not at all, a lock held), as
kube-apiserver's WithRequestDeadline + WithTimeoutForNonLongRunningRequests do.

The deadline is ``--request-timeout`` (1m0s), shortened by the request's own ``?timeout=``
(a Go duration; 0 or more than the maximum leave the maximum; a malformed one is a 400).
Watches, proxies and the streaming subresources (exec, attach, log, port-forward) are
long-running and get none (upstream's BasicLongRunningRequestCheck).

What timed out is not undone: a write already handed to the store may still commit after
the 504 (upstream's "post-timeout activity"), so a client retries a create as a
get-or-create. Writes answer with the finisher's words ("request did not complete within
requested timeout - context deadline exceeded"), other requests with the timeout filter's
("request did not complete within the allotted timeout").
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from typing import TypeVar

from pykubelet.api.machinery.duration import parse_duration
from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver.requestinfo import RequestInfo

T = TypeVar("T")

DEFAULT_REQUEST_TIMEOUT = 60.0  # kube-apiserver's --request-timeout
LONG_RUNNING_VERBS = frozenset({"watch", "proxy"})
LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward"})
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
# handlers/finisher.go and server/filters/timeout.go
WRITE_TIMEOUT_MESSAGE = ("Timeout: request did not complete within requested timeout - "
                         "context deadline exceeded")
TIMEOUT_MESSAGE = "Timeout: request did not complete within the allotted timeout"
INVALID_TIMEOUT = "invalid timeout specified in the request URL"


def is_long_running(info: RequestInfo) -> bool:
    return info.verb in LONG_RUNNING_VERBS or info.subresource in LONG_RUNNING_SUBRESOURCES


def request_deadline(query: Mapping[str, str], maximum: float) -> float:
    """Seconds this request may take: ``?timeout=`` when it is shorter than ``maximum`` and
    more than 0, else ``maximum``."""
    value = query.get("timeout", "")
    if not value:
        return maximum
    try:
        asked = parse_duration(value)
    except ValueError as exc:
        raise errors.bad_request(f"{INVALID_TIMEOUT} - {exc}") from None
    return asked if 0 < asked < maximum else maximum


def timeout_error(verb: str) -> errors.StatusError:
    """apierrors.NewTimeoutError(msg, 0): 504, reason Timeout, empty details, no
    Retry-After."""
    message = WRITE_TIMEOUT_MESSAGE if verb in WRITE_VERBS else TIMEOUT_MESSAGE
    return errors.StatusError(504, errors.TIMEOUT, message, {})


async def within_deadline(work: Awaitable[T], seconds: float, verb: str) -> T:
    """``work``'s result, or the 504 once ``seconds`` have passed (``work`` is cancelled;
    what it handed to the store goes on there)."""
    deadline = asyncio.timeout(seconds)
    try:
        async with deadline:
            return await work
    except TimeoutError:
        if deadline.expired():
            raise timeout_error(verb) from None
        raise  # a timeout of the work's own, not the request's

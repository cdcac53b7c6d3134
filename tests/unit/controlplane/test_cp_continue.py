"""Paged lists as upstream pages them: the continue token is stateless, upstream's encoded
form (base64url of ``{"v":"meta.k8s.io/v1","rv":N,"start":"<key after the last one,
relative to the list's prefix>"}``), so each page is read at revision N from the request's
own resource, namespace and selectors, and the server keeps nothing per token. Before
(issue 24): tokens named server-side snapshots, so a Secrets token used on ``configmaps``
answered a ConfigMapList holding a Secret, each snapshot held memory for 300 s, and
``limit=-1`` returned N-1 items then a 500."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from pykubelet.controlplane.server import ControlPlane, Options

Call = Callable[..., Awaitable[tuple[int, dict[str, Any]]]]


@asynccontextmanager
async def control_plane(root: Path, **options: Any) -> AsyncIterator[tuple[ControlPlane, Call]]:
    cp = ControlPlane(Options(root=root, listen="127.0.0.1:0", scheduler=False,
                              controllers=False, **options))
    await cp.start()
    assert cp.tokens is not None
    headers = {"Authorization": f"Bearer {cp.tokens.admin}"}
    try:
        async with aiohttp.ClientSession(headers=headers) as s:
            async def call(method: str, path: str, body: Any = None,
                           **query: str) -> tuple[int, dict[str, Any]]:
                async with s.request(method, f"{cp.local_url}{path}", json=body,
                                     params=query, ssl=False) as r:
                    return r.status, await r.json()

            yield cp, call
    finally:
        await cp.stop()


def decode(token: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    return out


def encode(doc: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")


def names(body: dict[str, Any]) -> list[str]:
    return [i["metadata"]["name"] for i in body["items"]]


async def make(call: Call, resource: str, ns: str, name: str, **extra: Any) -> None:
    kind = {"secrets": "Secret", "configmaps": "ConfigMap"}[resource]
    code, body = await call("POST", f"/api/v1/namespaces/{ns}/{resource}",
                            {"apiVersion": "v1", "kind": kind,
                             "metadata": {"name": name, **extra}})
    assert code == 201, body


def test_a_token_is_upstreams_stateless_form_and_reads_only_the_request(
        tmp_path: Path) -> None:
    async def main() -> None:
        async with control_plane(tmp_path) as (cp, call):
            for n in ("s1", "s2", "s3"):
                await make(call, "secrets", "default", n)
            for n in ("c1", "c2"):
                await make(call, "configmaps", "default", n)
            code, page = await call("GET", "/api/v1/namespaces/default/secrets", limit="1")
            assert (code, names(page)) == (200, ["s1"])
            token = page["metadata"]["continue"]
            rv = int(page["metadata"]["resourceVersion"])
            assert decode(token) == {"v": "meta.k8s.io/v1", "rv": rv, "start": "s1\x00"}
            assert page["metadata"]["remainingItemCount"] == 2
            assert not hasattr(cp.registry, "continues")  # nothing kept per token
            # the Secrets token on configmaps reads configmaps (after "s1\0": none), never
            # a Secret
            code, other = await call("GET", "/api/v1/namespaces/default/configmaps",
                                     limit="5", **{"continue": token})
            assert code == 200, other
            assert other["kind"] == "ConfigMapList"
            assert all(i["kind"] == "ConfigMap" for i in other["items"])
            assert "s2" not in json.dumps(other)
            # an all-namespaces token ("default/s1\0") cannot continue one namespace's list
            code, page = await call("GET", "/api/v1/secrets", limit="1")
            assert decode(page["metadata"]["continue"])["start"] == "default/s1\x00"
            code, refused = await call("GET", "/api/v1/namespaces/default/configmaps",
                                       **{"continue": page["metadata"]["continue"]})
            assert (code, refused["reason"]) == (400, "BadRequest")
            assert refused["message"].startswith("invalid continue token: continue key is "
                                                 "not valid")
            # path traversal out of the list's prefix, garbage, a token without rv
            for bad in (encode({"v": "meta.k8s.io/v1", "rv": rv, "start": "../secrets/x"}),
                        "%%%", encode({"v": "meta.k8s.io/v1", "rv": 0, "start": "a"}),
                        encode({"v": "v9", "rv": rv, "start": "a"})):
                code, refused = await call("GET", "/api/v1/namespaces/default/configmaps",
                                           **{"continue": bad})
                assert code == 400, (bad, refused)

    asyncio.run(main())


def test_pages_are_read_at_the_tokens_revision_with_the_requests_selectors(
        tmp_path: Path) -> None:
    async def main() -> None:
        async with control_plane(tmp_path) as (_cp, call):
            for n in ("a", "b", "c", "d"):
                await make(call, "configmaps", "default", n, labels={"app": "x"})
            await make(call, "configmaps", "default", "bb")  # no label
            base = "/api/v1/namespaces/default/configmaps"
            code, page = await call("GET", base, limit="1", labelSelector="app=x")
            assert names(page) == ["a"]
            token, rv = page["metadata"]["continue"], page["metadata"]["resourceVersion"]
            # later writes are not seen by the continuation: it reads at the token's rv
            code, _ = await call("DELETE", f"{base}/b")
            assert code == 200
            await make(call, "configmaps", "default", "aa", labels={"app": "x"})
            code, cm = await call("GET", f"{base}/c")
            cm["data"] = {"k": "v"}
            code, _ = await call("PUT", f"{base}/c", cm)
            assert code == 200
            code, page = await call("GET", base, limit="2", labelSelector="app=x",
                                    **{"continue": token})
            assert code == 200, page
            assert names(page) == ["b", "c"]
            assert "data" not in page["items"][1]
            assert page["metadata"]["resourceVersion"] == rv
            code, page = await call("GET", base, labelSelector="app=x",
                                    **{"continue": page["metadata"]["continue"]})
            assert names(page) == ["d"]
            assert "continue" not in page["metadata"]

    asyncio.run(main())


def test_a_token_outlives_the_server_that_made_it(tmp_path: Path) -> None:
    async def main() -> None:
        async with control_plane(tmp_path) as (_cp, call):
            for n in ("a", "b", "c"):
                await make(call, "configmaps", "default", n)
            _, page = await call("GET", "/api/v1/namespaces/default/configmaps", limit="1")
        async with control_plane(tmp_path) as (_cp, call):
            code, page = await call("GET", "/api/v1/namespaces/default/configmaps",
                                    **{"continue": page["metadata"]["continue"]})
            assert (code, names(page)) == (200, ["b", "c"])

    asyncio.run(main())


def test_a_non_positive_limit_is_no_limit(tmp_path: Path) -> None:
    async def main() -> None:
        async with control_plane(tmp_path) as (_cp, call):
            for n in ("a", "b", "c"):
                await make(call, "configmaps", "default", n)
            for limit in ("-1", "0", "-100"):
                code, page = await call("GET", "/api/v1/namespaces/default/configmaps",
                                        limit=limit)
                assert (code, names(page)) == (200, ["a", "b", "c"]), limit
                assert "continue" not in page["metadata"]

    asyncio.run(main())


def test_a_token_older_than_the_history_is_expired_with_one_to_go_on(tmp_path: Path) -> None:
    """410 Expired with upstream's message, and a token that continues (inconsistently) at
    the latest revision, as kube-apiserver answers a continue whose revision was compacted."""
    async def main() -> None:
        async with control_plane(tmp_path, watch_cache_size=5) as (_cp, call):
            for n in ("a", "b", "c"):
                await make(call, "configmaps", "default", n)
            base = "/api/v1/namespaces/default/configmaps"
            _, page = await call("GET", base, limit="1")
            for i in range(8):
                await make(call, "configmaps", "default", f"z{i}")
            code, gone = await call("GET", base, limit="2",
                                    **{"continue": page["metadata"]["continue"]})
            assert (code, gone["reason"]) == (410, "Expired")
            assert gone["message"].startswith("The provided continue parameter is too old to "
                                              "display a consistent list result.")
            fresh = gone["metadata"]["continue"]
            assert decode(fresh) == {"v": "meta.k8s.io/v1", "rv": -1, "start": "a\x00"}
            code, page = await call("GET", base, limit="2", **{"continue": fresh})
            assert (code, names(page)) == (200, ["b", "c"])

    asyncio.run(main())

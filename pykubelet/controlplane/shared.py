"""One CA and one set of tokens for every control plane over one etcd, as k3s servers
share their bootstrap data through the datastore.

The first control plane to start records its CA (certificate and key) and its tokens
(admin, join, and every node's) under the store key ``/pykubelet/bootstrap`` (outside
``/registry/``: no API object); the next ones adopt them into their own root before they
serve, so one kubeconfig, one join command and one node token are good on every API server,
and an agent may use any of them. A node token made on one server is added to the record
(a transaction on its revision) and picked up by the others within ``REFRESH_S``.

Whoever can read etcd owns the cluster already (Secrets are stored there in the clear, as
upstream without encryption at rest), so the record is kept as the Secrets are. A root
that already has a different CA is refused rather than overwritten: the nodes that trust
it would be cut off.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

from pykubelet.controlplane.pki import PKI, Tokens
from pykubelet.controlplane.serviceaccount import keys as sa_keys
from pykubelet.controlplane.storage import (
    ConflictError,
    KeyExistsError,
    KeyValue,
    Storage,
    StorageError,
)

log = logging.getLogger(__name__)

BOOTSTRAP_KEY = "/pykubelet/bootstrap"
REFRESH_S = 1.0


class SharedCredentialsError(StorageError):
    """This root's credentials and the store's disagree; the message says what to do."""


def _record(pki: PKI, tokens: Tokens) -> bytes:
    return json.dumps({"caCert": pki.ca_pem.decode(),
                       "caKey": pki.ca_key_path.read_text(),
                       "admin": tokens.admin, "join": tokens.join,
                       "nodes": dict(tokens.nodes)}, sort_keys=True).encode()


async def adopt(storage: Storage, pki: PKI, tokens_path: Path) -> KeyValue:
    """Make this root's CA and tokens the store's (recording ours if we are first);
    returns the record as stored."""
    had_ca = pki.ca_cert_path.exists()
    kv = await storage.get(BOOTSTRAP_KEY)
    if kv is None:
        pki.ensure_ca()
        try:
            kv = await storage.create(BOOTSTRAP_KEY, _record(pki, Tokens(tokens_path)))
            log.info("recorded this control plane's CA and tokens in the store")
            return kv
        except KeyExistsError:  # another control plane was first by a hair: take theirs
            kv = await storage.get(BOOTSTRAP_KEY)
            if kv is None:
                raise SharedCredentialsError("the store's bootstrap record vanished") from None
    data: dict[str, Any] = json.loads(kv.value)
    if had_ca and pki.ca_pem.decode() != data["caCert"]:
        # nodes and clients may trust the CA this root made before: do not overwrite it
        raise SharedCredentialsError(
            f"{pki.ca_cert_path}: this control plane's CA is not the one the other control "
            f"planes over this store use; to join them, remove {pki.dir} and "
            f"{tokens_path} (or start with a new --root)")
    if not had_ca or pki.ca_pem.decode() != data["caCert"]:
        pki.install_ca(data["caCert"].encode(), data["caKey"].encode())
        log.info("adopted the CA of the control planes over this store")
    tokens = Tokens(tokens_path)
    tokens.admin, tokens.join = data["admin"], data["join"]
    tokens.nodes.update(data.get("nodes") or {})
    tokens.save()
    return kv


async def publish_node_token(storage: Storage, node: str, token: str) -> None:
    """Add ``node``'s token to the record (retrying on a concurrent change)."""
    for _ in range(20):
        kv = await storage.get(BOOTSTRAP_KEY)
        if kv is None:
            return
        data = json.loads(kv.value)
        if data.get("nodes", {}).get(node) == token:
            return
        data.setdefault("nodes", {})[node] = token
        try:
            await storage.update(BOOTSTRAP_KEY, json.dumps(data, sort_keys=True).encode(),
                                 kv.mod_revision)
            return
        except ConflictError:
            continue
    log.error("could not record node %s's token in the store", node)


async def follow_node_tokens(storage: Storage, tokens: Tokens, seen: int) -> None:
    """Keep ``tokens.nodes`` in step with the record (nodes joined through other servers)."""
    while True:
        await asyncio.sleep(REFRESH_S)
        try:
            kv = await storage.get(BOOTSTRAP_KEY)
        except StorageError as exc:
            log.debug("bootstrap record: %s", exc)
            continue
        if kv is None or kv.mod_revision == seen:
            continue
        seen = kv.mod_revision
        nodes = json.loads(kv.value).get("nodes") or {}
        if any(tokens.nodes.get(n) != t for n, t in nodes.items()):
            tokens.merge_nodes(nodes)


async def adopt_sa_key(storage: Storage, pki_dir: Path) -> bytes:
    """One service-account signing key for every control plane over the store, kept in
    the same record as the CA (``saKey``): the store's if it has one, else ours, added
    (a record written before there were service accounts gets it then)."""
    ours = sa_keys.ensure_key(pki_dir)
    for _ in range(20):
        kv = await storage.get(BOOTSTRAP_KEY)
        if kv is None:
            return ours
        data = json.loads(kv.value)
        theirs = data.get("saKey")
        if theirs:
            if theirs.encode() != ours:
                sa_keys.install_key(pki_dir, theirs.encode())
                log.info("adopted the service-account key of the control planes over "
                         "this store")
            return str(theirs).encode()
        data["saKey"] = ours.decode()
        try:
            await storage.update(BOOTSTRAP_KEY, json.dumps(data, sort_keys=True).encode(),
                                 kv.mod_revision)
            return ours
        except ConflictError:
            continue
    raise SharedCredentialsError("could not record the service-account key in the store")

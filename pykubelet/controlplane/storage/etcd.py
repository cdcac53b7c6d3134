"""The store on etcd v3, for control planes that outgrow one machine (as kube-apiserver's
etcd3 storage does), through stubs generated from etcd's v3 API (proto/etcd/).

Keys are the seam's keys under an optional prefix. Every write is one transaction whose
compare carries the precondition: a create compares the key's mod revision with 0 (absent),
an update or a conditional delete with the revision the caller read; when the compare fails
the transaction reads the key instead, so the caller learns NotFound or Conflict with the
revision it found, in the same round trip. etcd's revision is the resourceVersion.

Lists read the prefix in pages of ``page_size`` keys, every page at the revision of the
first, so the whole list is one consistent cut however long it is. Watches open etcd's
watch from a revision with ``prev_kv`` (the seam's events carry the previous value) and
``progress_notify``: etcd's periodic progress notification (a response without events,
``--experimental-watch-progress-notify-interval``) becomes a :class:`Progress` batch,
which the watch cache turns into bookmarks. A watch from a
compacted revision is cancelled by etcd with the compaction's revision: CompactedError,
which the API answers with 410 Gone. Objects under a prefix in ``key_ttls`` (events,
kube-apiserver's ``--event-ttl``) are written with a lease of that many seconds, one lease
shared by all writes of a minute as kube-apiserver's lease manager does, so etcd itself
removes them when they expire.

Several API servers may share one etcd: compaction is coordinated through the key
``compact_rev_key`` as kube-apiserver does (only the server whose transaction bumps it
compacts). With several endpoints, a call that cannot reach its member moves to the next
one; a watch broken that way resumes there from its last revision.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn, TypeVar

import grpc
import grpc.aio

from pykubelet._proto.etcd.etcdserverpb import rpc_pb2 as pb
from pykubelet._proto.etcd.etcdserverpb import rpc_pb2_grpc as pb_grpc
from pykubelet._proto.etcd.mvccpb import kv_pb2 as mvcc
from pykubelet.controlplane.storage.interface import (
    CompactedError,
    ConflictError,
    Event,
    KeyExistsError,
    KeyValue,
    NotFoundError,
    Progress,
    RequestTooLargeError,
    StorageError,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

COMPACT_REV_KEY = "compact_rev_key"  # kube-apiserver's key for coordinating compaction
LEASE_REUSE_S = 60  # kube-apiserver's leaseReuseDurationSeconds
DEFAULT_PAGE_SIZE = 500
# A unary call's deadline: a member cut off from its peers (or from us) answers nothing,
# and a call that times out moves to the next member, so this bounds how long a write
# waits on a partitioned member (etcd's own request timeout is 5 s + 2 election timeouts)
CALL_TIMEOUT_S = 5.0
# gRPC keepalive on the channel (only while calls are open, as etcd permits by default):
# a dead TCP peer is found within KEEPALIVE_TIME + KEEPALIVE_TIMEOUT, which breaks the
# watch so it resumes on the next member; etcd refuses pings closer than 5 s apart
KEEPALIVE_TIME_MS = 6_000
KEEPALIVE_TIMEOUT_MS = 3_000
# clientv3.WithRequireLeader, which kube-apiserver's watches carry: a member that has lost
# its leader (cut off from its peers) ends the watch instead of keeping it silently open,
# so the watch moves to a member that still hears the cluster
REQUIRE_LEADER = (("hasleader", "true"),)
_COMPACTED_MESSAGE = "required revision has been compacted"
_TOO_LARGE_MESSAGE = "request is too large"  # etcd's ErrRequestTooLarge


def prefix_end(prefix: bytes) -> bytes:
    """The end of etcd's range holding every key that starts with ``prefix``."""
    end = bytearray(prefix)
    while end:
        if end[-1] < 0xFF:
            end[-1] += 1
            return bytes(end)
        end.pop()
    return b"\0"  # every key


@dataclass(frozen=True)
class EtcdConfig:
    """Where etcd is and how to reach it (kube-apiserver's ``--etcd-*`` flags)."""

    endpoints: list[str]  # "https://10.0.0.1:2379" or "http://127.0.0.1:2379"
    prefix: str = ""
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    key_ttls: dict[str, int] = field(default_factory=dict)  # key prefix -> lease seconds
    lease_reuse_s: int = LEASE_REUSE_S  # kube-apiserver's --lease-reuse-duration-seconds


def _target(endpoint: str) -> tuple[str, bool]:
    """``scheme://host:port`` -> (gRPC target, whether TLS)."""
    scheme, sep, rest = endpoint.partition("://")
    if not sep:
        return endpoint, False
    if scheme not in ("http", "https"):
        raise ValueError(f"etcd endpoint {endpoint!r}: expected http:// or https://")
    return rest.rstrip("/"), scheme == "https"


class EtcdStorage:
    """A :class:`~pykubelet.controlplane.storage.interface.Storage` on an etcd cluster."""

    def __init__(self, config: EtcdConfig, *, page_size: int = DEFAULT_PAGE_SIZE) -> None:
        if not config.endpoints:
            raise ValueError("etcd: at least one endpoint is needed")
        self.config = config
        self.path = ",".join(config.endpoints)  # what logs name the store by
        self.page_size = page_size
        self._prefix = config.prefix.encode()
        self._range = (self._prefix + b"/", prefix_end(self._prefix + b"/"))
        self._targets = [_target(e) for e in config.endpoints]
        self._current = 0  # index of the endpoint in use
        self._channel: grpc.aio.Channel | None = None
        self._retired: list[grpc.aio.Channel] = []
        self._kv: pb_grpc.KVStub | None = None
        self._watch: pb_grpc.WatchStub | None = None
        self._lease: pb_grpc.LeaseStub | None = None
        self._rev = 0
        self._compacted = 0
        self._leases: dict[int, tuple[int, float]] = {}  # ttl -> (lease id, granted at)
        self._lease_lock = asyncio.Lock()

    # ------------------------------------------------------------------ connection
    def _credentials(self) -> grpc.ChannelCredentials:
        cfg = self.config
        ca = cfg.ca_file.read_bytes() if cfg.ca_file else None
        key = cfg.key_file.read_bytes() if cfg.key_file else None
        cert = cfg.cert_file.read_bytes() if cfg.cert_file else None
        return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                            certificate_chain=cert)

    def _connect(self) -> None:
        target, tls = self._targets[self._current]
        options = [("grpc.max_receive_message_length", 64 << 20),
                   ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
                   ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS)]
        if tls:
            self._channel = grpc.aio.secure_channel(target, self._credentials(), options)
        else:
            self._channel = grpc.aio.insecure_channel(target, options)
        # the generated stubs are untyped; their calls answer the typed messages
        self._kv = pb_grpc.KVStub(self._channel)  # type: ignore[no-untyped-call]
        self._watch = pb_grpc.WatchStub(self._channel)  # type: ignore[no-untyped-call]
        self._lease = pb_grpc.LeaseStub(self._channel)  # type: ignore[no-untyped-call]

    async def _next_endpoint(self, failed: int) -> None:
        """Move to the next endpoint (once per failure, however many callers saw it)."""
        if failed != self._current or len(self._targets) == 1:
            return
        old = self._channel
        self._current = (self._current + 1) % len(self._targets)
        log.warning("etcd %s unreachable; using %s", self.config.endpoints[failed],
                    self.config.endpoints[self._current])
        self._connect()
        if old is not None:  # closing it now would cancel calls in flight: later
            self._retired.append(old)
            if len(self._retired) > 4:
                await self._retired.pop(0).close(None)

    async def _call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """One RPC, moved to the next member while members are unreachable. A write is
        never applied twice (each is a transaction whose compare fails the second time),
        but one that did commit before its answer was lost is then reported as a conflict
        (or KeyExists) rather than a success, which the client retries as for any conflict."""
        for attempt in range(2 * len(self._targets)):
            used = self._current
            try:
                return await fn()
            except grpc.aio.AioRpcError as exc:
                if exc.code() == grpc.StatusCode.OUT_OF_RANGE and (
                        _COMPACTED_MESSAGE in (exc.details() or "")):
                    raise CompactedError(0, self._compacted) from None
                if _TOO_LARGE_MESSAGE in (exc.details() or ""):
                    raise RequestTooLargeError() from None
                if exc.code() not in (grpc.StatusCode.UNAVAILABLE,
                                      grpc.StatusCode.DEADLINE_EXCEEDED):
                    raise StorageError(f"etcd: {exc.code().name}: {exc.details()}") from None
                if attempt == 2 * len(self._targets) - 1:
                    raise StorageError(f"etcd unreachable: {exc.details()}") from None
                await self._next_endpoint(used)
                await asyncio.sleep(0.1 * attempt)
        raise StorageError("etcd unreachable")  # not reached

    def _seen(self, header: pb.ResponseHeader) -> None:
        self._rev = max(self._rev, header.revision)

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        self._connect()
        # the revision, and the compaction other servers (or an earlier run) recorded
        key = self._prefix + COMPACT_REV_KEY.encode()
        resp = await self._call(lambda: self._stub_kv().Range(
            pb.RangeRequest(key=key), timeout=CALL_TIMEOUT_S))
        self._seen(resp.header)
        if resp.kvs:
            with contextlib.suppress(ValueError):
                self._compacted = int(resp.kvs[0].value)
        log.info("store etcd %s at revision %d (compacted up to %d)", self.path, self._rev,
                 self._compacted)

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close(None)
            self._channel = None
        for old in self._retired:
            await old.close(None)
        self._retired.clear()

    def _stub_kv(self) -> pb_grpc.KVStub:
        if self._kv is None:
            raise StorageError("store is not started")
        return self._kv

    # ------------------------------------------------------------------ reads
    def current_revision(self) -> int:
        return self._rev

    def compacted_revision(self) -> int:
        return self._compacted

    def _key(self, key: str) -> bytes:
        return self._prefix + key.encode()

    def _kv_of(self, kv: mvcc.KeyValue) -> KeyValue:
        return KeyValue(kv.key[len(self._prefix):].decode(), kv.value, kv.create_revision,
                        kv.mod_revision)

    async def get(self, key: str) -> KeyValue | None:
        resp = await self._call(lambda: self._stub_kv().Range(
            pb.RangeRequest(key=self._key(key)), timeout=CALL_TIMEOUT_S))
        self._seen(resp.header)
        return self._kv_of(resp.kvs[0]) if resp.kvs else None

    async def list_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        for _ in range(5):
            try:
                return await self._list_pages(prefix)
            except CompactedError:  # compacted between two pages: list again, at a new cut
                continue
        return await self._list_pages(prefix)

    async def _list_pages(self, prefix: str) -> tuple[list[KeyValue], int]:
        start = self._key(prefix)
        end = prefix_end(start)
        items: list[KeyValue] = []
        rev = 0
        key = start
        while True:
            req = pb.RangeRequest(key=key, range_end=end, limit=self.page_size, revision=rev)
            resp = await self._call(lambda r=req: self._stub_kv().Range(  # type: ignore[misc]
                r, timeout=CALL_TIMEOUT_S))
            self._seen(resp.header)
            if not rev:
                rev = resp.header.revision  # every later page at the first page's revision
            items.extend(self._kv_of(kv) for kv in resp.kvs)
            if not resp.more or not resp.kvs:
                return items, rev
            key = resp.kvs[-1].key + b"\0"

    async def history(self, from_revision: int) -> list[Event]:
        if from_revision <= self._compacted:
            raise CompactedError(from_revision, self._compacted)
        head = await self._call(lambda: self._stub_kv().Range(
            pb.RangeRequest(key=self._prefix + COMPACT_REV_KEY.encode(), count_only=True),
            timeout=CALL_TIMEOUT_S))
        self._seen(head.header)
        target = head.header.revision
        out: list[Event] = []
        if from_revision > target:
            return out
        # Every revision up to ``target`` is some write somewhere in the keyspace, so a watch
        # of the whole keyspace reaches ``target`` with an event. (A requested progress
        # notification would be quicker to ask for, but before etcd 3.4.24 it is not
        # ordered with the events still on their way: etcd-io/etcd#15220.)
        async for batch in self.watch(from_revision, whole_keyspace=True):
            out.extend(e for e in batch if e.kv.mod_revision <= target)
            if isinstance(batch, Progress) and batch.revision >= target:
                return out
            if batch and batch[-1].kv.mod_revision >= target:
                return out
        return out

    # ------------------------------------------------------------------ writes
    async def _lease_for(self, key: str) -> int:
        ttl = next((t for p, t in self.config.key_ttls.items() if key.startswith(p)), 0)
        if not ttl:
            return 0
        async with self._lease_lock:
            now = time.monotonic()
            held = self._leases.get(ttl)
            reuse = self.config.lease_reuse_s
            if held is not None and now - held[1] < reuse:
                return held[0]
            if self._lease is None:
                raise StorageError("store is not started")
            resp = await self._call(lambda: self._lease.LeaseGrant(  # type: ignore[union-attr]
                pb.LeaseGrantRequest(TTL=ttl + reuse), timeout=CALL_TIMEOUT_S))
            self._leases[ttl] = (resp.ID, now)
            return int(resp.ID)

    async def _txn(self, req: pb.TxnRequest) -> pb.TxnResponse:
        resp: pb.TxnResponse = await self._call(
            lambda: self._stub_kv().Txn(req, timeout=CALL_TIMEOUT_S))
        self._seen(resp.header)
        return resp

    def _read_op(self, key: bytes) -> pb.RequestOp:
        return pb.RequestOp(request_range=pb.RangeRequest(key=key))

    @staticmethod
    def _mod_is(key: bytes, revision: int) -> pb.Compare:
        return pb.Compare(result=pb.Compare.EQUAL, target=pb.Compare.MOD, key=key,
                          mod_revision=revision)

    def _found(self, resp: pb.TxnResponse) -> mvcc.KeyValue | None:
        kvs = resp.responses[0].response_range.kvs if resp.responses else []
        return kvs[0] if kvs else None

    def _refused(self, resp: pb.TxnResponse, key: str, expected_revision: int | None) -> NoReturn:
        """A guarded update or delete that etcd did not apply: the key is gone (NotFound), or
        it moved past ``expected_revision`` (Conflict); the failure branch read it."""
        cur = self._found(resp)
        if cur is None:
            raise NotFoundError(key)
        assert expected_revision is not None  # unguarded writes of a present key succeed
        raise ConflictError(key, expected_revision, cur.mod_revision)

    async def create(self, key: str, value: bytes) -> KeyValue:
        k = self._key(key)
        lease = await self._lease_for(key)
        resp = await self._txn(pb.TxnRequest(
            compare=[self._mod_is(k, 0)],
            success=[pb.RequestOp(request_put=pb.PutRequest(key=k, value=value, lease=lease))],
        ))
        if not resp.succeeded:
            raise KeyExistsError(key)
        rev = resp.header.revision
        return KeyValue(key, value, rev, rev)

    async def update(self, key: str, value: bytes, expected_revision: int) -> KeyValue:
        k = self._key(key)
        lease = await self._lease_for(key)
        resp = await self._txn(pb.TxnRequest(
            compare=[self._mod_is(k, expected_revision)],
            success=[pb.RequestOp(request_put=pb.PutRequest(key=k, value=value, lease=lease,
                                                            prev_kv=True))],
            failure=[self._read_op(k)],
        ))
        if not resp.succeeded:
            self._refused(resp, key, expected_revision)
        prev = resp.responses[0].response_put.prev_kv
        return KeyValue(key, value, prev.create_revision, resp.header.revision)

    async def delete(self, key: str, expected_revision: int | None = None) -> KeyValue:
        k = self._key(key)
        compare = [] if expected_revision is None else [self._mod_is(k, expected_revision)]
        resp = await self._txn(pb.TxnRequest(
            compare=compare,
            success=[pb.RequestOp(request_delete_range=pb.DeleteRangeRequest(key=k,
                                                                              prev_kv=True))],
            failure=[self._read_op(k)],
        ))
        if not resp.succeeded:
            self._refused(resp, key, expected_revision)
        gone = resp.responses[0].response_delete_range
        if not gone.prev_kvs:
            raise NotFoundError(key)
        prev = gone.prev_kvs[0]
        return KeyValue(key, prev.value, prev.create_revision, resp.header.revision)

    async def compact(self, revision: int) -> None:
        """Record the compaction in ``compact_rev_key`` (a transaction on its version, so of
        several API servers only one compacts a given round), then compact etcd."""
        revision = min(revision, self._rev)
        if revision <= self._compacted:
            return
        key = self._prefix + COMPACT_REV_KEY.encode()
        cur = await self._call(lambda: self._stub_kv().Range(
            pb.RangeRequest(key=key), timeout=CALL_TIMEOUT_S))
        version = cur.kvs[0].version if cur.kvs else 0
        resp = await self._txn(pb.TxnRequest(
            compare=[pb.Compare(result=pb.Compare.EQUAL, target=pb.Compare.VERSION, key=key,
                                version=version)],
            success=[pb.RequestOp(request_put=pb.PutRequest(key=key,
                                                            value=str(revision).encode()))],
        ))
        if resp.succeeded:
            try:
                await self._call(lambda: self._stub_kv().Compact(
                    pb.CompactionRequest(revision=revision), timeout=60.0))
            except CompactedError:
                pass  # someone compacted further already
        self._compacted = max(self._compacted, revision)

    async def checkpoint(self) -> None:
        """Nothing to fold back: etcd's backend is its own (defragmentation is an
        operator's decision, as upstream)."""

    # ------------------------------------------------------------------ watch
    def _event(self, ev: mvcc.Event) -> Event:
        kv = self._kv_of(ev.kv)
        prev = self._kv_of(ev.prev_kv) if ev.HasField("prev_kv") and ev.prev_kv.key else None
        if ev.type == mvcc.Event.DELETE:
            value = prev.value if prev is not None else b""
            create = prev.create_revision if prev is not None else 0
            return Event(KeyValue(kv.key, value, create, kv.mod_revision), prev, deleted=True)
        if ev.kv.version == 1:
            prev = None  # a creation (etcd may still carry the tombstoned value)
        elif prev is None:  # an update whose previous value is compacted away
            prev = KeyValue(kv.key, b"", kv.create_revision, 0)
        return Event(kv, prev)

    async def watch(self, from_revision: int, *,
                    whole_keyspace: bool = False) -> AsyncIterator[list[Event]]:
        """Every write under the store's range (or, for ``history``, anywhere) from
        ``from_revision``; a response without events is a :class:`Progress`."""
        key, end = (b"\0", b"\0") if whole_keyspace else self._range
        next_rev = from_revision
        failures = 0
        while True:
            used = self._current
            requests: asyncio.Queue[pb.WatchRequest | None] = asyncio.Queue()
            requests.put_nowait(pb.WatchRequest(create_request=pb.WatchCreateRequest(
                key=key, range_end=end, start_revision=next_rev,
                progress_notify=True, prev_kv=True)))

            async def send(q: asyncio.Queue[pb.WatchRequest | None] = requests
                           ) -> AsyncIterator[pb.WatchRequest]:
                while True:
                    item = await q.get()
                    if item is None:
                        return
                    yield item

            if self._watch is None:
                raise StorageError("store is not started")
            call = self._watch.Watch(send(), metadata=REQUIRE_LEADER)
            # responses are read by a task, and all those waiting are taken at once: a burst
            # of writes (one response per revision) reaches the watch cache as one batch
            inbox: asyncio.Queue[pb.WatchResponse | BaseException | None] = asyncio.Queue()
            reader = asyncio.create_task(_read_into(call, inbox))
            try:
                while True:
                    got = [await inbox.get()]
                    while not inbox.empty():
                        got.append(inbox.get_nowait())
                    pending: list[Event] = []
                    for resp in got:
                        if resp is None or isinstance(resp, BaseException):
                            if pending:
                                yield pending
                            if resp is None:
                                raise StorageError("etcd ended the watch")
                            raise resp
                        failures = 0
                        if resp.canceled:
                            if resp.compact_revision:
                                self._compacted = max(self._compacted,
                                                      resp.compact_revision - 1)
                                raise CompactedError(next_rev, resp.compact_revision - 1)
                            raise StorageError(
                                f"etcd cancelled the watch: {resp.cancel_reason}")
                        if resp.created:
                            continue
                        self._seen(resp.header)
                        if not resp.events:
                            # etcd's periodic progress notification (sent after the events)
                            if resp.header.revision >= next_rev - 1:
                                if pending:
                                    yield pending
                                    pending = []
                                yield Progress(resp.header.revision)
                            continue
                        mine = [self._event(e) for e in resp.events
                                if e.kv.key.startswith(self._range[0])]
                        next_rev = resp.events[-1].kv.mod_revision + 1
                        if not mine:  # (the whole keyspace: someone else's keys)
                            if pending:
                                yield pending
                                pending = []
                            yield Progress(next_rev - 1)
                            continue
                        pending.extend(mine)
                    if pending:
                        yield pending
            except _ChannelClosed:
                # its channel was retired and closed after calls moved to another member
                # (a call that is cancelled that way only ever raises CancelledError in the
                # reader): it resumes on the channel in use
                failures += 1
                log.warning("etcd watch's channel closed; resuming at revision %d on %s",
                            next_rev, self.config.endpoints[self._current])
                await asyncio.sleep(min(2.0, 0.1 * failures))
            except grpc.aio.AioRpcError as exc:
                if exc.code() not in (grpc.StatusCode.UNAVAILABLE,
                                      grpc.StatusCode.DEADLINE_EXCEEDED,
                                      grpc.StatusCode.CANCELLED):
                    raise StorageError(f"etcd watch: {exc.code().name}: {exc.details()}"
                                       ) from None
                failures += 1
                log.warning("etcd watch broken (%s); resuming at revision %d", exc.details(),
                            next_rev)
                await self._next_endpoint(used)
                await asyncio.sleep(min(2.0, 0.1 * failures))
            finally:
                requests.put_nowait(None)
                call.cancel()
                reader.cancel()


class _ChannelClosed(Exception):
    """A watch's call was cancelled under it, by the close of its channel."""


async def _read_into(call: grpc.aio.StreamStreamCall[pb.WatchRequest, pb.WatchResponse],
                     inbox: asyncio.Queue[pb.WatchResponse | BaseException | None]) -> None:
    """Every response of a watch stream into ``inbox``; then None, or the error. The
    reader is cancelled by the watch when it ends, and also (its call raising
    CancelledError) when the call's channel is closed: the watch is told, or it would wait
    for ever."""
    try:
        async for resp in call:
            inbox.put_nowait(resp)
        inbox.put_nowait(None)
    except asyncio.CancelledError:
        inbox.put_nowait(_ChannelClosed())  # unread when the watch cancelled the reader
        raise
    except Exception as exc:
        inbox.put_nowait(exc)


__all__ = ["EtcdConfig", "EtcdStorage", "prefix_end"]

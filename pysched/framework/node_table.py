"""NodeTable: the snapshot's node state as numpy columns, one row per node in snapshot order.

The cache keeps it in step with the snapshot: ``rebuild`` when nodes come or go, ``update_row``
for each node that changed (usually one per cycle: the node the last pod was assumed on).
Plugins with a batch twin (``filter_batch``/``score_batch``, see framework.interfaces) read it
to decide for every node at once what their per-node methods decide one node at a time.
Columns:

- resources: allocatable, requested, non-zero requested (cpu, memory, ephemeral storage), pod
  counts; scalar resources in per-name columns made on first use;
- labels: per label key, a column of interned value ids (-1 when absent), made on first use
  and kept up to date afterwards; selector terms and topology domains are answered over them;
- taints: every distinct (key, value, effect) gets a bit; a node's NoSchedule/NoExecute taints
  and its PreferNoSchedule taints are bitsets (uint64 words);
- images: per image name, a presence column made on first use.

Kept columns (``per_row``): a plugin's per-row answer for one pod shape (NodeResourcesFit's
mask and score, BalancedAllocation's score for given requests) kept for the whole table once
the same shape comes again, and brought up to date with the rows that changed since
(``update_row`` logs them): pods of one shape (a Deployment's replicas, a benchmark's pods)
then cost a gather and the changed rows, not a pass over the rows scored (issue 23 item 7).

``NominatedLoad`` carries the requests of nominated pods per row, for filters whose verdict
other pods change only through their requests (``resource_monotone``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pykubelet.api.types import (
    TAINT_EFFECT_NO_EXECUTE,
    TAINT_EFFECT_NO_SCHEDULE,
    TAINT_EFFECT_PREFER_NO_SCHEDULE,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    Taint,
    Toleration,
)
from pysched.framework.labels import (
    OP_DOES_NOT_EXIST,
    OP_EXISTS,
    OP_GT,
    OP_IN,
    OP_NOT_IN,
    term_error,
    tolerations_tolerate_taint,
)
from pysched.framework.types import NodeInfo, PodInfo

_I64 = np.int64
Ints = NDArray[np.int64]
Mask = NDArray[np.bool_]

# per_row: the columns kept (distinct pod shapes), the keys remembered as asked once, and the
# change log's length past which the kept columns are dropped rather than caught up
KEEP_COLUMNS = 8
REMEMBER_ASKED = 64
MAX_CHANGES = 4096
ONE_BY_ONE = 16  # changed rows brought up to date by the per-node method, at most


@dataclass(slots=True)
class _Kept:
    """A kept per-row column and how far into the change log it is up to date."""

    column: NDArray[Any]
    seen: int
    handed_out: bool = False  # the column itself went to a caller: copy it before a change


class NodeTable:
    """Columnar view of a list of NodeInfos (see module doc)."""

    # resources per row: allocatable, requested, non-zero requested, pods
    alloc_cpu: Ints
    alloc_mem: Ints
    alloc_eph: Ints
    alloc_pods: Ints
    req_cpu: Ints
    req_mem: Ints
    req_eph: Ints
    nz_cpu: Ints
    nz_mem: Ints
    num_pods: Ints
    unschedulable: Mask
    has_ports: Mask
    # scalar resources: name -> allocatable, requested
    scalar_alloc: dict[str, Ints]
    scalar_req: dict[str, Ints]
    # labels: key -> value id per row (-1: absent), and the ids of the key's values
    label_cols: dict[str, NDArray[np.int32]]
    label_values: dict[str, dict[str, int]]
    # taints: (key, value, effect) -> bit; bitsets per row
    taint_ids: dict[tuple[str, str, str], int]
    taints: list[Taint]
    words: int
    hard_taints: NDArray[np.uint64]
    prefer_taints: NDArray[np.uint64]
    # images: name -> presence per row
    image_cols: dict[str, Mask]

    _INT_COLUMNS = (
        "alloc_cpu",
        "alloc_mem",
        "alloc_eph",
        "alloc_pods",
        "req_cpu",
        "req_mem",
        "req_eph",
        "nz_cpu",
        "nz_mem",
        "num_pods",
    )

    def __init__(self) -> None:
        self.label_cols = {}
        self.image_cols = {}
        self.rebuild([])

    # ------------------------------------------------------------------ building
    def rebuild(self, infos: list[NodeInfo]) -> None:
        n = self.n = len(infos)
        self.every_row = np.ones(n, bool)  # shared (read-only): "no row rejected"
        self.every_row.flags.writeable = False
        self._kept: dict[Hashable, _Kept] = {}
        self._asked: set[Hashable] = set()
        self._changes: list[int] = []
        self.infos = list(infos)
        self.names = [ni.name for ni in infos]
        for col in self._INT_COLUMNS:
            setattr(self, col, np.zeros(n, _I64))
        self.unschedulable = np.zeros(n, bool)
        self.has_ports = np.zeros(n, bool)
        self.scalar_alloc = {}
        self.scalar_req = {}
        keys = list(self.label_cols)
        self.label_cols = {}
        self.label_values = {}
        images = list(self.image_cols)
        self.image_cols = {}
        self.taint_ids = {}
        self.taints = []
        self.words = 1
        self.hard_taints = np.zeros((n, 1), np.uint64)
        self.prefer_taints = np.zeros((n, 1), np.uint64)
        for i, ni in enumerate(infos):
            self._fill_row(i, ni)
        for k in keys:
            self.label_column(k)
        for img in images:
            self.image_column(img)

    def update_row(self, i: int, ni: NodeInfo) -> None:
        if self._kept:
            if len(self._changes) >= MAX_CHANGES:
                self._kept.clear()
                self._changes.clear()
            else:
                self._changes.append(i)
        old = self.infos[i]
        self.infos[i] = ni
        self.names[i] = ni.name
        if ni.node is not None and old.node is ni.node:
            # the same Node object (a pod came or went): its labels, taints, images and
            # unschedulable flag are what the row holds; only the sums change
            self._fill_sums(i, ni)
            return
        self._fill_row(i, ni)
        labels = ni.node.metadata.labels if ni.node is not None else {}
        for k, col in self.label_cols.items():
            v = labels.get(k)
            col[i] = -1 if v is None else self._value_id(k, v)
        for img, present in self.image_cols.items():
            present[i] = img in ni.image_states

    def _fill_row(self, i: int, ni: NodeInfo) -> None:
        self._fill_sums(i, ni)
        node = ni.node
        self.unschedulable[i] = bool(node is not None and node.spec.unschedulable)
        hard = [0] * self.words
        prefer = [0] * self.words
        for t in node.spec.taints if node is not None else ():
            tid = self._taint_id(t)
            w, b = divmod(tid, 64)
            if w >= len(hard):
                hard.extend([0] * (w + 1 - len(hard)))
                prefer.extend([0] * (w + 1 - len(prefer)))
            if t.effect == TAINT_EFFECT_PREFER_NO_SCHEDULE:
                prefer[w] |= 1 << b
            elif t.effect in (TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE):
                hard[w] |= 1 << b
        self.hard_taints[i, :] = np.array(hard[: self.words], dtype=np.uint64)
        self.prefer_taints[i, :] = np.array(prefer[: self.words], dtype=np.uint64)

    def _fill_sums(self, i: int, ni: NodeInfo) -> None:
        a, r, nz = ni.allocatable, ni.requested, ni.non_zero_requested
        self.alloc_cpu[i] = a.milli_cpu
        self.alloc_mem[i] = a.memory
        self.alloc_eph[i] = a.ephemeral_storage
        self.alloc_pods[i] = a.allowed_pod_number
        self.req_cpu[i] = r.milli_cpu
        self.req_mem[i] = r.memory
        self.req_eph[i] = r.ephemeral_storage
        self.nz_cpu[i] = nz.milli_cpu
        self.nz_mem[i] = nz.memory
        self.num_pods[i] = len(ni.pods)
        self.has_ports[i] = len(ni.used_ports) > 0
        for name in set(a.scalar) | set(r.scalar) | set(self.scalar_alloc):
            self._scalar(name)
            self.scalar_alloc[name][i] = a.scalar.get(name, 0)
            self.scalar_req[name][i] = r.scalar.get(name, 0)

    def _scalar(self, name: str) -> None:
        if name not in self.scalar_alloc:
            self.scalar_alloc[name] = np.zeros(self.n, _I64)
            self.scalar_req[name] = np.zeros(self.n, _I64)

    def _taint_id(self, t: Taint) -> int:
        key = (t.key, t.value, t.effect)
        tid = self.taint_ids.get(key)
        if tid is None:
            tid = self.taint_ids[key] = len(self.taints)
            self.taints.append(t)
            if tid // 64 >= self.words:
                self.words += 1
                pad = np.zeros((self.hard_taints.shape[0], 1), np.uint64)
                self.hard_taints = np.hstack([self.hard_taints, pad])
                self.prefer_taints = np.hstack([self.prefer_taints, pad.copy()])
        return tid

    def _value_id(self, key: str, value: str) -> int:
        vals = self.label_values[key]
        vid = vals.get(value)
        if vid is None:
            vid = vals[value] = len(vals)
        return vid

    # ------------------------------------------------------------------ lazily made columns
    def label_column(self, key: str) -> np.ndarray:
        col = self.label_cols.get(key)
        if col is not None:
            return col
        self.label_values[key] = {}
        col = np.full(self.n, -1, np.int32)
        for i, ni in enumerate(self.infos):
            v = ni.node.metadata.labels.get(key) if ni.node is not None else None
            if v is not None:
                col[i] = self._value_id(key, v)
        self.label_cols[key] = col
        return col

    def value_ids(self, key: str, values: Iterable[str]) -> list[int]:
        """Ids of the given values of ``key`` (makes the column if needed)."""
        if key not in self.label_cols:
            self.label_column(key)
        vals = self.label_values[key]
        return [vals[v] for v in values if v in vals]

    def image_column(self, image: str) -> np.ndarray:
        col = self.image_cols.get(image)
        if col is None:
            col = np.fromiter((image in ni.image_states for ni in self.infos), bool, self.n)
            self.image_cols[image] = col
        return col

    def scalar(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        self._scalar(name)
        return self.scalar_alloc[name], self.scalar_req[name]

    def taint_bits(self, ids: list[int]) -> np.ndarray:
        words = np.zeros(self.words, np.uint64)
        for tid in ids:
            w, b = divmod(tid, 64)
            words[w] |= np.uint64(1 << b)
        return words

    # ------------------------------------------------------------------ kept columns
    def rows_or_every(self, rows: Ints | None) -> Ints:
        """``rows``, or every row's index when None (a ``per_row`` function's argument, for
        a batch method that takes indices)."""
        return np.arange(self.n, dtype=_I64) if rows is None else rows

    def per_row(
        self,
        key: Hashable,
        fn: Callable[[Ints | None], NDArray[Any]],
        rows: Ints | None,
        one: Callable[[NodeInfo], Any] | None = None,
    ) -> NDArray[Any]:
        """``fn(rows)`` (``rows`` None: every row), where ``fn`` is a per-row function of this
        table's columns: row j's value depends on row j and on what ``key`` names only (the
        plugin, its arguments, the pod's requests). The first time a key is asked, ``fn``
        runs on ``rows``; the second time, on every row, and that column is kept (read-only)
        and answers while the key keeps coming, once the rows changed since are brought up to
        date: by ``one(node_info)`` (the plugin's per-node method: the same value, without
        numpy's per-call cost for a row or two) when given, else by ``fn``. The LRU of
        KEEP_COLUMNS keys bounds the memory (see the module doc)."""
        kept = self._kept.pop(key, None)
        if kept is None:
            if key not in self._asked:
                if len(self._asked) >= REMEMBER_ASKED:
                    self._asked.clear()
                self._asked.add(key)
                return fn(rows)
            if len(self._kept) >= KEEP_COLUMNS:
                del self._kept[next(iter(self._kept))]  # the least recently used
            col = np.array(fn(None))  # its own copy, whatever fn returned
            col.flags.writeable = False
            kept = _Kept(col, len(self._changes))
        elif kept.seen < len(self._changes):
            changed = sorted(set(self._changes[kept.seen :]))
            col = kept.column
            if kept.handed_out:
                col = col.copy()  # a caller may still hold the old one
            else:
                col.flags.writeable = True  # only gathers of it went out
            if one is not None and len(changed) <= ONE_BY_ONE:
                infos = self.infos
                for i in changed:
                    col[i] = one(infos[i])
            else:
                col[changed] = fn(np.array(changed, _I64))
            col.flags.writeable = False
            kept = _Kept(col, len(self._changes))
        self._kept[key] = kept  # most recently used last
        if rows is None:
            kept.handed_out = True
            return kept.column
        return kept.column[rows]

    # ------------------------------------------------------------------ questions plugins ask
    def values_in(self, key: str, values: Iterable[str]) -> Mask:
        """Rows whose label ``key`` has one of ``values`` (absent labels never match)."""
        col = self.label_column(key)
        ids = self.value_ids(key, values)
        if not ids:
            return np.zeros(self.n, bool)
        lut = np.zeros(len(self.label_values[key]) + 1, bool)  # the last slot: absent (-1)
        lut[ids] = True
        return lut[col]  # type: ignore[no-any-return]

    def requirement_mask(self, r: NodeSelectorRequirement) -> Mask:
        """One NodeSelectorRequirement over the label columns (labels.Requirement.Matches)."""
        col = self.label_column(r.key)
        op = r.operator
        if op == OP_IN:
            return self.values_in(r.key, r.values)
        if op == OP_NOT_IN:
            return ~self.values_in(r.key, r.values)
        if op == OP_EXISTS:
            return col >= 0
        if op == OP_DOES_NOT_EXIST:
            return col < 0
        # Gt / Lt: labels that parse as integers, compared with the bound
        bound = int(r.values[0])
        vals = self.label_values[r.key]
        ok = np.zeros(len(vals) + 1, bool)  # the last slot: absent (-1), never matches
        for v, vid in vals.items():
            try:
                n = int(v)
            except ValueError:
                continue
            ok[vid] = n > bound if op == OP_GT else n < bound
        return ok[col]  # type: ignore[no-any-return]

    def term_mask(self, term: NodeSelectorTerm) -> Mask | None:
        """Rows a node selector term matches; None for matchFields (not in the columns)."""
        if term.match_fields:
            return None
        if term_error(term) is not None:
            return np.zeros(self.n, bool)  # an invalid term never matches
        m = np.ones(self.n, bool)
        for r in term.match_expressions:
            m &= self.requirement_mask(r)
        return m

    def node_selector_mask(self, pod: Pod) -> Mask | None:
        """spec.nodeSelector AND the required node affinity (RequiredNodeAffinity.match)."""
        m = np.ones(self.n, bool)
        for k, v in pod.spec.node_selector.items():
            m &= self.values_in(k, (v,))
        aff = pod.spec.affinity
        na = aff.node_affinity if aff is not None else None
        if na is not None and na.required is not None:
            any_term = np.zeros(self.n, bool)
            for term in na.required.node_selector_terms:
                if not (term.match_expressions or term.match_fields):
                    continue
                tm = self.term_mask(term)
                if tm is None:
                    return None
                any_term |= tm
            m &= any_term
        return m

    def domain_values(self, key: str, values: Mapping[str, int]) -> Ints:
        """Per row, ``values`` of the row's label ``key`` value (0 when absent or not listed).

        Value ids come from one C-level map over the dict (no per-value Python code): with one
        domain per node (hostname) there are as many values as nodes."""
        col = self.label_column(key)  # before reading label_values: it interns the values
        ids_of = self.label_values[key]
        k = len(values)
        ids = np.fromiter(map(ids_of.get, values, itertools.repeat(-1)), _I64, k)
        vals = np.fromiter(values.values(), _I64, k)
        lut = np.zeros(len(ids_of) + 1, _I64)  # the last slot serves absent labels (-1)
        known = ids >= 0
        lut[ids[known]] = vals[known]
        return lut[col]  # type: ignore[no-any-return]

    def untolerated_taints(
        self, tolerations: Sequence[Toleration], effects: tuple[str, ...]
    ) -> list[int]:
        """Ids of the table's taints with one of ``effects`` that ``tolerations`` leave."""
        return [
            tid
            for tid, taint in enumerate(self.taints)
            if taint.effect in effects and not tolerations_tolerate_taint(tolerations, taint)
        ]

    def has_hard_taint(self, ids: list[int]) -> Mask:
        """Rows carrying one of the NoSchedule/NoExecute taints ``ids``."""
        if not ids:
            return np.zeros(self.n, bool)
        bits = self.taint_bits(ids)
        return ((self.hard_taints & bits) != 0).any(axis=1)  # type: ignore[no-any-return]

    def count_prefer_taints(self, ids: list[int], rows: Ints) -> Ints:
        """Per row of ``rows``, how many of the PreferNoSchedule taints ``ids`` it carries."""
        counts = np.zeros(len(rows), _I64)
        if not ids:
            return counts
        words = self.prefer_taints[rows]
        for tid in ids:
            w, b = divmod(tid, 64)
            counts += ((words[:, w] >> np.uint64(b)) & np.uint64(1)).astype(_I64)
        return counts


class NominatedLoad:
    """The requests of the nominated pods (priority >= the pod's) per table row, so a
    resource-monotone filter counts them as the plugins' first pass (nominated pods added) does.
    """

    def __init__(self, per_row: Mapping[int, Sequence[PodInfo]]) -> None:
        self.rows = np.fromiter(per_row, _I64, len(per_row))
        k = len(per_row)
        self.count = np.zeros(k, _I64)
        self.cpu = np.zeros(k, _I64)
        self.mem = np.zeros(k, _I64)
        self.eph = np.zeros(k, _I64)
        self.scalar: dict[str, Ints] = {}
        for j, pis in enumerate(per_row.values()):
            for pi in pis:
                res = pi.calculate_resource()[0]
                self.count[j] += 1
                self.cpu[j] += res.milli_cpu
                self.mem[j] += res.memory
                self.eph[j] += res.ephemeral_storage
                for name, q in res.scalar.items():
                    self.scalar.setdefault(name, np.zeros(k, _I64))[j] += q

    def added(self, column: Ints, values: Ints) -> Ints:
        """``column`` with ``values`` added on the nominated rows (a copy)."""
        out = column.copy()
        out[self.rows] += values
        return out

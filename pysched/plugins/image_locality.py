"""ImageLocality: favours nodes that already have the pod's images, scaled by their spread."""

from __future__ import annotations

from typing import Any

import numpy as np

from pykubelet.api.types import Pod
from pysched.framework.cycle_state import CycleState
from pysched.framework.node_table import Ints, NodeTable
from pysched.framework.types import (
    MAX_NODE_SCORE,
    ImageStateSummary,
    NodeInfo,
    normalized_image_name,
)
from pysched.plugins.helper import go_div

NAME = "ImageLocality"
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
_CYCLE_KEY = "Score" + NAME + "/cycle"


def scaled_image_score(state: ImageStateSummary, total_num_nodes: int) -> int:
    """The image size times the fraction of nodes that have it (avoids node heating)."""
    spread = state.num_nodes / total_num_nodes
    return int(state.size * spread)


def sum_image_scores(ni: NodeInfo, pod: Pod, total_num_nodes: int) -> int:
    total = 0
    states = ni.image_states
    for c in pod.spec.init_containers:
        st = states.get(normalized_image_name(c.image))
        if st is not None:
            total += scaled_image_score(st, total_num_nodes)
    for c in pod.spec.containers:
        st = states.get(normalized_image_name(c.image))
        if st is not None:
            total += scaled_image_score(st, total_num_nodes)
    return total


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """Clamp to [23MB, 1000MB x containers] and map linearly onto 0..100."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return go_div(MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD)


class ImageLocality:
    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def name(self) -> str:
        return NAME

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, None]:
        cached = state.get(_CYCLE_KEY)
        if cached is None:  # once per cycle: the snapshot and the pod do not change within it
            total_nodes = len(self.handle.snapshot_shared_lister().node_infos().list())
            names = [
                normalized_image_name(c.image)
                for c in (*pod.spec.init_containers, *pod.spec.containers)
            ]
            cached = (total_nodes, names)
            state.write(_CYCLE_KEY, cached)
        total_nodes, names = cached
        states = node_info.image_states
        total = 0
        for name in names:
            st = states.get(name)
            if st is not None:
                total += scaled_image_score(st, total_nodes)
        return calculate_priority(total, len(names)), None

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: Ints) -> Ints:
        sums = np.zeros(len(rows), np.int64)
        containers = [*pod.spec.init_containers, *pod.spec.containers]
        found = False
        for c in containers:
            name = normalized_image_name(c.image)
            col = table.image_column(name)
            if not col.any():
                continue  # no node holds it
            first = int(col.argmax())  # the first holder
            st = table.infos[first].image_states[name]
            sums += np.where(col[rows], scaled_image_score(st, table.n), 0)
            found = True
        if not found and containers:  # no node holds any image: every sum is 0, so every score
            return np.zeros(len(rows), np.int64)  # is (100 * (MIN - MIN)) // ... = 0
        max_threshold = MAX_CONTAINER_THRESHOLD * len(containers)
        s = np.clip(sums, MIN_THRESHOLD, max_threshold)
        out: Ints = (MAX_NODE_SCORE * (s - MIN_THRESHOLD)) // (max_threshold - MIN_THRESHOLD)
        return out

    def score_extensions(self) -> None:
        return None


def new(args: Any, handle: Any) -> ImageLocality:
    return ImageLocality(handle)

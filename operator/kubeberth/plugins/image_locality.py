"""ImageLocality: favours nodes that already have the pod's images (its containers' and, as v1.37,
its image volumes'), scaled by their spread.

Within group preemption (upstream's mutation session of the snapshot) every image's spread is 0,
as kube-scheduler v1.37.2 has it: StartMutations copies the snapshot's NodeInfos again, and a
copy's image summary counts the nodes of a node set the snapshot's copies no longer carry. The
group's re-run then scores every node as having none of the pod's images."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..framework import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    NodeInfo,
    Pod,
    ScorePlugin,
)
from ._mutation_session import in_preemption_rerun

NAME = "ImageLocality"

MB = 1024 * 1024
# Bounds of the image score range: a reasonable span of compressed image sizes.
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """Add the implicit ":latest" tag when the name has none (upstream's normalizedImageName)."""
    if name.rfind(":") <= name.rfind("/"):
        name = name + ":latest"
    return name


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


def scaled_image_score(size: int, num_nodes: int, total_num_nodes: int) -> int:
    spread = float(num_nodes) / float(total_num_nodes)
    return int(float(size) * spread)


def _node_images(node_info: NodeInfo) -> dict[str, int]:
    node = node_info.node
    if node is None:
        return {}
    cached = node.cache.get(NAME)
    if cached is None:
        cached = {}
        for img in node.images:
            for n in img.names:
                cached.setdefault(n, img.size)
        node.cache[NAME] = cached
    return cached


def _pod_images(pod: Pod) -> list[str]:
    """Normalised images of the init containers, the containers (one per container) and, as
    v1.37 counts them, the image volumes (one per volume)."""
    cached = pod.cache.get(NAME)
    if cached is None:
        spec = pod.spec
        cached = [normalized_image_name(str(c.get("image") or ""))
                  for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]]
        for volume in spec.get("volumes") or ():
            image = volume.get("image") if isinstance(volume, dict) else None
            if isinstance(image, dict):
                cached.append(normalized_image_name(str(image.get("reference") or "")))
        pod.cache[NAME] = cached
    return cached


def sum_image_scores(node_info: NodeInfo, images: list[str], total_num_nodes: int) -> int:
    have = _node_images(node_info)
    if not have:
        return 0
    counts = node_info.image_num_nodes
    total = 0
    for name in images:
        size = have.get(name)
        if size is not None:
            total += scaled_image_score(size, counts.get(name, 1), total_num_nodes)
    return total


class ImageLocality(ScorePlugin):
    name = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    def _total_nodes(self) -> int:
        return max(len(self.handle.snapshot), 1)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        images = _pod_images(pod)
        if in_preemption_rerun():
            return calculate_priority(0, len(images))
        total = sum_image_scores(node_info, images, self._total_nodes())
        return calculate_priority(total, len(images))

    def score_all(self, state: CycleState, pod: Pod, nodes: Any) -> np.ndarray:
        """Nodes listing no image all score calculate_priority(0, ...); the others per node."""
        images = _pod_images(pod)
        out = np.full(len(nodes), calculate_priority(0, len(images)), dtype=np.int64)
        if in_preemption_rerun():
            return out
        with_images = np.flatnonzero(nodes.take(nodes.arrays.images))
        if with_images.size:
            total_nodes = self._total_nodes()
            for k in with_images.tolist():
                out[k] = calculate_priority(sum_image_scores(nodes[k], images, total_nodes), len(images))
        return out


PLUGINS = [ImageLocality]

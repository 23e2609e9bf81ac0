"""How far to trust a prediction: the plan's distance to the measured cloud (pure, vectorised over plans).

Distances are Euclidean in the eight features standardised by the classifier's scaler (the pool's mean and
population standard deviation). The cloud is every measured record whose features can be computed (its table records
every feature setting and its model has metadata), counted once per distinct point. Each point's distance to its
nearest other point gives the cloud's own spacing; a plan farther from every point than the largest such spacing
lies outside the measured cloud, even when each of its settings is inside the measured range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

CHUNK = 8192


@dataclass(frozen=True)
class Cloud:
    """Distinct standardised points, the records at each, and the cloud's nearest-neighbour spacing."""

    points: np.ndarray
    records: tuple[tuple[int, ...], ...]
    mean: np.ndarray
    scale: np.ndarray
    spacing: np.ndarray  # per point: distance to the nearest other point

    @property
    def limit(self) -> float:
        return float(self.spacing.max()) if len(self.spacing) else 0.0

    def scaled(self, features: np.ndarray) -> np.ndarray:
        return cast("np.ndarray", (features - self.mean) / self.scale)

    def nearest(self, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(distance to the nearest point, that point) of every row; each distinct row is measured once, in chunks."""
        rows = np.ascontiguousarray(features, dtype=np.float64)
        keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        distinct = rows[first]
        distance = np.empty(len(distinct))
        point = np.empty(len(distinct), dtype=np.int64)
        for start in range(0, len(distinct), CHUNK):
            d = self._distances(distinct[start : start + CHUNK])
            point[start : start + CHUNK] = np.argmin(d, axis=1)
            distance[start : start + CHUNK] = d[np.arange(len(d)), point[start : start + CHUNK]]
        inverse = inverse.reshape(-1)
        return distance[inverse], point[inverse]

    def nearest_records(self, features: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` nearest records of one plan (record index, distance), nearest first."""
        d = self._distances(features[None, :])[0]
        out = []
        for p in np.argsort(d, kind="stable"):
            out += [(r, float(d[p])) for r in self.records[p]]
            if len(out) >= k:
                break
        return out[:k]

    def _distances(self, features: np.ndarray) -> np.ndarray:
        diff = self.scaled(features)[:, None, :] - self.points[None, :, :]
        return cast("np.ndarray", np.sqrt(np.einsum("ijk,ijk->ij", diff, diff)))

    def summary(self) -> dict[str, Any]:
        return {
            "points": len(self.points),
            "records": sum(len(r) for r in self.records),
            "nearest_neighbour_median": _median(self.spacing) if len(self.spacing) else None,
            "nearest_neighbour_max": self.limit,
        }


def _median(values: np.ndarray) -> float:
    """``np.median`` of a non-empty 1-d float array, the same value, without the masked-array check ``np.median``
    makes (which imports ``numpy.ma``, 7 ms): the mean of the middle one or two sorted values, NaN if any is NaN."""
    ordered = np.sort(values)
    if np.isnan(ordered[-1]):
        return float("nan")
    half = len(ordered) // 2
    return float(np.mean(ordered[half : half + 1] if len(ordered) % 2 else ordered[half - 1 : half + 1]))


def cloud_of(features: np.ndarray, ok: np.ndarray, mean: np.ndarray, scale: np.ndarray) -> Cloud:
    """The cloud of the records whose features are computable (``features`` and ``ok`` aligned with the records)."""
    scaled = (features[ok] - mean) / scale
    rows = np.flatnonzero(ok)
    points, inverse = np.unique(scaled, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    members: list[list[int]] = [[] for _ in range(len(points))]
    for row, p in zip(rows, inverse):
        members[p].append(int(row))
    diff = points[:, None, :] - points[None, :, :]
    d = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
    np.fill_diagonal(d, np.inf)
    spacing = d.min(axis=1) if len(points) > 1 else np.zeros(len(points))
    return Cloud(points, tuple(tuple(m) for m in members), mean, scale, spacing)

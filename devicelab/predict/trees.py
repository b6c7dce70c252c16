"""Decision trees as plain arrays, evaluated with numpy.

Trained trees (scikit-learn's) are copied into ``TreeArrays``: per node the split feature, the
threshold, the two children and the value, all trees of an ensemble in one set of arrays. They
are evaluated here, for a whole batch and every tree at once, so a stored predictor needs no
scikit-learn internals to predict and survives library upgrades. The split rule is
scikit-learn's: go left when ``x <= threshold``, with ``x`` rounded to float32 first (scikit-learn
casts inputs to float32 before comparing), so predictions equal the library's bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from devicelab.predict.errors import PredictorError


@dataclass(frozen=True)
class TreeArrays:
    """An ensemble of binary trees: node arrays of all trees concatenated, one root per tree."""

    feature: np.ndarray  # int64, -1 at a leaf
    threshold: np.ndarray  # float64
    left: np.ndarray  # int64 node index, -1 at a leaf
    right: np.ndarray  # int64
    value: np.ndarray  # float64: the leaf's output
    roots: np.ndarray  # int64: the root node of each tree
    depth: int  # the deepest path, in edges

    def leaf_values(self, x: np.ndarray) -> np.ndarray:
        """The leaf value each tree gives each row: shape (rows, trees)."""
        x = np.asarray(x, dtype=np.float64)
        n = x.shape[0]
        if n == 0 or len(self.roots) == 0:
            return np.zeros((n, len(self.roots)))
        xf = x.astype(np.float32).astype(np.float64)
        idx = np.broadcast_to(self.roots, (n, len(self.roots))).copy()
        rows = np.arange(n)[:, None]
        for _ in range(self.depth):
            f = self.feature[idx]
            leaf = f < 0
            if leaf.all():
                break
            xv = xf[rows, np.where(leaf, 0, f)]
            nxt = np.where(xv <= self.threshold[idx], self.left[idx], self.right[idx])
            idx = np.where(leaf, idx, nxt)
        values: np.ndarray = self.value[idx]
        return values

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (lists of numbers)."""
        return {
            "feature": self.feature.tolist(),
            "threshold": self.threshold.tolist(),
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "value": self.value.tolist(),
            "roots": self.roots.tolist(),
            "depth": int(self.depth),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TreeArrays:
        """From ``to_dict`` data, checking that the arrays describe trees."""
        t = cls(
            np.asarray(d["feature"], dtype=np.int64),
            np.asarray(d["threshold"], dtype=np.float64),
            np.asarray(d["left"], dtype=np.int64),
            np.asarray(d["right"], dtype=np.int64),
            np.asarray(d["value"], dtype=np.float64),
            np.asarray(d["roots"], dtype=np.int64),
            int(d["depth"]),
        )
        t.validate()
        return t

    def validate(self, n_features: int | None = None) -> None:
        """``PredictorError`` unless the arrays are consistent trees."""
        n = len(self.feature)
        if not (len(self.threshold) == len(self.left) == len(self.right) == len(self.value) == n):
            raise PredictorError("tree arrays have different lengths")
        if n and (self.left.max() >= n or self.right.max() >= n or self.roots.max(initial=0) >= n):
            raise PredictorError("a tree node points past the end of the node arrays")
        if n_features is not None and n and self.feature.max() >= n_features:
            raise PredictorError(f"a tree splits on feature {self.feature.max()} of {n_features}")
        inner = self.feature >= 0
        if np.any(inner & ((self.left < 0) | (self.right < 0))):
            raise PredictorError("an inner tree node has no children")
        if not np.all(np.isfinite(self.value)) or not np.all(np.isfinite(self.threshold[inner])):
            raise PredictorError("a tree holds non-finite values")


def from_sklearn(trees: Sequence[Any], values: Sequence[np.ndarray] | None = None) -> TreeArrays:
    """Copy fitted scikit-learn trees (``DecisionTree*`` estimators or their ``tree_``).

    ``values`` overrides each tree's per-node values (e.g. class indices of a classifier);
    by default a regression tree's ``value[:, 0, 0]``.
    """
    feats, thr, left, right, val, roots = [], [], [], [], [], []
    depth, offset = 0, 0
    for i, t in enumerate(trees):
        tree = getattr(t, "tree_", t)
        n = tree.node_count
        leaf = tree.children_left < 0
        feats.append(np.where(leaf, -1, tree.feature).astype(np.int64))
        thr.append(np.where(leaf, 0.0, tree.threshold).astype(np.float64))
        left.append(np.where(leaf, -1, tree.children_left + offset).astype(np.int64))
        right.append(np.where(leaf, -1, tree.children_right + offset).astype(np.int64))
        v = values[i] if values is not None else tree.value[:, 0, 0]
        val.append(np.asarray(v, dtype=np.float64))
        roots.append(offset)
        depth = max(depth, int(tree.max_depth))
        offset += n
    cat = (lambda xs, dt: np.concatenate(xs).astype(dt)) if trees else (lambda xs, dt: np.zeros(0, dtype=dt))
    return TreeArrays(
        cat(feats, np.int64),
        cat(thr, np.float64),
        cat(left, np.int64),
        cat(right, np.int64),
        cat(val, np.float64),
        np.asarray(roots, dtype=np.int64),
        depth,
    )


__all__ = ["TreeArrays", "from_sklearn"]

"""The data sets of the chapters: scikit-learn's bundled 8x8 handwritten digits (Chapters 3, 6 and 7).

The digits ship inside scikit-learn (no download). `load_digits` reads them from that CSV without importing
`sklearn.datasets`, whose import costs about a second at the start of every chapter that uses them.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
from pathlib import Path

import numpy as np

from .core import as_int

__all__ = ["load_digits"]


def load_digits(n_class: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled 8x8 handwritten digits (1797 images): pixels (N, 64) in 0..16 and labels (N,).

    The same arrays as `sklearn.datasets.load_digits(n_class=n_class, return_X_y=True)` (tested). n_class: keep
    the digits 0, ..., n_class - 1. Fresh copies on every call.
    """
    n_class = as_int("n_class", n_class, minimum=1)
    if n_class > 10:
        raise ValueError(f"n_class must be between 1 and 10; got {n_class}")
    data = _digits_table()
    keep = data[:, -1] < n_class
    return data[keep, :-1].copy(), data[keep, -1].astype(int)


@functools.lru_cache(maxsize=1)
def _digits_table() -> np.ndarray:
    spec = importlib.util.find_spec("sklearn")  # locates the package without importing it
    path = Path(spec.origin).parent / "datasets" / "data" / "digits.csv.gz" if spec and spec.origin else None
    if path is None or not path.is_file():  # pragma: no cover - another layout of scikit-learn: ask it
        from sklearn.datasets import load_digits as sk_load_digits

        X, y = sk_load_digits(return_X_y=True)
        return np.column_stack([X, y])
    with gzip.open(path, mode="rt", encoding="utf-8") as f:
        return np.loadtxt(f, delimiter=",")

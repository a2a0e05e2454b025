"""Sparse linear SVMs (text-like data) against liblinear (scikit-learn's LinearSVC).

The data are ``n`` rows of ``k`` nonzeros each over ``d`` features, columns drawn with a
Zipf-like popularity (a few frequent terms, many rare ones), values in ``[0.1, 1.1)``, rows
scaled to unit norm (tf-idf style); labels are the sign of a hidden linear score around its
median, 10% flipped. qpsvm solves the same problem as the anchor: the hinge or squared hinge
loss with liblinear's regularised bias (``intercept="regularized"``, LinearSVC's
``fit_intercept=True``) or without an intercept, certified at 1e-9; the free intercept (qpsvm's
default) is timed against the same anchor, the nearest problem liblinear solves.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.svm import LinearSVC

import qpsvm
from regimes._grid import Point, Tightened, certifies, liblinear_at

#: (n, d, nonzeros per row) of each scale: n < d (text) and n > d, up to 100 samples per
#: feature (the hinge's free multipliers then nearly as many as the features).
SIZES = {
    "quick": [(2000, 20000, 20), (5000, 2000, 10), (20000, 200, 10)],
    "full": [
        (5000, 20000, 50),
        (20000, 50000, 50),
        (20000, 200, 10),
        (50000, 500, 10),
        (50000, 2000, 20),
        (100_000, 2000, 20),
        (10000, 1_000_000, 100),
        (100_000, 100_000, 10),
    ],
}
#: (loss, intercept) pairs timed at every size.
PROBLEMS = {
    "quick": [("hinge", "none"), ("squared_hinge", "regularized"), ("hinge", "free")],
    "full": [
        ("hinge", "none"),
        ("hinge", "regularized"),
        ("hinge", "free"),
        ("squared_hinge", "none"),
        ("squared_hinge", "regularized"),
        ("squared_hinge", "free"),
    ],
}


def text_like(n: int, d: int, k: int, seed: int = 0, noise: float = 0.1) -> tuple:
    """``X`` (CSR, ``k`` nonzeros per row, unit rows) and labels ``y`` in ``{-1, 1}``."""
    rng = np.random.default_rng(seed)
    popularity = 1.0 / np.arange(1, d + 1) ** 0.8
    popularity /= popularity.sum()
    # k distinct columns per row: draw with replacement, then top up the duplicates
    cols = np.empty((n, k), dtype=np.int64)
    for i in range(n):
        row = np.unique(rng.choice(d, k, p=popularity))
        while row.size < k:
            row = np.unique(np.concatenate([row, rng.integers(0, d, k - row.size)]))
        cols[i] = row
    data = rng.random(n * k) + 0.1
    X = sp.csr_matrix((data, cols.ravel(), np.arange(n + 1) * k), shape=(n, d))
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.csr_matrix(sp.diags(1.0 / norms) @ X)
    score = X @ rng.standard_normal(d)
    y = np.where(score > np.median(score), 1, -1)
    y[rng.random(n) < noise] *= -1
    return X, y


def points(scale: str) -> list[Point]:
    """The grid of the scale: every size times every (loss, intercept), C = 1."""
    out = []
    for n, d, k in SIZES[scale]:
        X, y = text_like(n, d, k)
        for loss, intercept in PROBLEMS[scale]:

            def build(X=X, y=y, loss=loss, intercept=intercept):
                return qpsvm.SoftMarginPrimal(X, y, C=1.0, loss=loss, intercept=intercept)

            def ours(build=build):
                return build().solve()

            def anchor(X=X, y=y, loss=loss, intercept=intercept):
                return LinearSVC(loss=loss, fit_intercept=intercept != "none").fit(X, y)

            out.append(
                Point(
                    "sparse",
                    f"n={n} d={d} nnz/row={k} {loss} b={intercept}",
                    "liblinear",
                    ours,
                    anchor,
                    repeat=1 if scale == "full" else 3,
                    formulation=build,
                    tightened=None
                    if intercept == "free"
                    else Tightened(
                        liblinear_at(X, y, loss=loss, fit_intercept=intercept != "none"),
                        certifies(build),
                    ),
                )
            )
    return out

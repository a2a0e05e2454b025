"""Ranking from relevance labels against dlib's ``svm_rank_trainer`` (the anchor users run).

Queries of items scored by a hidden linear utility plus noise, cut into binary relevance (dlib's
``ranking_pair``: relevant / nonrelevant) or graded relevance 0/1/2 (SVM-rank's multi-level
case, which dlib does not take: its anchor is then dlib on the binary cut at level 1, the
same data and the same sorting oracle, timed for reference). dlib minimises ``1/2 ||w||^2 +
c * (mean pairwise hinge)``; qpsvm solves the same problem with ``C = c / n_pairs``
(:func:`qpsvm.conventions.C_from_dlib_rank`) to a passing certificate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import qpsvm
from qpsvm.conventions import C_from_dlib_rank
from regimes._grid import Point, Tightened, certifies

#: dlib's ``c`` over four decades.
DLIB_C = (1.0, 100.0, 1e4)


def ranking_data(n_queries: int, per_query: int, d: int, graded: bool, seed: int = 0):
    """Items, relevance labels (0/1, or 0/1/2 when ``graded``) and query ids."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * per_query, d))
    utility = X @ rng.normal(size=d) / np.sqrt(d) + 0.5 * rng.normal(size=len(X))
    y = np.digitize(utility, [-0.5, 0.8]) if graded else (utility > 0.5).astype(int)
    return X, y, np.repeat(np.arange(n_queries), per_query)


def dlib_pairs(X: np.ndarray, relevant: np.ndarray, groups: np.ndarray):
    """dlib's ``ranking_pairs``: per query, the relevant and the nonrelevant items. A query
    with one side empty has no pairs (dlib refuses it as "Invalid inputs"): it is left out,
    which leaves the problem unchanged."""
    import dlib

    data = dlib.ranking_pairs()
    for q in np.unique(groups):
        pair = dlib.ranking_pair()
        rows = np.flatnonzero(groups == q)
        if np.all(relevant[rows]) or not np.any(relevant[rows]):
            continue
        for i in rows:
            (pair.relevant if relevant[i] else pair.nonrelevant).append(dlib.vector(X[i].tolist()))
        data.append(pair)
    return data


def dlib_at(c: float, data: Any) -> Callable[[float], Any]:
    """dlib's ``svm_rank_trainer`` with ``c``, fitted at ``factor`` times its default ``epsilon``
    (``1e-3``), its iteration limit raised so that ``epsilon``, not the limit, stops it."""
    import dlib

    def fit(factor: float) -> Any:
        trainer = dlib.svm_rank_trainer()
        trainer.c = c
        trainer.epsilon = 1e-3 * factor
        trainer.max_iterations = 10**6
        return trainer.train(data)

    return fit


def dlib_tightened(c: float, data: Any, build: Callable[[], Any]) -> Tightened:
    """The ladder of dlib's ``epsilon`` at ``c``, its weights certified on ``build()``."""
    return Tightened(dlib_at(c, data), certifies(build, lambda df: {"w": np.array(df.weights)}))


def points(scale: str) -> list[Point]:
    import dlib

    sizes = [(200, 40, 40)] if scale == "quick" else [(200, 40, 40), (1000, 40, 46)]
    out = []
    for n_queries, per_query, d in sizes:
        for graded in (False, True):
            X, y, groups = ranking_data(n_queries, per_query, d, graded)
            data = dlib_pairs(X, y >= 1, groups)
            n_pairs = qpsvm.RankingSVM(X, y=y, groups=groups).n_pairs
            binary_pairs = qpsvm.RankingSVM(X, y=y >= 1, groups=groups).n_pairs
            for c in DLIB_C:
                trainer = dlib.svm_rank_trainer()
                trainer.c = c * n_pairs / binary_pairs  # the same C on dlib's binary cut
                C = C_from_dlib_rank(c, n_pairs)

                def build(X=X, y=y, groups=groups, C=C):
                    return qpsvm.RankingSVM(X, y=y, groups=groups, C=C)

                def ours(build=build):
                    return build().solve(method="one_slack")

                kind = "graded" if graded else "binary"
                out.append(
                    Point(
                        "ranking",
                        f"{n_queries}x{per_query} d={d} {kind} dlib c={c:g}",
                        "dlib",
                        ours,
                        lambda trainer=trainer, data=data: trainer.train(data),
                        formulation=build,
                        # dlib solves the problem itself on binary relevance only
                        tightened=None if graded else dlib_tightened(c, data, build),
                    )
                )
    return out

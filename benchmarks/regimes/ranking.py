"""Ranking from relevance labels against dlib's ``svm_rank_trainer`` (the anchor users run).

Queries of items scored by a hidden linear utility plus noise, with binary relevance or graded
relevance 0/1/2 (SVM-rank's multi-level case: a pair for every two items of a query at different
levels). dlib takes a query as ``ranking_pair`` objects (relevant / nonrelevant items, a pair for
each relevant-nonrelevant combination) and averages its hinge over the pairs of all of them, so
a query of graded relevance is the ``ranking_pair`` objects of its levels (:func:`dlib_pairs`) and
dlib solves the graded problem itself. dlib minimises ``1/2 ||w||^2 + c * (mean pairwise
hinge)``; qpsvm solves the same problem with ``C = c / n_pairs``
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


def dlib_pairs(X: np.ndarray, y: np.ndarray, groups: np.ndarray):
    """dlib's ``ranking_pairs`` of relevance labels ``y`` (binary or graded): per query and per
    level ``l`` of it below its highest, the items above ``l`` relevant and the items at ``l``
    nonrelevant. Each pair of items at different levels ``y_i > y_j`` is then one
    relevant-nonrelevant combination, in the ``ranking_pair`` of ``l = y_j`` only: dlib's pairs
    are the problem's pairs, one each. A query of one level has no pairs (dlib refuses an empty
    side as "Invalid inputs"): it is left out, which leaves the problem unchanged."""
    import dlib

    data = dlib.ranking_pairs()
    for q in np.unique(groups):
        rows = np.flatnonzero(groups == q)
        for level in np.unique(y[rows])[:-1]:
            pair = dlib.ranking_pair()
            for i in rows:
                if y[i] > level:
                    pair.relevant.append(dlib.vector(X[i].tolist()))
                elif y[i] == level:
                    pair.nonrelevant.append(dlib.vector(X[i].tolist()))
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
            data = dlib_pairs(X, y, groups)
            n_pairs = qpsvm.RankingSVM(X, y=y, groups=groups).n_pairs
            for c in DLIB_C:
                trainer = dlib.svm_rank_trainer()
                trainer.c = c
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
                        tightened=dlib_tightened(c, data, build),
                    )
                )
    return out

r"""The ranking SVM on Dask collections: what ``RankingSVM(X, y=..., groups=...)`` returns for
Dask data.

.. math::

    \min_w\ \tfrac12 \|w\|^2 + C \sum_{(i, j)} \max(0, 1 - w \cdot (x_i - x_j)),

over the pairs ``(i, j)`` of one query with ``y_i > y_j`` (relevance labels, unit pair
weights), every query in one row block. It is the binary SVM without intercept on the pairs'
differences, solved by the shared rounds of :mod:`qpsvm.dask.working_set` with the binary
restricted problem (:class:`~qpsvm.dask.binary.BinaryFamily`: the working set's pairs and
one aggregated pair for the pairs short of the margin, :mod:`qpsvm.dask.fold`); what
differs is how it begins (:class:`RankFamily`) and what a block computes
(:mod:`qpsvm.dask.rank_blocks`):

1. *Queries.* One pass checks that no query spans two blocks and counts the pairs.
2. *Start.* The in-memory ranking SVM on a strided sample of the blocks (whole queries, fewer
   items) at ``C n_pairs / n_pairs_sample``.
3. *Sort.* One pass lists the pairs within ``band`` of the margin at the start (the working
   set, as difference rows) and folds the pairs short of it into ``X^T a_B``, by sorting each
   query; the band is widened (times 4) while no pair falls in it.
4. *Rounds.* The restricted problem in memory, then one pass that checks every pair's status
   (pair by pair: ``O(pairs)`` per block, none stored) and sums the certificate by sweeps.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qpsvm._validation import check_int, check_number, check_positive, check_tol
from qpsvm.dask.binary import BinaryFamily
from qpsvm.dask.passes import DaskRankData, as_dask_array
from qpsvm.dask.rank_blocks import RankSort, block_queries
from qpsvm.dask.reference import ReferenceCertify
from qpsvm.dask.working_set import (
    MIN_WORK,
    SAMPLE_ROWS,
    Begin,
    WorkingRows,
    begin_solve,
    certify_blocks,
    read_sample,
    solve_dask_working_set,
)
from qpsvm.exceptions import InaccurateSolutionError, InvalidInputError
from qpsvm.formulations.composed_ranking import check_no_intercept
from qpsvm.solution import Solution
from qpsvm.solvers.working_set import MIN_ADD, STATUS_TOL
from qpsvm.verify.certificate import DEFAULT_TOL, Certificate
from qpsvm.verify.ranking_sweep import layout

__all__ = ["START_BAND", "DaskRankingSVM", "RankFamily"]

#: The sort's band (margin units) around the start's margins.
START_BAND = 0.1
#: Times the sort band may be widened while no pair falls in it.
SORT_TRIES = 6


def check_queries(data: DaskRankData) -> int:
    """One pass: every query in one block; returns the number of pairs.

    Raises
    ------
    InvalidInputError
        A query spans two blocks, or no query has two relevance levels.
    """
    parts = data.run("queries", block_queries)
    queries = np.concatenate([q for q, _ in parts])
    if np.unique(queries).size < queries.size:
        raise InvalidInputError(
            "a query spans two row blocks; rechunk X, y and groups so that every query lies in "
            "one block (e.g. sort by query and cut the chunks at query boundaries)."
        )
    n_pairs = sum(int(n) for _, n in parts)
    if n_pairs == 0:
        raise InvalidInputError("no query holds two relevance levels: there is no pair to rank.")
    return n_pairs


def sample_start(data: DaskRankData, rows: int, n_pairs: int) -> np.ndarray:
    """``w`` of the in-memory ranking SVM on a strided sample at ``C n_pairs / n_pairs_s``
    (0 when the sample holds no pair)."""
    from qpsvm.formulations.ranking import RankingSVM

    X, rel, groups, _ = read_sample(data, rows)
    rel = np.asarray(rel, dtype=np.float64)
    codes = np.unique(groups, return_inverse=True)[1].ravel().astype(np.intp)
    sample_pairs = layout(rel, codes).n_pairs
    if not sample_pairs:
        return np.zeros(data.n_features)
    X = np.asarray(X, dtype=np.float64)
    return RankingSVM(X, y=rel, groups=groups, C=data.C * n_pairs / sample_pairs).solve().w


class RankFamily(BinaryFamily):
    """The ranking SVM's steps: the binary restricted problem over pairs, begun by the queries
    pass, a sample start and the sort of the pairs (see the module)."""

    formulation = "RankingSVM"

    def __init__(self, band: float = START_BAND) -> None:
        self.band = band

    def begin(
        self, data: DaskRankData, width: float, sample_rows: int, start_passes: int, min_work: int
    ) -> Begin:
        n_pairs = check_queries(data)
        w = sample_start(data, sample_rows, n_pairs)
        passes = len(data.log)
        band = self.band
        for _ in range(SORT_TRIES):
            sort = RankSort(w, 0.0, band=band)
            parts = data.sort(sort, band, 0)
            if len(parts.work):
                break
            band *= 4.0
        else:
            raise InaccurateSolutionError(
                f"no pair lies within {band:.3g} of the margin at the start; pass a larger band."
            )
        ws = WorkingRows(parts.work, parts.fold)
        return Begin(sort, ws, band, STATUS_TOL, passes)


class DaskRankingSVM(ReferenceCertify):
    r"""Ranking SVM from relevance labels over Dask collections, every query in one block.

    ``qpsvm.RankingSVM(X, y=..., groups=...)`` returns this class when ``X``, ``y`` or
    ``groups`` is a Dask array, dataframe or series.

    Parameters
    ----------
    X : dask array or dataframe of shape (n_items, n_features)
        Chunked along the rows so that no query spans two chunks.
    pairs, pair_weight : None
        Explicit pairs need them in memory: refused with Dask data.
    y : dask array or series of shape (n_items,)
        Relevance labels: every pair of one query with ``y_i > y_j`` is a preference.
    groups : dask array or series of shape (n_items,)
        Query identifiers.
    C : float, default=1.0
    loss, penalty, intercept, l1_ratio
        Only the hinge loss with the L2 penalty and no intercept with Dask data.

    Notes
    -----
    The solution has ``w`` (``b = 0``) and no ``alpha`` or ``xi``: the pairs are never formed
    but the working set's, as for ``method="one_slack"`` in memory. See :doc:`/dask`.
    """

    def __init__(
        self,
        X: Any,
        pairs: Any = None,
        y: Any = None,
        groups: Any = None,
        C: float = 1.0,
        pair_weight: Any = None,
        *,
        loss: str = "hinge",
        penalty: str = "l2",
        intercept: str = "none",
        l1_ratio: float = 0.5,
    ) -> None:
        check_no_intercept(intercept)
        if (loss, penalty) != ("hinge", "l2"):
            raise InvalidInputError(
                "with Dask data RankingSVM solves the hinge loss with the L2 penalty; got "
                f"loss={loss!r}, penalty={penalty!r} (l1_ratio={l1_ratio!r}). The other "
                "combinations (ComposedRanking) need the items in memory: pass X.compute()."
            )
        if pairs is not None or pair_weight is not None or y is None or groups is None:
            raise InvalidInputError(
                "with Dask data RankingSVM takes relevance labels y= and query groups= (every "
                "query in one block), not pairs= or pair_weight=."
            )
        self.C = check_positive(C, "C")
        self.data = DaskRankData(
            as_dask_array(X, "X", 2),
            as_dask_array(y, "y", 1),
            None,
            None,
            self.C,
            False,
            groups=as_dask_array(groups, "groups", 1),
        )

    @property
    def n_features(self) -> int:
        return self.data.n_features

    def solve(
        self,
        method: str | None = None,
        solver: str | None = None,
        *,
        tol: float = DEFAULT_TOL,
        max_rounds: int = 50,
        band: float = START_BAND,
        sample_rows: int = SAMPLE_ROWS,
        **options: Any,
    ) -> Solution:
        """The exact, certified optimum by the working set over the pairs of the row blocks.

        Parameters
        ----------
        method : {"working_set", None}
            The only method for Dask data.
        solver : str, optional
            CVXPY solver of the in-memory working set's restricted QPs (default Clarabel, then
            OSQP).
        tol, max_rounds, sample_rows, **options
            See :func:`~qpsvm.dask.working_set.solve_dask_working_set`.
        band : float, default=0.1
            Pairs within ``band`` of the margin at the start begin in the working set.

        Returns
        -------
        Solution
            ``w`` in memory, ``b = 0``, no ``alpha`` or ``xi``.
        """
        begin_solve(self.data, method)
        return solve_dask_working_set(
            self.data,
            RankFamily(float(check_number(band, "band"))),
            solver,
            tol=check_tol(tol),
            max_rounds=check_int(max_rounds, "max_rounds"),
            sample_rows=check_int(sample_rows, "sample_rows"),
            min_work=MIN_WORK,
            **options,
        )

    def _certify_with(self, candidate: Any, stored: tuple, tol: float) -> Certificate:
        """The certificate of ``w`` at the statuses and multipliers ``stored``; a bare point's
        own: ``alpha_p = C`` on the pairs short of the margin at ``w``, 0 elsewhere."""
        w = np.asarray(candidate.w, dtype=np.float64).ravel()
        if w.shape != (self.n_features,) or not np.all(np.isfinite(w)):
            raise InvalidInputError(f"w must be a finite vector of length {self.n_features}.")
        sort, index, alpha = stored
        sort = RankSort(w, 0.0) if sort is None else sort
        parts = self.data.check(sort, index, alpha, w, 0.0, STATUS_TOL, MIN_ADD)
        return certify_blocks(self.data, parts, w, sort, index, alpha, tol, "RankingSVM")

    def decision_function(self, X: Any, solution: Any) -> Any:
        """Scores ``w . x`` of items (rank by decreasing score)."""
        return X @ np.asarray(solution.w)

r"""A scikit-learn style ranker: the ranking SVM solved exactly, with a certificate.

For preference pairs ``p = (i, j)`` (item ``i`` preferred over ``j``) it solves

.. math::

    \min_{w, \xi}\ \tfrac12\|w\|^2 + C \sum_p s_p \xi_p
    \quad\text{s.t.}\quad w\cdot(x_i - x_j) \ge 1 - \xi_p,\ \xi_p \ge 0

by :class:`~qpsvm.RankingSVM` and scores items by :math:`w\cdot x` (higher ranks first).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data

from qpsvm.estimators._base import solve_certified, typed_errors
from qpsvm.verify.certificate import DEFAULT_TOL

__all__ = ["RankSVM"]


class RankSVM(BaseEstimator):
    r"""Ranking SVM: :math:`\min \tfrac12\|w\|^2 + C\sum_p s_p\xi_p` s.t.
    :math:`w\cdot(x_i - x_j) \ge 1 - \xi_p` for every preference pair ``(i, j)``.

    Pairs come from relevance labels ``y`` and query ``groups`` (every pair inside a group with
    ``y_i > y_j``, SVM-rank's construction) or explicitly (rows ``(preferred, other)``: pairwise
    judgements, game outcomes ``(winner, loser)``). There is no intercept: it cancels in every
    difference. SVM-rank's ``-c`` is ``C = c / n_queries``
    (:func:`qpsvm.conventions.C_from_svmrank`).

    Parameters
    ----------
    C : float, default=1.0
        Slack penalty ``C > 0``.
    method : str, optional
        Solve method of :class:`~qpsvm.RankingSVM` (``"qp"``, ``"working_set"``: exact;
        ``"subgradient"``). ``None``: its measured default (``default_method()``).
    tol : float, default=1e-9
        Relative duality gap the solution is certified at.
    solver : str or None, default=None
        CVXPY backend for exact methods.
    solver_options : dict or None, default=None
        Extra keyword options of the solve method.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        ``w``; the score of an item is ``coef_ @ x``.
    pairs_ : ndarray of shape (n_pairs, 2)
        The preference pairs trained on.
    n_features_in_ : int
    n_iter_ : int
    certificate_ : Certificate
    solution_ : Solution
        ``alpha`` and ``xi`` are per pair, in the order of ``pairs_``.
    formulation_ : str
        ``"RankingSVM"``.

    Examples
    --------
    Teams described by features, ranked from game outcomes ``(winner, loser)``:

    >>> from qpsvm.estimators import RankSVM
    >>> teams = [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]
    >>> ranker = RankSVM(C=10.0).fit(teams, pairs=[[0, 2], [2, 1], [0, 1]])
    >>> [int(i) for i in (-ranker.predict(teams)).argsort()], ranker.certificate_.passed
    ([0, 2, 1], True)
    """

    def __init__(
        self,
        C: float = 1.0,
        method: str | None = None,
        tol: float = DEFAULT_TOL,
        solver: str | None = None,
        solver_options: dict | None = None,
    ) -> None:
        self.C = C
        self.method = method
        self.tol = tol
        self.solver = solver
        self.solver_options = solver_options

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = False
        return tags

    def fit(
        self,
        X: Any,
        y: Any = None,
        groups: Any = None,
        pairs: Any = None,
        pair_weight: Any = None,
    ) -> RankSVM:
        """Solve the ranking SVM exactly and certify the answer.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_items, n_features)
            Item features.
        y : array-like of shape (n_items,), optional
            Relevance labels (larger is better); pairs are formed inside each group.
        groups : array-like of shape (n_items,), optional
            Query identifiers for ``y`` (default: one group).
        pairs : array-like of int, shape (n_pairs, 2), optional
            Explicit preferences ``(preferred, other)``, instead of ``y``.
        pair_weight : array-like of shape (n_pairs,), optional
            Slack weights ``s_p`` in the order of the pairs.

        Returns
        -------
        self
        """
        from qpsvm.formulations import RankingSVM

        with typed_errors():
            X = validate_data(self, X, accept_sparse="csr", dtype=np.float64)
        f = RankingSVM(X, pairs=pairs, y=y, groups=groups, C=self.C, pair_weight=pair_weight)
        sol, cert = solve_certified(f, self.method, self.solver, self.tol, self.solver_options)
        self.coef_ = np.asarray(sol.w, dtype=np.float64)
        self.pairs_ = f.pairs
        self.n_iter_ = int(sol.n_iter)
        self.certificate_ = cert
        self.solution_ = sol
        self.formulation_ = type(f).__name__
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Scores ``w . x`` of the items; sort them in decreasing order to rank."""
        check_is_fitted(self, "coef_")
        with typed_errors():
            X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return np.asarray(X @ self.coef_).ravel()

    def score(self, X: Any, y: Any = None, groups: Any = None, pairs: Any = None) -> float:
        """Fraction of preference pairs ordered correctly (ties count one half).

        Pairs come from ``y`` and ``groups`` or are given explicitly, as in :meth:`fit`; see
        :func:`qpsvm.metrics.pairwise_accuracy`. NDCG@k and Kendall's tau are in
        :mod:`qpsvm.metrics`: ``ndcg_at_k(y, ranker.predict(X), groups, k=10)``.
        """
        from qpsvm.metrics import pairwise_accuracy

        return pairwise_accuracy(y, self.predict(X), groups, pairs=pairs)

r"""The ranking SVM (Herbrich et al. 2000; Joachims, KDD 2002) with slack.

For preference pairs ``p = (i, j)`` (item ``i`` preferred over item ``j``) the ranking SVM reads

.. math::

    \min_{w, \xi}\ \tfrac12 \|w\|^2 + C \sum_p s_p \xi_p
    \quad\text{s.t.}\quad w \cdot (x_i - x_j) \ge 1 - \xi_p,\; \xi_p \ge 0,

with pair weights ``s_p`` and no intercept (it would cancel in every difference). It *is* the
binary soft-margin SVM without intercept on the difference vectors ``z_p = x_i - x_j``, all
labelled ``+1``, so :class:`RankingSVM` is a :class:`~qpsvm.formulations.binary.BinaryFormulation`
whose data matrix is the pair-difference operator ``Z = D X`` (:class:`PairDifferences`, with
``D`` the sparse ``n_pairs x n_items`` matrix of ``+1/-1`` entries), never formed: ``Z w`` is
``(X w)[i] - (X w)[j]`` and ``Z^T a = X^T (D^T a)``. Memory stays proportional to the items plus
the pairs' index arrays. Its dual, certificate and refinement are the binary ones:

.. math::

    D(\alpha) = \sum_p \alpha_p - \tfrac12 \Big\|\sum_p \alpha_p (x_i - x_j)\Big\|^2,
    \quad 0 \le \alpha_p \le C s_p.

Pairs come explicitly (rows ``(preferred, other)``: pairwise human judgements, game outcomes
``(winner, loser)``) or from relevance labels and query groups: every pair inside a group with
``y_i > y_j`` (:func:`make_pairs`, SVM-rank's and LETOR's construction). Conversions of other
programs' ``C`` are in :mod:`qpsvm.conventions` (``C_from_svmrank``, ``C_from_dlib_rank``,
``C_from_pair_svm``).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from qpsvm._lazy import lazy_module
from qpsvm._validation import (
    _check_label_vector,
    check_data,
    check_data_product,
    check_positive,
    check_sample_weight,
    check_vector,
)
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.formulations.binary import BinaryFormulation
from qpsvm.formulations.model import CvxModel
from qpsvm.kernels import LINEAR
from qpsvm.solution import Candidate
from qpsvm.verify.ranking_sweep import QueryLayout, layout

cp = lazy_module("cvxpy")

#: Problems with at most this many pairs are solved by the 1-slack method as one window of
#: every pair from ``w = 0`` (:func:`qpsvm.solvers.one_slack._all_pairs`), without planes
#: (measured, 319 to 1978 pairs, ``d`` 5 to 8, dlib's ``c`` 10 to 1e4: 1.5 to 3.6 ms against
#: 2.2 to 26 ms by the planes; at 3452 pairs, ``c = 1``, 5.1 against 2.7 ms); their copy of
#: ``X`` sums no plane (:attr:`RankingSVM.level_sums`, read by the planes only: 1 us of the
#: 75 us solve of 319 pairs).
DIRECT_PAIRS = 2000

__all__ = ["PairDifferences", "RankingSVM", "check_pairs", "make_pairs", "pair_margins"]


def _difference_matrix(pairs: np.ndarray, n_items: int) -> sp.csr_matrix:
    """The sparse ``n_pairs x n_items`` matrix ``D`` with ``+1`` at ``(p, i_p)``, ``-1`` at
    ``(p, j_p)``."""
    m = pairs.shape[0]
    rows = np.concatenate([np.arange(m), np.arange(m)])
    cols = np.concatenate([pairs[:, 0], pairs[:, 1]])
    vals = np.concatenate([np.ones(m), -np.ones(m)])
    return sp.csr_matrix((vals, (rows, cols)), shape=(m, n_items))


def check_pairs(pairs: Any, n_items: int) -> np.ndarray:
    """Validate preference pairs: an integer array of rows ``(preferred, other)``.

    Parameters
    ----------
    pairs : array-like of shape (n_pairs, 2)
        Row indices of ``X``; row ``p`` says item ``pairs[p, 0]`` is preferred over
        ``pairs[p, 1]``.
    n_items : int
        Number of rows of ``X``.

    Returns
    -------
    ndarray of shape (n_pairs, 2), dtype intp

    Raises
    ------
    InvalidTypeError
        If the entries are not integers.
    InvalidInputError
        For a wrong shape, no pair, an index out of ``[0, n_items)``, or a pair of an item
        with itself.
    """
    try:
        arr = np.asarray(pairs)
    except (TypeError, ValueError) as exc:
        raise InvalidTypeError(f"pairs must be an integer array: {exc}") from None
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        arr = arr.astype(np.intp)
    if arr.dtype.kind not in "iu":
        raise InvalidTypeError(
            f"pairs must hold integer row indices of X, got dtype {arr.dtype}; pass e.g. "
            "np.array([[preferred, other], ...])."
        )
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise InvalidInputError(
            f"pairs must have shape (n_pairs, 2), one row (preferred, other) per pair; got shape "
            f"{arr.shape}."
        )
    if arr.shape[0] == 0:
        raise InvalidInputError("pairs is empty; a ranking SVM needs at least one pair.")
    bad = np.flatnonzero(np.any((arr < 0) | (arr >= n_items), axis=1))
    if bad.size:
        p = int(bad[0])
        raise InvalidInputError(
            f"pairs[{p}] = {arr[p].tolist()} is out of range: indices must be rows of X, in "
            f"[0, {n_items}) ({bad.size} such pair(s))."
        )
    same = np.flatnonzero(arr[:, 0] == arr[:, 1])
    if same.size:
        p = int(same[0])
        raise InvalidInputError(
            f"pairs[{p}] = {arr[p].tolist()} pairs item {arr[p, 0]} with itself "
            f"({same.size} such pair(s)); an item cannot be preferred over itself: drop them."
        )
    return arr.astype(np.intp, copy=True)


def _group_codes(groups: Any, n: int) -> np.ndarray:
    """Integer codes of the query identifiers, equal for the items of one query and distinct
    across queries, in the order of the identifiers: integer identifiers as they are (their
    dense ranks, :func:`~qpsvm.verify.ranking_sweep.layout`'s query codes, cost a sort that
    ``np.unique`` makes a sizeable share of a small problem's construction), the others'
    dense ranks ``0 .. Q - 1`` (all 0 for ``groups=None``)."""
    if groups is None:
        return np.zeros(n, dtype=np.intp)
    g = _check_label_vector(groups, n, "groups")
    if g.dtype.kind == "i" or (g.dtype.kind == "u" and g.dtype.itemsize < 8):
        return g.astype(np.intp, copy=False)  # read, never kept or written
    try:
        return np.unique(g, return_inverse=True)[1].ravel().astype(np.intp)
    except TypeError as exc:
        raise InvalidTypeError(f"groups must be mutually comparable: {exc}") from None


def make_pairs(y: Any, groups: Any = None) -> np.ndarray:
    """Every pair ``(i, j)`` inside a query group with ``y_i > y_j`` (relevance labels).

    Pairs are formed without an ``n x n`` comparison: items are sorted by (group, relevance), and
    item ``i`` is paired with the block of items of its group that sort before its relevance
    level. The result is sorted by ``(i, j)``; items of equal relevance are never paired.

    Parameters
    ----------
    y : array-like of shape (n_items,)
        Relevance labels (numbers; larger is better).
    groups : array-like of shape (n_items,), optional
        Query identifiers (any hashable values, e.g. LETOR's ``qid``). ``None``: one group.

    Returns
    -------
    ndarray of shape (n_pairs, 2), dtype intp
        Rows ``(preferred, other)``.

    Raises
    ------
    InvalidInputError
        If the lengths differ or no group has two distinct relevance levels.
    """
    rel = check_vector(y, np.size(y), "y (relevance labels)")
    n = rel.shape[0]
    codes = _group_codes(groups, n)
    order = np.lexsort((rel, codes))
    ys, gs = rel[order], codes[order]
    position = np.arange(n)
    group_start = np.searchsorted(gs, gs, side="left")
    new_level = np.ones(n, dtype=bool)
    new_level[1:] = (gs[1:] != gs[:-1]) | (ys[1:] != ys[:-1])
    level_start = np.maximum.accumulate(np.where(new_level, position, 0))
    counts = level_start - group_start
    total = int(counts.sum())
    if total == 0:
        where = "any group" if groups is not None else "y (one group: groups=None)"
        raise InvalidInputError(
            f"the relevance labels yield no pair: no item of {where} is more relevant than "
            "another item of its group. Each group needs at least two distinct labels."
        )
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    preferred = np.repeat(order, counts)
    other = order[np.repeat(group_start, counts) + offsets]
    pairs = np.column_stack([preferred, other]).astype(np.intp)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def pair_margins(
    items: np.ndarray | sp.csr_matrix, pairs: np.ndarray, w: cp.Variable
) -> tuple[cp.Expression, dict[str, cp.Variable], dict[str, cp.Constraint]]:
    """The margins ``w . (x_i - x_j)`` of ``pairs`` in CVXPY, with the variables and
    constraints they need: the differences ``D X[used]`` themselves, or (when that has more
    nonzeros) a variable ``score == X[used] @ w`` of the items the pairs use, with dense items
    centred, and margins ``D @ score`` (see :meth:`RankingSVM.build`)."""
    m = pairs.shape[0]
    used, local = np.unique(pairs, return_inverse=True)
    D = _difference_matrix(local.reshape(pairs.shape), used.size)
    items = items[used]
    if sp.issparse(items):  # nnz(x_i - x_j) <= nnz(x_i) + nnz(x_j)
        explicit = int(np.diff(items.indptr)[local].sum()) <= items.nnz + 2 * m
    else:
        explicit = m * items.shape[1] <= items.size + 2 * m
    if explicit:
        return (D @ items) @ w, {}, {}
    if not sp.issparse(items):
        items = items - items.mean(axis=0)
    score = cp.Variable(used.size, name="score")
    return D @ score, {"score": score}, {"score": score == items @ w}


class PairDifferences:
    r"""The pair-difference matrix :math:`Z = D X` (row ``p``: :math:`x_{i_p} - x_{j_p}`), never
    formed.

    Products cost ``O(nnz(X) + n_pairs)``: ``Z @ v`` is ``(X v)[i] - (X v)[j]`` and
    ``Z.T @ u`` is ``X^T (D^T u)``. Indexing rows (``Z[idx]``) forms those rows only, as an array
    (or CSR matrix for sparse ``X``), which is what the binary certificate and refinement need
    for the pairs on the margin.

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_items, n_features)
    pairs : ndarray of shape (n_pairs, 2)
        Validated pairs (:func:`check_pairs`).
    """

    ndim = 2

    def __init__(self, X: np.ndarray | sp.csr_matrix, pairs: np.ndarray) -> None:
        self.items = X
        self.pairs = pairs

    @cached_property
    def D(self) -> sp.csr_matrix:
        """The ``n_pairs x n_items`` difference matrix (:func:`_difference_matrix`), built on
        first use: ``Z @ v`` and the rows of pairs never need it (the per-pair slacks of a
        1-slack solution are formed from ``Z @ w`` alone)."""
        return _difference_matrix(self.pairs, self.items.shape[0])

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_pairs, n_features)``."""
        return (int(self.pairs.shape[0]), int(self.items.shape[1]))

    def __repr__(self) -> str:
        return (
            f"PairDifferences(n_pairs={self.shape[0]}, n_items={self.items.shape[0]}, "
            f"n_features={self.shape[1]})"
        )

    def __matmul__(self, v: Any) -> np.ndarray:
        """``Z @ v`` for a vector or matrix ``v`` with ``n_features`` rows."""
        s = self.items @ v
        s = s.toarray() if sp.issparse(s) else np.asarray(s)
        return s[self.pairs[:, 0]] - s[self.pairs[:, 1]]

    def __getitem__(self, idx: Any) -> np.ndarray | sp.csr_matrix:
        """The rows ``x_i - x_j`` of the pairs ``idx``, formed explicitly."""
        rows = self.pairs[idx]
        return self.items[rows[..., 0]] - self.items[rows[..., 1]]

    def rmatvec(self, u: np.ndarray, idx: Any = None) -> np.ndarray:
        """``Z[idx]^T u = sum_p u_p (x_i - x_j)`` over the pairs ``idx`` (default: all)."""
        D = self.D if idx is None else self.D[np.asarray(idx, dtype=np.intp)]
        return np.asarray(self.items.T @ (D.T @ u)).ravel()

    @property
    def T(self) -> _TransposedPairDifferences:
        """The transpose, for ``Z.T @ u``."""
        return _TransposedPairDifferences(self)

    def materialize(self) -> np.ndarray | sp.csr_matrix:
        """All differences as a ``n_pairs x n_features`` array (CSR for sparse ``X``).

        Memory ``n_pairs * n_features``: meant for small problems and for handing the data to a
        binary solver (:func:`qpsvm.conventions.C_from_pair_svm`).
        """
        Z = self.D @ self.items
        return Z.tocsr() if sp.issparse(Z) else np.asarray(Z)


class _TransposedPairDifferences:
    """``Z^T`` of a :class:`PairDifferences`, supporting ``@`` only."""

    ndim = 2

    def __init__(self, Z: PairDifferences) -> None:
        self.Z = Z

    @property
    def shape(self) -> tuple[int, int]:
        return self.Z.shape[::-1]

    def __matmul__(self, u: np.ndarray) -> np.ndarray:
        return np.asarray(self.Z.items.T @ (self.Z.D.T @ u))


class RankingSVM(BinaryFormulation):
    r"""Ranking SVM: :math:`\min \tfrac12\|w\|^2 + C\sum_p s_p\xi_p` s.t.
    :math:`w\cdot(x_i - x_j) \ge 1 - \xi_p` for each pair ``p = (i, j)``, ``i`` preferred.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_items, n_features)
        Item features.
    pairs : array-like of int, shape (n_pairs, 2), optional
        Preferences as rows ``(preferred, other)``. Repeating a pair equals weighting it.
    y : array-like of shape (n_items,), optional
        Relevance labels (instead of ``pairs``): every pair inside a group with ``y_i > y_j``.
    groups : array-like of shape (n_items,), optional
        Query identifiers for ``y`` (default: one group).
    C : float, default=1.0
        Slack penalty. SVM-rank's ``-c`` is ``c / n_queries``, dlib's is ``c / n_pairs``, a binary
        SVM on mirrored pair differences with ``C = c`` is ``2c``: see :mod:`qpsvm.conventions`.
    pair_weight : array-like of shape (n_pairs,), optional
        Slack weights ``s_p >= 0`` in the order of :attr:`pairs` (for pairs built from ``y``,
        that of :func:`make_pairs`).
    loss : {"hinge", "squared_hinge"}, default="hinge"
        The loss of each pair's margin ``w . (x_i - x_j)``.
    penalty : {"l2", "l1", "l1_l2"}, default="l2"
    intercept : {"none"}, default="none"
        The only mode: an intercept cancels in every pair difference, so any other is refused
        with an :class:`~qpsvm.exceptions.InvalidInputError` saying so.
    l1_ratio : float, default=0.5
        ``r`` of ``penalty="l1_l2"``: ``r ||w||_1 + (1 - r)/2 ||w||^2``.

    Notes
    -----
    The hinge loss with the L2 penalty is this class (working set, 1-slack method, rational
    oracle). Every other (loss, penalty) returns a
    :class:`~qpsvm.formulations.composed_ranking.ComposedRanking`: the same pairs, the pieces'
    CVXPY problem, and the Fenchel certificate of the pieces; see
    :doc:`/formulations/composed`.

    Attributes
    ----------
    items : ndarray or csr_matrix of shape (n_items, n_features)
        The item features (float64 copy).
    pairs : ndarray of shape (n_pairs, 2)
        The preference pairs ``(preferred, other)``.
    X : PairDifferences
        The pair-difference operator ``Z`` with rows ``x_i - x_j``: the data of the equivalent
        binary SVM, never formed.
    y : ndarray of shape (n_pairs,)
        All ``+1``: each difference is a positive example of that binary SVM.
    sample_weight : ndarray of shape (n_pairs,)
        The pair weights ``s_p``.

    Examples
    --------
    Game outcomes between teams described by features, as ``(winner, loser)`` rows:

    >>> import qpsvm
    >>> teams = [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]
    >>> f = qpsvm.RankingSVM(teams, pairs=[[0, 2], [2, 1], [0, 1]], C=10.0)
    >>> sol = f.solve()
    >>> f.certify(sol).passed
    True
    >>> [int(i) for i in (-f.decision_function(teams, sol)).argsort()]
    [0, 2, 1]
    """

    # the binary methods but SMO, whose kernel rows would be pair differences' Gram rows
    methods: ClassVar[tuple[str, ...]] = (
        *(m for m in BinaryFormulation.methods if m != "smo"),
        "one_slack",
    )
    exact_oracle: ClassVar[str] = "qpsvm.solvers.exact:solve_exact_ranking"
    routes_composed: ClassVar[str] = "qpsvm.formulations.composed_ranking:composed_ranking"
    certifier: ClassVar[str] = "qpsvm.verify.ranking:certify_ranking"
    direct_restricted: ClassVar[str] = "qpsvm.solvers.direct:solve_restricted_primal"
    routes_dask: ClassVar[str] = "qpsvm.dask.ranking:DaskRankingSVM"

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
        # relevance labels of an array's rows: X is copied once the layout is known, so that
        # the copy's pass also sums the plane of w = 0 where the planes run (check_data_product)
        later = pairs is None and y is not None and pair_weight is None
        later = later and type(X) is np.ndarray and X.ndim == 2 and X.size > 0
        items = X if later else check_data(X)
        n_items = items.shape[0]
        #: ``X^T`` of the layout's level difference and the columns' squared norms, from the
        #: copy's pass (``None`` where it did not make them: at most :data:`DIRECT_PAIRS`).
        self.level_sums: tuple[np.ndarray, np.ndarray] | None = None
        self._pairs: np.ndarray | None = None
        self._labels: tuple[np.ndarray, Any] | None = None
        self.query_layout: QueryLayout | None = None
        if pairs is not None:
            if y is not None or groups is not None:
                raise InvalidInputError(
                    "give the preferences either as pairs=... or as relevance labels y=... "
                    "(with groups=...), not both."
                )
            self._pairs = check_pairs(pairs, n_items)
            n = int(self._pairs.shape[0])
        elif y is not None:
            if np.size(y) != n_items:
                raise InvalidInputError(
                    f"y has {np.size(y)} relevance labels but X has {n_items} items; they must "
                    "match."
                )
            rel = check_vector(y, n_items, "y (relevance labels)")
            lay = layout(rel, _group_codes(groups, n_items))
            if lay.n_pairs == 0:
                make_pairs(rel, groups)  # raises the error that says why there is no pair
            self._labels = (rel, groups)
            n = lay.n_pairs
            if pair_weight is None:
                self.query_layout = lay
            if later:  # the planes run beyond DIRECT_PAIRS pairs only
                planes = lay.difference if lay.n_pairs > DIRECT_PAIRS else None
                items, self.level_sums = check_data_product(X, planes)
        else:
            raise InvalidInputError(
                "no preferences given"
                + (" (groups needs relevance labels y)" if groups is not None else "")
                + ": pass pairs=[[preferred, other], ...] or relevance labels y=... with "
                "groups=... ."
            )
        self.items = items
        self._n_pairs = n
        weight_shape = (
            np.shape(np.asarray(pair_weight, dtype=object)) if pair_weight is not None else ()
        )
        if len(weight_shape) == 1 and weight_shape[0] != n:
            raise InvalidInputError(
                f"pair_weight has {weight_shape[0]} entries but there are {n} pairs (in the "
                "order of f.pairs; for pairs built from y and groups, of make_pairs(y, groups))."
            )
        self.classes_ = np.array([-1.0, 1.0])
        self.C = check_positive(C, "C")
        self.fit_intercept = False
        self._pair_weight = (
            None if pair_weight is None else check_sample_weight(pair_weight, n, "pair_weight")
        )
        self._differences: PairDifferences | None = None
        self.kernel = LINEAR
        self._model = None

    def default_method(self) -> str:
        """``"one_slack"`` for pairs from relevance labels with unit pair weights (a
        :attr:`query_layout`): the 1-slack cutting plane never lists the pairs (measured
        against the full QP and the working set at 35 to 501,626 pairs, dlib's ``c`` 1 to
        ``1e4``: docs/performance.md); else the binary defaults on the pair differences
        (:meth:`BinaryFormulation.default_method
        <qpsvm.formulations.binary.BinaryFormulation.default_method>`)."""
        if self.query_layout is not None:
            return "one_slack"
        return super().default_method()

    def _fails_by_scaling(self, cand: Candidate, tol: float) -> bool:
        """For pairs given by relevance labels, never: the certifier's sweeps
        (:func:`~qpsvm.verify.ranking.certify_grouped`) settle a bare ``w`` without the pairs,
        in less time than the screen's twelve objectives over them (200 x 40 graded: 3 ms
        against 22 ms), and fetch the solution only where they fail."""
        if self.query_layout is not None:
            return False
        return super()._fails_by_scaling(cand, tol)

    @property
    def pairs(self) -> np.ndarray:
        """The preference pairs ``(preferred, other)``: formed on first use for pairs given by
        relevance labels (:func:`make_pairs`)."""
        if self._pairs is None:
            assert self._labels is not None
            self._pairs = make_pairs(*self._labels)
        return self._pairs

    @property
    def X(self) -> PairDifferences:
        """The pair-difference operator ``Z`` (rows ``x_i - x_j``), built on first use."""
        if self._differences is None:
            self._differences = PairDifferences(self.items, self.pairs)
        return self._differences

    @property
    def y(self) -> np.ndarray:
        """All ``+1``: each difference is a positive example of the binary SVM."""
        return np.ones(self._n_pairs)

    @property
    def margin(self) -> np.ndarray:
        """Unit margins, one per pair."""
        return np.ones(self._n_pairs)

    @property
    def sample_weight(self) -> np.ndarray:
        """The pair weights ``s_p`` (ones unless ``pair_weight`` was given)."""
        return np.ones(self._n_pairs) if self._pair_weight is None else self._pair_weight

    @property
    def n_samples(self) -> int:
        """Number of pairs (the samples of the equivalent binary SVM), counted without forming
        them."""
        return self._n_pairs

    @property
    def n_features(self) -> int:
        """Number of item features."""
        return int(self.items.shape[1])

    @property
    def n_pairs(self) -> int:
        """Number of preference pairs (the samples of the equivalent binary SVM)."""
        return self._n_pairs

    @property
    def n_items(self) -> int:
        """Number of items (rows of the feature matrix)."""
        return int(self.items.shape[0])

    def check_b(self, b: Any) -> float:
        """A candidate intercept, which must be 0: the ranking SVM has none."""
        if type(b) is float and b == 0.0:  # a Solution's own b, without numpy's conversions
            return 0.0
        value = float(np.asarray(b, dtype=np.float64).reshape(-1)[0]) if np.size(b) == 1 else None
        if value != 0.0:
            raise InvalidInputError(
                f"the ranking SVM has no intercept but the candidate has b={b!r}: an item-score "
                "intercept cancels in every difference x_i - x_j, so pass b=0; a binary "
                "classifier trained on pair differences must be fitted with fit_intercept=False."
            )
        return 0.0

    def gram_rows(self, idx: np.ndarray) -> np.ndarray:
        """Rows ``(Z Z^T)[idx, :]`` of the pairs' Gram matrix, from the rows ``Z[idx]`` only."""
        rows = self.X[idx]
        return np.ascontiguousarray((self.X @ rows.T).T)

    def gram_block(self, idx: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray:
        """The block ``(Z Z^T)[idx][:, cols]`` (``cols`` defaults to ``idx``)."""
        cols = idx if cols is None else cols
        block = self.X[idx] @ self.X[cols].T
        return block.toarray() if sp.issparse(block) else np.asarray(block)

    def decision_function(self, X: Any, solution: Any) -> np.ndarray:
        """Scores ``w . x`` of new items; a higher score ranks higher.

        ``solution`` is a :class:`~qpsvm.Solution` or a weight vector ``w``.
        """
        return np.asarray(self.check_features(check_data(X)) @ self.weights_of(solution)).ravel()

    def predict(self, X: Any, solution: Any) -> np.ndarray:
        """Ranking scores of new items (:meth:`decision_function`): sort them, descending, to
        rank."""
        return self.decision_function(X, solution)

    def build(self, subset: Any = None, at_bound: Any = None) -> CvxModel:
        """Build the primal over the pairs of ``subset`` (default: all pairs).

        The margins ``w . (x_i - x_j)`` are stated in whichever form has fewer nonzeros: the
        differences ``Z = D X[used]`` themselves (``n_pairs * n_features`` entries for dense
        items), or a variable ``score`` of the items the pairs use, ``score == X[used] @ w``,
        with margins ``D @ score`` (``nnz(X) + 2 n_pairs`` entries: far fewer when items take
        part in many pairs). The differences are the more accurate form: on features scaled by
        ``1e4``, Clarabel stopped above a relative gap of ``1e-9`` on 11 of 111 small problems in
        the score form, on none with the differences. In the score form dense items are centred
        (``X[used] - mean``): a common shift cancels in every difference, and without it the
        scores of features shifted by ``1e3`` are ``1e3`` times the margins they differ by.
        Pairs in ``at_bound`` are folded in with ``alpha_p = C s_p`` (the linear term
        ``-C sum_p s_p w.(x_i - x_j)``), as for
        :meth:`SoftMarginPrimal.build <qpsvm.SoftMarginPrimal.build>`.

        Variables ``w``, ``xi`` (and ``score`` in the score form); constraints ``margin``
        (``w . (x_i - x_j) >= 1 - xi_p``, dual ``alpha_p >= 0``), ``slack`` (``xi >= 0``, dual
        ``C s_p - alpha_p``) and, in the score form, ``score`` (equality); parameter ``C``.
        """
        idx = None if subset is None else np.asarray(subset, dtype=np.intp).ravel()
        if idx is not None and idx.size == 0:
            raise InvalidInputError("subset is empty; give at least one pair index.")
        pairs = self.pairs if idx is None else self.pairs[idx]
        w = cp.Variable(self.n_features, name="w")
        xi = cp.Variable(pairs.shape[0], name="xi")
        margins, variables, constraints = pair_margins(self.items, pairs, w)
        variables = {"w": w, "xi": xi, **variables}
        constraints["margin"] = margins >= 1 - xi
        constraints["slack"] = xi >= 0
        C = cp.Parameter(nonneg=True, value=self.C, name="C")
        s = self.sample_weight if idx is None else self.sample_weight[idx]
        objective = 0.5 * cp.sum_squares(w) + C * (s @ xi)
        if at_bound is not None and len(at_bound):
            bound = np.asarray(at_bound, dtype=np.intp)
            objective = objective - C * (self.X.rmatvec(self.sample_weight[bound], bound) @ w)
        problem = cp.Problem(cp.Minimize(objective), list(constraints.values()))
        return CvxModel(problem, variables, constraints, {"C": C}, idx)

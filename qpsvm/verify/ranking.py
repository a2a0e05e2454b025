r"""Certificates for the ranking SVM — the binary certificate on pair differences.

The ranking SVM (:class:`~qpsvm.RankingSVM`) is the binary soft-margin SVM without intercept on
the differences :math:`z_p = x_i - x_j`, all labelled ``+1``. Its dual, in the sign convention of
the binary case (:mod:`qpsvm.verify.conventions`), has one variable per pair:

.. math::

    D(\alpha) = \sum_p \alpha_p - \tfrac12 \Big\|\sum_p \alpha_p (x_i - x_j)\Big\|^2,
    \qquad 0 \le \alpha_p \le C s_p,

with no balance constraint (no intercept) and stationarity :math:`w = X^T D^T \alpha`. The
multiplier :math:`\alpha_p` is the CVXPY dual value of the pair's ``margin`` constraint
``score_i - score_j >= 1 - xi_p``; the dual of ``slack`` is :math:`C s_p - \alpha_p`.

The formulation's data matrix is the pair-difference operator, so the binary certifier applies
unchanged: products with it never form the differences, and the dual point built from a bare
``w`` forms only the rows of the pairs on the margin.

Pairs from relevance labels (every ``y_i > y_j`` inside a query, unit pair weights) are never
formed: :func:`certify_grouped` sums over them by sorting (:mod:`qpsvm.verify.ranking_sweep`).
Its dual point is read off the margins ``r_p = s_i - s_j`` of the candidate's item scores ``s``
at a threshold ``tau``: :math:`\alpha_p = C` on the pairs short of the margin (``r_p < 1 - tau``,
aggregated per item into ``a_B = cnt - cnt'`` and their number ``n_B``), :math:`\alpha_p = 0`
beyond it, and on the few pairs ``M`` within ``tau`` of it the exact maximiser of the dual with
the others fixed (a box-constrained QP in ``|M|`` variables, :func:`window_dual`). Then

.. math::

    D(\alpha) = C n_B + \sum_{p \in M} \alpha_p - \tfrac12 \big\|X^T (C a_B + D_M^T
    \alpha_M)\big\|^2,

and the primal's hinge sum :math:`\sum_p \max(0, 1 - s_i + s_j)` is bounded from above by the
same sweep on enclosures of the scores: both ends of the certificate are rigorous
(:mod:`qpsvm.verify.rigorous`) at ``O(n log n)`` cost.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from qpsvm._jit import CALLEE, ENTRY
from qpsvm._numerics import (
    ABS_ROWS,
    add_columns_squares,
    fsum,
    fsum_dot,
    next_down,
    next_up,
    sum_error,
    uncompiled,
)
from qpsvm._validation import check_tol
from qpsvm.contract import RankingProblem
from qpsvm.solution import Candidate
from qpsvm.verify.ascent import UNSHRINK_EVERY
from qpsvm.verify.binary import certify_binary
from qpsvm.verify.box_qp import (
    ASCENT_EPOCHS,
    ASCENT_ON,
    ASCENT_ROUND,
    ASCENT_TOL,
    ASCENT_TRY,
    LIMIT_PAIRS,
    LIMIT_SLACK,
    box_qp,
)
from qpsvm.verify.certificate import (
    DEFAULT_TOL,
    GOOD_ENOUGH,
    Certificate,
    evaluation_allowance,
    relative,
)
from qpsvm.verify.ranking_fused import (
    FusedBounds,
    FusedSettings,
    _fsum,
    _gamma,
    fused_all_pairs,
    fused_certificate,
    pair_differences,
    pass_scores,
)
from qpsvm.verify.ranking_sweep import QueryLayout, pair_sums, sorted_by_query, window_sides
from qpsvm.verify.rigorous import (
    TINY,
    DualSums,
    U,
    _max_abs,
    dd_add,
    down,
    dual_estimate,
    dual_lower_value,
    enclosed_product,
    gamma,
    lower_sum,
    primal_upper,
    sum2_upper,
    up,
    upper_sum,
)

__all__ = [
    "CountsProduct",
    "WindowDual",
    "bound_sets",
    "certify_all_pairs",
    "certify_grouped",
    "certify_grouped_point",
    "certify_ranking",
    "counts_products",
    "fused_point",
    "grouped_expansion",
    "grouped_gain_lower",
    "grouped_hinge_upper",
    "grouped_hinge_value",
    "hinge_upper",
    "level_product",
    "pair_multipliers",
    "sorted_hinge_bounds",
    "window_dual",
    "window_hinge_bounds",
    "window_sets",
]

#: Thresholds ``tau`` on ``|r_p - 1|`` for "on the margin", tightest first.
WINDOW_TAUS = (1e-12, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2)
#: Most pairs listed in a window (a larger window is skipped).
MAX_WINDOW = 20_000
#: The share of the items whose pairs :func:`window_hinge_bounds` checks one by one, at most
#: (the items that moved more than half the room of their pairs' sides since the window was
#: cut); beyond it the hinge sum is swept (measured, the compiled check against the re-sort
#: and sweep at the one-slack finish's point, queries of 20 to 60 items at dlib's ``c`` 1 to
#: 100: up to 1/16 the check is the cheaper, 200 x 40 binary ``c = 1`` 0.92 -> 0.68 ms a
#: certificate, 1000 x 40 binary ``c = 100`` 4.5 -> 3.3 ms; at 1/8 the items moved at
#: ``c = 10``, 100 x 60, cost 0.5 -> 0.6 ms, at 1/4 1000 x 40 binary 3.9 -> 5.3 ms).
SIDE_ITEMS = 1 / 16
#: A plain products' gap beyond this many of its rounding allowances (twice what the exact
#: gap may lose to the float objectives' own error, :func:`_rounding_hides`) is not retried
#: with Dot2's enclosures (measured, the one-slack finish's first window at dlib's ``c = 1``
#: on the binary cut of graded labels, 200 x 40: its sides wrong, a gap near ``1e-5``, the
#: retry 3.5 ms of a 16 ms solve).
ROUNDING_ALLOWANCES = 4.0
#: The constants above as the compiled pass of small problems takes them.
FUSED = FusedSettings(
    MAX_WINDOW,
    LIMIT_PAIRS,
    LIMIT_SLACK,
    (ASCENT_ROUND, ASCENT_TOL, ASCENT_TRY, *ASCENT_EPOCHS, ASCENT_ON, UNSHRINK_EVERY),
)


def certify_ranking(
    f: RankingProblem,
    cand: Candidate,
    tol: float = DEFAULT_TOL,
    hints: Sequence[np.ndarray] = (),
    ceiling: float = math.inf,
) -> Certificate:
    """Certify a candidate ``w`` (intercept 0) and/or pair duals ``alpha`` of a ranking SVM.

    Parameters
    ----------
    f : RankingSVM
    cand : Candidate
        ``w`` of shape ``(n_features,)`` and/or ``alpha`` of shape ``(n_pairs,)``.
    tol : float
        Relative tolerance of the test.
    hints : sequence of ndarray, optional
        More dual points to try (see :func:`~qpsvm.verify.binary.certify_binary`); for a bare
        ``w`` of a problem given by relevance labels, only where the sweeps'
        (:func:`certify_grouped`) do not pass it, the better certificate kept.
    ceiling : float, optional
        An upper bound on the optimum, where the search may stop (see
        :func:`~qpsvm.verify.binary.certify_binary`).
    """
    lay = f.query_layout
    grouped = None
    if lay is not None and cand.alpha is None:
        # a bare w by the sweeps, without the pairs; the hints (over the pairs) where it fails
        if cand.b is not None:
            f.check_b(cand.b)
        grouped = certify_grouped(f, f.check_w(cand.w), tol)
        if grouped.passed or not hints:
            return grouped
    cert = certify_binary(f, cand, tol, pairs=(f.items, f.pairs), hints=hints, ceiling=ceiling)
    return cert if grouped is None or cert.dual_objective > grouped.dual_objective else grouped


@dataclass(frozen=True)
class WindowDual:
    r"""A dual point of the ranking SVM read off item scores at a window ``tau``.

    Attributes
    ----------
    n_bound : int
        ``n_B``, pairs at ``alpha_p = C`` (margin below ``1 - tau``).
    bound_coef : ndarray of int64
        ``a_B = cnt - cnt'``: ``sum_{p in B} (x_i - x_j) = X^T a_B``.
    window : ndarray of shape (k, 2)
        The pairs ``M`` within ``tau`` of the margin, rows ``(i, j)``.
    alpha : ndarray of shape (k,)
        Their multipliers in ``[0, C]``: the exact maximiser of the dual with the others fixed.
    w : ndarray
        The primal point of the dual point, ``X^T (C a_B + D_M^T alpha_M)`` (rounded).
    expansion : tuple, optional
        The expansion ``X^T (C a_B + D_M^T alpha_M)`` enclosed (``hi, lo, err``) by the plain
        products, when :func:`window_dual` computed it with ``w``
        (:func:`grouped_expansion` then returns it).
    sides : tuple, optional
        The scores ``b`` and the window ``tau`` the sets were read off, when known
        (:func:`window_hinge_bounds`).
    """

    n_bound: int
    bound_coef: np.ndarray
    window: np.ndarray
    alpha: np.ndarray
    w: np.ndarray
    expansion: tuple | None = None
    sides: tuple[np.ndarray, float] | None = None


@dataclass(frozen=True)
class CountsProduct:
    r"""The product :math:`X^T c` of integer per-item coefficients ``c`` (a 1-slack plane's
    ``cnt - cnt'``), made by :func:`level_product` or :func:`counts_products` for
    :func:`window_dual`, which encloses the fixed part of its expansion off it.

    Attributes
    ----------
    items : array-like
        The ``X`` of the product.
    coef : ndarray of float64
        ``c``, integer-valued.
    product : ndarray
        ``X^T c`` in plain floating point, summed in any order.
    squares : ndarray or None
        The columns' squared norms ``sum_i x_ij^2`` of a dense ``X`` in floating point (any
        order), from which :func:`_counts_enclosure` bounds the product's rounding; ``None``
        for other ``X``.
    """

    items: Any
    coef: np.ndarray
    product: np.ndarray
    squares: np.ndarray | None


@numba.njit(**ENTRY)
def _columns_squares(M, v, hi, squares):  # pragma: no cover - compiled
    """``hi += M^T v`` and ``squares += (M * M)^T 1`` of a C-contiguous ``M`` in one pass, row
    by row (:func:`~qpsvm._numerics.add_columns_squares`)."""
    for i in range(M.shape[0]):
        add_columns_squares(M[i], v[i], hi, squares)


def level_product(
    X: Any, coef: np.ndarray, sums: tuple[np.ndarray, np.ndarray] | None = None
) -> CountsProduct:
    """``X^T c`` (:class:`CountsProduct`) of integer-valued ``coef``, for a dense ``X`` with its
    columns' squared norms: ``sums``, both summed already by the pass that copied ``X`` (its
    problem's ``level_sums``, of this ``coef``), else from one pass here
    (:func:`_columns_squares`, once that pays for its compile,
    :func:`~qpsvm._numerics.uncompiled`; before, its numpy equivalent, the same floats); every
    later :func:`counts_products` of ``X`` reuses the norms."""
    if not isinstance(X, np.ndarray):
        return CountsProduct(X, coef, _matvec_T(X, coef), None)
    if sums is not None:
        return CountsProduct(X, coef, *sums)
    if (
        X.dtype == np.float64
        and X.flags.c_contiguous
        and not uncompiled(_columns_squares, X.shape[0], ABS_ROWS)
    ):
        product, squares = np.zeros(X.shape[1]), np.zeros(X.shape[1])
        _columns_squares(X, np.ascontiguousarray(coef, dtype=np.float64), product, squares)
        return CountsProduct(X, coef, product, squares)
    return CountsProduct(X, coef, *_columns_squares_numpy(X, coef))


def _columns_squares_numpy(X: np.ndarray, coef: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_columns_squares` in numpy: the rows' terms added in the rows' order
    (``np.add.accumulate``, never pairwise), so the same floats."""
    X = np.asarray(X, dtype=np.float64)
    product = np.add.accumulate(X * np.asarray(coef, dtype=np.float64)[:, None], axis=0)[-1]
    return product, np.add.accumulate(X * X, axis=0)[-1]


def counts_products(level: CountsProduct, coefs: Sequence[np.ndarray]) -> list[CountsProduct]:
    """``X^T c`` (:class:`CountsProduct`) of each integer-valued row of ``coefs`` by one product
    with the ``X`` of ``level`` (one pass over the items for all of them), with ``level``'s
    squared norms."""
    X = level.items
    if isinstance(X, np.ndarray):  # coefficients as rows: (k x n) @ X, BLAS's fast layout
        products = np.vstack(coefs) @ X
    else:
        products = np.asarray(X.T @ np.column_stack(coefs)).T
    return [CountsProduct(X, c, p, level.squares) for c, p in zip(coefs, products, strict=True)]


def _counts_enclosure(C: float, counts: CountsProduct) -> tuple:
    r"""``C X^T c`` enclosed (``hi, lo, err``) from ``counts``: the plain product in any order
    is within :math:`\gamma_n |X|^T |c|` of the exact one, and by Cauchy and Schwarz
    :math:`(|X|^T |c|)_j \le \|x_{:j}\|_2 \|c\|_2` (measured on the one-slack finish's
    points: 1.5 to 2.3 times the sum itself, against 3 to 9.5 times for :math:`\max|c|
    \sum_i |x_{ij}|`); the squares and ``c . c`` are within :math:`\gamma_n` of theirs (plus
    :math:`n` underflows), the square roots within ``u``: the factor doubled covers them.
    The scaling by ``C`` adds one rounding of ``hi`` (``2u |hi|``) and scales the bound, each
    rounded up."""
    n = counts.items.shape[0]
    c = counts.coef
    norm = up(math.sqrt(up(float(c @ c))))
    columns = up(np.sqrt(up(counts.squares + n * TINY)))
    bound = up(up(up(2.0 * gamma(n) * norm) * columns) + n * TINY)
    hi = C * counts.product
    return hi, np.zeros_like(hi), up(up(C * bound) + up(2.0 * U * np.abs(hi)))


def _short_pairs(
    X: Any, scores: np.ndarray, coef_bound: np.ndarray, window: np.ndarray, counts: CountsProduct
) -> np.ndarray | None:
    r"""The window's pairs that ``counts`` counts as short of the margin at ``scores``
    (``s_j > fl(s_i - 1)``, the pairs of the 1-slack plane there, :math:`B \subseteq A`, ``A
    \setminus B`` inside the window), when ``counts`` is such a plane of ``X``: checked in
    integers, ``c = a_B + \sum_{p \in A \cap M} (e_i - e_j)``, so that :math:`X^T (C a_B) =
    C X^T c - C \sum_{A \cap M} (x_i - x_j)` exactly; ``None`` when it is not, or when the
    squared norms overflowed (the pass encloses ``v_0`` then)."""
    if counts.items is not X or counts.squares is None or not np.isfinite(counts.squares).all():
        return None
    # integers (below 2^53 in float64): exact
    rest = counts.coef - coef_bound
    k = window.shape[0]
    if uncompiled(_short_rest, k + rest.shape[0], SHORT_ITEMS):
        i, j = window[:, 0], window[:, 1]
        short = scores[j] > scores[i] - 1.0
        rest -= np.bincount(i[short], minlength=rest.shape[0])
        rest += np.bincount(j[short], minlength=rest.shape[0])
        return None if rest.any() else short
    short = np.empty(k, dtype=np.bool_)
    return short if _short_rest(scores, np.ascontiguousarray(window), rest, short) else None


#: How many window pairs and items :func:`_short_pairs` may check by numpy in a process
#: before :func:`_short_rest` is compiled (:func:`~qpsvm._numerics.uncompiled`): its compile
#: (about 0.1 s CPU) at what it saves (1191 pairs and 8000 items: 32 -> 5 us alone, 60-70 us
#: in the solve).
SHORT_ITEMS = 2**23


@numba.njit(**ENTRY)
def _short_rest(scores, window, rest, short):  # pragma: no cover - compiled
    """The check of :func:`_short_pairs` in one pass over the window's pairs: ``short_p =
    s_j > fl(s_i - 1)``, ``rest`` (``c - a_B``) less ``e_i - e_j`` for each short pair, and
    whether every entry of ``rest`` is then 0 (the same comparisons and integers as the numpy
    form)."""
    for p in range(window.shape[0]):
        i, j = window[p, 0], window[p, 1]
        below = scores[j] > scores[i] - 1.0
        short[p] = below
        if below:
            rest[i] -= 1.0
            rest[j] += 1.0
    for x in rest:
        if x != 0.0:
            return False
    return True


_EMPTY = np.zeros(0)


def _matvec_T(X: Any, v: np.ndarray) -> np.ndarray:
    return np.asarray(X.T @ v).ravel()


def _rows(X: Any, idx: np.ndarray) -> np.ndarray:
    R = X[idx]
    return R.toarray() if sp.issparse(R) else R


#: How many pairs :func:`_window_rows` may form by numpy in a process before
#: :func:`~qpsvm.verify.ranking_fused.pair_differences` is compiled
#: (:func:`~qpsvm._numerics.uncompiled`): its compile (0.2 s CPU) at what it saves (about 55
#: ns a pair of 40 features: 1191 pairs of 8000 x 40, 86 against 17 us).
PAIR_ROWS = 2**22


def _window_rows(X: Any, window: np.ndarray) -> np.ndarray:
    """The rows ``x_i - x_j`` of the pairs ``(i, j)`` of ``window``, C-contiguous: for a dense
    C-contiguous float64 ``X`` by one compiled gather
    (:func:`~qpsvm.verify.ranking_fused.pair_differences`), else by numpy (the same floats)."""
    if (
        isinstance(X, np.ndarray)
        and X.dtype == np.float64
        and X.flags.c_contiguous
        and not uncompiled(pair_differences, window.shape[0], PAIR_ROWS)
    ):
        Z = np.empty((window.shape[0], X.shape[1]))
        pair_differences(X, np.ascontiguousarray(window, dtype=np.intp), Z)
        return Z
    return np.ascontiguousarray(_rows(X, window[:, 0]) - _rows(X, window[:, 1]))


def bound_sets(
    lay: QueryLayout,
    scores: np.ndarray,
    tau: float,
    extra: np.ndarray | None = None,
    order: np.ndarray | None = None,
) -> tuple[int, np.ndarray]:
    r"""The pairs short of the margin at scores ``s`` and window ``tau`` (``B``: ``s_j >
    fl(s_i - (1 - tau))``), less the pairs ``extra`` (rows ``(i, j)``): their number ``n_B``
    and ``a_B = cnt - cnt'`` (:func:`~qpsvm.verify.ranking_sweep.pair_sums`; ``order`` the
    items sorted by score, when known)."""
    inner = scores - (1.0 - tau)
    cnt, cnt_other, _, _ = pair_sums(lay, inner, scores, monotone=True, order=order, sums=False)
    return _bound_sides(scores, inner, cnt, cnt_other, extra)


def _bound_sides(
    scores: np.ndarray,
    inner: np.ndarray,
    cnt: np.ndarray,
    cnt_other: np.ndarray,
    extra: np.ndarray | None,
) -> tuple[int, np.ndarray]:
    """:func:`bound_sets` from the counts over ``B`` (``s_j > inner_i``) of
    :func:`~qpsvm.verify.ranking_sweep.pair_sums`."""
    n_bound = int(cnt.sum())
    coef_bound = cnt - cnt_other
    if extra is not None and extra.size:
        moved = extra[scores[extra[:, 1]] > inner[extra[:, 0]]]  # B's pairs that join M
        np.subtract.at(coef_bound, moved[:, 0], 1)
        np.add.at(coef_bound, moved[:, 1], 1)
        return n_bound - moved.shape[0], coef_bound
    return n_bound, coef_bound


def window_sets(
    lay: QueryLayout,
    scores: np.ndarray,
    tau: float,
    extra: np.ndarray | None = None,
    order: np.ndarray | None = None,
) -> tuple[int, np.ndarray, np.ndarray] | None:
    """The sides of the pairs at scores ``s`` and window ``tau`` (:func:`window_dual`): ``n_B``,
    ``a_B`` (:func:`bound_sets`) and the window ``M`` with the pairs ``extra``; ``None`` when
    ``M`` has more than :data:`MAX_WINDOW` pairs; ``order`` is ``sorted_by_query(lay,
    scores)``, when the caller has it. The window and ``B``'s counts come from one pass
    (:func:`~qpsvm.verify.ranking_sweep.window_sides`)."""
    if order is None:
        order = sorted_by_query(lay, scores)
    inner = scores - (1.0 - tau)
    window, cnt, cnt_other, _ = window_sides(
        lay, scores - (1.0 + tau), inner, scores, MAX_WINDOW, order, monotone=True
    )
    if window is None:
        return None
    if extra is not None and extra.size:
        window = np.unique(np.vstack([window, extra]), axis=0)
        if window.shape[0] > MAX_WINDOW:
            return None
    return (*_bound_sides(scores, inner, cnt, cnt_other, extra), window)


def window_dual(
    X: Any,
    C: float,
    lay: QueryLayout,
    scores: np.ndarray,
    tau: float,
    extra: np.ndarray | None = None,
    start: np.ndarray | None = None,
    order: np.ndarray | None = None,
    counts: CountsProduct | None = None,
) -> WindowDual | None:
    r"""The dual point of the pairs' sides at scores ``s`` and window ``tau`` (module docstring).

    The three sets are cut by per-item thresholds on the other item's score, ``s_j > fl(s_i -
    (1 - tau))`` (``B``), ``fl(s_i - (1 + tau)) < s_j <= fl(s_i - (1 - tau))`` (``M``), so they
    partition the pairs exactly. The pairs ``extra`` (rows ``(i, j)`` of pairs of the problem,
    e.g. earlier windows) join ``M`` wherever they lie. ``None`` when ``M`` has more than
    :data:`MAX_WINDOW` pairs. ``start`` (the ``w`` of the scores, when known) starts the
    window's box QP (:func:`~qpsvm.verify.box_qp.box_qp`) near its optimum; ``order`` is
    ``sorted_by_query(lay, scores)``, when the caller has it. ``counts``, the product of the
    1-slack plane at ``scores`` (its pairs ``s_j > fl(s_i - 1)``), when the caller has it:
    the fixed part ``v_0 = X^T (C a_B)`` is then read off it and the window's rows
    (:func:`_short_pairs`), without a pass over ``X``.
    """
    sets = window_sets(lay, scores, tau, extra, order)
    if sets is None:
        return None
    n_bound, coef_bound, window = sets
    dense = isinstance(X, np.ndarray)
    Z = _window_rows(X, window) if window.shape[0] else np.zeros((0, X.shape[1]))
    short = (
        None if counts is None or not dense else _short_pairs(X, scores, coef_bound, window, counts)
    )
    slack = 2.0 * U  # the rows' rounding, relative to the multipliers (_rows_enclosure)
    if short is not None:
        # C X^T c less C times the rows of A's pairs in M: their multipliers alpha_p - C,
        # one more rounding each
        expansion = _counts_enclosure(C, counts)
        shift = C * short
        v0 = expansion[0] - shift @ Z
        slack = 4.0 * U
    elif dense:  # v_0 enclosed by the pass that computes it, for the certificate
        coef = C * coef_bound.astype(np.float64)
        expansion = _expansion_enclosure(X, coef, coef_bound == 0, window[:0], _EMPTY, False)
        v0, shift = expansion[0], None
    else:
        v0 = C * _matvec_T(X, coef_bound.astype(np.float64))
    alpha = np.zeros(window.shape[0])
    w = v0
    if window.shape[0]:
        alpha, w = box_qp(Z, v0, C, start, rescue=True)
        if dense:
            multipliers = alpha if shift is None else alpha - shift
            expansion = dd_add(expansion, _rows_enclosure(Z, multipliers, slack))
    expansion = expansion if dense else None
    return WindowDual(n_bound, coef_bound, window, alpha, w, expansion, (scores, tau))


def _rows_enclosure(Z: np.ndarray, alpha: np.ndarray, slack: float = 2.0 * U) -> tuple:
    r""":math:`\sum_p \alpha_p (x_i - x_j)` enclosed (``hi, lo, err``) from the rows ``Z`` of
    the pairs' differences rounded once each: ``z_p = x_i - x_j + e_p`` with ``|e_p| <= u /
    (1 - u) |z_p|`` entry by entry, so that the rows' own rounding adds at most
    :math:`|Z|^T (2u\alpha)`, carried by the plain product
    (:func:`~qpsvm.verify.rigorous.enclosed_product`) as the relative slack ``2u`` on the
    multipliers, whose bound is that product (0 where ``alpha_p = 0``: no term). Multipliers
    rounded once each from their exact values take ``slack = 4u``: with each exact factor
    ``x = fl(x) (1 + d)``, ``|d| <= u``, a term is within ``(1 + u)^2 - 1 < 4u`` of its
    rounded factors' product, relative to it."""
    return enclosed_product(Z, alpha, dot2=False, slack=slack)


def grouped_primal_upper(
    X: Any, C: float, lay: QueryLayout, w: np.ndarray, dot2: bool = True
) -> float:
    r"""An upper bound on the exact :math:`\tfrac12\|w\|^2 + C \sum_p \max(0, 1 - s_i +
    s_j)` over the pairs of ``lay``, by one sweep on enclosures of the item scores: with
    ``t_i >= 1 - s_i`` and ``h_j >= s_j`` (rounded outward), every hinge is at most
    ``max(0, t_i + h_j)``, summed per preferred item as ``cnt_i t_i + sum_j h_j`` (at most
    ``max_query + max_levels + 2`` roundings each, bounded by the sums of magnitudes). The
    scores are enclosed by Dot2, or by the plain product if not ``dot2``
    (:func:`~qpsvm.verify.rigorous.enclosed_product`)."""
    return primal_upper(upper_sum(w * w), C, grouped_hinge_upper(X, lay, w, dot2))


def grouped_hinge_upper(X: Any, lay: QueryLayout, w: np.ndarray, dot2: bool = True) -> float:
    r"""An upper bound on the exact hinge sum :math:`\sum_p \max(0, 1 - s_i + s_j)` over the
    pairs of ``lay`` (see :func:`grouped_primal_upper`): over disjoint sets of queries these
    combine by :func:`~qpsvm.verify.rigorous.upper_sum`."""
    hi, lo, err = enclosed_product(X.T, w, dot2=dot2)
    return hinge_upper(lay, hi + lo, err)


def hinge_upper(
    lay: QueryLayout, t: np.ndarray, err: np.ndarray, order: np.ndarray | None = None
) -> float:
    r"""An upper bound on the exact hinge sum over the pairs of ``lay`` when each exact score
    lies within ``err_i`` of ``t_i`` (:func:`grouped_primal_upper`). With ``order`` (the items
    sorted by ``t`` within queries, :func:`~qpsvm.verify.ranking_sweep.sorted_by_query`) every
    score is given the largest error and the sweep needs no sort of its own
    (:func:`sorted_hinge_bounds`); else it sorts by each key ``fl(t - err)``, ``fl(t + err)``
    rounded outward item by item."""
    if order is not None:
        return sorted_hinge_bounds(lay, t, err, order)[0]
    low = down(down(t) - err)
    return _hinge_bound(lay, up(1.0 - low), up(up(t) + err), None)[0]


def sorted_hinge_bounds(
    lay: QueryLayout, t: np.ndarray, err: np.ndarray, order: np.ndarray
) -> tuple[float, float]:
    r""":func:`hinge_upper` with ``order``, and the hinge sum in floating point from the same
    sweep. Every score gets the largest error ``e = max_i err_i``; with ``M = max_i |t_i|`` and
    ``g >= e + u M`` (rounded up), the keys ``high = fl(t + h)``, ``h >= g / (1 - u)``, and
    ``pref = fl(k - t)``, ``k >= (1 + g) / (1 - u)``, bound every exact score ``s_i`` by
    ``high_i >= s_i`` and ``pref_i >= 1 - s_i`` (each is one rounding, within ``u (M + h)``,
    resp. ``u (k + M)``, of its exact value), and both are monotone in ``t``: non-decreasing
    along ``order``, with no outward rounding of each item (a few scalar ones). The float
    value is :math:`\sum_i \mathrm{cnt}_i (1 - t_i) + \sum_{(i, j)} t_j` over the pairs the
    sweep selects (``high_j > -pref_i``: those short of the margin and those within about
    ``2 h`` beyond it, whose terms, in ``[-2 h, 0]``, are rounding's size), the sums of
    ``t_j`` read off those of ``high_j`` less ``h`` each: the value for
    :func:`~qpsvm.verify.certificate.evaluation_allowance` and the early stop, without a sweep
    of its own."""
    e = float(np.max(err, initial=0.0))
    g = math.nextafter(e + math.nextafter(U * _max_abs(t), math.inf), math.inf)
    h = math.nextafter(g / (1.0 - U), math.inf)
    k = math.nextafter(math.nextafter(1.0 + g, math.inf) / (1.0 - U), math.inf)
    upper, cnt, total = _hinge_bound(lay, k - t, t + h, order)
    return upper, fsum(cnt * ((1.0 - h) - t)) + fsum(total)


def window_hinge_bounds(
    lay: QueryLayout, point: WindowDual, t: np.ndarray, err: np.ndarray
) -> tuple[float, float] | None:
    r"""An upper bound on the exact hinge sum over the pairs of ``lay`` when each exact score
    ``s_i`` lies within ``err_i`` of ``t_i``, and the hinge sum at ``t`` in floating point,
    read off the sides of ``point`` without a sweep; ``None`` when a pair may have crossed
    the margin since the scores ``b`` its sets were read off (:attr:`WindowDual.sides`).

    :func:`window_dual` cut the pairs at ``b`` and ``tau``: each pair of ``B`` has ``b_j >
    fl(b_i - c_1)``, ``c_1 = fl(1 - tau)``, so ``b_i - b_j < c_1 + u (|b_i| + |c_1|)``; each of
    the others outside the window ``M`` has ``b_j <= fl(b_i - c_2)``, ``c_2 = fl(1 + tau)``, so
    ``b_i - b_j >= c_2 - u (|b_i| + |c_2|)``. Each exact margin ``r_p = s_i - s_j`` is within
    ``D_i + D_j`` of ``b_i - b_j``, ``D_i >= |t_i - b_i| + err_i``: where every pair of ``B``
    keeps ``r_p <= 1`` and every other pair outside ``M`` ``r_p >= 1`` (:func:`_move_limit`,
    :func:`_side_sums`),
    the hinge sum is exactly

    .. math::

        \sum_B (1 - r_p) + \sum_M \max(0, 1 - r_p)
        = n_B - a_B \cdot s + \sum_M \max(0, 1 - s_i + s_j),

    with ``a_B = cnt - cnt'`` over ``B`` (:attr:`WindowDual.bound_coef`), ``a_B \cdot s \ge
    a_B \cdot t - \sum_i |a_i| err_i`` and each window pair's term at most ``max(0, 1 - t_i +
    t_j + err_i + err_j)``, every sum's rounding bounded by
    :func:`~qpsvm._numerics.sum_error` and the last operations rounded outward. The float
    value is ``n_B - a_B . t + sum_M max(0, 1 - t_i + t_j)``."""
    if point.sides is None:
        return None
    n_bound, window = point.n_bound, point.window
    beyond = lay.n_pairs - n_bound - window.shape[0]
    b, tau = point.sides
    limit = _move_limit(b, tau, n_bound > 0, beyond > 0)
    if limit is None:
        return None
    n, k = t.shape[0], window.shape[0]
    sides = (b, t, err, point.bound_coef, window, limit, 1.0 - tau, 1.0 + tau, SIDE_ITEMS * n)
    if uncompiled(_side_sums, n + k, SIDE_SUMS_ITEMS):
        sums = _side_sums_numpy(lay, *sides)
    else:
        sides = (*sides[:4], np.ascontiguousarray(sides[4]), *sides[5:])
        sums = _side_sums(lay.query, lay.starts, lay.order, lay.level, *sides, np.empty(k))
    held, dot, size_t, shift, top, gaps = sums
    if not held or not all(math.isfinite(x) for x in sums[1:]):
        return None
    dot_low = float(down(dot - float(sum_error(n, size_t))))
    shift = float(up(shift + float(sum_error(n, shift))))
    bound_part = float(up(float(n_bound) - float(down(dot_low - shift))))
    # each window term rounded once more, at most u below its exact nonnegative value
    upper = float(up(bound_part + float(up(sum2_upper(top, k) * (1.0 + 4.0 * U)))))
    return upper, (float(n_bound) - dot) + gaps


#: How many items and window pairs :func:`_side_sums_numpy` may sum in a process before
#: :func:`_side_sums` is compiled (:func:`~qpsvm._numerics.uncompiled`): its compile (about
#: 0.2 s CPU) at what it saves (0.12-0.25 ms a call of 8000 items and 1191 pairs, about 20 ns
#: an item).
SIDE_SUMS_ITEMS = 2**23


@numba.njit(**CALLEE)
def _sum_error(leaves, magnitude):  # pragma: no cover - compiled
    """:func:`~qpsvm._numerics.sum_error` of one float, the same operations."""
    g = _gamma(leaves)
    return next_up(next_up(g * magnitude * (1.0 + 2.0 * g) * (1.0 + 8.0 * U)) + leaves * TINY)


@numba.njit(**CALLEE)
def _moved_pairs_hold(  # pragma: no cover - compiled
    query, starts, order, level, b, t, err, limit, c_low, c_high
):
    """:func:`_moved_pairs_hold_numpy` in one pass for the largest term and one for the
    margins, the same pairs and floats."""
    reach = 0.0
    for r in range(t.shape[0]):
        if abs(t[r] - b[r]) + err[r] <= limit:
            continue
        for k in range(starts[query[r]], starts[query[r] + 1]):
            o = order[k]
            if level[o] != level[r]:
                reach = max(reach, (abs(t[r]) + abs(t[o])) + (err[r] + err[o]))
    spread = _sum_error(4.0, reach)
    below, above = next_down(1.0), next_up(1.0)
    for r in range(t.shape[0]):
        if abs(t[r] - b[r]) + err[r] <= limit:
            continue
        for k in range(starts[query[r]], starts[query[r] + 1]):
            o = order[k]
            if level[o] == level[r]:
                continue
            i, j = (r, o) if level[r] > level[o] else (o, r)
            diff = t[i] - t[j]
            slack = err[i] + err[j]
            if b[j] > b[i] - c_low and not ((diff + slack) + spread <= below):
                return False
            if b[j] <= b[i] - c_high and not ((diff - slack) - spread >= above):
                return False
    return True


@numba.njit(**ENTRY)
def _side_sums(  # pragma: no cover - compiled
    query, starts, order, level, b, t, err, coef, window, limit, c_low, c_high, most, top
):
    """The test and sums of :func:`window_hinge_bounds` in one pass over the items and one over
    the window's pairs, each sum added from ``0.0`` in index order: whether the sides hold
    (the items whose move ``fl(|t_i - b_i| + err_i)`` is not at most ``limit``, at most
    ``most`` of them, with their pairs checked by :func:`_moved_pairs_hold`), ``a . t``,
    ``|a| . |t|`` and ``|a| . err`` (``a`` the integer ``coef``, exact as floats); ``spread =
    sum_error(5, r)`` of the largest ``(1 + |t_i| + |t_j|) + (err_i + err_j)`` over the pairs
    ``(i, j)`` of ``window``, the terms ``top_p = max(0, (g_p + (err_i + err_j)) + spread)``
    of ``g_p = (1 - t_i) + t_j`` (in ``top``) and their Sum2, and the sum of ``max(0, g_p)``.
    The same floats as :func:`_side_sums_numpy` on finite values."""
    risky = 0
    dot = 0.0
    size_t = 0.0
    shift = 0.0
    for i in range(t.shape[0]):
        risky += not (abs(t[i] - b[i]) + err[i] <= limit)
        a = float(coef[i])
        dot += a * t[i]
        size_t += abs(a) * abs(t[i])
        shift += abs(a) * err[i]
    held = risky == 0 or (
        risky <= most
        and _moved_pairs_hold(query, starts, order, level, b, t, err, limit, c_low, c_high)
    )
    reach = 0.0
    for p in range(window.shape[0]):
        i, j = window[p, 0], window[p, 1]
        reach = max(reach, (1.0 + abs(t[i]) + abs(t[j])) + (err[i] + err[j]))
    spread = _sum_error(5.0, reach)
    gaps = 0.0
    for p in range(window.shape[0]):
        i, j = window[p, 0], window[p, 1]
        gap = (1.0 - t[i]) + t[j]
        top[p] = max(0.0, (gap + (err[i] + err[j])) + spread)
        gaps += max(0.0, gap)
    return held, dot, size_t, shift, _fsum(top), gaps


def _in_order(terms: np.ndarray) -> float:
    """``sum terms`` added from ``0.0`` in index order (``np.add.accumulate``, never pairwise)."""
    return float(np.add.accumulate(np.concatenate(([0.0], terms)))[-1])


def _side_sums_numpy(
    lay: QueryLayout,
    b: np.ndarray,
    t: np.ndarray,
    err: np.ndarray,
    coef: np.ndarray,
    window: np.ndarray,
    limit: float,
    c_low: float,
    c_high: float,
    most: float,
) -> tuple[bool, float, float, float, float, float]:
    """:func:`_side_sums` in numpy, the same floats on finite values."""
    a = coef.astype(np.float64)
    size = np.abs(a)
    moved = np.flatnonzero(~(np.abs(t - b) + err <= limit))
    held = moved.size == 0 or (
        moved.size <= most and _moved_pairs_hold_numpy(lay, b, t, err, moved, c_low, c_high)
    )
    i, j = window[:, 0], window[:, 1]
    slack = err[i] + err[j]
    spread = float(
        sum_error(5.0, float(np.max((1.0 + np.abs(t[i]) + np.abs(t[j])) + slack, initial=0.0)))
    )
    gap = (1.0 - t[i]) + t[j]
    top = np.maximum(0.0, (gap + slack) + spread)
    return (
        held,
        _in_order(a * t),
        _in_order(size * np.abs(t)),
        _in_order(size * err),
        fsum(top),
        _in_order(np.maximum(0.0, gap)),
    )


def _move_limit(b: np.ndarray, tau: float, bound: bool, beyond: bool) -> float | None:
    r"""The move up to which no pair cut at scores ``b`` and window ``tau`` can cross its side
    (:func:`window_hinge_bounds`; ``bound``, ``beyond``: whether ``B`` and the pairs beyond the
    window have pairs), ``inf`` when neither has; ``None`` when ``b`` is not finite or a side
    has no room. Each item moved by at most ``D_i >= |t_i - b_i| + err_i``; a pair of two
    items with ``D_i <= h``, ``2 h`` at most the room of its side (``1 - c_1``, resp. ``c_2 -
    1``, less ``2u (max |b| + |c|)``), keeps it; ``fl(|fl(t_i - b_i)| + err_i)`` is at least
    ``(|t_i - b_i| + err_i) / (1 + 3u)``, so a computed move at most the limit, ``h / (1 +
    4u)`` rounded down, is an exact ``D_i`` at most ``h``."""
    c_low, c_high = 1.0 - tau, 1.0 + tau
    reach = _max_abs(b)
    if not math.isfinite(reach):
        return None
    rooms = []
    if bound:
        rooms.append(
            float(down(float(down(1.0 - c_low)) - float(up(2.0 * U * (reach + abs(c_low))))))
        )
    if beyond:
        rooms.append(float(down(float(down(c_high - 1.0)) - float(up(2.0 * U * (reach + c_high))))))
    if not rooms:
        return math.inf
    room = min(rooms)
    if not room > 0.0:
        return None
    return float(down(float(down(0.5 * room)) / (1.0 + 4.0 * U)))


def _moved_pairs_hold_numpy(
    lay: QueryLayout,
    b: np.ndarray,
    t: np.ndarray,
    err: np.ndarray,
    moved: np.ndarray,
    c_low: float,
    c_high: float,
) -> bool:
    r"""Whether every pair of the items ``moved`` (beyond :func:`_move_limit`) keeps its side
    for all exact scores within ``err`` of ``t`` (:func:`window_hinge_bounds`): each item cut
    again at ``b`` against every item of its query as :func:`window_sets` cuts them (``c_low =
    fl(1 - tau)``, ``c_high = fl(1 + tau)``) and the margins checked on the enclosures, ``t_i
    - t_j + err_i + err_j <= 1`` in ``B``, ``t_i - t_j - err_i - err_j >= 1`` beyond, each
    sum's rounding bounded by :func:`~qpsvm._numerics.sum_error`."""
    query = lay.query[moved]
    first = lay.starts[query]
    sizes = lay.starts[query + 1] - first
    own = np.repeat(moved, sizes)
    at = np.repeat(first - (np.cumsum(sizes) - sizes), sizes) + np.arange(own.shape[0])
    other = lay.order[at]
    above = lay.level[own] > lay.level[other]
    paired = above | (lay.level[own] < lay.level[other])
    i = np.where(above, own, other)[paired]
    j = np.where(above, other, own)[paired]
    short = b[j] > b[i] - c_low  # the cuts of window_sets, to the bit
    past = b[j] <= b[i] - c_high
    diff = t[i] - t[j]
    slack = err[i] + err[j]
    # one bound for every pair's four terms; a last sum within half an ulp of 1 is refused
    reach = float(np.max((np.abs(t[i]) + np.abs(t[j])) + slack, initial=0.0))
    spread = float(sum_error(4.0, reach))
    highest = (diff + slack) + spread
    lowest = (diff - slack) - spread
    return bool(
        np.all(highest[short] <= float(down(1.0))) and np.all(lowest[past] >= float(up(1.0)))
    )


def _hinge_bound(
    lay: QueryLayout, pref: np.ndarray, high: np.ndarray, order: np.ndarray | None
) -> tuple[float, np.ndarray, np.ndarray]:
    r"""The bound of :func:`hinge_upper` from keys ``pref_i >= 1 - s_i`` and ``high_j >= s_j``
    of every exact score: each pair's hinge is at most ``max(0, pref_i + high_j)``, summed per
    preferred item as ``cnt_i pref_i + sum_j high_j`` over the pairs with ``high_j > -pref_i``
    (at most ``max_query + max_levels + 2`` roundings each, bounded by the sums of
    magnitudes); also the counts ``cnt`` (float) and the sums ``sum_j high_j`` per item.
    ``order`` sorts ``high`` (and ``-pref``) within queries, when both are monotone in it."""
    cnt, _, total, magnitude = pair_sums(lay, -pref, high, order is not None, order)
    cntf = cnt.astype(np.float64)
    terms = cntf * pref + total
    size = fsum(cntf * np.abs(pref) + magnitude) * (1.0 + gamma(cntf.size + 2))
    rounding = gamma(lay.max_query + lay.max_levels + 4) * size + cntf.size * TINY
    s = fsum(terms)
    return float(up(max(0.0, s) + up(2.0 * U * abs(s) + rounding))), cntf, total


def grouped_hinge_value(
    lay: QueryLayout, scores: np.ndarray, order: np.ndarray | None = None
) -> float:
    r"""The hinge sum :math:`\sum_p \max(0, 1 - s_i + s_j)` over the pairs of ``lay`` from the
    item scores ``s`` in floating point, per preferred item ``cnt_i (1 - s_i) + sum_j s_j``
    (no bound on its rounding: the value :func:`grouped_hinge_upper` bounds, for progress
    reports and :func:`~qpsvm.verify.certificate.evaluation_allowance`); ``order`` is
    ``sorted_by_query(lay, scores)``, when the caller has it."""
    cnt, _, total, _ = pair_sums(lay, scores - 1.0, scores, monotone=True, order=order)
    return fsum(cnt * (1.0 - scores)) + fsum(total)


def grouped_expansion(X: Any, C: float, point: WindowDual, dot2: bool = True) -> tuple:
    r"""The expansion ``X^T coef`` of ``point`` enclosed (``hi, lo, err``): ``coef = C a_B +
    D_M^T alpha_M`` rounded, its rounding bounded and carried through ``|X|^T``. Over disjoint
    sets of queries these combine by :func:`~qpsvm.verify.rigorous.dd_add`. The product is
    Dot2, or the plain product if not ``dot2`` (:func:`~qpsvm.verify.rigorous.enclosed_product`),
    then the point's own :attr:`WindowDual.expansion` when it has one (:func:`window_dual`
    encloses ``X^T (C a_B)`` by the pass that computes ``v_0``, and the window's part by a
    pass over its rows; :func:`~qpsvm.verify.rigorous.dd_add` adds the two)."""
    if not dot2 and point.expansion is not None:
        return point.expansion
    coef = C * point.bound_coef.astype(np.float64)
    return _expansion_enclosure(X, coef, point.bound_coef == 0, point.window, point.alpha, dot2)


def _expansion_enclosure(
    X: Any, coef: np.ndarray, zero: np.ndarray, window: np.ndarray, alpha: np.ndarray, dot2: bool
) -> tuple:
    """``X^T (coef + D_M^T alpha)`` enclosed (:func:`grouped_expansion`), the pairs ``window``
    indexing the rows of ``X``: ``coef`` (each entry one rounding of its exact value, exactly
    0 where ``zero``) plus each pair's ``alpha_p`` at its two items, summed in floating point,
    within ``gamma_{k+3}`` of the sum of magnitudes for items in at most ``k`` pairs. An item
    that is ``zero`` with no ``alpha_p > 0`` has an exact 0 and no rounding to bound: its
    slack is 0, and its term is left out of the product's bound
    (:func:`~qpsvm.verify.rigorous.enclosed_product`). Without pairs, and with every 0 of
    ``coef`` one of ``zero``, the slack is ``gamma_3 |coef|``: the product's relative slack,
    no vector of its own."""
    if not alpha.size and np.count_nonzero(coef) + np.count_nonzero(zero) == coef.size:
        hi, lo, err = enclosed_product(X, coef, dot2=dot2, slack=gamma(3))
        return hi, lo, err + X.shape[0] * TINY
    size = np.abs(coef)
    k = 0
    if alpha.size:
        i, j = window[:, 0], window[:, 1]
        np.add.at(coef, i, alpha)
        np.add.at(coef, j, -alpha)
        np.add.at(size, i, alpha)
        np.add.at(size, j, alpha)
        k = int(np.max(np.bincount(window.ravel())))
    coef_err = up(gamma(k + 3) * size)
    coef_err[zero & (size == 0.0)] = 0.0
    hi, lo, err = enclosed_product(X, coef, dot2=dot2, slack=coef_err)
    return hi, lo, err + X.shape[0] * TINY


def grouped_gain_lower(C: float, n_bound: int, alpha: np.ndarray) -> float:
    """A lower bound on ``C n_B + sum_M alpha_p``."""
    return float(down(float(down(C * float(n_bound))) + lower_sum(alpha)))


def grouped_dual_lower(
    X: Any, C: float, point: WindowDual, dot2: bool = True
) -> tuple[float, float, np.ndarray]:
    r"""A lower bound on ``D(alpha)`` at ``point`` (exactly feasible: ``alpha = C`` on ``B``,
    ``alpha_M`` in ``[0, C]``), with the expansion enclosed (:func:`grouped_expansion`).
    Returns the bound, ``D`` from the same sums without their error bounds
    (:func:`~qpsvm.verify.rigorous.dual_estimate`) and the rounded expansion."""
    hi, lo, err = grouped_expansion(X, C, point, dot2)
    zero = np.zeros(1)
    sums = DualSums(grouped_gain_lower(C, point.n_bound, point.alpha), (hi, lo, err), (zero,) * 3)
    return dual_lower_value(sums, None), dual_estimate(sums), hi + lo


def certify_grouped(
    f: RankingProblem,
    w: np.ndarray,
    tol: float = DEFAULT_TOL,
    point: WindowDual | None = None,
    windows: Sequence[float] = WINDOW_TAUS,
    near: np.ndarray | None = None,
) -> Certificate:
    """Certify ``w`` for a ranking SVM whose pairs come from relevance labels (unit pair
    weights), without forming the pairs (module docstring).

    The dual point ``point`` (when given), then those of the windows ``tau`` of ``windows``
    are tried in turn until one proves the gap (or its float estimate closes it). The scores
    and the expansion are first enclosed by the plain products, the items sorted once by
    score for every sweep (:func:`hinge_upper`); Dot2's enclosures
    (:func:`grouped_primal_upper`) are computed only when those do not prove the gap at
    ``tol``.

    Parameters
    ----------
    f : RankingSVM
        With ``f.query_layout`` set.
    w : ndarray of shape (n_features,)
    tol : float
        Relative tolerance of the test.
    point : WindowDual, optional
        A dual point of this problem from :func:`window_dual` (e.g. the solver's, whose
        ``w`` is the candidate): tried first. Its soundness rests on what :func:`window_dual`
        guarantees (``alpha = C`` on ``B``, ``alpha_M`` in ``[0, C]``, the three sets a
        partition of the pairs), as for the windows' own points.
    windows : sequence of float, default=WINDOW_TAUS
        The windows ``tau`` tried after ``point``.
    near : ndarray of intp, optional
        The items sorted within queries by nearby scores (e.g. those ``point`` was read off):
        the sort by ``w``'s scores starts from it
        (:func:`~qpsvm.verify.ranking_sweep.sorted_by_query`).
    """
    tol = check_tol(tol)
    if point is None and near is None:
        fused = fused_certificate(
            f.items, f.C, f.query_layout, w, tol, windows, FUSED, GOOD_ENOUGH * tol
        )
        if fused is not None:
            return _fused_certificate(f, fused.bounds, tol)
    return _grouped(f, w, tol, (point, windows, near))[0]


def certify_grouped_point(
    f: RankingProblem,
    point: WindowDual,
    tol: float,
    windows: Sequence[float],
    near: np.ndarray | None = None,
) -> tuple[Certificate, WindowDual | None]:
    """The certificate of ``w = point.w`` by :func:`certify_grouped` with ``point`` tried
    first (a solver's window point, the exact maximiser of the dual with the sides fixed: at
    the optimum its gap is the rounding's), then the windows ``windows`` read off ``w``'s
    scores (``near``: the items' order at the scores the window was read off, where the sort
    starts), and the certificate's dual point (``None``: the point ``alpha = 0``, where no
    window's bound is above 0)."""
    return _grouped(f, point.w, check_tol(tol), (point, windows, near))


def _grouped(
    f: RankingProblem, w: np.ndarray, tol: float, given: tuple
) -> tuple[Certificate, WindowDual | None]:
    """:func:`certify_grouped` by the numpy code, ``given`` its ``point, windows, near``; also
    the certificate's dual point."""
    point, windows, near = given
    X, C, lay = f.items, f.C, f.query_layout
    scores, _, err = enclosed_product(X.T, w, dot2=False)
    # the hinge sum off the given point's sides where no pair can have crossed them, else by
    # the sweep; one sort for every sweep
    bounds = None if point is None else window_hinge_bounds(lay, point, scores, err)
    order = None
    if bounds is None or windows:
        order = sorted_by_query(lay, scores, near)
    hinge, hinge_float = sorted_hinge_bounds(lay, scores, err, order) if bounds is None else bounds
    primal = primal_upper(upper_sum(w * w), C, hinge)
    # the float objective, for the early stop and the rounding floor
    primal_float = 0.5 * fsum(w * w) + C * hinge_float
    dual, dual_float, best, expansion = 0.0, 0.0, None, np.zeros_like(w)
    given = () if point is None else (point,)
    points = (window_dual(X, C, lay, scores, tau, start=w, order=order) for tau in windows)
    for point in itertools.chain(given, points):
        if point is None:
            break
        value, estimate, v = grouped_dual_lower(X, C, point, dot2=False)
        if value > dual:
            dual, dual_float, best, expansion = value, estimate, point, v
        if min(primal - dual, primal_float - estimate) <= GOOD_ENOUGH * tol * max(1.0, primal):
            break
    if (
        relative(primal - dual, primal) > tol
        and best is not None
        and _rounding_hides(primal, dual, primal_float, dual_float, tol)
    ):
        # the plain products' rounding may hide a gap that Dot2's enclosures prove
        primal = grouped_primal_upper(X, C, lay, w)
        dual, dual_float, expansion = grouped_dual_lower(X, C, best)
    comp = 0.0
    if best is not None and best.alpha.size:
        i, j = best.window[:, 0], best.window[:, 1]
        r = scores[i] - scores[j]
        xi = np.maximum(0.0, 1.0 - r)
        comp = float(np.max(np.maximum(np.abs(best.alpha * (r - 1.0 + xi)), (C - best.alpha) * xi)))
    cert = Certificate(
        primal_objective=primal,
        dual_objective=dual if math.isfinite(dual) else 0.0,
        primal_infeasibility=0.0,
        dual_infeasibility=0.0,
        complementarity=comp,
        stationarity=float(np.sqrt(fsum_dot(w - expansion, w - expansion))),
        tol=tol,
        formulation=type(f).__name__,
        rigorous=True,
        rounding_floor=evaluation_allowance(primal, dual, primal_float, dual_float),
    )
    return cert, best


def pair_multipliers(f: RankingProblem, point: WindowDual | None) -> np.ndarray:
    r"""The dual point ``point`` one multiplier a pair, in the order of ``f.pairs``.

    :math:`\alpha_p = C` on the pairs short of the window, ``s_j > fl(s_i - (1 - tau))`` at
    the scores ``s`` and window ``tau`` of ``point.sides`` (the set ``B`` of
    :func:`window_dual`), the window's multipliers :math:`\alpha_M` on its pairs, and 0 on
    the rest; ``None`` is the point ``alpha = 0``. The sets are those ``point`` was built on,
    read off the same floats, so that ``D^T alpha = C a_B + D_M^T alpha_M`` is the expansion
    the certificate bounded.

    Parameters
    ----------
    f : RankingSVM
        With ``f.query_layout`` set; its pairs are formed (:attr:`~qpsvm.RankingSVM.pairs`).
    point : WindowDual or None
        With ``sides`` set (:func:`window_dual` sets them).

    Returns
    -------
    ndarray of shape (n_pairs,)
    """
    pairs = f.pairs
    alpha = np.zeros(pairs.shape[0])
    if point is None:
        return alpha
    scores, tau = point.sides
    alpha[scores[pairs[:, 1]] > scores[pairs[:, 0]] - (1.0 - tau)] = f.C
    if point.window.shape[0]:
        # the pairs are sorted by (i, j) (make_pairs): the window's rows found by their keys
        n = np.int64(scores.shape[0])
        keys = pairs[:, 0].astype(np.int64) * n + pairs[:, 1]
        window = point.window.astype(np.int64)
        alpha[np.searchsorted(keys, window[:, 0] * n + window[:, 1])] = point.alpha
    return alpha


def fused_point(f: RankingProblem, w: np.ndarray, point: tuple, tau: float) -> WindowDual:
    """The dual point ``point = (n_B, a_B, window, alpha)`` of the compiled pass
    (:func:`certify_all_pairs`) as a :class:`WindowDual`, its sides those of the window
    ``tau`` at the pass's scores of ``w``
    (:func:`~qpsvm.verify.ranking_fused.pass_scores`)."""
    n_bound, coef, window, alpha = point
    sides = (pass_scores(f.items, w), tau)
    return WindowDual(int(n_bound), coef, window, alpha, w, sides=sides)


def _rounding_hides(
    primal: float, dual: float, primal_float: float, dual_float: float, tol: float
) -> bool:
    r"""Whether tighter enclosures of the same points (Dot2's) could prove a gap at ``tol``
    that the plain products' bounds ``primal``, ``dual`` do not: they narrow at most the
    rounding part of the gap, the allowance ``a`` (:func:`evaluation_allowance` of the float
    objectives ``primal_float``, ``dual_float``), and these are within it of the exact ones (each
    end's bound lies as far from its float value as that value may lie from the exact one,
    the hinge and the square being convex), so the exact gap is at least ``U - L - 2a``. A
    gap beyond :data:`ROUNDING_ALLOWANCES` allowances and ``tol`` is the points' own (a
    window whose sides are wrong): no retry."""
    allowance = evaluation_allowance(primal, dual, primal_float, dual_float)
    return relative(primal - dual - ROUNDING_ALLOWANCES * allowance, primal) <= tol


def _fused_certificate(f: RankingProblem, fused: FusedBounds, tol: float) -> Certificate:
    """The :class:`Certificate` of :func:`certify_grouped` from the compiled pass's bounds."""
    dual = fused.dual
    return Certificate(
        primal_objective=fused.primal,
        dual_objective=dual if math.isfinite(dual) else 0.0,
        primal_infeasibility=0.0,
        dual_infeasibility=0.0,
        complementarity=fused.complementarity,
        stationarity=fused.stationarity,
        tol=tol,
        formulation=type(f).__name__,
        rigorous=True,
        rounding_floor=evaluation_allowance(
            fused.primal, dual, fused.primal_float, fused.dual_float
        ),
    )


def certify_all_pairs(
    f: RankingProblem, w: np.ndarray, tol: float = DEFAULT_TOL
) -> tuple[np.ndarray, Certificate, str, Callable[[], WindowDual]] | None:
    """Every pair as one window from ``w`` (:func:`window_dual` at ``tau = inf``) and the
    certificate of its point's ``w``, that point tried first (:func:`certify_grouped` with
    ``point``), in one compiled pass (:func:`~qpsvm.verify.ranking_fused.fused_all_pairs`):
    the point's ``w``, its certificate, which step found the window's sets (``"start"``,
    ``"active_set"`` or ``"ascent"``) and the certificate's dual point, formed when called
    (:func:`fused_point`); or ``None`` where that pass does not settle them."""
    done = fused_all_pairs(
        f.items, f.C, f.query_layout, w, tol, WINDOW_TAUS, FUSED, GOOD_ENOUGH * tol
    )
    if done is None:
        return None
    w_point, bounds, sets, point, tau = done
    return (
        w_point,
        _fused_certificate(f, bounds, tol),
        sets,
        partial(fused_point, f, w_point, point, tau),
    )

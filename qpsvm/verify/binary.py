"""Certificates for the binary formulations (hard margin, soft-margin primal and dual).

The primal objective is recomputed from the data; the dual point is the candidate's own ``alpha``
projected onto the feasible set, or, for a bare ``w``, the best ``alpha`` constructed from the
margins: ``alpha_i = C s_i`` where the margin is violated, ``0`` beyond it, and least squares
``sum_i alpha_i y_i x_i = w`` (within the box, with the balance constraint) on the margin, then
projected; and the maximiser of the dual with those sets fixed (the KKT equations), clipped and
projected. Several thresholds for "on the margin" are tried and the best lower bound is kept,
which makes the gap tight for any candidate near the optimum: once the sets are those of the
optimum, the lower bound is the optimum itself and the gap is the true suboptimality.

Floating point. For the linear kernel ``w`` is explicit (or computed from ``alpha`` in twice the
working precision), so the scores ``w . x_i`` and both objectives are accurate to a few units of
round-off. A nonlinear kernel's scores ``g = K (alpha y)`` are sums of kernel values that can
cancel by many digits (the poly kernel on raw features ``~ 100`` has ``K ~ 1e10`` and scores
``~ 1``): they are summed in twice the working precision, and the bound on the rounding of the
kernel values (:func:`kernel_scores`) is added to the primal value and subtracted from the dual
value, so a gap below round-off is never reported.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from qpsvm._jit import ENTRY
from qpsvm._numerics import fsum_dot, tdot2, uncompiled
from qpsvm._validation import check_tol
from qpsvm.contract import BinaryProblem
from qpsvm.exceptions import InvalidInputError, NonConvexProblemError
from qpsvm.solution import Candidate
from qpsvm.support_sets import kkt_on_sets, support_sets
from qpsvm.verify.ascent import CERTIFY_EPOCHS, CoordinateData, ascend, balanced_ascent
from qpsvm.verify.certificate import (
    DEFAULT_TOL,
    GOOD_ENOUGH,
    Certificate,
    best_dual_point,
    beyond_ceiling,
    evaluation_allowance,
)
from qpsvm.verify.projection import bounded_fit
from qpsvm.verify.psd import ExactGram, gram_verdict
from qpsvm.verify.rigorous import (
    RbfError,
    binary_dual_lower,
    binary_dual_sums,
    binary_feasible,
    binary_margins,
    binary_primal_upper,
    binary_trivial_upper,
    dual_estimate,
    kernel_dual_lower,
    kernel_primal_upper,
    rbf_pair_error,
    rbf_score_error,
)
from qpsvm.verify.rigorous_poly import (
    PolyBound,
    poly_bound,
    poly_pair_rows,
    poly_score_error,
)

__all__ = [
    "ascent_points",
    "certify_binary",
    "coordinate_data",
    "dual_points",
    "improve_dual",
    "kernel_proven",
    "kernel_scores",
    "kernel_ulps",
    "rebalance",
]

logger = logging.getLogger("qpsvm")

#: Thresholds on ``|y_i f(x_i) - m_i| / max(1, max m)`` for "on the margin".
MARGIN_TAUS = (0.0, 1e-12, 1e-10, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
#: Largest margin set solved by least squares (larger sets are skipped).
MAX_MARGIN_SET = 5000
#: Largest margin set for which the KKT equations are solved (an |M| x |M| system).
MAX_KKT_SET = 2000
#: Units of round-off in one value of a user's kernel callable (a few operations).
KERNEL_ULPS = 4.0
#: Bytes of Gram matrix rows per block when a certificate walks the support vectors.
ROW_BLOCK_BYTES = 2**25


def kernel_ulps(f: BinaryProblem) -> float | RbfError | PolyBound | ExactGram:
    """Units of round-off ``c`` in one computed kernel value, ``|K^_ij - K_ij| <= c eps |K_ij|``,
    or a proven bound per pair of rows.

    RBF, ``exp(-gamma (||a||^2 + ||b||^2 - 2 a.b))``: the proven bound
    :func:`~qpsvm.verify.rigorous.rbf_pair_error`, tighter than the global
    :func:`~qpsvm.verify.rigorous.rbf_value_error` where the rows' norms are below the largest.
    Poly, ``(gamma a.b + c0)^p``: the values the certificate evaluates itself, each with its
    proven bound (:mod:`qpsvm.verify.rigorous_poly`). A precomputed Gram matrix is the data:
    exact values (:class:`~qpsvm.verify.psd.ExactGram`); a callable :data:`KERNEL_ULPS`.
    """
    kernel = f.kernel
    if kernel.name == "precomputed":
        return ExactGram(float(np.max(np.diag(f.X), initial=0.0)))
    if kernel.name == "rbf":
        return rbf_pair_error(kernel.gamma, f.X)
    if kernel.name == "poly":
        return poly_bound(kernel.gamma, kernel.coef0, kernel.degree, f.X)
    return KERNEL_ULPS


def kernel_scores(
    f: BinaryProblem,
    alphas: Sequence[np.ndarray],
    ulps: float | RbfError | PolyBound | ExactGram,
) -> list[tuple[np.ndarray, np.ndarray]]:
    r"""Kernel scores ``g = K (alpha y)`` and a bound ``e`` on their error, from the data, for
    each of ``alphas`` (poly and callable kernels: in one pass over the rows of their support).

    .. math::

        |\hat g_i - g_i| \le e_i = (c + s)\,\varepsilon\,(|K|\,|\alpha|)_i
        + \varepsilon |\hat g_i|,

    where ``c`` bounds the rounding of one kernel value (:func:`kernel_ulps`) and ``s`` that of
    the sum over the ``m`` nonzero ``alpha_j``: ``g`` is summed over the rows of the support
    (``K`` is symmetric) in twice the working precision (:func:`qpsvm._numerics.tdot2`), in
    blocks of :data:`ROW_BLOCK_BYTES`, so ``s = m^2 eps`` (the Dot2 bound of Ogita, Rump and
    Oishi 2005); ``|K| |alpha|`` is summed in the same pass. For rbf the bound is proven
    (:func:`~qpsvm.verify.rigorous.rbf_score_error`, with the values' underflow; ``ulps`` is
    then the per-pair bound, and ``K (|alpha| q)`` with ``q`` the squared row norms is summed in
    the same pass too; rows from the kernel cache are read there in one pass for every sum,
    :meth:`~qpsvm.formulations.kernel_rows.KernelRows.enclosed_products`, the same Dot2 floats
    as the blocks'); for poly too: the rows are the certificate's own evaluation as
    unevaluated sums ``hi + lo`` (:func:`~qpsvm.verify.rigorous_poly.poly_pair_rows`) with a
    proven bound on every value, summed with ``|alpha|`` in the same pass, the low parts'
    products of each block one more term of the Dot2
    (:func:`~qpsvm.verify.rigorous_poly.poly_score_error`);
    a precomputed Gram matrix's values are exact, and the same proven bound holds with no value
    error. ``e`` is negligible for kernel values of order 1 and decisive when they are huge and the
    scores small: on raw features ``~ N(100, 1)`` the poly kernel ``(0.1 x.x' + 1)^3`` is
    ``~ 1e10``, each value is rounded by ``~ 1e-6`` and the optimum of the rounded Gram matrix
    moves in the 6th digit.
    """
    eps = np.finfo(float).eps
    a = [np.abs(alpha) for alpha in alphas]
    m = [int(np.count_nonzero(ak)) for ak in a]
    support = np.flatnonzero(np.any(a, axis=0))
    v = [alpha * f.y for alpha in alphas]
    totals = [(np.zeros(f.n_samples), np.zeros(f.n_samples)) for _ in alphas]
    magnitudes = [np.zeros(f.n_samples) for _ in alphas]
    pair = isinstance(ulps, RbfError)
    poly = isinstance(ulps, PolyBound)
    weights = [ak * ulps.sqnorm for ak in a] if pair else []
    weighted = [np.zeros(f.n_samples) for _ in weights]
    # poly: the values' bounds summed with |alpha|
    errors = [np.zeros(f.n_samples) for _ in alphas] if poly else []
    lows = [np.zeros(f.n_samples) for _ in alphas] if poly else []
    step = max(1, ROW_BLOCK_BYTES // (8 * f.n_samples))
    fused = None
    if pair and hasattr(f, "enclosed_products"):
        # one read of each support row for every sum, the rows where they are cached; the
        # blocks below where Dekker's splitting overflowed (tdot2's plain product)
        fused = f.enclosed_products(np.array(v), np.array(a + weights))
        if fused is not None and not (
            np.all(np.isfinite(fused[0])) and np.all(np.isfinite(fused[1]))
        ):
            fused = None
    if fused is not None:
        s, c, sums = fused
        totals = list(zip(s, c, strict=True))
        magnitudes, weighted = list(sums[: len(a)]), list(sums[len(a) :])
    for start in range(0, support.size if fused is None else 0, step):
        idx = support[start : start + step]
        if poly:
            rows, low, bounds = poly_pair_rows(ulps, f.X, idx)
            for k in range(len(alphas)):
                errors[k] += bounds.T @ a[k][idx]
                lows[k] += np.abs(low).T @ a[k][idx]
                # the low parts' sum, one more term of the Dot2
                totals[k] = tdot2((low.T @ v[k][idx])[None, :], np.ones(1), totals[k])
            del bounds, low
        else:
            rows = f.gram_rows(idx)
        # rbf values are positive: the rows are their own absolute values
        absolute = rows if pair else np.abs(rows)
        for k in range(len(alphas)):
            totals[k] = tdot2(rows, v[k][idx], totals[k])
            magnitudes[k] += absolute.T @ a[k][idx]
        for k, weight in enumerate(weights):
            weighted[k] += absolute.T @ weight[idx]
    out = []
    for k, ((hi, lo), mag, mk, alpha) in enumerate(zip(totals, magnitudes, m, alphas, strict=True)):
        g = hi + lo
        if pair:
            e = rbf_score_error(ulps, alpha, mag, weighted[k], g)
        elif poly:
            e = poly_score_error(alpha, mag, errors[k], g, lows[k], -(-support.size // step))
        elif isinstance(ulps, ExactGram):
            e = poly_score_error(alpha, mag, np.zeros_like(mag), g)
        else:
            e = (ulps + mk * mk * eps) * eps * mag
        out.append((g, e + eps * np.abs(g)))
    return out


def dual_points(
    f: BinaryProblem, residual: np.ndarray, w: np.ndarray | None
) -> Iterator[np.ndarray]:
    """Dual-feasible points built from the margin residuals ``y_i f(x_i) - m_i`` of a candidate.

    ``w`` (linear kernel) is matched by bounded least squares on the margin set; for a kernel the
    margin set keeps zeros (the candidate's ``alpha`` is projected separately). Points are
    generated lazily, tightest threshold first, so a caller can stop once one is good enough.
    """
    u = f.upper
    seen: set[bytes] = set()
    for tau in MARGIN_TAUS:
        on, bound = support_sets(f, residual, tau)
        on &= u > 0  # a box [0, 0] leaves nothing to fit
        key = on.tobytes() + bound.tobytes()
        if key in seen:
            continue
        seen.add(key)
        alpha = np.where(bound, u, 0.0)
        M = np.flatnonzero(on)
        if 0 < M.size <= MAX_KKT_SET:
            yield f.project_dual(kkt_on_sets(f, M, bound)[0])
        if w is not None and 0 < M.size <= MAX_MARGIN_SET:
            target = w - f.expansion(alpha)
            XM = f.X[M]
            A = (XM.toarray() if sp.issparse(XM) else XM) * f.y[M][:, None]
            A = A.T
            if f.fit_intercept:
                weight = max(1.0, float(np.sqrt(np.max(np.sum(A * A, axis=0)))))
                A = np.vstack([A, weight * f.y[M]])
                target = np.append(target, -weight * float(f.y @ alpha))
            upper_M = np.where(np.isfinite(u[M]), u[M], np.inf)
            alpha[M] = bounded_fit(A, target, np.zeros(M.size), upper_M)
        yield f.project_dual(alpha)


def coordinate_data(f: BinaryProblem) -> CoordinateData:
    """The dual of a linear hinge SVM ``f`` for :mod:`qpsvm.verify.ascent`: ``p = m``, ``d = 0``,
    ``hi = C s``."""
    # the rows' squared norms, where the formulation keeps them, shared with the certificate
    norms = getattr(f, "row_sq_norms", None)
    data = CoordinateData(
        f.X, f.y.astype(np.float64), f.margin, np.zeros(f.n_samples), f.upper,
        sqnorm=norms() if norms is not None else None,
    )  # fmt: skip
    # the formulation's restriction to its touched columns, computed once for the solver's
    # ascent and the certificate's expansion (a BinaryFormulation's; others have none)
    data.columns = getattr(f, "touched_columns", None)
    return data


def ascent_points(
    f: BinaryProblem, alpha: np.ndarray | None, residual: np.ndarray, b: float, tol: float
) -> Iterator[np.ndarray]:
    """A dual point by coordinate ascent over the nonzeros (:mod:`qpsvm.verify.ascent`), from
    the candidate's ``alpha`` or, for a bare ``w``, from its margins (``C s_i`` where violated,
    0 elsewhere); with a free intercept from the candidate's ``b``, balanced at the end. Its
    cost is that of a solve by dual coordinate descent, whatever the size of the margin set."""
    start = np.where(residual < 0, f.upper, 0.0) if alpha is None else alpha
    data = coordinate_data(f)
    stop = GOOD_ENOUGH * tol
    if f.fit_intercept:
        balance = functools.partial(feasible_near, f)
        yield balanced_ascent(data, balance, stop, u=start, b=b, max_epochs=CERTIFY_EPOCHS)[0]
    else:
        yield ascend(data, start, stop, max_epochs=CERTIFY_EPOCHS, exact=False).u


def improve_dual(
    f: BinaryProblem, alpha: np.ndarray, value: float, rounds: int = 5
) -> tuple[np.ndarray, float]:
    """Raise ``D(alpha)`` by re-reading the support sets off ``alpha``'s own primal point.

    ``alpha`` defines ``w(alpha) = sum_i alpha_i y_i phi(x_i)``; its margins give new sets, whose
    KKT solution (clipped, projected) replaces ``alpha`` while ``D`` increases (a primal-dual
    active-set step). Each accepted point is dual feasible, so the bound stays valid.
    """
    for _ in range(rounds):
        scores = f.scores(alpha=alpha)
        free = (alpha > 0) & (alpha < f.upper)
        if f.fit_intercept and np.any(free):
            b = float(np.median(f.y[free] * f.margin[free] - scores[free]))
        else:
            b = f.optimal_intercept(scores)
        on, bound = support_sets(f, f.y * (scores + b) - f.margin)
        M = np.flatnonzero(on)
        if not 0 < M.size <= MAX_KKT_SET:
            break
        trial = f.project_dual(kkt_on_sets(f, M, bound)[0])
        trial_value = f.dual_objective(trial)
        if trial_value <= value:
            break
        alpha, value = trial, trial_value
    return alpha, value


#: Rows :func:`rebalance` passes to its numpy equivalent in a process before the kernel is
#: compiled (about 0.7 s of compile, CPU time at a load of 3.5; the equivalent's 32-35 us a call
#: at n = 2000, about 16 ns a row, against the kernel's 3 us: the rent is about the compile at
#: 2^25 rows, a call charged at least 1024).
REBALANCE_ROWS = 2**25


def rebalance(a: np.ndarray, upper: np.ndarray, y: np.ndarray, excess: float) -> np.ndarray | None:
    """``a`` in the box ``[0, upper]`` with ``excess`` taken off ``sum_i a_i y_i`` by shifting
    free coordinates alone, ``a_F - nu y_F`` with ``nu = excess / |F|``, when that stays inside
    the box; ``None`` when it does not.

    ``F`` is every free coordinate, else those with room for twice the even share (a multiplier
    of a sample that just reached its margin can be free by a hair). Compiled
    (:func:`_rebalance`) or, before that, numpy: the same operations on each coordinate, the
    same floats.
    """
    if not uncompiled(_rebalance, a.shape[0], REBALANCE_ROWS):
        moved, out = _rebalance(a, upper, y, float(excess))
        return out if moved else None
    free = (a > 0) & (a < upper)
    if not np.any(free):
        return None
    room = np.minimum(a, upper - a)
    for F in (free, free & (room > 2.0 * abs(excess) / np.count_nonzero(free))):
        if np.any(F):
            shifted = a[F] - (excess / np.count_nonzero(F)) * y[F]
            if np.all(shifted > 0) and np.all(shifted < upper[F]):
                out = a.copy()
                out[F] = shifted
                return out
    return None


@numba.njit(**ENTRY)
def _rebalance(a, upper, y, excess):  # pragma: no cover - compiled
    """:func:`rebalance` by loops: whether it moved and the moved copy (``a`` when
    not). The shares ``excess / |F|`` and the room's threshold ``2 |excess| / |free|`` are the
    same floats, and so is each shifted coordinate."""
    n = a.shape[0]
    free = 0
    for i in range(n):
        if a[i] > 0.0 and a[i] < upper[i]:
            free += 1
    if free == 0:
        return False, a
    threshold = 2.0 * abs(excess) / free
    moves = np.empty(n, dtype=np.bool_)
    for roomy in (False, True):
        count = 0
        for i in range(n):
            moves[i] = a[i] > 0.0 and a[i] < upper[i]
            if roomy:
                moves[i] = moves[i] and min(a[i], upper[i] - a[i]) > threshold
            count += moves[i]
        if count == 0:
            continue
        share = excess / count
        out = a.copy()
        inside = True
        for i in range(n):
            if moves[i]:
                out[i] = a[i] - share * y[i]
                inside = inside and out[i] > 0.0 and out[i] < upper[i]
        if inside:
            return True, out
    return False, a


def feasible_near(f: BinaryProblem, alpha: np.ndarray) -> np.ndarray:
    """``alpha`` made dual feasible, keeping its support where it can.

    Clipped to the box; with an intercept, the balance ``y . a = 0`` is restored by
    :func:`rebalance` (a solver's multipliers are off balance by round-off, and the Euclidean
    projection would spread that round-off over every zero multiplier, which costs a kernel row
    each), otherwise by the projection (:meth:`project_dual`).
    """
    a = np.clip(alpha, 0.0, f.upper)
    if not f.fit_intercept:
        return a
    out = rebalance(a, f.upper, f.y, fsum_dot(f.y, a))
    return out if out is not None else f.project_dual(alpha)


@dataclass
class _KernelScores:
    """The scores of a kernel candidate and of its nearest feasible point, with the bounds
    ``e`` on their rounding errors (:func:`kernel_scores`)."""

    ulps: float | RbfError | PolyBound
    scores: np.ndarray
    error: np.ndarray
    first: np.ndarray
    first_scores: np.ndarray
    first_error: np.ndarray
    proven: bool


@dataclass
class _PrimalSide:
    r"""A candidate's primal side: ``w`` (linear kernel), its scores ``s_i``, intercept ``b``,
    residuals ``r_i = y_i (s_i + b) - m_i``, hinge ``max(0, -r_i)``, objective ``P`` and
    primal infeasibility, the first dual point tried (the candidate's ``alpha`` made
    feasible) and the scores' enclosure ``(hi, lo, err)`` where it was computed with them."""

    alpha: np.ndarray | None
    w: np.ndarray | None
    kernel: _KernelScores | None
    first: np.ndarray | None
    b: float
    residual: np.ndarray
    hinge: np.ndarray
    hard: bool
    primal: float
    infeasibility: float
    norm2: float
    scores: np.ndarray
    enclosure: tuple | None = None


def _candidate_scores(
    f: BinaryProblem, w_in: Any, alpha: np.ndarray | None, enclose: bool = False
) -> tuple[np.ndarray | None, np.ndarray, float, _KernelScores | None, tuple | None]:
    """``w``, the scores, ``||w||^2``, (kernels) the scores' error bounds of a candidate and
    (``enclose``, CSR rows) the scores' enclosure for the rigorous primal bound
    (:func:`~qpsvm.verify.rigorous.binary_margins`), whose high parts are the scores: each
    row's Dot2 adds the rounded products in the row's order from 0, as scipy's product
    ``X w`` does, the same floats (one pass over the rows instead of two: 8 of the 65 ms
    of the certificate at 10000 x 1e6, 100 nonzeros a row)."""
    if f.linear:
        w = f.check_w(w_in) if w_in is not None else f.expansion(alpha)
        if enclose and f.X.format == "csr":
            enclosure = binary_margins(f, w)
            return w, enclosure[0], fsum_dot(w, w), None, enclosure
        return w, f.scores(w=w), fsum_dot(w, w), None, None
    if alpha is None:
        raise InvalidInputError(
            f"the {f.kernel.name!r} kernel has no explicit w: certify alpha instead."
        )
    ulps = kernel_ulps(f)
    # the candidate and its nearest feasible point (the first dual point tried)
    first = feasible_near(f, alpha)
    (scores, e), (g_first, e_first) = kernel_scores(f, [alpha, first], ulps)
    return (
        None,
        scores,
        fsum_dot(alpha * f.y, scores),
        _KernelScores(ulps, scores, e, first, g_first, e_first, kernel_proven(f.X, ulps)),
        None,
    )


def _primal_side(f: BinaryProblem, cand: Candidate, enclose: bool = False) -> _PrimalSide:
    """The candidate's primal side (:class:`_PrimalSide`); a given ``xi`` is checked for
    feasibility, ``b=None`` takes the best intercept for the scores; ``enclose``: the scores
    of sparse rows enclosed as the rigorous primal bound takes them (:func:`_candidate_scores`)."""
    alpha_in = f.check_alpha(cand.alpha) if cand.alpha is not None else None
    w, scores, norm2, kernel, enclosure = _candidate_scores(f, cand.w, alpha_in, enclose)
    b = f.optimal_intercept(scores) if cand.b is None else f.check_b(cand.b)
    margins = f.y * (scores + b)
    residual = margins - f.margin
    hinge = np.maximum(0.0, -residual)
    hard = not math.isfinite(f.C)
    if hard:
        primal = 0.5 * norm2
        primal_inf = float(np.max(hinge, initial=0.0))
    else:
        primal = f.primal_value(norm2, scores, b)
        primal_inf = 0.0
        if cand.xi is not None:
            xi = np.asarray(cand.xi, dtype=np.float64).ravel()
            if xi.shape != (f.n_samples,):
                raise InvalidInputError(f"xi must have shape ({f.n_samples},); got {xi.shape}.")
            primal_inf = max(0.0, float(np.max(-residual - xi)), float(np.max(-xi)))
    if kernel is not None:
        first = kernel.first
    else:
        first = None if alpha_in is None else feasible_near(f, alpha_in)
    return _PrimalSide(
        alpha_in,
        w,
        kernel,
        first,
        b,
        residual,
        hinge,
        hard,
        primal,
        primal_inf,
        norm2,
        scores,
        enclosure,
    )


def _search_dual(
    f: BinaryProblem,
    side: _PrimalSide,
    tol: float,
    hints: Sequence[np.ndarray],
    enclose: bool = False,
    ceiling: float = math.inf,
) -> tuple[np.ndarray, float, dict[int, tuple[np.ndarray, np.ndarray | None, Any]]]:
    """The best dual point found (with ``D`` in working precision) and what was computed on the
    way, by point: the expansion ``v`` and, with ``enclose`` (an explicit ``w`` over sparse
    rows of ``X``), the :class:`~qpsvm.verify.rigorous.DualSums` of the point clipped into the exact
    box, whose enclosed expansion gives ``v`` and which the rigorous bound then reuses
    (:func:`_linear_bounds`) rather than expanding the same point again in twice the working
    precision. The points: the candidate's own, the hints, then the points built from the
    margins (:func:`dual_points`; on sparse data coordinate ascent over the nonzeros, never
    dense least squares or KKT solves on the margin set, which may hold most samples).
    ``alpha = 0`` is always feasible (``D(0) = 0 <= P*``); the search stops at a gap far below
    ``tol``, or once no point could change the verdict given the ``ceiling`` on ``P*``
    (:func:`~qpsvm.verify.certificate.beyond_ceiling`)."""
    first, kernel = side.first, side.kernel
    ascent = side.w is not None and sp.issparse(f.X) and not side.hard
    pool = itertools.chain(
        [] if first is None else [first],
        [feasible_near(f, f.check_alpha(h)) for h in hints],
        ascent_points(f, side.alpha, side.residual, side.b, tol)
        if ascent
        else dual_points(f, side.residual, side.w),
    )
    expansions: dict[int, tuple[np.ndarray, np.ndarray | None, Any]] = {}
    # the expansions over the columns the rows touch (the formulation's restriction, shared
    # with the solver's ascent): the same floats, exact zeros elsewhere
    columns = getattr(f, "touched_columns", None) if enclose else None
    restricted = None if columns is None else columns()
    # and a solver's expansion of the same multipliers over them, reused when it is one
    kept = getattr(f, "kept_expansion", None)

    def dual_objective(point: np.ndarray) -> float:
        if kernel is not None and point is first:
            return fsum_dot(f.margin, point) - 0.5 * fsum_dot(point * f.y, kernel.first_scores)
        if enclose:
            a = binary_feasible(f, point)
            sums = binary_dual_sums(f, a, restricted=restricted, kept=kept)
            expansions[id(point)] = (point, None, sums)  # sums.vector() when needed
            return dual_estimate(sums)
        value, v = f.dual_parts(point)
        expansions[id(point)] = (point, v, None)
        return value

    alpha, dual, early = best_dual_point(
        dual_objective, pool, np.zeros(f.n_samples), side.primal, tol, ceiling=ceiling
    )
    if not early and not ascent and not beyond_ceiling(side.primal, dual, ceiling, tol):
        alpha, dual = improve_dual(f, alpha, dual)
    return alpha, dual, expansions


def _linear_bounds(
    f: BinaryProblem, side: _PrimalSide, alpha: np.ndarray, pairs: Any, sums: Any = None
) -> tuple[float, float, float, np.ndarray, float]:
    """Rigorous ``P`` (an upper bound), primal infeasibility, ``D`` (a lower bound), the dual
    point, and the allowance for rounding in the bounds (:mod:`qpsvm.verify.rigorous`,
    :func:`~qpsvm.verify.certificate.evaluation_allowance`), for an explicit ``w``; ``sums``
    the search's :class:`~qpsvm.verify.rigorous.DualSums` of ``alpha``, if it has them."""
    primal, worst, primal_estimate = binary_primal_upper(
        f, side.w, side.b, pairs, side.norm2, None if pairs is not None else side.enclosure
    )
    primal_inf = max(0.0, worst) if side.hard else side.infeasibility
    reference = primal if math.isfinite(primal) else binary_trivial_upper(f)
    dual, alpha, estimate = binary_dual_lower(f, alpha, reference, pairs, sums)
    floor = evaluation_allowance(primal, dual, primal_estimate, estimate)
    return primal, primal_inf, dual, alpha, floor


def _kernel_bounds(
    f: BinaryProblem, side: _PrimalSide, alpha: np.ndarray
) -> tuple[float, float, np.ndarray]:
    """``P``, ``D`` and the dual point of a kernel candidate, through the scores' error ``e``
    (:func:`kernel_scores`), which no dual point can remove: ``P`` is a sum of terms each of
    one score, ``alpha_i y_i g_i / 2`` plus the slack's cost, each taken at the worse end of its
    score's interval (:func:`~qpsvm.verify.rigorous.kernel_primal_upper`); in ``D``,
    ``||w||^2 = (alpha y) . g`` is off by up to ``sum_i |alpha_i| e_i``. For rbf and for poly with
    ``c0 >= 0`` every rounding is bounded (``rbf_pair_error``, :mod:`~qpsvm.verify.rigorous_poly`)
    and the kernel is positive semidefinite: a rigorous enclosure (:func:`kernel_proven`)."""
    k = side.kernel
    if alpha is k.first:
        g, e_dual = k.first_scores, k.first_error
    else:
        g, e_dual = kernel_scores(f, [alpha], k.ulps)[0]
    if k.proven:
        diagonal = k.ulps.diagonal if isinstance(k.ulps, PolyBound | ExactGram) else 1.0
        primal = kernel_primal_upper(f, side.alpha, side.b, k.scores, k.error)
        dual, alpha = kernel_dual_lower(f, alpha, g, e_dual, primal, diagonal)
    else:
        near = side.residual < k.error
        primal = side.primal + 0.5 * fsum_dot(np.abs(side.alpha), k.error)
        primal += f.C * fsum_dot(f.sample_weight[near], k.error[near])
        dual = fsum_dot(f.margin, alpha) - 0.5 * fsum_dot(alpha * f.y, g)
        dual -= 0.5 * fsum_dot(np.abs(alpha), e_dual)
    if dual < 0.0:
        alpha, dual = np.zeros(f.n_samples), 0.0
    return primal, dual, alpha


def kernel_proven(X: Any, ulps: float | RbfError | PolyBound | ExactGram) -> bool:
    r"""Whether the kernel certificate is a proof: every value's rounding bounded (rbf, poly,
    a precomputed Gram matrix's exact values) and the Gram matrix on the data positive
    semidefinite.

    Semidefiniteness on the data is all weak duality needs. The problem the certificate
    encloses is the dual QP stated on the data, :math:`\max D(\alpha) = m\cdot\alpha -
    \tfrac12 (\alpha y)^T K (\alpha y)` over the box and the balance, with the primal value of
    a candidate :math:`P(\alpha, b) = \tfrac12 (\alpha y)^T K (\alpha y) + C \sum_i s_i
    \max(0, m_i - y_i ((K \alpha y)_i + b))`. When the exact ``K`` on the ``n`` points is
    positive semidefinite it factors as :math:`K = L L^T` (real ``L``, ``n x r``), and both are
    the dual and the primal objective of the linear SVM on the rows of ``L`` (with ``w =
    L^T (\alpha y)``), whose weak duality gives :math:`D(\alpha') \le P^* \le P(\alpha, b)`
    for every feasible :math:`\alpha'`; the kernel's values off the data never enter. rbf and
    poly with ``coef0 >= 0`` are positive semidefinite kernels; poly with ``coef0 < 0`` and a
    precomputed Gram matrix are checked on the data (:func:`~qpsvm.verify.psd.gram_verdict`, up
    to :data:`~qpsvm.verify.psd.GRAM_PROOF_SIZE` points): proven semidefinite, the certificate
    is rigorous; undecided, it is not (``rigorous=False``, the reason logged); a poly Gram
    matrix proven indefinite makes the dual nonconvex and the "primal" over the expansion
    unbounded below (along a direction of negative curvature the quadratic wins over the
    hinge), so no certificate exists. A precomputed Gram matrix proven indefinite gets a
    certificate that is not rigorous (the reason logged), as an undecided one: a float
    ``X @ X.T`` with more points than features is often indefinite once rounded, and refusing
    it would refuse the commonest use of precomputed kernels.

    Raises
    ------
    NonConvexProblemError
        When a poly kernel's Gram matrix on the data is proven not positive semidefinite.
    """
    if isinstance(ulps, RbfError):
        return True
    if not isinstance(ulps, PolyBound | ExactGram):
        return False
    if isinstance(ulps, PolyBound) and ulps.positive_semidefinite:
        return True
    verdict = gram_verdict(ulps, X)
    if verdict.psd is False and isinstance(ulps, ExactGram):
        logger.info(
            "kernel certificate not rigorous: the precomputed Gram matrix is %s (a float "
            "Gram matrix such as X @ X.T with more points than features is often indefinite "
            "once rounded; add a small ridge to make it provably definite)",
            verdict.reason,
        )
        return False
    if verdict.psd is False:
        raise NonConvexProblemError(
            f"the poly kernel with coef0 = {ulps.coef0:g} < 0 has a Gram matrix on these data "
            f"that is not positive semidefinite ({verdict.reason}): the SVM's dual is a "
            "nonconvex QP, which no duality gap can certify. Use coef0 >= 0 (then the kernel "
            "is positive semidefinite on any data)."
        )
    if verdict.psd is None:
        logger.info("kernel certificate not rigorous: the Gram matrix is %s", verdict.reason)
    return bool(verdict.psd)


def _stationarity(
    f: BinaryProblem, w: np.ndarray | None, alpha: np.ndarray, expansions: dict[int, tuple]
) -> float:
    """``||w - sum_i alpha_i y_i x_i||`` (0 without an explicit ``w``), reusing the expansion
    computed for ``D`` at a point equal to ``alpha`` when there is one (the bounds' exactly
    feasible copy of the point searched is another array with the same values): its float
    ``v`` or its enclosure (:class:`~qpsvm.verify.rigorous.DualSums`)."""
    if w is None:
        return 0.0
    v, sums = next(
        ((v, sums) for point, v, sums in expansions.values() if np.array_equal(point, alpha)),
        (None, None),
    )
    if sums is not None:
        if sums.rounds_to(w):
            return 0.0  # a solver's w is the rounded expansion of its multipliers
        v = sums.vector()
    v = f.expansion(alpha) if v is None else v
    if np.array_equal(w, v):
        return 0.0
    residual_w = w - v
    return math.sqrt(fsum_dot(residual_w, residual_w))


def certify_binary(
    f: BinaryProblem,
    cand: Candidate,
    tol: float = DEFAULT_TOL,
    pairs: Any = None,
    hints: Sequence[np.ndarray] = (),
    ceiling: float = math.inf,
) -> Certificate:
    """Certify a candidate of a binary formulation (see :mod:`qpsvm.verify.conventions`).

    The candidate's primal side (:func:`_primal_side`), the best dual point found
    (:func:`_search_dual`), then rigorous bounds on both objectives (:func:`_linear_bounds`,
    :func:`_kernel_bounds`) and the KKT residuals.

    Parameters
    ----------
    f : BinaryFormulation
    cand : Candidate
        ``w`` (linear kernel) and/or ``alpha``; ``b=None`` takes the best intercept for ``w``;
        ``xi``, when given, is checked for feasibility.
    tol : float
        Relative tolerance of the test.
    pairs : tuple, optional
        The ranking SVM's items and pairs, for its rigorous bounds.
    hints : sequence of ndarray, optional
        More dual points to try after the candidate's own, e.g. the multipliers of the
        problem's own solution: with them the gap bounds the suboptimality of a candidate of
        any quality tightly.
    ceiling : float, optional
        An upper bound on the optimum (the problem's own solution's rigorous primal, whose
        multipliers are a hint): the search stops once no point could change the verdict
        (:func:`~qpsvm.verify.certificate.beyond_ceiling`), so that a failing candidate costs
        no fits on its own sets once a hint is near the optimum.
    """
    tol = check_tol(tol)
    if cand.w is None and cand.alpha is None:
        raise InvalidInputError("nothing to certify: pass a solution, w (and b), or alpha.")
    # on sparse rows the search's few points (the candidate's, the ascent's) are enclosed,
    # and the scores with them
    enclose = f.linear and pairs is None and sp.issparse(f.X)
    side = _primal_side(f, cand, enclose)
    alpha, dual_float, expansions = _search_dual(f, side, tol, hints, enclose, ceiling)
    if f.linear:
        sums = next((s for point, _, s in expansions.values() if point is alpha), None)
        primal, primal_inf, dual, alpha, floor = _linear_bounds(f, side, alpha, pairs, sums)
        rigorous = True
    else:
        primal, dual, alpha = _kernel_bounds(f, side, alpha)
        primal_inf = side.infeasibility
        floor = evaluation_allowance(primal, dual, side.primal, dual_float)
        rigorous = side.kernel.proven
    comp = np.abs(alpha * (side.residual + side.hinge))
    if not side.hard:
        comp = np.maximum(comp, np.abs((f.upper - alpha) * side.hinge))
    return Certificate(
        primal_objective=float(primal),
        dual_objective=float(dual),
        primal_infeasibility=primal_inf,
        dual_infeasibility=f.dual_infeasibility(side.alpha) if side.alpha is not None else 0.0,
        complementarity=float(np.max(comp, initial=0.0)),
        stationarity=_stationarity(f, side.w, alpha, expansions),
        tol=tol,
        formulation=type(f).__name__,
        alpha=alpha,
        rigorous=rigorous,
        rounding_floor=floor,
        _primal_parts=None if side.w is None else (cand.w, side.scores, side.norm2),
    )

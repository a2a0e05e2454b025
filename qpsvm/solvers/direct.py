r"""The full QP of a soft-margin primal or dual handed to Clarabel as matrices, without CVXPY.

The soft-margin primal (:meth:`~qpsvm.SoftMarginPrimal.build`) reads, over ``x = (w, b, xi)``,

.. math::

    \min_x\ \tfrac12 \|w\|^2 + C \sum_i s_i \xi_i
    \quad\text{s.t.}\quad -(y_i (w \cdot x_i + b)) - \xi_i \le -m_i,\quad -\xi_i \le 0,

Clarabel's form ``min 1/2 x^T P x + q^T x`` s.t. ``A x + s = b_c``, ``s >= 0``, whose
multipliers ``z >= 0`` satisfy ``P x + q + A^T z = 0``: on the margin rows that is
``w = sum_i z_i y_i x_i`` and ``C s_i = z_i + z_{n+i}``, so ``alpha = z[:n]`` (the duals of
CVXPY's ``margin`` constraint, with the same sign). The matrices are the ones CVXPY's
canonicalisation produces for the same problem; stating them directly saves its compilation,
which is most of a small problem's time (measured: 37 of 48 ms at ``n = 200, d = 10``, where
Clarabel itself takes 3 ms). The CVXPY model stays the statement of the problem: a point that
Clarabel does not report solved, or that its refinements do not certify, is left to
:func:`~qpsvm.solvers.qp.solve_qp`'s CVXPY path, which solves, falls back and raises exactly
as before.

The dual (:meth:`~qpsvm.SoftMarginDual.build`) is stated as CVXPY states it, over
``x = (alpha, t)`` with ``t = F^T (y o alpha)`` for a factor ``F F^T = K`` (``X`` itself for the
linear kernel, else :func:`~qpsvm.kernels.gram_factor`),

.. math::

    \min_x\ \tfrac12 \|t\|^2 - m^T\alpha \quad\text{s.t.}\quad
    F^T (y \circ \alpha) - t = 0,\ y^T\alpha = 0 \text{ (with an intercept)},\
    0 \le \alpha_i \le C s_i,

except where the Gram matrix of a nonlinear kernel is positive definite (its Cholesky
factorization succeeds): then over ``x = alpha`` alone, with the dense quadratic
:math:`\tfrac12 \alpha^T Q \alpha`, :math:`Q = \operatorname{diag}(y) K
\operatorname{diag}(y)`, the same problem with ``k`` fewer variables and rows, which Clarabel
solves in 0.55-0.6 of the time (measured at ``n = 200`` and ``500``, rbf and poly kernels).
Either is read back as :meth:`~qpsvm.SoftMarginDual.read_model` reads the CVXPY model
(:meth:`~qpsvm.SoftMarginDual.candidate_from_alpha`).
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from qpsvm._numerics import uncompiled
from qpsvm._threads import one_blas_thread
from qpsvm.contract import BinaryProblem, load
from qpsvm.formulations.binary_models import signed_rows
from qpsvm.kernels import gram_factor
from qpsvm.solution import Candidate, Solution
from qpsvm.solvers.backends import SETTINGS, BackendResult
from qpsvm.solvers.finish import best_certified
from qpsvm.verify.ascent import shrinking_epochs
from qpsvm.verify.box_qp import ASCENT_PAIRS, box_qp
from qpsvm.verify.certificate import Certificate
from qpsvm.verify.ranking_fused import rows_active_steps

__all__ = [
    "BOX_DUAL_ASPECT",
    "solve_dual_direct",
    "solve_primal_direct",
    "solve_restricted_primal",
]

#: Fewest samples per feature for which :func:`_box_dual` is tried: with fewer (``n <= 2d``,
#: high ``C``) the smoothed Newton steps of the window's QP cost 2-12 times Clarabel's solve
#: (measured at 100 x 50 and 200 x 200, C = 1 to 1e4), with more they cost 0.05-0.4 of it
#: (measured at 200 x 10 to 2000 x 20, C = 0.01 to 1e4; one run at a load of 14 on 2 cores).
BOX_DUAL_ASPECT = 4
#: Most features (with the intercept's) in which the box QPs of :func:`_box_dual` try a primal
#: active-set method before the dual coordinate ascent (measured, best of 5 at a load of 5 on 2
#: cores, 100 x 5 to 1000 x 50, C = 0.01 to 100, with and without intercept: from 100 x 5 to
#: 1000 x 10 and 500 x 20 0.06-1.25 times the time without it (200 x 10 at C = 1: 2.2 -> 0.9
#: ms); at 1000 x 50 up to 13 times at C = 0.01, where the ascent's sets come in a few epochs
#: and the active set's first steps cross most of the rows one face at a time).
BOX_ACTIVE_FEATURES = 21
#: Box QPs of the search on a free intercept at most (:func:`_intercept_search`): measured at
#: 100 x 5 to 1000 x 50, C = 0.01 to 1000, standardised and shifted data, one to four.
INTERCEPT_CENTRES = 4
#: The intercept's feature ``B`` is this many times the rows' root mean square norm where ``C``
#: times their mean square norm is at most ``INTERCEPT_WIDE_BELOW``, else once: with small
#: ``C`` the proximal term ``(b - c)^2 / (2 B^2)`` outweighs the loss unless ``B`` is large,
#: with large ``C`` a large ``B`` makes the box QP ill-conditioned (measured at the sizes
#: above: ``B`` ten times the norm solved in one box QP up to ``C |x|^2 = 1300``, failed from
#: ``5000`` on at ``C = 1000``).
INTERCEPT_WIDE = 10.0
INTERCEPT_WIDE_BELOW = 2000.0
#: ... and the search is not tried where ``C`` times the rows' mean square norm exceeds this:
#: there the box QPs are ill-conditioned and cost more than Clarabel (measured: 1000 x 10 and
#: 1000 x 50 shifted by 5 at C = 1000, 2.6e5 and 1.3e6: 3.5 and 7 times Clarabel's solve, where
#: 100 x 5 shifted at C = 1000, 1.3e5, and 1000 x 50 shifted at C = 100 cost 1 and 0.3 times).
INTERCEPT_MAX = 2e5
#: A point of the search is certified only where its refinement's KKT residuals are within
#: this (:func:`_kkt_holds`; the right sets leave round-off, about 1e-12, wrong ones far more):
#: a certificate that fails costs 20-40 times the box QP at 100 x 5 and 1000 x 10 (its dual
#: point search), measured.
INTERCEPT_KKT = 1e-7


def _primal_matrices(
    f: BinaryProblem,
) -> tuple[sp.csc_matrix, np.ndarray, sp.csc_matrix, np.ndarray]:
    """``P, q, A, b_c`` of the soft-margin primal of ``f`` over ``x = (w, b, xi)``
    (:func:`_rows_matrices` of all its rows)."""
    Z, y = signed_rows(f, None)
    return _rows_matrices(Z, y, f.margin, f.C * f.sample_weight, f.fit_intercept)


def _rows_matrices(
    Z: Any,
    y: np.ndarray,
    m: np.ndarray,
    weights: np.ndarray,
    fit_intercept: bool,
    linear: np.ndarray | None = None,
) -> tuple[sp.csc_matrix, np.ndarray, sp.csc_matrix, np.ndarray]:
    r"""``P, q, A, b_c`` of the primal over the rows ``Z = y_i x_i`` (margins ``m``, slack
    weights ``C s_i`` ``weights``) over ``x = (w, b, xi)`` (``b`` only with an intercept),

    .. math::

        \min_x\ \tfrac12 \|w\|^2 + l^T (w, b) + \sum_i C s_i \xi_i
        \quad\text{s.t.}\quad -(Z w + y b) - \xi \le -m,\quad -\xi \le 0,

    with ``l`` = ``linear`` (the samples fixed at their bound folded in,
    :func:`~qpsvm.formulations.binary_models.rows_primal_model`; zero by default). The first
    ``n`` rows of ``A`` are the margin rows ``[-y_i x_i, -y_i, -e_i]``, the next ``n`` the
    slacks' signs ``-e_i``. Both are assembled column by column in compressed form (scipy's
    diagonal and coordinate constructors cost more than the rest of a small problem's setup)."""
    n, d = Z.shape
    k = d + int(fit_intercept)
    index = np.arange(n)
    P = sp.csc_matrix(
        (np.ones(d), np.arange(d), np.r_[np.arange(d + 1), np.full(k - d + n, d)]),
        shape=(k + n, k + n),
    )
    q = np.r_[np.zeros(k) if linear is None else linear, weights]
    values, rows, ends = _columns(Z)
    data, indices, ends, nnz = [-values], [rows], [ends], ends[-1]
    if fit_intercept:
        data.append(-y.astype(np.float64))
        indices.append(index)
        ends.append(np.array([nnz + n]))
    data.append(np.full(2 * n, -1.0))  # column k + i: the rows i and n + i
    indices.append(np.column_stack([index, index + n]).ravel())
    ends.append(nnz + (k - d) * n + 2 * np.arange(1, n + 1))
    indptr = np.concatenate([[0], *ends])
    A = sp.csc_matrix((np.concatenate(data), np.concatenate(indices), indptr), shape=(2 * n, k + n))
    b = np.r_[-m, np.zeros(n)]
    return P, q, A, b


def _columns(Z: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``Z`` in compressed sparse column form: the values, their rows (sorted within each
    column) and each column's end; a dense ``Z``'s zeros are left out, as scipy's conversion
    leaves them out."""
    if sp.issparse(Z):
        W = sp.csc_matrix(Z)
        W.sum_duplicates()
        return W.data, W.indices, W.indptr[1:]
    T = np.asarray(Z).T
    stored = T != 0
    return T[stored], np.nonzero(stored)[1], np.cumsum(np.count_nonzero(stored, axis=1))


def _dual_matrices(
    f: BinaryProblem,
) -> tuple[sp.csc_matrix, np.ndarray, sp.csc_matrix, np.ndarray, int]:
    """``P, q, A, b_c`` of the soft-margin dual over ``x = (alpha, t)`` (or ``x = alpha``,
    with ``P = diag(y) K diag(y)``, for a positive definite nonlinear Gram matrix) and the
    number of equality rows (Clarabel's zero cone, first in ``A``): ``F^T (y o alpha) - t = 0``
    and, with an intercept, ``y^T alpha = 0``; then ``-alpha <= 0`` and ``alpha <= C s``."""
    n = f.n_samples
    y = np.asarray(f.y, dtype=np.float64)
    Q = None if f.linear else _signed_gram(f.gram(), y)
    if Q is not None:
        P = sp.csc_matrix(np.triu(Q))
        k, blocks = 0, []
    else:
        F = f.X if f.linear else gram_factor(f.gram())
        k = F.shape[1]
        FY = sp.csc_matrix(F.T @ sp.diags(y)) if sp.issparse(F) else sp.csc_matrix(F.T * y)
        blocks = [[FY, -sp.identity(k, format="csc")]]
        P = sp.diags(np.r_[np.zeros(n), np.ones(k)], format="csc")
    pad = [None] if k else []  # the rows below do not involve t
    if f.fit_intercept:
        blocks.append([sp.csc_matrix(y[None, :]), *pad])
    zero = k + int(f.fit_intercept)
    eye_n = sp.identity(n, format="csc")
    blocks += [[-eye_n, *pad], [eye_n, *pad]]
    A = sp.bmat(blocks, format="csc", dtype=np.float64)
    q = np.r_[-f.margin, np.zeros(k)]
    b = np.r_[np.zeros(zero + n), f.upper]
    return P, q, A, b, zero


def _signed_gram(K: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """``diag(y) K diag(y)`` when ``K`` is positive definite in floating point (its Cholesky
    factorization succeeds: a few milliseconds at ``n = 500``), else ``None``."""
    try:
        scipy.linalg.cholesky(K, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return None
    return K * np.outer(y, y)


def _clarabel(P, q, A, b, cones) -> Any | None:
    """Clarabel's result at qpsvm's settings (:data:`SETTINGS`), ``None`` without Clarabel or
    when it does not report the problem solved."""
    try:
        import clarabel
    except ImportError:  # the CVXPY path uses the other backends of the default order
        return None
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    for name, value in SETTINGS["CLARABEL"].items():
        setattr(settings, name, value)
    result = clarabel.DefaultSolver(P, q, A, b, cones(clarabel), settings).solve()
    return result if str(result.status) == "Solved" else None


def _certified(f: BinaryProblem, cand: Candidate, result: Any, tol: float, refine: bool):
    """The solution of Clarabel's point ``cand`` (or its best refinement) when it passes at
    ``tol``, else ``None``."""
    cand, cert = best_certified(f, cand, tol, refine)
    if not cert.passed:
        return None
    return f.solution_from(
        cand,
        cert,
        solver="CLARABEL",
        n_iter=int(result.iterations),
        status="optimal",
        info={"backend_status": "optimal", "backend_time": float(result.solve_time)},
    )


def _box_dual(f: BinaryProblem, tol: float) -> Solution | None:
    r"""The certified optimum of a dense soft-margin primal with unit margins and equal slack
    weights ``s`` from box QPs (:func:`~qpsvm.verify.box_qp.box_qp`: the exact sets of a dual
    coordinate ascent, else those of a smoothed hinge's Newton steps in the ``d`` features),
    with no interior-point solve. Without intercept the dual has no coupling and is one box QP,

    .. math::

        \max_{0 \le \alpha \le C s} \sum_i \alpha_i - \tfrac12 \Big\|\sum_i \alpha_i
        y_i x_i\Big\|^2;

    with a free intercept, the balance :math:`\sum_i y_i \alpha_i = 0` is met by a search on
    ``b`` (:func:`_intercept_search`). ``None`` where the problem is not of that form or has
    fewer than :data:`BOX_DUAL_ASPECT` samples per feature (where the smoothed steps cost more
    than Clarabel), where the ascent's kernel is not compiled yet (a cold call; it is compiled
    once the ranking windows' budget of rows is spent), or where no point passes at ``tol``.
    The solution's ``n_iter`` is the number of box QPs solved."""
    n, d = f.n_samples, f.n_features
    cap = float(f.upper[0]) if n else 0.0
    plain = np.all(f.margin == 1.0) and np.all(f.upper == cap) and 0.0 < cap < math.inf
    if sp.issparse(f.X) or not plain or n < BOX_DUAL_ASPECT * d:
        return None
    if uncompiled(shrinking_epochs, n, ASCENT_PAIRS):
        return None
    start = time.perf_counter()
    Z = np.ascontiguousarray(f.y[:, None] * np.asarray(f.X, dtype=np.float64))
    with one_blas_thread():
        if f.fit_intercept:
            found = _intercept_search(f, Z, cap, tol, _active_steps(n, d + 1))
        else:
            alpha, w = box_qp(Z, np.zeros(d), cap, active_steps=_active_steps(n, d))
            cand = Candidate(w=w, b=0.0, alpha=alpha)
            found = cand, load(f.certifier)(f, cand, tol=tol), 1
    if found is None or not found[1].passed:
        return None
    cand, cert, solves = found
    return f.solution_from(
        cand,
        cert,
        solver="box_dual",
        status="optimal",
        n_iter=solves,
        solve_time=time.perf_counter() - start,
    )


def _active_steps(n: int, d: int) -> int:
    """Steps of the primal active-set method a box QP of ``n`` rows in ``d`` features may take
    (:func:`~qpsvm.verify.box_qp.box_qp`), as the ranking windows' bound
    (:func:`~qpsvm.verify.ranking_fused.rows_active_steps`); none above
    :data:`BOX_ACTIVE_FEATURES` features."""
    return 0 if d > BOX_ACTIVE_FEATURES else rows_active_steps(n, d)


def _intercept_search(
    f: BinaryProblem, Z: np.ndarray, cap: float, tol: float, active_steps: int = 0
) -> tuple[Candidate, Certificate, int] | None:
    r"""The soft-margin primal with a free intercept from box QPs with the intercept a
    regularised feature around a centre ``c``: over ``\tilde w = (w, t)``, ``b = c + B t``,

    .. math::

        \min_{w, b}\ \tfrac12 \|w\|^2 + \frac{(b - c)^2}{2 B^2} + C s \sum_i \max(0, 1 - y_i
        (w \cdot x_i + b)),

    the box QP on the rows ``(y_i x_i, y_i B)`` with ``v_0 = (0, c / B)`` (its primal's
    ``-v_0 \cdot \tilde w`` completes the square). Its optimum ``b`` is a proximal step on the
    optimal value ``V(b)`` of the problem with ``b`` fixed (Rockafellar 1976), and its
    multipliers are that problem's: ``g(b) = \sum_i y_i \alpha_i = (b - c) / B^2``, with
    ``V'(b) = -g(b)``, ``g`` nonincreasing. Each optimum's sets are refined by the balanced KKT
    equations (:func:`~qpsvm.solvers.finish.best_certified`) and certified; while none passes,
    the next centre is the root of ``g`` estimated from the points found (regula falsi inside a
    bracket, else a secant, first a plain proximal step), at most :data:`INTERCEPT_CENTRES`
    box QPs. ``B`` is the rows' root mean square norm, times :data:`INTERCEPT_WIDE` where
    ``C s`` times their mean square norm is at most :data:`INTERCEPT_WIDE_BELOW`; above
    :data:`INTERCEPT_MAX` the search is not tried. Returns the best point and its certificate
    (``None`` if there was none) and the box QPs solved to find it."""
    d = Z.shape[1]
    scale = math.sqrt(float(np.mean(np.einsum("ij,ij->i", Z, Z))))
    if not scale > 0.0:
        return None
    if cap * scale**2 > INTERCEPT_MAX:
        return None
    B = scale * (INTERCEPT_WIDE if cap * scale**2 <= INTERCEPT_WIDE_BELOW else 1.0)
    rows = np.ascontiguousarray(np.column_stack([Z, B * f.y]))
    centre, start, points = 0.0, None, []
    best = None
    for solves in range(1, INTERCEPT_CENTRES + 1):
        v0 = np.zeros(d + 1)
        v0[d] = centre / B
        alpha, w = box_qp(rows, v0, cap, start, active_steps)
        b = B * w[d]
        cand = Candidate(w=w[:d].copy(), b=b, alpha=alpha)
        # the screen's refinement is the first the certificate tries: computed once
        refinements = iter(load(f.refinement)(f, cand))
        first = next(refinements, None)
        if solves == INTERCEPT_CENTRES or _kkt_holds(f, first):
            tried = refinements if first is None else itertools.chain([first], refinements)
            cand, cert = best_certified(f, cand, tol, True, tried)
            if best is None or cert.relative_gap < best[1].relative_gap:
                best = cand, cert, solves
            if cert.passed:
                break
        points.append((b, (b - centre) / B**2))
        centre, start = _next_centre(points), w
    return best


def _kkt_holds(f: BinaryProblem, refined: Candidate | None) -> bool:
    """Whether ``refined``, the first refinement of a point of the search (the balanced KKT
    equations on its sets, :func:`~qpsvm.solvers.refine.refine_binary`), satisfies the KKT
    conditions in floating point within :data:`INTERCEPT_KKT`: residuals ``r_i = y_i (w .
    x_i + b) - 1`` at least ``-INTERCEPT_KKT`` below ``alpha_i = C s_i`` and at most
    ``INTERCEPT_KKT`` above ``alpha_i = 0``. A screen only: the certificate decides."""
    if refined is None or refined.alpha is None:
        return False
    r = f.y * (np.asarray(f.X @ refined.w).ravel() + float(refined.b or 0.0)) - f.margin
    short = np.max(-r[refined.alpha < f.upper], initial=0.0)
    beyond = np.max(r[refined.alpha > 0.0], initial=0.0)
    return max(float(short), float(beyond)) <= INTERCEPT_KKT


def _next_centre(points: list[tuple[float, float]]) -> float:
    """The next estimate of the root of the nonincreasing ``g`` from its values ``(b, g(b))``:
    regula falsi between the nearest points on either side, else the secant of the last two,
    else (one point) ``b`` itself (a proximal step from there)."""
    above = [p for p in points if p[1] > 0.0]
    below = [p for p in points if p[1] < 0.0]
    b, g = points[-1]
    if g == 0.0:
        return b
    if above and below:
        (b0, g0), (b1, g1) = max(above), min(below)
        return b0 + g0 / (g0 - g1) * (b1 - b0)
    if len(points) >= 2 and points[-2][1] != g:
        b0, g0 = points[-2]
        return b - g * (b - b0) / (g - g0)
    return b


def solve_primal_direct(f: BinaryProblem, tol: float, refine: bool = True) -> Solution | None:
    """Solve the soft-margin primal of ``f`` without an interior-point solver where its dual has
    no coupling and its exact sets are found cheaply (:func:`_box_dual`), else with Clarabel at
    qpsvm's settings (:data:`SETTINGS`), and return the certified solution, or ``None`` when
    Clarabel does not report it solved or no point (it or a refinement,
    :func:`~qpsvm.solvers.finish.best_certified`) passes at ``tol``.
    """
    solution = _box_dual(f, tol)
    if solution is not None:
        return solution
    P, q, A, b = _primal_matrices(f)
    result = _clarabel(P, q, A, b, lambda c: [c.NonnegativeConeT(A.shape[0])])
    if result is None:
        return None
    x, z = np.asarray(result.x), np.asarray(result.z)
    n, d = f.n_samples, f.n_features
    cand = Candidate(w=x[:d].copy(), b=float(x[d]) if f.fit_intercept else 0.0, alpha=z[:n].copy())
    return _certified(f, cand, result, tol, refine)


def solve_restricted_primal(
    f: BinaryProblem, work: np.ndarray, bound: np.ndarray
) -> tuple[Candidate, BackendResult] | None:
    """The working set's restricted soft-margin primal (the model of ``f.build_restricted``:
    the samples ``work``, those of the mask ``bound`` folded in at ``alpha_i = C s_i``) solved
    by Clarabel from its matrices (:func:`_rows_matrices`), without CVXPY: the candidate on
    the full data (``alpha`` the margin rows' multipliers on ``work``, ``C s_i`` on ``bound``,
    0 elsewhere, as :meth:`~qpsvm.SoftMarginPrimal.read_model` reads the model) and Clarabel's
    run, or ``None`` when Clarabel is missing or does not report the problem solved (the
    working set then solves the CVXPY model, which falls back and raises as before). The
    margins are the rows ``y_i x_i`` themselves (for the ranking SVM the pairs' differences,
    which :meth:`~qpsvm.RankingSVM.build` also takes where they have fewer nonzeros than the
    items' scores: the more accurate form)."""
    idx = np.asarray(work, dtype=np.intp)
    Z, y = signed_rows(f, idx)
    linear = None
    if np.any(bound):
        # -C (v . w + t b), v = sum_E s_i y_i x_i, t = sum_E s_i y_i: rows_primal_model's term
        fixed = np.where(bound, f.sample_weight, 0.0)
        folded = f.expansion(fixed)
        if f.fit_intercept:
            folded = np.r_[folded, fixed @ f.y]
        linear = -f.C * folded
    weights = f.C * f.sample_weight[idx]
    P, q, A, b = _rows_matrices(Z, y, f.margin[idx], weights, f.fit_intercept, linear)
    result = _clarabel(P, q, A, b, lambda c: [c.NonnegativeConeT(A.shape[0])])
    if result is None:
        return None
    x, z = np.asarray(result.x), np.asarray(result.z)
    d = f.n_features
    alpha = np.where(bound, f.upper, 0.0)
    alpha[idx] = z[: idx.size]
    cand = Candidate(w=x[:d].copy(), b=float(x[d]) if f.fit_intercept else 0.0, alpha=alpha)
    run = BackendResult("CLARABEL", "optimal", int(result.iterations), float(result.solve_time))
    return cand, run


def solve_dual_direct(f: BinaryProblem, tol: float, refine: bool = True) -> Solution | None:
    """Solve the soft-margin dual of ``f`` (any kernel) with Clarabel from its matrices
    (:func:`_dual_matrices`) and return the certified solution, or ``None`` as
    :func:`solve_primal_direct` does. The Gram factor and the certificate's dense solves run on
    one BLAS thread, as SMO's do (threaded LAPACK stalls on busy cores)."""
    with one_blas_thread():
        P, q, A, b, zero = _dual_matrices(f)
        result = _clarabel(
            P, q, A, b, lambda c: [c.ZeroConeT(zero), c.NonnegativeConeT(A.shape[0] - zero)]
        )
        if result is None:
            return None
        cand = f.candidate_from_alpha(np.asarray(result.x)[: f.n_samples].copy())
        return _certified(f, cand, result, tol, refine)

r"""The squared hinge with the L2 penalty by Newton's method on its primal, finished exactly.

Without intercept the composed problem with the squared hinge loss and the L2 penalty is

.. math::

    \min_w\ P(w) = \tfrac12\|w\|^2 + \sum_i W_i \max(0,\ m_i - \sigma_i x_i \cdot w)^2,
    \qquad W_i = C c_i,

a strongly convex, piecewise quadratic function of ``w`` alone: on the rows ``A`` whose margin
falls short (``r_i = m_i - \sigma_i x_i \cdot w > 0``) it is the quadratic whose minimiser
solves the ``d x d`` system

.. math::

    \Big(I + 2 \sum_{i \in A} W_i x_i x_i^T\Big) \bar w = 2 \sum_{i \in A} W_i \sigma_i m_i x_i.

A regularised intercept ``b = B w_{d+1}`` (liblinear's bias) is one more coordinate of ``w`` on
the constant feature ``B`` appended to every row; a free one ``b = w_{d+1}`` is the coordinate
of a constant feature 1 left out of the penalty (its diagonal entry of the identity is 0; the
system stays positive definite while a row is short of its margin, its last diagonal entry
``2 sum_A W_i > 0``). On sparse rows the system is summed over each
row's nonzeros (``O(nnz(x_i)^2)`` a row, :func:`_weighted_gram`), never over a dense row. Each
iteration solves it for the rows short of the margin at ``w``. If every row is on the same side
of the margin at ``\bar w`` (those of the system short of it or on it, the others on it or
beyond), the gradient of ``P`` at ``\bar w`` is that of the system's quadratic, zero: ``\bar w``
minimises ``P`` exactly (up to the rounding of one linear solve). Otherwise the iterate moves
along ``\bar w - w`` to the exact minimiser of ``P`` on that line (a piecewise quadratic in the
step: its slope is piecewise linear, and the walk over its kinks in sorted order finds the root
exactly, :func:`exact_step`). This finite Newton method is Keerthi and DeCoste's L2-SVM-MFN ("A
modified finite Newton method for fast solution of large scale linear SVMs", JMLR 6, 2005). For
the ranking problems the rows are the pairs' differences ``x_i - x_j``: only the rows of the
pairs short of the margin are ever formed. The point is certified by the problem's own
certificate (Fenchel duality of the pieces, :func:`qpsvm.verify.fenchel.certify_composed`).
"""

from __future__ import annotations

import time
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from qpsvm._jit import ENTRY
from qpsvm._validation import check_int, check_tol
from qpsvm.contract import CompositeProblem, check_method
from qpsvm.exceptions import InvalidInputError
from qpsvm.formulations.pieces.intercepts import with_bias_column
from qpsvm.solution import Candidate, Solution
from qpsvm.solvers.finish import finish
from qpsvm.verify.certificate import DEFAULT_TOL

__all__ = ["exact_step", "solve_newton"]

#: Default limit on Newton iterations.
MAX_ITER = 200
#: Most features: each iteration forms and solves a dense ``d x d`` system.
MAX_FEATURES = 5000

WHAT = "the finite Newton optimum"
ADVICE = "Try method='qp' (the full CVXPY problem)."


def _design(f: CompositeProblem) -> Any:
    """The rows ``x_i`` the weights act on: ``X`` (CSR when sparse), with the intercept's
    constant feature appended (:func:`with_bias_column`): ``B`` for the regularised one (``b =
    B w_{d+1}``), 1 for the free one (``b = w_{d+1}``)."""
    if f.intercept.fitted:
        return with_bias_column(f.X, f.intercept.scaling)
    return sp.csr_matrix(f.X) if sp.issparse(f.X) else f.X


def _penalised(f: CompositeProblem, n_weights: int) -> np.ndarray:
    """The diagonal of the penalty's Hessian over the weights: ones, but 0 on a free
    intercept's coordinate ``w_{d+1} = b`` (unregularised)."""
    pen = np.ones(n_weights)
    if f.intercept.coupled:
        pen[-1] = 0.0
    return pen


def _system(
    f: CompositeProblem,
    X: Any,
    idx: np.ndarray,
    W: np.ndarray,
    m: np.ndarray,
    pen: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    r"""``H = diag(pen) + 2 sum_i W_i x_i x_i^T`` and ``2 sum_i W_i sigma_i m_i x_i`` over the
    rows ``idx``: a sparse product for sparse rows (``O(nnz)`` per row's nonzeros, never a dense
    row), dense rows otherwise (pair differences formed from the items). ``pen`` is the
    penalty's diagonal (:func:`_penalised`)."""
    if f.item_pairs is None and sp.issparse(X):
        H = np.zeros((X.shape[1], X.shape[1]))
        _weighted_gram(X.data, X.indices, X.indptr, idx, 2.0 * W[idx], H)
        z = np.zeros(X.shape[0])
        z[idx] = 2.0 * W[idx] * f.sigma[idx] * m[idx]
        rhs = np.asarray(X.T @ z).ravel()
    else:
        if f.item_pairs is not None:
            items, pairs = f.item_pairs
            R = items[pairs[idx, 0]] - items[pairs[idx, 1]]
        else:
            R = X[idx]
        R = R.toarray() if sp.issparse(R) else np.asarray(R, dtype=np.float64)
        R = R * f.sigma[idx, None]
        H = 2.0 * (R.T @ (W[idx, None] * R))
        rhs = 2.0 * (R.T @ (W[idx] * m[idx]))
    H.flat[:: H.shape[0] + 1] += pen  # the penalty's Hessian
    # a free intercept's coordinate has no curvature when no row of weight > 0 is in the sum,
    # nor any slope from them: the system takes 1 there (a positive definite H, so its step is
    # a descent direction) and the exact line search sets how far it goes
    flat = np.flatnonzero(H.diagonal() == 0.0)
    H[flat, flat] = 1.0
    return H, rhs


@numba.njit(**ENTRY)
def _weighted_gram(data, indices, indptr, rows, weights, H):  # pragma: no cover - compiled
    """``H += sum_s weights_s x_{rows_s} x_{rows_s}^T`` over the CSR rows ``(data, indices,
    indptr)``: ``O(nnz(x_i)^2)`` per row."""
    for s in range(rows.shape[0]):
        i, c = rows[s], weights[s]
        for a in range(indptr[i], indptr[i + 1]):
            ca, ja = c * data[a], indices[a]
            for q in range(indptr[i], indptr[i + 1]):
                H[ja, indices[q]] += ca * data[q]


def _margins(f: CompositeProblem, X: Any, w: np.ndarray) -> np.ndarray:
    """``sigma_i x_i . w`` for every row."""
    return f.sigma * np.asarray(X @ w).ravel()


def exact_step(a: float, b: float, r: np.ndarray, g: np.ndarray, W: np.ndarray) -> float:
    r"""The minimiser ``t >= 0`` of the convex piecewise quadratic with slope

    .. math::

        \phi'(t) = a + b t - 2 \sum_i W_i g_i \max(0,\ r_i - t g_i),\qquad b \ge 0,

    (``P`` along ``w + t d``: ``a = w . d``, ``b = d . d`` over the penalised coordinates,
    ``r_i`` the rows' shortfalls and ``g_i`` their margins' rates ``sigma_i x_i . d``). The
    slope is linear between the kinks ``t_i = r_i / g_i > 0``, where a row leaves (``g_i > 0``)
    or joins (``g_i < 0``) the sum; walking the kinks in increasing order, the first piece whose
    slope is nonnegative at its right end holds the root, ``0`` if the slope at ``0`` is already
    nonnegative. A piece of constant slope (``b = 0``, a direction along a free intercept alone,
    and no row in the sum) holds no root: its start if the slope is nonnegative, else none."""
    active = (r > 0.0) | ((r == 0.0) & (g < 0.0))
    s1 = 2.0 * float(np.sum(W[active] * g[active] * r[active]))
    s2 = 2.0 * float(np.sum(W[active] * g[active] ** 2))
    leave = active & (g > 0.0)
    join = ~active & (g < 0.0)
    kinks = leave | join
    at = r[kinks] / g[kinks]
    order = np.argsort(at)
    at = at[order]
    sign = np.where(leave[kinks], -1.0, 1.0)[order]
    wk, gk, rk = W[kinks][order], g[kinks][order], r[kinks][order]
    c1 = s1 + np.concatenate([[0.0], np.cumsum(sign * 2.0 * wk * gk * rk)])
    c2 = s2 + np.concatenate([[0.0], np.cumsum(sign * 2.0 * wk * gk**2)])
    rate = b + c2
    with np.errstate(divide="ignore", invalid="ignore"):
        # the root of each piece's line; a constant slope's: -inf if nonnegative, else +inf
        roots = np.where(rate > 0.0, (c1 - a) / rate, np.where(c1 <= a, -np.inf, np.inf))
    ends = np.concatenate([at, [np.inf]])
    k = int(np.argmax(roots <= ends))  # the last piece's root is always within its end
    start = 0.0 if k == 0 else float(at[k - 1])
    return max(float(roots[k]), start, 0.0)


def solve_newton(
    f: CompositeProblem,
    solver: str | None = None,
    *,
    tol: float = DEFAULT_TOL,
    max_iter: int = MAX_ITER,
) -> Solution:
    """Solve the squared hinge with the L2 penalty and any intercept (none, free or regularised)
    exactly by Newton's method (module docstring), certified at ``tol``.

    Parameters
    ----------
    f : ComposedProblem
        Squared hinge loss, L2 penalty, any intercept, linear kernel (e.g.
        ``RankingSVM(..., loss="squared_hinge")``).
    solver : None
        Refused: the method uses no QP backend.
    tol : float, default=1e-9
        Relative gap the answer is certified at.
    max_iter : int, default=200
        Newton iterations at most; the last point is then certified as it is.

    Raises
    ------
    InvalidInputError
        More than :data:`MAX_FEATURES` features.
    UncertifiedSolutionError
        The point does not pass its certificate.
    """
    check_method(f, "newton")
    tol = check_tol(tol)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    if f.n_features > MAX_FEATURES:
        raise InvalidInputError(
            f"method='newton' solves a dense system in the {f.n_features} features (at most "
            f"{MAX_FEATURES}); use method='dcd' (dual coordinate descent over the nonzeros)."
        )
    start = time.perf_counter()
    W, m, X = f.loss_weights(), f.target, _design(f)
    pen = _penalised(f, X.shape[1])
    w = np.zeros(X.shape[1])
    r = m - _margins(f, X, w)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - the count is reported
        short = r > 0.0
        H, rhs = _system(f, X, np.flatnonzero(short), W, m, pen)
        target = np.linalg.solve(H, rhs)
        r_target = m - _margins(f, X, target)
        if np.all(r_target[short] >= 0.0) and np.all(r_target[~short] <= 0.0):
            w = target  # every row on the side of its system: the gradient of P is 0 there
            break
        d = target - w
        step = exact_step(float(w @ (pen * d)), float(d @ (pen * d)), r, r - r_target, W)
        if step == 0.0:
            break
        w = w + step * d
        r = m - _margins(f, X, w)
    # the multipliers of stationarity, w = sum_i u_i sigma_i x_i: u_i = 2 W_i max(0, r_i)
    alpha = 2.0 * W * np.maximum(0.0, m - _margins(f, X, w))
    if f.intercept.fitted:
        cand = Candidate(w=w[:-1], b=f.intercept.scaling * float(w[-1]), alpha=alpha)
    else:
        cand = Candidate(w=w, b=0.0, alpha=alpha)
    cand, cert = finish(f, cand, tol, what=WHAT, advice=ADVICE, eager=False)
    return f.solution_from(
        cand,
        cert,
        status="optimal",
        solver="newton",
        n_iter=it,
        solve_time=time.perf_counter() - start,
    )

r"""Conjugate gradients on the KKT equations of SMO's free set (rbf kernel, dense data).

Near the optimum of the soft-margin dual SMO has found its free set ``F`` long before its
linear convergence has made the free multipliers exact. With the others fixed, the free ones
solve the equality-constrained quadratic

.. math::

    \min_d\ \tfrac12 d^T Q_{FF} d + G_F^T d \quad \text{s.t.} \quad y_F^T d = 0,
    \qquad Q_{FF} = \operatorname{diag}(y_F) K_{FF} \operatorname{diag}(y_F),

whose solution is SMO's limit when the sets are right. Conjugate gradients projected onto
``y_F^T d = 0`` (Gould, Hribar and Nocedal 2001) solve it with products by ``Q_{FF}`` alone;
where ``K_{FF}`` is well conditioned (rbf with a large ``gamma``: the block is close to the
identity) a handful of products replace SMO's tail of tens of thousands of steps. Each product
reads the free rows the kernel cache holds in place and forms the others by blocks of a GEMM
(``-2 gamma X_R X_F^T`` with the squared norms, then the exponential), never row by row.

The step is a proposal: :func:`qpsvm.solvers.smo._cg_step` moves ``alpha`` along ``d`` as
far as the box ``0 <= alpha <= C s`` allows (the segment keeps ``y^T alpha``), recomputes the
gradient from the data, and SMO goes on from there; the gap and the certificate are read as
before.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

#: Rows of the free block formed by one GEMM (a 128 x 8000 block is 8 MB).
BLOCK_ROWS = 128
#: Solves at most per step, each with the multipliers the previous one took out of the box
#: fixed at their bound (:func:`free_step`).
ROUNDS = 3


def rbf_block(
    A: np.ndarray, sqA: np.ndarray, B: np.ndarray, sqB: np.ndarray, gamma: float
) -> np.ndarray:
    r"""``exp(min(0, 2 gamma A B^T - sqA - sqB))``, the rbf kernel block of the rows of ``A``
    and ``B`` by one GEMM, ``sqA`` and ``sqB`` their squared norms times ``gamma`` (the
    minimum keeps rounding from putting an entry above 1)."""
    D = A @ B.T
    D *= 2.0 * gamma
    D -= sqA[:, None]
    D -= sqB[None, :]
    np.minimum(D, 0.0, out=D)
    return np.exp(D, out=D)


def off_diagonal_sum(
    X: np.ndarray, sq: np.ndarray, gamma: float, F: np.ndarray, size: int
) -> float:
    r"""The largest ``sum_{j in F, j != i} K_ij`` over ``size`` rows ``i`` of ``F`` evenly
    spread (``sq`` the squared norms of the rows of ``X``): an estimate of the radius of the
    Gershgorin discs of ``K_{FF}`` about its unit diagonal, so that its eigenvalues lie in
    ``[1 - s, 1 + s]`` when ``s < 1``."""
    # one row is the first, as np.linspace gives it, without its set-up (10 us at n = 200)
    S = F[:1] if size == 1 else F[np.linspace(0, F.size - 1, min(size, F.size)).astype(np.intp)]
    K = rbf_block(X[S], gamma * sq[S], X[F], gamma * sq[F], gamma)
    return float(np.max(K.sum(axis=1) - 1.0))


def decades_per_product(s: float) -> float:
    r"""Conjugate gradients' decades of error per product on a matrix with eigenvalues in
    ``[1 - s, 1 + s]``: ``log10 1/rho``, ``rho = (sqrt(kappa) - 1) / (sqrt(kappa) + 1)`` with
    ``kappa = (1 + s) / (1 - s)`` (the classical bound); 0 when ``s >= 1``."""
    if not s < 1.0:
        return 0.0
    root = math.sqrt((1.0 + max(s, 0.0)) / (1.0 - s))
    return math.log10((root + 1.0) / max(root - 1.0, 1e-300))


def free_block_product(
    X: np.ndarray, sq: np.ndarray, gamma: float, F: np.ndarray, arrays: tuple
) -> Callable[[np.ndarray], np.ndarray]:
    r"""The product ``v -> K_{FF} v`` of the rbf kernel ``exp(-gamma ||x_i - x_j||^2)``
    (``sq`` the squared norms of the rows of ``X``), by symmetry: with ``H`` the free rows the
    cache ``arrays`` (:attr:`qpsvm.kernels.KernelCache.arrays`) holds and ``M`` the others,
    ``K_{HF} v`` and ``K_{MH} v_H = (v_H^T K_{HM})^T`` are two passes over the cache's slots
    (GEMV), and ``K_{MM} v_M`` is formed by upper-triangular blocks of :data:`BLOCK_ROWS`
    rows, ``exp(min(0, 2 gamma X_R X_S^T - gamma |x_R|^2 - gamma |x_S|^2))`` for ``S`` the
    rows of ``M`` from ``R`` on, each block serving ``R`` and, transposed, ``S``: half of
    ``|M|^2`` exponentials a product (measured, n = 8000, 4724 of 8000 free rows missing:
    0.15 s a product by full row blocks of 128, 0.22 s by blocks of 512)."""
    rows, slot_of = arrays[0], arrays[1]
    n = X.shape[0]
    slots = slot_of[F]
    hit = np.flatnonzero(slots >= 0)
    miss = np.flatnonzero(slots < 0)
    used = int(slots[hit].max()) + 1 if hit.size else 0
    XM = np.ascontiguousarray(X[F[miss]])
    sqM = gamma * sq[F[miss]]
    where = F[miss]

    def product(v: np.ndarray) -> np.ndarray:
        out = np.zeros(F.size)
        if hit.size:
            held = rows[:used]
            full = np.zeros(n)
            full[F] = v
            out[hit] = (held @ full)[slots[hit]]
            w = np.zeros(used)
            w[slots[hit]] = v[hit]
            out[miss] = (w @ held)[where]
        vM = v[miss]
        part = np.zeros(miss.size)
        for start in range(0, miss.size, BLOCK_ROWS):
            stop = min(start + BLOCK_ROWS, miss.size)
            D = rbf_block(XM[start:stop], sqM[start:stop], XM[start:], sqM[start:], gamma)
            part[start:stop] += D @ vM[start:]
            part[stop:] += D[:, stop - start :].T @ vM[start:stop]
        out[miss] += part
        return out

    return product


def projected_cg(
    product: Callable[[np.ndarray], np.ndarray],
    g: np.ndarray,
    y: np.ndarray,
    tol: float,
    max_iter: int,
    give_up: Callable[[int, float], bool],
) -> tuple[np.ndarray, int, float]:
    r"""Conjugate gradients for :math:`\min_d \tfrac12 d^T Q d + g^T d` subject to
    :math:`y^T d = 0` (``y = +-1``), projected by :math:`P = I - y y^T / |y|^2`:
    the iterates stay in the null space of ``y^T`` and the projected residual
    :math:`P (Q d + g)` falls to ``tol`` in the max norm (the KKT violation of the free
    set's equations, the intercept being the projection's multiplier). Stops after
    ``max_iter`` products, or when ``give_up(iteration, residual)`` says so (the caller's cost
    rule). Returns ``d``, the products taken and the last residual."""
    yy = float(y @ y)

    def project(v: np.ndarray) -> np.ndarray:
        return v - y * (float(y @ v) / yy)

    d = np.zeros_like(g)
    r = project(g)
    p = -r
    rr = float(r @ r)
    res = float(np.max(np.abs(r), initial=0.0))
    it = 0
    while res > tol and it < max_iter and not give_up(it, res):
        q = product(p)
        it += 1
        curv = float(p @ q)
        if not curv > 0.0:
            break
        step = rr / curv
        d += step * p
        r += step * project(q)
        rr_new = float(r @ r)
        res = float(np.max(np.abs(r)))
        p = -r + (rr_new / rr) * p
        rr = rr_new
    return d, it, res


def free_step(
    product: Callable[[np.ndarray], np.ndarray],
    alpha: np.ndarray,
    G: np.ndarray,
    y: np.ndarray,
    upper: np.ndarray,
    tol: float,
    max_iter: int,
    give_up: Callable[[int, float], bool],
) -> tuple[np.ndarray, int, np.ndarray]:
    r"""The step ``d`` on the free set (``alpha``, ``G``, ``y``, ``upper`` restricted to it)
    that solves its KKT equations (:func:`projected_cg`, ``product`` the map
    ``v -> Q_{FF} v``), with an active-set correction: the multipliers that ``alpha + d``
    takes out of the box are fixed at the bound they cross (``d_B`` fixed) and the others
    solved again, the constraint kept by a particular solution
    ``-y_R (y_B^T d_B) / |R|`` and the gradient moved by ``Q_{FB} d_B``, at most
    :data:`ROUNDS` times. Returns ``d`` (still possibly leaving the box after the last
    round: :func:`box_step` bounds the move), the products taken and the mask of the
    multipliers fixed at a bound (``alpha + d`` is exactly that bound there)."""
    k = alpha.size
    fixed = np.zeros(k, dtype=bool)
    d = np.zeros(k)
    taken = 0
    for _ in range(ROUNDS):
        R = np.flatnonzero(~fixed)
        if R.size == 0:
            break
        base = np.where(fixed, d, 0.0)
        g = G
        if fixed.any():
            base[R] = -y[R] * (float(y[fixed] @ d[fixed]) / R.size)
            g = G + product(base)
            taken += 1

        def restricted(v: np.ndarray, R: np.ndarray = R) -> np.ndarray:
            full = np.zeros(k)
            full[R] = v
            return product(full)[R]

        dR, it, res = projected_cg(restricted, g[R], y[R], tol, max_iter, give_up)
        taken += it
        d = base
        d[R] += dR
        x = alpha + d
        out = ~fixed & ((x < 0.0) | (x > upper))
        if not out.any() or res > tol:
            break
        fixed |= out
        d[out] = np.clip(x[out], 0.0, upper[out]) - alpha[out]
    return d, taken, fixed


def box_step(alpha: np.ndarray, d: np.ndarray, upper: np.ndarray) -> float:
    """The largest ``t`` in ``[0, 1]`` with ``0 <= alpha + t d <= upper``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        up = np.where(d > 0, (upper - alpha) / d, math.inf)
        down = np.where(d < 0, -alpha / d, math.inf)
    return float(min(1.0, np.min(up, initial=math.inf), np.min(down, initial=math.inf)))

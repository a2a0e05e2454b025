r"""Sequential minimal optimisation (SMO) for the soft-margin dual, with any kernel.

The dual, written as a minimisation,

.. math::

    \min_\alpha\ \tfrac12 \alpha^T Q \alpha - m^T\alpha, \quad Q_{ij} = y_i y_j K_{ij},
    \quad 0 \le \alpha_i \le C s_i, \quad y^T\alpha = 0 \text{ (with an intercept)},

is solved two variables at a time (Platt 1998): the pair moves along ``y_i e_i - y_j e_j``, which
keeps ``y.alpha`` fixed, by the exact minimiser of the one-dimensional quadratic, clipped to the
box. The gradient ``G = Q alpha - m`` starts at ``-m`` and is updated with two kernel rows per
step. The pair is the maximal violating pair of the KKT conditions,

.. math::

    i \in \arg\max_{t \in I_{up}} -y_t G_t, \qquad j \in \arg\min_{t \in I_{low}} -y_t G_t,

or, with ``selection="second_order"``, the ``j`` of largest guaranteed decrease
``(-y_i G_i + y_t G_t)^2 / (K_ii + K_tt - 2 K_it)`` (Fan, Chen and Lin 2005; libsvm's default).
``I_up = {t: y_t = 1, alpha_t < C s_t} U {t: y_t = -1, alpha_t > 0}`` and ``I_low`` the converse.
SMO stops when ``max_{I_up} -yG - min_{I_low} -yG < tol`` (libsvm's ``eps``). Without an
intercept there is no balance constraint and one coordinate moves at a time, the one of largest
projected gradient (``"max_violating"``) or of largest exact decrease (``"second_order"``),
until every projected gradient is below ``tol``.

When SMO stops at tolerance ``tol`` with ``b`` between the two extremes above, every KKT
condition is violated by at most ``tol``, so the duality gap is at most
``2 tol sum_i C s_i``; the certificate attached to the solution measures the actual gap.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import numpy as np

from qpsvm._validation import check_flag, check_int, check_number
from qpsvm.contract import BinaryProblem, check_method
from qpsvm.exceptions import InvalidInputError
from qpsvm.kernels import KernelCache, gram_arrays
from qpsvm.solution import Candidate, Solution
from qpsvm.solvers import _online_kernels as kernels

__all__ = ["SELECTIONS", "smo_intercept", "solve_smo"]

logger = logging.getLogger("qpsvm")

#: Working-set selection rules.
SELECTIONS = ("second_order", "max_violating")


def smo_intercept(y: np.ndarray, G: np.ndarray, alpha: np.ndarray, upper: np.ndarray) -> float:
    r"""libsvm's intercept from the dual gradient ``G = Q alpha - m``.

    ``b = -r`` with ``r`` the mean of ``y_t G_t`` over the free variables
    (``0 < alpha_t < C s_t``), where the KKT conditions hold with equality; without free
    variables, ``r`` is the midpoint of the interval the bounded ones allow.
    """
    yG = y * G
    active = upper > 0
    at_upper = active & (alpha >= upper)
    at_lower = active & (alpha <= 0) & ~at_upper
    free = active & ~at_upper & ~at_lower
    if np.any(free):
        return -float(np.mean(yG[free]))
    ub_set = (at_upper & (y < 0)) | (at_lower & (y > 0))
    lb_set = (at_upper & (y > 0)) | (at_lower & (y < 0))
    ub = float(np.min(yG[ub_set], initial=math.inf))
    lb = float(np.max(yG[lb_set], initial=-math.inf))
    ends = [v for v in (ub, lb) if math.isfinite(v)]
    return -float(np.mean(ends)) if ends else 0.0


def _check_options(
    f: BinaryProblem,
    tol: Any,
    max_iter: Any,
    cache_size: Any,
    selection: Any,
    shrinking: Any,
) -> tuple[float, int, float | None]:
    check_method(f, "smo")
    tol = check_number(tol, "tol")
    cache_size = None if cache_size is None else check_number(cache_size, "cache_size")
    max_iter = max(10_000_000, 100 * f.n_samples) if max_iter is None else max_iter
    max_iter = check_int(max_iter, "max_iter")
    if selection not in SELECTIONS:
        raise InvalidInputError(f"unknown selection {selection!r}; choose one of {SELECTIONS}.")
    check_flag(shrinking, "shrinking")
    return tol, max_iter, cache_size


def _kernel_rows(f: BinaryProblem, cache_size: float | None) -> tuple[tuple, np.ndarray]:
    """The kernel argument of the SMO loop and the diagonal ``K_ii``: rows computed on demand
    in a cache (the formulation's shared one for rbf/poly unless ``cache_size`` asks for a
    private one; a private one for the linear kernel), or the full Gram matrix when it is given
    or already formed."""
    name = f.kernel.name
    if name not in ("linear", "rbf", "poly") or f._gram is not None:
        gram = np.ascontiguousarray(f.gram())
        return gram_arrays(gram), np.diag(gram).copy()
    if cache_size is None and name != "linear":
        cache = f.kernel_cache()  # shared: its rows serve the certificate afterwards
    else:
        cache = KernelCache(
            f.kernel, f.X, f.kernel_cache_size if cache_size is None else cache_size
        )
    k, sqnorm = f.kernel, cache.spec[6]
    diag = {
        "linear": sqnorm,
        "rbf": np.ones(f.n_samples),
        "poly": (k.gamma * sqnorm + k.coef0) ** k.degree,
    }[name]
    return cache.arrays, diag


def solve_smo(
    f: BinaryProblem,
    solver: str | None = None,
    *,
    tol: float = 1e-3,
    max_iter: int | None = None,
    cache_size: float | None = None,
    selection: str = "second_order",
    shrinking: bool = True,
    certify: bool = True,
) -> Solution:
    r"""Approximate solve of the soft-margin dual by SMO (see :mod:`qpsvm.solvers.smo`).

    Parameters
    ----------
    f : SoftMarginDual or SoftMarginPrimal
        Any kernel (linear, rbf, poly, precomputed, callable); per-sample weights ``s_i`` give
        the box ``[0, C s_i]`` and margins ``m_i`` the linear term (``G`` starts at ``-m``).
    solver : None
        SMO uses no CVXPY solver (:meth:`~qpsvm.formulations.Formulation.solve` refuses one).
    tol : float, default=1e-3
        Stop when the largest KKT violation ``max_{I_up} -yG - min_{I_low} -yG`` (without an
        intercept: the largest projected gradient) is below ``tol``, as libsvm's ``eps``.
    max_iter : int, optional
        Limit on SMO steps; ``None`` is libsvm's ``max(10^7, 100 n)``.
    cache_size : float, optional
        Kernel memory in MB. Rows of the kernel matrix are computed on demand (in a vectorised
        numba loop) and kept in an LRU :class:`~qpsvm.kernels.KernelCache`; the ``n x n`` Gram
        matrix is never formed. By default the rbf/poly rows go to the formulation's own cache
        (``f.kernel_cache()``, ``f.kernel_cache_size`` MB), where they serve the working set and
        the certificate afterwards; a ``cache_size`` gives SMO a private cache of that size (the
        linear kernel always has a private one). Precomputed and callable kernels, and a Gram
        matrix ``f`` has already formed, are used as the full matrix.
    selection : {"second_order", "max_violating"}, default="second_order"
        Working-pair rule.
    shrinking : bool, default=True
        libsvm's shrinking: variables stuck at a bound leave the selection and the gradient
        update for a while; the gradient of all of them is rebuilt before SMO stops, so the
        stopping rule always holds on every variable.
    certify : bool, default=True
        Attach ``f.certify`` of the result. For a kernel the certificate solves least-squares
        systems on the support vectors and can cost far more than SMO itself; callers that use
        SMO as a starting point and certify later (the working-set solver) may skip it.

    Returns
    -------
    Solution
        ``alpha``, ``b`` (libsvm's: mean over free support vectors, or the midpoint),
        ``w = sum_i alpha_i y_i x_i`` for the linear kernel, ``status`` ``"tolerance"`` or
        ``"max_iter"``, and the certificate of ``f.certify`` (at qpsvm's ``1e-9``: SMO rarely
        passes it, the certified gap says how close it is). ``info`` holds the final
        ``violation``, the cache ``hits`` and ``misses`` and ``backend_time``, the seconds spent
        in the SMO loop (the rest of ``solve_time`` is setup and the certificate).
    """
    tol, max_iter, cache_size = _check_options(f, tol, max_iter, cache_size, selection, shrinking)
    n = f.n_samples
    arrays, diag = _kernel_rows(f, cache_size)
    stats = arrays[4]
    before = stats[:2].copy()
    alpha = np.zeros(n)
    G = -f.margin
    start = time.perf_counter()
    n_iter, violation = kernels.smo_loop(
        arrays,
        f.y,
        f.margin,
        f.upper,
        diag,
        alpha,
        G,
        tol,
        max_iter,
        selection == "second_order",
        f.fit_intercept,
        bool(shrinking),
    )
    loop_time = time.perf_counter() - start
    violation = max(float(violation), 0.0)
    status = "tolerance" if violation < tol else "max_iter"
    if status == "max_iter":
        logger.warning(
            "SMO stopped after max_iter=%d steps with KKT violation %.3g > tol=%.3g",
            n_iter,
            violation,
            tol,
        )
    b = smo_intercept(f.y, G, alpha, f.upper) if f.fit_intercept else 0.0
    cand = Candidate(w=f.expansion(alpha) if f.linear else None, b=b, alpha=alpha)
    return f.solution_from(
        cand,
        f.certify(cand, reference=False) if certify else None,
        solver="smo",
        status=status,
        n_iter=int(n_iter),
        info={
            "violation": violation,
            "hits": int(stats[0] - before[0]),
            "misses": int(stats[1] - before[1]),
            "selection": selection,
            "shrinking": bool(shrinking),
            "backend_time": loop_time,
        },
    )

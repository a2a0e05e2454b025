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

Run to a gap. The gradient gives the duality gap of the current point without a kernel row
(:func:`gradient_gap`): the scores are ``g_i = y_i (G_i + m_i)``, so

.. math::

    P(\alpha, b) - D(\alpha) = \alpha^T Q \alpha - m^T\alpha + C \sum_i s_i \xi_i
    = \alpha^T G + C \sum_i s_i \max(0, m_i - y_i (g_i + b)),

with ``b`` the best intercept for ``g``. With ``gap=``, SMO is restarted at smaller tolerances
(warm, from its own ``alpha`` and ``G``) until that gap is below ``gap * max(1, P)``, or below
what the estimate can resolve (:func:`gap_resolution`: with a large ``C`` the round-off of the
scores, weighted by ``C``, can exceed the target, and SMO's steps no longer lower it); the
gradient, updated over thousands of steps, is then recomputed from the data
(``G = y K (alpha y) - m``, one product over the support vectors) and the gap checked again.
Near the optimum SMO converges linearly (the free set is identified, and the steps are those of
a coordinate method on a fixed quadratic), so each further decade of accuracy costs a fixed
number of cheap steps, and the rows it needs are already in the cache.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from qpsvm._compile_cache import compiled
from qpsvm._numerics import charge, uncompiled
from qpsvm._threads import one_blas_thread
from qpsvm._validation import check_flag, check_int, check_number
from qpsvm.contract import BinaryProblem, check_method
from qpsvm.exceptions import InvalidInputError
from qpsvm.kernels import KernelCache, gram_arrays, squared_norms
from qpsvm.solution import Candidate, Solution
from qpsvm.solvers import _online_kernels as kernels
from qpsvm.solvers.free_cg import (
    box_step,
    decades_per_product,
    free_block_product,
    free_step,
    off_diagonal_sum,
)
from qpsvm.support_sets import KKTFactor, kkt_on_sets
from qpsvm.verify.binary import kernel_scores, kernel_ulps

__all__ = [
    "SELECTIONS",
    "SMORun",
    "SMOUnits",
    "full_qp_first",
    "gap_resolution",
    "gradient_gap",
    "numpy_steps",
    "smo_intercept",
    "smo_start",
    "solve_smo",
]

logger = logging.getLogger("qpsvm")

#: Working-set selection rules.
SELECTIONS = ("second_order", "max_violating")
#: Restarts at a smaller tolerance at most when SMO runs to a gap (each costs a few passes).
MAX_RESTARTS = 12
#: A restart's tolerance is at least this fraction of the violation reached before it where
#: the KKT equations on the free set are cheap (:data:`NOW`): steps of two decades, so that
#: they are tried before SMO's linear tail (measured, n = 2000, poly, C = 100: 59000 steps to
#: ``1e-3``, then 188000 to ``1e-12`` in one stage, or 38000 to ``1e-5``, where the equations
#: on the free set give the optimum).
MIN_SHRINK = 1e-2
#: Where the equations pay against the tail but not at once (:data:`NEXT`), SMO first runs
#: one decade below its first stage, where the free set is right (measured, rbf n = 2000,
#: C = 1 and 100, gamma 0.05 and 0.5, and n = 500: at ``1e-3`` the sets were 1-7 indices
#: off and the equations took three solves, 125-317 ms; at ``1e-4`` one solve certified).
NEXT_SHRINK = 1e-1
#: Where they would not pay (:data:`NEVER`), a restart's tolerance is only bounded by
#: :data:`FAR_SHRINK` times the violation: one stage to the gap (each stage costs two rebuilds
#: of the shrunk gradient).
FAR_SHRINK = 1e-9
#: The factor by which SMO's gap must fall before cheap equations (:data:`NOW`) that failed
#: are tried again.
POLISH_STEP = 1e-2
#: Solves of the KKT equations at most per polish, each on the free set grown by the bound
#: multipliers whose residual at the previous solution has the wrong sign (:func:`_polish`).
POLISH_ROUNDS = 3
#: Violations, in multiples of the first stage's tolerance, at which SMO running to a gap
#: pauses to price the KKT equations on its free set (:func:`_polish_at_pause`): the free set
#: is right long before ``tol`` where SMO's steps are many for their decades (measured, one
#: polish of one or two solves certified from SMO's point at ``1e-1`` and ``1e-2``: poly
#: n = 2000, C = 1 and 100, after 14319 and 18754 of the 45220 and 59389 steps to ``1e-3``;
#: rbf n = 2000, gamma 0.005, C = 100 at ``1e-2``, 17316 of 27638).
PEEKS = (100.0, 10.0)
#: The largest share of the free set loose at a pause (:func:`_loose`: at a bound within the
#: violation of the wrong sign) for which the equations are tried there: measured at SMO's
#: pauses at ``1e-1``, one polish of at most three solves certified at 0.02-0.065 (poly
#: n = 2000, C = 1 and 100, 11 and 18 of 594 and 619 free; rbf n = 2000, gamma 0.005, C = 100,
#: 31 of 475) and failed at 0.34 and 2.5 (gamma 0.005, C = 10 and 1: 86 of 253, 199 of 81;
#: 81 and 40 ms lost).
PAUSE_LOOSE = 0.1
#: The cost of the KKT equations on ``k`` free multipliers, in units of one SMO step's work on
#: one free multiplier (a selection pass and a gradient update over the free set, about
#: 5.7 ns): ``k^3 / 3`` multiply-adds of the factorisation at :data:`POLISH_FLOP` each and
#: :data:`POLISH_ENTRY` per entry of the ``k x k`` block (its gather, the bordered matrix,
#: the refinement's products and solves). Measured (one core, rbf n = 2000): SMO's tail steps
#: cost 5.7-5.8 ns per free multiplier at 1150 and 1500 free; the double factor ``dsytrf``
#: 31-35 ms at 1500 free (1/190 of a unit a multiply-add), the single-precision one the
#: equations use from :data:`~qpsvm.support_sets.MIXED_MIN` on (``ssytrf``) 0.52-0.62 of it
#: (19 ms at 1500, 0.22 s against 0.35 s at 3265); the rest of the equations 11 ms at 1150
#: free (1.5 units an entry, the block in cache) and about 0.2 s at 3264 (rbf n = 8000: about
#: 3.3 units an entry, the 85 MB block read from memory): 2.5 units between the two. And
#: :data:`POLISH_FIXED` (about 0.35 ms: the call, its factor's setup and check, the products
#: for its scores and intercept; measured, CPU, best of 20 polishes at SMO's first-stage
#: point, rbf: n = 200, 55 and 96 free, 0.39 and 0.49 ms; n = 500, 345 free, 2.27 ms;
#: n = 2000, gamma 0.005, 87 free, 0.55 ms: 5.5-7.6e4 units beyond the block's terms).
POLISH_FLOP = 0.55 / 190.0
POLISH_ENTRY = 2.5
POLISH_FIXED = 6e4
#: A tail step's work beyond its free multipliers, in the same units (the pair's update, the
#: passes over the active multipliers at their bounds, the loop's own overhead): measured
#: 105-108 units (0.6 us) a step at rbf n = 200 and 500 (471 tail steps on 55 free in
#: 0.45 ms, 1555 on 345 free in 4.1 ms), which a price of the free set alone put at a third
#: and four fifths of that. Without it the equations were never tried at n = 500, where
#: they now pay after a decade.
STEP_FIXED = 100.0
#: Products over the support vectors a polish takes beyond the tail's own exact gradient (the
#: scores of the bound multipliers, of its solution for the intercept and for the gradient).
POLISH_PRODUCTS = 2
#: The plans of :func:`_polish_plan`, and :data:`CG` of :func:`_cg_pays`.
NOW, NEXT, NEVER, CG = "now", "next", "never", "cg"
#: Free rows sampled for the Gershgorin radius of the free block (:func:`_cg_pays`).
CG_SAMPLE = 64
#: The cost of one entry of a product by the free block, in the units of :data:`POLISH_FLOP`:
#: read from a cached row (a GEMV over the cache's slots, about 0.5 ns) or formed by a GEMM
#: block and its exponential (about 4 ns; rbf n = 8000, 20 features: 0.22 s a product with
#: 4724 of the 8000 free rows formed).
CG_CACHED, CG_FORMED = 0.1, 0.7
#: The cost of one entry of a kernel row the SMO loop computes (6.6 ns, measured at n = 8000).
ROW_ENTRY = 1.16
#: Products a conjugate-gradient step takes before its rate may make it give up, and at most.
CG_PROBE, CG_MAX_PRODUCTS = 4, 200
#: Tolerances below this many units of round-off of the gradient are not asked for: the
#: updated gradient is not more accurate than that.
GRADIENT_ULPS = 64.0


def gradient_gap(f: BinaryProblem, alpha: np.ndarray, G: np.ndarray) -> tuple[float, float]:
    r"""The primal objective and the duality gap of ``alpha`` read off the dual gradient
    ``G = Q alpha - m``, without a kernel row.

    The scores are ``g_i = y_i (G_i + m_i)``, ``||w||^2 = alpha . (G + m)``, and with ``b`` the
    best intercept for ``g``,

    .. math::

        P = \tfrac12 \alpha^T (G + m) + C \sum_i s_i \max(0, m_i - y_i (g_i + b)),\qquad
        P - D = \alpha^T G + C \sum_i s_i \max(0, m_i - y_i (g_i + b)).

    An estimate in floating point (the certificate recomputes both sides from the data).
    """
    scores = f.y * (G + f.margin)
    b = f.optimal_intercept(scores)
    cost = f.C * float(np.dot(f.sample_weight, np.maximum(0.0, f.margin - f.y * (scores + b))))
    return 0.5 * float(alpha @ (G + f.margin)) + cost, float(alpha @ G) + cost


def gap_resolution(
    f: BinaryProblem, alpha: np.ndarray, diag: np.ndarray, estimate: float = 0.0
) -> float:
    r"""The change of :func:`gradient_gap`'s estimate that the round-off of the scores can
    cause: below it the estimate cannot tell a smaller gap.

    The scores ``g_i = sum_j alpha_j y_j K_ij`` are sums of terms of sizes ``alpha_j |K_ij|``;
    their computed values are off by about ``eps (K alpha)_i`` (measured against extended
    precision, n = 2000, poly and rbf: a median of 0.2-0.4 times it). A sample at its upper
    bound does not move the estimate (``alpha_i G_i`` and its hinge
    ``C s_i (m_i - y_i (g_i + b))`` change by opposite amounts), nor one at 0 away from its
    margin; a free one (``0 < alpha_i < C s_i``) sits on its margin near the optimum, where its
    hinge takes the positive part of its round-off, weighted by ``C s_i``:

    .. math::

        \rho = \epsilon \sum_{0 < \alpha_i < C s_i} C s_i\, (K \alpha)_i ,

    with ``K alpha`` for ``|K| alpha`` (equal for kernels with nonnegative values, rbf; smaller
    otherwise). A stopping rule, not a bound: the certificate decides whether the point is
    optimal. The product (one pass over the support vectors' kernel rows) is formed only when
    its Cauchy-Schwarz bound ``(K alpha)_i <= sqrt(K_ii) sum_j alpha_j sqrt(K_jj)`` (``diag``
    holds ``K_ii``) is above ``estimate``, the value the caller compares ``rho`` with;
    otherwise that bound is returned."""
    free = (alpha > 0) & (alpha < f.upper)
    eps = np.finfo(float).eps
    root = np.sqrt(np.maximum(diag, 0.0))
    bound = eps * float(f.upper[free] @ root[free]) * float(alpha @ root)
    if bound <= estimate:
        return bound
    return eps * float(f.upper[free] @ f._kernel_product(alpha)[free])


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
    if name == "rbf":
        return cache.arrays, np.ones(f.n_samples)
    k, sqnorm = f.kernel, squared_norms(f.X)
    return cache.arrays, sqnorm if name == "linear" else (k.gamma * sqnorm + k.coef0) ** k.degree


def solve_smo(
    f: BinaryProblem,
    solver: str | None = None,
    *,
    tol: float = 1e-3,
    max_iter: int | None = None,
    cache_size: float | None = None,
    selection: str = "second_order",
    shrinking: bool = True,
    gap: float | None = None,
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
    gap : float, optional
        Run on, at smaller tolerances, until the duality gap read off the gradient
        (:func:`gradient_gap`, checked again on a gradient recomputed from the data) is at most
        ``gap * max(1, P)``, or within the round-off of that estimate
        (:func:`gap_resolution`); ``tol`` is then the first stage's tolerance. The status is
        ``"gap"`` when it is reached.
    certify : bool, default=True
        Attach ``f.certify`` of the result. For a kernel the certificate solves least-squares
        systems on the support vectors and can cost far more than SMO itself; callers that use
        SMO as a starting point and certify later (the working-set solver) may skip it.

    Returns
    -------
    Solution
        ``alpha``, ``b`` (libsvm's: mean over free support vectors, or the midpoint),
        ``w = sum_i alpha_i y_i x_i`` for the linear kernel, ``status`` ``"tolerance"``,
        ``"gap"`` or ``"max_iter"``, and the certificate of ``f.certify`` (at qpsvm's
        ``1e-9``: SMO at ``tol`` alone rarely passes it, with ``gap`` it does; the certified
        gap says how close it is). ``info`` holds the final
        ``violation``, the cache ``hits`` and ``misses`` and ``backend_time``, the seconds spent
        in the SMO loop (the rest of ``solve_time`` is setup and the certificate).
    """
    tol, max_iter, cache_size = _check_options(f, tol, max_iter, cache_size, selection, shrinking)
    if gap is not None:
        gap = check_number(gap, "gap")
    run = _run_smo(f, tol, max_iter, cache_size, selection, shrinking, gap)
    cand = Candidate(w=f.expansion(run.alpha) if f.linear else None, b=run.b, alpha=run.alpha)
    return f.solution_from(
        cand,
        f.certify(cand, reference=False) if certify else None,
        solver="smo",
        status=run.status,
        n_iter=run.n_iter,
        info={
            "violation": run.violation,
            "hits": run.hits,
            "misses": run.misses,
            "selection": selection,
            "shrinking": bool(shrinking),
            "backend_time": run.loop_time,
        },
    )


@dataclass(frozen=True)
class SMORun:
    """What an SMO run ends with: the multipliers ``alpha`` and libsvm's intercept ``b``
    (:func:`smo_intercept`; 0 without an intercept), the steps, the last KKT violation, the
    status (:func:`solve_smo`'s), the kernel cache's hits and misses over the run and the
    seconds in the SMO loop."""

    alpha: np.ndarray
    b: float
    n_iter: int
    violation: float
    status: str
    hits: int
    misses: int
    loop_time: float


def smo_start(f: BinaryProblem, tol: float, gap: float) -> SMORun:
    """SMO to ``tol``, then on to the duality gap ``gap`` (:func:`solve_smo`'s defaults
    otherwise), without the :class:`~qpsvm.Solution` :func:`solve_smo` builds: a start needs
    the multipliers and the intercept only (measured, rbf n = 200: the solution's scores and
    slacks from the data, 0.03 ms of a 2 ms solve)."""
    tol, max_iter, _ = _check_options(f, tol, None, None, "second_order", True)
    return _run_smo(f, tol, max_iter, None, "second_order", True, gap)


def _run_smo(
    f: BinaryProblem,
    tol: float,
    max_iter: int,
    cache_size: float | None,
    selection: str,
    shrinking: bool,
    gap: float | None,
) -> SMORun:
    """SMO from ``alpha = 0`` through its stages (:func:`_run_stages`), the options checked."""
    state = _SMOState.start(
        SMOUnits.samples(f),
        _kernel_rows(f, cache_size),
        max_iter,
        selection == "second_order",
        shrinking,
    )
    if numpy_steps(f, selection):
        state.gram = np.ascontiguousarray(f.gram())
    before = state.cache_counts()
    start = time.perf_counter()
    n_iter, violation, status = _run_stages(f, state, tol, gap)
    loop_time = time.perf_counter() - start
    hits, misses = state.cache_counts() - before
    b = smo_intercept(f.y, state.G, state.alpha, f.upper) if f.fit_intercept else 0.0
    return SMORun(state.alpha, b, int(n_iter), violation, status, int(hits), int(misses), loop_time)


@dataclass(frozen=True)
class SMOUnits:
    r"""The variables of the SMO loop, as libsvm's ``Solver`` states all its formulations:

    .. math::

        \min_\beta\ \tfrac12 \beta^T Q \beta - m^T\beta, \quad
        Q_{kl} = y_k y_l (K_{s_k s_l} + B^2) + D_k [k = l], \quad
        0 \le \beta_k \le U_k, \quad y^T\beta = 0 \text{ (with ``equality``)},

    unit ``k`` of sample ``s_k`` with label ``y_k = +-1``: the soft-margin dual has one unit
    per sample (``m`` the margins, no ``B`` or ``D``); SVR two, one per side of the tube
    (libsvm's ``alpha, alpha*``); a squared loss puts ``D`` on the diagonal, a regularised
    intercept ``B^2`` on every kernel value. ``U_k`` may be infinite.
    """

    y: np.ndarray
    m: np.ndarray
    upper: np.ndarray
    sample: np.ndarray
    shift: np.ndarray
    B2: float
    equality: bool
    #: False when the units are the samples and ``B = D = 0``: the loop reads the cached
    #: kernel rows in place instead of gathering unit rows.
    mapped: bool

    @classmethod
    def samples(cls, f: BinaryProblem) -> SMOUnits:
        """The soft-margin dual's units: one per sample, ``y``, ``m`` its margins, ``U = C s``."""
        n = f.n_samples
        return cls(f.y, f.margin, f.upper, np.arange(n), np.zeros(n), 0.0, f.fit_intercept, False)

    def loop_units(self) -> tuple | None:
        """The ``units`` argument of :func:`~qpsvm.solvers._online_kernels.smo_loop`, with its
        two row buffers; None when the rows are read in place (the loop's specialisation
        without the units' gathers and branches)."""
        if not self.mapped:
            return None
        return self.sample, self.shift, float(self.B2), np.zeros((2, self.y.size))

    def diagonal(self, kernel_diag: np.ndarray) -> np.ndarray:
        """``Q_kk = K_{s_k s_k} + B^2 + D_k`` from the kernel's diagonal."""
        return kernel_diag[self.sample] + self.B2 + self.shift


@dataclass
class _SMOState:
    r"""What SMO carries between its (warm) runs: the units (:class:`SMOUnits`), the kernel rows
    (:func:`_kernel_rows`) and the diagonal ``Q_kk``, the multipliers ``alpha``, the dual
    gradient ``G = Q alpha - m`` and its part ``G_bar`` from the multipliers at their upper bound
    (libsvm's, for shrinking), and the loop's own state at a pause (``paused``, its first entry
    -1 when the loop is not paused: :func:`~qpsvm.solvers._online_kernels.smo_loop`'s ``peek``)."""

    units: SMOUnits
    arrays: tuple
    diag: np.ndarray
    max_iter: int
    second_order: bool
    shrinking: bool
    alpha: np.ndarray
    G: np.ndarray
    G_bar: np.ndarray
    loop_units: tuple | None
    paused: np.ndarray
    #: The Gram matrix when the steps are numpy's (:func:`_smo_numpy`), else None.
    gram: np.ndarray | None = None

    @classmethod
    def start(
        cls,
        units: SMOUnits,
        rows: tuple[tuple, np.ndarray],
        max_iter: int,
        second_order: bool,
        shrinking: bool,
    ) -> _SMOState:
        """SMO's start: ``alpha = 0``, ``G = -m``, ``G_bar = 0``; ``rows`` the kernel rows and
        diagonal of :func:`_kernel_rows`."""
        arrays, kernel_diag = rows
        n = units.y.size
        return cls(
            units,
            arrays,
            units.diagonal(kernel_diag),
            max_iter,
            second_order,
            bool(shrinking),
            np.zeros(n),
            -units.m,
            np.zeros(n),
            units.loop_units(),
            np.full(n + 3, -1, dtype=np.int64),
        )

    def cache_counts(self) -> np.ndarray:
        """The kernel cache's hits and misses so far."""
        return self.arrays[4][:2].copy()

    @property
    def is_paused(self) -> bool:
        """Whether the last :meth:`run` paused at its ``peek`` (the next one resumes)."""
        return bool(self.paused[0] >= 0)

    def run(
        self, tol: float, pairs: bool = False, peek: float = 0.0, peek_steps: float = 0.0
    ) -> tuple[int, float]:
        """SMO steps (in place) until the KKT violation is below ``tol`` or ``max_iter``;
        returns the steps taken and the violation reached. ``pairs`` takes pair steps, which
        keep ``y . alpha`` as it is, where the units have no equality (the KKT violation is
        then that of the problem with ``y . alpha`` fixed). With ``peek`` above ``tol`` the
        compiled loop pauses once the violation of its active variables is below ``peek``
        after at least ``peek_steps`` steps (:attr:`is_paused`; ``G`` is then exact on the
        active variables only) and the next call resumes it where it paused; numpy's steps
        (:func:`_smo_numpy`) do not pause."""
        u = self.units
        if self.gram is not None:
            it, v = _smo_numpy(
                self.gram, u.y, u.upper, self.diag, self.alpha, self.G, tol,
                self.max_iter,
            )  # fmt: skip
            charge(kernels.smo_loop, it * (u.y.size + NUMPY_STEP))
            return it, v
        it, v = kernels.smo_loop(
            self.arrays,
            self.loop_units,
            u.y,
            u.m,
            u.upper,
            self.diag,
            self.alpha,
            self.G,
            self.G_bar,
            tol,
            self.max_iter,
            self.second_order,
            u.equality or pairs,
            self.shrinking,
            peek,
            peek_steps,
            self.paused,
        )
        return int(it), max(float(v), 0.0)


#: Largest problem solved as the full QP while the SMO loop is not compiled: at n = 500 the
#: QP (Clarabel from its matrices) takes about 0.2 s where compiling the SMO loop's chain takes
#: 6 s (measured by ``benchmarks/regimes/cold.py``).
FULL_QP_FIRST_SAMPLES = 600
#: Calls per process solved that way at most; the next one compiles the SMO loop (renting
#: before buying: the full QPs cost at most about the compile they postpone).
FULL_QP_FIRST_CALLS = 10
_full_qp_calls = [0]


def full_qp_first(n_samples: int) -> bool:
    """Whether a kernel problem of ``n_samples`` is solved as the full QP instead of from the
    SMO start: the SMO loop is neither compiled nor in the disk cache
    (:func:`qpsvm._compile_cache.compiled`), the problem has at most
    :data:`FULL_QP_FIRST_SAMPLES` samples and fewer than :data:`FULL_QP_FIRST_CALLS` calls
    of this process took that path. Either path returns a certified optimum."""
    if n_samples > FULL_QP_FIRST_SAMPLES or _full_qp_calls[0] >= FULL_QP_FIRST_CALLS:
        return False
    if compiled(kernels.smo_loop):
        return False
    _full_qp_calls[0] += 1
    return True


#: Largest problem whose SMO steps run in numpy (:func:`_smo_numpy`, on the ``n x n`` Gram
#: matrix) while the SMO loop is not compiled, and the work, in entries of the arrays its
#: steps read (``n + NUMPY_STEP`` a step), it may do in a process before the loop is compiled
#: (about 4.6 s of compile).
NUMPY_SMO_SAMPLES = 3000
NUMPY_STEP = 2000
NUMPY_SMO_ENTRIES = 2**28


def numpy_steps(f: BinaryProblem, selection: str = "second_order") -> bool:
    """Whether ``f``'s SMO takes numpy's steps (:func:`_smo_numpy`): a nonlinear kernel, at most
    :data:`NUMPY_SMO_SAMPLES` samples, an intercept (the pair steps), finite bounds, the
    second-order selection, and the compiled loop neither compiled nor in the disk cache
    (:func:`qpsvm._numerics.uncompiled`) with its budget not spent."""
    return (
        not f.linear
        and f.n_samples <= NUMPY_SMO_SAMPLES
        and f.fit_intercept
        and selection == "second_order"
        and bool(np.all(np.isfinite(f.upper)))
        and uncompiled(kernels.smo_loop, 0, NUMPY_SMO_ENTRIES)
    )


#: libsvm's floor on a pair's curvature.
TAU = 1e-12


def _smo_numpy(
    K: np.ndarray,
    y: np.ndarray,
    upper: np.ndarray,
    QD: np.ndarray,
    alpha: np.ndarray,
    G: np.ndarray,
    tol: float,
    max_iter: int,
) -> tuple[int, float]:
    r"""libsvm's SMO steps in numpy on the Gram matrix ``K`` (Fan, Chen and Lin 2005: the
    second-order working pair, the clipped two-variable step; no shrinking), on
    :math:`\min \tfrac12 \alpha^T Q \alpha - m^T \alpha`, ``Q = diag(y) K diag(y)``, ``y .
    alpha`` fixed, ``0 <= alpha <= upper``; ``G = Q alpha - m`` updated in place with
    ``alpha``. Until the KKT violation ``max_{I_up} -y G - min_{I_low} -y G`` is below ``tol``
    or ``max_iter`` steps; returns the steps and the violation. The start of a cold first call
    (a few thousand steps at n = 2000, where compiling the loop costs seconds); the answer is
    certified afterwards as the compiled loop's is.

    A step changes ``alpha`` at ``i`` and ``j`` only, so the sets ``I_up`` and ``I_low`` are
    updated there rather than formed again; ``-y`` is formed once; the pair's gain
    ``-(diff^2) / curvature`` is taken as its negation ``diff^2 / curvature`` (negation is exact
    and rounding symmetric: the same floats, the same first index of the best), the sums'
    operands in the same order: the same steps as forming each array anew, about a third fewer
    passes over ``n``."""
    positive = y > 0
    neg_y = -y
    up = np.where(positive, alpha < upper, alpha > 0.0)
    low = np.where(positive, alpha > 0.0, alpha < upper)
    it = 0
    violation = math.inf
    while it < max_iter:
        minus_yG = neg_y * G
        masked = np.where(up, minus_yG, -np.inf)
        i = int(np.argmax(masked))
        g_max = masked[i]
        g_min = float(np.min(minus_yG, where=low, initial=np.inf))
        violation = g_max - g_min
        if not violation >= tol:
            break
        diff = g_max - minus_yG
        curvature = QD[i] + QD - 2.0 * K[i]
        curvature[curvature <= 0.0] = TAU
        candidate = diff > 0.0
        candidate &= low
        np.multiply(diff, diff, out=diff)
        np.divide(diff, curvature, out=diff)
        gain = np.where(candidate, diff, -np.inf)
        j = int(np.argmax(gain))
        if not math.isfinite(gain[j]):
            break
        ai, aj, Ci, Cj = alpha[i], alpha[j], upper[i], upper[j]
        quad = max(QD[i] + QD[j] - 2.0 * K[i, j], TAU)
        if y[i] != y[j]:
            delta = (-G[i] - G[j]) / quad
            d = ai - aj
            ni, nj = ai + delta, aj + delta
            if d > 0.0:
                if nj < 0.0:
                    nj, ni = 0.0, d
            elif ni < 0.0:
                ni, nj = 0.0, -d
            if d > Ci - Cj:
                if ni > Ci:
                    ni, nj = Ci, Ci - d
            elif nj > Cj:
                nj, ni = Cj, Cj + d
        else:
            delta = (G[i] - G[j]) / quad
            total = ai + aj
            ni, nj = ai - delta, aj + delta
            if total > Ci:
                if ni > Ci:
                    ni, nj = Ci, total - Ci
            elif nj < 0.0:
                nj, ni = 0.0, total
            if total > Cj:
                if nj > Cj:
                    nj, ni = Cj, total - Cj
            elif ni < 0.0:
                ni, nj = 0.0, total
        alpha[i], alpha[j] = ni, nj
        for k in (i, j):
            below, above = alpha[k] < upper[k], alpha[k] > 0.0
            up[k], low[k] = (below, above) if positive[k] else (above, below)
        G += y * (K[i] * (y[i] * (ni - ai)) + K[j] * (y[j] * (nj - aj)))
        it += 1
    return it, max(float(violation), 0.0)


def _run_stages(
    f: BinaryProblem, state: _SMOState, tol: float, gap: float | None
) -> tuple[int, float, str]:
    """SMO to ``tol``, then (with ``gap``) on to the duality gap (:func:`_tighten`); returns
    the steps, the last violation and the status (``"tolerance"``, ``"gap"``, ``"max_iter"``,
    the last logged as a warning)."""
    # SMO starts at alpha = 0 with a violation of about twice the largest margin
    start = 2.0 * max(1.0, float(np.max(f.margin, initial=0.0)))
    peeks = [tol * p for p in PEEKS] if gap is not None else []
    least = _pause_steps(f.n_samples, state.arrays[0].shape[0])
    n_iter = 0
    while True:
        peek = peeks.pop(0) if peeks else 0.0
        steps = least * math.log10(start / peek) - n_iter if peek > 0 else 0.0
        it, violation = state.run(tol, peek=peek, peek_steps=steps)
        n_iter += it
        if not state.is_paused:
            break
        per_decade = n_iter / max(1.0, math.log10(start / max(violation, 1e-300)))
        if _polish_at_pause(f, state, violation, tol, gap, per_decade):
            return n_iter, violation, "gap"
        peeks = [p for p in peeks if p < violation]
    status = "tolerance" if violation < tol else "max_iter"
    if gap is not None and status == "tolerance":
        per_decade = n_iter / max(1.0, math.log10(start / max(violation, 1e-300)))
        steps, violation, reached = _tighten(f, state, violation, gap, per_decade)
        n_iter += steps
        status = "gap" if reached else "tolerance"
    if status == "max_iter":
        logger.warning(
            "SMO stopped after max_iter=%d steps with KKT violation %.3g > tol=%.3g",
            n_iter,
            violation,
            tol,
        )
    return n_iter, violation, status


def _tighten(
    f: BinaryProblem, state: _SMOState, violation: float, gap: float, per_decade: float
) -> tuple[int, float, bool]:
    """Restart SMO (``state.run(tol)``, warm) at smaller tolerances until :func:`gradient_gap`
    is at most ``gap * max(1, P)``, or within its own round-off (:func:`gap_resolution`), on a
    gradient recomputed from the data; returns the steps taken, the last violation and whether
    the gap was reached.

    The next tolerance is :func:`_restart_tol`'s, never below the gradient's round-off
    (:data:`GRADIENT_ULPS`). The KKT equations on the free set (:func:`_polish`) are tried
    as :func:`_polish_plan` decides at the first stage's point (SMO took ``per_decade`` steps
    per decade of violation to reach it): at once, and again each :data:`POLISH_STEP` the gap
    falls, where they are cheap (:data:`NOW`); once, after one more decade of steps, where
    they cost less than the tail (:data:`NEXT`), but at once where SMO's sets are firm
    (:func:`_sets_firm`: the decade would not change them; measured, CPU, best of 7, rbf
    n = 200, gamma 0.1, C = 100: 3.04 against 3.44 ms; n = 500, gamma 0.05, C = 1 and 100:
    10.40 against 11.52 ms and 13.93 against 15.52 ms; where the sets were not firm, at once
    lost: n = 500, gamma 0.5, C = 1, 12.82 against 8.80 ms; n = 2000, gamma 0.05, C = 100,
    165 against 147 ms); else never. Where they are not tried at once
    and :func:`_cg_pays` finds conjugate gradients on the free set cheaper than the tail
    (:data:`CG`, taken before the equations after a decade: measured, rbf n = 2000,
    gamma 0.5, C = 1, 0.10 s against 0.49 s, whose sets at ``1e-4`` are still off), one
    :func:`_cg_step` replaces it: at once where every multiplier is free (measured, rbf
    gamma = 0.5, C = 100: n = 2000 0.124-0.144 s against 0.156 s after a decade, n = 8000
    5.59 s against 6.36 s), else after one more decade of steps (C = 1, 3858 of 8000 at C:
    5.66 s against 7.66 s at once, where the step is cut at the box)."""
    alpha, G = state.alpha, state.G
    floor = GRADIENT_ULPS * np.finfo(float).eps * max(1.0, float(np.max(np.abs(G))))
    steps, fresh, polished, plan = 0, False, math.inf, ""
    for _ in range(MAX_RESTARTS):
        primal, estimate = gradient_gap(f, alpha, G)
        scale = max(1.0, abs(primal))
        target = gap * scale
        reached = estimate <= target or estimate <= gap_resolution(f, alpha, state.diag, estimate)
        if not plan:
            decades = math.log10(max(estimate, target) / target)
            misses = _row_misses(f, state)
            plan = _polish_plan(alpha, f.upper, per_decade, decades, misses)
            budget = _cg_pays(f, state, per_decade, decades) if plan != NOW else 0.0
            firm = plan == NEXT and budget == 0 and _sets_firm(f, state, violation)
            plan = CG if budget > 0 else NOW if firm else plan
            settled = bool(np.all((alpha > 0) & (alpha < f.upper)))
        if not reached and plan == CG and (steps > 0 or settled):
            # every multiplier free, or the free set settled a decade below the first stage
            cg_tol = max(_restart_tol(NEVER, violation, estimate, target), floor)
            _cg_step(f, state, cg_tol, budget)
            plan, fresh = NEVER, True
            continue
        now = plan == NOW and estimate <= POLISH_STEP * polished
        if not reached and (now or (plan == NEXT and steps > 0)):
            polished = estimate
            if _polish(f, alpha, G, gap, state.diag):
                return steps, violation, True
            plan = NOW if plan == NOW else NEVER
        tol = max(_restart_tol(plan, violation, estimate, target), floor)
        if reached or tol >= violation:
            if fresh:
                return steps, violation, reached
            # the updated gradient has drifted by round-off over the steps: recompute it
            G[:] = f.y * f.scores(alpha=alpha) - f.margin
            fresh = True
            continue
        it, violation = state.run(tol)
        steps, fresh = steps + it, fresh and it == 0
        if violation >= tol:
            break
    return steps, violation, False


def _restart_tol(plan: str, violation: float, estimate: float, target: float) -> float:
    """The tolerance of SMO's next (warm) stage, from the ``violation`` reached and the gap's
    ``estimate`` against its ``target``: it assumes the gap shrinks in proportion to the
    violation (it does near the optimum), with half a decade to spare, never below
    :data:`MIN_SHRINK`, :data:`NEXT_SHRINK` or :data:`FAR_SHRINK` times the violation as the
    ``plan`` of the KKT equations is :data:`NOW`, :data:`NEXT` (or :data:`CG`, the conjugate
    gradients after a decade) or :data:`NEVER` (each stage ends where they are tried)."""
    shrink = {NOW: MIN_SHRINK, NEXT: NEXT_SHRINK, CG: NEXT_SHRINK}.get(plan, FAR_SHRINK)
    return violation * max(shrink, 0.3 * target / max(estimate, target))


def _polish(
    f: BinaryProblem,
    alpha: np.ndarray,
    G: np.ndarray,
    gap: float,
    diag: np.ndarray,
    rounds: int = POLISH_ROUNDS,
) -> bool:
    r"""Replace ``alpha`` and ``G`` by the solution of the KKT equations on SMO's free set
    ``F = {0 < alpha_i < C s_i}`` and upper set (:func:`qpsvm.support_sets.kkt_on_sets`: one
    symmetric factorisation of the ``|F| x |F|`` kernel block, refined) when its duality gap, on a
    gradient computed from the data, is at most ``gap * max(1, P)`` (``P`` its primal
    objective) or within its round-off (:func:`gap_resolution`, ``diag`` the kernel's
    diagonal); returns whether it did. ``G`` is read nowhere (SMO paused may leave it exact on
    its active variables only).

    Near the optimum SMO has found the sets long before its linear convergence has made the
    free multipliers exact; the equations give them to round-off at once. Where SMO's sets
    are still a few indices off, the equations' solution shows which: a multiplier at a bound
    whose residual ``r_i = G_i + b y_i`` has the wrong sign (``r_i < 0`` at 0, ``r_i > 0`` at
    ``C s_i``, beyond the gradient's round-off) joins the free set and the equations are solved
    again, at most ``rounds`` times (a primal-dual active-set step, Hintermüller, Ito and Kunisch
    2002). Measured, rbf n = 8000, gamma = 0.005, C = 100: SMO's sets at ``1e-3``
    had two such indices among 1075 free; one more solve (0.1 s) certified, where SMO took
    3.3 s of further steps to find them."""
    upper = f.upper
    free, bound = (alpha > 0) & (alpha < upper), alpha >= upper
    factor = KKTFactor()
    for _ in range(rounds):
        with one_blas_thread():  # threaded LAPACK stalls on busy cores
            trial, b = kkt_on_sets(f, np.flatnonzero(free), bound, factor=factor)
        G_trial = f.y * f.scores(alpha=trial) - f.margin
        primal, estimate = gradient_gap(f, trial, G_trial)
        target = gap * max(1.0, abs(primal))
        if estimate <= target or estimate <= gap_resolution(f, trial, diag, estimate):
            if estimate > target and f.kernel.name == "poly":
                _accurate_step(f, trial, G_trial)
            alpha[:], G[:] = trial, G_trial
            return True
        r = G_trial + b * f.y
        floor = GRADIENT_ULPS * np.finfo(float).eps * max(1.0, float(np.max(np.abs(G_trial))))
        wrong = ((trial <= 0) & (r < -floor)) | ((trial >= upper) & (r > floor))
        if not np.any(wrong):
            return False
        free = ((trial > 0) & (trial < upper)) | wrong
        bound = (trial >= upper) & ~wrong
    return False


def _accurate_step(f: BinaryProblem, alpha: np.ndarray, G: np.ndarray) -> None:
    r"""One step of iterative refinement (in place) of the KKT equations on the free set
    ``F`` of ``alpha``, ``y_i (g_i + b) = m_i`` for ``i`` in ``F`` (and ``y_F . d = 0`` with
    an intercept), on residuals from the scores ``g = K (alpha y)`` the certificate
    computes (:func:`~qpsvm.verify.binary.kernel_scores`: the poly values in double-double
    arithmetic, summed by Dot2), solved on the cached block; ``G`` becomes those scores' plus
    the step's own (small) product. Taken where the polish's gap is within the round-off of
    the float scores but above its target: the poly kernel's float values are off by a few
    units of their size, which the scores' sums cancel (measured, n = 2000, C = 100: the
    free margins' residuals up to 1.5e-12 and the certified gap 1.25e-11 of ``P``, above the
    certificate's early stop, so that it searched for a better dual point, 0.13-0.15 s in
    vain; after this step 8.4e-14 and 9.1e-13, the certificate 49 ms against 167 ms). The step
    is not taken where it would leave the box or is not finite."""
    F = np.flatnonzero((alpha > 0) & (alpha < f.upper))
    if F.size == 0:
        return
    ((g, _),) = kernel_scores(f, [alpha], kernel_ulps(f))
    b = f.optimal_intercept(g) if f.fit_intercept else 0.0
    yF = f.y[F]
    k = F.size + int(f.fit_intercept)
    A = np.zeros((k, k))
    A[: F.size, : F.size] = f.gram_block(F) * np.outer(yF, yF)
    rhs = np.zeros(k)
    rhs[: F.size] = f.margin[F] - yF * (g[F] + b)
    if f.fit_intercept:
        A[: F.size, -1] = A[-1, : F.size] = yF
    with one_blas_thread():
        d = np.linalg.solve(A, rhs)[: F.size]
    step = np.zeros(alpha.size)
    step[F] = d
    moved = alpha + step
    if not (np.all(np.isfinite(d)) and np.all(moved[F] > 0) and np.all(moved[F] < f.upper[F])):
        return
    alpha[:] = moved
    G[:] = f.y * (g + f._kernel_product(step * f.y)) - f.margin


def _sets_firm(f: BinaryProblem, state: _SMOState, violation: float) -> bool:
    r"""Whether SMO's sets at its ``violation`` are firm: no multiplier loose
    (:func:`_loose`), none that the KKT equations' active-set rounds would move
    (:func:`_polish`). Measured
    at SMO's first stage (``1e-3``, rbf): none at n = 200 (gamma 0.1, C = 1 and 100) and
    n = 500 (gamma 0.05, C = 1 and 100), whose equations then take one solve; one to 54 at
    n = 500, gamma 0.5, C = 1 and n = 2000 (gamma 0.05 and 0.5, C = 1; gamma 0.05, C = 100;
    gamma 0.005, C = 1 and 10), which took two or three solves (one at gamma 0.005, C = 1)."""
    return not np.any(_loose(f.y, f.upper, state.alpha, state.G, violation))


def _loose(
    y: np.ndarray, upper: np.ndarray, alpha: np.ndarray, G: np.ndarray, violation: float
) -> np.ndarray:
    r"""The multipliers at a bound (``0`` or ``upper``) whose residual ``r_i = G_i + b y_i``
    (``b`` :func:`smo_intercept`'s) is within ``violation`` of the wrong sign
    (``r_i < violation`` at 0, ``r_i > -violation`` at the upper bound), as a mask."""
    r = G + smo_intercept(y, G, alpha, upper) * y
    return ((alpha <= 0) & (r < violation)) | ((alpha >= upper) & (r > -violation))


def _polish_plan(
    alpha: np.ndarray,
    upper: np.ndarray,
    per_decade: float,
    decades: float,
    misses: tuple[float, float] = (0.0, 0.0),
) -> str:
    r"""When the KKT equations on the free set ``F = {0 < alpha_i < C s_i}`` are worth solving,
    from their cost against SMO's steps, both in units of one step's work on one free
    multiplier: the equations cost :math:`c = |F|^3 / 3 \cdot` :data:`POLISH_FLOP`
    :math:`+ |F|^2 \cdot` :data:`POLISH_ENTRY` plus ``misses[1]``, a step
    :math:`|F| +` :data:`STEP_FIXED` plus ``misses[0]`` (the rows the cache cannot hold,
    :func:`_row_misses`), a decade of SMO's violation ``per_decade`` steps, and the tail to
    the gap ``decades`` decades of it
    (SMO converges linearly near the optimum: measured at n = 2000, rbf and poly, its tail
    takes 0.7-1.1 times the first stage's steps per decade). :data:`NOW` where one solve
    costs at most one decade (the poly kernel: 40000 steps for 600 free; rbf n = 2000,
    gamma = 0.005, C = 10: one solve on 221 free certified at ``1e-3``, 20 ms, where a decade
    first took 22 ms more), :data:`NEXT` where one solve and the decade of steps before it
    cost less than the tail, else :data:`NEVER`."""
    cost, decade = _polish_prices(alpha, upper, per_decade, misses)
    if not cost < math.inf:
        return NEVER
    if cost <= decade:
        return NOW
    return NEXT if cost + decade <= decades * decade else NEVER


def _polish_prices(
    alpha: np.ndarray, upper: np.ndarray, per_decade: float, misses: tuple[float, float]
) -> tuple[float, float]:
    """One solve of the KKT equations on the free set and one decade of SMO's steps, in the
    units of :func:`_polish_plan` (whose docstring has the model); the solve's cost is
    infinite without a free multiplier."""
    k = int(np.count_nonzero((alpha > 0) & (alpha < upper)))
    if k == 0:
        return math.inf, 0.0
    cost = k**3 / 3.0 * POLISH_FLOP + k**2 * POLISH_ENTRY + POLISH_FIXED + misses[1]
    return cost, (k + STEP_FIXED + misses[0]) * per_decade


def _pause_steps(n: int, slots: int) -> float:
    """The fewest SMO steps a decade for which the KKT equations can pay at a pause: below
    it a decade of steps on all ``n`` multipliers (every row missed where the cache has fewer
    ``slots`` than rows, :func:`_row_misses`) costs less than a solve's fixed part
    (:data:`POLISH_FIXED`, in the units of :func:`_polish_plan`), and the loop does not pause
    (measured, rbf n = 200, about 75 steps a decade: two pauses that could not pay cost 3%
    of its solve, 2.3-2.5 ms, CPU, medians of 600)."""
    missed = 2.0 * n * ROW_ENTRY if slots < n else 0.0
    return POLISH_FIXED / (n + missed + STEP_FIXED)


def _polish_at_pause(
    f: BinaryProblem,
    state: _SMOState,
    violation: float,
    tol: float,
    gap: float,
    per_decade: float,
) -> bool:
    r"""The KKT equations on the free set of SMO paused at ``violation`` on its way to its
    first stage's ``tol`` (:data:`PEEKS`; SMO took ``per_decade`` steps per decade so far),
    where :func:`_polish_plan` would try them at once (one solve costs at most a decade of
    steps) and at most :data:`PAUSE_LOOSE` of the free set is loose (:func:`_loose`), with as
    many active-set rounds (at most :data:`POLISH_ROUNDS`) as the
    :math:`\log_{10}(violation / tol)` decades of steps still to ``tol`` pay for: their solution
    replaces ``alpha`` and ``G`` when it meets the gap (:func:`_polish`); returns whether it
    did. Where it does not, SMO resumes the steps it would have taken without the pause."""
    if per_decade < _pause_steps(f.n_samples, state.arrays[0].shape[0]):
        return False
    alpha = state.alpha
    cost, decade = _polish_prices(alpha, f.upper, per_decade, _row_misses(f, state))
    if not cost <= decade:
        return False
    # among the active variables (the shrunk ones' G is not updated at a pause: they left
    # for being far from their margins)
    active = state.paused[3 : 3 + state.paused[0]]
    loose = _loose(f.y[active], f.upper[active], alpha[active], state.G[active], violation)
    free = int(np.count_nonzero((alpha > 0) & (alpha < f.upper)))
    if np.count_nonzero(loose) > PAUSE_LOOSE * free:
        return False
    rounds = min(POLISH_ROUNDS, int(decade * math.log10(violation / tol) // cost))
    return rounds > 0 and _polish(f, state.alpha, state.G, gap, state.diag, rounds)


def _cg_pays(f: BinaryProblem, state: _SMOState, per_decade: float, decades: float) -> float:
    r"""The cost of SMO's tail (``decades`` decades of ``per_decade`` steps) when a
    conjugate-gradient step on the free set (:func:`_cg_step`) costs less, else 0 (the step
    is taken at once where every multiplier is free, else after one decade of steps, whose
    cost it includes); both in the units of :func:`_polish_plan`. A tail step costs
    :math:`|F| +` :data:`STEP_FIXED` plus the rows it computes: two of :math:`n` entries at
    :data:`ROW_ENTRY` each, missed in proportion ``1 - slots / |F|`` where the cache holds
    fewer rows than the free set (measured, rbf n = 8000, gamma = 0.5, C = 100, 3276 slots
    for 8000 free: 70-96 us a step against 45 us with every row cached). The step costs its
    products by the free block (:func:`_cg_product_cost`) and one exact product for the
    gradient. Only for the rbf kernel on dense data with an intercept (the products are
    GEMM blocks)."""
    rows, slot_of = state.arrays[0], state.arrays[1]
    n = f.n_samples
    if (
        f.kernel.name != "rbf"
        or not f.fit_intercept
        or sp.issparse(f.X)
        or state.gram is not None
        or state.units.mapped
        or slot_of.size != n
    ):
        return 0.0
    alpha = state.alpha
    free = (alpha > 0) & (alpha < f.upper)
    k = int(np.count_nonzero(free))
    if k == 0:
        return 0.0
    X = np.asarray(f.X, dtype=np.float64)
    F, gamma = np.flatnonzero(free), float(f.kernel.gamma)
    # the largest sum is at least the first sampled row's: at 1 the rate is 0 (measured at
    # rbf n = 200 and 500, 55 and 345 free: 11.1 and 1.67 from that row, 0.1 and 0.2 ms
    # saved of the 64 rows' block); that row read from SMO's cache where it is there (SMO's
    # last steps were on the free rows: rbf n = 200, 55 free, the plan 67 -> 20 us)
    slot = int(slot_of[F[0]])
    if slot >= 0:
        first = float(np.sum(rows[slot][F])) - 1.0
    else:
        first = off_diagonal_sum(X, squared_norms(X), gamma, F, 1)
    if first >= 1.0:
        return 0.0
    rate = decades_per_product(off_diagonal_sum(X, squared_norms(X), gamma, F, CG_SAMPLE))
    if rate <= 0:
        return 0.0
    held = int(np.count_nonzero(slot_of[free] >= 0))
    miss = max(0.0, 1.0 - rows.shape[0] / k)
    step = k + STEP_FIXED + miss * 2.0 * n * ROW_ENTRY
    tail = decades * per_decade * step
    product = _cg_product_cost(rows.shape[0], n, k, held)
    support = int(np.count_nonzero(alpha))
    gradient = support * n * (CG_CACHED + miss * ROW_ENTRY)
    decade = 0.0 if k == n else per_decade * step
    cost = decade + ((decades + 1.0) / rate + 1.0) * product + gradient
    return tail if cost < tail else 0.0


def _row_misses(f: BinaryProblem, state: _SMOState) -> tuple[float, float]:
    r"""What the kernel rows the cache cannot hold add, in the units of :func:`_polish_plan`,
    to one step of SMO's tail and to the KKT equations on its free set ``F``: a step computes
    two rows of ``n`` entries at :data:`ROW_ENTRY` each, missed in proportion
    ``1 - slots / |F|`` (as in :func:`_cg_pays`); the equations compute the free rows the
    cache does not hold, whole, for their block, and in :data:`POLISH_PRODUCTS` products over
    the support vectors the share ``miss`` of their rows (the products' reads are in
    :data:`POLISH_FIXED`). Zero where every free row fits (measured,
    rbf n = 20000, gamma = 0.05, C = 1, 6017 free and 1310 slots: a tail step 406 us where
    the free set's share is 34 us)."""
    rows, slot_of = state.arrays[0], state.arrays[1]
    alpha, n = state.alpha, f.n_samples
    free = (alpha > 0) & (alpha < f.upper)
    k = int(np.count_nonzero(free))
    if k == 0 or slot_of.size != n:
        return 0.0, 0.0
    miss = max(0.0, 1.0 - rows.shape[0] / k)
    held = int(np.count_nonzero(slot_of[free] >= 0))
    support = int(np.count_nonzero(alpha))
    computed = (k - held) + POLISH_PRODUCTS * support * miss
    return miss * 2.0 * n * ROW_ENTRY, computed * n * ROW_ENTRY


def _cg_product_cost(slots: int, n: int, k: int, held: int) -> float:
    """The cost of one product by the free block of ``k`` rows, ``held`` of them in a cache of
    ``slots`` rows of ``n`` (:func:`~qpsvm.solvers.free_cg.free_block_product`): two passes
    over the slots at :data:`CG_CACHED` an entry, half of the missing rows' square formed at
    :data:`CG_FORMED`."""
    return 2.0 * slots * n * CG_CACHED + 0.5 * (k - held) ** 2 * CG_FORMED


def _cg_step(f: BinaryProblem, state: _SMOState, tol: float, budget: float) -> int:
    r"""Move ``alpha`` towards the solution of the KKT equations on SMO's free set by
    conjugate gradients (:func:`qpsvm.solvers.free_cg.free_step`, to a residual ``tol``), as
    far as the box allows (:func:`~qpsvm.solvers.free_cg.box_step`), and recompute ``G`` from
    the data (and ``G_bar`` for multipliers the step put at their upper bound); returns the
    products taken. The conjugate gradients give up when their rate so far (decades of the
    residual per product, after :data:`CG_PROBE` products) predicts more than ``budget`` (the
    tail's cost) in all: the partial step is taken all the same (the objective falls along
    it) and SMO goes on from there."""
    alpha, G, upper = state.alpha, state.G, f.upper
    F = np.flatnonzero((alpha > 0) & (alpha < upper))
    X = np.asarray(f.X, dtype=np.float64)
    block = free_block_product(X, squared_norms(X), float(f.kernel.gamma), F, state.arrays)
    yF = f.y[F]
    rows, slot_of = state.arrays[0], state.arrays[1]
    held = int(np.count_nonzero(slot_of[F] >= 0))
    each = _cg_product_cost(rows.shape[0], f.n_samples, F.size, held)
    first, spent = [0.0], [0]

    def give_up(it: int, res: float) -> bool:
        spent[0] += it > 0
        if it == 0:
            first[0] = res
            return False
        gained = math.log10(first[0] / res) / it if res > 0 else math.inf
        if it < CG_PROBE or gained == math.inf:
            return False
        left = math.log10(res / tol) / gained if gained > 0 else math.inf
        return (spent[0] + left) * each > budget

    def product(v: np.ndarray) -> np.ndarray:
        return yF * block(yF * v)

    with one_blas_thread():
        d, taken, fixed = free_step(
            product, alpha[F], G[F], yF, upper[F], tol, CG_MAX_PRODUCTS, give_up
        )
    t = box_step(alpha[F], d, upper[F])
    if not t > 0:
        return taken
    x = alpha[F] + t * d
    if t == 1.0:
        x[fixed] = np.where(d[fixed] > 0, upper[F][fixed], 0.0)
    x = np.clip(x, 0.0, upper[F])
    topped = F[x >= upper[F]]
    alpha[F] = x
    G[:] = f.y * f.scores(alpha=alpha) - f.margin
    if topped.size:
        extra = np.zeros(f.n_samples)
        extra[topped] = upper[topped]
        state.G_bar += f.y * f.scores(alpha=extra)
    logger.debug("cg step on %d free: %d products, step %.3g", F.size, taken, t)
    return taken

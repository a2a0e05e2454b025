r"""Exact regularisation paths of the binary SVM by event tracking.

With the support sets fixed — ``M`` on the margin (``0 <= alpha_i <= C s_i``), ``E`` inside it
(``alpha_i = C s_i``), ``R`` beyond it (``alpha_i = 0``) — the KKT conditions are the linear
equations

.. math::

    \sum_{j\in M} \alpha_j y_i y_j K_{ij} + y_i b = m_i - C\, y_i \sum_{j\in E} s_j y_j K_{ij}
    \quad (i\in M), \qquad \sum_{j\in M} \alpha_j y_j = -C \sum_{j\in E} s_j y_j,

whose right-hand side is affine in ``C``: so are ``alpha_M``, ``b`` and every residual
``r_i = y_i f(x_i) - m_i``. As ``C`` grows from ``C0`` to ``C1`` the sets change only at
*events*: a multiplier in ``M`` reaches ``0`` (the sample leaves for ``R``) or ``C s_i`` (for
``E``), or the residual of a sample in ``E`` or ``R`` reaches ``0`` (it joins ``M``). Following
them from one event to the next is the path algorithm of Hastie, Rosset, Tibshirani & Zhu,
"The entire regularization path for the support vector machine", JMLR 5 (2004).

:func:`track_sets` follows the events of the samples in a working set ``W`` (those near their
margin at ``C0``; the others keep their status, folded into the right-hand side). It returns the
sets at ``C1``, not a point: the caller solves the KKT equations on them in refined arithmetic
(:func:`qpsvm.support_sets.support_solution`), checks every sample
and certifies the answer, so a sample outside ``W`` that changed status, or a degenerate event
(ties, more samples on the margin than dimensions), costs a fallback, never a wrong answer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

from qpsvm._jit import CALLEE, ENTRY
from qpsvm._numerics import tdot2
from qpsvm.contract import BinaryProblem
from qpsvm.solution import Candidate
from qpsvm.solvers.refine import residuals
from qpsvm.support_sets import ON_MARGIN, margin_scale, support_solution
from qpsvm.verify.certificate import Certificate

__all__ = [
    "BEYOND",
    "BOUND",
    "MARGIN",
    "PathState",
    "Step",
    "Tracked",
    "track_sets",
    "track_step",
]

#: Status codes of the samples of ``W``.
BEYOND, MARGIN, BOUND = 0, 1, 2
#: Events tracked per sample of ``W`` at most (and at least :data:`MIN_EVENTS`) before giving up.
EVENTS_PER_SAMPLE = 4
MIN_EVENTS = 1000
#: Multipliers of the KKT equations outside their box ``[0, C s_i]`` by at most this
#: (relative to ``max(1, C s_i)``) are round-off of a right set, clipped; beyond it the sets
#: are wrong.
BOX_ROUNDOFF = 1e-9
#: Smallest working set, and its size relative to the samples that changed status last step.
MIN_WORK = 128
GROWTH = 2.0
#: The retry after a sample outside ``W`` changed status tracks a ``W`` this many times larger
#: (with those samples), so one retry usually covers the samples the first step missed.
RETRY_GROWTH = 4
#: Events in a row at the same ``C`` (a tie or a cycle of round-off) before giving up.
STALLED_EVENTS = 50

_DONE, _SINGULAR, _TOO_MANY, _STALLED, _EMPTY = range(5)
_REASONS = {
    _SINGULAR: "singular KKT equations (more samples on the margin than dimensions)",
    _TOO_MANY: "too many events",
    _STALLED: "events stalled at one value of C (ties)",
    _EMPTY: "the margin set emptied",
}


@dataclass
class Tracked:
    """Outcome of :func:`track_sets`.

    Attributes
    ----------
    status : ndarray of int8, shape (|W|,)
        :data:`BEYOND`, :data:`MARGIN` or :data:`BOUND` per sample of ``W`` at the last ``C``
        reached.
    events : int
        Status changes followed.
    reached : float
        The value of ``C`` reached: ``C1``, or where tracking stopped.
    failure : str or None
        Why tracking stopped before ``C1`` (``None``: it reached ``C1``).
    """

    status: np.ndarray
    events: int
    reached: float
    failure: str | None


def track_sets(
    f: BinaryProblem,
    work: np.ndarray,
    status: np.ndarray,
    outside: np.ndarray,
    C0: float,
    C1: float,
    outside_sum: np.ndarray | None = None,
) -> Tracked:
    """Follow the support sets of ``f`` from ``C0`` to ``C1 >= C0`` (see the module docstring).

    Parameters
    ----------
    f : BinaryFormulation
        Supplies the data, labels, weights ``s`` and margins ``m`` (its own ``C`` is not used).
    work : ndarray of int
        Indices of the working set ``W``.
    status : ndarray of int8
        Statuses of the samples of ``W`` at the optimum for ``C0`` (copied, not modified).
    outside : ndarray of bool, shape (n_samples,)
        Samples outside ``W`` inside their margin (``alpha_i = C s_i`` at every ``C`` tracked).
    C0, C1 : float
        Start and end of the segment.
    outside_sum : ndarray of shape (n_features,), optional
        ``sum_{j in outside} s_j y_j x_j`` (linear kernel) if known; computed otherwise.
    """
    G, pushed = _gram(f, work, outside, outside_sum)
    codes = np.ascontiguousarray(status, dtype=np.int8).copy()
    budget = max(MIN_EVENTS, EVENTS_PER_SAMPLE * work.size)
    code, events, reached = _track(
        G,
        pushed,
        float(f.sample_weight[outside] @ f.y[outside]),
        f.y[work],
        f.sample_weight[work],
        f.margin[work],
        codes,
        float(C0),
        float(C1),
        bool(f.fit_intercept),
        budget,
    )
    return Tracked(codes, int(events), float(reached), _REASONS.get(int(code)))


@dataclass
class PathState:
    """A certified optimum on the path and what the next step needs from it.

    Attributes
    ----------
    C : float
        Its value of ``C``.
    candidate : Candidate
        The optimum (``w`` for a linear kernel, ``b``, ``alpha``).
    residuals : ndarray
        ``r_i = y_i f(x_i) - m_i`` at the optimum.
    margin, bound : ndarray of bool
        Its support sets: ``M`` (on the margin) and ``E`` (``alpha_i = C s_i``).
    bound_sum : (ndarray, ndarray) or None
        ``sum_{j in E} s_j y_j x_j`` as an unevaluated sum ``hi + lo`` in twice the working
        precision (:func:`~qpsvm._numerics.tdot2`); ``None`` for a nonlinear kernel.
    size : int
        Size of the next working set: :data:`GROWTH` times the samples that the last step needed
        in ``W`` (at least :data:`MIN_WORK`).
    """

    C: float
    candidate: Candidate
    residuals: np.ndarray
    margin: np.ndarray
    bound: np.ndarray
    bound_sum: tuple[np.ndarray, np.ndarray] | None
    size: int

    @classmethod
    def at(cls, f: BinaryProblem, cand: Candidate, size: int) -> PathState:
        """The state of an optimum ``cand`` of ``f`` found otherwise (sets read off its
        residuals)."""
        r = residuals(f, cand)
        eps = ON_MARGIN * max(1.0, float(np.max(f.margin)))
        margin = np.abs(r) <= eps
        bound = r < -eps
        total = tdot2(f.X, np.where(bound, f.sample_weight * f.y, 0.0)) if f.linear else None
        return cls(f.C, cand, r, margin, bound, total, max(MIN_WORK, size))


@dataclass
class Step:
    """A certified step of the path: the new state, its certificate, the events followed, the
    size of the last working set tracked and the seconds spent certifying."""

    state: PathState
    certificate: Certificate
    events: int
    tracked: int
    certify_time: float


def track_step(g: BinaryProblem, state: PathState, tol: float) -> Step | str:
    """The certified optimum of ``g`` (the data of ``state`` at ``C = g.C >= state.C``).

    The ``state.size`` samples nearest their margin form ``W``; their sets are tracked from
    ``state.C`` to ``g.C`` (:func:`track_sets`), the KKT equations are solved on the sets reached
    (:func:`qpsvm.support_sets.support_solution`) and the point is
    certified at ``tol``. If a sample outside ``W`` changed status, the step is tried once more
    with those samples and a larger ``W``. For a linear kernel the sum over ``E`` is updated
    from ``state.bound_sum`` through the rows of ``W`` only.

    Returns
    -------
    Step or str
        The certified step, or why no certified point was found (the caller then solves ``g``
        otherwise).
    """
    r0, on, inside = state.residuals, state.margin, state.bound
    eps = ON_MARGIN * margin_scale(g)
    near = np.abs(r0)
    size, extra = state.size, np.zeros(0, dtype=np.intp)
    sy = g.sample_weight * g.y
    events, certify_time = 0, 0.0
    while True:
        in_work = np.zeros(r0.shape, dtype=bool)
        in_work[_nearest(near, size)] = True
        in_work[extra] = True
        in_work |= on
        work = np.flatnonzero(in_work)
        status = np.where(on[work], MARGIN, np.where(inside[work], BOUND, BEYOND))
        outside = inside & ~in_work
        XW = g.X[work] if g.linear else None
        outside_sum = None
        if state.bound_sum is not None:
            outside_sum = tdot2(XW, -np.where(inside[work], sy[work], 0.0), state.bound_sum)
        pushed = None if outside_sum is None else outside_sum[0] + outside_sum[1]
        tracked = track_sets(g, work, status, outside, state.C, g.C, pushed)
        events += tracked.events
        if tracked.failure is not None:
            return tracked.failure
        margin = np.zeros(r0.shape, dtype=bool)
        margin[work[tracked.status == MARGIN]] = True
        bound = outside.copy()
        bound[work[tracked.status == BOUND]] = True
        bound_sum = None
        if outside_sum is not None:
            bound_sum = tdot2(XW, np.where(tracked.status == BOUND, sy[work], 0.0), outside_sum)
        cand = _kkt_point(g, margin, bound, bound_sum)
        if cand is None:
            return "the KKT equations of the tracked sets leave the box"
        r = residuals(g, cand)
        # samples outside W whose status is wrong at the point: track again with them
        missed = ~in_work & np.where(outside, r > eps, r < -eps)
        if np.any(missed) and extra.size == 0:
            extra, size = np.flatnonzero(missed), RETRY_GROWTH * size
            continue
        began = time.perf_counter()
        cert = g.certify(cand, tol=tol, reference=False)
        certify_time += time.perf_counter() - began
        if not cert.passed:
            return f"not certified at tol {tol:.0e} (relative gap {cert.relative_gap:.1e})"
        changed = on | margin | ((r0 < 0) != (r < 0))
        needed = int(np.count_nonzero(near <= np.max(near[changed], initial=0.0)))
        size = max(MIN_WORK, int(GROWTH * needed))
        nxt = PathState(g.C, cand, r, margin, bound, bound_sum, size)
        return Step(nxt, cert, events, work.size, certify_time)


def _nearest(near: np.ndarray, size: int) -> np.ndarray:
    """Indices of the ``size`` smallest entries of ``near``."""
    if size >= near.size:
        return np.arange(near.size)
    return np.argpartition(near, size)[:size]


def _kkt_point(
    g: BinaryProblem,
    margin: np.ndarray,
    bound: np.ndarray,
    bound_sum: tuple[np.ndarray, np.ndarray] | None,
) -> Candidate | None:
    """The point of the KKT equations on the sets ``M``, ``E`` (masks; ``None`` if its
    multipliers leave the box by more than round-off)."""
    M = np.flatnonzero(margin)
    aM, b, w = support_solution(g, M, np.flatnonzero(bound), bound_sum)
    upper = g.upper
    slack = BOX_ROUNDOFF * np.maximum(1.0, upper[M])
    if np.any(aM < -slack) or np.any(aM > upper[M] + slack):
        return None
    alpha = np.where(bound, upper, 0.0)
    alpha[M] = np.clip(aM, 0.0, upper[M])
    return Candidate(w=w, b=b, alpha=alpha)


def _gram(
    f: BinaryProblem, work: np.ndarray, outside: np.ndarray, outside_sum: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """``K_WW`` and ``sum_{j in outside} s_j y_j K_Wj`` (the kernel sums of the fixed samples)."""
    u = np.where(outside, f.sample_weight * f.y, 0.0)
    if f.linear:
        XW = f.X[work]
        G = XW @ XW.T
        G = G.toarray() if sp.issparse(G) else np.asarray(G)
        if outside_sum is None:
            outside_sum = np.asarray(f.X.T @ u).ravel()
        pushed = np.asarray(XW @ outside_sum).ravel()
    else:
        rows = f.gram_rows(work)
        G, pushed = rows[:, work], rows @ u
    return np.ascontiguousarray(G, dtype=np.float64), pushed


@numba.njit(**CALLEE)
def _margin_system(
    G: np.ndarray,
    y: np.ndarray,
    m: np.ndarray,
    fixed: np.ndarray,
    balance: float,
    M: np.ndarray,
    intercept: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """The KKT equations on the margin set ``M`` as ``A [alpha_M; b] = rhs[:, 0] + C rhs[:, 1]``:
    ``y_i f(x_i) = m_i`` on ``M`` (with the fixed samples' kernel sums ``C fixed``) and, with an
    intercept, the balance ``sum_M y_i alpha_i + C balance = 0``."""
    k = M.size
    size = k + 1 if intercept else k
    A = np.zeros((size, size))
    rhs = np.zeros((size, 2))
    for p in range(k):
        i = M[p]
        for q in range(k):
            A[p, q] = y[i] * y[M[q]] * G[i, M[q]]
        rhs[p, 0] = m[i]
        rhs[p, 1] = -y[i] * fixed[i]
        if intercept:
            A[p, k] = y[i]
            A[k, p] = y[i]
    if intercept:
        rhs[k, 1] = -balance
    return A, rhs


@numba.njit(**CALLEE)
def _residual_lines(
    G: np.ndarray,
    y: np.ndarray,
    m: np.ndarray,
    fixed: np.ndarray,
    sol: np.ndarray,
    M: np.ndarray,
    intercept: bool,
    a: np.ndarray,
    c: np.ndarray,
) -> None:
    """The residuals ``r_i(C) = a_i + C c_i`` of every sample, in place, for the solution
    ``sol`` (linear in ``C``) of :func:`_margin_system`."""
    k = M.size
    for i in range(y.size):
        f0 = 0.0
        f1 = fixed[i]
        for p in range(k):
            j = M[p]
            f0 += y[j] * sol[p, 0] * G[i, j]
            f1 += y[j] * sol[p, 1] * G[i, j]
        if intercept:
            f0 += sol[k, 0]
            f1 += sol[k, 1]
        a[i] = y[i] * f0 - m[i]
        c[i] = y[i] * f1


@numba.njit(**CALLEE)
def _next_event(
    sol: np.ndarray,
    M: np.ndarray,
    s: np.ndarray,
    status: np.ndarray,
    a: np.ndarray,
    c: np.ndarray,
    C: float,
) -> tuple[float, int, int]:
    """The smallest crossing at or after ``C``: a margin multiplier ``alpha_i = P + C Q``
    reaching 0 or ``C s_i``, or a bound or beyond sample's residual reaching 0; its ``C``, the
    sample and the set it moves to (``C = inf`` and sample ``-1`` when there is none)."""
    nxt = np.inf
    who = -1
    to = BEYOND
    for p in range(M.size):
        i = M[p]
        P, Q = sol[p, 0], sol[p, 1]
        if Q < 0.0:  # alpha_i falls to 0
            t = max(-P / Q, C)
            if t < nxt:
                nxt, who, to = t, i, BEYOND
        if s[i] - Q < 0.0:  # alpha_i rises to C s_i
            t = max(P / (s[i] - Q), C)
            if t < nxt:
                nxt, who, to = t, i, BOUND
    for i in range(a.size):
        if (status[i] == BOUND and c[i] > 0.0) or (status[i] == BEYOND and c[i] < 0.0):
            t = max(-a[i] / c[i], C)
            if t < nxt:
                nxt, who, to = t, i, MARGIN
    return nxt, who, to


@numba.njit(**ENTRY)
def _track(
    G: np.ndarray,
    pushed: np.ndarray,
    pushed_balance: float,
    y: np.ndarray,
    s: np.ndarray,
    m: np.ndarray,
    status: np.ndarray,
    C0: float,
    C1: float,
    intercept: bool,
    max_events: int,
) -> tuple[int, int, float]:
    n = y.size
    # per unit C: the kernel sums and the balance of the samples fixed at their bound
    fixed = pushed.copy()
    balance = pushed_balance
    for j in range(n):
        if status[j] == BOUND:
            fixed += s[j] * y[j] * G[:, j]
            balance += s[j] * y[j]
    C = C0
    events = 0
    stalled = 0
    a = np.empty(n)
    c = np.empty(n)
    while True:
        M = np.flatnonzero(status == MARGIN)
        k = M.size
        if k == 0 and intercept:
            return _EMPTY, events, C
        A, rhs = _margin_system(G, y, m, fixed, balance, M, intercept)
        if k:
            try:
                sol = np.linalg.solve(A, rhs)
            except Exception:  # numba raises a generic error on a singular A
                return _SINGULAR, events, C
            if not np.all(np.isfinite(sol)):
                return _SINGULAR, events, C
        else:
            sol = np.zeros(rhs.shape)
        _residual_lines(G, y, m, fixed, sol, M, intercept, a, c)
        nxt, who, to = _next_event(sol, M, s, status, a, c, C)
        if nxt >= C1:
            return _DONE, events, C1
        stalled = stalled + 1 if nxt == C else 0
        if stalled > STALLED_EVENTS:
            return _STALLED, events, C
        events += 1
        if events > max_events:
            return _TOO_MANY, events, C
        C = nxt
        if status[who] == BOUND:
            fixed -= s[who] * y[who] * G[:, who]
            balance -= s[who] * y[who]
        elif to == BOUND:
            fixed += s[who] * y[who] * G[:, who]
            balance += s[who] * y[who]
        status[who] = to

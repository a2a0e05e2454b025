r"""Fast approximate starting points for the working-set engine.

Smoothed Newton (:func:`smoothed_newton`)
    For linear problems with few features (``d`` up to :data:`NEWTON_MAX_FEATURES`), Newton's
    method in the primal on the hinge smoothed into a Huber function (Chapelle 2007, "Training a
    support vector machine in the primal"),

    .. math::

        F_\mu(w, b) = \tfrac12 \|w\|^2 + C \sum_i s_i h_\mu(z_i), \quad
        z_i = m_i - y_i (w\cdot x_i + b), \quad
        h_\mu(z) = \begin{cases} 0 & z \le 0 \\ z^2 / (2\mu) & 0 < z < \mu \\
        z - \mu/2 & z \ge \mu, \end{cases}

    with ``mu`` decreased geometrically, each level warm-started from the last. ``F_mu`` is
    piecewise quadratic, so a Newton step that leaves every sample in its piece lands on the
    exact minimiser; ``|F_mu - P| <= C sum_i s_i mu / 2``. Its dual point is
    ``alpha_i = C s_i h_mu'(z_i)``, inside the box.

Dual coordinate descent (:func:`dual_coordinate_descent`)
    For sparse or high-dimensional linear problems, where a ``d x d`` Hessian is too large: the
    algorithm of Hsieh, Chang, Lin, Keerthi and Sundararajan 2008 ("A dual coordinate descent
    method for large-scale linear SVM", liblinear's ``L2R_L1LOSS_SVC_DUAL``) on

    .. math::

        \min_\alpha \tfrac12 \Big\|\sum_i \alpha_i y_i \tilde x_i\Big\|^2 - \sum_i m_i \alpha_i,
        \qquad 0 \le \alpha_i \le C s_i, \qquad \tilde x_i = (x_i, B),

    where the intercept is the weight of a constant feature ``B`` (``b = B w_B``), regularised
    as in liblinear. That is a slightly different problem from ours (free ``b``, balance
    constraint): the start only has to place most samples on the right side of the margin, and
    the working-set engine then solves the exact problem. One coordinate step is

    .. math::

        G_i = y_i (w\cdot x_i + B w_B) - m_i, \qquad
        \alpha_i \leftarrow \operatorname{clip}_{[0, C s_i]}
        \big(\alpha_i - G_i / \|\tilde x_i\|^2\big),

    followed by ``w += (delta alpha_i) y_i x_i``: ``O(nnz(x_i))``. Samples whose projected
    gradient says they stay at a bound are shrunk away as in liblinear. The kernel is compiled
    once by numba and cached on disk. It also serves the hard margin (``C s_i = inf``).

Multiclass dual coordinate descent (:func:`multiclass_dual`)
    Crammer-Singer by the sequential dual method (Keerthi, Sundararajan, Chang, Hsieh and Lin
    2008, liblinear's ``Solver_MCSVM_CS``): all multipliers of one example at a time, exactly
    (Crammer and Singer 2001's sub-problem); Weston-Watkins one multiplier at a time.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from qpsvm._jit import CALLEE, ENTRY
from qpsvm._numerics import uncompiled
from qpsvm._rows import (
    _row_axpy,
    _row_dot,
    data_arrays,
    linear_data,
    row_sq_norms,
)
from qpsvm.contract import BinaryProblem, MulticlassProblem
from qpsvm.solution import Candidate
from qpsvm.verify.ascent import UNSHRINK_EVERY as _UNSHRINK_EVERY
from qpsvm.verify.ascent import coordinate_epochs

__all__ = [
    "NEWTON_MAX_FEATURES",
    "Start",
    "dual_coordinate_descent",
    "multiclass_dual",
    "smoothed_newton",
]

logger = logging.getLogger("qpsvm")

#: Rows gathered at once when forming the Hessian of :func:`smoothed_newton`.
_CHUNK = 8192
#: Largest number of features for which :func:`smoothed_newton` forms its ``d x d`` Hessian.
NEWTON_MAX_FEATURES = 1000
#: Crammer-Singer block steps: a block whose gradients span at most this is at its optimum,
#: and a multiplier's change below it is round-off (neither is applied).
_CS_SPREAD = 1e-12
#: The multiclass start before the variant's descent is compiled (:func:`_gradient_start`): at
#: most this many accelerated projected gradient steps, stopped once the violation (checked
#: every ``_CHECK`` steps) is within ``GRADIENT_BAND`` (the working set's band: measured on
#: Crammer-Singer at 1000 x 20, 1000 x 30 and 1200 x 40 with 5-8 classes, the steps cost
#: 0.12-0.23 s a 500 and reach 0.15-0.33 after 500, 0.04-0.08 after 1000 and 0.01-0.02 after
#: 2000, and the working set from them takes 0.2-1.6 s, 0.05-0.8 s and 0.03-0.2 s;
#: Weston-Watkins at 1000 x 20, k = 5 and 1000 x 30, k = 8 reaches 0.04-0.07 after 1550-2000
#: steps, 0.16-0.28 s, and its working set then takes 0.04-0.29 s) ...
GRADIENT_STEPS = 2000
GRADIENT_BAND = 0.05
_CHECK = 50
#: ... taken while their entries (steps times ``n k (d + 1)`` and ``GRADIENT_STEP`` a step for
#: its fixed cost, charged as if all were taken) stay within this budget in a process: about
#: the descent's compile (0.9-1.3 s CPU with its callees) at the steps' cost (1-2.3 ns an entry
#: at 1000 x 20 with 5 classes, 17-34 us a step at 20 x 3 with 2, load 2-4).
GRADIENT_ENTRIES = 2**28
GRADIENT_STEP = 2**13
#: The Newton step's line search (a safeguarded secant on the slope) stops when its bracket is
#: this narrow relative to the step, or the slope this small relative to its terms.
LINE_WIDTH = 1e-12
LINE_SLOPE = 1e-13


@dataclass
class Start:
    """An approximate optimum and the scale of its error.

    Attributes
    ----------
    candidate : Candidate
        ``w``, ``b`` and a box-feasible ``alpha``.
    band : float
        Typical size of ``|y_i f(x_i) - y_i f^*(x_i)|``, the error of the margins: samples within
        a few bands of their margin may be on either side of it at the optimum.
    method : str
        Which method produced it.
    iterations : int
        Its Newton steps or epochs.
    exact : bool
        Whether the start claims to be optimal far below any tolerance (SMO run to a duality
        gap of :data:`~qpsvm.solvers.working_set.START_GAP`): the working set first certifies
        it and returns it when it passes, solving no QP.
    """

    candidate: Candidate
    band: float
    method: str
    iterations: int
    exact: bool = False


# The multiclass descents and their callees allocate nothing and take views of their callers'
# arrays (``_cs_scratch``): they are compiled without numba's reference counting (``_nrt=False``:
# no incref/decref of each view, no refcount pruning pass, as the chain's block ascent; the
# same floats).
@numba.njit(**CALLEE, _nrt=False)
def _shuffle(index, rng):  # pragma: no cover - compiled
    """Fisher-Yates shuffle of ``index`` in place, driven by xorshift64 (Marsaglia 2003): each
    step's pseudo-random 63-bit integer is the state's next ``x >> 1``; ``rng[0]``, the state,
    is updated. The generator is written out here, not a compiled callee of its own (0.06 s
    of a cold multiclass call's compile)."""
    n = index.shape[0]
    x = rng[0]
    for s in range(n):
        x ^= x << np.uint64(13)
        x ^= x >> np.uint64(7)
        x ^= x << np.uint64(17)
        t = s + np.int64(x >> np.uint64(1)) % (n - s)
        index[s], index[t] = index[t], index[s]
    rng[0] = x


def _rng(seed: int) -> np.ndarray:
    return np.array([(int(seed) * 2654435761 + 88172645463325252) % 2**64 or 1], dtype=np.uint64)


def dual_coordinate_descent(
    f: BinaryProblem,
    *,
    tol: float = 0.1,
    max_epochs: int = 50,
    bias: float | None = None,
    alpha: np.ndarray | None = None,
    seed: int = 0,
) -> Start:
    """Approximate optimum of a linear binary formulation by dual coordinate descent.

    Parameters
    ----------
    f : BinaryFormulation
        A formulation with the linear kernel (dense or sparse ``X``, or the ranking SVM's pair
        differences).
    tol : float, default=0.1
        Stop when the spread of projected gradients ``max PG - min PG`` is below ``tol``
        (liblinear's default for this solver).
    max_epochs : int, default=50
        Passes over the data at most.
    bias : float, optional
        Value ``B`` of the constant feature that stands for the intercept. ``None`` takes the
        root-mean-square norm of the rows, so ``b`` is regularised about as weakly as a typical
        weight direction; 0 without an intercept.
    alpha : ndarray, optional
        Starting dual point (clipped to the box), e.g. the optimum at a neighbouring ``C``.
    seed : int, default=0
        Seed of the random order of coordinates.

    Returns
    -------
    Start
        ``w`` and ``b = B w_B`` of the descent's last iterate and its ``alpha`` (which satisfies
        the box but in general not ``sum_i alpha_i y_i = 0``); ``band = tol`` (projected
        gradients are margin residuals; where the descent stopped short of ``tol``, the
        working-set rounds repair the statuses).
    """
    M, sqnorm = linear_data(f.X, f.n_features)
    if bias is None:
        bias = math.sqrt(float(np.mean(sqnorm))) if f.fit_intercept else 0.0
    upper = f.upper
    y = f.y.astype(np.float64)
    a = np.zeros(f.n_samples) if alpha is None else np.clip(alpha, 0.0, upper)
    v = np.append(f.expansion(a), bias * float(y @ a))
    epochs, violation = coordinate_epochs(
        M, y, f.margin, np.zeros(f.n_samples), upper, float(bias), sqnorm + bias * bias, a, v,
        int(max_epochs), float(tol), int(seed), _UNSHRINK_EVERY,
    )  # fmt: skip
    logger.debug(
        "dual coordinate descent: %d epochs, projected-gradient spread %.3g", epochs, violation
    )
    cand = Candidate(w=v[:-1], b=bias * v[-1], alpha=a)
    return Start(cand, tol, "dual_coordinate_descent", int(epochs))


@numba.njit(**ENTRY, _nrt=False)
def _cs_dcd(
    M,
    y,
    U,
    sqnorm,
    alpha,
    W,
    state,
    tol,
    max_epochs,
    rng,
    index,
    order,
    at_y,
    active_k,
    G,
    B,
    D,
    new,
):  # pragma: no cover - compiled
    """Sequential dual method for Crammer-Singer (Keerthi, Sundararajan, Chang, Hsieh and Lin
    2008; liblinear's ``Solver_MCSVM_CS``): one example's ``k`` multipliers at a time, exactly.
    ``alpha`` is liblinear's ``(n, k)`` form ``A``; ``state = [epochs, violation]`` on return.

    With liblinear's shrinking, of classes and of examples: a class whose multiplier is at its
    bound with a gradient below every class that can still grow leaves the example's active
    classes (its gradient is no longer computed); an example with at most one active class is
    skipped, until the active examples meet the tolerance ``eps_shrink``, which then halves down
    to ``tol`` and every class of every example is checked again (liblinear's schedule: the
    violation returned is a full pass's). Per example, ``order[i, :active_k[i]]`` are its active
    classes and ``at_y[i]`` the position of ``y_i`` in ``order[i]``.

    The caller allocates them (:func:`_cs_scratch`: ``index`` ``0..n-1``, ``order[i]``
    ``0..k-1``, ``at_y = y``, ``active_k = k``; ``G, B, D, new`` of length ``k``) and scalars
    are compared by hand (``if b > a: a = b`` is ``max(a, b)``, the first unless the second is
    larger, as numba's and Python's): numba compiles its allocation helpers and builtin
    ``min`` and ``max`` as functions of their own with each kernel (0.4 s of a cold call).
    """
    n, k = alpha.shape
    active = n
    eps_shrink = 10.0 * tol
    if 1.0 > eps_shrink:
        eps_shrink = 1.0
    from_all = True
    epoch = 0
    worst = np.inf
    while epoch < max_epochs:
        epoch += 1
        worst = 0.0
        _shuffle(index[:active], rng)
        s = 0
        while s < active:
            i = index[s]
            A = sqnorm[i]
            if A <= 0.0 or U[i] <= 0.0:
                s += 1
                continue
            cls = order[i]
            ka = active_k[i]
            yat = at_y[i]
            g_max = -np.inf
            g_min = np.inf
            for m in range(ka):
                c = cls[m]
                G[m] = _row_dot(i, M, W[c]) + (0.0 if m == yat else 1.0)
                if G[m] > g_max:
                    g_max = G[m]
                if alpha[i, c] < (U[i] if m == yat else 0.0) and G[m] < g_min:
                    g_min = G[m]
            # shrink the classes at their bound whose gradient is below every movable one
            m = 0
            while m < ka:
                if alpha[i, cls[m]] == (U[i] if m == yat else 0.0) and G[m] < g_min:
                    ka -= 1
                    cls[m], cls[ka] = cls[ka], cls[m]
                    G[m], G[ka] = G[ka], G[m]
                    if yat == ka:
                        yat = m
                    elif yat == m:
                        yat = ka
                else:
                    m += 1
            active_k[i] = ka
            at_y[i] = yat
            if ka <= 1:
                active -= 1
                index[s], index[active] = index[active], index[s]
                continue
            s += 1
            if g_max - g_min <= _CS_SPREAD:
                continue
            if g_max - g_min > worst:
                worst = g_max - g_min
            for m in range(ka):
                B[m] = G[m] - A * alpha[i, cls[m]]
            # Crammer and Singer 2001's sub-problem (liblinear's ``solve_sub_problem``): minimise
            # ``A/2 ||a||^2 + B.a`` over the active classes with ``sum_m a_m = -C_i`` when the
            # true class is shrunk at ``C_i`` (``yat >= ka``), else ``0``, ``a_m <= 0`` off the
            # label, ``a_yat <= C_i``; ``D`` sorted in place, descending (insertion sort: ``ka``
            # is small; written out here, a callee of its own cost 0.1 s of a cold call's compile)
            Ci = U[i]
            for m in range(ka):
                value = B[m] + (A * Ci if m == yat else 0.0)
                p = m
                while p > 0 and D[p - 1] < value:
                    D[p] = D[p - 1]
                    p -= 1
                D[p] = value
            beta = D[0] - A * Ci
            r = 1
            while r < ka and beta < r * D[r]:
                beta += D[r]
                r += 1
            beta /= r
            for m in range(ka):
                cap = Ci if m == yat else 0.0
                value = (beta - B[m]) / A
                new[m] = value if value < cap else cap  # min(cap, value)
            for m in range(ka):
                c = cls[m]
                delta = new[m] - alpha[i, c]
                if abs(delta) > _CS_SPREAD:
                    _row_axpy(i, M, delta, W[c])
                    alpha[i, c] = new[m]
        if worst < eps_shrink:
            if worst <= tol and from_all:
                break
            active = n
            active_k[:] = k
            eps_shrink = 0.5 * eps_shrink
            if tol > eps_shrink:
                eps_shrink = tol
            from_all = True
        else:
            from_all = False
    state[0] = epoch
    state[1] = worst


@numba.njit(**ENTRY, _nrt=False)
def _ww_dcd(
    M, y, U, sqnorm, alpha, W, state, tol, max_epochs, rng, index, score, moved
):  # pragma: no cover - compiled
    """Dual coordinate descent for Weston-Watkins, one constraint ``(i, c)`` at a time:
    ``G = (w_{y_i} - w_c) . x_i - 1``, curvature ``2 ||x_i||^2``, ``alpha`` clipped to
    ``[0, C s_i]``; ``state = [epochs, violation]`` on return. ``alpha`` is ``(n, k)`` in
    qpsvm's convention (``alpha[i, y_i] = 0``).

    The examples are visited in random order and each example's ``k - 1`` constraints in turn:
    its scores ``s_c = w_c . x_i`` are read once (``k`` products) and kept current by the
    steps themselves (a step ``delta`` on ``(i, c)`` moves ``s_{y_i}`` by ``delta ||x_i||^2``
    and ``s_c`` by ``-delta ||x_i||^2``), and the ``k`` rows of ``W`` are updated once at the
    end: ``2k`` passes over ``x_i`` per example where one constraint at a time takes
    ``4 (k - 1)``.

    With liblinear's shrinking (Hsieh et al. 2008, section 3.4), by example: a multiplier at 0
    whose gradient exceeds the largest projected gradient of the previous epoch (or at its
    bound, below the smallest) stays there; an example whose constraints all do is skipped until
    the active examples meet ``tol``, and then every example is checked again (so is every
    example in one more epoch when ``max_epochs`` ends a shrunk pass: the violation returned is
    the whole data's); measured on the
    digits, 10 classes: most examples are beyond every margin, and the skipped passes cut the
    epochs' cost several times).

    ``index`` (``0..n-1``), ``score`` and ``moved`` (zeros, length ``k``) are allocated by the
    caller and scalars compared by hand, as in :func:`_cs_dcd`."""
    n, k = alpha.shape
    active = n
    pg_max_old, pg_min_old = np.inf, -np.inf
    epoch = 0
    worst = np.inf
    last = False
    while not last:
        if epoch >= max_epochs:
            if active == n:
                break
            # a last full pass: the violation returned covers every example
            active, last = n, True
            pg_max_old, pg_min_old = np.inf, -np.inf
        epoch += 1
        worst = 0.0
        pg_max, pg_min = -np.inf, np.inf
        _shuffle(index[:active], rng)
        s = 0
        while s < active:
            i = index[s]
            q = sqnorm[i]
            if q <= 0.0:
                s += 1
                continue
            yi = y[i]
            for c in range(k):
                score[c] = _row_dot(i, M, W[c])
            shrink = True
            for c in range(k):
                if c == yi:
                    continue
                g = score[yi] - score[c] - 1.0
                a = alpha[i, c]
                pg = g
                if a <= 0.0:
                    if g > pg_max_old:
                        continue
                    if 0.0 < pg:  # min(g, 0.0)
                        pg = 0.0
                elif a >= U[i]:
                    if g < pg_min_old:
                        continue
                    if 0.0 > pg:  # max(g, 0.0)
                        pg = 0.0
                shrink = False
                if pg > pg_max:
                    pg_max = pg
                if pg < pg_min:
                    pg_min = pg
                if pg == 0.0:
                    continue
                if abs(pg) > worst:
                    worst = abs(pg)
                new = a - g / (2.0 * q)  # min(max(new, 0.0), U[i])
                if 0.0 > new:
                    new = 0.0
                if U[i] < new:
                    new = U[i]
                delta = new - a
                alpha[i, c] = new
                score[yi] += delta * q
                score[c] -= delta * q
                moved[yi] += delta
                moved[c] -= delta
            for c in range(k):
                if moved[c] != 0.0:
                    _row_axpy(i, M, moved[c], W[c])
                    moved[c] = 0.0
            if shrink:
                active -= 1
                index[s], index[active] = index[active], index[s]
                continue
            s += 1
        if worst <= tol:
            if active == n:
                break
            active = n
            pg_max_old, pg_min_old = np.inf, -np.inf
            continue
        pg_max_old = pg_max if pg_max > 0.0 else np.inf
        pg_min_old = pg_min if pg_min < 0.0 else -np.inf
    state[0] = epoch
    state[1] = worst


def _cs_scratch(y: np.ndarray, k: int) -> tuple[np.ndarray, ...]:
    """The scratch arrays of :func:`_cs_dcd`, at their starting values: the examples' order
    ``0..n-1``, each example's classes ``0..k-1``, the label's place ``y``, the active classes
    ``k``, and four of length ``k``."""
    n = y.shape[0]
    order = np.tile(np.arange(k, dtype=np.int64), (n, 1))
    index, active_k = np.arange(n, dtype=np.int64), np.full(n, k, dtype=np.int64)
    return index, order, y.copy(), active_k, *(np.empty(k) for _ in range(4))


def _cs_project(V: np.ndarray, cap: np.ndarray, y: np.ndarray) -> np.ndarray:
    r"""Each row's Euclidean projection onto Crammer-Singer's set in liblinear's form,

    .. math::

        \operatorname*{argmin}_{a} \tfrac12 \|a - v_i\|^2 \quad\text{s.t.}\quad
        \textstyle\sum_m a_m = 0,\ a_m \le 0\ (m \ne y_i),\ a_{y_i} \le c_i,

    ``a = min(caps, v_i + beta)``: liblinear's ``solve_sub_problem`` (the one
    :func:`_cs_dcd` solves per example, here with ``A = 1`` and ``B = -v_i``) vectorised over
    the rows. ``D = cap e_y - v_i`` sorted in descending order takes terms while ``beta_r =
    sum_{m < r} D_m - c_i < r D_r``; ``beta = beta_r / r`` at the first ``r`` that fails (or
    ``k``)."""
    n, k = V.shape
    rows = np.arange(n)
    D = -V
    D[rows, y] += cap
    D = -np.sort(-D, axis=1)
    taken = np.cumsum(D, axis=1) - cap[:, None]
    stop = taken[:, :-1] >= np.arange(1, k) * D[:, 1:]
    r = np.where(stop.any(axis=1), stop.argmax(axis=1) + 1, k)
    beta = taken[rows, r - 1] / r
    caps = np.zeros((n, k))
    caps[rows, y] = cap
    return np.minimum(caps, V + beta[:, None])


def _cs_violation(A: np.ndarray, G: np.ndarray, cap: np.ndarray, y: np.ndarray) -> float:
    """The largest spread ``max_m G_im - min_{m movable} G_im`` over the examples with
    ``c_i > 0`` (a class is movable below its cap: ``c_i`` for ``y_i``, else 0), as
    :func:`_cs_dcd` measures a full pass."""
    n = A.shape[0]
    rows = np.arange(n)
    movable = A < 0.0
    movable[rows, y] = A[rows, y] < cap
    spread = G.max(axis=1) - np.where(movable, G, np.inf).min(axis=1)
    return float(np.max(spread[cap > 0.0], initial=0.0))


def _ww_violation(alpha: np.ndarray, G: np.ndarray, cap: np.ndarray) -> float:
    """The largest projected gradient ``|pg|`` over the multipliers with ``cap > 0`` (``G`` the
    gradient, ``pg = min(G, 0)`` at 0, ``max(G, 0)`` at ``cap``), as :func:`_ww_dcd` measures a
    full pass."""
    pg = np.where(alpha <= 0.0, np.minimum(G, 0.0), G)
    pg = np.where(alpha >= cap, np.maximum(G, 0.0), pg)
    return float(np.max(np.abs(pg[cap > 0.0]), initial=0.0))


def _gradient_start(f: MulticlassProblem, tol: float, band: float, steps: int) -> Start:
    r"""A multiclass start by accelerated projected gradient steps (FISTA, Beck and Teboulle
    2009) on the dual over every example at once: a first call's start while the variant's
    descent (:func:`_cs_dcd`, :func:`_ww_dcd`) is not compiled (it then need not be: the working
    set certifies the optimum from any start). Dense rows only.

    Crammer-Singer in liblinear's form,

    .. math::

        \min_A \tfrac12 \|A^T X\|_F^2 + \langle E, A \rangle, \qquad
        \textstyle\sum_m A_{im} = 0,\ A_{im} \le C s_i [m = y_i],

    ``E_{im} = [m \ne y_i]``, ``W = A^T X``, gradient ``X W^T + E``, projected per example by
    :func:`_cs_project`, step ``1 / L`` with ``L = lambda_max(X^T X)``. Weston-Watkins in
    qpsvm's ``alpha`` (``0 <= alpha_im <= C s_i`` off the label), ``W = A^T X`` with
    ``A_im = -alpha_im``, ``A_{i y_i} = sum_m alpha_im``: gradient ``s_{i y_i} - s_im - 1``
    (``s = X W^T``), clipped to the box, ``L = k lambda_max(X^T X)`` (``||A_i||^2 <= k
    ||alpha_i||^2``). Stopped at the violation ``band`` (:func:`_cs_violation`,
    :func:`_ww_violation`, checked every ``_CHECK`` steps) or after ``steps``; the start's band
    is the violation reached, at least ``tol``.
    """
    X, y, upper = f.X, f.y.astype(np.int64), f.upper
    n, k = f.n_samples, f.n_classes
    rows = np.arange(n)
    gram = X.T @ X if X.shape[1] <= n else X @ X.T
    L = float(np.linalg.eigvalsh(gram)[-1]) * (1.0 + 1e-6) or 1.0
    if f.crammer_singer:
        E = np.where(f.mask, 1.0, 0.0)

        def expansion(A: np.ndarray) -> np.ndarray:
            return A.T @ X

        def gradient(A: np.ndarray) -> np.ndarray:
            return X @ expansion(A).T + E

        def project(V: np.ndarray) -> np.ndarray:
            return _cs_project(V, upper, y)

        def violation_at(A: np.ndarray) -> float:
            return _cs_violation(A, gradient(A), upper, y)

    else:
        cap = np.where(f.mask, upper[:, None], 0.0)
        L *= k

        def expansion(alpha: np.ndarray) -> np.ndarray:
            A = -alpha
            A[rows, y] = alpha.sum(axis=1)
            return A.T @ X

        def gradient(alpha: np.ndarray) -> np.ndarray:
            S = X @ expansion(alpha).T
            return np.where(f.mask, S[rows, y][:, None] - S - 1.0, 0.0)

        def project(V: np.ndarray) -> np.ndarray:
            return np.clip(V, 0.0, cap)

        def violation_at(alpha: np.ndarray) -> float:
            return _ww_violation(alpha, gradient(alpha), cap)

    A, Z, t = np.zeros((n, k)), np.zeros((n, k)), 1.0
    violation, step = np.inf, 0
    while step < steps:
        step += 1
        following = project(Z - gradient(Z) / L)
        t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        Z = following + ((t - 1.0) / t_next) * (following - A)
        A, t = following, t_next
        if step % _CHECK == 0 or step == steps:
            violation = violation_at(A)
            if violation <= band:
                break
    logger.debug("multiclass gradient start: %d steps, violation %.3g", step, violation)
    alpha = np.where(f.mask, -A, 0.0) if f.crammer_singer else A
    cand = Candidate(w=expansion(A), b=0.0, alpha=alpha)
    return Start(cand, max(float(tol), violation), "multiclass_gradient", step)


def multiclass_dual_tol(f: MulticlassProblem) -> float:
    """The default tolerance of :func:`multiclass_dual`: ``2e-3`` for Crammer-Singer, ``1e-2``
    for Weston-Watkins."""
    return 2e-3 if f.crammer_singer else 1e-2


def multiclass_dual(
    f: MulticlassProblem,
    *,
    tol: float | None = None,
    max_epochs: int | None = None,
    seed: int = 0,
    warm: Candidate | None = None,
) -> Start:
    """Approximate optimum of a multiclass SVM by dual coordinate descent.

    Crammer-Singer: the sequential dual method (all ``k`` multipliers of an example at once, with
    liblinear's shrinking); Weston-Watkins: one multiplier at a time. A call from zero on dense
    rows whose descent is not compiled takes accelerated projected gradient steps in numpy
    instead (:func:`_gradient_start`), while their entries in the process stay within
    :data:`GRADIENT_ENTRIES`: another start, from which the working set certifies the optimum
    (the compiled path's floats unless the two end at different certified points, in about one
    problem in ten, apart in the last digits the tolerance allows).

    Parameters
    ----------
    f : MulticlassSVM
    tol : float, optional
        Stop when no KKT violation exceeds ``tol`` (margin units). Default ``2e-3`` for
        Crammer-Singer (measured on 2e4 x 50 with 10 classes: the tighter start and band shrink
        the working set from ~4000 to ~1200 examples, which more than halves the total time),
        ``1e-2`` for Weston-Watkins.
    max_epochs : int, optional
        Passes over the data at most; default 2000 for Crammer-Singer (shrunk passes are cheap:
        measured on the digits, 10 classes, the descent reaches ``2e-3`` after ~1500 epochs in
        ~0.06 s, and the exact start it sorts then needs no restricted QP), 5000 for
        Weston-Watkins.
    seed : int, default=0
        Seed of the random order.
    warm : Candidate, optional
        Continue from this point of an earlier descent (its ``w`` and box-feasible ``alpha``,
        left unchanged) rather than from zero.

    Returns
    -------
    Start
        ``W`` (``(k, d)``), ``alpha`` in qpsvm's convention (``(n, k)``, ``alpha_{i y_i} = 0``)
        and ``band``: ``tol``, or the largest violation of the last epoch where the descent
        stopped short of ``tol`` (the largest violation bounds the margins' error; the
        working-set rounds repair the statuses it misjudges).
    """
    if tol is None:
        tol = multiclass_dual_tol(f)
    if max_epochs is None:
        max_epochs = 2000 if f.crammer_singer else 5000
    k = f.n_classes
    entries = GRADIENT_STEPS * (f.n_samples * k * (f.n_features + 1) + GRADIENT_STEP)
    descent = _cs_dcd if f.crammer_singer else _ww_dcd
    if warm is None and not sp.issparse(f.X) and uncompiled(descent, entries, GRADIENT_ENTRIES):
        band = max(float(tol), GRADIENT_BAND)
        return _gradient_start(f, float(tol), band, GRADIENT_STEPS)
    W = np.zeros((k, f.n_features)) if warm is None else np.array(warm.w, dtype=np.float64)
    alpha = np.zeros((f.n_samples, k)) if warm is None else np.array(warm.alpha, dtype=np.float64)
    state = np.zeros(2)
    M, sqnorm, y = data_arrays(f.X), row_sq_norms(f.X), f.y.astype(np.int64)
    if f.crammer_singer:
        # the sequential dual's A: -alpha off the label, and sum_m A_im = 0 on it, which the
        # float sum meets to (k - 1) u C s_i: a label's multiplier within twice that of its
        # bound is put on it (left a rounding below, the descent would count a violation that
        # its steps, too small to take, never mend)
        A = -alpha
        spent = alpha.sum(axis=1)
        at_bound = f.upper - spent <= 2.0 * k * np.finfo(np.float64).eps * f.upper
        A[np.arange(f.n_samples), y] = np.where(at_bound, f.upper, spent)
        scratch = _cs_scratch(y, k)
        _cs_dcd(
            M, y, f.upper, sqnorm, A, W, state, float(tol), int(max_epochs), _rng(seed), *scratch
        )
        alpha = np.where(f.mask, -A, 0.0)
    else:
        index, score, moved = np.arange(f.n_samples), np.empty(k), np.zeros(k)
        _ww_dcd(
            M, y, f.upper, sqnorm, alpha, W, state, float(tol), int(max_epochs), _rng(seed),
            index, score, moved,
        )  # fmt: skip
    logger.debug("multiclass dual: %d epochs, violation %.3g", int(state[0]), state[1])
    cand = Candidate(w=W, b=0.0, alpha=alpha)
    # where the epochs ran out before tol, the band is the violation reached: a band of tol
    # would leave out of W examples whose status the start has wrong, each found only by a
    # further restricted QP (measured, 1e4 x 50 with 10 classes: 5 rounds with band tol, 1
    # with the violation reached)
    return Start(cand, max(float(tol), float(state[1])), "multiclass_dual", int(state[0]))


def _curvature(X: Any, rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``sum_{i in rows} weights_i x~_i x~_i^T`` with ``x~_i = (x_i, 1)``: ``(d+1) x (d+1)``.

    ``rows`` is a boolean mask; the rows are gathered :data:`_CHUNK` at a time, so the extra
    memory stays ``O(_CHUNK d)`` however many rows there are.
    """
    d = X.shape[1]
    out = np.zeros((d + 1, d + 1))
    index = np.flatnonzero(rows)
    for k in range(0, index.size, _CHUNK):
        XR, wr = X[index[k : k + _CHUNK]], weights[k : k + _CHUNK]
        WR = XR.multiply(wr[:, None]).tocsr() if sp.issparse(XR) else XR * wr[:, None]
        block = XR.T @ WR
        out[:d, :d] += block.toarray() if sp.issparse(block) else block
        out[:d, d] += np.asarray(WR.sum(axis=0)).ravel()
    out[d, :d] = out[:d, d]
    out[d, d] = float(weights.sum())
    return out


class _Newton:
    """State of Newton's method on ``F_mu`` (slack penalty ``C``) across smoothing levels.

    The curvature ``S = sum_{i in Q} s_i x~_i x~_i^T`` of the samples in the quadratic piece
    ``Q = {0 < z_i < mu}`` is updated with the samples that enter or leave ``Q`` when that is
    cheaper than recomputing it; the Hessian is ``I (+) 0 + (C/mu) S``.
    """

    def __init__(self, f: BinaryProblem, C: float) -> None:
        self.f, self.C = f, C
        d = f.n_features
        self.w, self.b, self.z = np.zeros(d), 0.0, f.margin.copy()
        self.quad = np.zeros(f.n_samples, dtype=bool)
        self.S = np.zeros((d + 1, d + 1))
        self.steps = 0

    def _hessian(self, mu: float) -> np.ndarray:
        f = self.f
        quad = (self.z > 0.0) & (self.z < mu) & (f.sample_weight > 0)
        enter, leave = quad & ~self.quad, self.quad & ~quad
        n_enter, n_leave = int(np.count_nonzero(enter)), int(np.count_nonzero(leave))
        if n_enter + n_leave < int(np.count_nonzero(quad)):
            s = f.sample_weight
            self.S += _curvature(f.X, enter, s[enter]) - _curvature(f.X, leave, s[leave])
        elif n_enter + n_leave:
            self.S = _curvature(f.X, quad, f.sample_weight[quad])
        self.quad = quad
        d = f.n_features
        H = (self.C / mu) * self.S
        H[:d, :d] += np.eye(d)
        if H[d, d] <= 0.0:  # no sample in the quadratic piece: F is linear in b, unit curvature
            H[d, d] = 1.0
        return H if f.fit_intercept else H[:d, :d]

    def _step_length(self, mu: float, u: np.ndarray, wdw: float, dwdw: float) -> float:
        """Exact minimiser of ``phi(t) = F_mu(w + t dw, b + t db)``, ``t > 0``.

        ``phi'(t) = w.dw + t ||dw||^2 - C sum_i s_i u_i h_mu'(z_i - t u_i)`` is piecewise linear
        and non-decreasing, negative at 0: its root is bracketed by doubling and found by
        regula falsi (Illinois), which is exact once the bracket lies in one linear piece.
        """
        su = self.C * self.f.sample_weight * u

        def dphi(t: float) -> float:
            return wdw + t * dwdw - float(su @ np.clip((self.z - t * u) / mu, 0.0, 1.0))

        lo, g_lo = 0.0, dphi(0.0)
        hi, g_hi = 1.0, dphi(1.0)
        for _ in range(60):
            if g_hi >= 0.0:
                break
            lo, g_lo, hi = hi, g_hi, 2.0 * hi
            g_hi = dphi(hi)
        side = 0
        for _ in range(100):
            if g_hi <= 0.0 or hi - lo <= LINE_WIDTH * hi:
                return hi
            t = hi - g_hi * (hi - lo) / (g_hi - g_lo)
            g = dphi(t)
            if abs(g) <= LINE_SLOPE * (abs(wdw) + t * dwdw + 1.0):
                return t
            if g < 0.0:
                lo, g_lo = t, g
                g_hi *= 0.5 if side < 0 else 1.0
                side = -1
            else:
                hi, g_hi = t, g
                g_lo *= 0.5 if side > 0 else 1.0
                side = 1
        return 0.5 * (lo + hi)

    def level(self, mu: float, max_steps: int) -> int:
        """Minimise ``F_mu`` by Newton steps with exact line search; returns the step count."""
        f = self.f
        X, y, d = f.X, f.y, f.n_features
        for step in range(1, max_steps + 1):
            coef = self.C * f.sample_weight * np.clip(self.z / mu, 0.0, 1.0) * y
            grad = self.w - np.asarray(X.T @ coef).ravel()
            if f.fit_intercept:
                grad = np.append(grad, -coef.sum())
            H = self._hessian(mu)
            try:
                direction = np.linalg.solve(H, -grad)
            except np.linalg.LinAlgError:
                # singular to working precision (features shifted by 1e5 with a huge C/mu):
                # the least-squares direction; a step that does not descend ends the level
                direction = np.linalg.lstsq(H, -grad, rcond=None)[0]
            slope = float(grad @ direction)
            scale = float(self.w @ self.w) + self.C * float(f.sample_weight @ np.abs(self.z))
            if -slope <= 1e-14 * max(1.0, scale):
                return step
            dw, db = direction[:d], float(direction[d]) if f.fit_intercept else 0.0
            u = y * (np.asarray(X @ dw).ravel() + db)
            t = self._step_length(mu, u, float(self.w @ dw), float(dw @ dw))
            z, z_t = self.z, self.z - t * u
            same = np.array_equal((z > 0.0) & (z < mu), (z_t > 0.0) & (z_t < mu)) and (
                np.array_equal(z >= mu, z_t >= mu)
            )
            self.w, self.b, self.z = self.w + t * dw, self.b + t * db, z_t
            # a step that stays in one quadratic piece lands on the exact minimiser; one that
            # moves every margin by less than mu is close enough for a start of band mu
            if same or t * float(np.max(np.abs(u), initial=0.0)) <= mu:
                return step
        return max_steps


def smoothed_newton(
    f: BinaryProblem,
    *,
    C: float | None = None,
    mu_final: float = 1e-3,
    shrink: float = 10.0,
    coarse_steps: int = 3,
    max_steps: int = 50,
) -> Start:
    """Approximate optimum of a linear soft-margin problem by Newton's method on ``F_mu``.

    Parameters
    ----------
    f : BinaryFormulation
        Linear kernel, at most :data:`NEWTON_MAX_FEATURES` features.
    C : float, optional
        Slack penalty; default ``f.C``. A finite surrogate for the hard margin (whose optimum
        is the soft margin's for every ``C`` above some threshold, if the data are separable).
    mu_final : float, default=1e-3
        Last smoothing width, relative to ``max(1, max m_i)``.
    shrink : float, default=10
        Ratio of consecutive widths, starting from ``2 max(1, max m_i)`` (every sample in the
        quadratic piece at ``w = 0``).
    coarse_steps : int, default=3
        Newton steps per width before the last (they only need to bring the iterate near).
    max_steps : int, default=50
        Newton steps at the last width at most.

    Returns
    -------
    Start
        ``w``, ``b`` minimising ``F_mu`` at the last width, ``alpha_i = C s_i h_mu'(z_i)`` and
        ``band = mu``.
    """
    scale = max(1.0, float(np.max(f.margin)))
    C = f.C if C is None else C
    newton = _Newton(f, C)
    mu = 2.0 * scale
    while True:
        last = mu <= mu_final * scale
        taken = newton.level(mu, max_steps if last else coarse_steps)
        newton.steps += taken
        logger.debug("smoothed Newton: mu=%.3g, %d steps", mu, taken)
        if last:
            break
        mu = max(mu / shrink, mu_final * scale)
    alpha = C * f.sample_weight * np.clip(newton.z / mu, 0.0, 1.0)
    cand = Candidate(w=newton.w, b=newton.b, alpha=alpha)
    return Start(cand, mu, "smoothed_newton", newton.steps)

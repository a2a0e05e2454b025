r"""The soft-margin primal's steps of the working set over Dask row blocks.

What the binary problem adds to the shared rounds of :mod:`qpsvm.dask.working_set`:

1. *Sample.* A strided sample of evenly spaced blocks (at most ``sample_rows`` rows, read from
   a few blocks only) is solved in memory by the smoothed Newton start
   (:func:`~qpsvm.solvers.warm_start.smoothed_newton`) at ``C n / n_sample``.
2. *Start.* Newton's method on the smoothed hinge :math:`F_\mu` over all rows, at the widths
   :data:`START_WIDTHS`: one pass per step gives ``F_mu``, its gradient and its
   ``(d+1) x (d+1)`` curvature (and those of the next width, so a width that is reached costs
   no extra pass); a step that does not decrease ``F_mu`` is halved (another pass).
3. *Sort.* One pass collects the rows within ``width * mu`` of their margin, at least the
   ``min_work`` nearest (the working set ``W``), and the folded
   term ``sum_E s_i y_i x_i`` of the rows fixed at their bound; widened until ``W`` can balance
   the fixed rows.
4. *Rounds* (:func:`~qpsvm.dask.working_set.run_rounds`): the restricted problem, ``W``'s rows
   and one aggregated row per label for the rows fixed at their bound (:mod:`qpsvm.dask.fold`),
   is solved by qpsvm's in-memory working set (:func:`solve_rows`); its certificate's
   multipliers are rebalanced before the check.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from qpsvm._numerics import fsum
from qpsvm.dask.blocks import NewtonParts, Rows, Sort
from qpsvm.dask.fold import Fold
from qpsvm.dask.passes import DaskData
from qpsvm.dask.working_set import Begin, Restricted, WorkingRows, read_sample
from qpsvm.exceptions import InaccurateSolutionError, InvalidInputError
from qpsvm.solution import Solution
from qpsvm.solvers.warm_start import smoothed_newton
from qpsvm.solvers.working_set import STATUS_TOL
from qpsvm.verify.binary import rebalance

__all__ = [
    "COARSE_STEPS",
    "FINAL_STEPS",
    "RESTRICTED_WIDTH",
    "START_WIDTHS",
    "STEPS",
    "BinaryFamily",
    "binary_sample",
]

logger = logging.getLogger("qpsvm")

#: Smoothing widths of the start on all rows, relative to ``max(1, max m_i)``.
START_WIDTHS = (1e-1, 1e-2, 1e-3)
#: Newton steps at each width before the last (they only need to bring the iterate near), and
#: at the last: the working set (at least ``min_work`` rows) absorbs what is left.
COARSE_STEPS = 2
FINAL_STEPS = 3
#: Step lengths every pass of the start evaluates along its Newton direction (0: stay).
STEPS = (1.0, 0.5, 0.25, 0.1, 0.03, 0.01, 0.003, 0.0)
#: Times the sort band may be widened to make the working set balance the fixed rows.
SORT_TRIES = 6
#: Last smoothing width (times the largest margin) of the in-memory start on the restricted
#: problem. ``W`` holds the rows within ``width`` times the start's last width (1e-3) of their
#: margin, so at the in-memory default (also 1e-3) its own QP would hold nearly all of them;
#: at 1e-6 it holds the few on the margin. Measured on 7363 such rows: 30 rows in the QP,
#: 5.3 s and 28 MiB, against 7348 rows, 11.9 s and 66 MiB at 1e-3.
RESTRICTED_WIDTH = 1e-6


def binary_sample(data: DaskData, rows: int) -> tuple[np.ndarray, ...]:
    """:func:`~qpsvm.dask.working_set.read_sample` with labels ``+-1``; sets ``data.classes``
    (from the sample, or from a pass over ``y`` if the sample lacks one).

    Raises
    ------
    InvalidInputError
        ``y`` does not hold exactly two labels.
    """
    X, y, s, m = read_sample(data, rows)
    classes = np.unique(y)
    if classes.size < 2:
        classes = data.labels()
    if classes.size != 2:
        raise InvalidInputError(f"y must hold exactly two labels; found {classes.size}.")
    data.classes = classes
    return np.asarray(X, dtype=np.float64), np.where(y == classes[1], 1.0, -1.0), s, m


def sample_start(data: DaskData, rows: int) -> tuple[np.ndarray, float, float]:
    """``(w, b)`` of the smoothed Newton start on a sample (:func:`binary_sample`) at
    ``C n / n_sample``, and the sample's largest margin."""
    from qpsvm.formulations.binary import SoftMarginPrimal

    X, y, s, m = binary_sample(data, rows)
    scale = max(1.0, float(np.max(m))) if m is not None else 1.0
    if np.unique(y).size < 2:
        return np.zeros(data.n_features), 0.0, scale
    f = SoftMarginPrimal(
        X,
        y,
        C=data.C * data.n_samples / X.shape[0],
        fit_intercept=data.fit_intercept,
        sample_weight=s,
        margin=m,
    )
    cand = smoothed_newton(f).candidate
    return cand.w, float(cand.b or 0.0), scale


@dataclass
class Start:
    """The start on all rows: ``(w, b)``, the smoothing width reached (the band of its
    margins' error) and the largest margin."""

    w: np.ndarray
    b: float
    band: float
    max_margin: float


def newton_start(data: DaskData, w: np.ndarray, b: float, scale: float, max_passes: int) -> Start:
    r"""Newton's method on :math:`F_\mu` over all rows at the widths :data:`START_WIDTHS`
    (times ``scale``), from ``(w, b)``, in at most ``max_passes`` passes.

    Each pass evaluates ``F_mu`` at the step lengths :data:`STEPS` along the Newton direction
    (a line search in one read, with the next step's gradient and curvature at the full step)
    and keeps the longest with sufficient decrease (Armijo; a shorter one costs a pass for the
    data at the new point); a width is reached when that step moved every margin by at most
    ``mu``, the test of the in-memory start, or after :data:`COARSE_STEPS` steps
    (:data:`FINAL_STEPS` at the last width).
    """
    mus = tuple(wd * scale for wd in START_WIDTHS)
    d, C = data.n_features, data.C
    k = d + 1 if data.fit_intercept else d
    zero = np.zeros(d)
    first = data.newton(w, b, zero, 0.0, (0.0,), mus)
    here: dict[int, NewtonParts] | None = dict(enumerate(first.parts))  # at (w, b), by width
    level, passes, taken = 0, 1, 0
    while passes < max_passes:
        if here is None:  # the last step was shortened: the data at the new point
            here = dict(enumerate(data.newton(w, b, zero, 0.0, (0.0,), mus[level:]).parts))
            here = {level + j: p for j, p in here.items()}
            passes += 1
            continue
        mu, cur = mus[level], here[level]
        H = (C / mu) * cur.curvature
        H[:d, :d] += np.eye(d)
        if H[d, d] <= 0.0:  # no row in the quadratic piece: F is linear in b, unit curvature
            H[d, d] = 1.0
        g = C * cur.gradient
        g[:d] += w
        step = np.linalg.solve(H[:k, :k], -g[:k])
        dw, db = step[:d], float(step[d]) if data.fit_intercept else 0.0
        line = data.newton(w, b, dw, db, STEPS, mus[level:])
        passes += 1
        value = 0.5 * float(w @ w) + C * cur.value
        slope = float(g[:k] @ step)
        trial = [
            0.5 * float((w + t * dw) @ (w + t * dw)) + C * float(line.values[i])
            for i, t in enumerate(STEPS)
        ]
        i = next(
            (i for i, t in enumerate(STEPS) if trial[i] <= value + 1e-4 * t * slope),
            len(STEPS) - 1,  # t = 0: no decrease along the direction
        )
        t = STEPS[i]
        w, b = w + t * dw, b + t * db
        here = {level + j: p for j, p in enumerate(line.parts)} if i == 0 else None
        logger.debug(
            "dask start: width %.3g, step %.3g, move %.3g, F %.12g",
            mu,
            t,
            t * line.max_move,
            trial[i],
        )
        taken += 1
        last = level == len(mus) - 1
        if t * line.max_move <= mu or taken >= (FINAL_STEPS if last else COARSE_STEPS):
            if last:
                break
            level, taken = level + 1, 0
    return Start(w, b, mus[level], first.max_margin)


def balanced(ws: WorkingRows, C: float, fit_intercept: bool) -> bool:
    """Whether ``0 <= alpha_W <= C s_W`` can meet the balance ``sum_W alpha_i y_i =
    -C sum_E s_i y_i`` (always, without an intercept, if ``W`` is not empty)."""
    if not len(ws.rows):
        return False
    if not fit_intercept:
        return True
    u, y = C * ws.rows.sample_weight, ws.rows.y
    target = -C * ws.fold.linear[1]
    return -float(np.sum(u[y < 0])) <= target <= float(np.sum(u[y > 0]))


def restricted_rows(ws: WorkingRows) -> tuple[np.ndarray, ...]:
    """The rows of the restricted problem: ``W``'s, the aggregated rows of the fixed rows'
    groups of positive weight (:meth:`~qpsvm.dask.fold.Fold.rows`), and a row of weight 0 (it
    changes nothing) for a label none of them holds, so that the formulation has its two labels
    (the ranking SVM's pairs are all ``+1``); ``(X, y, sample_weight, margin)`` and the groups'
    positions in ``ws.fold``."""
    groups = np.flatnonzero(ws.fold.weight > 0.0)
    Xg, yg, sg, mg = (v[groups] for v in ws.fold.rows())
    rows = ws.rows
    y = np.concatenate([rows.y, yg])
    absent = np.setdiff1d([-1.0, 1.0], y)
    return (
        np.vstack([rows.X, Xg, np.zeros((absent.size, rows.X.shape[1]))]),
        np.concatenate([y, absent]),
        np.concatenate([rows.sample_weight, sg, np.zeros(absent.size)]),
        np.concatenate([rows.margin, mg, np.ones(absent.size)]),
        groups,
    )


def solve_rows(
    X: np.ndarray,
    y: np.ndarray,
    s: np.ndarray,
    m: np.ndarray,
    C: float,
    fit_intercept: bool,
    solver: str | None,
    options: dict[str, Any],
    tol: float,
) -> Solution:
    """The soft-margin primal on rows in memory by qpsvm's own working-set engine
    (``SoftMarginPrimal(...).solve(method="working_set")``), certified at ``tol``, from the
    smoothed Newton start at the width :data:`RESTRICTED_WIDTH`."""
    from qpsvm.formulations.binary import SoftMarginPrimal

    f = SoftMarginPrimal(X, y, C=C, fit_intercept=fit_intercept, sample_weight=s, margin=m)
    start = smoothed_newton(f, mu_final=RESTRICTED_WIDTH)
    return f.solve(method="working_set", solver=solver, tol=tol, start=start, **options)


def balanced_alpha(alpha: np.ndarray, ws: WorkingRows, data: DaskData, fixed: float) -> np.ndarray:
    """The restricted problem's multipliers of ``W`` clipped into their box and, with an
    intercept, shifted on their free coordinates so that ``sum_W alpha_i y_i + fixed = 0``
    holds to round-off (``fixed``: ``sum_E alpha_i y_i`` of the fixed rows,
    :func:`~qpsvm.verify.binary.rebalance`): the certificate's balance term costs
    ``B |sum_i alpha_i y_i|`` with ``B`` in the thousands on large data."""
    u = data.C * ws.rows.sample_weight
    a = np.clip(alpha, 0.0, u)
    if not data.fit_intercept:
        return a
    excess = fsum(np.append(a * ws.rows.y, fixed))
    out = rebalance(a, u, ws.rows.y, excess)
    return a if out is None else out


def sort_working_set(
    data: DaskData, start: Start, width: float, min_work: int
) -> tuple[Sort, WorkingRows, float]:
    """The sort pass at the start, widened (times 4) until the working set can balance the
    fixed rows; returns the sort, the working set and the band used."""
    sort = Sort(start.w, start.b)
    band = width * start.band
    for _ in range(SORT_TRIES):
        parts = data.sort(sort, band, min_work)
        ws = WorkingRows(parts.work, parts.fold)
        if balanced(ws, data.C, data.fit_intercept):
            return sort, ws, band
        band *= 4.0
    raise InaccurateSolutionError(
        f"the working set cannot balance the rows fixed at their bound even with a band of "
        f"{band:.3g}; standardise the features, or raise the start's passes."
    )


class BinaryFamily:
    """The soft-margin primal's steps (see the module): start, restricted problem, and which of
    the violated rows leave the fixed rows' sums."""

    formulation = "SoftMarginPrimal"

    def begin(
        self, data: DaskData, width: float, sample_rows: int, start_passes: int, min_work: int
    ) -> Begin:
        """Sample, Newton start and sort."""
        w, b, scale = sample_start(data, sample_rows)
        start = newton_start(data, w, b, scale, start_passes)
        passes = len(data.log)
        sort, ws, band = sort_working_set(data, start, width, min_work)
        return Begin(sort, ws, band, STATUS_TOL * max(1.0, start.max_margin), passes)

    def restricted(
        self,
        data: DaskData,
        ws: WorkingRows,
        solver: str | None,
        options: dict[str, Any],
        tol: float,
    ) -> Restricted:
        """The restricted problem (``W``'s rows and the fixed rows' aggregated rows) by the
        in-memory engine (:func:`solve_rows`); its certificate's multipliers give ``W``'s
        (rebalanced, :func:`balanced_alpha`) and, as fractions ``t_g = alpha_g / (C S_g)`` of
        their bound, the fixed rows' of each label (:attr:`~qpsvm.dask.blocks.Sort.share`)."""
        X, y, s, m, groups = restricted_rows(ws)
        began = time.perf_counter()
        sol = solve_rows(X, y, s, m, data.C, data.fit_intercept, solver, options, tol)
        seconds = time.perf_counter() - began
        alpha = np.asarray(sol.certificate.alpha, dtype=np.float64)
        n = len(ws.rows)
        fold = ws.fold
        taken = np.clip(alpha[n : n + groups.size] / (data.C * fold.weight[groups]), 0.0, 1.0)
        # the fixed rows' sum_E alpha_i y_i = sum_g t_g C S_g y_g (a group left out of the
        # restricted problem, of weight 0 by cancellation, at t = 1)
        t = np.ones(len(fold))
        t[groups] = taken
        fixed = fsum(t * data.C * fold.weight * fold.label)
        w = np.asarray(sol.w, dtype=np.float64)
        b = float(sol.b) if data.fit_intercept else 0.0
        point = Sort(w, b, (fold.keys[groups], taken))
        return Restricted(point, balanced_alpha(alpha[:n], ws, data, fixed), sol.solver, seconds)

    def without(self, data: DaskData, fold: Fold, found: Rows, point: Sort, sort: Sort) -> Fold:
        """``fold`` without the violated rows that were fixed at their bound: a fixed row is
        violated with ``r_i > 0`` at the candidate, a dropped one with ``r_i < 0``."""
        fixed = found.y * (found.X @ point.w + point.b) - found.margin > 0.0
        return fold.minus(Fold.of(found.X, found.y, found.sample_weight, found.margin, fixed))

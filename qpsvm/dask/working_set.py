r"""Exact linear SVMs beyond one machine's memory: the working set over Dask row blocks.

The in-memory engine (:mod:`qpsvm.solvers.working_set`) splits the work the way a cluster
needs: the violator search and the certificate are passes over the rows (a map, then sums), the
restricted QP is small. Here each of those passes is one read of every row block by Dask
(:mod:`qpsvm.dask.passes`), and the client keeps only ``d``-sized vectors and the working set:

1. *Sample.* A strided sample of evenly spaced blocks (at most ``sample_rows`` rows, read from
   a few blocks only) is solved in memory by the smoothed Newton start
   (:func:`~qpsvm.solvers.warm_start.smoothed_newton`) at ``C n / n_sample``.
2. *Start.* Newton's method on the smoothed hinge :math:`F_\mu` over all rows, at the widths
   :data:`START_WIDTHS`: one pass per step gives ``F_mu``, its gradient and its
   ``(d+1) x (d+1)`` curvature (and those of the next width, so a width that is reached costs
   no extra pass); a step that does not decrease ``F_mu`` is halved (another pass).
3. *Sort.* One pass collects the rows within ``width * mu`` of their margin, at least the
   :data:`MIN_WORK` nearest (the working set ``W``), and the folded term
   ``sum_E s_i y_i x_i`` of the rows fixed at their bound.
4. *Rounds.* The restricted QP over ``W`` (the formulation's own model,
   :func:`~qpsvm.formulations.binary_models.rows_primal_model`) is solved on the client; one
   pass checks every row's status and, in the same read, sums the certificate. Violated rows
   join ``W`` (at most ``max(MIN_ADD, |W|)``, the most violated); when none is violated the
   certificate of that pass (compensated sums with rigorous error bounds,
   :mod:`qpsvm.verify.rigorous`) proves the gap, or the solve fails with
   :class:`~qpsvm.exceptions.UncertifiedSolutionError`.

Nothing ``n``-sized is gathered: ``alpha`` and ``xi`` of the answer are Dask arrays, computed
only when asked for.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any

import dask
import numpy as np

from qpsvm._numerics import fsum
from qpsvm.dask.blocks import NewtonParts, RoundParts, Rows, Sort
from qpsvm.dask.passes import DaskData
from qpsvm.exceptions import InaccurateSolutionError, InvalidInputError, UncertifiedSolutionError
from qpsvm.formulations.binary_models import rows_primal_model
from qpsvm.solution import History, Solution
from qpsvm.solvers.backends import backend_order, solve_model
from qpsvm.solvers.warm_start import smoothed_newton
from qpsvm.solvers.working_set import MIN_ADD, STATUS_TOL, WIDTH
from qpsvm.verify.binary import rebalance
from qpsvm.verify.certificate import DEFAULT_TOL, Certificate
from qpsvm.verify.rigorous import (
    combine_dual_sums,
    dual_lower_value,
    intercept_bound_from,
    primal_upper,
    upper_sum,
)

__all__ = [
    "COARSE_STEPS",
    "FINAL_STEPS",
    "MIN_WORK",
    "SAMPLE_ROWS",
    "START_PASSES",
    "START_WIDTHS",
    "STEPS",
    "certify_blocks",
    "solve_dask_working_set",
]

logger = logging.getLogger("qpsvm")

#: Rows of the in-memory sample the start begins from.
SAMPLE_ROWS = 100_000
#: Smoothing widths of the start on all rows, relative to ``max(1, max m_i)``.
START_WIDTHS = (1e-1, 1e-2, 1e-3)
#: Newton steps at each width before the last (they only need to bring the iterate near), and
#: at the last: the working set (at least :data:`MIN_WORK` rows) absorbs what is left.
COARSE_STEPS = 2
FINAL_STEPS = 3
#: Step lengths every pass of the start evaluates along its Newton direction (0: stay).
STEPS = (1.0, 0.5, 0.25, 0.1, 0.03, 0.01, 0.003, 0.0)
#: Passes the start may make at most.
START_PASSES = 10
#: Rows the working set starts with at least (the nearest their margin): one restricted QP of
#: this size costs a few seconds on the client, a round less costs a pass over all rows.
MIN_WORK = 30_000
#: Times the sort band may be widened to make the working set balance the fixed rows.
SORT_TRIES = 6


def _strided(X: Any, y: Any, s: Any, m: Any, step: int) -> tuple:
    """Every ``step``-th row of a raw block (runs on a worker: only the sample travels)."""
    return tuple(None if v is None else np.asarray(v)[::step] for v in (X, y, s, m))


def read_sample(data: DaskData, rows: int) -> tuple[np.ndarray, ...]:
    """A strided sample of at most about ``rows`` rows from evenly spaced blocks; sets
    ``data.classes`` (from the sample, or from a pass over ``y`` if the sample lacks one).

    Raises
    ------
    InvalidInputError
        ``y`` does not hold exactly two labels.
    """
    sizes = np.diff(data.offsets)
    k = min(data.n_blocks, max(1, math.ceil(rows / max(1.0, float(np.mean(sizes))))))
    which = np.unique(np.linspace(0, data.n_blocks - 1, k).round().astype(int))
    step = max(1, math.ceil(int(sizes[which].sum()) / rows))
    sample = dask.compute(
        *[dask.delayed(_strided)(*raw, step) for raw in data.raw_blocks(list(which))]
    )
    X, y, s, m = (
        None if sample[0][j] is None else np.concatenate([p[j] for p in sample]) for j in range(4)
    )
    classes = np.unique(y)
    if classes.size < 2:
        import dask.array as da

        classes = np.asarray(da.unique(data.y).compute())
        data.log.kinds.append("labels")
        data.log.seconds.append(0.0)
    if classes.size != 2:
        raise InvalidInputError(f"y must hold exactly two labels; found {classes.size}.")
    data.classes = classes
    return np.asarray(X, dtype=np.float64), np.where(y == classes[1], 1.0, -1.0), s, m


def sample_start(data: DaskData, rows: int) -> tuple[np.ndarray, float, float]:
    """``(w, b)`` of the smoothed Newton start on a sample (:func:`read_sample`) at
    ``C n / n_sample``, and the sample's largest margin."""
    from qpsvm.formulations.binary import SoftMarginPrimal

    X, y, s, m = read_sample(data, rows)
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


@dataclass
class WorkingRows:
    """The working set on the client: its rows (sorted by index) and the folded term
    ``(sum_E s_i y_i x_i, sum_E s_i y_i)`` of the rows fixed at their bound."""

    rows: Rows
    folded: np.ndarray
    folded_b: float

    def balanced(self, C: float, fit_intercept: bool) -> bool:
        """Whether ``0 <= alpha_W <= C s_W`` can meet the balance ``sum_W alpha_i y_i =
        -C sum_E s_i y_i`` (always, without an intercept, if ``W`` is not empty)."""
        if not len(self.rows):
            return False
        if not fit_intercept:
            return True
        u, y = C * self.rows.sample_weight, self.rows.y
        target = -C * self.folded_b
        return -float(np.sum(u[y < 0])) <= target <= float(np.sum(u[y > 0]))

    def grow(self, found: Rows, w: np.ndarray, b: float) -> int:
        """Add the violated rows ``found`` (at most ``max(MIN_ADD, |W|)``, the most violated);
        those that were fixed at their bound (``r_i > 0`` at the candidate) leave the folded
        term. Returns how many joined."""
        cap = max(MIN_ADD, len(self.rows))
        if len(found) > cap:
            found = found.subset(np.argpartition(-found.score, cap)[:cap])
        fixed = found.y * (found.X @ w + b) - found.margin > 0.0
        coef = np.where(fixed, found.sample_weight * found.y, 0.0)
        self.folded = self.folded - found.X.T @ coef
        self.folded_b -= float(np.sum(coef))
        merged = Rows.concat([self.rows, found])
        self.rows = merged.subset(np.argsort(merged.index, kind="stable"))
        return len(found)


def balanced_alpha(alpha: np.ndarray, ws: WorkingRows, data: DaskData) -> np.ndarray:
    """The restricted QP's multipliers clipped into their box and, with an intercept, shifted
    on their free coordinates so that ``sum_W alpha_i y_i + C sum_E s_i y_i = 0`` holds to
    round-off (:func:`~qpsvm.verify.binary.rebalance`): the certificate's balance term costs
    ``B |sum_i alpha_i y_i|`` with ``B`` in the thousands on large data."""
    u = data.C * ws.rows.sample_weight
    a = np.clip(alpha, 0.0, u)
    if not data.fit_intercept:
        return a
    excess = fsum(np.append(a * ws.rows.y, data.C * ws.folded_b))
    out = rebalance(a, u, ws.rows.y, excess)
    return a if out is None else out


def sort_working_set(data: DaskData, start: Start, width: float) -> tuple[Sort, WorkingRows, float]:
    """The sort pass at the start, widened (times 4) until the working set can balance the
    fixed rows; returns the sort, the working set and the band used."""
    sort = Sort(start.w, start.b)
    band = width * start.band
    for _ in range(SORT_TRIES):
        parts = data.sort(sort, band, MIN_WORK)
        ws = WorkingRows(parts.work, parts.folded, parts.folded_b)
        if ws.balanced(data.C, data.fit_intercept):
            return sort, ws, band
        band *= 4.0
    raise InaccurateSolutionError(
        f"the working set cannot balance the rows fixed at their bound even with a band of "
        f"{band:.3g}; standardise the features, or raise the start's passes."
    )


def certify_blocks(
    data: DaskData,
    parts: list[RoundParts],
    w: np.ndarray,
    sort: Sort,
    work: np.ndarray,
    alpha_work: np.ndarray,
    tol: float,
) -> Certificate:
    """The rigorous certificate of ``(w, b)`` from the blocks' sums of one pass
    (:func:`~qpsvm.dask.blocks.round_parts`).

    ``P`` is bounded above by :func:`~qpsvm.verify.rigorous.primal_upper` from the blocks'
    slack costs (combined by an upper sum), ``D`` below by
    :func:`~qpsvm.verify.rigorous.dual_lower_value` from their dual sums (combined as
    compensated ``hi + lo`` sums with error bounds), at the multipliers of the statuses:
    ``alpha_work`` on the working set ``work``, ``C s_i`` on fixed rows, 0 elsewhere, clipped
    into the exact box. The certificate's ``alpha`` is that point as a Dask array.
    """
    P = primal_upper(
        upper_sum(w * w),
        data.C,
        upper_sum(np.array([p.cost for p in parts])),
        max(p.worst for p in parts),
    )
    sums = combine_dual_sums([p.dual for p in parts])
    bound = None
    if data.fit_intercept:
        max_margin = max(p.max_margin for p in parts)
        bound = intercept_bound_from(max_margin, max(p.max_row_norm for p in parts), P)
    hi, lo, _ = sums.expansion
    balance = abs(fsum(np.array([p.balance for p in parts]))) if data.fit_intercept else 0.0
    return Certificate(
        primal_objective=P,
        dual_objective=dual_lower_value(sums, bound),
        primal_infeasibility=0.0,
        dual_infeasibility=max(0.0, max(p.box for p in parts), balance),
        complementarity=max(p.complementarity for p in parts),
        stationarity=float(np.linalg.norm(w - (hi + lo))),
        tol=tol,
        formulation="SoftMarginPrimal",
        alpha=data.alpha(sort, work, alpha_work),
        rigorous=True,
    )


def solve_dask_working_set(
    data: DaskData,
    solver: str | None = None,
    *,
    tol: float = DEFAULT_TOL,
    max_rounds: int = 50,
    width: float = WIDTH,
    sample_rows: int = SAMPLE_ROWS,
    start_passes: int = START_PASSES,
    **options: Any,
) -> Solution:
    """Exact, certified optimum of a linear soft-margin SVM on Dask data (see the module).

    Parameters
    ----------
    data : DaskData
    solver : str, optional
        CVXPY solver of the restricted QPs (default Clarabel, then OSQP).
    tol : float, default=1e-9
        Relative gap the answer is certified at.
    max_rounds : int, default=50
        Restricted solves (and checking passes) at most.
    width : float, default=8
        Rows within ``width`` times the start's smoothing width of their margin start in ``W``.
    sample_rows : int, default=100000
        Rows of the in-memory sample the start begins from.
    start_passes : int, default=10
        Passes of the Newton start over all rows at most.
    **options
        Backend settings.

    Returns
    -------
    Solution
        ``w`` and ``b`` in memory, ``alpha`` and ``xi`` as Dask arrays; ``info`` holds the
        passes (``passes``, ``pass_kinds``, ``pass_seconds``, ``bytes_per_pass``), rounds and
        the working-set size, ``history`` the objective after each round.

    Raises
    ------
    InaccurateSolutionError
        The working set still changed after ``max_rounds`` rounds.
    UncertifiedSolutionError
        No violated status is left but the certificate does not reach ``tol``.
    """
    began = time.perf_counter()
    order = backend_order(solver)
    w, b, scale = sample_start(data, sample_rows)
    start = newton_start(data, w, b, scale, start_passes)
    start_passes_made = len(data.log)
    sort, ws, band = sort_working_set(data, start, width)
    eps = STATUS_TOL * max(1.0, start.max_margin)
    history: list[tuple[int, float, float]] = []
    backend_time = 0.0
    for rnd in range(1, max_rounds + 1):
        rows = ws.rows
        model = rows_primal_model(
            rows.X * rows.y[:, None],
            rows.y,
            rows.margin,
            rows.sample_weight,
            data.C,
            data.fit_intercept,
            (ws.folded, ws.folded_b),
        )
        result = solve_model(model, order, options, True)
        backend_time += result.solve_time
        w = np.asarray(model.variables["w"].value, dtype=np.float64)
        b = float(model.variables["b"].value) if data.fit_intercept else 0.0
        alpha_work = balanced_alpha(
            np.asarray(model.constraints["margin"].dual_value, dtype=np.float64).ravel(),
            ws,
            data,
        )
        parts = data.check(sort, rows.index, alpha_work, w, b, eps, max(MIN_ADD, len(rows)))
        objective = 0.5 * float(w @ w) + data.C * fsum(np.array([p.slack_sum for p in parts]))
        history.append((rnd, objective, time.perf_counter() - began))
        violated = sum(p.n_violated for p in parts)
        logger.info(
            "dask working set round %d: |W| %d, violated %d (max %.3g), objective %.12g",
            rnd,
            len(rows),
            violated,
            max(p.max_violation for p in parts),
            objective,
        )
        if not violated:
            break
        ws.grow(Rows.concat([p.violators for p in parts]), w, b)
    else:
        raise InaccurateSolutionError(
            f"the working set still changed after max_rounds={max_rounds} rounds "
            f"(|W| = {len(ws.rows)}); raise max_rounds."
        )
    cert = certify_blocks(data, parts, w, sort, ws.rows.index, alpha_work, tol)
    if not cert.passed:
        raise UncertifiedSolutionError(
            f"the working-set optimum over Dask blocks is certified only to a relative gap of "
            f"{cert.relative_gap:.2e} > tol {tol:.0e}. Standardise the features, or pass a "
            "larger tol."
        )
    it, obj, tm = (np.array(v) for v in zip(*history, strict=True))
    return Solution(
        w=w,
        b=b,
        xi=data.slack(w, b),
        alpha=cert.alpha,
        objective=float(history[-1][1]),
        status="optimal",
        solver=result.solver,
        solve_time=time.perf_counter() - began,
        n_iter=len(history),
        method="working_set",
        history=History(iteration=it.astype(int), objective=obj, time=tm),
        certificate=cert,
        info={
            "rounds": len(history),
            "passes": len(data.log),
            "start_passes": start_passes_made,
            "pass_kinds": list(data.log.kinds),
            "pass_seconds": list(data.log.seconds),
            "bytes_per_pass": data.bytes_per_pass,
            "blocks": data.n_blocks,
            "working": len(ws.rows),
            "band": band,
            "backend_time": backend_time,
            "sort": sort,
            "working_index": ws.rows.index,
            "working_alpha": alpha_work,
        },
    )

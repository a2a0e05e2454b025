r"""Exact linear SVMs beyond one machine's memory: the working set over Dask row blocks.

The in-memory engine (:mod:`qpsvm.solvers.working_set`) splits the work the way a cluster
needs: the violator search and the certificate are passes over the rows (a map, then sums), the
restricted QP is small. Here each of those passes is one read of every row block by Dask
(:mod:`qpsvm.dask.passes`), and the client keeps only the weights, the working set and one
record per block. A solve is the same named steps for every family (a *family* supplies the
first two and the restricted problem: :class:`~qpsvm.dask.binary.BinaryFamily`,
:class:`~qpsvm.dask.multiclass.MulticlassFamily`, :class:`~qpsvm.dask.ranking.RankFamily`):

1. *Begin* (``family.begin``): a start read from a sample of the blocks (and, for the binary
   SVM, Newton passes over all rows), then one *sort* pass that collects the working set ``W``
   (the rows nearest a change of status, at least :data:`MIN_WORK` constraints) and the sums
   of the rows fixed at their bound.
2. *Rounds* (:func:`run_rounds`): the restricted problem over ``W``, with the rows fixed at
   their bound as a few aggregated rows (:mod:`qpsvm.dask.fold`), is solved on the client by
   qpsvm's in-memory working set and certified there (at :data:`RESTRICTED_SHARE` of ``tol``,
   its certificate's multipliers are the rounds'); one pass checks every row's status and, in
   the same read, sums the certificate. Violated rows join ``W`` (at most ``max(MIN_ADD,
   |W|)``, the most violated).
3. *Certificate* (:func:`certify_blocks`, :func:`certified`): when no status is violated, the
   sums of that last pass (compensated, with rigorous error bounds,
   :mod:`qpsvm.verify.rigorous`) prove the gap, or the solve fails with
   :class:`~qpsvm.exceptions.UncertifiedSolutionError`.
4. *Answer* (:func:`dask_solution`): the weights in memory; ``alpha`` and ``xi`` Dask arrays,
   computed only when asked for. Nothing ``n``-sized is gathered.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

import dask
import numpy as np

from qpsvm._numerics import fsum
from qpsvm.dask.blocks import RoundParts, Rows, Sort
from qpsvm.dask.fold import Fold
from qpsvm.dask.passes import DaskData
from qpsvm.exceptions import InaccurateSolutionError, InvalidInputError
from qpsvm.solution import History, Solution
from qpsvm.solvers.working_set import MIN_ADD, WIDTH
from qpsvm.verify.certificate import (
    DEFAULT_TOL,
    Certificate,
    evaluation_allowance,
    uncertified_error,
)
from qpsvm.verify.rigorous import (
    combine_dual_sums,
    dual_estimate,
    dual_lower_value,
    intercept_bound_from,
    primal_upper,
    upper_sum,
)

__all__ = [
    "MIN_WORK",
    "RESTRICTED_SHARE",
    "SAMPLE_ROWS",
    "START_PASSES",
    "Begin",
    "Family",
    "Restricted",
    "Rounds",
    "WorkingRows",
    "begin_solve",
    "certified",
    "certify_blocks",
    "dask_solution",
    "float_objective",
    "pass_info",
    "read_sample",
    "run_rounds",
    "solve_dask_working_set",
    "stored_working_set",
]

logger = logging.getLogger("qpsvm")

#: Rows of the in-memory sample the start begins from.
SAMPLE_ROWS = 100_000
#: Passes of the binary start over all rows at most.
START_PASSES = 10
#: The restricted problem is certified on the client at this fraction of the solve's ``tol``:
#: the rounds take its certificate's multipliers, and the certificate of all rows at them has
#: the restricted gap plus the rounding of the blocks' sums.
RESTRICTED_SHARE = 0.1
#: Constraints the working set starts with at least (the rows nearest a change of status): one
#: restricted QP of this size costs a few seconds on the client, a round less costs a pass over
#: all rows.
MIN_WORK = 30_000


def begin_solve(data: Any, method: str | None) -> None:
    """Check that ``method`` is the working set (the only method for Dask data) and clear the
    log of passes of any earlier solve of ``data``.

    Raises
    ------
    InvalidInputError
        Another method is asked for.
    """
    if method not in (None, "working_set"):
        raise InvalidInputError(
            f"method={method!r} is not available with Dask data; use 'working_set'."
        )
    data.log.kinds.clear()
    data.log.seconds.clear()


def _strided(X: Any, y: Any, s: Any, m: Any, step: int) -> tuple:
    """Every ``step``-th row of a raw block (runs on a worker: only the sample travels)."""
    return tuple(None if v is None else np.asarray(v)[::step] for v in (X, y, s, m))


def read_sample(data: DaskData, rows: int) -> tuple[Any, ...]:
    """A strided sample ``(X, y, sample_weight, margin)`` of at most about ``rows`` rows from
    evenly spaced blocks (raw labels; ``None`` for a vector not given)."""
    sizes = np.diff(data.offsets)
    k = min(data.n_blocks, max(1, math.ceil(rows / max(1.0, float(np.mean(sizes))))))
    which = np.unique(np.linspace(0, data.n_blocks - 1, k).round().astype(int))
    step = max(1, math.ceil(int(sizes[which].sum()) / rows))
    sample = dask.compute(
        *[dask.delayed(_strided)(*raw, step) for raw in data.raw_blocks(list(which))]
    )
    return tuple(
        None if sample[0][j] is None else np.concatenate([p[j] for p in sample]) for j in range(4)
    )


@dataclass
class WorkingRows:
    """The working set on the client: its rows (sorted by index) and the sums of the rows
    fixed at their bound, the restricted problem's aggregated rows
    (:class:`~qpsvm.dask.fold.Fold`)."""

    rows: Rows
    fold: Fold

    def grow(self, found: Rows, without: Callable[[Fold, Rows], Fold]) -> int:
        """Add the violated rows ``found`` (at most ``max(MIN_ADD, |W|)``, the most violated);
        ``without(fold, rows)`` is the fixed rows' sums without those of ``rows`` that were
        fixed at their bound (they leave for ``W``). Returns how many joined."""
        cap = max(MIN_ADD, len(self.rows))
        if len(found) > cap:
            found = found.subset(np.argpartition(-found.score, cap)[:cap])
        self.fold = without(self.fold, found)
        merged = Rows.concat([self.rows, found])
        self.rows = merged.subset(np.argsort(merged.index, kind="stable"))
        return len(found)


@dataclass
class Begin:
    """Where the rounds begin: the sort point (the statuses of the rows outside ``W``), the
    working set, the band the sort used, the tolerance of a violated status, and the passes
    the start made."""

    sort: Sort
    ws: WorkingRows
    band: float
    eps: float
    start_passes: int


class Family(Protocol):
    """A problem's steps of the working set over row blocks (its data is a
    :class:`~qpsvm.dask.passes.DaskData` whose blocks compute its checks and sums)."""

    formulation: str

    def begin(
        self, data: DaskData, width: float, sample_rows: int, start_passes: int, min_work: int
    ) -> Begin:
        """The start, the sort pass and the first working set (at least ``min_work``
        constraints)."""

    def restricted(
        self,
        data: DaskData,
        ws: WorkingRows,
        solver: str | None,
        options: dict[str, Any],
        tol: float,
    ) -> Restricted:
        """The restricted problem over ``W`` with the fixed rows folded in, solved on the
        client and certified there at ``tol``."""

    def without(self, data: DaskData, fold: Fold, found: Rows, point: Sort, sort: Sort) -> Fold:
        """The fixed rows' sums ``fold`` without the violated rows ``found`` that were fixed
        at their bound."""


@dataclass
class Restricted:
    """A restricted optimum: the point (and, in its ``share``, the multipliers of the fixed
    rows as fractions of their bound), the multipliers of ``W``, the solver that found it and
    its seconds."""

    point: Sort
    alpha_work: np.ndarray
    solver: str
    seconds: float


@dataclass
class Rounds:
    """The rounds' outcome: the last restricted optimum, its multipliers on ``W``, the blocks'
    records of its check, the objective after each round, the restricted solves' seconds and
    solver, and the statuses of the check (the sort with the fixed rows' share of their bound
    at the restricted optimum)."""

    point: Sort
    alpha_work: np.ndarray
    parts: list[RoundParts]
    history: list[tuple[int, float, float]]
    backend_time: float
    solver: str
    sort: Sort


def run_rounds(
    data: DaskData,
    family: Family,
    begun: Begin,
    solver: str | None,
    options: dict[str, Any],
    max_rounds: int,
    began: float,
    tol: float = DEFAULT_TOL,
) -> Rounds:
    """Restricted problem on the client, then one checking pass, until no status is violated.

    Raises
    ------
    InaccurateSolutionError
        The working set still changed after ``max_rounds`` rounds.
    """
    ws, history, backend_time = begun.ws, [], 0.0
    for rnd in range(1, max_rounds + 1):
        solved = family.restricted(data, ws, solver, options, RESTRICTED_SHARE * tol)
        backend_time += solved.seconds
        point, alpha_work = solved.point, solved.alpha_work
        sort = replace(begun.sort, share=point.share)
        cap = max(MIN_ADD, len(ws.rows))
        parts = data.check(sort, ws.rows.index, alpha_work, point.w, point.b, begun.eps, cap)
        objective = float_objective(point.w, data.C, parts)
        history.append((rnd, objective, time.perf_counter() - began))
        violated = sum(p.n_violated for p in parts)
        logger.info(
            "dask working set round %d: |W| %d, violated %d (max %.3g), objective %.12g",
            rnd,
            len(ws.rows),
            violated,
            max(p.max_violation for p in parts),
            objective,
        )
        if not violated:
            return Rounds(point, alpha_work, parts, history, backend_time, solved.solver, sort)
        found = Rows.concat([p.violators for p in parts])
        ws.grow(
            found,
            lambda fold, rows, at=point: family.without(data, fold, rows, at, begun.sort),
        )
    raise InaccurateSolutionError(
        f"the working set still changed after max_rounds={max_rounds} rounds "
        f"(|W| = {len(ws.rows)}); raise max_rounds."
    )


def float_objective(w: np.ndarray, C: float, parts: list[RoundParts]) -> float:
    """``P = 1/2 ||w||^2 + C sum_i s_i xi_i`` in floating point from the blocks' plain slack
    sums (no bound on its rounding: progress reports and the rounding floor)."""
    return 0.5 * fsum(w * w) + C * fsum(np.array([p.slack_sum for p in parts]))


def certify_blocks(
    data: DaskData,
    parts: list[RoundParts],
    w: np.ndarray,
    sort: Sort,
    work: np.ndarray,
    alpha_work: np.ndarray,
    tol: float,
    formulation: str = "SoftMarginPrimal",
) -> Certificate:
    """The rigorous certificate of ``w`` (and ``b``) from the blocks' sums of one pass
    (:func:`~qpsvm.dask.blocks.round_parts`, :func:`~qpsvm.dask.class_blocks.class_round_parts`).

    ``P`` is bounded above by :func:`~qpsvm.verify.rigorous.primal_upper` from the blocks'
    slack costs (combined by an upper sum), ``D`` below by
    :func:`~qpsvm.verify.rigorous.dual_lower_value` from their dual sums (combined as
    compensated ``hi + lo`` sums with error bounds), at the multipliers of the statuses:
    ``alpha_work`` on the working set ``work``, ``C s_i`` on fixed constraints, 0 elsewhere,
    made exactly feasible. With a free intercept the balance residual costs ``B |sum_i alpha_i
    y_i|`` (:func:`~qpsvm.verify.rigorous.intercept_bound_from`). The certificate's ``alpha``
    is that point as a Dask array. Its rounding floor
    (:func:`~qpsvm.verify.certificate.evaluation_allowance`) measures both bounds against the
    same point's objectives in floating point: ``P`` from the blocks' plain slack sums, ``D``
    from the dual sums without their error bounds
    (:func:`~qpsvm.verify.rigorous.dual_estimate`).
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
    D = dual_lower_value(sums, bound)
    estimates = float_objective(w, data.C, parts), dual_estimate(sums, bound)
    floor = evaluation_allowance(P, D, *estimates)
    return Certificate(
        primal_objective=P,
        dual_objective=D,
        primal_infeasibility=0.0,
        dual_infeasibility=max(0.0, max(p.box for p in parts), balance),
        complementarity=max(p.complementarity for p in parts),
        stationarity=float(np.linalg.norm(w - (hi + lo))),
        tol=tol,
        formulation=formulation,
        alpha=data.alpha(sort, work, alpha_work),
        rigorous=True,
        rounding_floor=floor,
    )


def certified(cert: Certificate, tol: float) -> Certificate:
    """``cert`` if it passed.

    Raises
    ------
    UncertifiedSolutionError
        No violated status is left but the certificate does not reach ``tol``.
    """
    if not cert.passed:
        raise uncertified_error(
            cert,
            f"the working-set optimum over Dask blocks is certified only to a relative gap of "
            f"{cert.relative_gap:.2e} > tol {tol:.0e}. Standardise the features, or pass a "
            "larger tol.",
            exact=False,
        )
    return cert


def stored_working_set(candidate: Any, alpha_shape: tuple[int, ...]) -> tuple:
    """The sort, working-set indices and multipliers a solution carries in its ``info``; for
    a bare point none (its own statuses: sort at the point, an empty ``W``)."""
    info = getattr(candidate, "info", None) or {}
    if "sort" in info:
        return info["sort"], info["working_index"], info["working_alpha"]
    return None, np.zeros(0, dtype=np.int64), np.zeros((0, *alpha_shape))


def pass_info(data: DaskData) -> dict[str, Any]:
    """The passes a solve made: how many, their kinds and seconds, the bytes each reads and
    the blocks."""
    return {
        "passes": len(data.log),
        "pass_kinds": list(data.log.kinds),
        "pass_seconds": list(data.log.seconds),
        "bytes_per_pass": data.bytes_per_pass,
        "blocks": data.n_blocks,
    }


def dask_solution(
    data: DaskData, begun: Begin, rounds: Rounds, cert: Certificate, began: float
) -> Solution:
    """The :class:`~qpsvm.Solution` of a certified solve: weights in memory, ``alpha`` and
    ``xi`` Dask arrays, and in ``info`` the passes (``passes``, ``pass_kinds``,
    ``pass_seconds``, ``bytes_per_pass``), rounds, the working set and what :meth:`certify`
    needs to check the answer again (``sort``, ``working_index``, ``working_alpha``)."""
    point, history = rounds.point, rounds.history
    it, obj, tm = (np.array(v) for v in zip(*history, strict=True))
    return Solution(
        w=point.w,
        b=point.b,
        xi=data.slack(point.w, point.b),
        alpha=cert.alpha,
        objective=float(history[-1][1]),
        status="optimal",
        solver=rounds.solver,
        solve_time=time.perf_counter() - began,
        n_iter=len(history),
        method="working_set",
        history=History(iteration=it.astype(int), objective=obj, time=tm),
        certificate=cert,
        info={
            "rounds": len(history),
            **pass_info(data),
            "start_passes": begun.start_passes,
            "working": len(begun.ws.rows),
            "band": begun.band,
            "backend_time": rounds.backend_time,
            "sort": rounds.sort,
            "working_index": begun.ws.rows.index,
            "working_alpha": rounds.alpha_work,
        },
    )


def solve_dask_working_set(
    data: DaskData,
    family: Family,
    solver: str | None = None,
    *,
    tol: float = DEFAULT_TOL,
    max_rounds: int = 50,
    width: float = WIDTH,
    sample_rows: int = SAMPLE_ROWS,
    start_passes: int = START_PASSES,
    min_work: int = MIN_WORK,
    **options: Any,
) -> Solution:
    """Exact, certified optimum of ``family``'s problem on Dask data (see the module).

    Parameters
    ----------
    data : DaskData
    family : Family
        The problem's steps (:class:`~qpsvm.dask.binary.BinaryFamily`,
        :class:`~qpsvm.dask.multiclass.MulticlassFamily`,
        :class:`~qpsvm.dask.ranking.RankFamily`).
    solver : str, optional
        CVXPY solver of the in-memory working set's restricted QPs (default Clarabel, then
        OSQP).
    tol : float, default=1e-9
        Relative gap the answer is certified at.
    max_rounds : int, default=50
        Restricted solves (and checking passes) at most.
    width : float, default=8
        Rows within ``width`` times the start's error band of a change of status start in
        ``W``.
    sample_rows : int, default=100000
        Rows of the in-memory sample the start begins from.
    start_passes : int, default=10
        Passes of the binary Newton start over all rows at most.
    min_work : int, default=30000
        Constraints the working set starts with at least (:data:`MIN_WORK`).
    **options
        Backend settings.

    Returns
    -------
    Solution
        See :func:`dask_solution`; ``history`` holds the objective after each round.

    Raises
    ------
    InaccurateSolutionError
        The working set still changed after ``max_rounds`` rounds.
    UncertifiedSolutionError
        No violated status is left but the certificate does not reach ``tol``.
    """
    began = time.perf_counter()
    begun = family.begin(data, width, sample_rows, start_passes, min_work)
    rounds = run_rounds(data, family, begun, solver, options, max_rounds, began, tol)
    point, ws = rounds.point, begun.ws
    cert = certify_blocks(
        data,
        rounds.parts,
        point.w,
        rounds.sort,
        ws.rows.index,
        rounds.alpha_work,
        tol,
        family.formulation,
    )
    return dask_solution(data, begun, rounds, certified(cert, tol), began)

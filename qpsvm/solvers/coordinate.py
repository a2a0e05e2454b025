r"""Dual coordinate descent for linear SVMs, run until the certificate proves the gap.

The L2-penalised hinge and squared hinge losses, without an intercept or with liblinear's
regularised one, have a dual with a box and no coupling constraint, which dual coordinate
descent solves one multiplier at a time in ``O(nnz(x_i))`` (Hsieh, Chang, Lin, Keerthi and
Sundararajan, "A dual coordinate descent method for large-scale linear SVM", ICML 2008;
:mod:`qpsvm.verify.ascent`): on sparse data an epoch costs a pass over the nonzeros and no
dense matrix is formed. liblinear stops at a loose projected-gradient tolerance (0.1); here the
tolerance is tightened (warm started) until the floating-point duality gap is far below the
certificate's ``tol``, and the point is then certified (:mod:`qpsvm.verify`).

A free intercept couples the multipliers (``sum_i sigma_i u_i = 0``). With ``b`` held fixed the
problem is the one without intercept on shifted margins ``m_i - sigma_i b``; its optimal value
``V(b)`` is convex with derivative ``V'(b) = -g(b)``, ``g(b) = sum_i sigma_i u_i(b)``
(nonincreasing in ``b``). The outer search finds the root of ``g`` by the secant method,
bracketed and safeguarded by the Illinois rule, each inner problem warm started from the last
multipliers. At the root the multipliers are balanced up to round-off, which the certificate's
feasible point removes (shifting the free multipliers), and ``P(w, b) - D`` closes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from qpsvm._validation import check_int, check_tol
from qpsvm.contract import BinaryProblem, CompositeProblem, check_method, part
from qpsvm.exceptions import InvalidInputError, RoundingFloorError, UncertifiedSolutionError
from qpsvm.solution import Candidate, Solution
from qpsvm.solvers.finish import finish
from qpsvm.verify.ascent import (
    SOLVER_UNSHRINK_EVERY,
    CoordinateData,
    ascend,
    balanced_ascent,
    first_tolerance,
    moves_intercept,
    regularised_ascent,
)
from qpsvm.verify.certificate import DEFAULT_TOL, GOOD_ENOUGH

__all__ = ["CoordinateProblem", "ascent_point", "binary_problem", "composed_problem", "solve_dcd"]

logger = logging.getLogger("qpsvm")

#: What the point is and how to fix a failure, for the error of :func:`finish`.
WHAT = "the dual coordinate descent point"
ADVICE = "Raise max_epochs, or use method='working_set' or 'qp'."


@dataclass
class CoordinateProblem:
    """What dual coordinate descent needs of a formulation: the ascent's data, whether a free
    intercept couples the multipliers, and the map ``u -> `` a balanced point the certificate
    accepts (the certifier's own feasible point, identity without coupling); ``keep`` takes the
    rows the returned expansion was computed over and what it was made of
    (:meth:`~qpsvm.verify.ascent.CoordinateData.enclosed_expansion`), for the certificate of
    the same multipliers (a formulation's
    :meth:`~qpsvm.formulations.kernel_rows.KernelRows.keep_expansion`; ``None``: not kept)."""

    data: CoordinateData
    coupled: bool
    balance: Callable[[np.ndarray], np.ndarray]
    keep: Callable[[Any, tuple], None] | None = None


def binary_problem(f: BinaryProblem) -> CoordinateProblem:
    """The hinge-loss binary SVM (``SoftMarginPrimal``/``SoftMarginDual``, linear kernel):
    ``p = m``, ``d = 0``, ``hi = C s``; a free intercept when ``fit_intercept``."""
    from qpsvm.verify.binary import coordinate_data, feasible_near

    keep = getattr(f, "keep_expansion", None)
    return CoordinateProblem(
        coordinate_data(f), f.fit_intercept, lambda u: feasible_near(f, u), keep
    )


def composed_problem(f: CompositeProblem) -> CoordinateProblem:
    """A composed classifier with the L2 penalty and a hinge or squared hinge loss: the loss's
    conjugate gives ``p, d, hi`` (:meth:`loss_conjugate`); a regularised intercept is the
    feature ``B``, a free one couples the multipliers."""
    from qpsvm.verify.fenchel import project_coupled

    c = f.loss_conjugate()
    bias = f.intercept.scaling if f.intercept.regularized else 0.0
    data = CoordinateData(f.X, f.sigma.astype(np.float64), c.p, c.d, c.hi, bias)
    # as the hinge's: the touched columns shared with the certificate, which takes the
    # solver's expansion of the multipliers it certifies (:func:`fenchel._Dual.enclosure`)
    data.columns = getattr(f, "touched_columns", None)
    keep = getattr(f, "keep_expansion", None)
    coupled = bool(f.intercept.coupled)
    return CoordinateProblem(
        data,
        coupled,
        lambda u: project_coupled(np.clip(u, c.lo, c.hi), c.lo, c.hi, f.sigma),
        keep,
    )


def _weights(v: np.ndarray, touched: np.ndarray | None, d: int) -> np.ndarray:
    """The weights ``w`` of the ascent's ``v`` over the columns ``touched`` (all: ``None``),
    exact zeros at the others."""
    if touched is None:
        return v[:-1]
    w = np.zeros(d)
    w[touched] = v[:-1]
    return w


def solve_dcd(
    f: BinaryProblem | CompositeProblem,
    solver: str | None = None,
    *,
    tol: float = DEFAULT_TOL,
    max_epochs: int = 100_000,
    seed: int = 0,
) -> Solution:
    """Solve a linear SVM by dual coordinate descent, certified at ``tol``.

    Parameters
    ----------
    f : Problem
        A formulation naming a ``coordinate_problem`` (the hinge binary SVMs and the composed
        classifiers with the L2 penalty and a hinge or squared hinge loss), linear kernel.
    solver : None
        Refused: the method uses no QP backend.
    tol : float, default=1e-9
        Relative gap the answer is certified at.
    max_epochs : int, default=100000
        Passes over the data at most.
    seed : int, default=0
        Seed of the random order of the coordinates.

    Raises
    ------
    UncertifiedSolutionError
        The epochs ran out before the gap was proven.
    """
    check_method(f, "dcd")
    tol = check_tol(tol)
    max_epochs = check_int(max_epochs, "max_epochs", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    if not f.linear:
        raise InvalidInputError(
            "method='dcd' solves linear SVMs (it updates w explicitly); use method='smo' or "
            "'working_set' for a nonlinear kernel."
        )
    start = time.perf_counter()
    problem = part(f, "coordinate_problem", "dcd")(f)
    cand, epochs = ascent_point(problem, tol, max_epochs, seed)
    if problem.coupled:
        try:
            cand, cert = finish(f, cand, tol, what=WHAT, advice=ADVICE, refine=False, eager=False)
        except RoundingFloorError:
            raise  # no other method certifies below the floor
        except UncertifiedSolutionError as error:
            # the intercept's search stalls where g(b) jumps over 0 and the ascent is slow
            # (hinge loss, most multipliers at a bound): the exact method of the formulation
            fallback = "working_set" if "working_set" in f.methods else "qp"
            logger.warning("dcd: %s; solving by method=%r instead.", error, fallback)
            return f.solve(method=fallback, tol=tol)
    else:
        cand, cert = finish(f, cand, tol, what=WHAT, advice=ADVICE, eager=False)
    return f.solution_from(
        cand,
        cert,
        status="optimal",
        solver="dcd",
        n_iter=epochs,
        solve_time=time.perf_counter() - start,
    )


def ascent_point(
    problem: CoordinateProblem, tol: float = DEFAULT_TOL, max_epochs: int = 100_000, seed: int = 0
) -> tuple[Candidate, int]:
    """The point of the dual coordinate ascent on ``problem`` (not yet certified) and its
    epochs: run to the relative gap ``GOOD_ENOUGH tol / 2`` in working precision (a margin
    below the certificate's early stop, for its rigorous rounding allowances). With a free
    intercept the balanced multipliers and ``w`` (``b=None``: the certificate takes the best
    intercept for ``w``), else the multipliers, ``w`` and ``b`` (the hinge's regularised
    intercept started by :func:`~qpsvm.verify.ascent.regularised_ascent` where
    :func:`~qpsvm.verify.ascent.moves_intercept`)."""
    first = first_tolerance(problem.data)
    # the ascent over the columns the rows touch: every other weight is an exact 0
    data, touched = problem.data.on_touched_columns()
    d = problem.data.X.shape[1]
    target = 0.5 * GOOD_ENOUGH * tol
    if problem.coupled:
        u, v, _, epochs = balanced_ascent(
            data,
            problem.balance,
            target,
            max_epochs=max_epochs,
            seed=seed,
            unshrink_every=SOLVER_UNSHRINK_EVERY,
        )
        return Candidate(w=_weights(v, touched, d), b=None, alpha=u), epochs
    u, start, epochs, estimate = np.zeros(data.sigma.shape[0]), first, 0, None
    # the epochs over the columns in the order the rows first touch them (the same multipliers
    # to the bit, each row's scattered reads and writes on fewer cache lines), the returned
    # expansion over the touched columns in their order
    fast = data.clustered()
    if data.bias > 0.0 and not np.any(data.d) and moves_intercept(data):
        # the hinge's regularised intercept moving by Newton's steps, where the ascent is
        # fast: its feature's rank-one coupling slows every coordinate's step (2000 x 20000,
        # 20 nonzeros a row: 105 epochs against 46); not the squared hinge, whose few cheap
        # epochs (35 against 24 there) cost less than the slope over its many free rows
        # (5.8-6.4 ms against 7.2-8.0 ms)
        u, epochs, start, estimate = regularised_ascent(
            fast, target, max_epochs, seed, SOLVER_UNSHRINK_EVERY
        )
    step = ascend(
        fast,
        u,
        target,
        max_epochs=max_epochs - epochs,
        seed=seed + epochs,
        start=start,
        exact=False,
        evaluate=False,
        unshrink_every=SOLVER_UNSHRINK_EVERY,
        estimate=estimate,
    )
    # the expansion's parts are the certificate's, over the formulation's touched columns or
    # (most columns touched) over its rows themselves: the same floats as the plain Dot2
    # expansion, and the certificate's pass over the rows for the same multipliers is saved
    if problem.keep is not None:
        v, parts = data.enclosed_expansion(step.u)
        if parts is not None:
            problem.keep(data.X, parts)
    else:
        v = data.expansion(step.u)
    w = _weights(v, touched, d)
    return Candidate(w=w, b=data.intercept(v, 0.0), alpha=step.u), epochs + step.epochs

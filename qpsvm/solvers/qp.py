"""Exact solve of a formulation's full CVXPY problem, finished by support-set refinement.

Every returned point has passed its certificate at the requested relative gap (default
``1e-9``); a point that cannot be certified is never returned.
"""

from __future__ import annotations

import logging
from typing import Any

from qpsvm._validation import check_tol
from qpsvm.contract import METHODS, Problem, load, supported
from qpsvm.exceptions import (
    InfeasibleProblemError,
    RoundingFloorError,
    SolverError,
    UncertifiedSolutionError,
)
from qpsvm.formulations.model import CvxModel
from qpsvm.solution import Candidate, Solution
from qpsvm.solvers.backends import (
    INACCURATE,
    BackendResult,
    backend_order,
    inaccurate_error,
    solve_model,
)
from qpsvm.solvers.finish import best_certified
from qpsvm.verify.certificate import DEFAULT_TOL, Certificate, uncertified_error

__all__ = ["solve_certified_model", "solve_qp"]

logger = logging.getLogger("qpsvm")


def solve_qp(
    f: Problem,
    solver: str | None = None,
    *,
    tol: float = DEFAULT_TOL,
    refine: bool = True,
    **options: Any,
) -> Solution:
    """Solve the full problem ``f.problem`` exactly and certify the answer.

    With the default backend, a formulation naming a ``direct_qp`` (the soft-margin primal)
    is first solved from its matrices (:mod:`qpsvm.solvers.direct`), without CVXPY.

    Parameters
    ----------
    f : Problem
    solver : str, optional
        A CVXPY solver name. ``None`` tries :data:`~qpsvm.solvers.backends.DEFAULT_ORDER`
        (Clarabel, then OSQP), falling back with a logged warning when one fails.
    tol : float, default=1e-9
        Relative gap the returned point must be certified at.
    refine : bool, default=True
        Refine the backend's point on its support sets (exact KKT solve) before certifying.
    **options
        Backend settings, overriding :data:`~qpsvm.solvers.backends.SETTINGS`.

    Raises
    ------
    InfeasibleProblemError, NotSeparableError
        The problem has no feasible point.
    InaccurateSolutionError, UncertifiedSolutionError
        No backend produced a point that passes the certificate.
    RoundingFloorError
        The best point fails only by the certificate's rounding floor, which exceeds ``tol``.
    """
    tol = check_tol(tol)
    direct = getattr(f, "direct_qp", "")
    if direct and solver is None and not options:
        # the same QP as matrices for the first backend of the default order (no CVXPY
        # compilation); anything but a certified point is left to the CVXPY path below, which
        # reports failures
        solution = load(direct)(f, tol, refine)
        if solution is not None:
            return solution
    return solve_certified_model(f, f.full_model, backend_order(solver), options, tol, refine)


def solve_certified_model(
    f: Problem,
    model: CvxModel,
    order: list[str],
    options: dict[str, Any],
    tol: float,
    refine: bool = True,
) -> Solution:
    """Solve ``model`` (the full problem of ``f``, e.g. compiled once for a path and re-solved
    at ``f.C``) with the first backend of ``order`` whose point, or one of its refinements,
    passes its certificate at ``tol`` (:func:`~qpsvm.solvers.finish.best_certified`)."""
    found: list[tuple[Candidate, Certificate]] = []

    def check(result: BackendResult) -> SolverError | None:
        cand, cert = best_certified(f, f.read_model(model), tol, refine)
        if cert.passed:
            if result.status in INACCURATE:
                logger.warning(
                    "%s reported %s, but the refined point is certified (relative gap %.1e)",
                    result.solver,
                    result.status,
                    cert.relative_gap,
                )
            found.append((cand, cert))
            return None
        error = uncertified_error(
            cert,
            f"{result.solver}: certified relative gap {cert.relative_gap:.2e} > tol {tol:.0e}. "
            "Tighten the backend's tolerances or use solver=None.",
            exact="exact" in f.methods,
        )
        if result.status in INACCURATE and not isinstance(error, RoundingFloorError):
            return inaccurate_error(result.solver, result.status, cert.relative_gap)
        return error

    try:
        result = solve_model(model, order, options, f.always_feasible, check)
    except InfeasibleProblemError as exc:
        raise (f.infeasible_error() or exc) from exc
    except RoundingFloorError:
        raise
    except UncertifiedSolutionError as exc:
        # the full QP is one certified method; name the others the formulation has
        full = METHODS["qp"].run
        others = [m for m in supported(f) if METHODS[m].certified and METHODS[m].run != full]
        if not others:
            raise
        tips = " or ".join(f"method={m!r}" for m in others)
        raise type(exc)(f"{exc} Or solve it by {tips}.") from exc
    cand, cert = found[-1]
    return f.solution_from(
        cand,
        cert,
        solver=result.solver,
        n_iter=result.n_iter,
        status="optimal",
        info={"backend_status": result.status, "backend_time": result.solve_time},
    )

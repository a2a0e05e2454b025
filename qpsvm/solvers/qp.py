"""Exact solve of a formulation's full CVXPY problem, finished by support-set refinement.

Every returned point has passed its certificate at the requested relative gap (default
``1e-9``); a point that cannot be certified is never returned.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from qpsvm._validation import check_tol
from qpsvm.exceptions import InfeasibleProblemError, SolverError, UncertifiedSolutionError
from qpsvm.solution import Candidate, Solution
from qpsvm.solvers.backends import INACCURATE, backend_order, inaccurate_error, run_backend
from qpsvm.verify.certificate import DEFAULT_TOL, Certificate

__all__ = ["best_certified", "solve_qp"]

logger = logging.getLogger("qpsvm")


def _certify(f: Any, cand: Candidate, tol: float) -> Certificate:
    module, _, name = f.certifier.partition(":")
    return getattr(importlib.import_module(module), name)(f, cand, tol=tol)


def best_certified(
    f: Any, cand: Candidate, tol: float, refine: bool = True
) -> tuple[Candidate, Certificate]:
    """Certify ``cand`` and its support-set refinements; return the best pair.

    The refinement (:func:`qpsvm.solvers.refine.refine`) solves the KKT equations on the support
    sets the solver identified, which turns an interior-point answer accurate to ``1e-8`` into
    one exact to round-off whenever the sets are right.
    """
    from qpsvm.solvers.refine import refine as refine_candidate

    pool = [f.make_feasible(c) for c in [cand] + (refine_candidate(f, cand) if refine else [])]
    scored = [(c, _certify(f, c, tol)) for c in pool]
    return min(scored, key=lambda pair: (not pair[1].passed, pair[1].relative_gap))


def solve_qp(
    f: Any,
    solver: str | None = None,
    *,
    tol: float = DEFAULT_TOL,
    refine: bool = True,
    **options: Any,
) -> Solution:
    """Solve the full problem ``f.problem`` exactly and certify the answer.

    Parameters
    ----------
    f : Formulation
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
    """
    tol = check_tol(tol)
    explicit = solver is not None
    order = backend_order(solver)
    failures: list[str] = []
    uncertified = False
    for k, name in enumerate(order):
        try:
            result = run_backend(f.problem, name, options if k == 0 else {})
        except InfeasibleProblemError as exc:
            if not f.always_feasible:
                raise (f.infeasible_error() or exc) from exc
            if explicit:
                raise SolverError(
                    f"{exc} — but {type(f).__name__} always has a solution: a numerical "
                    "failure. Standardise the features, or use solver=None."
                ) from exc
            failures.append(f"{name}: {exc} (a numerical failure: the problem has a solution)")
            logger.warning("%s reported a problem with a solution %s; falling back", name, exc)
            continue
        except SolverError as exc:
            if explicit:
                raise
            failures.append(f"{name}: {exc}")
            logger.warning("%s failed (%s); falling back to the next backend", name, exc)
            continue
        cand, cert = best_certified(f, f.read_model(f.full_model), tol, refine)
        if cert.passed:
            if result.status in INACCURATE:
                logger.warning(
                    "%s reported %s, but the refined point is certified (relative gap %.1e)",
                    name,
                    result.status,
                    cert.relative_gap,
                )
            return f.solution_from(
                cand,
                cert,
                solver=name,
                n_iter=result.n_iter,
                status="optimal",
                info={"backend_status": result.status, "backend_time": result.solve_time},
            )
        message = f"{name}: certified relative gap {cert.relative_gap:.2e} > tol {tol:.0e}"
        if explicit:
            if result.status in INACCURATE:
                raise inaccurate_error(name, result.status, cert.relative_gap)
            raise UncertifiedSolutionError(
                f"{message}. Tighten the backend's tolerances or use solver=None."
            )
        failures.append(message)
        uncertified = True
        logger.warning("%s; falling back to the next backend", message)
    error = UncertifiedSolutionError if uncertified else SolverError
    raise error(
        "no backend produced a certified optimum: "
        + "; ".join(failures)
        + ". Badly scaled data limit what floating point can certify: standardise the features "
        "(e.g. sklearn's StandardScaler), solve the primal form (SoftMarginPrimal) of a linear "
        "problem, or certify at a looser tol."
    )

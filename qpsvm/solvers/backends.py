"""Running a CVXPY problem on a QP backend, with statuses turned into typed errors.

Defaults were chosen by measurement (CVXPY 1.9, 2 cores): Clarabel at tolerances ``1e-10``
reaches relative gaps near ``1e-12`` and is 10-25x faster than OSQP asked for the same accuracy;
OSQP with CVXPY's defaults stops near ``1e-4`` when its polish step fails. OSQP stays available
(``solver="OSQP"``) with tolerances ``1e-9`` and polishing.
"""

from __future__ import annotations

import functools
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from qpsvm._lazy import lazy_module
from qpsvm.exceptions import (
    InaccurateSolutionError,
    InfeasibleProblemError,
    InvalidInputError,
    RoundingFloorError,
    SolverError,
    SolverNotInstalledError,
    UncertifiedSolutionError,
)

cp = lazy_module("cvxpy")

if TYPE_CHECKING:
    from qpsvm.formulations.model import CvxModel

__all__ = [
    "DEFAULT_ORDER",
    "SETTINGS",
    "BackendResult",
    "backend_order",
    "installed_solvers",
    "run_backend",
    "solve_model",
]

logger = logging.getLogger("qpsvm")

#: Backends tried by ``solver=None``, in order; later ones are fallbacks (with a logged warning).
DEFAULT_ORDER = ("CLARABEL", "OSQP")

#: Accuracy settings per backend (overridable by keyword options of ``solve``).
SETTINGS: dict[str, dict[str, Any]] = {
    "CLARABEL": {
        "tol_gap_abs": 1e-10,
        "tol_gap_rel": 1e-10,
        "tol_feas": 1e-10,
        "tol_ktratio": 1e-8,
        "max_iter": 500,
    },
    "OSQP": {
        "eps_abs": 1e-9,
        "eps_rel": 1e-9,
        "polishing": True,
        "polish_refine_iter": 20,
        "max_iter": 200_000,
    },
    "SCS": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000},
}

_PACKAGES = {
    "CLARABEL": "clarabel",
    "OSQP": "osqp",
    "SCS": "scs",
    "ECOS": "ecos",
    "GUROBI": "gurobipy",
    "MOSEK": "mosek",
    "PIQP": "piqp",
    "PROXQP": "proxsuite",
    "CVXOPT": "cvxopt",
    "HIGHS": "highspy",
    "QOCO": "qoco",
}

#: CVXPY's statuses (``cvxpy.OPTIMAL_INACCURATE``, ...) by value: naming them through ``cp``
#: would import CVXPY with this module, which the paths that never build a CVXPY problem avoid
#: (:mod:`qpsvm._lazy`); a test checks the values against CVXPY's.
INACCURATE = {"optimal_inaccurate", "user_limit"}
INFEASIBLE = {"infeasible", "infeasible_inaccurate", "unbounded", "unbounded_inaccurate"}


@dataclass
class BackendResult:
    """Status and statistics of one backend run."""

    solver: str
    status: str
    n_iter: int
    solve_time: float


@functools.cache
def installed_solvers() -> tuple[str, ...]:
    """CVXPY's installed solvers, probed once per process (probing imports every package)."""
    return tuple(cp.installed_solvers())


def backend_order(solver: str | None) -> list[str]:
    """The backends to try: the named one, or the installed ones of :data:`DEFAULT_ORDER`."""
    if solver is not None:
        return [resolve_solver(solver)]
    return [s for s in DEFAULT_ORDER if s in installed_solvers()]


def resolve_solver(solver: str) -> str:
    """Upper-case name of an installed CVXPY solver, or a typed error saying what to install."""
    if not isinstance(solver, str):
        raise InvalidInputError(f"solver must be a CVXPY solver name, got {solver!r}.")
    name = solver.upper()
    if name not in installed_solvers():
        known = set(_PACKAGES) | set(cp.settings.SOLVERS)
        if name not in known:
            raise InvalidInputError(
                f"unknown solver {solver!r}; installed QP solvers: {list(installed_solvers())}."
            )
        package = _PACKAGES.get(name, name.lower())
        raise SolverNotInstalledError(
            f"solver {name} is not installed; install it with `pip install {package}` or pick "
            f"one of {list(installed_solvers())}."
        )
    return name


def run_backend(problem: cp.Problem, solver: str, options: dict[str, Any]) -> BackendResult:
    """Solve ``problem`` with ``solver`` and return its status.

    Raises
    ------
    InfeasibleProblemError
        The backend reports the problem infeasible or unbounded.
    SolverError
        The backend failed outright.

    An inaccurate status (``optimal_inaccurate``, ``user_limit``) is returned, not raised: the
    caller refines and certifies the point, and raises :class:`InaccurateSolutionError` only if
    it cannot be certified.
    """
    settings = {**SETTINGS.get(solver, {}), **options}
    try:
        with warnings.catch_warnings():
            # CVXPY warns on inaccurate statuses; qpsvm handles (and logs) them itself
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            problem.solve(solver=solver, **settings)
    except cp.error.SolverError as exc:
        raise SolverError(
            f"{solver} failed on this problem ({exc}). Try another backend, e.g. "
            f"solver='CLARABEL' or solver='OSQP', or rescale the features."
        ) from exc
    except (TypeError, ValueError) as exc:  # an option the backend does not know or accept
        raise InvalidInputError(
            f"invalid option for {solver} ({sorted(options)}): {exc}. Backend options are "
            "passed to the QP solver; see its documentation for names and types."
        ) from exc
    status = problem.status
    stats = problem.solver_stats
    result = BackendResult(
        solver=solver,
        status=status,
        n_iter=int(stats.num_iters or 0) if stats is not None else 0,
        solve_time=float(stats.solve_time or 0.0) if stats is not None else 0.0,
    )
    if status in INFEASIBLE:
        raise InfeasibleProblemError(f"{solver} reports the problem {status}.")
    if status not in INACCURATE and status != cp.OPTIMAL:
        raise SolverError(f"{solver} returned status {status!r}; no solution to read.")
    if status in INACCURATE:
        logger.warning(
            "%s stopped with status %s; refining and certifying its point", solver, status
        )
    return result


def inaccurate_error(solver: str, status: str, relative_gap: float) -> InaccurateSolutionError:
    """The error for a point that no refinement could certify."""
    return InaccurateSolutionError(
        f"{solver} stopped with status {status!r} and its point is only certified to a relative "
        f"gap of {relative_gap:.2e}. Raise max_iter, tighten the backend's tolerances, or use "
        "solver=None (Clarabel with fallbacks)."
    )


def solve_model(
    model: CvxModel,
    order: list[str],
    options: dict[str, Any],
    feasible: bool = False,
    check: Callable[[BackendResult], SolverError | None] | None = None,
) -> BackendResult:
    """Solve ``model`` with the first backend of ``order`` that neither fails nor has its point
    rejected by ``check`` (later backends get their default settings and a logged warning).

    ``feasible`` says the problem always has a solution (:attr:`Formulation.always_feasible`):
    a backend that reports it infeasible or unbounded has then failed, and the next one is tried;
    so has one whose report follows a point returned by an earlier backend (on badly scaled
    separable data OSQP reports a hard margin infeasible after Clarabel found a point).
    ``check(result)`` judges the solved model (e.g. certifies its point): ``None`` accepts it,
    an error rejects it like a failure of that backend.

    Raises
    ------
    InfeasibleProblemError
        The backend reports the problem infeasible or unbounded (not ``feasible``, and no
        earlier backend returned a point: no fallback).
    SolverError, UncertifiedSolutionError, InaccurateSolutionError
        The one backend of ``order`` failed, or had its point rejected (the error of ``check``).
    SolverError, UncertifiedSolutionError
        Every backend failed (``UncertifiedSolutionError`` when some point was rejected).
    """
    failures: list[str] = []
    rejected = False
    for k, name in enumerate(order):
        try:
            result = run_backend(model.problem, name, options if k == 0 else {})
        except InfeasibleProblemError as exc:
            if not (feasible or rejected):
                raise
            why = (
                "the problem always has a solution"
                if feasible
                else "an earlier backend returned a point"
            )
            failure: SolverError = SolverError(
                f"{exc} — but {why}: a numerical failure "
                "(badly scaled data? standardise the features)"
            )
        except SolverError as exc:
            failure = exc
        else:
            verdict = None if check is None else check(result)
            if verdict is None:
                return result
            if isinstance(verdict, RoundingFloorError):
                raise verdict  # the floor is the data's, not the backend's: none can pass
            failure, rejected = verdict, True
        if len(order) == 1:
            raise failure
        failures.append(f"{name}: {failure}")
        logger.warning("%s failed (%s); falling back to the next backend", name, failure)
    error = UncertifiedSolutionError if rejected else SolverError
    raise error(
        "no backend succeeded: "
        + "; ".join(failures)
        + ". Badly scaled data limit what floating point can solve and certify: standardise the "
        "features (e.g. sklearn's StandardScaler), solve the primal form (SoftMarginPrimal) of "
        "a linear problem, or certify at a looser tol."
    )

r"""Score a solver on suite instances: certified accuracy, time and failures.

For each instance the solver's answer is certified on the instance's formulation
(:mod:`qpsvm.suite.solvers`). Its **certified relative suboptimality** is

.. math::

    \frac{U - \max(L, D)}{\max(1, |P^*|)},

with ``U`` the certificate's upper bound on the answer's objective, ``D`` the certificate's own
lower bound on ``P*`` and ``L`` the stored one: an upper bound on the true relative
suboptimality (exact arithmetic where both enclosures are rigorous). The answer **succeeds at
tol** when it is below ``tol`` and the answer is primal feasible to ``tol``. The distance to
``w*`` is ``||w - w*||`` when both are stored (``w*`` is unique; ``b*`` and ``alpha*`` need
not be).

The summary has qpbenchmark's metrics: the success rate per tolerance, and shifted geometric
means :math:`\big(\prod_i (t_i + s)\big)^{1/n} - s` of the time (shift ``10`` s, a failure
counted at ``time_limit``) and of the suboptimality (shift :data:`SUBOPT_SHIFT`, a failure
counted at ``1``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from qpsvm.suite.instances import Instance
from qpsvm.suite.solvers import Answer, Solver

__all__ = [
    "SUBOPT_SHIFT",
    "TIME_SHIFT",
    "TOLERANCES",
    "Result",
    "Summary",
    "score",
    "shifted_geometric_mean",
    "summarize",
]

TOLERANCES = (1e-3, 1e-6, 1e-9)
#: Shift of the time's geometric mean (seconds, as qpbenchmark).
TIME_SHIFT = 10.0
#: Shift of the suboptimality's geometric mean.
SUBOPT_SHIFT = 1e-12


def shifted_geometric_mean(values: Sequence[float], shift: float) -> float:
    r""":math:`\exp(\tfrac1n \sum_i \log(v_i + s)) - s`, the mean qpbenchmark ranks solvers by
    (insensitive to the many tiny values a plain geometric mean would be dominated by)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return math.nan
    return float(np.exp(np.mean(np.log(v + shift))) - shift)


@dataclass
class Result:
    """One solver on one instance.

    Attributes
    ----------
    instance, family, solver : str
    time : float
        Wall time of the solver (seconds), certification excluded.
    failure : str or None
        ``"exception"``, ``"status"``, ``"different problem"``, ``"unsupported"``, or
        ``None`` when the solver returned an answer.
    message : str
    suboptimality : float
        Certified relative suboptimality (``inf`` on failure or infeasibility).
    relative_gap : float
        The certificate's own relative gap.
    primal_infeasibility : float
        Relative primal infeasibility of the answer.
    distance : float or None
        ``||w - w*||`` when both are known.
    success : dict
        ``{tol: bool}`` for each of :data:`TOLERANCES`.
    """

    instance: str
    family: str
    solver: str
    time: float
    failure: str | None = None
    message: str = ""
    suboptimality: float = math.inf
    relative_gap: float = math.inf
    primal_infeasibility: float = math.inf
    distance: float | None = None
    success: dict[str, bool] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready (``inf`` as the string ``"inf"``)."""
        out = asdict(self)
        for key in ("suboptimality", "relative_gap", "primal_infeasibility", "time"):
            if not math.isfinite(out[key]):
                out[key] = str(out[key])
        return out


def _result(instance: Instance, solver: Solver, answer: Answer, elapsed: float) -> Result:
    result = Result(
        instance.name, instance.family, solver.name, elapsed, answer.failure, answer.message
    )
    cert, opt = answer.certificate, instance.optimum
    if cert is not None:
        scale = max(1.0, abs(opt.value))
        lower = max(opt.lower, cert.lower) if math.isfinite(cert.lower) else opt.lower
        result.suboptimality = max(0.0, (cert.upper - lower) / scale)
        result.relative_gap = cert.relative_gap
        result.primal_infeasibility = cert.primal_infeasibility / scale
        if answer.w is not None and opt.w is not None and answer.w.size == opt.w.size:
            result.distance = float(np.linalg.norm(answer.w.ravel() - opt.w.ravel()))
    result.success = {
        f"{tol:g}": result.failure is None
        and result.suboptimality <= tol
        and result.primal_infeasibility <= tol
        for tol in TOLERANCES
    }
    return result


def score(solver: Solver, instances: Iterable[Instance], *, progress: bool = False) -> list[Result]:
    """Run ``solver`` on every instance and certify each answer.

    Parameters
    ----------
    solver : Solver
        One of :mod:`qpsvm.suite.solvers` (``CvxpySolver("OSQP")``, ``QpSolver("proxqp")``,
        ``Estimator(LinearSVC, {...})``, ``Liblinear("-s 3")``, ``Command("...")``,
        ``Callable(fn)``), or a string accepted by :func:`qpsvm.suite.parse_solver`.
    instances : iterable of Instance
    progress : bool
        A tqdm progress bar (if tqdm is installed).

    Returns
    -------
    list of Result
        Exceptions of the solver are recorded as failures, never raised.
    """
    from qpsvm.suite.cli import parse_solver

    if isinstance(solver, str):
        solver = parse_solver(solver)
    instances = list(instances)
    if progress:
        try:
            from tqdm import tqdm

            instances = tqdm(instances, desc=solver.name, unit="instance")
        except ImportError:
            pass
    results = []
    for inst in instances:
        f = inst.build()
        start = time.perf_counter()
        try:
            answer = solver.run(inst, f)
        except Exception as exc:  # a solver's failure is a result, reported with its message
            answer = Answer(failure="exception", message=f"{type(exc).__name__}: {exc}")
        elapsed = time.perf_counter() - start
        results.append(_result(inst, solver, answer, elapsed))
    return results


@dataclass
class Summary:
    """qpbenchmark's metrics of one solver over a set of results.

    Attributes
    ----------
    solver : str
    n : int
        Instances the solver states (scored).
    unsupported : int
        Instances it cannot state (a classifier on ranking, C on the hard margin...).
    success_rate : dict
        ``{tol: fraction}`` of instances certified within ``tol``.
    failures : int
        Exceptions, wrong statuses and different problems.
    time_sgm : float
        Shifted geometric mean of the time (failures at ``time_limit``).
    suboptimality_sgm : float
        Shifted geometric mean of the certified relative suboptimality (failures at 1).
    answers : int
        Instances where the solver returned an answer (no failure).
    wrong_4th_digit : float
        Share of those answers whose certified relative suboptimality exceeds ``1e-4`` (wrong
        in the fourth digit).
    """

    solver: str
    n: int
    unsupported: int
    success_rate: dict[str, float]
    failures: int
    time_sgm: float
    suboptimality_sgm: float
    answers: int
    wrong_4th_digit: float


def summarize(results: Sequence[Result], time_limit: float = 100.0) -> Summary:
    """The :class:`Summary` of one solver's results; instances it does not state
    (``failure="unsupported"``) are left out and counted in ``unsupported``."""
    unsupported = sum(r.failure == "unsupported" for r in results)
    solver = results[0].solver if results else ""
    results = [r for r in results if r.failure != "unsupported"]
    n = len(results)
    answered = [r for r in results if r.failure is None]
    times = [r.time if r.failure is None else time_limit for r in results]
    subopt = [min(r.suboptimality, 1.0) for r in results]
    return Summary(
        solver=solver,
        n=n,
        unsupported=unsupported,
        success_rate={
            f"{tol:g}": sum(r.success[f"{tol:g}"] for r in results) / max(n, 1)
            for tol in TOLERANCES
        },
        failures=sum(r.failure is not None for r in results),
        time_sgm=shifted_geometric_mean(times, TIME_SHIFT),
        suboptimality_sgm=shifted_geometric_mean(subopt, SUBOPT_SHIFT),
        answers=len(answered),
        wrong_4th_digit=sum(r.suboptimality > 1e-4 for r in answered) / max(len(answered), 1),
    )

r"""Block-coordinate Frank-Wolfe for the structural SVM, stopped on its certified duality gap.

Lacoste-Julien, Jaggi, Schmidt & Pletscher, "Block-coordinate Frank-Wolfe optimization for
structural SVMs", ICML 2013 (Algorithm 3), in qpsvm's scaling. The dual of
:math:`\min \tfrac12\|w\|^2 + C\sum_i \xi_i` (:mod:`qpsvm.verify.structural`) is

.. math::

    \max_\alpha\ D(\alpha) = \sum_i \ell_i - \tfrac12\|w\|^2, \qquad
    w = \sum_i w_i,\quad w_i = \sum_y \alpha_{iy} a_{iy},\quad \ell_i = \sum_y \alpha_{iy} c_{iy},

with each block :math:`\alpha_i` in ``C`` times the simplex over the outputs of example ``i``
(the ground truth's share is :math:`C - \sum_{y\ne y_i}\alpha_{iy}`; its plane is 0). One step
visits one example: its most violated output :math:`\hat y` (one oracle call at the current
``w``) is the Frank-Wolfe vertex :math:`w_s = C a_{i\hat y}`, :math:`\ell_s = C c_{i\hat y}`; the
block's duality gap is :math:`g_i = \ell_s - \ell_i - w\cdot(w_s - w_i) \ge 0`, and

* ``variant="standard"``: the block moves to :math:`(1-\gamma)\alpha_i + \gamma\, C e_{\hat y}`
  with the exact line search :math:`\gamma = \mathrm{clip}_{[0,1]}(g_i / \|w_s - w_i\|^2)`: the
  paper's algorithm, whose gap decreases as ``O(1/k)``;
* ``variant="pairwise"`` (default): mass moves between the block's best and worst outputs in
  use, the oracle's output included (block-coordinate pairwise Frank-Wolfe), and after each pass
  the stored outputs of every block are re-optimised without oracle calls until their gap is
  below ``kappa`` times the certified gap (the caching of Osokin, Alayrac, Lukasewitz, Dokania &
  Lacoste-Julien, "Minding the gaps for block Frank-Wolfe optimization of structured SVMs",
  ICML 2016). The steps are the cutting plane's compiled kernels
  (:mod:`qpsvm.solvers.cutting_plane`).

After every pass over the examples (in a fresh random order) one oracle call per example gives
the true slacks at ``w``, hence :math:`P(w)`, and :math:`P(w) - D(\alpha) = \sum_i g_i` is the
Frank-Wolfe duality gap of that ``w`` (the slacks of a relaxed oracle make it an upper bound).
The method stops when it is below ``tol`` relative and the independent certificate
(:func:`~qpsvm.verify.structural.certify_structural`, with the blocks' outputs and weights as
the dual point) agrees.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from qpsvm._validation import check_int, check_number, check_random_state, check_tol
from qpsvm.contract import StructuralProblem, check_method
from qpsvm.exceptions import InvalidInputError
from qpsvm.solution import Solution
from qpsvm.solvers.cutting_plane import (
    BLOCK_STEPS,
    _candidate,
    _evaluate,
    _history,
    _last_certificate,
    _Pool,
    _round_certificate,
    _sequential_pass,
    _sweeps,
)
from qpsvm.verify.certificate import DEFAULT_TOL, relative

__all__ = ["VARIANTS", "solve_frank_wolfe"]

logger = logging.getLogger("qpsvm")

#: The two block steps.
VARIANTS = ("pairwise", "standard")


def solve_frank_wolfe(
    f: StructuralProblem,
    solver: str | None = None,
    *,
    variant: str = "pairwise",
    tol: float = DEFAULT_TOL,
    max_passes: int = 1000,
    max_time: float | None = None,
    kappa: float = 0.3,
    max_sweeps: int = 200,
    random_state: Any = 0,
) -> Solution:
    r"""Train a structural SVM by block-coordinate Frank-Wolfe until the certified gap is below
    ``tol`` (see :mod:`qpsvm.solvers.frank_wolfe`).

    Parameters
    ----------
    f : StructuralSVM
        Margin rescaling only.
    solver : None
        The method uses no CVXPY solver (:meth:`~qpsvm.formulations.Formulation.solve` refuses
        one).
    variant : {"pairwise", "standard"}, default="pairwise"
        Pairwise steps with cached outputs, or the plain Frank-Wolfe step of the 2013 paper.
    tol : float, default=1e-9
        Relative certified gap ``(P - D) / max(1, |P|)`` to reach.
    max_passes : int, default=1000
        Passes over the examples at most; then the last point is returned with
        ``status="max_iter"`` and its failing certificate, and a warning is logged.
    max_time : float, optional
        Seconds at most (checked after each pass); then ``status="time_limit"``.
    kappa : float, default=0.3
        ``"pairwise"``: re-optimise the cached outputs until their gap is below ``kappa`` times
        the pass's certified gap (tightened tenfold when the certificate disagrees, and when a
        pass finds no new output, as the cutting plane does: without it the caches are left
        re-optimised only to the loose target and the gap stalls, e.g. near ``3e-4`` for
        hundreds of passes on the grid segmentation of ``bench_structured_models.py``).
    max_sweeps : int, default=200
        ``"pairwise"``: passes over the cached outputs per pass at most.
    random_state : int, Generator or None, default=0
        Order of the examples in each pass.

    Returns
    -------
    Solution
        ``w``; ``xi`` the true slacks; ``alpha`` the blocks' output weights, with their
        outputs as n-slack planes in ``info["constraints"]``; ``history`` per pass (objective,
        gap, time); ``n_iter`` passes; ``certificate`` from
        :func:`~qpsvm.verify.structural.certify_structural`; ``info`` holds the variant and the
        numbers of oracle calls and of cache sweeps.
    """
    tol, max_passes, max_sweeps, kappa, max_time = _check_options(
        f, variant, tol, max_passes, max_sweeps, kappa, max_time
    )
    rng = check_random_state(random_state)
    n = f.n_samples
    pool = _Pool(f.n_features, n, f.C)
    steps = BLOCK_STEPS if variant == "pairwise" else 0
    rows_hist: list[tuple[int, float, float, float]] = []
    start = time.perf_counter()
    status, cert, calls, sweeps = "max_iter", None, 0, 0
    for sweep in range(max_passes + 1):
        rnd = _evaluate(f, pool)
        calls += n
        elapsed = time.perf_counter() - start
        rows_hist.append((sweep, rnd.primal, elapsed, rnd.gap))
        logger.info(
            "frank-wolfe pass %d: objective %.10g, gap %.3g (relative %.2e), %.2fs",
            sweep,
            rnd.primal,
            rnd.gap,
            relative(rnd.gap, rnd.primal),
            elapsed,
        )
        cert = _round_certificate(f, pool, rnd, tol)
        if cert is not None:
            if cert.passed:
                status = "optimal"
                break
            kappa /= 10.0
        if sweep == max_passes:
            break
        if max_time is not None and elapsed > max_time:
            status = "time_limit"
            break
        added = _sequential_pass(f, pool, rng.permutation(n), steps)
        calls += n
        if variant == "pairwise":
            if added == 0:  # the oracle found nothing new: only the caches can close the gap
                kappa /= 10.0
            sweeps += _sweeps(pool, kappa * rnd.gap, max_sweeps, rng)[0]
    stopped = f"frank-wolfe stopped ({status}) after {len(rows_hist) - 1} passes"
    return f.solution_from(
        _candidate(pool, rnd.w),
        _last_certificate(f, pool, rnd, cert, tol, stopped, "max_passes"),
        solver="frank_wolfe",
        status=status,
        n_iter=len(rows_hist) - 1,
        method="frank_wolfe",
        history=_history(rows_hist),
        info={"variant": variant, "oracle_calls": calls, "sweeps": sweeps},
    )


def _check_options(
    f: StructuralProblem,
    variant: str,
    tol: float,
    max_passes: int,
    max_sweeps: int,
    kappa: float,
    max_time: float | None,
) -> tuple[float, int, int, float, float | None]:
    """The options checked (typed errors): margin rescaling only, a known variant."""
    check_method(f, "frank_wolfe")
    if f.rescaling != "margin":
        raise InvalidInputError(
            "method='frank_wolfe' is block-coordinate Frank-Wolfe for margin rescaling; use "
            "method='cutting_plane' for rescaling='slack'."
        )
    if variant not in VARIANTS:
        raise InvalidInputError(f"unknown variant {variant!r}; choose one of {VARIANTS}.")
    tol = check_tol(tol)
    max_passes = check_int(max_passes, "max_passes", 1, "solve_frank_wolfe")
    max_sweeps = check_int(max_sweeps, "max_sweeps", 1, "solve_frank_wolfe")
    kappa = check_number(kappa, "kappa", 1.0)
    if max_time is not None:
        max_time = check_number(max_time, "max_time")
    return tol, max_passes, max_sweeps, kappa, max_time

r"""Online subgradient descent for the structural SVM, through loss-augmented inference.

Divided by ``C n``, the structural SVM's objective is the per-example form

.. math::

    \frac{\lambda}{2}\|w\|^2 + \frac1n\sum_{i=1}^n \xi_i(w), \qquad \lambda = \frac{1}{C n},

with the true slack :math:`\xi_i(w) = \max_y H_i(y; w)` (same minimiser; suboptimalities differ
by the factor ``C n``). By Danskin's theorem a subgradient of :math:`\xi_i` at ``w`` is
:math:`-a_{i\hat y}` for the most violated output :math:`\hat y` (loss-augmented or
slack-rescaled inference; 0 when :math:`\xi_i = 0`), so a step on a batch ``B`` is

.. math::

    w_{t+1} = w_t - \eta_t\Big(\lambda w_t - \frac{1}{|B|}\sum_{i\in B} a_{i\hat y_i}\Big)

(Ratliff, Bagnell & Zinkevich, "(Online) subgradient methods for structured prediction",
AISTATS 2007; Pegasos steps of Shalev-Shwartz et al. 2011). The step schedules are those of the
other online solvers (:func:`qpsvm.solvers.subgradient.step_sizes`): ``"pegasos"``
:math:`1/(\lambda t)`, ``"sqrt"`` :math:`\eta_0/\sqrt t`, or a callable. Each step calls the
model's batched oracle once on its batch; the model's compiled kernels do the per-example work.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from qpsvm._validation import check_int, check_number, check_random_state
from qpsvm.exceptions import InvalidInputError
from qpsvm.formulations.structural import StructuralSVM
from qpsvm.solution import History, Solution, StructuralCandidate
from qpsvm.solvers.subgradient import StepRule, step_sizes

__all__ = ["solve_subgradient_structural"]

logger = logging.getLogger("qpsvm")


def solve_subgradient_structural(
    f: StructuralSVM,
    solver: str | None = None,
    *,
    epochs: int = 10,
    step: StepRule = "pegasos",
    eta0: float = 1.0,
    average: bool = False,
    batch_size: int = 1,
    random_state: Any = None,
    record_gap: bool = False,
) -> Solution:
    r"""Approximate solve by online subgradient descent through the model's inference.

    Minimises :math:`\frac\lambda2\|w\|^2 + \frac1n\sum_i \xi_i(w)` with
    :math:`\lambda = 1/(C n)` (see :mod:`qpsvm.solvers.subgradient_structural`).

    Parameters
    ----------
    f : StructuralSVM
    solver : None
        Online methods use no CVXPY solver; passing one is an error.
    epochs : int, default=10
        Passes over the data, each in a fresh random order.
    step : {"pegasos", "sqrt"} or callable, default="pegasos"
        ``1/(lambda t)``, ``eta0/sqrt(t)``, or ``step(t) -> eta`` on the array of step indices
        of an epoch.
    eta0 : float, default=1.0
        Scale of the ``"sqrt"`` schedule.
    average : bool, default=False
        Return the average of the iterates ``(1/T) sum_t w_t`` instead of the last one.
    batch_size : int, default=1
        Examples per step (one batched oracle call each).
    random_state : int, numpy.random.Generator or None
        Seed of the shuffling; equal seeds give identical runs.
    record_gap : bool, default=False
        Certify the iterate after each epoch (``f.certify(w=...)``, a loose bound for a bare
        ``w``) and store the gap in ``history.gap``.

    Returns
    -------
    Solution
        ``w``, ``b = 0``, the true slacks and objective of the returned iterate, ``alpha=None``,
        ``status="max_epochs"``, ``history`` per epoch; ``info`` holds ``lambda``, ``steps``
        (``T``) and the time spent in the updates (``backend_time``).
    """
    if solver is not None:
        raise InvalidInputError(
            f"method='subgradient' uses no CVXPY solver; got solver={solver!r}. Drop it (or use "
            "method='cutting_plane', which is exact)."
        )
    if not isinstance(f, StructuralSVM):
        raise InvalidInputError(
            f"solve_subgradient_structural solves a StructuralSVM, got {type(f).__name__}."
        )
    epochs = check_int(epochs, "epochs")
    batch_size = min(check_int(batch_size, "batch_size"), f.n_samples)
    eta0 = check_number(eta0, "eta0")
    n = f.n_samples
    lam = 1.0 / (f.C * n)
    rng = check_random_state(random_state)
    w = np.zeros(f.n_features)
    total = np.zeros(f.n_features)
    history = History(
        iteration=np.zeros(epochs, dtype=np.int64),
        objective=np.zeros(epochs),
        time=np.zeros(epochs),
        gap=np.zeros(epochs) if record_gap else None,
    )
    certificate = None
    t = 0
    update_time = 0.0
    start = time.perf_counter()
    for e in range(epochs):
        order = rng.permutation(n)
        batches = [order[s : s + batch_size] for s in range(0, n, batch_size)]
        etas = step_sizes(step, np.arange(t + 1, t + len(batches) + 1), lam, eta0)
        tick = time.perf_counter()
        for batch, eta in zip(batches, etas.tolist(), strict=True):
            outputs = f.oracle(w, examples=batch)
            rows, c = f.pair_rows(batch, outputs)
            violated = c - np.asarray(rows @ w).ravel() > 0
            direction = np.asarray(rows[violated].sum(axis=0)).ravel() / len(batch)
            w = (1.0 - eta * lam) * w + eta * direction
            total += w
        t += len(batches)
        update_time += time.perf_counter() - tick
        current = total / t if average else w
        history.iteration[e] = t
        history.objective[e] = f.objective(current)
        if record_gap:
            certificate = f.certify(w=current)
            history.gap[e] = certificate.gap
        history.time[e] = time.perf_counter() - start
        logger.debug(
            "structural subgradient epoch %d: objective %.10g", e + 1, history.objective[e]
        )
    return f.solution_from(
        StructuralCandidate(w=total / t if average else w),
        certificate,
        solver="subgradient",
        status="max_epochs",
        n_iter=epochs,
        method="subgradient",
        history=history,
        info={
            "lambda": lam,
            "steps": t,
            "step": step if isinstance(step, str) else "callable",
            "average": bool(average),
            "batch_size": batch_size,
            "backend_time": update_time,
        },
    )

r"""Online (stochastic) subgradient descent: Pegasos and its variants.

The solver minimises the per-example form of the primal. Dividing qpsvm's objective by ``C n``,

.. math::

    \frac{1}{C n}\Big(\tfrac12\|w\|^2 + C\sum_{i=1}^n s_i\,\ell_i(w, b)\Big)
    = \frac{\lambda}{2}\|w\|^2 + \frac1n\sum_{i=1}^n s_i\,\ell_i(w, b),
    \qquad \lambda = \frac{1}{C n},

with the hinge ``l_i = max(0, m_i - y_i (w.x_i + b))``: the two problems have the same minimiser,
and their suboptimalities differ by the factor ``C n`` (the inverse conversion, from Pegasos' or
``SGDClassifier``'s ``lambda`` to ``C``, is :func:`qpsvm.conventions.C_from_pegasos`). Step ``t``
picks a batch ``B`` (shuffled epochs: a fresh permutation each pass) and moves along the
stochastic subgradient

.. math::

    g_t = \lambda w_t - \frac{1}{|B|}\sum_{i\in B,\ \ell_i > 0} s_i y_i x_i, \qquad
    w_{t+1} = \Pi_R\big(w_t - \eta_t g_t\big),

with ``b`` (free, unregularised) updated by its own subgradient ``-1/|B| sum s_i y_i``. Step sizes:
``"pegasos"`` ``eta_t = 1/(lambda t)`` (Shalev-Shwartz, Singer, Srebro and Cotter 2011),
``"sqrt"`` ``eta_t = eta0 / sqrt(t)``, or a callable. ``Pi_R`` is the optional projection onto the
ball ``||w|| <= R`` that contains ``w*``.

The ranking SVM runs the same update on the pair differences ``x_i - x_j`` (label ``+1``, no
intercept), never formed. The multiclass SVM updates rows of ``W``: for an example with a
violated margin, the true class moves towards ``x_i`` and the arg-max class away from it
(Crammer-Singer), or every violating class does (Weston-Watkins). The structural SVM's slack
:math:`\xi_i(w) = \max_y H_i(y; w)` has, by Danskin's theorem, the subgradient
:math:`-a_{i\hat y}` at the most violated output :math:`\hat y` (loss-augmented or
slack-rescaled inference; 0 when :math:`\xi_i = 0`), so its step on a batch ``B`` is
:math:`w \leftarrow (1 - \eta_t\lambda) w + \frac{\eta_t}{|B|}\sum_{i\in B} a_{i\hat y_i}`
(Ratliff, Bagnell & Zinkevich, "(Online) subgradient methods for structured prediction",
AISTATS 2007), one batched oracle call per step.

Each formulation names its online problem (its ``online_problem``: :func:`binary_problem`,
:func:`multiclass_problem`, :func:`structural_problem`); the driver
(:func:`solve_subgradient`) is shared. The inner loop over samples is a numba kernel
(:mod:`qpsvm.solvers._online_kernels`) for the binary and multiclass SVMs and the model's
compiled inference for the structural SVM; Python only runs once per epoch (shuffling, the step
sizes of the epoch, the exact objective for the history) or, structural, once per batch.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from qpsvm._rows import data_arrays, linear_data, row_sq_norms
from qpsvm._validation import check_int, check_number, check_random_state
from qpsvm.contract import BinaryProblem, MulticlassProblem, Problem, StructuralProblem, part
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.solution import Candidate, History, Solution
from qpsvm.solvers import _online_kernels as kernels

__all__ = [
    "STEPS",
    "OnlineProblem",
    "binary_problem",
    "multiclass_problem",
    "pegasos_bound",
    "solve_subgradient",
    "step_sizes",
    "structural_problem",
]

logger = logging.getLogger("qpsvm")

#: Named step-size schedules.
STEPS = ("pegasos", "sqrt")
#: ``eta_t lambda <= 1`` is tested with this slack: Pegasos' ``eta_t = 1 / (lambda t)`` gives
#: ``eta_1 lambda = 1`` only up to a rounding.
STEP_ROUNDOFF = 1e-12

StepRule = str | Callable[[np.ndarray], Any]


def step_sizes(step: StepRule, t: np.ndarray, lam: float, eta0: float = 1.0) -> np.ndarray:
    r"""Step sizes ``eta_t`` for the step indices ``t = 1, 2, ...``.

    ``"pegasos"``: :math:`\eta_t = 1/(\lambda t)`; ``"sqrt"``: :math:`\eta_t = \eta_0/\sqrt t`; a
    callable receives the int64 array ``t`` and returns the step sizes (an array of the same
    shape, or one number), e.g. ``lambda t: 0.1 / t**0.75``.

    Raises
    ------
    InvalidInputError
        Unknown name, or a callable returning non-finite or non-positive steps.
    """
    if isinstance(step, str):
        if step == "pegasos":
            return 1.0 / (lam * t)
        if step == "sqrt":
            return eta0 / np.sqrt(t)
        raise InvalidInputError(
            f"unknown step {step!r}; choose one of {STEPS} or a callable t -> eta."
        )
    if not callable(step):
        raise InvalidTypeError(
            f"step must be one of {STEPS} or a callable t -> eta; got {type(step).__name__}."
        )
    try:
        etas = np.broadcast_to(np.asarray(step(t), dtype=np.float64), t.shape)
    except ValueError as exc:
        raise InvalidInputError(
            "the step callable must accept the int64 array of step indices t and return an "
            f"array of the same shape (or one number): {exc}"
        ) from None
    if not np.all(np.isfinite(etas) & (etas > 0)):
        raise InvalidInputError(
            "the step callable returned a step size that is not finite and > 0."
        )
    return np.ascontiguousarray(etas)


def pegasos_bound(lam: float, G: float, T: int | np.ndarray) -> float | np.ndarray:
    r"""The lectures' rate for Pegasos steps, in qpsvm's objective scale.

    For a :math:`\lambda`-strongly convex objective whose stochastic subgradients have norm at
    most :math:`G`, steps :math:`1/(\lambda t)` give (in expectation, for the average of the
    first :math:`T` iterates)

    .. math::

        F(\bar w_T) - F^* \le \frac{G^2 (1 + \log T)}{\lambda T}

    (Shalev-Shwartz et al. 2011 prove it with an extra factor 1/2). qpsvm's objective is
    ``P = C n F = F / lambda``, so the bound returned, on ``P - P*``, is
    ``G^2 (1 + log T) / (lambda^2 T)``.
    """
    T = np.asarray(T, dtype=np.float64)
    bound = G**2 * (1.0 + np.log(T)) / (lam**2 * T)
    return float(bound) if bound.ndim == 0 else bound


@dataclass
class OnlineProblem:
    """What the generic epoch loop needs from a formulation.

    Attributes
    ----------
    n : int
        Number of terms the per-example objective averages over (samples, pairs).
    C : float
        Slack penalty; ``lambda = 1/(C n)``.
    shape : tuple of int
        Shape of ``w``.
    radius : float
        A bound ``R >= ||w*||`` (the projection radius; ``inf`` when none is known).
    loss_bound : float
        A bound ``S`` on the norm of the loss part of a stochastic subgradient, ``||s_i y_i x_i||``
        (``inf`` when none is known).
    fit_intercept : bool
        Whether a free intercept ``b`` is updated too.
    epoch : callable
        ``epoch(order, etas, lam, batch, radius, v, avg, state, average)`` runs one pass of the
        numba kernel over the examples in ``order`` with step sizes ``etas``.
    """

    n: int
    C: float
    shape: tuple[int, ...]
    radius: float
    loss_bound: float
    fit_intercept: bool
    epoch: Callable[..., None]


def binary_problem(f: BinaryProblem) -> OnlineProblem:
    r"""The binary soft-margin SVM as an online problem (also the ranking SVM: a binary SVM
    without intercept on the pair differences ``z_p = x_i - x_j``, never formed: the kernel
    reads the two item rows).

    Radius: at the optimum ``||w*||^2 = sum_i m_i alpha_i - C sum_i s_i xi_i <= C sum_i s_i m_i``
    (strong duality ``P* = D*`` and ``0 <= alpha_i <= C s_i``), so ``R = sqrt(C sum_i s_i m_i)``;
    with ``s = m = 1`` it is Pegasos' ``sqrt(C n) = 1/sqrt(lambda)``. The loss part of a
    subgradient is bounded by ``S = max_i s_i ||x_i||``.
    """
    if not f.linear:
        raise InvalidInputError(
            f"method='subgradient' works on the primal and needs an explicit w; the "
            f"{f.kernel.name!r} kernel has none. Use method='smo' or method='qp'."
        )
    y, s, m = f.y, f.sample_weight, f.margin
    M, sqnorm = linear_data(f.X, f.n_features)
    radius = math.sqrt(f.C * float(s @ m))
    loss_bound = float(np.max(s * np.sqrt(sqnorm)))
    return OnlineProblem(
        n=f.n_samples,
        C=float(f.C),
        shape=(f.n_features,),
        radius=radius,
        loss_bound=loss_bound,
        fit_intercept=f.fit_intercept,
        epoch=partial(kernels.binary_epoch, M, y, s, m, sqnorm, f.fit_intercept),
    )


def multiclass_problem(f: MulticlassProblem) -> OnlineProblem:
    r"""The multiclass SVM (Crammer-Singer or Weston-Watkins) as an online problem.

    Radius: ``||W*||_F^2 = sum_ic alpha_ic - C sum_i s_i loss_i <= sum_ic alpha_ic``, at most
    ``C sum_i s_i`` (Crammer-Singer: ``sum_c alpha_ic <= C s_i``) or ``C (k - 1) sum_i s_i``
    (Weston-Watkins); ``R`` is its square root. The
    loss part of a subgradient, ``s_i x_i (e_{y_i} - e_c)^T`` summed over the violating classes
    ``c``, has norm at most ``S = max_i s_i ||x_i||`` times ``sqrt 2`` (one class) or
    ``sqrt(k (k - 1))`` (up to ``k - 1`` classes).
    """
    k = f.n_classes
    radius = math.sqrt(f.C * float(np.sum(f.sample_weight)) * (1 if f.crammer_singer else k - 1))
    sqnorm = row_sq_norms(f.X)
    factor = math.sqrt(2.0) if f.crammer_singer else math.sqrt(k * (k - 1))
    return OnlineProblem(
        n=f.n_samples,
        C=float(f.C),
        shape=(k, f.n_features),
        radius=radius,
        loss_bound=factor * float(np.max(f.sample_weight * np.sqrt(sqnorm))),
        fit_intercept=False,
        epoch=partial(
            kernels.multiclass_epoch,
            data_arrays(f.X),
            f.y.astype(np.int64),
            f.sample_weight,
            sqnorm,
            k,
            f.crammer_singer,
        ),
    )


def structural_problem(f: StructuralProblem) -> OnlineProblem:
    r"""The structural SVM as an online problem: each step calls the model's batched oracle on
    its batch (see :mod:`qpsvm.solvers.subgradient`). No bound on ``||w*||`` or on the
    subgradients is known without bounding the task loss, so there is no projection and no
    theoretical rate."""
    return OnlineProblem(
        n=f.n_samples,
        C=float(f.C),
        shape=(f.n_features,),
        radius=math.inf,
        loss_bound=math.inf,
        fit_intercept=False,
        epoch=partial(_structural_epoch, f),
    )


def _structural_epoch(
    f: StructuralProblem,
    order: np.ndarray,
    etas: np.ndarray,
    lam: float,
    batch: int,
    radius: float,
    v: np.ndarray,
    avg: np.ndarray,
    state: np.ndarray,
    average: bool,
) -> None:
    """One pass over the examples ``order``, a batched oracle call per step; ``v`` is ``w``
    itself (``state``'s scale stays 1) and ``avg`` the sum of the iterates."""
    for step, eta in enumerate(etas.tolist()):
        batch_ids = order[step * batch : (step + 1) * batch]
        rows, c = f.pair_rows(batch_ids, f.oracle(v, examples=batch_ids))
        violated = c - np.asarray(rows @ v).ravel() > 0
        direction = np.asarray(rows[violated].sum(axis=0)).ravel() / len(batch_ids)
        v[:] = (1.0 - eta * lam) * v + eta * direction
        if average:
            avg += v


@dataclass
class _Descent:
    r"""Subgradient descent's state between epochs, in the kernels' scaled representation
    ``w = a v`` (``a``, ``b`` and the averages' sums in ``state``, see
    :mod:`qpsvm.solvers._online_kernels`): the steps ``t`` taken, the largest step size and the
    seconds spent in the numba epochs."""

    prob: OnlineProblem
    #: ``lambda = 1 / (C n)``.
    lam: float
    batch_size: int
    #: Radius of the projection (0: none).
    radius: float
    average: bool
    v: np.ndarray
    avg: np.ndarray
    state: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0, 0.0, 0.0]))
    t: int = 0
    eta_max: float = 0.0
    kernel_time: float = 0.0

    @classmethod
    def start(
        cls, prob: OnlineProblem, batch_size: int, average: bool, projection: bool
    ) -> _Descent:
        """``w = 0``, ``b = 0``."""
        size = math.prod(prob.shape)
        return cls(
            prob,
            1.0 / (prob.C * prob.n),
            batch_size,
            prob.radius if projection else 0.0,
            bool(average),
            np.zeros(size),
            np.zeros(size if average else 1),
        )

    def epoch(
        self, rng: np.random.Generator, step: StepRule, eta0: float
    ) -> tuple[np.ndarray, float]:
        """One pass in a fresh random order (``ceil(n / batch_size)`` steps); the point
        reached (:meth:`point`)."""
        prob = self.prob
        steps = -(-prob.n // self.batch_size)
        order = rng.permutation(prob.n)
        etas = step_sizes(step, np.arange(self.t + 1, self.t + steps + 1), self.lam, eta0)
        self.eta_max = max(self.eta_max, float(etas.max()))
        self.state[kernels.ST_NORM2] = float(self.v @ self.v)
        tick = time.perf_counter()
        prob.epoch(
            order,
            etas,
            self.lam,
            self.batch_size,
            self.radius,
            self.v,
            self.avg,
            self.state,
            self.average,
        )
        self.kernel_time += time.perf_counter() - tick
        self.t += steps
        return self.point()

    def point(self) -> tuple[np.ndarray, float]:
        """The point after ``t`` steps: the last iterate, or the average
        ``(1/t) sum_s (w_s, b_s)``."""
        state, v, t = self.state, self.v, self.t
        if self.average:
            w, b = (self.avg + state[kernels.ST_BETA] * v) / t, state[kernels.ST_BSUM] / t
        else:
            w, b = state[kernels.ST_A] * v, state[kernels.ST_B]
        return w.reshape(self.prob.shape), float(b)


def _subgradient_bound(
    prob: OnlineProblem, lam: float, eta_max: float, projection: bool
) -> float | None:
    """``G = S + lambda max_t ||w_t||``, a bound on the stochastic subgradients' norm, or
    ``None``. ``||w_t|| <= S / lambda`` while every ``eta_t lambda <= 1`` (``w_{t+1}`` is then a
    convex combination of ``w_t`` and a vector of norm ``<= S / lambda``), and ``<= R`` with the
    projection."""
    w_bound = min(
        prob.radius if projection else math.inf,
        prob.loss_bound / lam if eta_max * lam <= 1.0 + STEP_ROUNDOFF else math.inf,
    )
    return prob.loss_bound + lam * w_bound if math.isfinite(w_bound) else None


def online_problem(f: Problem) -> OnlineProblem:
    """The :class:`OnlineProblem` formulation ``f`` names (its ``online_problem``)."""
    return part(f, "online_problem", "subgradient")(f)


def solve_subgradient(
    f: Problem,
    solver: str | None = None,
    *,
    epochs: int = 10,
    step: StepRule = "pegasos",
    eta0: float = 1.0,
    average: bool = False,
    batch_size: int = 1,
    projection: bool = False,
    random_state: Any = None,
    record_gap: bool = False,
) -> Solution:
    r"""Approximate solve by online subgradient descent (Pegasos and variants).

    Minimises :math:`\frac\lambda2\|w\|^2 + \frac1n\sum_i s_i\,\ell_i(w,b)` with
    :math:`\lambda = 1/(C n)`, which is qpsvm's :math:`\frac12\|w\|^2 + C\sum_i s_i\xi_i` divided by
    :math:`C n` (same minimiser; see :mod:`qpsvm.solvers.subgradient`).

    Parameters
    ----------
    f : Problem
        A formulation that names an online problem: :class:`~qpsvm.SoftMarginPrimal` (or
        :class:`~qpsvm.SoftMarginDual` with the linear kernel, solved on its primal),
        :class:`~qpsvm.RankingSVM`, :class:`~qpsvm.MulticlassSVM`, :class:`~qpsvm.StructuralSVM`.
    solver : None
        Online methods use no CVXPY solver (:meth:`~qpsvm.formulations.Formulation.solve`
        refuses one).
    epochs : int, default=10
        Passes over the data, each in a fresh random order.
    step : {"pegasos", "sqrt"} or callable, default="pegasos"
        ``1/(lambda t)``, ``eta0/sqrt(t)``, or ``step(t) -> eta`` called on the array of step
        indices of an epoch (see :func:`step_sizes`).
    eta0 : float, default=1.0
        Scale of the ``"sqrt"`` schedule.
    average : bool, default=False
        Return the average of all iterates ``(1/T) sum_t (w_t, b_t)`` instead of the last one.
    batch_size : int, default=1
        Samples per step (at most ``n``: a full batch is the deterministic subgradient method);
        the subgradient is averaged over the batch, so ``T = epochs * ceil(n / batch_size)``
        steps are taken.
    projection : bool, default=False
        Project ``w`` onto the ball of radius ``R >= ||w*||`` after each step (for the binary SVM
        ``R^2 = C sum_i s_i m_i``, i.e. Pegasos' ``1/sqrt(lambda)`` when
        ``s = m = 1``); ``b`` is not projected. Not for the structural SVM (no ``R`` known).
    random_state : int, numpy.random.Generator or None
        Seed of the shuffling; equal seeds give identical runs.
    record_gap : bool, default=False
        Certify the iterate after each epoch (``f.certify``) and store the certified gap in
        ``history.gap``; the last certificate is attached to the solution.

    Returns
    -------
    Solution
        ``w``, ``b``, slacks and the exact primal objective of the returned iterate;
        ``alpha=None``; ``status="max_epochs"``; ``history`` per epoch. ``info`` holds
        ``lambda``, ``steps`` (``T``), ``radius`` (``R``), ``G`` and ``theory_bound``: the
        lectures' ``G^2 (1 + log T)/(lambda T)`` in qpsvm's scale (:func:`pegasos_bound`) for
        Pegasos steps without an intercept, where the objective is strongly convex in every
        variable; ``None`` otherwise. ``G = S + lambda max_t ||w_t||`` bounds the norm of the
        stochastic subgradients, with ``S`` the bound on their loss part (``max_i s_i ||x_i||``
        for the binary SVM) and ``||w_t|| <= S/lambda`` when every ``eta_t lambda <= 1`` (always
        for Pegasos: ``G = 2 S``), ``||w_t|| <= R`` with the projection; ``None`` when neither
        applies.
        ``backend_time`` is the time spent in the numba epochs (the rest of ``solve_time`` is
        the history's exact objectives and certificates).

    Raises
    ------
    InvalidInputError
        A bad argument, a nonlinear kernel, or a projection without a known radius.
    """
    epochs = check_int(epochs, "epochs")
    batch_size = check_int(batch_size, "batch_size")
    eta0 = check_number(eta0, "eta0")
    prob = online_problem(f)
    if projection and not math.isfinite(prob.radius):
        raise InvalidInputError(
            f"projection needs a bound R >= ||w*||, and {type(f).__name__} has none; drop "
            "projection=True."
        )
    run = _Descent.start(prob, min(batch_size, prob.n), average, projection)
    rng = check_random_state(random_state)
    history = History(
        iteration=np.zeros(epochs, dtype=np.int64),
        objective=np.zeros(epochs),
        time=np.zeros(epochs),
        gap=np.zeros(epochs) if record_gap else None,
    )
    certificate = None
    start = time.perf_counter()
    for e in range(epochs):
        w, b = run.epoch(rng, step, eta0)
        history.iteration[e] = run.t
        if e < epochs - 1:  # the last objective is the solution's, computed once below
            history.objective[e] = f.objective(w, b)
            logger.debug("subgradient epoch %d: objective %.10g", e + 1, history.objective[e])
        if record_gap:
            certificate = f.certify(w=w, b=b, reference=False)
            history.gap[e] = certificate.gap
        history.time[e] = time.perf_counter() - start
    G = _subgradient_bound(prob, run.lam, run.eta_max, projection)
    pegasos = isinstance(step, str) and step == "pegasos" and not prob.fit_intercept
    theory = pegasos_bound(run.lam, G, run.t) if pegasos and G is not None else None
    solution = f.solution_from(
        Candidate(w=w, b=b),
        certificate,
        solver="subgradient",
        status="max_epochs",
        n_iter=epochs,
        history=history,
        info={
            "lambda": run.lam,
            "steps": run.t,
            "radius": prob.radius,
            "G": G,
            "theory_bound": theory,
            "step": step if isinstance(step, str) else "callable",
            "average": bool(average),
            "batch_size": run.batch_size,
            "backend_time": run.kernel_time,
        },
    )
    history.objective[-1] = solution.objective
    return solution

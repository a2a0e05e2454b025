r"""The latent structural SVM (Yu & Joachims, "Learning structural SVMs with latent variables",
ICML 2009), trained by the concave-convex procedure with every convex step certified.

For a :class:`~qpsvm.models.latent.LatentModel` (outputs ``(y, h)``, ``h`` hidden) and training
pairs :math:`(x_i, y_i)`, the objective is

.. math::

    L(w) = \tfrac12\|w\|^2 + C\sum_i \Big[\max_{(y, h)} \big(\Delta(y_i, (y, h))
    + w\cdot\Psi(x_i, y, h)\big) - \max_h w\cdot\Psi(x_i, y_i, h)\Big],

a difference of convex functions. CCCP alternates two steps. (1) Impute
:math:`h_i = \arg\max_h w_t\cdot\Psi(x_i, y_i, h)`; (2) minimise the convex upper bound

.. math:: F_t(w) = \tfrac12\|w\|^2 + C\sum_i \Big[\max_{(y,h)}
          \big(\Delta + w\cdot\Psi(x_i, y, h)\big) - w\cdot\Psi(x_i, y_i, h_i)\Big] \;\ge\; L(w),

which is the structural SVM with ground truths :math:`(y_i, h_i)`
(:class:`~qpsvm.StructuralSVM`), solved by any of its methods to a certified gap. Since
:math:`F_t(w_t) = L(w_t)` when ``h`` is imputed at :math:`w_t`,
:math:`L(w_{t+1}) \le F_t(w_{t+1}) \le F_t(w_t) + \mathrm{gap}_t = L(w_t) + \mathrm{gap}_t`: the
objective never increases beyond the certified gap of a step, and the learner keeps the previous
``w`` (and stops) if a step would increase it. The result is a local optimum of :math:`L`; each
convex step's optimum is certified, not the non-convex problem's.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qpsvm._validation import check_int, check_tol
from qpsvm.exceptions import InvalidTypeError, UncertifiedSolutionError
from qpsvm.formulations.structural import StructuralSVM
from qpsvm.models.latent import LatentModel
from qpsvm.solution import Solution
from qpsvm.verify.certificate import DEFAULT_TOL, relative
from qpsvm.verify.structural import output_key

__all__ = ["LatentSolution", "LatentStructuralSVM"]

logger = logging.getLogger("qpsvm")


@dataclass
class LatentSolution:
    """The result of :meth:`LatentStructuralSVM.solve`.

    Attributes
    ----------
    w : ndarray of shape (n_joint_features,)
    latent : list
        The completions :math:`h_i` imputed at ``w``.
    objective : float
        :math:`L(w)`.
    objectives : ndarray
        :math:`L(w_t)` at the start and after each accepted convex step (non-increasing).
    steps : list of Solution
        The convex steps, each with its passing certificate.
    status : str
        ``"converged"`` (the completions stopped changing, or ``L`` decreased by at most ``tol``
        relative), ``"no_decrease"`` (a step would have increased ``L``; its ``w`` was not taken)
        or ``"max_iter"``.
    n_iter : int
        Convex steps solved.
    solve_time : float
        Seconds.
    """

    w: np.ndarray
    latent: list[Any]
    objective: float
    objectives: np.ndarray
    steps: list[Solution] = field(default_factory=list)
    status: str = "max_iter"
    n_iter: int = 0
    solve_time: float = 0.0


class LatentStructuralSVM:
    r"""Latent structural SVM: :math:`\min_w L(w)` by CCCP (see :mod:`qpsvm.formulations.latent`).

    Parameters
    ----------
    model : LatentModel
        E.g. :class:`~qpsvm.models.LatentMulticlassModel`.
    X : sequence
        Inputs.
    Y : sequence
        Observed outputs ``y_i`` (without completions).
    C : float, default=1.0
    n_jobs : int or None, default=None
        Workers for the oracle calls of every convex step (see :class:`~qpsvm.StructuralSVM`).

    Examples
    --------
    >>> import numpy as np, qpsvm
    >>> from qpsvm.models import LatentMulticlassModel
    >>> X = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0]])
    >>> f = qpsvm.LatentStructuralSVM(LatentMulticlassModel(2, 2, 2), X, [0, 0, 1, 1], C=10.0)
    >>> sol = f.solve()
    >>> [y for y, _ in f.predict(X, sol)]
    [0, 0, 1, 1]
    """

    def __init__(
        self, model: LatentModel, X: Any, Y: Any, C: float = 1.0, n_jobs: int | None = None
    ) -> None:
        if not isinstance(model, LatentModel):
            raise InvalidTypeError(
                f"model must be a qpsvm.models.LatentModel (outputs (y, h) with a latent h), "
                f"got {type(model).__name__}."
            )
        self.model = model
        pairs = [(y, model.initial_latent(x, y)) for x, y in zip(X, Y, strict=True)]
        self._start = StructuralSVM(model, X, pairs, C=C, n_jobs=n_jobs)
        self.C = self._start.C
        self.n_jobs = n_jobs
        self.X = self._start.X
        self.labels = [y for y, _ in self._start.Y]

    def impute(self, w: Any) -> list[Any]:
        r"""The completions :math:`h_i = \arg\max_h w\cdot\Psi(x_i, y_i, h)`."""
        w = self.model.check_weights(w)
        return [
            self.model.latent_inference(x, y, w) for x, y in zip(self.X, self.labels, strict=True)
        ]

    def convex_step(self, latent: list[Any]) -> StructuralSVM:
        """The convex problem :math:`F` with the completions ``latent`` fixed: a
        :class:`~qpsvm.StructuralSVM` with ground truths ``(y_i, h_i)``."""
        pairs = list(zip(self.labels, latent, strict=True))
        return StructuralSVM(self.model, self.X, pairs, C=self.C, n_jobs=self.n_jobs)

    def objective(self, w: Any) -> float:
        r"""The latent objective :math:`L(w)` (the convex step's objective with ``h`` imputed at
        ``w``)."""
        return self.convex_step(self.impute(w)).objective(w)

    def predict(self, X: Any, solution: LatentSolution | np.ndarray) -> list[Any]:
        r"""Predicted pairs :math:`\arg\max_{(y,h)} w\cdot\Psi(x, y, h)`."""
        w = solution.w if isinstance(solution, LatentSolution) else solution
        return list(self.model.inference_batch([self.model.check_input(x) for x in X], w))

    def solve(
        self,
        method: str | None = None,
        *,
        tol: float = DEFAULT_TOL,
        max_iter: int = 50,
        **options: Any,
    ) -> LatentSolution:
        """Run CCCP from ``w = 0`` and the model's initial completions.

        Parameters
        ----------
        method : str, optional
            The convex steps' method (:meth:`qpsvm.StructuralSVM.solve`; default the cutting
            plane).
        tol : float, default=1e-9
            Each step's certified relative gap, and the relative decrease of ``L`` below which
            the procedure stops.
        max_iter : int, default=50
            Convex steps at most.
        **options
            Passed to every convex step.

        Raises
        ------
        UncertifiedSolutionError
            If a convex step stops without a passing certificate.
        """
        tol = check_tol(tol)
        max_iter = check_int(max_iter, "max_iter", 1, "LatentStructuralSVM.solve")
        start = time.perf_counter()
        w = np.zeros(self.model.n_joint_features)
        latent = [h for _, h in self._start.Y]
        objectives = [self._start.objective(w)]  # F_0(0) >= L(0): the bound CCCP starts from
        steps: list[Solution] = []
        status = "max_iter"
        for t in range(max_iter):
            f = self._start if t == 0 else self.convex_step(latent)
            sol = f.solve(method, tol=tol, **options)
            if not sol.certificate.passed:
                raise UncertifiedSolutionError(
                    f"convex step {t} stopped ({sol.status}) at a certified relative gap of "
                    f"{sol.certificate.relative_gap:.2e} > tol {tol:.0e}; raise its iteration "
                    "limit or loosen tol."
                )
            steps.append(sol)
            new_latent = self.impute(sol.w)
            value = self.convex_step(new_latent).objective(sol.w)
            logger.info("latent SSVM step %d: objective %.10g", t, value)
            if value > objectives[-1]:
                status = "no_decrease"
                break
            objectives.append(value)
            w = sol.w
            unchanged = [output_key(h) for h in new_latent] == [output_key(h) for h in latent]
            latent = new_latent
            if unchanged or relative(objectives[-2] - value, value) <= tol:
                status = "converged"
                break
        return LatentSolution(
            w=w,
            latent=latent,
            objective=objectives[-1],
            objectives=np.asarray(objectives),
            steps=steps,
            status=status,
            n_iter=len(steps),
            solve_time=time.perf_counter() - start,
        )

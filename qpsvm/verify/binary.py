"""Certificates for the binary formulations (hard margin, soft-margin primal and dual).

The primal objective is recomputed from the data; the dual point is the candidate's own ``alpha``
projected onto the feasible set, or, for a bare ``w``, the best ``alpha`` constructed from the
margins: ``alpha_i = C s_i`` where the margin is violated, ``0`` beyond it, and least squares
``sum_i alpha_i y_i x_i = w`` (within the box, with the balance constraint) on the margin, then
projected; and the maximiser of the dual with those sets fixed (the KKT equations), clipped and
projected. Several thresholds for "on the margin" are tried and the best lower bound is kept,
which makes the gap tight for any candidate near the optimum: once the sets are those of the
optimum, the lower bound is the optimum itself and the gap is the true suboptimality.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import lsq_linear

from qpsvm.exceptions import InvalidInputError
from qpsvm.verify.candidates import Candidate
from qpsvm.verify.certificate import DEFAULT_TOL, Certificate

__all__ = ["certify_binary", "dual_points", "improve_dual"]

#: Thresholds on ``|y_i f(x_i) - m_i| / max(1, max m)`` for "on the margin".
MARGIN_TAUS = (0.0, 1e-12, 1e-10, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
#: Largest margin set solved by least squares (larger sets are skipped).
MAX_MARGIN_SET = 5000
#: Largest margin set for which the KKT equations are solved (an |M| x |M| system).
MAX_KKT_SET = 2000


def _fsum_dot(a: np.ndarray, b: np.ndarray) -> float:
    return math.fsum(np.multiply(a, b).tolist())


def dual_points(f: Any, residual: np.ndarray, w: np.ndarray | None) -> list[np.ndarray]:
    """Dual-feasible points built from the margin residuals ``y_i f(x_i) - m_i`` of a candidate.

    ``w`` (linear kernel) is matched by bounded least squares on the margin set; for a kernel the
    margin set keeps zeros (the candidate's ``alpha`` is projected separately).
    """
    u = f.upper
    finite = np.isfinite(u)
    scale = max(1.0, float(np.max(f.margin)))
    points: list[np.ndarray] = []
    seen: set[bytes] = set()
    for tau in MARGIN_TAUS:
        t = tau * scale
        on = np.abs(residual) <= t
        bound = (residual < -t) & finite
        key = on.tobytes() + bound.tobytes()
        if key in seen:
            continue
        seen.add(key)
        alpha = np.where(bound, u, 0.0)
        M = np.flatnonzero(on)
        if 0 < M.size <= MAX_KKT_SET:
            points.append(f.project_dual(f.kkt_on_sets(M, bound)[0]))
        if w is not None and 0 < M.size <= MAX_MARGIN_SET:
            target = w - f.expansion(alpha)
            XM = f.X[M]
            A = (XM.toarray() if sp.issparse(XM) else XM) * f.y[M][:, None]
            A = A.T
            if f.fit_intercept:
                weight = max(1.0, float(np.sqrt(np.max(np.sum(A * A, axis=0)))))
                A = np.vstack([A, weight * f.y[M]])
                target = np.append(target, -weight * float(f.y @ alpha))
            upper_M = np.where(np.isfinite(u[M]), u[M], np.inf)
            res = lsq_linear(
                A,
                target,
                bounds=(np.zeros(M.size), upper_M),
                tol=1e-13,
                lsmr_tol="auto",
                method="bvls" if M.size <= 300 else "trf",
            )
            alpha[M] = res.x
        points.append(f.project_dual(alpha))
    return points


def improve_dual(
    f: Any, alpha: np.ndarray, value: float, rounds: int = 5
) -> tuple[np.ndarray, float]:
    """Raise ``D(alpha)`` by re-reading the support sets off ``alpha``'s own primal point.

    ``alpha`` defines ``w(alpha) = sum_i alpha_i y_i phi(x_i)``; its margins give new sets, whose
    KKT solution (clipped, projected) replaces ``alpha`` while ``D`` increases (a primal-dual
    active-set step). Each accepted point is dual feasible, so the bound stays valid.
    """
    finite = np.isfinite(f.upper)
    tau = 1e-9 * max(1.0, float(np.max(f.margin)))
    for _ in range(rounds):
        scores = f.scores(alpha=alpha)
        free = (alpha > 0) & (alpha < f.upper)
        if f.fit_intercept and np.any(free):
            b = float(np.median(f.y[free] * f.margin[free] - scores[free]))
        else:
            b = f.optimal_intercept(scores)
        residual = f.y * (scores + b) - f.margin
        M = np.flatnonzero(np.abs(residual) <= tau)
        if not 0 < M.size <= MAX_KKT_SET:
            break
        trial = f.project_dual(f.kkt_on_sets(M, (residual < -tau) & finite)[0])
        trial_value = f.dual_objective(trial)
        if trial_value <= value:
            break
        alpha, value = trial, trial_value
    return alpha, value


def certify_binary(f: Any, cand: Candidate, tol: float = DEFAULT_TOL) -> Certificate:
    """Certify a candidate of a binary formulation (see :mod:`qpsvm.verify.conventions`).

    Parameters
    ----------
    f : BinaryFormulation
    cand : Candidate
        ``w`` (linear kernel) and/or ``alpha``; ``b=None`` takes the best intercept for ``w``;
        ``xi``, when given, is checked for feasibility.
    tol : float
        Relative tolerance of the test.
    """
    tol = f._check_tol(tol)
    if cand.w is None and cand.alpha is None:
        raise InvalidInputError("nothing to certify: pass a solution, w (and b), or alpha.")
    alpha_in = f.check_alpha(cand.alpha) if cand.alpha is not None else None
    if f.linear:
        w = f.check_w(cand.w) if cand.w is not None else f.expansion(alpha_in)
        scores = f.scores(w=w)
        norm2 = _fsum_dot(w, w)
    else:
        if alpha_in is None:
            raise InvalidInputError(
                f"the {f.kernel.name!r} kernel has no explicit w: certify alpha instead."
            )
        w = None
        scores = f.scores(alpha=alpha_in)
        norm2 = _fsum_dot(alpha_in * f.y, scores)
    b = f.optimal_intercept(scores) if cand.b is None else f.check_b(cand.b)
    margins = f.y * (scores + b)
    residual = margins - f.margin
    hinge = np.maximum(0.0, -residual)
    hard = not math.isfinite(f.C)
    if hard:
        primal = 0.5 * norm2
        primal_inf = float(np.max(hinge, initial=0.0))
    else:
        primal = f.primal_value(norm2, scores, b)
        primal_inf = 0.0
        if cand.xi is not None:
            xi = np.asarray(cand.xi, dtype=np.float64).ravel()
            if xi.shape != (f.n_samples,):
                raise InvalidInputError(f"xi must have shape ({f.n_samples},); got {xi.shape}.")
            primal_inf = max(0.0, float(np.max(-residual - xi)), float(np.max(-xi)))

    pool = dual_points(f, residual, w)
    if alpha_in is not None:
        pool.append(f.project_dual(alpha_in))
    pool.append(np.zeros(f.n_samples))  # always feasible: D(0) = 0 <= P*
    values = [f.dual_objective(a) for a in pool]
    best = int(np.argmax(values))
    alpha, dual = improve_dual(f, pool[best], values[best])

    comp = np.abs(alpha * (residual + hinge))
    if not hard:
        comp = np.maximum(comp, np.abs((f.upper - alpha) * hinge))
    stationarity = float(np.linalg.norm(w - f.expansion(alpha))) if w is not None else 0.0
    return Certificate(
        primal_objective=float(primal),
        dual_objective=float(dual),
        primal_infeasibility=primal_inf,
        dual_infeasibility=f.dual_infeasibility(alpha_in) if alpha_in is not None else 0.0,
        complementarity=float(np.max(comp, initial=0.0)),
        stationarity=stationarity,
        tol=tol,
        formulation=type(f).__name__,
        alpha=alpha,
    )

r"""Exact refinement of an approximate optimum on its support sets.

Given the sets a solver identified — ``E`` (margin violated, ``alpha_i = C s_i``), ``M`` (on the
margin, ``0 < alpha_i < C s_i``) and ``O`` (beyond it, ``alpha_i = 0``) — the KKT conditions of
the binary SVM are linear:

.. math::

    \sum_{j \in M} \alpha_j y_i y_j K_{ij} + y_i b = m_i - y_i \sum_{j\in E} C s_j y_j K_{ij}
    \quad (i \in M), \qquad \sum_{j\in M} \alpha_j y_j = -\sum_{j \in E} C s_j y_j.

Solving them in least squares gives the optimum to round-off whenever the sets are right; the
certificate then decides which point is better.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qpsvm.formulations.binary import BinaryFormulation
from qpsvm.formulations.model import Candidate

__all__ = ["refine", "refine_binary"]

#: Thresholds (relative to ``max(1, max m_i)``) on ``|y_i f(x_i) - m_i|`` defining ``M``.
TAUS = (1e-7, 1e-5, 1e-9)
#: Refinement is skipped when more samples than this lie on the margin.
MAX_SUPPORT = 4000


def refine(f: Any, cand: Candidate) -> list[Candidate]:
    """Refined versions of ``cand`` (possibly none) for formulations that support it."""
    if isinstance(f, BinaryFormulation):
        return refine_binary(f, cand)
    return []


def _residuals(f: BinaryFormulation, cand: Candidate) -> np.ndarray:
    if cand.w is not None:
        scores = f.scores(w=cand.w)
    else:
        scores = f.scores(alpha=cand.alpha)
    return f.y * (scores + float(cand.b or 0.0)) - f.margin


def solve_support(
    f: BinaryFormulation, M: np.ndarray, E: np.ndarray
) -> tuple[np.ndarray, float] | None:
    """Solve the KKT equations for ``alpha_M`` and ``b`` given the sets; ``None`` if the answer
    leaves the box."""
    u = f.upper
    rows = f.gram_rows(M) if M.size else np.zeros((0, f.n_samples))
    yM = f.y[M]
    uyE = u[E] * f.y[E] if E.size else np.zeros(0)
    Q = (yM[:, None] * yM[None, :]) * rows[:, M]
    rhs = f.margin[M] - yM * (rows[:, E] @ uyE if E.size else 0.0)
    if f.fit_intercept:
        k = M.size
        A = np.zeros((k + 1, k + 1))
        A[:k, :k] = Q
        A[:k, k] = yM
        A[k, :k] = yM
        rhs = np.append(rhs, -float(f.y[E] @ u[E]) if E.size else 0.0)
        sol = np.linalg.lstsq(A, rhs, rcond=None)[0]
        aM, b = sol[:k], float(sol[k])
    else:
        aM = np.linalg.lstsq(Q, rhs, rcond=None)[0] if M.size else np.zeros(0)
        b = 0.0
    slack = 1e-10 * max(1.0, float(np.max(np.abs(aM), initial=0.0)))
    if np.any(aM < -slack) or np.any(aM > u[M] + slack):
        return None
    alpha = np.zeros(f.n_samples)
    alpha[E] = u[E]
    alpha[M] = np.clip(aM, 0.0, u[M])
    return alpha, b


def refine_binary(f: BinaryFormulation, cand: Candidate) -> list[Candidate]:
    """Candidates from the KKT equations on the support sets read off ``cand`` at several
    thresholds."""
    if cand.w is None and cand.alpha is None:
        return []
    r = _residuals(f, cand)
    scale = max(1.0, float(np.max(f.margin)))
    finite = np.isfinite(f.upper)
    out: list[Candidate] = []
    seen: set[bytes] = set()
    for tau in TAUS:
        on = np.abs(r) <= tau * scale
        M = np.flatnonzero(on)
        E = np.flatnonzero((r < -tau * scale) & finite)
        key = on.tobytes() + E.tobytes()
        if key in seen or M.size > MAX_SUPPORT or (M.size == 0 and not E.size):
            continue
        seen.add(key)
        solved = solve_support(f, M, E)
        if solved is None:
            continue
        alpha, b = solved
        if M.size == 0:
            b = f.optimal_intercept(f.scores(alpha=alpha))
        w = f.expansion(alpha) if f.linear else None
        out.append(Candidate(w=w, b=b, alpha=alpha))
    return out

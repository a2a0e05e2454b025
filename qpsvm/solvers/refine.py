"""Exact refinement of an approximate optimum on its support sets.

Given the sets a solver identified — ``E`` (margin violated, ``alpha_i = C s_i``), ``M`` (on the
margin) and ``O`` (beyond it, ``alpha_i = 0``) — the KKT conditions are linear equations
(:meth:`~qpsvm.formulations.binary.BinaryFormulation.support_solution`); their solution is the
optimum to round-off whenever the sets are right, and the certificate decides which point is
better.
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
        aM, b = f.support_solution(M, E)
        slack = 1e-10 * max(1.0, float(np.max(np.abs(aM), initial=0.0)))
        if np.any(aM < -slack) or np.any(aM > f.upper[M] + slack):
            continue  # the sets read off the candidate are not those of an optimum
        alpha = np.where(r < -tau * scale, f.upper, 0.0) * finite
        alpha[M] = np.clip(aM, 0.0, f.upper[M])
        if M.size == 0:
            b = f.optimal_intercept(f.scores(alpha=alpha))
        w = f.expansion(alpha) if f.linear else None
        out.append(Candidate(w=w, b=b, alpha=alpha))
    return out

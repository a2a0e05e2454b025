"""Exact refinement of an approximate optimum on its support sets.

Given the sets a solver identified — ``E`` (margin violated, ``alpha_i = C s_i``), ``M`` (on the
margin) and ``O`` (beyond it, ``alpha_i = 0``) — the KKT conditions are linear equations
(:func:`qpsvm.support_sets.support_solution`); their solution is the
optimum to round-off whenever the sets are right, and the certificate decides which point is
better.
"""

from __future__ import annotations

import numpy as np

from qpsvm.contract import BinaryProblem, MulticlassProblem
from qpsvm.solution import Candidate
from qpsvm.support_sets import ON_MARGIN, kkt_on_sets, margin_scale, support_sets

__all__ = ["refine_binary", "refine_sparse_weights", "residuals"]

#: Thresholds (relative to ``max(1, max m_i)``) on ``|y_i f(x_i) - m_i|`` defining ``M``.
TAUS = (1e-7, 1e-5, 1e-9)
#: Threshold of the polishing rounds, once the point solves the KKT equations of its sets.
POLISH_TAU = ON_MARGIN
#: Refinement is skipped when more samples than this lie on the margin.
MAX_SUPPORT = 4000
#: Thresholds (relative to ``max(1, max |W|)``) below which an L1-penalised weight is read as 0.
ZERO_TAUS = (1e-9, 1e-7)


def residuals(f: BinaryProblem, cand: Candidate) -> np.ndarray:
    """``y_i (w . phi(x_i) + b) - m_i`` on the training data, from ``w`` or ``alpha``."""
    if cand.w is not None:
        scores = f.scores(w=cand.w)
    else:
        scores = f.scores(alpha=cand.alpha)
    return f.y * (scores + float(cand.b or 0.0)) - f.margin


def refine_binary(f: BinaryProblem, cand: Candidate, rounds: int = 5) -> list[Candidate]:
    """Candidates from the KKT equations on the support sets read off ``cand`` at several
    thresholds, each polished by re-reading the sets off its own point until they are stable
    (a primal-dual active-set iteration)."""
    if cand.w is None and cand.alpha is None:
        return []
    scale = margin_scale(f)
    out: list[Candidate] = []
    seen: set[bytes] = set()
    for first in TAUS:
        r, tau, last = residuals(f, cand), first, None
        for _ in range(rounds):
            on, bound = support_sets(f, r, tau)
            key = on.tobytes() + bound.tobytes()
            if key in seen or np.count_nonzero(on) > MAX_SUPPORT:
                break
            seen.add(key)
            alpha, b = kkt_on_sets(f, np.flatnonzero(on), bound)
            last = Candidate(w=f.expansion(alpha) if f.linear else None, b=b, alpha=alpha)
            r = residuals(f, last)
            # the KKT point lies exactly on the margin where 0 < alpha < C s: the residuals it
            # shows there are round-off (of alpha itself, ~eps |x|^2 on badly scaled data), a
            # floor below which re-reading the sets would misread them
            free = on & (alpha > 0) & (alpha < f.upper)
            tau = max(POLISH_TAU, 2.0 * float(np.max(np.abs(r[free]), initial=0.0)) / scale)
        if last is not None:
            out.append(last)
    return out


def refine_sparse_weights(f: MulticlassProblem, cand: Candidate) -> list[Candidate]:
    """Candidates with the penalised weights that an interior-point solver leaves near 0 set to
    0 exactly (at the thresholds :data:`ZERO_TAUS`), the multipliers kept: an L1 penalty's
    optimum has exact zeros, where the penalty's gradient is undetermined, and a weight of
    ``1e-10`` instead fixes it at ``+-1`` in the certificate's fit (measured on a
    Crammer-Singer L1 problem with free intercepts: relative gap ``2e-11`` to ``2e-13``)."""
    if cand.w is None:
        return []
    W = np.asarray(cand.w, dtype=np.float64)
    P = f.penalised(W)
    scale = max(1.0, float(np.max(np.abs(P), initial=0.0)))
    out = []
    for tau in ZERO_TAUS:
        small = (np.abs(P) < tau * scale) & (P != 0.0)
        if np.any(small):
            Z = W.copy()
            f.penalised(Z)[small] = 0.0
            out.append(Candidate(w=Z, b=cand.b, alpha=cand.alpha))
    return out

"""The best intercept of a binary SVM for fixed scores: an exact search over breakpoints."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["hinge_intercept"]


def hinge_intercept(
    y: np.ndarray, margin: np.ndarray, sample_weight: np.ndarray, scores: np.ndarray, C: float
) -> float:
    """The ``b`` minimising ``sum_i s_i max(0, m_i - y_i (score_i + b))``.

    The hinge sum is piecewise linear in ``b`` with breakpoints ``y_i m_i - score_i``; its
    minimum is at a breakpoint where the slope changes sign, found by sorting. For the hard
    margin (``C = inf``) the midpoint of the feasible interval is taken.
    """
    pos = y > 0
    bp = y * margin - scores
    if not math.isfinite(C):
        lo = float(np.max(bp[pos])) if np.any(pos) else -math.inf
        hi = float(np.min(bp[~pos])) if np.any(~pos) else math.inf
        return 0.5 * (lo + hi)
    order = np.argsort(bp, kind="stable")
    bp_sorted, s_sorted, pos_sorted = bp[order], sample_weight[order], pos[order]
    # slope just right of breakpoint k: sum of s over negatives with bp <= b minus positives
    # with bp > b
    neg_left = np.cumsum(np.where(pos_sorted, 0.0, s_sorted))
    pos_right = float(np.sum(s_sorted[pos_sorted])) - np.cumsum(np.where(pos_sorted, s_sorted, 0.0))
    slope = neg_left - pos_right
    k = int(np.searchsorted(slope, 0.0, side="left"))
    return float(bp_sorted[min(k, len(bp_sorted) - 1)])

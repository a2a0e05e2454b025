"""Comparing a candidate (an online solution, a scikit-learn estimator) with the exact optimum."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from qpsvm.verify.certificate import relative

__all__ = ["Comparison", "compare"]


@dataclass
class Comparison:
    """How far a candidate is from a reference optimum.

    Attributes
    ----------
    suboptimality : float
        ``P(candidate) - P(reference)``; never below ``-gap(reference)`` when the reference is
        certified, so a negative value beyond that would expose a wrong reference.
    relative_suboptimality : float
        ``suboptimality / max(1, |P(reference)|)``.
    distance : float
        ``||w - w*||`` (for a kernel: the RKHS norm ``sqrt(d^T K d)`` with ``d = (a - a*) y``).
    intercept_distance : float
        ``|b - b*|`` (``0`` without an intercept).
    certified_gap : float
        The candidate's own certified gap ``P - D``, computed without the reference.
    distance_bound : float
        ``sqrt(2 certified_gap) >= distance``.
    theory_bound : float or None
        For online solutions, the bound of the theory for the run, e.g. the lectures'
        ``G^2 (1 + log T) / (lambda T)`` for step ``1/(lambda t)``, next to ``suboptimality``.
    reference_gap : float
        The reference's certified gap (how exact the reference is).
    """

    suboptimality: float
    relative_suboptimality: float
    distance: float
    intercept_distance: float
    certified_gap: float
    distance_bound: float
    reference_gap: float
    theory_bound: float | None = None


def _distance(f: Any, a: Any, b: Any) -> float:
    if a.w is not None and b.w is not None:
        return float(np.linalg.norm(np.asarray(a.w) - np.asarray(b.w)))
    if a.alpha is not None and b.alpha is not None:
        d = (np.asarray(a.alpha) - np.asarray(b.alpha)) * f.y
        return math.sqrt(max(0.0, float(d @ (f.gram() @ d))))
    return math.nan


def compare(f: Any, candidate: Any, reference: Any) -> Comparison:
    """Compare ``candidate`` with ``reference`` on formulation ``f`` (see :class:`Comparison`)."""
    cand = f.certify(candidate)
    ref = f.certify(reference)
    read = f.candidate_reader
    module, _, name = read.partition(":")
    import importlib

    reader = getattr(importlib.import_module(module), name)
    c, r = reader(f, candidate), reader(f, reference)
    cb = np.asarray(c.b if c.b is not None else 0.0, dtype=np.float64)
    rb = np.asarray(r.b if r.b is not None else 0.0, dtype=np.float64)
    sub = cand.primal_objective - ref.primal_objective
    info = getattr(candidate, "info", None) or {}
    return Comparison(
        suboptimality=sub,
        relative_suboptimality=relative(sub, ref.primal_objective),
        distance=_distance(f, c, r),
        intercept_distance=float(np.linalg.norm(np.ravel(cb - rb))),
        certified_gap=cand.gap,
        distance_bound=cand.distance_bound,
        reference_gap=ref.gap,
        theory_bound=info.get("theory_bound"),
    )

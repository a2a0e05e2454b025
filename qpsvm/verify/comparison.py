"""Comparing a candidate (an online solution, a scikit-learn estimator) with the exact optimum."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from qpsvm.contract import Problem, load
from qpsvm.verify.certificate import Certificate, relative
from qpsvm.verify.rigorous import distance_lower, down, gamma, up

__all__ = ["Comparison", "compare"]


@dataclass
class Comparison:
    """How far a candidate is from a reference optimum ``(w*, b*)`` with objective ``P*``.

    Attributes
    ----------
    suboptimality : float
        ``P(candidate) - P*``, with ``P*`` the reference's primal objective. It is never below
        ``-reference_gap`` (weak duality: ``P(candidate) >= D >= P* - reference_gap``), so a
        negative value beyond that would expose a wrong reference.
    relative_suboptimality : float
        ``suboptimality / max(1, |P*|)``.
    distance : float
        ``||w - w*||`` (for a kernel: the RKHS norm ``sqrt(d^T K d)`` with ``d = (a - a*) y``).
    distance_lower : float
        A lower bound on the exact ``distance``, rounding included
        (:func:`~qpsvm.verify.rigorous.distance_lower`; for a kernel, of the quadratic form
        over the Gram values as computed).
    intercept_distance : float
        ``|b - b*|`` (``0`` without an intercept). A candidate without ``b`` takes the best
        intercept for its ``w``, as its certificate does.
    certified_gap : float
        The candidate's own certified gap ``P - D``, computed without the reference; it bounds
        ``P - P*`` from above.
    distance_bound : float
        ``sqrt(2 certified_gap) >= distance`` (``P`` is 1-strongly convex in ``w``).
    reference_gap : float
        The reference's certified gap (how exact ``P*`` is).
    certificate : Certificate or None
        The candidate's certificate: its enclosure ``[lower, upper]`` contains ``P*`` and
        ``upper >= P(candidate)``.
    reference_certificate : Certificate or None
        The reference's certificate.
    theory_bound : float or None
        For online solutions, the bound the theory gives for the run, next to the measured
        ``suboptimality``: the lectures' ``G^2 (1 + log T) / (lambda T)`` for Pegasos steps
        ``1/(lambda t)``, in qpsvm's objective scale (see
        :func:`qpsvm.solvers.subgradient.pegasos_bound`); ``None`` for other candidates.
    """

    suboptimality: float
    relative_suboptimality: float
    distance: float
    intercept_distance: float
    certified_gap: float
    distance_bound: float
    reference_gap: float
    distance_lower: float = 0.0
    certificate: Certificate | None = None
    reference_certificate: Certificate | None = None
    theory_bound: float | None = None

    @property
    def consistent(self) -> bool:
        r"""Whether the two certificates agree with each other and with the distance, by what
        they prove, without any allowance: both enclosures contain ``P*``, so they intersect;
        and :math:`\|w - w_{ref}\| \le \|w - w^*\| + \|w_{ref} - w^*\|`, so the distance's
        lower bound cannot exceed the sum of the two distance bounds (rounded up). For rigorous
        certificates a ``False`` would expose a wrong certificate."""
        cand, ref = self.certificate, self.reference_certificate
        if cand is None or ref is None:
            return True
        enclosed = ref.lower <= cand.upper and cand.lower <= ref.upper
        if cand.distance_bound is None or ref.distance_bound is None:
            return enclosed  # not strongly convex: no distance bound (L1)
        return enclosed and self.distance_lower <= float(
            up(cand.distance_bound + ref.distance_bound)
        )


def _weights(f: Problem, c: Any) -> np.ndarray | None:
    """Explicit ``w`` of a candidate: its own, or ``sum_i alpha_i y_i x_i`` (linear kernel)."""
    if c.w is not None:
        return np.asarray(c.w, dtype=np.float64)
    if c.alpha is not None and getattr(f, "linear", False):
        return f.expansion(np.asarray(c.alpha, dtype=np.float64))
    return None


def _intercept(f: Problem, c: Any, w: np.ndarray | None) -> np.ndarray:
    """The candidate's ``b``, or the best one for its ``w`` when it has none."""
    if c.b is not None:
        return np.asarray(c.b, dtype=np.float64)
    if not getattr(f, "fit_intercept", True):
        return np.zeros(())
    scores = f.scores(w=w) if w is not None else f.scores(alpha=np.asarray(c.alpha))
    return np.asarray(f.optimal_intercept(scores), dtype=np.float64)


def _distance(
    f: Problem, c: Any, r: Any, wc: np.ndarray | None, wr: np.ndarray | None
) -> tuple[float, float]:
    """The distance and a lower bound on its exact value."""
    if wc is not None and wr is not None:
        return float(np.linalg.norm(wc - wr)), distance_lower(wc, wr)
    if c.alpha is not None and r.alpha is not None:
        d = (np.asarray(c.alpha) - np.asarray(r.alpha)) * f.y
        K = f.gram()
        q = float(d @ (K @ d))
        # the quadratic form's rounding (the differences, the products and two sums)
        err = gamma(2 * d.size + 4) * float(np.abs(d) @ (np.abs(K) @ np.abs(d)))
        return math.sqrt(max(0.0, q)), math.sqrt(max(0.0, float(down(q - up(err)))))
    return math.nan, 0.0


def compare(f: Problem, candidate: Any, reference: Any) -> Comparison:
    """Compare ``candidate`` with ``reference`` on formulation ``f`` (see :class:`Comparison`).

    Both may be :class:`~qpsvm.Solution` objects, fitted scikit-learn estimators or anything
    ``f.certify`` accepts; each is certified from the data.
    """
    cand = f.certify(candidate)
    ref = f.certify(reference)
    read = load(f.candidate_reader)
    c, r = read(f, candidate), read(f, reference)
    wc, wr = _weights(f, c), _weights(f, r)
    db = _intercept(f, c, wc) - _intercept(f, r, wr)
    sub = cand.primal_objective - ref.primal_objective
    distance, lower = _distance(f, c, r, wc, wr)
    info = getattr(candidate, "info", None) or {}
    return Comparison(
        suboptimality=sub,
        relative_suboptimality=relative(sub, ref.primal_objective),
        distance=distance,
        intercept_distance=float(np.linalg.norm(np.ravel(db))),
        certified_gap=cand.gap,
        distance_bound=cand.distance_bound,
        reference_gap=ref.gap,
        distance_lower=lower,
        certificate=cand,
        reference_certificate=ref,
        theory_bound=info.get("theory_bound"),
    )

"""How every exact method ends: certify its point, refine it once on its support sets, certify
again, and return only a point that passed, or raise.

The refinement (the formulation's ``refinement``, e.g.
:func:`~qpsvm.solvers.refine.refine_binary`) solves the KKT equations on the support sets the
solver identified, which turns an interior-point answer accurate to ``1e-8`` into one exact to
round-off whenever the sets are right; the certificate (the formulation's ``certifier``)
decides which point is best.
"""

from __future__ import annotations

from collections.abc import Iterable

from qpsvm.contract import Problem, load
from qpsvm.solution import Candidate
from qpsvm.verify.certificate import Certificate, uncertified_error

__all__ = ["best_certified", "finish"]


def best_certified(
    f: Problem,
    cand: Candidate,
    tol: float,
    refine: bool = True,
    refinements: Iterable[Candidate] | None = None,
    certified: tuple[Candidate, Certificate] | None = None,
) -> tuple[Candidate, Certificate]:
    """Certify, with ``refine``, the refinements of ``cand`` in turn and return the first that
    passes (a refinement solves the KKT equations of its sets: exact to round-off where they
    are the optimum's, never worse than an interior-point answer accurate to ``1e-8``), else
    ``cand`` and the refinements' best pair: passed first, then the smallest relative gap.
    Each point is first moved onto the feasible set where rounding left it just outside
    (``f.make_feasible``). ``refinements`` are those of ``cand`` when the caller has begun
    them (default: ``f.refinement``'s, computed here); ``certified`` is ``cand`` so moved and
    its certificate when the caller has them, so that ``cand`` is not certified twice."""
    certify = load(f.certifier)
    scored = []
    if not (refine and f.refinement):
        refinements = ()
    elif refinements is None:
        refinements = load(f.refinement)(f, cand)
    for refined in refinements:
        refined = f.make_feasible(refined)
        cert = certify(f, refined, tol=tol)
        if cert.passed:
            return refined, cert
        scored.append((refined, cert))
    if certified is None:
        cand = f.make_feasible(cand)
        certified = cand, certify(f, cand, tol=tol)
    scored.insert(0, certified)
    return min(scored, key=lambda pair: (not pair[1].passed, pair[1].relative_gap))


def finish(
    f: Problem,
    cand: Candidate,
    tol: float,
    *,
    what: str,
    advice: str,
    refine: bool = True,
    eager: bool = True,
) -> tuple[Candidate, Certificate]:
    """The certified end of an exact solve: ``cand`` or its best refinement, passed at ``tol``.

    Parameters
    ----------
    f : Problem
    cand : Candidate
        The solver's point on the full data.
    tol : float
        Relative gap the point must be certified at.
    what : str
        What the point is, for the error (e.g. ``"the working-set optimum"``).
    advice : str
        How to fix a failure, for the error.
    refine : bool, default=True
        Try the formulation's refinements.
    eager : bool, default=True
        Refine even a point that passes (an interior-point answer, exact only to ``1e-8``);
        ``False`` refines only a point that fails (one that solves the KKT equations of its
        sets already, like the working set's).

    Raises
    ------
    UncertifiedSolutionError
        No point passes its certificate at ``tol``.
    RoundingFloorError
        The best point fails only by the certificate's rounding floor, which exceeds ``tol``.
    """
    certified = None
    if not eager:
        feasible = f.make_feasible(cand)
        certified = feasible, load(f.certifier)(f, feasible, tol=tol)
    if certified is None or (refine and not certified[1].passed):
        # the refinements are those of cand as given; the point certified above is not
        # certified again
        certified = best_certified(f, cand, tol, refine, certified=certified)
    cand, cert = certified
    if not cert.passed:
        raise uncertified_error(
            cert,
            f"{what} is certified only to a relative gap of {cert.relative_gap:.2e} > tol "
            f"{tol:.0e} (primal infeasibility {cert.primal_infeasibility:.2e}). {advice}",
            exact="exact" in f.methods,
        )
    return cand, cert

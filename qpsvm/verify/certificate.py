"""The :class:`Certificate` of a candidate solution."""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from qpsvm.exceptions import EnclosureError, RoundingFloorError, UncertifiedSolutionError

__all__ = [
    "DEFAULT_TOL",
    "GOOD_ENOUGH",
    "PROVEN",
    "TIGHT",
    "Certificate",
    "best_dual_point",
    "beyond_ceiling",
    "evaluation_allowance",
    "relative",
    "uncertified_error",
]

DEFAULT_TOL = 1e-9
#: The search for a better dual point stops once the relative gap is below this fraction of the
#: certificate's tolerance (its answer is then exact far beyond what was asked).
GOOD_ENOUGH = 1e-2
#: A search for a better dual point that has to prove only the tolerance (the multiclass
#: certificate's) stops once the relative gap is below this fraction of ``tol``: the candidate
#: passes with room for the rounding allowance of the rigorous enclosure, and a better dual
#: point would only shrink a gap already below what was asked. Its gap stays within twice the
#: candidate's true suboptimality or below ``PROVEN * tol``.
PROVEN = 0.5
#: A search for a better dual point given a ``ceiling`` (an upper bound on the optimum, e.g. the
#: problem's own certified solution's primal) stops once the points left could close at most
#: this share of the gap: every dual value is at most ``P*``, so the gap found is within
#: ``1 / (1 - TIGHT)`` of the best any point gives.
TIGHT = 1e-2

#: A dual point: multipliers, or a family's own record of them (the structural SVM's pairs).
Point = TypeVar("Point")


def relative(value: float, reference: float) -> float:
    """``value / max(1, |reference|)``: the scale every threshold in qpsvm is relative to."""
    return value / max(1.0, abs(reference))


def evaluation_allowance(upper: float, lower: float, primal: float, dual: float) -> float:
    r"""The part of a rigorous gap that bounds rounding: :math:`(U - \hat P) + (\hat D - L)`,
    the rigorous ends ``U``, ``L`` against the objectives ``P``, ``D`` of the same points
    evaluated in floating point (each part clipped at 0; an infinite end, a hard constraint
    not proven, adds nothing: it is no allowance but a verdict), and at most the gap
    ``U - L`` itself."""
    above, below = upper - primal, dual - lower
    allowance = float(
        (max(0.0, above) if math.isfinite(above) else 0.0)
        + (max(0.0, below) if math.isfinite(below) else 0.0)
    )
    # where the two evaluations cross (P below D by round-off) the allowance exceeds the gap
    return min(allowance, max(0.0, upper - lower)) if upper - lower < math.inf else allowance


def uncertified_error(cert: Certificate, message: str, *, exact: bool) -> UncertifiedSolutionError:
    """The error for a solve whose best point ``cert`` did not pass: ``message``, as a
    :class:`~qpsvm.exceptions.RoundingFloorError` when the certificate's rounding floor
    exceeds its ``tol`` and accounts for the gap (the gap is within ``tol`` of the floor: the
    point is optimal as far as float64 can tell, so neither refining it nor another backend
    would pass), stating the floor and what would help (the exact rational optimum only where
    the problem has one: ``exact``); else as an
    :class:`~qpsvm.exceptions.UncertifiedSolutionError`."""
    floor, gap = cert.relative_floor, cert.relative_gap
    if floor <= cert.tol or gap > floor + cert.tol:
        return UncertifiedSolutionError(message)
    error = RoundingFloorError(
        f"{message} The gap is within the certificate's rounding floor, {floor:.2e} relative "
        f"to the objective (its allowance for float64 rounding, whatever the solver), above "
        f"tol {cert.tol:.0e}. What helps: a looser tol (this point is certified at "
        f"{gap:.1e}); centring and rescaling the features (shifted or badly scaled features "
        "make large sums whose rounding sets the floor)"
        + ("; or the exact rational optimum, method='exact'." if exact else ".")
    )
    error.relative_floor, error.relative_gap = floor, gap
    return error


def beyond_ceiling(primal: float, dual: float, ceiling: float, tol: float) -> bool:
    r"""Whether no dual point could change a certificate's verdict or shrink its gap by more
    than :data:`TIGHT`: the candidate of objective ``primal`` fails whatever the point (its
    relative distance to ``ceiling``, an upper bound on ``P*``, above ``tol``) and
    :math:`\mathrm{ceiling} - D \le` :data:`TIGHT` :math:`(P - D)` at the best ``D`` found.
    Every dual value is at most ``P* <= ceiling``, so the gap ``P - D`` is then within
    ``1 / (1 - TIGHT)`` of the best any point gives. It decides only where a search stops:
    the certificate's bounds are those of the point it stopped at, whatever the ceiling."""
    return relative(primal - ceiling, primal) > tol and ceiling - dual <= TIGHT * (primal - dual)


def best_dual_point(
    dual_objective: Callable[[Point], float],
    points: Iterable[Point],
    start: Point,
    primal: float,
    tol: float,
    *,
    enough: float = GOOD_ENOUGH,
    dual: float = 0.0,
    ceiling: float = math.inf,
) -> tuple[Point, float, bool]:
    r"""The dual-feasible point of largest ``D`` among ``start`` (of value ``dual``; default 0,
    the zero multipliers) and ``points``, searched lazily until the relative gap to ``primal``
    is below ``enough`` times ``tol`` (default :data:`GOOD_ENOUGH`); returns it, its ``D`` and
    whether the search stopped early on that test (the points left in an iterator ``points``
    may then be searched on, from the returned point).

    ``ceiling`` is an upper bound on the optimum ``P*``, so on every ``D``. The search also
    stops, not early, once no point left could change the verdict or shrink the gap by more
    than :data:`TIGHT` (:func:`beyond_ceiling`)."""
    alpha = start
    for point in points:
        value = dual_objective(point)
        if value > dual:
            alpha, dual = point, value
        if relative(primal - dual, primal) <= enough * tol:
            return alpha, dual, True
        if beyond_ceiling(primal, dual, ceiling, tol):
            return alpha, dual, False
    return alpha, dual, False


@dataclass
class Certificate:
    """Proof (or refutation) that a candidate is optimal, computed from the data in numpy.

    The certificate pairs the candidate's primal objective ``P`` with the dual objective ``D`` of a
    dual-feasible point built for it (see :mod:`qpsvm.verify.conventions`). Weak duality gives
    ``P* in [D, P]``, so ``gap = P - D`` bounds the candidate's suboptimality ``P - P*`` and
    strong convexity bounds its distance to the optimum: ``||w - w*|| <= sqrt(2 gap)``.

    Attributes
    ----------
    primal_objective : float
        ``P`` at the candidate (``inf`` if the candidate violates a hard constraint).
    dual_objective : float
        ``D`` at the dual-feasible point (a lower bound of the optimum).
    gap : float
        ``P - D >= P - P* >= 0``.
    relative_gap : float
        ``gap / max(1, |P|)``.
    primal_infeasibility : float
        Largest violation of a primal constraint by the candidate as given (for a bare ``w`` the
        slacks are the exact hinge values, so only hard constraints can be violated).
    dual_infeasibility : float
        Largest violation of the dual constraints by the candidate's own dual variables, before
        they were projected onto the feasible set (0 when none were given).
    complementarity : float
        Largest ``|alpha_i (y_i f(x_i) - m_i + xi_i)|`` or ``|(C s_i - alpha_i) xi_i|``.
    stationarity : float
        ``||w - sum_i alpha_i y_i x_i||`` (0 for a kernel, where ``w`` is implicit).
    distance_bound : float or None
        ``sqrt(2 gap / mu)``, a bound on ``||w - w*||`` when the objective is strongly convex
        in ``w`` with modulus ``mu`` (``mu = 1`` for the L2 penalty); ``None`` when it is not
        (L1 penalty), since ``w*`` need not be unique.
    tol : float
        The relative tolerance of the test.
    passed : bool
        ``relative_gap <= tol`` and the candidate is primal feasible to ``tol``.
    formulation : str
        Name of the formulation that was certified.
    max_violation : float
        For cutting-plane problems, the largest constraint violation of the working-set solution.
    alpha : ndarray
        The dual-feasible point whose objective is ``dual_objective``.
    rigorous : bool
        Whether ``[dual_objective, primal_objective]`` encloses ``P*`` of the exact problem the
        float64 data state, rounding included (:mod:`qpsvm.verify.rigorous`); then the fields
        derived from them (``gap``, ``relative_gap``, ``distance_bound``, ``passed``) are proven.
    strong_convexity : float
        The modulus ``mu`` of strong convexity of ``P`` in ``w`` (``1 - l1_ratio`` for the
        elastic-net penalty, 0 for L1).
    rounding_floor : float
        The part of ``gap`` that is the rigorous allowance for rounding rather than the
        candidate's suboptimality: ``(upper - P) + (D - lower)``, with ``P`` and ``D`` the
        objectives of the same points evaluated in floating point
        (:func:`evaluation_allowance`). A certificate cannot prove a gap below it; when
        ``relative_floor`` exceeds the ``tol`` asked and accounts for the gap, ``solve()``
        raises :class:`~qpsvm.exceptions.RoundingFloorError`. 0 for certificates that do not
        compute it (not rigorous, Dask, the ranking SVM's 1-slack certificate).

    The binary certificate of an explicit ``w`` also keeps the candidate's scores ``X w`` and
    the Sum2 of ``w w`` it computed, with the ``w`` object they are of, for the solution of
    the same ``w`` (:meth:`primal_parts`).
    """

    primal_objective: float
    dual_objective: float
    primal_infeasibility: float
    dual_infeasibility: float
    complementarity: float
    stationarity: float
    tol: float = DEFAULT_TOL
    formulation: str = ""
    max_violation: float = 0.0
    alpha: np.ndarray | None = field(default=None, repr=False)
    rigorous: bool = False
    strong_convexity: float = 1.0
    rounding_floor: float = 0.0
    _primal_parts: tuple | None = field(default=None, repr=False, compare=False)

    def primal_parts(self, w: Any) -> tuple[np.ndarray, float] | None:
        """The scores ``X w`` and the Sum2 of ``w w`` the certificate computed for its
        candidate's ``w`` when ``w`` is that object (a solver's solution of the point it
        certified: the same floats, without a product over the rows and a pass over the
        features); ``None`` otherwise."""
        if self._primal_parts is None or self._primal_parts[0] is not w:
            return None
        return self._primal_parts[1], self._primal_parts[2]

    @property
    def lower(self) -> float:
        """The lower end of the enclosure of ``P*`` (``dual_objective``)."""
        return self.dual_objective

    @property
    def upper(self) -> float:
        """The upper end of the enclosure of ``P*`` (``primal_objective``)."""
        return self.primal_objective

    @property
    def gap(self) -> float:
        """``P - D``, rounded up. A rigorous certificate's gap cannot be negative
        (``D <= P* <= P`` in exact arithmetic): one would be a bug, and raises. Others clip
        round-off at 0."""
        if not math.isfinite(self.primal_objective):
            return math.inf
        gap = math.nextafter(self.primal_objective - self.dual_objective, math.inf)
        if gap < 0.0:
            if self.rigorous:
                raise EnclosureError(
                    f"rigorous bounds cross: lower {self.dual_objective!r} > upper "
                    f"{self.primal_objective!r}. This is a bug in qpsvm; please report it."
                )
            return 0.0
        return gap

    @property
    def relative_gap(self) -> float:
        """``gap / max(1, |P|)``, rounded up."""
        if not math.isfinite(self.primal_objective):
            return math.inf
        return math.nextafter(relative(self.gap, self.primal_objective), math.inf)

    @property
    def distance_bound(self) -> float | None:
        """``sqrt(2 gap / mu)``, rounded up: bound on ``||w - w*||`` from strong convexity of
        ``P`` in ``w`` with modulus ``mu``; ``None`` when ``P`` is not strongly convex
        (``mu = 0``, the L1 penalty)."""
        if self.strong_convexity <= 0:
            return None
        return math.nextafter(math.sqrt(2.0 * self.gap / self.strong_convexity), math.inf)

    @property
    def relative_floor(self) -> float:
        """``rounding_floor / max(1, |P|)``, rounded up (0 when ``P`` is infinite)."""
        if not math.isfinite(self.primal_objective):
            return 0.0
        return math.nextafter(relative(self.rounding_floor, self.primal_objective), math.inf)

    @property
    def passed(self) -> bool:
        """True when the relative gap and the relative primal infeasibility are within ``tol``."""
        feasible = relative(self.primal_infeasibility, self.primal_objective) <= self.tol
        return feasible and self.relative_gap <= self.tol

    def _rows(self) -> list[tuple[str, str]]:
        return [
            ("passed", str(self.passed)),
            ("primal objective", f"{self.primal_objective:.15g}"),
            ("dual objective", f"{self.dual_objective:.15g}"),
            ("gap", f"{self.gap:.3e}"),
            ("relative gap", f"{self.relative_gap:.3e} (tol {self.tol:.0e})"),
            ("relative rounding floor", f"{self.relative_floor:.3e}"),
            (
                "distance bound ||w - w*||",
                "none (not strongly convex)"
                if self.distance_bound is None
                else f"{self.distance_bound:.3e}",
            ),
            ("primal infeasibility", f"{self.primal_infeasibility:.3e}"),
            ("dual infeasibility", f"{self.dual_infeasibility:.3e}"),
            ("complementarity", f"{self.complementarity:.3e}"),
            ("stationarity", f"{self.stationarity:.3e}"),
        ] + ([("max violation", f"{self.max_violation:.3e}")] if self.max_violation else [])

    def __str__(self) -> str:
        head = f"Certificate({self.formulation})" if self.formulation else "Certificate"
        width = max(len(k) for k, _ in self._rows())
        return "\n".join([head] + [f"  {k:<{width}}  {v}" for k, v in self._rows()])

    def _repr_html_(self) -> str:
        color = "#1a7f37" if self.passed else "#cf222e"
        rows = "".join(
            f"<tr><td style='text-align:left'>{html.escape(k)}</td>"
            f"<td style='text-align:right'><code>{html.escape(v)}</code></td></tr>"
            for k, v in self._rows()
        )
        title = html.escape(self.formulation or "Certificate")
        verdict = "certified optimal" if self.passed else "NOT certified"
        return (
            f"<div><b>{title}</b>: <span style='color:{color}'><b>{verdict}</b></span>"
            f"<table>{rows}</table></div>"
        )

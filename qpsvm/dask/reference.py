r"""Certificates of any candidate over Dask blocks, tight however poor the candidate is.

A candidate ``w`` (and ``b``) is bounded above by its own objective
:math:`P(w, b) \ge P^*`, evaluated rigorously in one pass. The lower bound is the dual value
:math:`D(\alpha) \le P^*` of an exactly feasible dual point. The candidate's own statuses give
one (``C s_i`` where its margin is violated), valid but loose away from the optimum: the gap
then measures the distance of that dual point, not the candidate's suboptimality. As in memory
(:meth:`qpsvm.formulations.base.Formulation.certify`), the problem's own certified solution is
computed once and its multipliers are tried too, so that the gap is
:math:`P(w, b) - P^* + (P^* - D(\alpha^*))`: the candidate's suboptimality plus the reference's
own certified gap. The soundness of the lower bound rests on the exact feasibility of the dual
point and its rigorous evaluation only, never on how it was found.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from qpsvm._validation import check_tol
from qpsvm.dask.working_set import stored_working_set
from qpsvm.solution import Solution
from qpsvm.verify.certificate import DEFAULT_TOL, Certificate

__all__ = ["ReferenceCertify"]


class ReferenceCertify(ABC):
    """Mixin of the Dask formulations: :meth:`certify` with the reference solution's dual
    point.

    A class using it defines ``alpha_shape`` (the shape of one row's multipliers), ``solve``
    and ``_certify_with(candidate, stored, tol)``, the certificate of ``candidate``'s point with
    the statuses and working-set multipliers ``stored`` (``(sort, index, alpha)``, see
    :func:`~qpsvm.dask.working_set.stored_working_set`).
    """

    alpha_shape: tuple[int, ...] = ()
    _reference: Solution | bool | None = None

    @abstractmethod
    def _certify_with(self, candidate: Any, stored: tuple, tol: float) -> Certificate:
        """The certificate of ``candidate``'s point with the statuses and multipliers
        ``stored``."""

    @abstractmethod
    def solve(self) -> Solution:
        """The certified optimum."""

    def certify(
        self, candidate: Any, tol: float = DEFAULT_TOL, *, reference: bool = True
    ) -> Certificate:
        """Certify a solution of :meth:`solve` again from the data (one pass), or a bare point
        (any object with ``w``, and ``b`` where the problem has an intercept).

        A bare point first gets the multipliers of its own statuses. When they do not certify
        it and ``reference`` is true, the multipliers of this problem's own solution
        (:meth:`reference_solution`, solved once) are tried too, and the higher rigorous dual
        value is kept, so the gap bounds the point's suboptimality tightly however poor it is
        (one more pass; the first call also solves the problem).
        """
        tol = check_tol(tol)
        stored = stored_working_set(candidate, self.alpha_shape)
        cert = self._certify_with(candidate, stored, tol)
        if cert.passed or not reference or stored[0] is not None:
            return cert
        solution = self.reference_solution()
        if solution is None:
            return cert
        other = self._certify_with(candidate, stored_working_set(solution, self.alpha_shape), tol)
        return other if other.dual_objective > cert.dual_objective else cert

    def reference_solution(self) -> Solution | None:
        """This problem's own certified solution, computed once and kept; ``None`` when the
        solve does not certify."""
        from qpsvm.exceptions import QPSVMError

        if self._reference is None:
            try:
                self._reference = self.solve()
            except QPSVMError:
                self._reference = False
        return None if self._reference is False else self._reference

r"""Certificates for any CVXPY QP, an edited ``f.problem`` included: :func:`certify_problem`.

The problem is put in standard form by CVXPY's own canonicalisation
(:func:`qpsvm.standard_form.standard_form`), the point its variables hold (after the user's
``problem.solve(solver=...)``, any solver) becomes the QP's ``x``, and
:func:`qpsvm.verify.qp.certify_qp` encloses the optimal value from that ``x`` and multipliers
it fits itself, saying which end of the enclosure is proven.
"""

from __future__ import annotations

from typing import Any

from qpsvm.exceptions import InvalidInputError
from qpsvm.standard_form import standard_form
from qpsvm.verify.certificate import DEFAULT_TOL
from qpsvm.verify.qp import QPCertificate, certify_qp

__all__ = ["certify_problem"]


def certify_problem(problem: Any, tol: float = DEFAULT_TOL) -> QPCertificate:
    r"""Certify the point a CVXPY QP's variables hold: a rigorous enclosure of its optimal
    value where the structure allows it, and the residuals.

    The certificate's ``lower <= p* <= upper`` holds in exact arithmetic for the QP CVXPY's
    canonicalisation states (``lower_rigorous`` and ``upper_rigorous`` say which end is proven
    and ``notes`` why one is not): the candidate's end needs a point proven feasible (equality
    constraints are rarely met exactly in floating point), the other end needs every
    coordinate's stationarity residual absorbed by a bound or by curvature, or balanced exactly
    (an SVM's free intercept; another free variable without curvature may not be, and a box it
    does not reach fixes it).
    See :mod:`qpsvm.verify.qp` for the math.

    Parameters
    ----------
    problem : cvxpy.Problem or Formulation
        A QP whose variables hold values (solved with any solver, or set by hand); for a
        formulation, its ``f.problem``.
    tol : float
        Relative tolerance of ``passed`` (gap and primal infeasibility).

    Returns
    -------
    QPCertificate

    Raises
    ------
    InvalidInputError
        When a variable holds no value (the problem was not solved).
    UnsupportedProblemError
        When the problem is not a QP.

    Examples
    --------
    >>> import cvxpy as cp, numpy as np, qpsvm
    >>> X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [3.0, 1.0]])
    >>> f = qpsvm.SoftMarginPrimal(X, [-1, -1, 1, 1], C=1.0)
    >>> w, b = f.variables["w"], f.variables["b"]
    >>> added = [w[0] <= 0.5, b >= -10, b <= 10]  # a cap on w_0, a box on b
    >>> edited = cp.Problem(f.problem.objective, [*f.problem.constraints, *added])
    >>> _ = edited.solve(solver=cp.OSQP)  # polished to its active set
    >>> cert = qpsvm.certify_problem(edited)
    >>> cert.passed, cert.rigorous
    (True, True)
    """
    problem = getattr(problem, "problem", problem)
    form = standard_form(problem)
    values = {}
    for var in problem.variables():
        if var.value is None:
            raise InvalidInputError(
                f"variable {var.name()!r} holds no value: solve the problem first "
                "(problem.solve(solver=...)) or set var.value to the candidate."
            )
        values[var.id] = var.value
    x, known = form.point(values)
    return certify_qp(form, x, tol=tol, name="cvxpy.Problem", known=known, labels=form.labels())

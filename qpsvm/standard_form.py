r"""The standard-form QP of a formulation, or of any CVXPY problem that is a QP (an edited
``f.problem`` too):

.. math::

    \min_x\ \tfrac12 x^T P x + q^T x
    \quad\text{s.t.}\quad G x \le h,\ A x = b,\ lb \le x \le ub,

with the problem's value ``sign * (1/2 x*^T P x* + q^T x* + offset)`` (``sign = -1`` for a
``Maximize`` problem, such as the kernel dual, whose value is the primal optimum ``P*`` by strong
duality).

How it is extracted. CVXPY canonicalises the problem for a QP solver target
(``problem.get_problem_data(cvxpy.OSQP)``: ``Dcp2Cone`` in quadratic mode, then matrix stuffing);
its data are ``P, q, F, G, A, b`` for ``min 1/2 x^T P x + q^T x`` s.t. ``F x <= G``, ``A x = b``
and the constant ``offset`` of the objective. Nothing is approximated: every entry is a
coefficient of the problem as CVXPY states it (auxiliary variables appear where an atom needs
them, e.g. ``sum_squares(L^T a)`` of the kernel dual). Rows of ``F`` with a single coefficient of
``+-1`` are bounds on one variable and become ``lb`` / ``ub`` (the tighter bound kept when a
variable has several); the other rows stay in ``G x <= h``. :meth:`StandardForm.variables` maps
a solution ``x`` back onto the problem's named CVXPY variables.

This is the one place qpsvm turns a CVXPY problem into matrices; verify/ never imports CVXPY.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from qpsvm.exceptions import UnsupportedProblemError

__all__ = ["StandardForm", "standard_form"]


@dataclass
class StandardForm:
    """A QP ``min 1/2 x^T P x + q^T x`` s.t. ``G x <= h``, ``A x = b``, ``lb <= x <= ub``.

    Attributes
    ----------
    P : csc_matrix of shape (n, n)
    q : ndarray of shape (n,)
    G : csc_matrix of shape (m, n) or None
    h : ndarray of shape (m,) or None
    A : csc_matrix of shape (p, n) or None
    b : ndarray of shape (p,) or None
    lb, ub : ndarray of shape (n,) or None
        Bounds (``-inf`` / ``inf`` where a variable has none).
    offset : float
        Constant of the objective.
    sign : float
        ``+1`` for a minimisation; ``-1`` for a maximisation (the QP minimises its negative).
    """

    P: sp.csc_matrix
    q: np.ndarray
    G: sp.csc_matrix | None
    h: np.ndarray | None
    A: sp.csc_matrix | None
    b: np.ndarray | None
    lb: np.ndarray | None
    ub: np.ndarray | None
    offset: float
    sign: float
    _split: Any = None
    _names: dict[int, str] | None = None
    _columns: dict[int, tuple[int, int]] | None = None

    @property
    def n_variables(self) -> int:
        """Length of ``x``."""
        return int(self.q.size)

    def qp_objective(self, x: np.ndarray) -> float:
        """``1/2 x^T P x + q^T x`` (without the offset)."""
        x = np.asarray(x, dtype=np.float64)
        return float(0.5 * x @ (self.P @ x) + self.q @ x)

    def value(self, x: np.ndarray) -> float:
        """The value of the original problem at ``x``: ``sign * (qp_objective(x) + offset)``."""
        return self.sign * (self.qp_objective(x) + self.offset)

    def variables(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """The problem's named CVXPY variables at the QP point ``x``."""
        values = self._split(np.asarray(x, dtype=np.float64))
        return {self._names[k]: np.asarray(v, dtype=np.float64) for k, v in values.items()}

    def point(self, values: dict[int, Any]) -> tuple[np.ndarray, np.ndarray]:
        """The QP point of the problem's variables (the inverse of :meth:`variables`), keyed by
        CVXPY variable id (``var.id``), and the mask of its entries they gave: the auxiliary
        variables CVXPY's canonicalisation added (``sum_squares`` of an expression, ``abs``...)
        are left at 0 for the caller to complete."""
        x = np.zeros(self.n_variables)
        known = np.zeros(self.n_variables, dtype=bool)
        for var_id, value in values.items():
            if var_id not in self._columns:
                continue  # a variable the canonicalisation eliminated
            start, size = self._columns[var_id]
            x[start : start + size] = np.ravel(np.asarray(value, dtype=np.float64), order="F")
            known[start : start + size] = True
        return x, known

    def labels(self) -> list[str]:
        """A name per entry of ``x``: ``w[3]`` (column-major index for a matrix), ``b``, and
        CVXPY's ``varNNN`` for auxiliary variables."""
        out = [""] * self.n_variables
        for var_id, (start, size) in self._columns.items():
            name = self._names[var_id]
            for k in range(size):
                out[start + k] = name if size == 1 else f"{name}[{k}]"
        return out

    def to_qpsolvers(self) -> Any:
        """The :class:`qpsolvers.Problem` of this QP (qpsolvers must be installed)."""
        import qpsolvers

        return qpsolvers.Problem(self.P, self.q, self.G, self.h, self.A, self.b, self.lb, self.ub)


def _bounds(
    F: sp.csc_matrix, G: np.ndarray, n: int
) -> tuple[sp.csc_matrix | None, np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """Split ``F x <= G`` into rows with one ``+-1`` coefficient (bounds) and the rest."""
    R = sp.csr_matrix(F)
    R.sum_duplicates()
    rows = np.flatnonzero(np.diff(R.indptr) == 1)
    coef = R.data[R.indptr[rows]]
    col = R.indices[R.indptr[rows]]
    upper_rows, lower_rows = rows[coef == 1.0], rows[coef == -1.0]
    lb = np.full(n, -np.inf)
    ub = np.full(n, np.inf)
    np.minimum.at(ub, col[coef == 1.0], G[upper_rows])
    np.maximum.at(lb, col[coef == -1.0], -G[lower_rows])
    rest = np.ones(R.shape[0], dtype=bool)
    rest[upper_rows] = rest[lower_rows] = False
    G_rest = sp.csc_matrix(R[rest]) if rest.any() else None
    h_rest = G[rest] if rest.any() else None
    has_lb, has_ub = bool(np.isfinite(lb).any()), bool(np.isfinite(ub).any())
    return G_rest, h_rest, (lb if has_lb or has_ub else None), (ub if has_lb or has_ub else None)


def standard_form(problem_or_formulation: Any) -> StandardForm:
    """The standard-form QP of a formulation (its ``f.problem``) or of a CVXPY problem.

    Parameters
    ----------
    problem_or_formulation : Formulation or cvxpy.Problem
        A problem CVXPY can canonicalise for a QP solver (a DCP problem with a convex quadratic
        objective and affine constraints).

    Returns
    -------
    StandardForm

    Raises
    ------
    UnsupportedProblemError
        When the problem is not a QP (a second-order cone, an exponential cone, integers...).
    """
    import cvxpy as cp

    problem = getattr(problem_or_formulation, "problem", problem_or_formulation)
    if not isinstance(problem, cp.Problem):
        raise UnsupportedProblemError(
            f"expected a qpsvm formulation or a cvxpy.Problem, got {type(problem).__name__}."
        )
    try:
        data, _, _ = problem.get_problem_data(cp.OSQP)
    except cp.error.SolverError as exc:
        raise UnsupportedProblemError(
            f"the problem is not a quadratic program CVXPY can state in standard form: {exc}"
        ) from exc
    if data.get("bool_vars_idx") or data.get("int_vars_idx"):
        raise UnsupportedProblemError("the problem has integer variables; it is not a QP.")
    param = data["param_prob"]
    offset = float(param.apply_parameters(quad_obj=True)[2])
    n = int(data["n_var"])
    G, h, lb, ub = _bounds(data["F"], np.asarray(data["G"], dtype=np.float64), n)
    for name, given in (("lower_bounds", lb), ("upper_bounds", ub)):
        extra = data.get(name)
        if extra is not None:
            raise UnsupportedProblemError(
                f"CVXPY passed variable {name} separately (bounds={given is not None}); "
                "qpsvm's extraction reads bounds from the constraint rows only."
            )
    A = sp.csc_matrix(data["A"]) if data["n_eq"] else None
    b = np.asarray(data["b"], dtype=np.float64) if data["n_eq"] else None
    names = {var_id: var.name() for var_id, var in param.id_to_var.items()}
    columns = {
        var_id: (int(param.var_id_to_col[var_id]), int(var.size))
        for var_id, var in param.id_to_var.items()
    }
    return StandardForm(
        P=sp.csc_matrix(data["P"]),
        q=np.asarray(data["q"], dtype=np.float64),
        G=G,
        h=h,
        A=A,
        b=b,
        lb=lb,
        ub=ub,
        offset=offset,
        sign=-1.0 if isinstance(problem.objective, cp.Maximize) else 1.0,
        _split=param.split_solution,
        _names=names,
        _columns=columns,
    )

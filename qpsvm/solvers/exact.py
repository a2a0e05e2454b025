r"""``method="exact"``: the exact rational optimum, the oracle certificates are tested against.

Each float64 number of the data is the rational it represents; the problem those rationals state
has a unique optimal ``w*`` and value ``P*``, found here exactly: a float solve guesses the
support sets, the KKT conditions on them (a complementarity problem) are solved by Lemke's
method in exact integer arithmetic, finite on degenerate data too, and every KKT condition is
verified exactly over all the data, rows fixed wrongly being freed until they all hold
(:func:`qpsvm.exact.kkt.solve_grouped`). The returned :class:`~qpsvm.Solution` holds the float
views (each rational correctly rounded) and ``info["exact"]``, the
:class:`~qpsvm.exact.ExactOptimum` with ``w*, b*, alpha*, P*`` as fractions.

Covered: the binary formulations with the linear kernel (soft margin primal and dual, weighted
slacks and margins, hard margin, with or without intercept), the kernel dual with the poly
kernel (its exact Gram matrix, :func:`poly_gram`; ``w*`` is implicit there), the ranking SVM, and
both multiclass variants. The rbf, precomputed and callable kernels are refused: their values
are not rational in the data.

Cost: a float solve (the formulation's own, by its default method), then ``O(n d)`` exact
operations per round for the margins (``O(n^2)`` on a kernel's Gram matrix) plus Lemke's
pivots on the rows near the margin: a binary problem with ``n = 2000, d = 20`` takes about as
long as its float solve again (2-3 s on two loaded cores), Crammer-Singer on digits 2.4-4.6
times its float solve (3.1 s at a light load), the poly kernel 1 s at ``n = 200`` and 4 s at
``n = 400`` (``benchmarks/bench_exact.py``).
python-flint (``pip install qpsvm[exact]``) runs the pivots in C.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp

from qpsvm.contract import BinaryProblem, MulticlassProblem, Problem, part
from qpsvm.exact.kkt import ExactOptimum, GroupedQP, solve_grouped
from qpsvm.exact.rational import ZERO, ClassRows, GramRows, IntegerRows, to_float, to_rational
from qpsvm.exceptions import (
    InfeasibleProblemError,
    InvalidInputError,
    NonConvexProblemError,
    QPSVMError,
    SolverError,
)
from qpsvm.solution import Candidate, Solution
from qpsvm.solvers.backends import backend_order, run_backend
from qpsvm.verify.psd import gram_verdict, is_psd_integer
from qpsvm.verify.rigorous_poly import poly_bound

__all__ = [
    "binary_qp",
    "multiclass_qp",
    "poly_gram",
    "ranking_qp",
    "solve_exact",
    "solve_exact_binary",
    "solve_exact_multiclass",
    "solve_exact_ranking",
]

logger = logging.getLogger("qpsvm")

#: A constraint of the float solution counts as tight within this many units of ``max(1, m)``:
#: such rows are the unknowns of the exact solve, the others start fixed (the exact solve frees
#: any whose condition fails, so this only sets its size and its number of rounds).
TIGHT = 1e-7


def _caps(C: float, weights: np.ndarray) -> list[Fraction | None]:
    if not math.isfinite(C):
        return [None] * weights.size
    c = Fraction(C)
    return [c * Fraction(float(s)) for s in weights]


def _solve_from(qp: GroupedQP, margins: np.ndarray | None, m: np.ndarray) -> ExactOptimum:
    """The exact optimum, from sets read off a float solution's margins (``None``: no float
    solution, every row an unknown).

    Slacks ``xi_g = max(0, max_k m_k - margin_k)``; a row is active when tight to ``xi`` within
    :data:`TIGHT`, a group saturated when its slack exceeds it.
    """
    if margins is None:
        return solve_grouped(qp, np.ones(qp.n_rows, dtype=bool), np.zeros(qp.n_groups, bool))
    tau = TIGHT * max(1.0, float(np.max(np.abs(m), initial=0.0)))
    shortfall = m - margins
    xi = np.zeros(qp.n_groups)
    np.maximum.at(xi, qp.group, shortfall)
    xi[np.array([c is None for c in qp.cap])] = 0.0
    active = np.abs(shortfall - xi[qp.group]) <= tau
    return solve_grouped(qp, active, xi > tau)


def _start(f: Problem, solver: str | None, start: Any) -> Candidate | None:
    """The float point the support sets are read off: ``start``; else, with no ``solver``
    named, the formulation's own certified solve by its default method (on a copy: the
    working set's where it applies, 7x faster than the full problem's interior point on
    digits-size multiclass problems); else, or when that fails, the first backend's raw
    answer to the full problem (uncertified: it is only a guess, the exact solve verifies);
    ``None`` when every backend fails (the exact solve then starts from no guess)."""
    if start is not None:
        return start
    if solver is None:
        try:
            return f.fresh_copy().solve()
        except QPSVMError as exc:  # the backends' raw answers below decide infeasibility
            logger.info("the exact solve's certified guess failed: %s", exc)
    model = f.full_model
    for name in backend_order(solver):
        try:
            run_backend(model.problem, name, {})
        except InfeasibleProblemError as exc:
            raise (f.infeasible_error() or exc) from exc
        except SolverError as exc:
            logger.info("the exact solve's float guess failed with %s: %s", name, exc)
            continue
        return f.read_model(model)
    return None


def binary_qp(f: BinaryProblem) -> GroupedQP:
    """The exact grouped-slack QP of a binary formulation: rows ``y_i x_i`` (linear kernel),
    or ``y_i phi(x_i)`` by their exact Gram matrix (poly kernel, :func:`poly_gram`)."""
    if f.linear:
        # y_i x_i is exact in float64 (a sign change)
        return _binary_qp(f, IntegerRows.from_float(f.y[:, None] * _dense(f.X)))
    return _binary_qp(f, poly_gram(f))


def poly_gram(f: BinaryProblem) -> GramRows:
    r"""The exact Gram matrix :math:`y_i y_j (\gamma\, x_i\cdot x_j + c_0)^p` of a poly
    kernel, every float64 number (data, ``gamma``, ``coef0``) the rational it is, proven
    positive semidefinite.

    With :math:`c_0 \ge 0` the kernel is positive semidefinite (a sum of products of such
    kernels, Schur's product theorem). With :math:`c_0 < 0` it need not be, and the QP is
    convex exactly when the Gram matrix on the data is: proven by a shifted floating-point
    Cholesky factor of the certificate's enclosure of it
    (:func:`~qpsvm.verify.psd.gram_verdict`), else decided by exact elimination on the
    rational matrix.

    Raises
    ------
    InvalidInputError
        For a kernel other than poly (and linear, which has its rows): its values are not
        rational in the data.
    NonConvexProblemError
        When the Gram matrix on the data is not positive semidefinite.
    """
    kernel = f.kernel
    if kernel.name != "poly":
        raise InvalidInputError(_REFUSALS.get(kernel.name, _REFUSALS["callable"]))
    X = IntegerRows.from_float(_dense(f.X))
    rows = GramRows.poly(X, f.y, kernel.gamma, kernel.coef0, kernel.degree)
    verdict = gram_verdict(poly_bound(kernel.gamma, kernel.coef0, kernel.degree, f.X), f.X)
    # undecided in floating point (a singular Gram matrix): exact elimination decides
    if verdict.psd is False or (verdict.psd is None and not is_psd_integer(rows.num)):
        raise NonConvexProblemError(
            f"the poly kernel with coef0 = {kernel.coef0:g} < 0 has a Gram matrix on these data "
            "that is not positive semidefinite (proven): the SVM's dual is then a nonconvex QP, "
            "which has no optimum a duality gap can certify. Use coef0 >= 0 (the kernel is then "
            "positive semidefinite on any data)."
        )
    return rows


def ranking_qp(f: BinaryProblem) -> GroupedQP:
    """The exact grouped-slack QP of a ranking SVM: rows ``x_i - x_j``, exact."""
    items = IntegerRows.from_float(f.items)
    rows = items.num[f.pairs[:, 0]] - items.num[f.pairs[:, 1]]
    return _binary_qp(f, IntegerRows(rows, items.den))


def _dense(X: Any) -> np.ndarray:
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


def _binary_qp(f: BinaryProblem, rows: IntegerRows) -> GroupedQP:
    n = f.n_samples
    label = f.y.astype(int) if f.fit_intercept else None
    return GroupedQP(
        rows=rows,
        m=to_rational(f.margin),
        group=np.arange(n),
        cap=_caps(f.C, f.sample_weight),
        label=label,
    )


def _solve_binary_like(f: BinaryProblem, qp: GroupedQP, solver: str | None, start: Any) -> Solution:
    sol = _start(f, solver, start)
    margins = None
    if sol is not None:
        intercept = f.y * float(sol.b) if f.fit_intercept else 0.0
        if isinstance(qp.rows, GramRows):
            margins = f.y * f.scores(alpha=f.check_alpha(sol.alpha)) + intercept
        else:
            margins = qp.rows.to_float() @ np.asarray(sol.w, dtype=np.float64) + intercept
    opt = _solve_from(qp, margins, f.margin)
    if isinstance(qp.rows, GramRows):
        opt = dataclasses.replace(opt, w=None)  # its coefficients are alpha* y
    cand = f.make_feasible(Candidate(w=opt.w_float, b=float(opt.b), alpha=opt.alpha_float))
    return _exact_solution(f, cand, opt)


def _exact_solution(f: Problem, cand: Candidate, opt: ExactOptimum) -> Solution:
    sol = f.solution_from(
        cand, status="optimal", solver="exact", n_iter=opt.iterations, info={"exact": opt}
    )
    sol.objective = float(opt.objective)
    return sol


_REFUSALS = {
    "rbf": (
        "method='exact' covers the linear and poly kernels, whose values are rational in the "
        "data; the rbf kernel's values exp(-gamma ||x - x'||^2) are irrational for rational "
        "data (Lindemann: exp of a nonzero rational is transcendental), so its optimum has no "
        "exact rational form. Use f.solve(): its certificate encloses the exact optimum "
        "rigorously (every exp bounded), or a poly kernel where an exact optimum is needed."
    ),
    "callable": (
        "method='exact' covers the linear and poly kernels, whose values are rational in the "
        "data; a precomputed or callable kernel's values are only known in floating point. "
        "Use f.solve(), whose certificate bounds their rounding, or a poly kernel."
    ),
}


def solve_exact(f: Problem, solver: str | None = None, start: Any = None) -> Solution:
    """``method="exact"``: the exact rational optimum by the oracle the formulation names (its
    ``exact_oracle``: :func:`solve_exact_binary`, :func:`solve_exact_ranking`,
    :func:`solve_exact_multiclass`); see :func:`solve_exact_binary` for the parameters."""
    oracle = part(f, "exact_oracle", "exact")
    try:
        return oracle(f, solver, start)
    except InfeasibleProblemError as exc:
        raise (f.infeasible_error() or exc) from exc


def solve_exact_binary(f: BinaryProblem, solver: str | None = None, start: Any = None) -> Solution:
    """The exact optimum of a binary formulation with the linear or the poly kernel.

    For the poly kernel ``w*`` lives in the feature space: ``info["exact"].w`` is ``None``
    and ``w* = sum_i alpha*_i y_i phi(x_i)`` (``alpha*`` and ``b*`` need not be unique,
    ``P*`` and the scores of ``w*`` are). With ``coef0 < 0`` the Gram matrix on the data
    must be positive semidefinite (:func:`poly_gram`).

    Parameters
    ----------
    f : BinaryFormulation
    solver : str, optional
        CVXPY solver of the float solve that guesses the support sets.
    start : Solution, optional
        A float solution to start from instead (any accuracy; a better one takes fewer rounds).

    Returns
    -------
    Solution
        Float views of the exact optimum; ``info["exact"]`` is the
        :class:`~qpsvm.exact.ExactOptimum` (``w*``, ``b*``, ``alpha*``, ``P*`` as fractions).
    """
    return _solve_binary_like(f, binary_qp(f), solver, start)


def solve_exact_ranking(f: BinaryProblem, solver: str | None = None, start: Any = None) -> Solution:
    """The exact optimum of a ranking SVM: the binary problem on the exact pair differences
    ``x_i - x_j`` (see :func:`solve_exact_binary` for the parameters)."""
    return _solve_binary_like(f, ranking_qp(f), solver, start)


def multiclass_qp(f: MulticlassProblem) -> GroupedQP:
    """The exact grouped-slack QP of a multiclass SVM, in the space of ``vec(W)`` (rows
    ``(i, c)``, ``c != y_i``, in the order of ``f.rows, f.cols``). Free per-class intercepts
    are the QP's free intercepts: the constant column leaves ``W`` and row ``(i, c)`` gets
    ``b_{y_i} - b_c``, with the last class's ``b`` fixed at 0 (a common shift changes no
    margin)."""
    X = _dense(f.X)
    label = None
    if f.intercept.coupled:
        X = X[:, :-1]
        k = f.n_classes
        label = np.zeros((f.rows.size, k - 1), dtype=np.int64)
        at = np.arange(f.rows.size)
        own, other = f.y[f.rows], f.cols
        label[at[own < k - 1], own[own < k - 1]] += 1
        label[at[other < k - 1], other[other < k - 1]] -= 1
    group = f.rows.copy() if f.crammer_singer else np.arange(f.rows.size)
    weights = f.sample_weight if f.crammer_singer else f.sample_weight[f.rows]
    return GroupedQP(
        rows=ClassRows(
            IntegerRows.from_float(X),
            np.asarray(f.y, dtype=np.intp),
            f.rows,
            f.cols,
            f.n_classes,
        ),
        m=to_rational(np.ones(f.rows.size)),
        group=group,
        cap=_caps(f.C, weights),
        label=label,
    )


def solve_exact_multiclass(
    f: MulticlassProblem, solver: str | None = None, start: Any = None
) -> Solution:
    """The exact optimum of a multiclass SVM (see :func:`solve_exact_binary` for the parameters).

    Rows are the constraints ``(i, c)``, ``c != y_i``, in the space of ``vec(W)``:
    ``a_ic = e_{y_i} (x) x_i - e_c (x) x_i`` with margin 1; Crammer-Singer groups them by
    example, Weston-Watkins gives each its own slack. ``alpha`` is returned as an
    ``(n_samples, n_classes)`` array. With free per-class intercepts ``info["exact"].w`` is
    ``W*`` without the intercepts' column and ``info["exact"].b`` the intercepts ``b*``
    (exact, normalised to ``sum_c b_c = 0`` as the solution's ``W[:, -1]``).
    """
    n, k = f.n_samples, f.n_classes
    rows_i, cols_c = f.rows, f.cols
    qp = multiclass_qp(f)
    sol = _start(f, solver, start)
    margins = None if sol is None else f.margins(f.scores(f.check_w(sol.w)))[rows_i, cols_c]
    opt = _solve_from(qp, margins, np.ones(rows_i.size))
    alpha = np.zeros((n, k))
    alpha[rows_i, cols_c] = opt.alpha_float
    W = opt.w_float.reshape(k, -1)
    if f.intercept.coupled:
        b = np.append(opt.b, ZERO)
        b = b - sum(b, ZERO) / k
        opt = dataclasses.replace(opt, b=b)
        W = np.hstack([W, to_float(b)[:, None]])
    cand = Candidate(w=W, b=0.0, alpha=alpha)
    return _exact_solution(f, cand, opt)

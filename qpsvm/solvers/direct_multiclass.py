r"""A multiclass working set's restricted QP handed to Clarabel as matrices, without CVXPY.

The restricted model of :meth:`~qpsvm.MulticlassSVM.build` (the L2 penalty, the hinge) over
the constraints ``J`` of the working set, those ``E`` fixed at ``alpha_ic = C s_i`` folded into
``G = sum_E s_i x_i (e_{y_i} - e_c)^T``, reads over ``x = (vec W, xi)`` (``W`` row by row)

.. math::

    \min_x\ \tfrac12 \|W\|_{\text{pen}}^2 - C \langle G, W\rangle + C \sum_t s_t \xi_t
    \quad\text{s.t.}\quad -(w_{y_i} - w_c) \cdot x_i - \xi_{t(i,c)} \le -1\ ((i, c) \in J),
    \quad -\xi \le 0,

with one slack per example of ``J`` (Crammer-Singer, ``t(i, c) = i``) or per constraint
(Weston-Watkins), and ``pen`` every column of ``W`` but the free intercepts' last one. In
Clarabel's form ``min 1/2 x^T P x + q^T x`` s.t. ``A x + s = b``, ``s >= 0``, the multipliers
``z >= 0`` of the margin rows are the duals of the model's ``margin`` constraint with the same
sign (``P x + q + A^T z = 0`` is the model's stationarity), so the point is read as
:meth:`~qpsvm.MulticlassSVM.read_model` reads the solved model.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from qpsvm.contract import MulticlassProblem
from qpsvm.solution import Candidate
from qpsvm.solvers import direct
from qpsvm.solvers.backends import BackendResult

__all__ = ["restricted_matrices", "solve_restricted_multiclass"]


def restricted_matrices(
    f: MulticlassProblem, subset: np.ndarray, at_bound: np.ndarray | None
) -> tuple[sp.csc_matrix, np.ndarray, sp.csc_matrix, np.ndarray]:
    """``P, q, A, b`` of ``f.build(subset, at_bound)`` (see the module docstring): the
    ``m = subset.size`` margin rows first, then the slacks' signs."""
    idx = np.asarray(subset, dtype=np.intp)
    rows, cols = f.rows[idx], f.cols[idx]
    used, local = np.unique(rows, return_inverse=True)
    m, k, d = idx.size, f.n_classes, f.X.shape[1]
    kd = k * d
    n_xi = used.size if f.crammer_singer else m
    weights = f.sample_weight[used] if f.crammer_singer else f.sample_weight[rows]
    penalised = np.zeros((k, d))
    f.penalised(penalised)[...] = 1.0
    P = sp.diags(np.r_[penalised.ravel(), np.zeros(n_xi)], format="csc")
    linear = np.zeros(kd)
    if at_bound is not None and len(at_bound):
        linear = -f.C * f.bound_term(at_bound, used).ravel()
    q = np.r_[linear, f.C * weights]
    # the margin rows: -x_i on W's row y_i, +x_i on row c, -1 on the slack
    Xr = sp.csr_matrix(f.X[rows])
    per_row = np.diff(Xr.indptr)
    line = np.repeat(np.arange(m), per_row)
    slack = kd + (local if f.crammer_singer else np.arange(m))
    A = sp.csr_matrix(
        (
            np.concatenate([-Xr.data, Xr.data, -np.ones(m), -np.ones(n_xi)]),
            (
                np.concatenate([line, line, np.arange(m), m + np.arange(n_xi)]),
                np.concatenate(
                    [
                        np.repeat(f.y[rows] * d, per_row) + Xr.indices,
                        np.repeat(cols * d, per_row) + Xr.indices,
                        slack,
                        kd + np.arange(n_xi),
                    ]
                ),
            ),
        ),
        shape=(m + n_xi, kd + n_xi),
    ).tocsc()
    b = np.r_[-np.ones(m), np.zeros(n_xi)]
    return P, q, A, b


def solve_restricted_multiclass(
    f: MulticlassProblem, subset: np.ndarray, at_bound: np.ndarray | None
) -> tuple[Candidate, BackendResult] | None:
    """The restricted model ``f.build(subset, at_bound)`` solved by Clarabel from its matrices
    (:func:`restricted_matrices`), without CVXPY: the candidate as ``f.read_model`` reads the
    solved model (the free intercepts shifted to sum 0; ``alpha`` the margin rows'
    multipliers on ``subset``, 0 elsewhere, the fixed constraints' left to the working set)
    and Clarabel's run, or ``None`` for a penalty other than L2, a squared hinge, without
    Clarabel, or where it does not report the problem solved (the working set then solves the
    CVXPY model, which falls back and raises as before)."""
    if f.penalty.name != "l2" or f.squared:
        return None
    P, q, A, b = restricted_matrices(f, subset, at_bound)
    result = direct._clarabel(P, q, A, b, lambda c: [c.NonnegativeConeT(A.shape[0])])
    if result is None:
        return None
    idx = np.asarray(subset, dtype=np.intp)
    x, z = np.asarray(result.x), np.asarray(result.z)
    W = x[: f.n_classes * f.X.shape[1]].reshape(f.n_classes, -1).copy()
    if f.intercept.coupled:
        W[:, -1] -= np.mean(W[:, -1])
    alpha = np.zeros((f.n_samples, f.n_classes))
    alpha[f.rows[idx], f.cols[idx]] = z[: idx.size]
    run = BackendResult("CLARABEL", "optimal", int(result.iterations), float(result.solve_time))
    return Candidate(w=W, b=0.0, alpha=alpha), run

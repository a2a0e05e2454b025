"""The CVXPY models of the binary SVMs: the primal (soft or hard margin, over all samples or a
working set with samples folded in at their bound) and the dual (over a block of variables, the
others fixed). The formulations' ``build`` methods document the named parts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from qpsvm._lazy import lazy_module
from qpsvm.formulations.model import CvxModel
from qpsvm.kernels import gram_factor

cp = lazy_module("cvxpy")

if TYPE_CHECKING:
    from qpsvm.formulations.binary import BinaryFormulation, SoftMarginDual

__all__ = ["dual_model", "primal_model", "rows_primal_model", "signed_rows"]


def signed_rows(f: BinaryFormulation, idx: np.ndarray | None) -> tuple[Any, np.ndarray]:
    """The rows ``y_i x_i`` of the samples ``idx`` (all by default) and their labels."""
    X = f.X if idx is None else f.X[idx]
    y = f.y if idx is None else f.y[idx]
    Z = sp.diags(y) @ X if sp.issparse(X) else X * y[:, None]
    return Z, y


def primal_model(
    f: BinaryFormulation, slack: bool, subset: Any = None, at_bound: Any = None
) -> CvxModel:
    """The primal CVXPY model (see :meth:`~qpsvm.SoftMarginPrimal.build` and
    :meth:`~qpsvm.HardMargin.build` for its named parts); ``slack=False`` is the hard margin."""
    idx = None if subset is None else np.asarray(subset, dtype=np.intp)
    Z, y = signed_rows(f, idx)
    folded = None
    if slack and at_bound is not None and len(at_bound):
        # points fixed beyond the margin: alpha_i = C s_i, a linear term in (w, b)
        fixed = np.zeros(f.n_samples)
        fixed[np.asarray(at_bound, dtype=np.intp)] = f.sample_weight[at_bound]
        folded = (f.expansion(fixed), float(fixed @ f.y))
    return rows_primal_model(
        Z,
        y,
        f.margin if idx is None else f.margin[idx],
        (f.sample_weight if idx is None else f.sample_weight[idx]) if slack else None,
        f.C,
        f.fit_intercept,
        folded,
        idx,
    )


def rows_primal_model(
    Z: Any,
    y: np.ndarray,
    m: np.ndarray,
    s: np.ndarray | None,
    C: float,
    fit_intercept: bool,
    folded: tuple[np.ndarray, float] | None = None,
    index: np.ndarray | None = None,
) -> CvxModel:
    r"""The primal over the rows ``Z = y_i x_i`` (margins ``m``, slack weights ``s``; ``s=None``
    is the hard margin), with the samples fixed at their bound folded in.

    ``folded = (v, t)`` with ``v = sum_E s_i y_i x_i`` and ``t = sum_E s_i y_i`` over the fixed
    samples ``E`` adds ``-C (v . w + t b)``: their term ``C sum_E s_i (m_i - y_i (w.x_i + b))``
    up to a constant. ``index`` (the rows' indices in the full data) is kept on the model.
    """
    w = cp.Variable(Z.shape[1], name="w")
    variables: dict[str, cp.Variable] = {"w": w}
    signed = Z @ w
    b = None
    if fit_intercept:
        b = cp.Variable(name="b")
        variables["b"] = b
        signed = signed + y * b
    objective = 0.5 * cp.sum_squares(w)
    parameters: dict[str, cp.Parameter] = {}
    constraints: dict[str, cp.Constraint] = {}
    if s is not None:
        Cp = cp.Parameter(nonneg=True, value=C, name="C")
        parameters["C"] = Cp
        xi = cp.Variable(Z.shape[0], name="xi")
        variables["xi"] = xi
        constraints["margin"] = signed >= m - xi
        constraints["slack"] = xi >= 0
        objective = objective + Cp * (s @ xi)
        if folded is not None:
            objective = objective - Cp * (folded[0] @ w)
            if b is not None:
                objective = objective - Cp * folded[1] * b
    else:
        constraints["margin"] = signed >= m
    problem = cp.Problem(cp.Minimize(objective), list(constraints.values()))
    return CvxModel(problem, variables, constraints, parameters, index)


def dual_model(f: SoftMarginDual, subset: Any = None, fixed: Any = None) -> CvxModel:
    """The dual CVXPY model (see :meth:`~qpsvm.SoftMarginDual.build` for its named parts)."""
    n = f.n_samples
    idx = np.arange(n) if subset is None else np.asarray(subset, dtype=np.intp)
    fixed = np.zeros(n) if fixed is None else np.asarray(fixed, dtype=np.float64)
    rest = np.setdiff1d(np.arange(n), idx, assume_unique=True)
    a = cp.Variable(len(idx), name="alpha")
    C = cp.Parameter(nonneg=True, value=f.C, name="C")
    y = f.y[idx]
    ay = cp.multiply(y, a)
    v = np.zeros(n)  # the fixed multipliers: fixed on the rest R, 0 on the subset W
    v[rest] = fixed[rest]
    if f.linear:
        quad = cp.sum_squares(f.X[idx].T @ ay + f.expansion(v))
    elif subset is None:
        # the full Gram matrix through its factor: on ill-conditioned kernels (poly on raw
        # features) Clarabel is far more accurate on this form than on psd_wrap(K)
        quad = cp.sum_squares(gram_factor(f.gram()).T @ ay)
    else:
        # (ay)^T K (ay) over W and R: K_WW is the quadratic form (given to the backend as
        # it is: no factorisation), and with g = K (v y), K_WR (v y)_R = g_W is a linear term
        # and (v y)^T g the constant R-R block
        g = f.scores(alpha=v)
        K_WW = f.gram_block(idx)
        quad = (
            cp.quad_form(ay, cp.psd_wrap(0.5 * (K_WW + K_WW.T)))
            + 2.0 * g[idx] @ ay
            + float((v * f.y) @ g)
        )
    objective = cp.Maximize(f.margin[idx] @ a - 0.5 * quad)
    constraints: dict[str, cp.Constraint] = {
        "lower": a >= 0,
        "upper": a <= C * f.sample_weight[idx],
    }
    if f.fit_intercept:
        constraints["balance"] = y @ a == -float(f.y[rest] @ fixed[rest])
    problem = cp.Problem(objective, list(constraints.values()))
    return CvxModel(problem, {"alpha": a}, constraints, {"C": C}, None if subset is None else idx)

"""The multiclass working set's restricted QP from its matrices
(:mod:`qpsvm.solvers.direct_multiclass`) is the CVXPY model's problem: both solved by Clarabel
give the same point (where Clarabel fails on the matrices the model is solved instead:
tests/test_direct.py)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import qpsvm
from qpsvm.solution import Candidate
from qpsvm.solvers.warm_start import Start
from qpsvm.solvers.working_set import CrammerSingerSets, WestonWatkinsSets
from tests.test_direct import both_restricted

_CASES = [
    (variant, intercept, sparse)
    for variant in ("crammer_singer", "weston_watkins")
    for intercept in ("none", "regularized", "free")
    for sparse in (False, True)
]


def problem(variant: str, intercept: str, sparse: bool) -> qpsvm.MulticlassSVM:
    """Four classes of 120 weighted examples in 5 features (about half the entries zero when
    ``sparse``), ``C = 0.5``: examples in all three statuses at the optimum."""
    rng = np.random.default_rng(21)
    X = rng.normal(size=(120, 5))
    y = np.argmax(X[:, :4] + 0.7 * rng.normal(size=(120, 4)), axis=1)
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.7, X, 0.0))
    weights = rng.uniform(0.5, 2.0, size=120)
    return qpsvm.MulticlassSVM(
        X, y, C=0.5, variant=variant, sample_weight=weights, intercept=intercept
    )


@pytest.mark.parametrize(("variant", "intercept", "sparse"), _CASES)
def test_restricted_matrices_solve_the_restricted_model(variant, intercept, sparse):
    # the sets sorted at the optimum (units within 1e-3 of their margin in W, the others fixed
    # at their bound or dropped); the restricted QP from its matrices and as the CVXPY model,
    # both by Clarabel: the penalised columns of W within sqrt(2 gap) of the unique restricted
    # optimum's (strong convexity with modulus 1, Clarabel's gap at most 1e-10 relative), the
    # multipliers outside the QP the same (C s on the fixed units, 0 on the dropped ones). The
    # multipliers inside need not be unique (sparse rows sharing their one feature), but both
    # are dual optimal: the full dual at them (the restricted dual plus a constant) the same,
    # and their expansion A^T X is W on the penalised columns (stationarity)
    f = problem(variant, intercept, sparse)
    opt = f.solve(method="qp")
    sets = CrammerSingerSets if f.crammer_singer else WestonWatkinsSets
    ws = sets(f, Start(Candidate(w=f.joint_weights(opt.w, opt.b)), 1e-3, "optimum", 0))
    assert ws.work.any() and ws.bound.any() and (~ws.work & ~ws.bound).any()
    cand, other, radius = both_restricted(ws)
    assert np.linalg.norm(f.penalised(cand.w) - f.penalised(other.w)) <= radius
    # a free intercept's column is fixed by the free multipliers' margins, not by strong
    # convexity: both solves' to Clarabel's accuracy
    np.testing.assert_allclose(cand.w, other.w, atol=1e-6)
    subset = np.zeros(f.mask.shape, bool)
    subset[f.rows[ws.restricted()[0]], f.cols[ws.restricted()[0]]] = True
    np.testing.assert_array_equal(cand.alpha[~subset], other.alpha[~subset])
    assert f.dual_objective(cand.alpha) == pytest.approx(f.dual_objective(other.alpha), rel=1e-9)
    for point in (cand, other):
        residual = f.penalised(f.expansion(point.alpha) - point.w)
        assert np.abs(residual).max() <= 1e-6

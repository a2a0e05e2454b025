"""A kernel KKT point aimed inside its margins by its scores' error bound: its free samples'
slacks are proven zero, so a large ``C`` with free support vectors far below it (where a point
on its margins pays ``C e_i`` per free sample in the certified primal) is certified at 1e-9
(rbf, whose scores carry the exponential's bound); its certificate still encloses its exact
objective (rational arithmetic on the poly kernel)."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
from sklearn.datasets import make_classification

import qpsvm
from qpsvm.solution import Candidate
from qpsvm.solvers.refine import aimed_inside, refine_binary
from qpsvm.verify.binary import kernel_scores, kernel_ulps
from tests.conftest import exact_poly, random_problem


def poly_problem(C: float = 1e5) -> qpsvm.SoftMarginDual:
    """13 free support vectors with multipliers far below ``C``."""
    X, y = random_problem(1, n=40, d=3)
    return qpsvm.SoftMarginDual(X, y, C=C, kernel="poly", degree=3, gamma=0.5, coef0=1.0)


def exact_primal(f: qpsvm.SoftMarginDual, cand: Candidate) -> F:
    """``1/2 v^T K v + C sum_i max(0, 1 - y_i ((K v)_i + b))``, ``v = alpha y``, exactly."""
    K = exact_poly(f.X, f.kernel.gamma, f.kernel.coef0, f.kernel.degree)
    n = f.n_samples
    v = [F(float(cand.alpha[i])) * int(f.y[i]) for i in range(n)]
    g = [sum(K[i][j] * v[j] for j in range(n)) for i in range(n)]
    b = F(float(cand.b))
    slack = sum(max(F(0), 1 - int(f.y[i]) * (g[i] + b)) for i in range(n))
    return sum(v[i] * g[i] for i in range(n)) / 2 + F(f.C) * slack


def test_aimed_point_is_certified_where_the_point_on_its_margins_is_not():
    # rbf: each score's error bound carries the exponential's, a few ulps of every K_ij
    # alpha_j, and a point on its margins pays C e_i per free sample in its certified primal
    X, y = random_problem(1, n=40, d=3)
    f = qpsvm.SoftMarginDual(X, y, C=1e5, kernel="rbf", gamma=0.5)
    sol = f.solve(tol=1e-6)
    on_margins = next(refine_binary(f, Candidate(alpha=sol.alpha, b=sol.b)))
    before = f.certify(on_margins)
    # the point on its margins fails by its rounding floor: C e_i per free sample
    assert before.relative_floor > 1e-9 and not before.passed
    aimed = aimed_inside(f, on_margins)
    assert aimed is not None
    free = (aimed.alpha > 0) & (aimed.alpha < f.upper)
    assert np.array_equal(free, (on_margins.alpha > 0) & (on_margins.alpha < f.upper))
    g, e = kernel_scores(f, [aimed.alpha], kernel_ulps(f))[0]
    # every free margin proven above 1: its slack is zero in exact arithmetic
    assert np.all(f.y[free] * (g[free] + aimed.b) - e[free] > 1.0)
    cert = f.certify(aimed)
    assert cert.rigorous and cert.passed
    assert cert.relative_floor < before.relative_floor / 100


def test_aimed_point_encloses_its_exact_objective():
    # poly, whose values are rational in the data: the aimed point's certified primal is at or
    # above its objective computed exactly
    f = poly_problem()
    sol = f.solve(tol=1e-6)
    on_margins = next(refine_binary(f, Candidate(alpha=sol.alpha, b=sol.b)))
    aimed = aimed_inside(f, on_margins)
    assert aimed is not None
    cert = f.certify(aimed)
    assert cert.rigorous and cert.passed
    assert F(cert.upper) >= exact_primal(f, aimed)


def test_solve_certifies_free_support_vectors_far_below_a_large_C():
    # the kernel benchmark's data at n = 300, C = 1000: 155 free support vectors, none at C;
    # the KKT point on its margins has a rounding floor of 1.2e-9, the aimed one 4e-12
    X, y = make_classification(
        n_samples=300, n_features=20, n_informative=10, flip_y=0.1, random_state=0
    )
    f = qpsvm.SoftMarginDual(X, y, C=1000.0, kernel="poly", degree=3, gamma=0.05, coef0=1.0)
    cert = f.solve().certificate
    assert cert.passed and cert.rigorous
    assert cert.relative_floor < 1e-10


def test_aimed_point_clears_the_solves_own_residual():
    # poly at C = 1e7: its scores' error bounds are Dot2's u |g_i| (~5e-16), below the KKT
    # solve's own residual at the free margins (~2e-13); aimed by the error bound alone, free
    # margins were proven only to -1.9e-13 and the gap was 3.2e-8. Aimed by the residual too,
    # every free margin is proven and the point certified (gap 1.1e-12)
    f = poly_problem(1e7)
    sol = f.solve(method="working_set")
    on_margins = next(refine_binary(f, Candidate(alpha=sol.alpha, b=sol.b)))
    aimed = aimed_inside(f, on_margins)
    assert aimed is not None
    free = (aimed.alpha > 0) & (aimed.alpha < f.upper)
    g, e = kernel_scores(f, [aimed.alpha], kernel_ulps(f))[0]
    assert np.count_nonzero(free) == 13
    assert np.all(f.y[free] * (g[free] + aimed.b) - e[free] > 1.0)
    cert = f.certify(aimed)
    assert cert.rigorous and cert.passed
    assert F(cert.upper) >= exact_primal(f, aimed)

"""The kernel composed certificate's first dual point: the candidate's own multipliers.

At an exact answer the candidate's multipliers, moved into the exact box, certify it with no
factor of the Gram matrix (:func:`qpsvm.verify.fenchel._certify_kernel`); a perturbed candidate
is refused by them and goes on to the factor problem's search, whose answer must still enclose
the exact optimum (the rational one of the poly kernel's LCP, :mod:`qpsvm.exact.lemke`); a
candidate whose ``w`` is optimal but whose multipliers are not (moved along the Gram matrix's
null space) fails on its own multipliers and is certified by the search.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from qpsvm.formulations.composed import ComposedProblem
from qpsvm.solution import Candidate
from qpsvm.verify.fenchel import certify_composed
from tests.test_composed_kernel_working_set import (
    CLASSIFICATION,
    REGRESSION,
    exact_optimum,
    problem,
)

MODES = CLASSIFICATION + REGRESSION


def factor_calls(monkeypatch, forbid: bool = False) -> list:
    """Records each call of ``factor_problem`` (the search's factor of ``K``); with ``forbid``
    a call fails the test."""
    calls = []
    original = ComposedProblem.factor_problem

    def spy(self):
        assert not forbid, "the certificate factored the Gram matrix"
        calls.append(self)
        return original(self)

    monkeypatch.setattr(ComposedProblem, "factor_problem", spy)
    return calls


@pytest.mark.parametrize(("loss", "intercept"), MODES)
def test_exact_answer_is_certified_by_its_own_multipliers(loss, intercept, monkeypatch):
    f = problem(loss, intercept, seed=3, n=8 if "eps" in loss else 10)
    sol = f.solve(method="working_set")
    factor_calls(monkeypatch, forbid=True)
    cert = certify_composed(f, Candidate(w=None, b=sol.b, alpha=sol.alpha))
    optimum = exact_optimum(f)
    assert cert.passed and cert.rigorous
    assert Fraction(cert.lower) <= optimum <= Fraction(cert.upper)


@pytest.mark.parametrize(("loss", "intercept"), MODES)
def test_perturbed_answer_is_refused_and_searched(loss, intercept, monkeypatch):
    f = problem(loss, intercept, seed=3, n=8 if "eps" in loss else 10)
    sol = f.solve(method="working_set")
    calls = factor_calls(monkeypatch)
    u = np.asarray(sol.alpha) * 1.01
    cert = certify_composed(f, Candidate(w=None, b=sol.b, alpha=u))
    optimum = exact_optimum(f)
    assert len(calls) == 1  # the own multipliers did not pass: the search ran
    assert cert.rigorous and not cert.passed
    assert Fraction(cert.lower) <= optimum <= Fraction(cert.upper)


@pytest.mark.parametrize(("loss", "intercept"), [("hinge", "free"), ("squared_hinge", "none")])
def test_optimal_w_with_wrong_multipliers_falls_back(loss, intercept, monkeypatch):
    """Multipliers moved along ``v`` with ``K (v sigma) = 0`` (the degree-2 poly kernel in two
    dimensions has rank at most 6 < n) give the same ``w``, hence the optimal primal value, but
    a worse dual point: the search on the factor problem certifies the candidate."""
    f = problem(loss, intercept, seed=3, n=14)
    sol = f.solve(method="working_set")
    K = f.gram()
    _, s, vt = np.linalg.svd(K)
    null = vt[-1] * f.sigma  # K (null sigma) ~ 0
    assert s[-1] <= 1e-12 * s[0]
    if intercept == "free":  # keep the coupling: move along the null space within sigma.u = 0
        other = vt[-2] * f.sigma
        null = null - (f.sigma @ null) / (f.sigma @ other) * other
    u = np.asarray(sol.alpha) + 0.3 * np.max(sol.alpha) * null / np.max(np.abs(null))
    calls = factor_calls(monkeypatch)
    cert = certify_composed(f, Candidate(w=None, b=sol.b, alpha=u))
    optimum = exact_optimum(f)
    assert len(calls) == 1
    assert cert.passed and cert.rigorous
    assert Fraction(cert.lower) <= optimum <= Fraction(cert.upper)

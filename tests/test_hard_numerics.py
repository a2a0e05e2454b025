"""Numerically hard binary problems: solved exactly (certified at 1e-9) or refused clearly."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_problem

import qpsvm


def _cases():
    X, y = random_problem(0, n=200, d=5)
    rng = np.random.default_rng(1)
    wide_X, wide_y = rng.normal(size=(20, 500)), np.where(rng.random(20) < 0.5, -1, 1)
    imb_y = np.where(np.arange(200) < 198, -1, 1)
    imb_X = X + (imb_y > 0)[:, None]
    on_margin = np.array([[1.0], [1.0], [-1.0], [-1.0], [1.0], [-1.0]])
    return {
        "features shifted by 1e3": (X + 1e3, y, {}),
        "features scaled by 1e-4": (X * 1e-4, y, {}),
        "features scaled by 1e4": (X * 1e4, y, {}),
        "C = 1e-4": (X, y, {"C": 1e-4}),
        "C = 1e4": (X, y, {"C": 1e4}),
        "C = 1e4, shifted by 1e3": (X + 1e3, y, {"C": 1e4}),
        "duplicates with opposite labels": (np.vstack([X, X]), np.concatenate([y, -y]), {}),
        "n << d": (wide_X, wide_y, {}),
        "d = 1": (X[:, :1], y, {}),
        "99:1 imbalance": (imb_X, imb_y, {}),
        "all points on the margin": (on_margin, np.array([1, 1, -1, -1, 1, -1]), {"C": 10.0}),
    }


CASES = _cases()


@pytest.mark.parametrize("name", list(CASES))
def test_primal_exact_on_hard_data(name):
    X, y, kw = CASES[name]
    sol = qpsvm.SoftMarginPrimal(X, y, **kw).solve()
    assert sol.certificate.passed and sol.certificate.relative_gap <= 1e-9


@pytest.mark.parametrize("name", list(CASES))
def test_dual_exact_or_refused(name):
    # in the dual, w = sum a_i y_i x_i cancels terms of size |x| ~ 1e4 down to |w| ~ 1e-4, which
    # costs ~8 digits (so do features shifted by 1e3 at C = 1e4): qpsvm then refuses with a
    # message saying what to do, never a wrong answer
    X, y, kw = CASES[name]
    f = qpsvm.SoftMarginDual(X, y, **kw)
    try:
        sol = f.solve()
    except qpsvm.UncertifiedSolutionError as exc:
        assert "standardise" in str(exc) and ("scaled" in name or "shifted" in name)
        return
    assert sol.certificate.passed
    assert sol.objective == pytest.approx(
        qpsvm.SoftMarginPrimal(X, y, **kw).solve().objective, rel=2e-9
    )


@pytest.mark.parametrize("name", list(CASES))
def test_osqp_exact_or_typed_error(name):
    X, y, kw = CASES[name]
    try:
        sol = qpsvm.SoftMarginPrimal(X, y, **kw).solve(solver="OSQP")
    except qpsvm.InaccurateSolutionError as exc:
        assert "max_iter" in str(exc)
        return
    assert sol.certificate.passed and sol.solver == "OSQP"


def test_all_on_margin_known_optimum():
    # x = +-1 with labels +-1: w = 1, b = 0 puts every point exactly on its margin
    X, y, kw = CASES["all points on the margin"]
    sol = qpsvm.SoftMarginPrimal(X, y, **kw).solve()
    np.testing.assert_allclose(sol.w, [1.0], atol=1e-12)
    assert abs(sol.b) < 1e-12 and sol.objective == pytest.approx(0.5, abs=1e-12)

"""Solver failure paths, fallbacks, determinism and hygiene of the exact solve."""

from __future__ import annotations

import logging

import cvxpy as cp
import numpy as np
import pytest

import qpsvm


def test_fallback_is_logged(cancer, caplog):
    # Clarabel stopped after 2 iterations cannot be certified, so solver=None falls back to
    # OSQP with a logged warning, and what comes back is certified
    X, y = cancer
    with caplog.at_level(logging.WARNING, logger="qpsvm"):
        sol = qpsvm.SoftMarginPrimal(X, y).solve(max_iter=2, refine=False)
    assert sol.solver == "OSQP" and sol.certificate.passed
    assert any("falling back" in r.message for r in caplog.records)


def test_explicit_solver_does_not_fall_back(cancer):
    X, y = cancer
    with pytest.raises(qpsvm.InaccurateSolutionError, match="max_iter"):
        qpsvm.SoftMarginPrimal(X, y).solve(solver="CLARABEL", max_iter=2, refine=False)


def test_unknown_backend_option_is_a_clear_error(cancer):
    X, y = cancer
    with pytest.raises((ValueError, qpsvm.SolverError)):
        qpsvm.SoftMarginPrimal(X, y).solve(solver="CLARABEL", no_such_option=3)


def test_same_input_same_output(cancer):
    X, y = cancer
    a = qpsvm.SoftMarginDual(X, y, kernel="rbf").solve()
    b = qpsvm.SoftMarginDual(X, y, kernel="rbf").solve()
    np.testing.assert_array_equal(a.alpha, b.alpha)
    assert a.b == b.b and a.objective == b.objective


def test_no_global_state_changed(cancer):
    X, y = cancer
    before = (cp.settings.ERROR, sorted(cp.installed_solvers()), np.geterr())
    qpsvm.SoftMarginPrimal(X, y).solve(solver="OSQP")
    assert (cp.settings.ERROR, sorted(cp.installed_solvers()), np.geterr()) == before


def test_solver_failure_not_swallowed(monkeypatch, cancer):
    # a backend that crashes raises a SolverError naming it (explicit solver) ...
    X, y = cancer
    f = qpsvm.SoftMarginPrimal(X, y)

    def crash(*args, **kwargs):
        raise cp.error.SolverError("simulated crash")

    monkeypatch.setattr(cp.Problem, "solve", crash)
    # (the primal's direct Clarabel solve leaves a failure to the CVXPY path, as simulated here)
    from qpsvm.solvers import direct

    monkeypatch.setattr(direct, "solve_primal_direct", lambda f, tol, refine: None)
    with pytest.raises(qpsvm.SolverError, match="CLARABEL failed"):
        f.solve(solver="CLARABEL")
    # ... and with solver=None every backend is tried, then the failures are reported together
    with pytest.raises(qpsvm.SolverError, match="simulated crash") as info:
        f.solve()
    assert not isinstance(info.value, qpsvm.UncertifiedSolutionError)


@pytest.mark.parametrize("method", ["qp", "working_set"])
def test_feasible_problem_reported_infeasible_falls_back(monkeypatch, cancer, method):
    # a soft margin always has a solution: Clarabel calling it infeasible is a numerical failure,
    # so OSQP is tried (and an explicit solver gets a SolverError, not InfeasibleProblemError)
    from qpsvm.solvers import backends

    X, y = cancer
    f = qpsvm.SoftMarginPrimal(X, y)
    run = backends.run_backend

    def liar(problem, solver, options):
        if solver == "CLARABEL":
            raise qpsvm.InfeasibleProblemError("CLARABEL reports the problem infeasible")
        return run(problem, solver, options)

    # every exact method goes through the one backend loop, backends.solve_model; the primal's
    # direct Clarabel solves (qpsvm.solvers.direct: the whole QP, the working set's restricted
    # QPs) leave a Clarabel that does not report "solved" to it, as simulated here
    from qpsvm.solvers import direct

    monkeypatch.setattr(backends, "run_backend", liar)
    monkeypatch.setattr(direct, "solve_primal_direct", lambda f, tol, refine: None)
    monkeypatch.setattr(direct, "solve_restricted_primal", lambda f, work, bound: None)
    sol = f.solve(method=method)
    assert sol.solver == "OSQP" and sol.certificate.passed
    with pytest.raises(qpsvm.SolverError) as info:
        f.solve(method=method, solver="CLARABEL")
    assert not isinstance(info.value, qpsvm.InfeasibleProblemError)
    assert "always has a solution" in str(info.value) or "numerical failure" in str(info.value)

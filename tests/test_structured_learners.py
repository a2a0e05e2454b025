"""Structural-SVM learners on the new models: block-coordinate Frank-Wolfe against the cutting
plane (same certified optimum)."""

from __future__ import annotations

import numpy as np
import pytest

import qpsvm
from qpsvm.datasets import make_chains
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.models import ChainModel, LatentMulticlassModel, MultiLabelModel


def multilabel_problem(C=1.0):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 4))
    W = rng.standard_normal((5, 4))
    Y = (X @ W.T + 0.5 * rng.standard_normal((40, 5)) > 0).astype(np.int64)
    return qpsvm.StructuralSVM(MultiLabelModel(5, 4, "full"), X, Y, C=C)


def chain_problem():
    data = make_chains(n_sequences=30, n_states=3, n_features=4, random_state=0)
    return qpsvm.StructuralSVM(ChainModel(4, 3), data.X, data.Y, C=0.5)


def check_gap_encloses(a, b):
    """Two certified solutions of one problem: each certificate's interval holds P*, so the
    objectives differ by at most the sum of the gaps (plus rounding), and by strong convexity
    ||w_a - w_b|| <= sqrt(2 gap_a) + sqrt(2 gap_b)."""
    ca, cb = a.certificate, b.certificate
    assert ca.passed and cb.passed
    assert abs(a.objective - b.objective) <= ca.gap + cb.gap + 1e-12 * abs(a.objective)
    assert np.linalg.norm(a.w - b.w) <= np.sqrt(2 * ca.gap) + np.sqrt(2 * cb.gap) + 1e-9


@pytest.mark.parametrize("make", [multilabel_problem, chain_problem])
def test_frank_wolfe_and_cutting_planes_reach_the_same_certified_optimum(make):
    f = make()
    fw = f.solve(method="frank_wolfe")
    n_slack = f.solve(method="cutting_plane")
    one_slack = f.solve(method="cutting_plane", variant="one_slack")
    assert fw.method == "frank_wolfe" and fw.status == "optimal"
    assert fw.certificate.relative_gap <= 1e-9
    check_gap_encloses(fw, n_slack)
    check_gap_encloses(fw, one_slack)
    # the certificate recomputed from the returned solution agrees
    assert f.certify(fw).passed


def test_standard_frank_wolfe_gap_is_the_certified_gap():
    """The plain BCFW step: its gap decreases (O(1/k)); at every pass the recorded gap is
    P(w) - D(alpha), and the final certificate of the same point agrees with the last one."""
    f = multilabel_problem()
    sol = f.solve(method="frank_wolfe", variant="standard", tol=1e-2, max_passes=200)
    assert sol.status == "optimal" and sol.certificate.passed
    assert sol.certificate.relative_gap <= 1e-2
    gaps = sol.history.gap / np.maximum(1.0, sol.history.objective)
    assert gaps[-1] <= 1e-2 < gaps[0]
    exact = f.solve()
    assert sol.objective >= exact.objective - exact.certificate.gap


def test_frank_wolfe_rejects_what_it_cannot_solve():
    f = chain_problem()
    with pytest.raises(InvalidInputError, match="no CVXPY solver"):
        f.solve(method="frank_wolfe", solver="CLARABEL")
    with pytest.raises(InvalidInputError, match="variant"):
        f.solve(method="frank_wolfe", variant="away")
    data = make_chains(n_sequences=5, n_states=2, n_features=2, random_state=0)
    slack = qpsvm.StructuralSVM(ChainModel(2, 2), data.X, data.Y, rescaling="slack")
    with pytest.raises(InvalidInputError, match="margin rescaling"):
        slack.solve(method="frank_wolfe")


@pytest.mark.parametrize("method", ["cutting_plane", "frank_wolfe", "subgradient"])
def test_parallel_oracles_give_identical_results(method):
    """n_jobs splits the oracle calls into chunks and puts them back in order: every learner
    sees the same outputs, so the runs are identical to n_jobs=1, bit for bit."""
    data = make_chains(n_sequences=25, n_states=3, n_features=4, random_state=1)
    options = {"epochs": 3, "random_state": 0} if method == "subgradient" else {}
    runs = [
        qpsvm.StructuralSVM(ChainModel(4, 3), data.X, data.Y, C=0.5, n_jobs=n_jobs).solve(
            method=method, **options
        )
        for n_jobs in (1, 2, -1)
    ]
    for other in runs[1:]:
        np.testing.assert_array_equal(other.w, runs[0].w)
        assert other.objective == runs[0].objective
        assert other.n_iter == runs[0].n_iter
    f = multilabel_problem()
    parallel = qpsvm.StructuralSVM(f.model, f.X, f.Y, C=f.C, n_jobs=2)
    np.testing.assert_array_equal(
        parallel.slacks(np.ones(f.n_features)), f.slacks(np.ones(f.n_features))
    )
    with pytest.raises(InvalidInputError, match="n_jobs"):
        qpsvm.StructuralSVM(f.model, f.X, f.Y, n_jobs=0)


def ring_data(n=60):
    """Six clusters on a circle, classes alternating: no linear classifier per class separates
    them, a mixture of three per class does."""
    rng = np.random.default_rng(0)
    angles = np.arange(6) * np.pi / 3
    centers = 3.0 * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    cluster = rng.integers(0, 6, n)
    X = np.hstack([centers[cluster] + 0.5 * rng.standard_normal((n, 2)), np.ones((n, 1))])
    return X, (cluster % 2).tolist()


def test_latent_ssvm_objective_never_increases_and_every_step_is_certified():
    X, Y = ring_data()
    f = qpsvm.LatentStructuralSVM(LatentMulticlassModel(3, 2, 3), X, Y, C=1.0)
    sol = f.solve()
    assert sol.status == "converged" and sol.n_iter >= 2
    assert all(step.certificate.passed for step in sol.steps)
    assert np.all(np.diff(sol.objectives) <= 0.0)
    # the reported objective is L(w), recomputed from the data with h imputed at w
    assert sol.objective == pytest.approx(f.objective(sol.w), rel=1e-12)
    # the first value is L(0) = C * n (every example violates its 0/1 loss by 1 at w = 0)
    assert sol.objectives[0] == pytest.approx(len(Y))
    # the mixture separates what one linear classifier per class cannot
    accuracy = np.mean([p[0] == y for p, y in zip(f.predict(X, sol), Y, strict=True)])
    plain = qpsvm.LatentStructuralSVM(LatentMulticlassModel(3, 2, 1), X, Y, C=1.0)
    plain_sol = plain.solve()
    plain_accuracy = np.mean(
        [p[0] == y for p, y in zip(plain.predict(X, plain_sol), Y, strict=True)]
    )
    assert accuracy >= 0.95 > plain_accuracy
    with pytest.raises(InvalidTypeError, match="LatentModel"):
        qpsvm.LatentStructuralSVM(ChainModel(2, 2), X, Y)

"""The working set of the composed problems with a margin loss (hinge or squared hinge, any
penalty and intercept, binary or ranking) and of the multiclass SVMs with the L1 penalties.

The restricted problems start from a sample's optimum and grow by the samples whose status the
full data contradict; the answer ends in the full problem's certificate. Checked against the
problem stated from scratch in CVXPY (Clarabel at tight tolerances) and against the full QP,
with a sample of a few units so that the sets really grow; under the L1 penalty alone no unit
is fixed at its bound (a linear term could make the restricted LP unbounded).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import composed_optimum
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm.exceptions import InvalidInputError
from qpsvm.solvers import working_set

#: A sample of this many units starts the tests' working sets: most units join by the checks.
SMALL_SAMPLE = 6


@pytest.fixture(autouse=True)
def small_sample(monkeypatch):
    monkeypatch.setattr(working_set, "START_SAMPLE", SMALL_SAMPLE)


def classifier_data(seed: int, n: int = 60, d: int = 5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X @ rng.normal(size=d) + 0.8 * rng.normal(size=n) > 0, 1, -1)
    return X, y


def assert_optimal(sol, optimum):
    """Certified, the enclosure holds the reference optimum (to its own accuracy), and the
    objective is the optimum."""
    cert = sol.certificate
    assert cert.passed and cert.rigorous
    slack = 1e-9 * max(1.0, abs(optimum))
    assert cert.lower - slack <= optimum <= cert.upper + slack
    assert sol.objective == pytest.approx(optimum, rel=1e-8, abs=1e-9)


@pytest.mark.parametrize(
    ("loss", "penalty", "intercept"),
    list(
        itertools.product(
            ("hinge", "squared_hinge"), ("l1", "l1_l2", "l2"), ("none", "free", "regularized")
        )
    ),
)
def test_classifier_working_set_is_the_optimum(loss, penalty, intercept):
    X, y = classifier_data(1)
    f = qpsvm.ComposedClassifier(
        X, y, C=0.7, loss=loss, penalty=penalty, intercept=intercept, intercept_scaling=2.0
    )
    sol = f.solve(method="working_set")
    optimum = composed_optimum(
        X, np.ones(len(y)), 0.7, loss, penalty, sigma=f.y, intercept=intercept, scaling=2.0
    )
    assert_optimal(sol, optimum)
    assert sol.info["rounds"] >= 2  # the sample's sets were wrong somewhere: the loop grew them
    if penalty == "l1":
        assert sol.info["fixed"] == 0


@pytest.mark.parametrize(
    ("loss", "penalty"), list(itertools.product(("hinge", "squared_hinge"), ("l1", "l1_l2")))
)
def test_ranking_working_set_is_the_optimum(loss, penalty):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 4))
    rel = np.digitize(X @ rng.normal(size=4) + rng.normal(size=40), [-1.0, 0.0, 1.0])
    groups = np.repeat(np.arange(4), 10)
    f = qpsvm.RankingSVM(X, y=rel, groups=groups, C=0.3, loss=loss, penalty=penalty)
    pair_weight = rng.uniform(0.5, 2.0, size=f.n_pairs)
    f = qpsvm.RankingSVM(
        X, y=rel, groups=groups, C=0.3, loss=loss, penalty=penalty, pair_weight=pair_weight
    )
    sol = f.solve(method="working_set")
    Z = X[f.pairs[:, 0]] - X[f.pairs[:, 1]]
    optimum = composed_optimum(Z, pair_weight, 0.3, loss, penalty)
    assert_optimal(sol, optimum)
    assert sol.info["rounds"] >= 2
    if penalty == "l1":  # no unique w: no distance bound
        assert sol.certificate.distance_bound is None


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    log_C=st.floats(-2.0, 2.0),
    combination=st.sampled_from(
        list(itertools.product(("hinge", "squared_hinge"), ("l1", "l1_l2"), ("none", "free")))
    ),
)
@example(seed=0, log_C=2.0, combination=("hinge", "l1", "free"))
def test_working_set_equals_the_full_problem(seed, log_C, combination):
    """Any data and C: the working set's answer is the full QP's optimum, both certified."""
    loss, penalty, intercept = combination
    X, y = classifier_data(seed, n=40, d=3)
    if len(np.unique(y)) < 2:
        y[0] = -y[0]
    C = 10.0**log_C
    f = qpsvm.ComposedClassifier(X, y, C=C, loss=loss, penalty=penalty, intercept=intercept)
    ws = f.fresh_copy().solve(method="working_set")
    full = f.fresh_copy().solve(method="qp")
    for sol in (ws, full):
        assert sol.certificate.passed
    # both objectives lie in each other's certified enclosure of the optimum
    assert ws.certificate.lower <= full.objective * (1 + 1e-12) + 1e-12
    assert full.certificate.lower <= ws.objective * (1 + 1e-12) + 1e-12


@pytest.mark.parametrize(
    ("variant", "penalty", "intercept"),
    [
        ("crammer_singer", "l1", "none"),
        ("crammer_singer", "l1_l2", "free"),
        ("weston_watkins", "l1", "free"),
        ("weston_watkins", "l1_l2", "regularized"),
    ],
)
def test_multiclass_l1_working_set_equals_the_full_problem(variant, penalty, intercept):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(45, 4))
    y = np.argmax(X[:, :3] + 0.5 * rng.normal(size=(45, 3)), axis=1)
    f = qpsvm.MulticlassSVM(
        X, y, C=0.8, variant=variant, penalty=penalty, intercept=intercept, intercept_scaling=2.0
    )
    ws = f.fresh_copy().solve(method="working_set")
    full = f.fresh_copy().solve(method="qp")
    assert ws.certificate.passed and ws.certificate.rigorous and full.certificate.passed
    assert ws.certificate.lower <= full.objective * (1 + 1e-12)
    assert full.certificate.lower <= ws.objective * (1 + 1e-12)
    assert ws.info["rounds"] >= 2
    if penalty == "l1":
        assert ws.info["fixed"] == 0
    assert f.default_method() == "qp"  # measured: no faster than the full QP on digits


def test_working_set_is_refused_where_it_does_not_apply():
    X = classifier_data(4, n=20)[0]
    squared = qpsvm.MulticlassSVM(X, np.arange(20) % 3, loss="squared_hinge", penalty="l1")
    with pytest.raises(InvalidInputError, match="serve the hinge"):
        squared.solve(method="working_set")


def test_default_is_the_working_set_for_l1_above_the_crossover():
    X, y = classifier_data(5, n=1001, d=3)
    assert qpsvm.ComposedClassifier(X, y, penalty="l1").default_method() == "working_set"
    assert qpsvm.ComposedClassifier(X[:1000], y[:1000], penalty="l1").default_method() == "qp"
    assert qpsvm.ComposedClassifier(X, y, loss="squared_hinge").default_method() == "qp"

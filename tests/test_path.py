"""Regularisation paths: one certified optimum per C, equal to independent solves."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_problem

import qpsvm

EXACT = 1e-9


def independent(f: qpsvm.Formulation, C: float) -> qpsvm.Solution:
    return f.with_C(C).solve(method="qp")


@pytest.mark.parametrize("method", ["homotopy", "working_set", "qp"])
def test_path_matches_independent_solves(method):
    X, y = random_problem(0, n=150, d=4)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    Cs = np.logspace(-2, 2, 6)
    path = f.path(Cs, method=method)
    assert len(path) == len(Cs)
    for C, sol in zip(Cs, path, strict=True):
        ref = independent(f, C)
        # each value is certified on its own problem, and is that problem's optimum
        assert sol.certificate.passed and f.with_C(C).certify(sol).passed
        assert sol.info["C"] == C and sol.method == method and sol.solve_time > 0
        assert sol.objective == pytest.approx(ref.objective, rel=EXACT)
        distance = sol.certificate.distance_bound + ref.certificate.distance_bound
        assert np.linalg.norm(sol.w - ref.w) <= distance + 1e-7


def test_order_duplicates_and_default_method():
    # values come back in the order given, duplicates included; the default is the homotopy
    X, y = random_problem(1, n=120, d=3)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    Cs = [10.0, 0.1, 1.0, 0.1]
    path = f.path(Cs)
    assert [s.info["C"] for s in path] == Cs
    assert all(s.method == "homotopy" for s in path)
    assert path[1].objective == pytest.approx(path[3].objective, rel=EXACT)
    # the optimal objective grows with C (a larger penalty on the same slacks)
    objectives = [path[1].objective, path[2].objective, path[0].objective]
    assert objectives == sorted(objectives)


def test_formulation_is_left_unchanged():
    # the path solves copies at each C: f keeps its C and its own model
    X, y = random_problem(2, n=100, d=3)
    f = qpsvm.SoftMarginPrimal(X, y, C=0.5)
    before = f.solve(method="qp")
    f.path([0.01, 100.0], method="qp")
    f.path([0.01, 100.0])
    assert f.C == 0.5 and f.full_model.parameters["C"].value == 0.5
    assert f.solve(method="qp").objective == pytest.approx(before.objective, rel=EXACT)


def test_kernel_dual_path():
    X, y = random_problem(3, n=120, d=2)
    f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf")
    Cs = [0.1, 1.0, 10.0]
    for C, sol in zip(Cs, f.path(Cs), strict=True):
        # a kernel puts many samples on the margin: the working set is its default path method
        assert sol.certificate.passed and sol.method == "working_set"
        assert sol.objective == pytest.approx(independent(f, C).objective, rel=EXACT)


@pytest.mark.parametrize("variant", ["crammer_singer", "weston_watkins"])
def test_multiclass_path(variant):
    rng = np.random.default_rng(6)
    y = rng.integers(0, 3, 90)
    X = rng.normal(size=(90, 2)) + np.eye(3)[y][:, :2]
    f = qpsvm.MulticlassSVM(X, y, variant=variant)
    Cs = [0.1, 1.0, 10.0]
    for method in ("working_set", "qp"):
        for C, sol in zip(Cs, f.path(Cs, method=method), strict=True):
            assert sol.certificate.passed and sol.w.shape == (3, 2)
            assert sol.objective == pytest.approx(independent(f, C).objective, rel=EXACT)


def test_ranking_path():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, 3))
    f = qpsvm.RankingSVM(X, y=np.round(X[:, 0] + rng.normal(size=40)), C=1.0)
    Cs = [0.1, 1.0, 10.0]
    for C, sol in zip(Cs, f.path(Cs), strict=True):
        assert sol.certificate.passed
        assert sol.objective == pytest.approx(independent(f, C).objective, rel=EXACT)


def test_sample_weights_and_no_intercept():
    X, y = random_problem(4, n=100, d=3)
    s = np.random.default_rng(0).uniform(0.1, 2.0, 100)
    f = qpsvm.SoftMarginPrimal(X, y, fit_intercept=False, sample_weight=s)
    Cs = [0.05, 0.5, 5.0]
    for C, sol in zip(Cs, f.path(Cs), strict=True):
        assert sol.b == 0.0 and sol.certificate.passed
        assert sol.objective == pytest.approx(independent(f, C).objective, rel=EXACT)


@pytest.mark.parametrize(
    ("Cs", "match"),
    [([], "empty"), ([1.0, -1.0], "> 0"), ([1.0, np.inf], "finite"), ([[1.0, "a"]], "positive")],
)
def test_bad_Cs(Cs, match):
    X, y = random_problem(5, n=30, d=2)
    with pytest.raises(qpsvm.InvalidInputError, match=match):
        qpsvm.SoftMarginPrimal(X, y).path(Cs)


def test_bad_method_and_hard_margin(blobs):
    X, y = blobs
    with pytest.raises(qpsvm.InvalidInputError, match=r"solved by method .*'homotopy'"):
        qpsvm.SoftMarginPrimal(X, y).path([1.0], method="smo")
    with pytest.raises(qpsvm.InvalidInputError, match="hard margin has no C"):
        qpsvm.HardMargin(X, y).path([1.0])

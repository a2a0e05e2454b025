"""Conversions of other programs' regularisation constants: each objective is a positive multiple
of qpsvm's at the converted C, so both have the same minimiser."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_problem

import qpsvm
from qpsvm.conventions import (
    C_from_dlib_rank,
    C_from_lambda,
    C_from_pair_svm,
    C_from_pegasos,
    C_from_structural,
    C_from_svmrank,
)


def hinge_sum(f, w):
    """``sum_i max(0, 1 - y_i w.x_i)`` of a binary or ranking formulation without intercept."""
    return float(np.sum(np.maximum(0.0, 1.0 - f.y * (f.X @ w))))


@pytest.fixture(scope="module")
def binary():
    X, y = random_problem(0, n=30, d=3)
    return X, y


@pytest.fixture(scope="module")
def ranking():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = rng.integers(0, 3, 20)
    groups = np.repeat([1, 2, 3, 4], 5)
    return X, y, groups


def random_ws(d, count=5):
    return np.random.default_rng(1).normal(size=(count, d))


def test_lambda_form(binary):
    # lambda/2 ||w||^2 + sum hinge = lambda * P_C(w) with C = 1/lambda
    X, y = binary
    lam = 0.3
    f = qpsvm.SoftMarginPrimal(X, y, C=C_from_lambda(lam), fit_intercept=False)
    for w in random_ws(3):
        lecture = lam / 2 * w @ w + hinge_sum(f, w)
        assert lecture == pytest.approx(lam * f.objective(w), rel=1e-12)


def test_pegasos_and_sgd_alpha(binary):
    # lambda/2 ||w||^2 + (1/n) sum hinge = lambda * P_C(w) with C = 1/(lambda n)
    X, y = binary
    lam, n = 0.05, len(y)
    f = qpsvm.SoftMarginPrimal(X, y, C=C_from_pegasos(lam, n), fit_intercept=False)
    for w in random_ws(3):
        online = lam / 2 * w @ w + hinge_sum(f, w) / n
        assert online == pytest.approx(lam * f.objective(w), rel=1e-12)


def test_structural_form(binary):
    # 1/2 ||w||^2 + (C'/n) sum xi is P_C(w) itself with C = C'/n
    X, y = binary
    Cs, n = 4.0, len(y)
    f = qpsvm.SoftMarginPrimal(X, y, C=C_from_structural(Cs, n), fit_intercept=False)
    for w in random_ws(3):
        assert 0.5 * w @ w + Cs / n * hinge_sum(f, w) == pytest.approx(f.objective(w), rel=1e-12)


def test_svmrank_c(ranking):
    # SVM-rank: 1/2 ||w||^2 + (c / n_queries) sum over pairs of the hinge
    X, y, groups = ranking
    c, n_queries = 3.0, 4
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=C_from_svmrank(c, n_queries))
    for w in random_ws(3):
        svmrank = 0.5 * w @ w + c / n_queries * hinge_sum(f, w)
        assert svmrank == pytest.approx(f.objective(w), rel=1e-12)


def test_dlib_rank_c(ranking):
    # dlib: 1/2 ||w||^2 + c * (mean pairwise hinge over all pairs)
    X, y, groups = ranking
    c = 2.0
    f0 = qpsvm.RankingSVM(X, y=y, groups=groups)
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=C_from_dlib_rank(c, f0.n_pairs))
    for w in random_ws(3):
        dlib = 0.5 * w @ w + c * hinge_sum(f, w) / f.n_pairs
        assert dlib == pytest.approx(f.objective(w), rel=1e-12)


@pytest.mark.parametrize("mirrored", [True, False])
def test_pair_svm(ranking, mirrored):
    # a binary SVM without intercept on the differences (both signs when mirrored) has the
    # ranking objective at C_from_pair_svm(c): mirrored counts every hinge twice
    X, y, groups = ranking
    c = 0.7
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=C_from_pair_svm(c, mirrored))
    Z = f.X.materialize()
    if mirrored:
        Zb, yb = np.vstack([Z, -Z]), np.r_[np.ones(len(Z)), -np.ones(len(Z))]
    else:
        yb = np.where(np.arange(len(Z)) % 2 == 0, 1.0, -1.0)
        Zb = Z * yb[:, None]
    b = qpsvm.SoftMarginPrimal(Zb, yb, C=c, fit_intercept=False)
    for w in random_ws(3):
        assert b.objective(w) == pytest.approx(f.objective(w), rel=1e-12)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: C_from_lambda(0.0), qpsvm.InvalidInputError),
        (lambda: C_from_lambda(-1.0), qpsvm.InvalidInputError),
        (lambda: C_from_lambda("1"), qpsvm.InvalidTypeError),
        (lambda: C_from_pegasos(0.1, 0), qpsvm.InvalidInputError),
        (lambda: C_from_pegasos(0.1, 2.5), qpsvm.InvalidTypeError),
        (lambda: C_from_pegasos(0.1, True), qpsvm.InvalidTypeError),
        (lambda: C_from_structural(np.inf, 10), qpsvm.InvalidInputError),
        (lambda: C_from_svmrank(1.0, -3), qpsvm.InvalidInputError),
        (lambda: C_from_dlib_rank(-1.0, 5), qpsvm.InvalidInputError),
        (lambda: C_from_pair_svm(0.0), qpsvm.InvalidInputError),
    ],
)
def test_bad_values_are_typed_errors(call, error):
    with pytest.raises(error):
        call()


def test_values():
    # the formulas themselves, on exactly representable numbers
    assert C_from_lambda(0.25) == 4.0
    assert C_from_pegasos(0.5, 4) == 0.5
    assert C_from_structural(8.0, 4) == 2.0
    assert C_from_svmrank(6.0, 3) == 2.0
    assert C_from_dlib_rank(6.0, 12) == 0.5
    assert C_from_pair_svm(1.5) == 3.0 and C_from_pair_svm(1.5, mirrored=False) == 1.5

"""The rounding floor: the part of a certificate's gap that is its rigorous allowance for
float64 rounding, and the typed stop when it exceeds the tolerance asked."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.preprocessing import StandardScaler

import qpsvm
from qpsvm.exceptions import RoundingFloorError, UncertifiedSolutionError
from qpsvm.verify.certificate import (
    DEFAULT_TOL,
    Certificate,
    evaluation_allowance,
    uncertified_error,
)
from qpsvm.verify.ranking import certify_grouped

#: Six points on a line, two of them on the margin: ``w* = 1``, ``b* = 0``, ``alpha* = 1/2``
#: on the two, ``P* = 1/2``, every one a float64 number, for any ``C >= 1/2``.
LINE = np.array([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0])[:, None]
SIDES = np.array([-1, -1, -1, 1, 1, 1])
OPTIMUM = {"w": [1.0], "b": 0.0, "alpha": [0.0, 0.0, 0.5, 0.5, 0.0, 0.0]}


def test_the_exact_optimum_is_certified_only_down_to_the_floor():
    """The optimum is a float64 point with suboptimality exactly 0, yet its gap is not 0: it is
    the certificate's allowance for rounding (rounded-out sums, the enclosed margins), which
    ``rounding_floor`` reports; below it, ``tol`` cannot be met by any point."""
    f = qpsvm.SoftMarginPrimal(LINE, SIDES, C=1e6)
    cert = f.certify(**OPTIMUM, tol=1e-16)
    assert cert.lower <= 0.5 <= cert.upper
    assert 0.0 < cert.rounding_floor <= cert.gap < 1e-14
    assert cert.relative_floor > 1e-16
    assert not cert.passed


def test_a_tol_below_the_rounding_floor_raises_the_typed_error():
    """``solve(tol=1e-15)`` on that problem: the solver's point is the optimum, its gap is the
    floor (~2e-15), so the error is the typed one, with the floor and what helps; never a
    "passed", and no further refinement or backend is tried."""
    f = qpsvm.SoftMarginPrimal(LINE, SIDES, C=1e6)
    with pytest.raises(RoundingFloorError) as info:
        f.solve(tol=1e-15)
    error = info.value
    assert isinstance(error, UncertifiedSolutionError)  # within the hierarchy
    assert error.relative_floor > 1e-15
    assert error.relative_gap <= error.relative_floor + 1e-15  # the floor accounts for the gap
    message = str(error)
    for words in (f"{error.relative_floor:.2e}", "looser tol", "centring", "method='exact'"):
        assert words in message
    # what the message offers works: the point is certified at the gap it reached
    assert f.solve(tol=error.relative_gap).certificate.passed


def _certificate(gap: float, floor: float, tol: float = 1e-9) -> Certificate:
    return Certificate(1.0 + gap, 1.0, 0.0, 0.0, 0.0, 0.0, tol=tol, rounding_floor=floor)


def test_the_stop_needs_a_floor_above_tol_that_accounts_for_the_gap():
    """The typed stop only when rounding explains the failure: floor above ``tol`` and the
    rest of the gap within ``tol``; a solver's poor point is an ordinary failure."""
    stop = uncertified_error(_certificate(3e-9, 2.5e-9), "m", exact=True)
    assert isinstance(stop, RoundingFloorError) and "method='exact'" in str(stop)
    poor = uncertified_error(_certificate(1e-6, 2e-9), "m", exact=True)
    assert type(poor) is UncertifiedSolutionError
    below = uncertified_error(_certificate(3e-9, 5e-10), "m", exact=True)
    assert type(below) is UncertifiedSolutionError
    # a problem without the rational oracle (structural, Dask) is not told to use it
    other = uncertified_error(_certificate(3e-9, 2.5e-9), "m", exact=False)
    assert isinstance(other, RoundingFloorError) and "exact" not in str(other)


def test_centring_keeps_the_floor_of_shifted_features_low():
    """The dual side bounds the intercept over centred features, so shifting the features by
    1e5 with ``C = 1e6`` leaves the floor far below ``tol``; before, the balance term
    ``B |sum alpha_i y_i|`` with ``B ~ 6e8`` made it ``4e-9`` and the solve failed."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=40) > 0, 1, -1)
    f = qpsvm.SoftMarginPrimal(X + 1e5, y, C=1e6)
    exact = f.solve(method="exact")
    cert = f.certify(w=exact.w, b=exact.b)
    assert cert.passed
    assert cert.relative_floor < 1e-2 * DEFAULT_TOL


def _ordinary():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    Xi, yi = load_iris(return_X_y=True)
    Xi = StandardScaler().fit_transform(Xi)
    separable = X[:, :2] + 3.0 * np.where(y == 1, 1.0, -1.0)[:, None]
    return {
        "soft margin": qpsvm.SoftMarginPrimal(X, y, C=1.0),
        "no intercept": qpsvm.SoftMarginPrimal(X, y, C=10.0, fit_intercept=False),
        "hard margin": qpsvm.HardMargin(separable, y),
        "rbf": qpsvm.SoftMarginDual(X[:200], y[:200], C=10.0, kernel="rbf"),
        "poly": qpsvm.SoftMarginDual(X[:200], y[:200], C=10.0, kernel="poly", degree=3),
        "crammer_singer": qpsvm.MulticlassSVM(Xi, yi, C=1.0),
        "ranking": qpsvm.RankingSVM(Xi[:60], y=yi[:60], C=1.0),
        "squared hinge": qpsvm.SoftMarginPrimal(X, y, C=1.0, loss="squared_hinge"),
    }


@pytest.mark.parametrize("name", list(_ordinary()))
def test_ordinary_problems_are_unaffected(name):
    """On standardised data the floor is a hundredth of the default tol at most (measured:
    1e-15 for linear problems, 4e-12 for rbf and poly with their kernel values' proven
    errors): solves pass as before."""
    cert = _ordinary()[name].solve().certificate
    assert cert.passed
    assert 0.0 <= cert.relative_floor <= 1e-2 * DEFAULT_TOL
    assert cert.rounding_floor <= cert.gap


def test_the_allowance_is_the_difference_to_float_evaluations():
    """``(U - P) + (D - L)``, each part at least 0, an unproven end left out, never more than
    the gap."""
    assert evaluation_allowance(10.5, 9.0, 10.0, 9.25) == 0.75
    assert evaluation_allowance(10.0, 9.0, 10.5, 8.0) == 0.0
    assert evaluation_allowance(math.inf, 9.0, 10.0, 9.5) == 0.5
    assert evaluation_allowance(10.0, 9.9, 9.5, 10.5) == pytest.approx(0.1)


def test_the_grouped_ranking_certificate_has_its_floor():
    """The 1-slack ranking certificate (pairs never formed,
    :func:`~qpsvm.verify.ranking.certify_grouped`) measures its floor as the others do: at the
    optimum of a standardised problem the gap (about 5e-15 relative) is almost all floor, so a
    tol below it is the typed stop, not a solver's failure."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.integers(0, 3, 40)
    f = qpsvm.RankingSVM(X, y=y, groups=np.repeat(np.arange(5), 8), C=1.0)
    w = f.solve(method="one_slack").w
    cert = certify_grouped(f, w, tol=2e-15)
    assert cert.rigorous and 0.0 < cert.rounding_floor <= cert.gap
    assert cert.relative_floor > cert.tol and not cert.passed
    assert isinstance(uncertified_error(cert, "m", exact=True), RoundingFloorError)

"""The regime grid's equal-accuracy ladder (benchmarks/regimes/_grid.py): the anchor timed at
the loosest of its tolerances whose answer qpsvm certifies."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from regimes._grid import (
    LADDER,
    Point,
    Tightened,
    equal_accuracy,
    liblinear_at,
)

import qpsvm


def _point(tightened: Tightened | None) -> Point:
    return Point("small", "stand-in", "anchor", lambda: None, lambda: None, 1, None, tightened)


def test_the_ladder_stops_at_the_first_certified_tolerance():
    fits = []

    def fit(factor: float) -> float:
        fits.append(factor)
        return factor

    result = equal_accuracy(_point(Tightened(fit, lambda factor: factor <= 1e-3)))
    assert result is not None and result.reached
    assert result.scale == 1e-3
    # one untimed call per rung up to the certified one, then the timed one
    assert fits == [*LADDER[:4], 1e-3]


def test_an_anchor_never_certified_is_reported_as_not_reached():
    result = equal_accuracy(_point(Tightened(lambda factor: factor, lambda model: False)))
    assert result is not None and not result.reached and math.isnan(result.scale)


def test_a_limit_ends_the_ladder_at_the_rung_that_ran_over_it():
    fits = []
    stopped = _point(Tightened(lambda factor: fits.append(factor), lambda model: False))
    result = equal_accuracy(stopped, limit=0.0)
    assert fits == [LADDER[0]] and not result.reached


def test_a_point_whose_anchor_solves_another_problem_has_no_ladder():
    assert equal_accuracy(_point(None)) is None


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_liblinear_is_certified_at_the_rung_found_and_not_at_the_one_before():
    # the hinge without intercept: liblinear's default tolerance leaves a relative gap far
    # above 1e-9 on this problem, a tighter one reaches it
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 8))
    y = np.where(X @ rng.normal(size=8) + 0.8 * rng.normal(size=300) > 0, 1, -1)
    f = qpsvm.SoftMarginPrimal(X, y, C=10.0, loss="hinge", intercept="none")
    fit = liblinear_at(X, y, C=10.0, loss="hinge", fit_intercept=False)
    result = equal_accuracy(_point(Tightened(fit, lambda m: f.certify(m).passed)))
    assert result.reached and result.scale < 1.0
    assert f.certify(fit(result.scale)).passed
    assert not f.certify(fit(result.scale * 10)).passed

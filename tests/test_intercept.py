"""The hinge's best intercept for fixed scores
(:func:`~qpsvm.formulations.intercept.hinge_intercept`), by selection and by sorting."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from qpsvm.formulations import intercept
from qpsvm.formulations.intercept import hinge_intercept


def _leftmost_minimiser(y: np.ndarray, margin: np.ndarray, scores: np.ndarray) -> float:
    """The smallest breakpoint minimising ``sum_i max(0, m_i - y_i (score_i + b))``, every
    sum exact (rationals)."""

    def hinge_sum(b: float) -> Fraction:
        return sum(
            (max(Fraction(0), Fraction(m) - Fraction(int(t)) * (Fraction(s) + Fraction(b))))
            for t, m, s in zip(y, margin, scores, strict=True)
        )

    breakpoints = sorted(set((y * margin - scores).tolist()))
    values = [hinge_sum(b) for b in breakpoints]
    return breakpoints[values.index(min(values))]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.integers(-4, 4), st.integers(0, 2)), min_size=1, max_size=25
    )
)
@example([(True, 0, 1)])
@example([(False, 0, 1)])
@example([(True, 1, 1), (True, 1, 1), (False, 1, 1), (False, 1, 1)])
def test_unit_weights_select_the_leftmost_minimiser(rows):
    """With unit weights the minimiser is the ``n_+``-th smallest breakpoint, taken by
    selection: it is the smallest breakpoint minimising the exact hinge sum (small integer
    scores and margins, ties among the breakpoints), and the sort path over the weights 2 (the
    same objective scaled, its slopes exact integers) returns the same float."""
    y = np.array([1.0 if r[0] else -1.0 for r in rows])
    scores = np.array([float(r[1]) for r in rows])
    margin = np.array([float(r[2]) for r in rows])
    ones = np.ones(y.size)
    b = hinge_intercept(y, margin, ones, scores, 1.0)
    assert b == _leftmost_minimiser(y, margin, scores)
    assert b == hinge_intercept(y, margin, 2.0 * ones, scores, 1.0)


def test_selection_matches_the_sort_on_random_scores(monkeypatch):
    """Random float scores (no exact sums): selection and the weights-2 sort path return the
    same breakpoint, bit for bit; unit weights sort nothing."""
    rng = np.random.default_rng(3)
    sort = np.argsort
    for n in (1, 2, 7, 1000):
        y = np.where(rng.random(n) < 0.3, 1.0, -1.0)
        scores = rng.standard_normal(n)
        ones = np.ones(n)
        sorted_b = hinge_intercept(y, ones, 2.0 * ones, scores, 1.0)
        monkeypatch.setattr(intercept.np, "argsort", None)
        assert hinge_intercept(y, ones, ones, scores, 1.0) == sorted_b
        monkeypatch.setattr(intercept.np, "argsort", sort)

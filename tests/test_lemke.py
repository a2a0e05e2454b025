"""Lemke's method in exact integer arithmetic (:mod:`qpsvm.exact.lemke`).

Every answer is checked by the definition of the LCP, in rationals: ``z >= 0``,
``w = q + M z >= 0``, ``w . z = 0``. Every claim of infeasibility is checked by an exact search
over all ``2^n`` complementary bases.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qpsvm.exact.lemke as lemke
from qpsvm.exact.lemke import LCPInfeasibleError, solve_lcp


@pytest.fixture(params=["flint", "numpy"])
def backend(request, monkeypatch):
    """Both tableaux: python-flint's (when installed) and numpy's of Python integers."""
    if request.param == "flint":
        if lemke.flint is None:
            pytest.skip("python-flint is not installed")
    else:
        monkeypatch.setattr(lemke, "flint", None)
    return request.param


def complementary(M, q, z) -> bool:
    n = len(q)
    w = [Fraction(q[i]) + sum(Fraction(M[i][j]) * z[j] for j in range(n)) for i in range(n)]
    return (
        all(v >= 0 for v in z)
        and all(v >= 0 for v in w)
        and all(a * b == 0 for a, b in zip(w, z, strict=True))
    )


def psd_lcp(seed: int, n: int, rank: int, denominator: int):
    """``M = A A^T + S`` (``S`` skew: ``M + M^T`` is positive semidefinite), with repeated rows
    of ``A`` and small integer ``q``: many ties, the degenerate case."""
    rng = np.random.default_rng(seed)
    A = rng.integers(-2, 3, size=(n, rank))
    if n > 2:
        A[1] = A[0]
    S = rng.integers(-2, 3, size=(n, n))
    S = S - S.T
    M = [[Fraction(int(v), denominator) for v in row] for row in A @ A.T + S]
    q = [Fraction(int(v), denominator) for v in rng.integers(-3, 3, size=n)]
    return M, q


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 9),
    rank=st.integers(1, 4),
    denominator=st.sampled_from([1, 3, 1024]),
)
def test_solutions_are_complementary(seed, n, rank, denominator):
    M, q = psd_lcp(seed, n, rank, denominator)
    try:
        result = solve_lcp(M, q)
    except LCPInfeasibleError:
        assert not any_complementary_solution(M, q)
        return
    assert complementary(M, q, result.z)


def any_complementary_solution(M, q) -> bool:
    """Brute force over the ``2^n`` complementary bases, exactly."""
    n = len(q)
    for basis in itertools.product([False, True], repeat=n):
        cols = [j for j in range(n) if basis[j]]
        # z_cols solve (q + M z)_cols = 0 (a square system); the others are 0
        sub = [[M[i][j] for j in cols] for i in cols]
        rhs = [-q[i] for i in cols]
        z = solve_square(sub, rhs)
        if z is None:
            continue
        full = [Fraction(0)] * n
        for j, v in zip(cols, z, strict=True):
            full[j] = v
        if complementary(M, q, full):
            return True
    return False


def solve_square(A, b):
    """Gaussian elimination in fractions; ``None`` when ``A`` is singular."""
    n = len(b)
    rows = [[*A[i], b[i]] for i in range(n)]
    for c in range(n):
        pick = next((r for r in range(c, n) if rows[r][c] != 0), None)
        if pick is None:
            return None
        rows[c], rows[pick] = rows[pick], rows[c]
        for r in range(n):
            if r != c and rows[r][c] != 0:
                f = rows[r][c] / rows[c][c]
                rows[r] = [x - f * y for x, y in zip(rows[r], rows[c], strict=True)]
    return [rows[i][n] / rows[i][i] for i in range(n)]


def test_both_tableaux_solve_degenerate_problems(backend):
    for seed in range(30):
        M, q = psd_lcp(seed, 7, 3, 4)
        try:
            result = solve_lcp(M, q)
        except LCPInfeasibleError:
            assert not any_complementary_solution(M, q)
            continue
        assert complementary(M, q, result.z)


def test_nonnegative_q_needs_no_pivot():
    assert solve_lcp([[1, 0], [0, 1]], [0, 2]).pivots == 0


def test_infeasible_problem_ends_on_a_ray(backend):
    # w = -1 + 0 z cannot be nonnegative
    with pytest.raises(LCPInfeasibleError, match="secondary ray"):
        solve_lcp([[0]], [-1])


def test_known_solution(backend):
    # min 1/2 z^2 - z over z >= 0: z = 1, w = 0; two pivots (the artificial in, then z)
    result = solve_lcp([[1]], [-1])
    assert result.z == [1] and result.pivots == 2


def test_a_guessed_basis_needs_one_solve(backend):
    # the support of a solution, given as the start, is accepted after one linear solve
    # (pivots 0); a wrong guess (every variable) falls back to Lemke's pivots
    solved = 0
    for seed in range(40):
        M, q = psd_lcp(seed, 6, 6, 4)
        try:
            result = solve_lcp(M, q)
        except LCPInfeasibleError:
            continue
        support = [j for j, v in enumerate(result.z) if v > 0]
        guessed = solve_lcp(M, q, [list(range(6)), support])
        assert complementary(M, q, guessed.z)
        if guessed.pivots == 0:
            solved += 1
    assert solved >= 20

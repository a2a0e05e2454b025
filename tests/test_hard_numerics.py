"""Numerically hard binary problems: solved exactly (certified at 1e-9) or refused clearly."""

from __future__ import annotations

import math
from fractions import Fraction

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import hard_variants, random_problem
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sklearn.preprocessing import StandardScaler
from test_poly_rigorous import exact_objectives

import qpsvm
from qpsvm._numerics import _SUCC_SIZE, down, fsum, next_down, next_up, scale2, tdot, tdot2, up
from qpsvm.support_sets import support_solution


def _cases():
    X, y = random_problem(0, n=200, d=5)
    rng = np.random.default_rng(1)
    wide_X, wide_y = rng.normal(size=(20, 500)), np.where(rng.random(20) < 0.5, -1, 1)
    imb_y = np.where(np.arange(200) < 198, -1, 1)
    imb_X = X + (imb_y > 0)[:, None]
    on_margin = np.array([[1.0], [1.0], [-1.0], [-1.0], [1.0], [-1.0]])
    return {
        **hard_variants(X, y),
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
def test_dual_exact_on_hard_data(name):
    # w = sum a_i y_i x_i cancels terms of size |x| ~ 1e4 down to |w| ~ 1e-4 (8 digits), and
    # features shifted by 1e3 at C = 1e4 likewise: the expansion and the KKT refinement run in
    # twice the working precision, so the dual reaches the primal's optimum (on features scaled
    # by 1e4 the refined point's margins keep the round-off of alpha itself, eps |x_i . x_j|
    # ~ 1e-8: the refinement's polishing threshold adapts to it)
    X, y, kw = CASES[name]
    sol = qpsvm.SoftMarginDual(X, y, **kw).solve()
    assert sol.certificate.passed and sol.certificate.relative_gap <= 1e-9
    # the same optimum as the primal form, itself certified at 1e-9
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


# ------------------------------------------------------------- poly kernel on raw features
def _raw_poly_problem(n):
    # the data of scikit-learn's check_fit_idempotent: features ~ N(100, 1), random labels
    rng = np.random.RandomState(0)
    X = rng.normal(loc=100, size=(100, 2))
    y = rng.randint(0, 2, size=100)
    return X[:n], y[:n]


def _poly_features(X, gamma=0.1, coef0=1.0, degree=3):
    """Explicit feature map of ``(gamma x.x' + coef0)^degree`` for two features: the monomials
    ``x1^a x2^b`` times ``sqrt(multinomial(degree; a, b, c) gamma^(a+b) coef0^c)``, c the rest,
    so that ``phi(x) . phi(x')`` is the kernel (the multinomial theorem)."""
    columns = []
    for a in range(degree + 1):
        for b in range(degree + 1 - a):
            c = degree - a - b
            multinomial = math.factorial(degree) // (
                math.factorial(a) * math.factorial(b) * math.factorial(c)
            )
            scale = math.sqrt(multinomial * gamma ** (a + b) * coef0**c)
            columns.append(scale * X[:, 0] ** a * X[:, 1] ** b)
    return np.column_stack(columns)


def test_poly_features_are_the_kernel():
    X, y = _raw_poly_problem(20)
    Phi = _poly_features(X)
    K = qpsvm.SoftMarginDual(X, y, kernel="poly", gamma=0.1, degree=3).gram()
    np.testing.assert_allclose(Phi @ Phi.T, K, rtol=1e-14)


@pytest.mark.parametrize("n", [80, 100])
def test_poly_kernel_on_raw_features_is_refused(n):
    # K ~ 8e9, so each Gram entry is rounded by ~1e-6 and the scores (~1) cancel terms of size
    # 1e10: the float64 Gram matrix moves the optimum in the 6th digit (2.6e-6 relative at
    # n = 100 against the exact optimum on explicit features), so no certificate at 1e-9
    # exists. The certificate's rounding estimate refuses it (before, n = 100 was "certified"
    # at gap 0 with that error).
    X, y = _raw_poly_problem(n)
    with pytest.raises(qpsvm.UncertifiedSolutionError, match="standardise"):
        qpsvm.SoftMarginDual(X, y, kernel="poly", gamma=0.1, degree=3).solve()


@pytest.mark.parametrize("n", [80, 100])
def test_poly_kernel_certificate_brackets_the_exact_optimum(n):
    # the certificate's bounds hold for the exact kernel, in rational arithmetic: the exact
    # objective of the returned (alpha, b) is at most its upper end, and the exact dual value
    # of its dual point at least its lower end (which subtracts B |sum alpha y| besides).
    # A float64 feature map is no oracle: its values ~1e10 carry ~1e-6 each, and its
    # objective of the returned alpha came out 1.6e-6 above the proven upper end at n = 80
    X, y = _raw_poly_problem(n)
    f = qpsvm.SoftMarginDual(X, y, kernel="poly", gamma=0.1, degree=3)
    sol = f.solve(tol=1e-2)
    cert = sol.certificate
    primal, dual, _ = exact_objectives(f, sol.alpha, sol.b, cert.alpha)
    assert Fraction(cert.lower) <= dual <= primal <= Fraction(cert.upper)


def test_poly_kernel_on_standardised_features_is_exact():
    # the remedy the refusal names: standardised, the same kernel is certified at 1e-9 and
    # agrees with the linear SVM on its explicit features
    X, y = _raw_poly_problem(100)
    X = StandardScaler().fit_transform(X)
    sol = qpsvm.SoftMarginDual(X, y, kernel="poly", gamma=0.1, degree=3).solve()
    assert sol.certificate.passed
    exact = qpsvm.SoftMarginPrimal(_poly_features(X), y).solve()
    assert sol.objective == pytest.approx(exact.objective, rel=2e-9)


# ------------------------------------------------------------------- compensated products
def _cancelling(rows=300, cols=3, seed=0):
    """Columns of terms ~1e8 whose sums cancel (the last row is chosen to zero the plain sum)."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(rows, cols)) * 1e8
    u = rng.normal(size=rows)
    A[-1] = -(A[:-1].T @ u[:-1]) / u[-1]
    return A, u


def test_tdot_is_twice_the_working_precision():
    # Ogita-Rump-Oishi Dot2 bound: |error| <= eps |r| + (n eps)^2 sum_i |a_i u_i|, against the
    # exact sum of the exact products (fractions)
    A, u = _cancelling()
    exact = np.array(
        [float(sum(Fraction(a) * Fraction(b) for a, b in zip(col, u, strict=True))) for col in A.T]
    )
    eps = np.finfo(float).eps / 2
    bound = eps * np.abs(exact) + (len(u) * eps) ** 2 * (np.abs(A).T @ np.abs(u))
    assert np.all(np.abs(tdot(A, u) - exact) <= bound)
    # the plain product keeps no correct digit (its error is ~eps * 1e10 ~ the result)
    assert np.all(np.abs(A.T @ u - exact) > 0.1 * np.abs(exact))


def test_tdot_sparse_and_continued_sums():
    A, u = _cancelling(seed=1)
    A[np.abs(A) < 5e7] = 0.0
    np.testing.assert_array_equal(tdot(sp.csr_matrix(A), u), tdot(A, u))
    # a sum continued from (hi, lo) equals the sum over all rows at once
    hi, lo = tdot2(A[150:], u[150:], tdot2(A[:150], u[:150]))
    np.testing.assert_array_equal(hi + lo, tdot(A, u))


def test_scaled_sum_keeps_twice_the_working_precision():
    # C (hi + lo) with the rounding error of C hi kept: the scaled pair is C times the pair up to
    # ~eps^2 relative (a plain C * hi loses the low half, an error of ~eps)
    A, u = _cancelling(seed=2)
    C = 0.1234567
    pair = tdot2(A, u)
    hi, lo = scale2(C, *pair)
    plain = []
    for j in range(A.shape[1]):
        scaled = Fraction(C) * (Fraction(pair[0][j]) + Fraction(pair[1][j]))
        assert abs(Fraction(hi[j]) + Fraction(lo[j]) - scaled) <= 1e-30 * abs(scaled)
        plain.append(abs(Fraction(C * pair[0][j]) - scaled) / abs(scaled))
    assert max(plain) > 1e-20


def test_support_solution_from_an_updated_bound_sum():
    # the KKT point from a bound-set sum continued through a few rows equals the one computed
    # from all bound rows at once
    X, y = random_problem(3, n=200, d=4)
    f = qpsvm.SoftMarginPrimal(X * 1e3 + 1e3, y, C=1e-4)
    sol = f.solve(method="qp")
    r = f.y * (f.scores(w=sol.w) + sol.b) - f.margin
    M, E = np.flatnonzero(np.abs(r) <= 1e-9), np.flatnonzero(r < -1e-9)
    sy = f.sample_weight * f.y
    first, rest = E[: E.size // 2], E[E.size // 2 :]
    total = tdot2(X[rest] * 1e3 + 1e3, sy[rest], tdot2(f.X[first], sy[first]))
    a1, b1, w1 = support_solution(f, M, E)
    a2, b2, w2 = support_solution(f, M, E, bound_sum=total)
    np.testing.assert_allclose(a2, a1, rtol=1e-12, atol=1e-15)
    assert b2 == pytest.approx(b1, rel=1e-12)
    np.testing.assert_allclose(w2, w1, rtol=1e-12, atol=1e-15)
    assert f.certify(w=w2, b=b2).passed


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(0, 3000), spread=st.integers(0, 12))
def test_fsum_matches_correctly_rounded_sum(seed, n, spread):
    # Sum2 is correctly rounded unless the terms cancel by more than ~16 digits: terms spread
    # over up to 24 orders of magnitude of both signs stay far from that
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n) * 10.0 ** rng.uniform(-spread, spread, n)
    exact = math.fsum(a.tolist())
    assert fsum(a) == pytest.approx(exact, rel=2**-52, abs=1e-300)


FLOATS = st.floats(allow_nan=False, allow_infinity=True, allow_subnormal=True)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(FLOATS, min_size=1, max_size=50))
@example(values=[0.0, -0.0, 5e-324, -5e-324, 2.0**-1022, -(2.0**-1022), 1.0, -1.0])
@example(values=[math.inf, -math.inf, 1.7976931348623157e308, -1.7976931348623157e308])
@example(values=[2.0**-1021 + 2.0**-1073, 1.0 - 2.0**-53, 2.0**-969, -(2.0**-969)])
def test_array_up_and_down_move_one_or_two_floats(values):
    # up(x) covers one rounding: at least the next float above x and at most two above it;
    # down mirrors it; the values repeated into an array long enough for the vectorised
    # successor, checked against np.nextafter entry by entry
    x = np.resize(np.array(values), _SUCC_SIZE + len(values))
    hi, lo = up(x), down(x)
    with np.errstate(over="ignore"):  # the float after max is inf
        nxt, prv = np.nextafter(x, np.inf), np.nextafter(x, -np.inf)
        after, before = np.nextafter(nxt, np.inf), np.nextafter(prv, -np.inf)
    assert np.all(hi >= nxt) and np.all(hi <= after)
    assert np.all(lo <= prv) and np.all(lo >= before)


@settings(max_examples=200, deadline=None)
@given(x=st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True))
@example(x=-0.0)
@example(x=5e-324)
@example(x=-5e-324)
@example(x=1.7976931348623157e308)
@example(x=-math.inf)
def test_scalar_up_and_down_are_the_neighbouring_floats(x):
    # Python's and numpy's float scalars take math.nextafter (0.1 us a call against numpy's
    # 1.4 us; a small kernel certificate takes about 130): the same floats, and the same type
    with np.errstate(over="ignore"):  # the float after max is inf
        for value in (x, np.float64(x)):
            hi, lo = up(value), down(value)
            nxt, prv = np.nextafter(value, np.inf), np.nextafter(value, -np.inf)
            assert type(hi) is type(value) and type(lo) is type(value)
            assert np.array_equal([hi, lo], [nxt, prv], equal_nan=True)
            assert np.signbit(hi) == np.signbit(nxt) and np.signbit(lo) == np.signbit(prv)


@numba.njit
def _neighbours(values):
    out = np.empty((2, values.shape[0]))
    for i in range(values.shape[0]):
        out[0, i] = next_up(values[i])
        out[1, i] = next_down(values[i])
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True), max_size=40))
@example([0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, -2.2250738585072014e-308])
@example([1.7976931348623157e308, -1.7976931348623157e308, math.inf, -math.inf, math.nan])
@example([1.0, -1.0, 0.5, -0.5, 2.0, -2.0])  # at a power of two the step below is half
def test_the_compiled_outward_steps_are_nextafter_to_the_bit(values):
    # the compiled one-ulp steps work on the bits: the same floats as np.nextafter
    # towards +inf and -inf, zeros, subnormals, the largest finite values, infinities and NaN
    a = np.array(values, dtype=np.float64)
    out = _neighbours(a)
    with np.errstate(over="ignore"):
        expected = np.stack([np.nextafter(a, np.inf), np.nextafter(a, -np.inf)])
    assert np.array_equal(out.view(np.int64), expected.view(np.int64))

"""The rbf certificate is a proof: every computed kernel value within its proven bound, and the
enclosure [lower, upper] around the exact objectives of the problem the float64 data state
(checked in 40-digit decimal arithmetic, the data taken as the rationals they are)."""

from __future__ import annotations

from decimal import Decimal, localcontext

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm._numerics import tdot2
from qpsvm.kernels import Kernel, KernelCache
from qpsvm.verify import rigorous
from qpsvm.verify.rigorous import rbf_pair_error, rbf_score_error, rbf_value_error
from tests.conftest import random_problem

U = 2.0**-53

DIGITS = 40


def exact_rbf(X: np.ndarray, gamma: float) -> list[list[Decimal]]:
    """``exp(-gamma ||x_i - x_j||^2)`` to 40 digits from the exact float data."""
    with localcontext() as ctx:
        ctx.prec = DIGITS
        rows = [[Decimal(float(v)) for v in x] for x in X]
        g = Decimal(float(gamma))
        return [
            [(-g * sum((a - b) ** 2 for a, b in zip(xi, xj, strict=True))).exp() for xj in rows]
            for xi in rows
        ]


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    scale=st.sampled_from([1e-3, 1.0, 30.0]),
    gamma=st.sampled_from([1e-3, 0.1, 2.0]),
)
@example(seed=1, scale=30.0, gamma=2.0)  # most values underflow to 0 or subnormals
def test_computed_rbf_values_are_within_the_proven_bound(seed, scale, gamma):
    X = scale * np.random.default_rng(seed).normal(size=(12, 5))
    rho = rbf_value_error(gamma, X)
    exact = exact_rbf(X, gamma)
    cache = KernelCache(Kernel("rbf", gamma=gamma), X, 1.0)
    for K in (cache.take(np.arange(12)), Kernel("rbf", gamma=gamma)(X, X)):
        with localcontext() as ctx:
            ctx.prec = DIGITS
            for i in range(12):
                for j in range(12):
                    err = abs(Decimal(float(K[i, j])) - exact[i][j])
                    bound = Decimal(rho) * exact[i][j] + Decimal(2.0**-1073)
                    assert err <= bound, (i, j, float(err), float(bound))


def rows_of_mixed_norms(seed: int, scale: float, n: int = 12, d: int = 5) -> np.ndarray:
    """Rows whose norms spread over two decades: the per-pair bound differs from the global."""
    rng = np.random.default_rng(seed)
    return scale * rng.normal(size=(n, d)) * np.logspace(-1, 1, n)[:, None]


def exact_arguments(X: np.ndarray, gamma: float) -> list[list[Decimal]]:
    """``t_ij = gamma ||x_i - x_j||^2``, exact (a finite sum of products of the float data)."""
    with localcontext() as ctx:
        ctx.prec = 1000  # every product and sum of these floats is exact at this precision
        rows = [[Decimal(float(v)) for v in x] for x in X]
        g = Decimal(float(gamma))
        return [
            [g * sum((a - b) ** 2 for a, b in zip(xi, xj, strict=True)) for xj in rows]
            for xi in rows
        ]


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    scale=st.sampled_from([1e-3, 1.0, 10.0]),
    gamma=st.sampled_from([1e-3, 0.1, 2.0]),
    shift=st.sampled_from([0.0, 1e3, 1e4]),
)
@example(seed=3, scale=10.0, gamma=2.0, shift=0.0)  # far pairs underflow, near ones do not
@example(seed=5, scale=1.0, gamma=0.1, shift=1e4)  # squared norms 1e8 times the distances
def test_per_pair_rbf_bound_dominates_the_exact_error(seed, scale, gamma, shift):
    # |K^_ij - K_ij| <= min(rho, base + sigma t_ij, base + slope (q_i + q_j)) K_ij + 2^-1073
    # against 40-digit values of the exact kernel (Decimal's exp is correctly rounded), the
    # bound relative to the pair's own argument t_ij = gamma ||x_i - x_j||^2, so that a common
    # offset of the features (where q_i is 1e8 times the distances) leaves it as small
    X = rows_of_mixed_norms(seed, scale) + shift
    bound = rbf_pair_error(gamma, X)
    assert bound.rho == rbf_value_error(gamma, X)
    assert np.all(bound.sqnorm >= np.einsum("ij,ij->i", X, X))
    exact = exact_rbf(X, gamma)
    args = exact_arguments(X, gamma)
    cache = KernelCache(Kernel("rbf", gamma=gamma), X, 1.0)
    for K in (cache.take(np.arange(12)), Kernel("rbf", gamma=gamma)(X, X)):
        with localcontext() as ctx:
            ctx.prec = DIGITS
            for i in range(12):
                for j in range(12):
                    by_norms = bound.base + bound.slope * (bound.sqnorm[i] + bound.sqnorm[j])
                    by_distance = Decimal(bound.base) + Decimal(bound.distance_slope) * args[i][j]
                    rel = min(Decimal(min(by_norms, bound.rho)), by_distance)
                    err = abs(Decimal(float(K[i, j])) - exact[i][j])
                    limit = rel * exact[i][j] + Decimal(2.0**-1073)
                    assert err <= limit, (i, j, float(err), float(limit))
    # the exponential's own error (4.4u, and u of its reduction) and the argument's
    # (gamma_{p+2} + u, 8u for p = 5)
    assert bound.base < 6 * U and bound.distance_slope < 8.1 * U


@settings(max_examples=40, deadline=None)
@given(k=st.floats(1e-300, 1.0))
@example(k=1.0)
@example(k=0.5)  # the mantissa's end: s = 0
@example(k=np.nextafter(1.0, 0.0))  # s near 1/3, -ln k near 0
def test_negative_log_bound_holds_in_exact_arithmetic(k):
    # k exp(L) >= 1, i.e. L >= -ln k, with Decimal's correctly rounded exp at 60 digits (its
    # error far below the bound's slack), and L within 0.002 of -ln k as its derivation states
    from qpsvm.verify.rigorous import _neg_log_upper

    L = float(_neg_log_upper(np.array([k]))[0])
    with localcontext() as ctx:
        ctx.prec = 60
        assert Decimal(k) * Decimal(L).exp() >= 1
        assert Decimal(L) + Decimal(k).ln() <= Decimal("0.002")


@settings(max_examples=40, deadline=None)
@given(lo=st.floats(0.0, 1.0), width=st.floats(0.0, 1.0))
@example(lo=0.0, width=0.0)
@example(lo=0.3, width=0.1)  # 1/e inside
@example(lo=0.0, width=0.3671875)  # just below 1/e: the end's bound would exceed 1/e itself
def test_entropy_bound_dominates_the_function_on_its_interval(lo, width):
    # max over [lo, hi] of -k ln k <= the bound, checked at the ends, at 1/e where inside and at
    # points between (the function is concave: its maximum is at one of those)
    from qpsvm.verify.rigorous import _entropy_upper

    hi = min(1.0, lo + width)
    top = Decimal(float(_entropy_upper(np.array([lo]), np.array([hi]))[0]))
    with localcontext() as ctx:
        ctx.prec = 60
        inv_e = Decimal(-1).exp()
        points = [Decimal(v) for v in np.linspace(lo, hi, 9)]
        points += [inv_e] if Decimal(lo) <= inv_e <= Decimal(hi) else []
        for k in points:
            assert k == 0 or -k * k.ln() <= top
    assert top <= Decimal(float(np.float64(0.36787944117144234)))


def test_rbf_constants_bound_the_numbers_they_stand_for():
    # ln 2 and 1/e from above, and e^{-747} below the underflow allowance 2^{-1073}
    from qpsvm.verify.rigorous import _ARG_MAX, _INV_E_UP, _LN2_UP

    with localcontext() as ctx:
        ctx.prec = 60
        assert Decimal(_LN2_UP) >= Decimal(2).ln()
        assert Decimal(_INV_E_UP) >= Decimal(-1).exp()
        assert (-Decimal(_ARG_MAX)).exp() < Decimal(2) ** -1073


def score_error_both_paths(bound, alpha, magnitude, weighted, scores):
    """``rbf_score_error`` by its compiled pass and by its numpy equivalent, asserted the same
    floats (the equivalent answers a cold process's first calls; which one a test meets
    otherwise depends on the compile cache)."""
    out = []
    for cold in (False, True):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(rigorous, "uncompiled", lambda kernel, rows, budget, cold=cold: cold)
            out.append(rbf_score_error(bound, alpha, magnitude, weighted, scores))
    np.testing.assert_array_equal(out[0], out[1])
    return out[0]


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.sampled_from([1, 37, 1023, 1024, 1500]),
    scale=st.sampled_from([1e-3, 1.0, 30.0]),
    gamma=st.sampled_from([1e-3, 0.1, 5.0]),
    C=st.sampled_from([1e-300, 1.0, 1e4]),
    special=st.booleans(),
)
@example(seed=0, n=1024, scale=30.0, gamma=5.0, C=1e-300, special=True)
@example(seed=1, n=37, scale=1.0, gamma=0.1, C=1.0, special=False)
def test_rbf_score_error_compiled_pass_is_its_numpy_equivalent(seed, n, scale, gamma, C, special):
    # the same floats by both paths, on either side of _SUCC_SIZE (where up and down move by
    # _succ instead of nextafter), with subnormal and zero magnitudes, and with infinite and nan
    # sums where ``special`` (a fused pass whose splitting overflowed)
    rng = np.random.default_rng(seed)
    X = scale * rng.normal(size=(n, 3))
    bound = rbf_pair_error(gamma, X)
    alpha = C * rng.uniform(size=n) * (rng.uniform(size=n) < 0.7)
    magnitude = C * rng.uniform(0.0, 3.0, n) * (rng.uniform(size=n) < 0.9)
    weighted = magnitude * rng.uniform(0.0, 10.0, n)
    scores = C * rng.normal(size=n)
    if special:
        magnitude[0], magnitude[n // 2], magnitude[-1] = np.inf, np.nan, 5e-324
        scores[-1] = -np.inf
    with np.errstate(over="ignore", invalid="ignore"):  # numpy's warnings at inf and nan
        score_error_both_paths(bound, alpha, magnitude, weighted, scores)


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.sampled_from([2, 37, 1023, 1024, 1500]),
    C=st.sampled_from([1e-3, 1.0, 1e4]),
    weighted=st.booleans(),
    special=st.booleans(),
)
@example(seed=0, n=1024, C=1e4, weighted=True, special=True)
def test_kernel_primal_upper_compiled_pass_is_its_numpy_equivalent(seed, n, C, weighted, special):
    # P's upper bound to the bit by both paths, on either side of _SUCC_SIZE, with scores on
    # and off their margins, weights, and infinite and nan scores and errors where ``special``
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + rng.normal(size=n) > 0, 1, -1)
    y[:2] = [1, -1]  # both classes
    weights = rng.uniform(0.1, 2.0, n) if weighted else None
    f = qpsvm.SoftMarginDual(X, y, C=C, kernel="rbf", gamma=0.1, sample_weight=weights)
    alpha = f.upper * rng.uniform(size=n) * (rng.uniform(size=n) < 0.6)
    scores = np.where(rng.uniform(size=n) < 0.5, f.y, 2.0 * rng.normal(size=n))
    err = rng.uniform(0.0, 1e-12, n)
    if special:
        scores[0], scores[n // 2], err[-1] = np.nan, np.inf, np.inf
    b = float(rng.normal())
    out = []
    for cold in (False, True):
        with pytest.MonkeyPatch.context() as patch, np.errstate(over="ignore", invalid="ignore"):
            patch.setattr(rigorous, "uncompiled", lambda kernel, rows, budget, cold=cold: cold)
            out.append(rigorous.kernel_primal_upper(f, alpha, b, scores, err))
    np.testing.assert_array_equal(out[0], out[1])


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    scale=st.sampled_from([1e-3, 1.0, 10.0]),
    gamma=st.sampled_from([1e-3, 0.1, 2.0]),
    C=st.sampled_from([1.0, 1e4]),
    shift=st.sampled_from([0.0, 1e3, 1e4]),
)
@example(seed=7, scale=1.0, gamma=0.1, C=1e4, shift=1e4)
def test_rbf_score_error_encloses_the_exact_scores(seed, scale, gamma, C, shift):
    # |g^_i - (K (alpha y))_i| <= e_i with the exact kernel, g summed by Dot2 as the
    # certificate sums it; a common offset of the features (q_i 1e8 times the distances) costs
    # nothing: e_i <= 10u (M_i + ||alpha||_1) + 2u |g_i| (the exponential's 5.4u on M_i, the
    # arguments' 23u / e on ||alpha||_1 by Jensen's inequality, u |g| for Dot2's last rounding)
    X = rows_of_mixed_norms(seed, scale) + shift
    rng = np.random.default_rng(seed + 1)
    alpha = C * rng.uniform(size=12) * (rng.uniform(size=12) < 0.8)
    y = np.where(rng.uniform(size=12) < 0.5, -1.0, 1.0)
    K = Kernel("rbf", gamma=gamma)(X, X)
    bound = rbf_pair_error(gamma, X)
    hi, lo = tdot2(K, alpha * y)
    g = hi + lo
    e = score_error_both_paths(bound, alpha, K @ alpha, K @ (alpha * bound.sqnorm), g)
    exact = exact_rbf(X, gamma)
    with localcontext() as ctx:
        ctx.prec = DIGITS
        v = [Decimal(float(a)) * Decimal(float(s)) for a, s in zip(alpha, y, strict=True)]
        for i in range(12):
            true = sum(exact[i][j] * v[j] for j in range(12))
            assert abs(Decimal(float(g[i])) - true) <= Decimal(float(e[i])), i
    M = K @ alpha
    assert np.all(e <= 10 * U * (M + alpha.sum()) + 2 * U * np.abs(g))


def exact_objectives(f, alpha_p, b, alpha_d):
    """``P(alpha_p, b)`` and ``D(alpha_d) = m.a - 1/2 (a y)^T K (a y)`` to 40 digits."""
    K = exact_rbf(f.X, f.kernel.gamma)
    n = f.n_samples
    with localcontext() as ctx:
        ctx.prec = DIGITS
        y = [Decimal(int(v)) for v in f.y]
        m = [Decimal(float(v)) for v in f.margin]
        C = Decimal(float(f.C))
        s = [Decimal(float(v)) for v in f.sample_weight]

        def quad(a):
            v = [Decimal(float(a[i])) * y[i] for i in range(n)]
            g = [sum(K[i][j] * v[j] for j in range(n)) for i in range(n)]
            return g, sum(v[i] * g[i] for i in range(n))

        g, q = quad(alpha_p)
        bb = Decimal(float(b))
        slack = sum(C * s[i] * max(Decimal(0), m[i] - y[i] * (g[i] + bb)) for i in range(n))
        primal = q / 2 + slack
        _, qd = quad(alpha_d)
        dual = sum(m[i] * Decimal(float(alpha_d[i])) for i in range(n)) - qd / 2
        balance = abs(sum(Decimal(float(alpha_d[i])) * y[i] for i in range(n)))
    return primal, dual, balance


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    C=st.sampled_from([0.05, 1.0, 1e3]),
    shift=st.sampled_from([0.0, 50.0, 1e3]),
    rough=st.booleans(),
)
def test_rbf_certificate_encloses_the_exact_objectives(seed, C, shift, rough):
    # upper >= P(candidate) and lower <= D(its dual point), both exact: a rigorous enclosure
    X, y = random_problem(seed, n=14, d=3)
    f = qpsvm.SoftMarginDual(X + shift, y, C=C, kernel="rbf", gamma=0.3)
    sol = f.solve(method="smo", tol=1e-1 if rough else 1e-3, certify=False)
    cert = f.certify(alpha=sol.alpha, b=sol.b)
    assert cert.rigorous
    primal, dual, balance = exact_objectives(f, sol.alpha, sol.b, cert.alpha)
    assert Decimal(cert.upper) >= primal
    # the lower bound subtracts B |sum a y| for the balance's round-off
    assert Decimal(cert.lower) <= dual
    assert cert.lower <= cert.upper
    if balance == 0:
        assert Decimal(cert.lower) <= primal


def test_exact_rbf_optimum_is_certified_rigorously(cancer):
    # a solution certified at 1e-9 by proven bounds: the rounding floor is far below it
    X, y = cancer
    sol = qpsvm.SoftMarginDual(X, y, C=3.0, kernel="rbf", gamma=0.05).solve()
    assert sol.certificate.rigorous and sol.certificate.passed


def test_exponential_error_bound_holds_in_exact_arithmetic():
    # eta >= e^a sum_k gamma_{n_k} a^k / k! + u, every quantity a rational (e^a bounded above
    # by its Taylor series with a remainder of twice the next term), and the truncation of the
    # degree-13 polynomial below u e^{-a}, as its derivation states
    from fractions import Fraction
    from math import factorial

    from qpsvm.verify.rigorous import _DEGREE, _REDUCED, _exp_error

    u = Fraction(1, 2**53)
    a = Fraction(_REDUCED)
    exp_a = sum(a**k / factorial(k) for k in range(40)) + 2 * a**40 / factorial(40)

    def gamma_(n):
        return n * u / (1 - n * u)

    # n_k: 2k + 1 for the coefficients that are floats (1, 1, 1/2), one more for the rounded
    # ones, and 27 for the highest (no addition of its own)
    assert Fraction(1 / factorial(3)) != Fraction(1, factorial(3))
    assert all(Fraction(1 / factorial(k)) == Fraction(1, factorial(k)) for k in range(3))
    n_k = [2 * k + 1 if k <= 2 else 2 * k + 2 for k in range(_DEGREE)] + [2 * _DEGREE + 1]
    horner = sum(gamma_(n_k[k]) * a**k / factorial(k) for k in range(_DEGREE + 1))
    eta = Fraction(_exp_error())
    assert eta >= exp_a * horner + u
    exp_minus_a_low = 1 / exp_a
    assert a ** (_DEGREE + 1) * exp_a / factorial(_DEGREE + 1) < u * exp_minus_a_low
    # far below the uniform bound gamma_28 e^{2a} (Higham's, used before), and above 1 ulp
    assert 4 * u < eta < gamma_(28) * exp_a**2 / 8


@pytest.mark.parametrize("compiled", [True, False])
def test_exponential_is_within_its_proven_error(compiled):
    # exp_nonpositive (compiled: multiply-adds fused where the compiler chooses; numpy's: each
    # operation rounded apart) against 40-digit values: on the reduced range (k = 0, r = x
    # exactly) within eta e^x; over the whole range within (1 + eta) e^u - 1 relative (r wrong
    # by u) plus the subnormal 2^-1073
    from qpsvm.kernels import _exp_nonpositive_numpy, exp_nonpositive
    from qpsvm.verify.rigorous import _exp_error

    eta = Decimal(_exp_error())
    rng = np.random.default_rng(0)
    reduced = -rng.uniform(0.0, 0.3465, 4000)
    wide = np.concatenate([-rng.uniform(0.0, 50.0, 4000), -rng.uniform(700.0, 746.0, 500)])
    with localcontext() as ctx:
        ctx.prec = DIGITS
        u = Decimal(2) ** -53
        wide_rho = (1 + eta) * u.exp() - 1
        for x, rho in ((reduced, eta), (wide, wide_rho)):
            out = x.copy()
            bits = np.empty(x.size, dtype=np.int64)
            if compiled:
                exp_nonpositive(out, bits, bits.view(np.float64))
            else:
                _exp_nonpositive_numpy(out)
            for v, got in zip(x, out, strict=True):
                exact = Decimal(float(v)).exp()
                assert abs(Decimal(float(got)) - exact) <= rho * exact + Decimal(2.0**-1073)


def shuffled_csr(X: np.ndarray, seed: int) -> sp.csr_matrix:
    """``X`` (dyadic values) as a CSR matrix as a user may build it: each row's nonzeros in a
    random order, some split into two stored entries of the same column (duplicates, which
    add up: halves of a dyadic value, so their sum is exact in any order)."""
    rng = np.random.default_rng(seed)
    data, indices, indptr = [], [], [0]
    for row in X:
        entries = []
        for k in np.flatnonzero(row):
            if rng.random() < 0.4:
                entries += [(k, row[k] / 2), (k, row[k] / 2)]
            else:
                entries.append((k, row[k]))
        for p in rng.permutation(len(entries)):
            indices.append(entries[p][0])
            data.append(entries[p][1])
        indptr.append(len(indices))
    M = sp.csr_matrix((np.array(data, dtype=np.float64), indices, indptr), shape=X.shape)
    assert not M.has_canonical_format or not M.nnz
    return M


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    scale=st.sampled_from([2.0**-10, 1.0, 2.0**5]),
    gamma=st.sampled_from([1e-3, 0.1, 2.0]),
    shift=st.sampled_from([0.0, 2.0**10]),
)
@example(seed=0, scale=1.0, gamma=0.1, shift=2.0**10)  # norms 1e6 times the distances
def test_sparse_rbf_rows_in_any_layout_are_the_dense_values_within_the_bound(
    seed, scale, gamma, shift
):
    # rows with unsorted indices and duplicate entries (the user's matrix, left as given): the
    # compiled sparse rows and Kernel.__call__ merge the canonical rows by index, so they are
    # the dense kernel's values up to rounding: each within the per-pair bound of the exact
    # kernel (40 digits), its distance form relative to the pair's own distance
    rng = np.random.default_rng(seed)
    n, d = 10, 12
    X = np.round(8 * rng.normal(size=(n, d))) / 8 * scale
    X[rng.random(size=(n, d)) < 0.6] = 0.0
    X[:, 0] += shift  # a common offset on one feature
    M = shuffled_csr(X, seed)
    given_layout = (M.data.copy(), M.indices.copy(), M.indptr.copy())
    bound = rbf_pair_error(gamma, sp.csr_matrix(X))
    exact = exact_rbf(X, gamma)
    args = exact_arguments(X, gamma)
    dense = Kernel("rbf", gamma=gamma)(X, X)
    cache = KernelCache(Kernel("rbf", gamma=gamma), M, 1.0)
    for K in (cache.take(np.arange(n)), Kernel("rbf", gamma=gamma)(M, M), dense):
        with localcontext() as ctx:
            ctx.prec = DIGITS
            for i in range(n):
                for j in range(n):
                    by_distance = Decimal(bound.base) + Decimal(bound.distance_slope) * args[i][j]
                    limit = min(Decimal(bound.rho), by_distance) * exact[i][j] + Decimal(2.0**-1073)
                    err = abs(Decimal(float(K[i, j])) - exact[i][j])
                    assert err <= limit, (i, j, float(err), float(limit))
                    apart = abs(Decimal(float(K[i, j])) - Decimal(float(dense[i, j])))
                    assert apart <= 2 * limit  # the dense computation's value, within both bounds
    for before, now in zip(given_layout, (M.data, M.indices, M.indptr), strict=True):
        assert np.array_equal(before, now)  # the user's matrix is not changed

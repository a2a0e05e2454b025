"""The certificate's rbf scores ``g = K (alpha y)`` by Dot2 and their magnitudes ``K |alpha|``,
``K (|alpha| q)`` in one read of each support row from the kernel cache
(:meth:`~qpsvm.kernels.KernelCache.enclosed_products`): the Dot2 sums are the floats of
:func:`~qpsvm._numerics.tdot2` over the gathered rows (the same operations in the same order),
the nonnegative sums within ``gamma_m`` of their exact values (the bound
:func:`~qpsvm.verify.rigorous.rbf_score_error` assumes, whatever the order), and no row of the
product leaves the cache."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

import qpsvm
from qpsvm import kernels
from qpsvm._numerics import gamma, tdot2
from qpsvm.verify.binary import kernel_scores, kernel_ulps
from tests.conftest import random_problem


@pytest.fixture
def compiled_pass(monkeypatch):
    """The pass compiled from its first call (no numpy equivalent charged against a budget)."""
    monkeypatch.setattr(kernels, "uncompiled", lambda *args: False)


def small_cache_problem() -> qpsvm.SoftMarginDual:
    """rbf, 60 samples, a cache of 12 rows: most support rows computed into the scratch row."""
    X, y = random_problem(3, n=60, d=4)
    f = qpsvm.SoftMarginDual(X, y, C=2.0, kernel="rbf", gamma=0.4)
    f.kernel_cache_size = 12 * 60 * 8 / 2**20
    return f


def test_pass_is_tdot2_over_the_rows_and_keeps_the_product_rows(compiled_pass):
    f = small_cache_problem()
    rng = np.random.default_rng(0)
    n = f.n_samples
    V = rng.normal(size=(2, n)) * (rng.random((2, n)) < 0.7)
    A = np.abs(rng.normal(size=(3, n))) * (rng.random((3, n)) < 0.7)
    cache = f.kernel_cache()
    assert cache.capacity == 12
    nz = np.flatnonzero(np.any(V != 0, axis=0) | np.any(A != 0, axis=0))
    held = nz[:5]
    cache.slots(held)  # rows of the product already cached
    s, c, m = f.enclosed_products(V, A)
    # cached rows of the product stay; the free slots took missing rows of the product
    assert np.all(cache.slot_of[held] >= 0)
    assert np.all(np.isin(cache.owner[cache.owner >= 0], nz))
    K = np.array([cache.take(np.array([j]))[0] for j in range(n)])
    for p in range(V.shape[0]):
        hi, lo = tdot2(K[nz], V[p, nz])
        np.testing.assert_array_equal(s[p], hi)
        np.testing.assert_array_equal(c[p], lo)
    # a sum of nonnegative terms within gamma_m of its exact value, in any order
    for q in range(A.shape[0]):
        terms = np.flatnonzero(A[q])
        for t in range(n):
            exact = sum(F(float(A[q, j])) * F(float(K[j, t])) for j in terms)
            assert abs(F(float(m[q, t])) - exact) <= F(gamma(terms.size)) * exact


def test_scores_take_the_pass_and_equal_the_gathered_rows(compiled_pass, monkeypatch):
    f = small_cache_problem()
    sol = f.solve()
    alpha = sol.alpha.copy()
    other = alpha.copy()
    other[::3] *= 0.5
    ulps = kernel_ulps(f)
    gathered = small_cache_problem()
    monkeypatch.setattr(gathered, "enclosed_products", lambda V, A: None)
    old = kernel_scores(gathered, [alpha, other], ulps)
    # the pass reads the cache, never the gathered rows
    monkeypatch.setattr(f, "gram_rows", lambda idx: pytest.fail("rows gathered"))
    new = kernel_scores(f, [alpha, other], ulps)
    for (g, e), (g_old, e_old) in zip(new, old, strict=True):
        np.testing.assert_array_equal(g, g_old)
        # the magnitudes differ only in the order of their sums
        np.testing.assert_allclose(e, e_old, rtol=1e-13, atol=0)
    cert = f.certify(sol)
    assert cert.rigorous and cert.passed
    assert cert.primal_objective >= sol.objective >= cert.dual_objective

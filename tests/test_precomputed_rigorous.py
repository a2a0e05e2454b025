"""Precomputed Gram matrices on the proven certificate path: their values are the data (no
rounding to bound), so :func:`qpsvm.verify.psd.gram_verdict` decides semidefiniteness with no
value error, and a proven semidefinite matrix gets a rigorous certificate whose enclosure holds
the exact rational optimum (the dual as a linear complementarity problem in fractions); a
matrix proven indefinite gets a certificate that is not rigorous (a float ``X @ X.T`` often is
indefinite once rounded; refusing it would refuse the commonest use)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import qpsvm
from qpsvm.verify.binary import kernel_ulps
from qpsvm.verify.psd import ExactGram, gram_verdict
from tests.test_composed_kernel_working_set import exact_optimum


def integer_gram(seed: int, n: int = 9, d: int = 3) -> np.ndarray:
    """``X X^T`` of small integer points: exact in float64, positive semidefinite and, with
    ``n > d``, singular (the shifted Cholesky proof fails; exact elimination decides)."""
    X = np.random.default_rng(seed).integers(-3, 4, size=(n, d)).astype(np.float64)
    return X @ X.T


@pytest.mark.parametrize(
    ("build", "loss"),
    [
        ("classifier", "hinge"),
        ("classifier", "squared_hinge"),
        ("regression", "epsilon_insensitive"),
        ("regression", "squared_epsilon_insensitive"),
    ],
)
def test_precomputed_psd_gram_is_certified_rigorously(build, loss):
    K = integer_gram(2)
    n = K.shape[0]
    assert gram_verdict(ExactGram(float(np.max(np.diag(K)))), K).psd is True
    rng = np.random.default_rng(3)
    common = {"loss": loss, "kernel": "precomputed", "intercept": "free"}
    if build == "classifier":
        y = np.where(rng.random(n) < 0.5, -1, 1)
        y[:2] = [1, -1]
        f = qpsvm.ComposedClassifier(K, y, 0.3, **common)
    else:
        f = qpsvm.SupportVectorRegression(K, rng.normal(size=n), 0.3, 0.2, **common)
    sol = f.solve()
    cert = sol.certificate
    assert cert.passed and cert.rigorous
    exact = [[Fraction(v) for v in row] for row in K]
    optimum = exact_optimum(f, exact)
    assert Fraction(cert.lower) <= optimum <= Fraction(cert.upper)
    # a perturbed answer: its gap still encloses the exact optimum
    worse = f.certify(alpha=f.loss_conjugate().clip(sol.alpha * 1.1), b=sol.b)
    assert worse.rigorous and Fraction(worse.lower) <= optimum <= Fraction(worse.upper)


def test_precomputed_soft_margin_dual_is_rigorous():
    K = integer_gram(4)
    y = np.where(np.arange(K.shape[0]) % 2 == 0, 1, -1)
    f = qpsvm.SoftMarginDual(K, y, C=0.5, kernel="precomputed")
    assert isinstance(kernel_ulps(f), ExactGram)
    cert = f.solve().certificate
    assert cert.passed and cert.rigorous


def test_precomputed_indefinite_gram_is_not_rigorous():
    """Semidefinite but for one diagonal entry lowered: the smallest eigenvalue is within the
    input check's floating-point tolerance, and the exact proof finds it negative; the
    certificate says it proves nothing rather than refusing the matrix."""
    K = integer_gram(2)
    v = np.linalg.eigh(K)[1][:, 0]  # a null vector of the singular K
    j = int(np.argmax(np.abs(v)))
    K[j, j] -= 1e-9
    assert float(np.linalg.eigvalsh(K)[0]) < 0
    verdict = gram_verdict(ExactGram(float(np.max(np.diag(K)))), K)
    assert verdict.psd is False
    y = np.where(np.arange(K.shape[0]) % 2 == 0, 1, -1)
    f = qpsvm.ComposedClassifier(K, y, 0.3, loss="squared_hinge", kernel="precomputed")
    assert not f.certify(alpha=np.zeros(K.shape[0]), b=0.0).rigorous
    dual = qpsvm.SoftMarginDual(K, y, C=0.5, kernel="precomputed")
    assert not dual.certify(alpha=np.zeros(K.shape[0]), b=0.0).rigorous
    # the same matrix with a ridge is proven definite: rigorous again
    ridged = K + 1e-6 * np.eye(K.shape[0])
    assert gram_verdict(ExactGram(float(np.max(np.diag(ridged)))), ridged).psd is True
    cert = qpsvm.SoftMarginDual(ridged, y, C=0.5, kernel="precomputed").solve().certificate
    assert cert.passed and cert.rigorous


def test_precomputed_gram_not_exactly_symmetric_is_not_rigorous():
    """Symmetric only to round-off (accepted as input): the matrix the certificate states is
    not symmetric, so nothing is proven and the certificate says so."""
    K = integer_gram(2) + np.eye(9)
    K[0, 1] += 1e-13
    assert gram_verdict(ExactGram(float(np.max(np.diag(K)))), K).psd is None
    y = np.where(np.arange(9) % 2 == 0, 1, -1)
    cert = qpsvm.SoftMarginDual(K, y, C=0.5, kernel="precomputed").solve().certificate
    assert cert.passed and not cert.rigorous

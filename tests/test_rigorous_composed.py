"""Rigorous enclosures of the composed problems, checked in exact rational arithmetic.

For adversarial data (features shifted by up to 1e4 and scaled by 1e-4..1e4, C from 1e-4 to
1e5, zero weights) and every loss with the L2, L1 and elastic-net penalties (``l1_ratio`` whose
complement ``1 - r`` rounds, or not) and each intercept mode, the
certificate of the solve's answer and of perturbed points must satisfy, exactly:

- ``upper >= P(w, b)``, the candidate's objective computed in fractions from the float data;
- the returned dual point ``u`` lies in the exact domain (box ``[0, W_i]`` or ``[-W_i, W_i]``
  with ``W_i = C c_i``; ``||v||_inf <= 1`` for L1);
- ``lower <= D(u)`` in fractions, less the free intercept's coupling residual times the bound
  on ``|b*|`` the module proves (:mod:`qpsvm.verify.rigorous_composed`).

Together with weak duality these make ``lower <= P* <= upper`` for the exact problem.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm.exceptions import QPSVMError
from qpsvm.verify.rigorous import row_norm_upper
from qpsvm.verify.rigorous_composed import _intercept_bound

LOSSES = ("hinge", "squared_hinge", "epsilon_insensitive", "squared_epsilon_insensitive")
# (hinge, l2, free / none) are the binary SoftMarginPrimal, certified by verify.binary
MODES = [
    (loss, pen, icpt)
    for loss in LOSSES
    for pen in ("l2", "l1", "l1_l2")
    for icpt in ("free", "none", "regularized")
    if not (loss == "hinge" and pen == "l2" and icpt != "regularized")
]


#: Elastic-net ratios: ``1 - r`` exact (0.5, 0.75) or rounded (0.3, 0.1).
RATIOS = (0.5, 0.75, 0.3, 0.1)


def build(loss, penalty, intercept, seed, shift, log_scale, C):
    rng = np.random.default_rng(seed)
    ratio = {"l1_ratio": RATIOS[seed % len(RATIOS)]} if penalty == "l1_l2" else {}
    n, d = int(rng.integers(6, 14)), int(rng.integers(1, 4))
    X = rng.normal(size=(n, d)) * 10.0**log_scale + shift
    weights = np.where(rng.random(n) < 0.2, 0.0, rng.uniform(0.5, 2.0, n))
    if loss in ("hinge", "squared_hinge"):
        y = np.where(rng.random(n) < 0.5, -1, 1)
        y[:2] = [1, -1]
        return qpsvm.SoftMarginPrimal(
            X,
            y,
            C,
            loss=loss,
            penalty=penalty,
            intercept=intercept,
            sample_weight=weights,
            intercept_scaling=2.0 ** rng.integers(-2, 3),
            **ratio,
        )
    target = X @ rng.normal(size=d) / 10.0**log_scale + rng.normal(size=n)
    return qpsvm.SupportVectorRegression(
        X,
        target,
        C,
        epsilon=0.25,
        loss=loss,
        penalty=penalty,
        intercept=intercept,
        sample_weight=weights,
        intercept_scaling=2.0 ** rng.integers(-2, 3),
        **ratio,
    )


def F(a):
    return [Fraction(float(v)) for v in np.ravel(a)]


def exact_rows(f) -> list[list[Fraction]]:
    """The rows in fractions: those of ``X``, or the exact item differences of a ranking."""
    if f.item_pairs is None:
        return [F(row) for row in np.asarray(f.X)]
    items, pairs = f.item_pairs
    rows = [F(row) for row in np.asarray(items)]
    return [[a - c for a, c in zip(rows[i], rows[j], strict=True)] for i, j in pairs]


def exact_primal(f, w, b) -> Fraction:
    X = exact_rows(f)
    w, b = F(w), Fraction(float(b))
    W = [Fraction(f.C) * c for c in F(f.sample_weight)]
    total = Fraction(0)
    for xi, s, t, Wi in zip(X, F(f.sigma), F(f.target), W, strict=True):
        z = s * (sum(a * c for a, c in zip(xi, w, strict=True)) + b)
        e = (
            max(Fraction(0), abs(z - t) - Fraction(f.epsilon))
            if f.loss.regression
            else max(Fraction(0), t - z)
        )
        total += Wi * (e * e if f.loss.squared else e)
    coord = b / Fraction(f.intercept.scaling) if f.intercept.regularized else Fraction(0)
    square = (sum(v * v for v in w) + coord * coord) / 2
    linear = sum(abs(v) for v in w) + abs(coord)
    if f.penalty.name == "l2":
        return total + square
    if f.penalty.name == "l1":
        return total + linear
    r = Fraction(f.penalty.l1_ratio)
    return total + r * linear + (1 - r) * square


def exact_dual_lower_check(f, u, lower, upper) -> None:
    X = exact_rows(f)
    u = F(u)
    W = [Fraction(f.C) * c for c in F(f.sample_weight)]
    sigma = F(f.sigma)
    for ui, Wi in zip(u, W, strict=True):
        if Wi == 0:
            assert ui == 0
        elif not f.loss.squared:
            assert (-Wi if f.loss.regression else 0) <= ui <= Wi
        elif not f.loss.regression:
            assert ui >= 0
    su = [a * s for a, s in zip(u, sigma, strict=True)]
    v = [sum(x[j] * c for x, c in zip(X, su, strict=True)) for j in range(len(X[0]))]
    if f.intercept.regularized:
        v.append(Fraction(f.intercept.scaling) * sum(su))
    value = Fraction(0)
    for ui, t, Wi in zip(u, F(f.target), W, strict=True):
        value += t * ui
        if f.loss.regression:
            value -= Fraction(f.epsilon) * abs(ui)
        if f.loss.squared and ui != 0:
            value -= ui * ui / (4 * Wi)
    if f.penalty.name == "l2":
        value -= sum(c * c for c in v) / 2
    elif f.penalty.name == "l1":
        assert max(abs(c) for c in v) <= 1
    else:
        r = Fraction(f.penalty.l1_ratio)
        value -= sum(max(Fraction(0), abs(c) - r) ** 2 for c in v) / (2 * (1 - r))
    if f.intercept.coupled and sum(su) != 0:
        value -= Fraction(_intercept_bound(f, upper, row_norm_upper(f.X))) * abs(sum(su))
    assert Fraction(lower) <= value


#: Adversarial data: features shifted and scaled, C over nine decades.
ADVERSARIAL = {
    "seed": st.integers(0, 10_000),
    "shift": st.sampled_from([0.0, 1e3, 1e4]),
    "log_scale": st.sampled_from([-4.0, 0.0, 4.0]),
    "log_C": st.floats(-4.0, 5.0),
}


@pytest.mark.parametrize("mode", MODES, ids=["-".join(m) for m in MODES])
@settings(max_examples=2, deadline=None)
@given(**ADVERSARIAL)
def test_composed_enclosures_are_rigorous(mode, seed, shift, log_scale, log_C):
    f = build(*mode, seed, shift, log_scale, 10.0**log_C)
    try:
        sol = f.solve()
    except QPSVMError:
        return  # a typed refusal (e.g. a backend that cannot reach 1e-9) is allowed
    rng = np.random.default_rng(seed)
    candidates = [(sol.w, sol.b)]
    for eps in (1e-6, 1e-2):
        noise = rng.normal(size=sol.w.shape) * eps * max(1.0, float(np.abs(sol.w).max()))
        candidates.append((sol.w + noise, sol.b))
    for w, b in candidates:
        cert = f.certify(w=w, b=b)
        assert cert.rigorous
        assert exact_primal(f, w, b) <= Fraction(cert.upper)
        exact_dual_lower_check(f, cert.alpha, cert.lower, cert.upper)


RANKING_MODES = [
    (loss, pen)
    for loss in ("hinge", "squared_hinge")
    for pen in ("l2", "l1", "l1_l2")
    if (loss, pen) != ("hinge", "l2")
]


@pytest.mark.parametrize("mode", RANKING_MODES, ids=["-".join(m) for m in RANKING_MODES])
@settings(max_examples=3, deadline=None)
@given(**ADVERSARIAL)
def test_ranking_enclosures_are_rigorous(mode, seed, shift, log_scale, log_C):
    """The composed ranking problems: margins and ``v`` enclosed from the items, so the exact
    pair differences (which float64 rounds on shifted features) are what is bounded."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(5, 10)), int(rng.integers(1, 4))
    X = rng.normal(size=(n, d)) * 10.0**log_scale + shift
    pairs = np.array([(i, j) for i in range(n) for j in range(n) if i != j and rng.random() < 0.3])
    if pairs.size == 0:
        pairs = np.array([[0, 1]])
    weights = np.where(rng.random(len(pairs)) < 0.2, 0.0, rng.uniform(0.5, 2.0, len(pairs)))
    weights[0] = 1.0
    ratio = {"l1_ratio": RATIOS[seed % len(RATIOS)]} if mode[1] == "l1_l2" else {}
    f = qpsvm.RankingSVM(
        X, pairs, C=10.0**log_C, pair_weight=weights, loss=mode[0], penalty=mode[1], **ratio
    )
    assert f.item_pairs is not None
    try:
        sol = f.solve()
    except QPSVMError:
        return  # a typed refusal (e.g. a backend that cannot reach 1e-9) is allowed
    for eps in (0.0, 1e-6, 1e-2):
        w = sol.w + rng.normal(size=d) * eps * max(1.0, float(np.abs(sol.w).max()))
        cert = f.certify(w=w)
        assert cert.rigorous
        assert exact_primal(f, w, 0.0) <= Fraction(cert.upper)
        exact_dual_lower_check(f, cert.alpha, cert.lower, cert.upper)

"""Tests of the structural SVM: cutting plane, full QP, certificate, subgradient, data set.

Reasons for the asserted numbers:

* Two certified answers bracket the optimum: ``D <= P* <= P`` for each, so their objectives differ
  by at most the larger gap, and ``||w - w*|| <= sqrt(2 gap)`` (1-strong convexity), so two
  certified ``w`` differ by at most the sum of their distance bounds.
* A hand-written CVXPY QP over every output, built here from ``joint_feature`` and a Hamming
  count written here, shares no code with ``StructuralSVM``.
* With the 0/1 loss and ``Psi(x, y) = e_y (x) x`` the structural SVM *is* the Crammer-Singer
  multiclass SVM (Tsochantaridis et al. 2005, section 4.1), for both rescalings.
"""

from __future__ import annotations

import itertools
import logging
import math

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm import StructuralSVM
from qpsvm.conventions import C_from_structural
from qpsvm.datasets import make_chains
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.models import ChainModel, MulticlassModel
from qpsvm.solution import CuttingPlane, StructuralCandidate

TOL = 1e-9


def tiny_chains(seed: int, n: int = 8, n_features: int = 4, n_states: int = 3):
    """Sequences of exactly 3 positions (``3 + Poisson(0)``): 27 outputs per example."""
    data = make_chains(
        n_sequences=n,
        mean_length=3,
        n_features=n_features,
        n_states=n_states,
        noise=0.3,
        random_state=seed,
    )
    return data.X, data.Y


def distance_bound(a, b) -> float:
    """``||w_a - w_b||`` is at most the sum of both certified distances to ``w*``."""
    return a.certificate.distance_bound + b.certificate.distance_bound + 1e-12


def agree(a, b) -> None:
    """Two certified solutions of the same problem: objectives within the larger gap."""
    slack = max(a.certificate.gap, b.certificate.gap) + 1e-12 * max(1.0, abs(a.objective))
    assert abs(a.objective - b.objective) <= slack, "both certified: P* lies in each [D, P]"
    assert np.linalg.norm(a.w - b.w) <= distance_bound(a, b), "||w - w*|| <= sqrt(2 gap)"


def handwritten_full_qp(X, Y, n_states: int, C: float, rescaling: str) -> float:
    """The full QP over every output, written from the definitions."""
    model = ChainModel(X[0].shape[1], n_states)
    w = cp.Variable(model.n_joint_features)
    xi = cp.Variable(len(X))
    cons = [xi >= 0]
    for i, (x, y) in enumerate(zip(X, Y, strict=True)):
        psi_true = model.joint_feature(x, y)
        for labels in itertools.product(range(n_states), repeat=len(y)):
            loss = float(sum(a != b for a, b in zip(labels, y, strict=True)))
            if loss == 0:
                continue
            dpsi = psi_true - model.joint_feature(x, np.array(labels))
            bound = loss - dpsi @ w if rescaling == "margin" else loss * (1 - dpsi @ w)
            cons.append(xi[i] >= bound)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * cp.sum(xi)), cons)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return float(prob.value)


# ---------------------------------------------------------------- exact optimum
@pytest.mark.parametrize("rescaling", ["margin", "slack"])
def test_full_qp_matches_handwritten_qp(rescaling):
    X, Y = tiny_chains(0)
    f = StructuralSVM(ChainModel(4, 3), X, Y, C=1.0, rescaling=rescaling)
    full = f.solve(method="full")
    assert full.certificate.passed and full.status == "optimal"
    reference = handwritten_full_qp(X, Y, 3, 1.0, rescaling)
    assert full.objective == pytest.approx(reference, rel=1e-8), (
        "an independent QP over every output has the same optimum (Clarabel to 1e-11)"
    )


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
@pytest.mark.parametrize("variant", ["n_slack", "one_slack"])
def test_cutting_plane_equals_full_qp(rescaling, variant):
    X, Y = tiny_chains(1)
    f = StructuralSVM(ChainModel(4, 3), X, Y, C=2.0, rescaling=rescaling)
    full = f.solve(method="full")
    cut = f.solve(variant=variant)
    assert cut.status == "optimal" and cut.certificate.passed
    assert cut.certificate.relative_gap <= TOL
    agree(cut, full)
    assert cut.info["working_set"] < len(f.enumerate_planes()), (
        "the cutting plane needs only part of the constraints"
    )


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    C=st.floats(0.01, 50.0),
    rescaling=st.sampled_from(["margin", "slack"]),
    variant=st.sampled_from(["n_slack", "one_slack"]),
)
def test_cutting_plane_equals_full_qp_on_random_tiny_chains(seed, C, rescaling, variant):
    X, Y = tiny_chains(seed, n=5)
    f = StructuralSVM(ChainModel(4, 3), X, Y, C=C, rescaling=rescaling)
    cut = f.solve(variant=variant)
    assert cut.certificate.passed
    agree(cut, f.solve(method="full"))


@pytest.mark.parametrize("variant", ["n_slack", "one_slack"])
def test_cvxpy_working_set_equals_coordinate_ascent(variant):
    X, Y = tiny_chains(2)
    f = StructuralSVM(ChainModel(4, 3), X, Y, C=0.5)
    exact = f.solve(solver="CLARABEL", variant=variant)
    fast = f.solve(variant=variant)
    assert exact.solver == "CLARABEL" and fast.solver == "coordinate"
    agree(exact, fast)


def test_one_slack_and_n_slack_reach_the_same_optimum():
    """A chain too large to enumerate (4 states, up to 9 positions): the two variants agree."""
    data = make_chains(n_sequences=25, mean_length=5, n_features=6, n_states=4, random_state=3)
    f = StructuralSVM(ChainModel(6, 4), data.X, data.Y, C=0.3)
    n_slack = f.solve(variant="n_slack")
    one_slack = f.solve(variant="one_slack", tol=1e-8)
    assert n_slack.certificate.passed and one_slack.certificate.passed
    agree(n_slack, one_slack)


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
def test_multiclass_model_equals_crammer_singer(rescaling):
    rng = np.random.default_rng(4)
    y = rng.integers(0, 3, 40)
    X = rng.normal(size=(40, 3)) + 1.5 * np.eye(3)[y]
    f = StructuralSVM(MulticlassModel(3, 3), X, y, C=0.7, rescaling=rescaling)
    sol = f.solve()
    cs = qpsvm.MulticlassSVM(X, y, C=0.7, variant="crammer_singer").solve()
    assert cs.certificate.passed and sol.certificate.passed
    slack = max(sol.certificate.gap, cs.certificate.gap) + 1e-12
    assert abs(sol.objective - cs.objective) <= slack, (
        "0/1 loss with Psi = e_y (x) x is Crammer-Singer: same optimum"
    )
    W = sol.w.reshape(3, 3)
    bound = sol.certificate.distance_bound + cs.certificate.distance_bound + 1e-12
    assert np.linalg.norm(W - cs.w) <= bound
    assert f.predict(X, sol) == np.argmax(X @ W.T, axis=1).tolist(), "prediction is the argmax"


# -------------------------------------------------------------------- certificate
def test_certificate_brackets_the_optimum():
    X, Y = tiny_chains(5)
    f = StructuralSVM(ChainModel(4, 3), X, Y, C=1.0)
    optimum = f.solve(method="full").objective
    for tol in (1e-1, 1e-3, 1e-6):
        cert = f.solve(tol=tol).certificate
        assert cert.dual_objective <= optimum + 1e-9, "D of a dual-feasible point is <= P*"
        assert cert.primal_objective >= optimum - 1e-9, "P at any w is >= P*"
        assert cert.relative_gap <= tol
    sgd = f.solve(method="subgradient", epochs=3, random_state=0)
    cert = f.certify(sgd)
    assert cert.dual_objective <= optimum + 1e-9 <= cert.primal_objective + 2e-9, (
        "a bare w gets a valid (loose) lower bound too"
    )
    w_star = f.solve().w
    assert np.linalg.norm(sgd.w - w_star) <= cert.distance_bound + 1e-6


def test_certificate_of_a_bare_w_is_tight():
    """The gap of a bare ``w`` is its suboptimality ``P(w) - P*`` (at least ``P(w) - P`` of
    the certified solution) to 1%, however it was found: the problem's own solution's dual point
    is tried; the dual point of ``w``'s own most violated outputs alone is many times looser."""
    X, Y = tiny_chains(5)
    f = StructuralSVM(ChainModel(4, 3), X, Y, C=1.0)
    best = f.solve().certificate.primal_objective
    for w in (
        f.solve(method="subgradient", epochs=3, random_state=0).w,
        f.solve(tol=1e-2).w,
    ):
        cert = f.certify(w)
        excess = cert.primal_objective - best
        assert 0 < excess and cert.gap <= 1.01 * excess
        own = f.certify(w, reference=False)
        assert own.primal_objective == cert.primal_objective and own.gap > 2 * excess


def test_certificate_recomputes_the_bound_from_the_raw_data():
    X, Y = tiny_chains(6)
    f = StructuralSVM(ChainModel(4, 3), X, Y, C=1.0)
    sol = f.solve()
    optimum = sol.objective
    planes = sol.info["constraints"]
    # too much weight: the verifier reports it and projects before bounding
    scaled = f.certify(StructuralCandidate(w=sol.w, alpha=10 * sol.alpha, planes=planes))
    assert scaled.dual_infeasibility > 0
    assert scaled.dual_objective <= optimum + 1e-9
    # planes whose outputs were tampered with: the bound is recomputed from the outputs
    shuffled = [CuttingPlane(p.examples, tuple(o[::-1] for o in p.outputs)) for p in planes]
    tampered = f.certify(StructuralCandidate(w=sol.w, alpha=sol.alpha, planes=shuffled))
    assert tampered.dual_objective <= optimum + 1e-9
    # a solution whose stored objective lies: the certificate recomputes P from the data
    sol.objective = optimum - 1.0
    assert f.certify(sol).primal_objective == pytest.approx(optimum, rel=1e-12)


def test_certificate_of_solution_reports_violation_and_distance():
    X, Y = tiny_chains(7)
    f = StructuralSVM(ChainModel(4, 3), X, Y, C=1.0)
    loose = f.solve(tol=1e-2)
    cert = f.certify(loose, tol=1e-2)
    assert cert.passed and cert.max_violation >= 0
    assert cert.distance_bound == pytest.approx(math.sqrt(2 * cert.gap))
    assert cert.stationarity <= 1e-9, "w is the expansion of the working-set multipliers"
    assert np.allclose(loose.xi, f.slacks(loose.w)), "xi are the true slacks"
    assert loose.objective == pytest.approx(f.objective(loose.w), rel=1e-12)


def test_second_certificate_reuses_the_pairs_and_is_identical(monkeypatch):
    """The pairs, joint features and rows of a dual point are built once per problem
    (:func:`qpsvm.verify.structural.side_of`): a second ``certify`` of the same solution builds
    joint features only at ``w`` (those a bare ``w`` needs: the inference's, and every output
    where the certificate is rigorous) and
    returns the same floats; other multipliers, or the same planes at another ``C`` (the
    projection depends on ``C``), get the certificate of a fresh problem."""
    X, Y = tiny_chains(7)
    f = StructuralSVM(ChainModel(4, 3), X, Y, C=1.0)
    sol = f.solve()
    first = f.certify(sol, reference=False)
    calls = []
    joint_rows = StructuralSVM.joint_rows

    def counted(self, examples, outputs):
        calls.append(len(outputs))
        return joint_rows(self, examples, outputs)

    monkeypatch.setattr(StructuralSVM, "joint_rows", counted)
    second = f.certify(sol, reference=False)
    rebuilt = list(calls)
    calls.clear()
    f.certify(sol.w, reference=False)
    assert rebuilt == calls, "only the joint features at w are rebuilt, as for a bare w"
    same(second, first)
    scaled = StructuralCandidate(w=sol.w, alpha=10 * sol.alpha, planes=sol.info["constraints"])
    fresh = StructuralSVM(ChainModel(4, 3), X, Y, C=1.0)
    same(f.certify(scaled, reference=False), fresh.certify(scaled, reference=False))
    fresh = StructuralSVM(ChainModel(4, 3), X, Y, C=0.1)
    same(f.with_C(0.1).certify(sol, reference=False), fresh.certify(sol, reference=False))


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    chunk=st.integers(1, 9),
    rescaling=st.sampled_from(["margin", "slack"]),
)
def test_pair_rows_are_the_differences_of_the_joint_rows_to_the_bit(seed, chunk, rescaling):
    """``pair_rows`` from the model's dense joint features gives the same CSR arrays as from
    the sparse ``joint_rows`` (chunk by chunk, a chunk as small as one pair): both equal the
    difference of the model's own ``joint_feature`` (scaled by the loss under slack
    rescaling) entry by entry, and a pair of the ground truth has an empty row."""
    X, Y = tiny_chains(seed, n=8)
    f = StructuralSVM(ChainModel(4, 3), X, Y, C=1.0, rescaling=rescaling)
    rng = np.random.default_rng(seed)
    examples = rng.integers(0, 8, size=11)
    outputs = f.oracle(rng.normal(size=f.n_features), examples=examples)
    outputs[0] = Y[examples[0]]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(qpsvm.formulations.structural, "CHUNK", chunk)
        A, c = f.pair_rows(examples, outputs)
        B, d = f.pair_rows(examples, outputs, f.joint_rows(examples, outputs))
    for name in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(A, name), getattr(B, name)), name
    assert np.array_equal(c, d) and A.indptr[1] == 0, "the ground truth's row is empty"
    model = f.model
    delta = [
        model.joint_feature(X[i], Y[i]) - model.joint_feature(X[i], y)
        for i, y in zip(examples, outputs, strict=True)
    ]
    scale = c[:, None] if rescaling == "slack" else 1.0
    assert np.array_equal(A.toarray(), scale * np.array(delta))


def same(a, b) -> None:
    """Two certificates with the same floats: ``[D, P]``, the infeasibilities and ``alpha``."""
    fields = ("primal_objective", "dual_objective", "dual_infeasibility", "complementarity")
    assert [getattr(a, k) for k in fields] == [getattr(b, k) for k in fields]
    assert np.array_equal(a.alpha, b.alpha)


# ------------------------------------------------------------ solution and history
def test_solution_fields_history_and_logging(caplog):
    X, Y = tiny_chains(8)
    f = StructuralSVM(ChainModel(4, 3), X, Y, C=1.0)
    with caplog.at_level(logging.INFO, logger="qpsvm"):
        sol = f.solve(progress=True)
    assert sol.b == 0.0 and sol.method == "cutting_plane" and sol.w.shape == (f.n_features,)
    assert len(sol.alpha) == len(sol.info["constraints"]) == sol.info["working_set"]
    assert np.all(sol.alpha >= 0)
    h = sol.history
    assert len(h) == sol.n_iter + 1 and np.all(np.diff(h.iteration) == 1)
    assert np.all(h.gap >= 0) and h.gap[-1] <= TOL * max(1.0, h.objective[-1])
    assert sum("cutting plane round" in r.message for r in caplog.records) == len(h)


def test_max_iter_returns_an_uncertified_point_with_a_warning(caplog):
    data = make_chains(n_sequences=20, mean_length=5, n_features=6, n_states=4, random_state=9)
    f = StructuralSVM(ChainModel(6, 4), data.X, data.Y, C=1.0)
    with caplog.at_level(logging.WARNING, logger="qpsvm"):
        sol = f.solve(max_iter=2)
    assert sol.status == "max_iter" and not sol.certificate.passed
    assert any("max_iter" in r.message for r in caplog.records)


def test_C_is_a_parameter_of_the_built_problem():
    X, Y = tiny_chains(10)
    f = StructuralSVM(ChainModel(4, 3), X, Y, C=1.0)
    model = f.full_model
    model.parameters["C"].value = 3.0
    model.problem.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    other = StructuralSVM(ChainModel(4, 3), X, Y, C=3.0).solve()
    assert model.problem.value == pytest.approx(other.objective, rel=1e-8), (
        "re-solving the compiled problem with the new C equals a new formulation"
    )


def test_path_reuses_the_compiled_problem_and_matches_single_solves():
    X, Y = tiny_chains(15)
    f = StructuralSVM(ChainModel(4, 3), X, Y)
    path = f.path([0.1, 1.0, 10.0])
    for sol in path:
        single = StructuralSVM(ChainModel(4, 3), X, Y, C=sol.info["C"]).solve()
        agree(sol, single)


def test_structural_C_conversion():
    X, Y = tiny_chains(11)
    f = StructuralSVM(ChainModel(4, 3), X, Y, C=C_from_structural(8.0, len(X)))
    assert f.C == pytest.approx(1.0), "the lectures' C' = 8 over n = 8 examples is C = 1"


# ------------------------------------------------------------------ subgradient
@pytest.mark.parametrize(
    "options",
    [
        {"step": "pegasos"},
        {"step": "pegasos", "average": True},
        {"step": "sqrt", "eta0": 0.1, "batch_size": 4},
        {"step": lambda t: 0.05 / np.sqrt(t)},
    ],
)
def test_subgradient_never_beats_the_certified_optimum(options):
    X, Y = tiny_chains(12)
    f = StructuralSVM(ChainModel(4, 3), X, Y, C=1.0)
    exact = f.solve()
    sgd = f.solve(method="subgradient", epochs=5, random_state=1, **options)
    assert sgd.status == "max_epochs" and sgd.alpha is None
    assert sgd.objective >= exact.objective - exact.certificate.gap - 1e-12, (
        "no point has an objective below the certified lower bound"
    )
    assert len(sgd.history) == 5
    comparison = f.compare(sgd, exact)
    assert comparison.suboptimality >= -exact.certificate.gap - 1e-12
    assert comparison.distance <= comparison.distance_bound + exact.certificate.distance_bound


def test_subgradient_is_reproducible_and_converges():
    X, Y = tiny_chains(13)
    f = StructuralSVM(ChainModel(4, 3), X, Y, C=1.0)
    a = f.solve(method="subgradient", epochs=3, random_state=7)
    b = f.solve(method="subgradient", epochs=3, random_state=7)
    assert np.array_equal(a.w, b.w), "same seed, same run"
    long = f.solve(method="subgradient", epochs=60, random_state=0, average=True)
    optimum = f.solve().objective
    assert long.objective - optimum <= 0.05 * optimum, "averaged Pegasos approaches P*"


# -------------------------------------------------------------------- bad input
class ShortFeatures(MulticlassModel):
    """A user model whose joint feature map has the wrong length."""

    def joint_feature(self, x, y):
        return super().joint_feature(x, y)[:-1]


def test_bad_inputs_raise_typed_errors():
    X, Y = tiny_chains(14)
    model = ChainModel(4, 3)
    with pytest.raises(InvalidInputError, match=r"ShortFeatures\.joint_feature returned shape"):
        StructuralSVM(ShortFeatures(2, 3), np.eye(2)[[0, 1, 0]], [0, 1, 2])
    with pytest.raises(InvalidInputError, match="Y has"):
        StructuralSVM(model, X, Y[:-1])
    with pytest.raises(InvalidInputError, match="C must be"):
        StructuralSVM(model, X, Y, C=0.0)
    with pytest.raises(InvalidInputError, match="C must be"):
        StructuralSVM(model, X, Y, C=-1.0)
    with pytest.raises(InvalidTypeError):
        StructuralSVM(model, X, Y, C="big")
    with pytest.raises(InvalidInputError, match="unknown rescaling"):
        StructuralSVM(model, X, Y, rescaling="additive")
    with pytest.raises(InvalidTypeError, match="JointFeatureModel"):
        StructuralSVM(object(), X, Y)
    f = StructuralSVM(model, X, Y)
    with pytest.raises(InvalidInputError, match="unknown variant"):
        f.solve(variant="two_slack")
    with pytest.raises(InvalidInputError, match="unknown method"):
        f.solve(method="bundle")
    with pytest.raises(InvalidInputError, match="not supported by StructuralSVM"):
        f.solve(method="smo")
    with pytest.raises(InvalidInputError, match="no intercept"):
        f.certify(w=np.zeros(f.n_features), b=1.0)
    with pytest.raises(InvalidInputError, match="cutting planes are needed"):
        f.certify(alpha=np.zeros(3))
    with pytest.raises(InvalidInputError, match="shape"):
        f.certify(w=np.zeros(3))
    big = make_chains(n_sequences=3, mean_length=8, n_features=4, n_states=5, random_state=0)
    with pytest.raises(InvalidInputError, match="only for tiny problems"):
        StructuralSVM(ChainModel(4, 5), big.X, big.Y).solve(method="full")
    with pytest.raises(InvalidInputError, match="uses no CVXPY solver"):
        f.solve(method="subgradient", solver="CLARABEL")


# ------------------------------------------------------------------------ data set
def test_make_chains_is_deterministic_and_ocr_sized():
    a, b = make_chains(random_state=3), make_chains(random_state=3)
    assert all(np.array_equal(x, y) for x, y in zip(a.X, b.X, strict=True))
    assert all(np.array_equal(x, y) for x, y in zip(a.Y, b.Y, strict=True))
    assert len(a.X) == 700 and a.n_features == 128 and a.n_states == 26
    lengths = np.array([len(y) for y in a.Y])
    assert 7 <= lengths.mean() <= 9 and lengths.min() >= 3, "about 8 positions, varying"
    assert np.allclose(a.transition.sum(axis=1), 1.0), "rows of a Markov chain"
    assert set(np.unique(np.concatenate(a.X))) <= {0.0, 1.0}, "binary pixels"
    c = make_chains(random_state=4)
    assert not np.array_equal(a.X[0], c.X[0])
    with pytest.raises(InvalidInputError):
        make_chains(noise=0.7)

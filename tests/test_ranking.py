"""The ranking SVM: pairs, its identity with the binary SVM on differences, certificates, metrics
and LETOR files."""

from __future__ import annotations

import io
import warnings

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import ranking_problem
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import ndcg_score
from sklearn.svm import LinearSVC

import qpsvm
from qpsvm.conventions import C_from_pair_svm
from qpsvm.datasets.letor import load_letor
from qpsvm.formulations.ranking import PairDifferences, make_pairs
from qpsvm.metrics import kendall_tau, ndcg_at_k, pairwise_accuracy


@pytest.fixture(scope="module")
def solved():
    X, y, groups = ranking_problem(0)
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=0.5)
    return f, f.solve(method="qp")


def test_default_method_reaches_the_same_certified_optimum(solved):
    f, sol = solved
    default = f.solve()
    assert default.certificate.passed
    assert default.objective == pytest.approx(sol.objective, rel=1e-9)


# ------------------------------------------------------------------------- pairs
@settings(max_examples=40, deadline=None)
@given(
    y=st.lists(st.integers(0, 3), min_size=2, max_size=25),
    n_groups=st.integers(1, 4),
    seed=st.integers(0, 1000),
)
def test_group_pairs_are_exactly_the_ordered_pairs(y, n_groups, seed):
    # the definition: (i, j) for i, j in the same group with y_i > y_j, nothing else, once each
    y = np.array(y)
    groups = np.random.default_rng(seed).choice(["q1", "q2", "q3", "q4"][:n_groups], len(y))
    expected = {
        (i, j)
        for i in range(len(y))
        for j in range(len(y))
        if groups[i] == groups[j] and y[i] > y[j]
    }
    if not expected:
        with pytest.raises(qpsvm.InvalidInputError, match="no pair"):
            make_pairs(y, groups)
        return
    pairs = make_pairs(y, groups)
    assert set(map(tuple, pairs.tolist())) == expected
    assert len(pairs) == len(expected)


def test_pairs_without_groups_use_one_group():
    # float relevance, one group: 3 > 2 > 1 gives the three ordered pairs, sorted by (i, j)
    pairs = make_pairs([2.0, 3.0, 1.0])
    assert pairs.tolist() == [[0, 2], [1, 0], [1, 2]]


# ------------------------------------------------------ identity with the binary SVM
def test_explicit_pairs_equal_binary_svm_on_differences():
    # each pair (z_p, +1), under any sign flip s_p, is the same constraint s_p w.(s_p z_p) >= 1,
    # so the binary SVM without intercept has the same optimum
    X, y, groups = ranking_problem(1)
    pairs = make_pairs(y, groups)
    f = qpsvm.RankingSVM(X, pairs=pairs, C=0.3)
    sol = f.solve()
    Z = X[pairs[:, 0]] - X[pairs[:, 1]]
    sign = np.where(np.random.default_rng(0).random(len(Z)) < 0.5, -1.0, 1.0)
    b = qpsvm.SoftMarginPrimal(Z * sign[:, None], sign, C=0.3, fit_intercept=False).solve()
    assert sol.objective == pytest.approx(b.objective, rel=1e-9)
    np.testing.assert_allclose(sol.w, b.w, atol=1e-8)
    # the mirrored data set counts each hinge twice: the binary C is half the ranking C
    mirrored = qpsvm.SoftMarginPrimal(
        np.vstack([Z, -Z]), np.r_[np.ones(len(Z)), -np.ones(len(Z))], C=0.15, fit_intercept=False
    ).solve()
    assert C_from_pair_svm(0.15) == 0.3
    np.testing.assert_allclose(sol.w, mirrored.w, atol=1e-8)


def test_liblinear_on_pair_differences_is_certified(solved):
    # LinearSVC(loss="hinge") on mirrored differences solves the same problem with C/2; its
    # answer is near the optimum and the certificate's gap bounds its true suboptimality
    f, sol = solved
    Z = f.X.materialize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = LinearSVC(loss="hinge", fit_intercept=False, C=f.C / 2, tol=1e-10, max_iter=200_000)
        est.fit(np.vstack([Z, -Z]), np.r_[np.ones(len(Z)), -np.ones(len(Z))])
    cert = f.certify(est)
    true_sub = cert.primal_objective - sol.objective
    assert cert.gap >= true_sub - 1e-9 * sol.objective
    assert cert.relative_gap <= 1e-4
    assert np.linalg.norm(est.coef_.ravel() - sol.w) <= cert.distance_bound + 1e-6


def test_sparse_items_give_the_same_optimum(solved):
    f, sol = solved
    g = qpsvm.RankingSVM(sp.csr_matrix(f.items), pairs=f.pairs, C=f.C)
    s = g.solve()
    assert s.objective == pytest.approx(sol.objective, rel=1e-9)
    np.testing.assert_allclose(s.w, sol.w, atol=1e-8)
    assert g.certify(sol).passed


def test_pair_weight_equals_repeating_the_pair():
    # DESIGN: replicating a constraint k times equals weight s = k
    X, y, groups = ranking_problem(2)
    pairs = make_pairs(y, groups)
    weight = np.ones(len(pairs))
    weight[::3] = 2.0
    a = qpsvm.RankingSVM(X, pairs=pairs, C=0.7, pair_weight=weight).solve()
    b = qpsvm.RankingSVM(X, pairs=np.vstack([pairs, pairs[::3]]), C=0.7).solve()
    assert a.objective == pytest.approx(b.objective, rel=1e-9)
    np.testing.assert_allclose(a.w, b.w, atol=1e-8)


def test_memory_is_items_plus_pairs():
    # the model never holds the n_pairs x n_features differences: the constraint matrix has
    # nnz(X) entries for the scores plus a few per pair
    X, y, groups = ranking_problem(0, n_queries=4, per_query=30, d=10)
    f = qpsvm.RankingSVM(X, y=y, groups=groups)
    assert isinstance(f.X, PairDifferences)
    A = f.problem.get_problem_data(cp.CLARABEL)[0]["A"]
    n_items, d = f.items.shape
    assert A.nnz <= n_items * d + n_items + 4 * f.n_pairs
    assert A.nnz < f.n_pairs * d


def test_operator_matches_the_formed_differences(solved):
    f, _ = solved
    Z = f.X.materialize()
    rng = np.random.default_rng(0)
    v, u = rng.normal(size=f.n_features), rng.normal(size=f.n_pairs)
    np.testing.assert_allclose(f.X @ v, Z @ v, atol=1e-12)
    np.testing.assert_allclose(f.X.T @ u, Z.T @ u, atol=1e-12)
    np.testing.assert_allclose(f.X.rmatvec(u[:5], np.arange(5)), Z[:5].T @ u[:5], atol=1e-12)
    np.testing.assert_allclose(f.X[[3, 1]], Z[[3, 1]])
    np.testing.assert_allclose(f.gram_rows(np.array([0, 2])), Z[[0, 2]] @ Z.T, atol=1e-12)
    block = f.gram_block(np.array([0, 2]), np.array([4, 0, 1]))
    np.testing.assert_allclose(block, Z[[0, 2]] @ Z[[4, 0, 1]].T, atol=1e-12)


def test_working_set_model_reproduces_the_optimum(solved):
    # KKT: with the pairs at their bound folded in (alpha = C s) and the pairs beyond the margin
    # dropped, the model over the margin pairs has the same optimum w
    f, sol = solved
    r = f.X @ sol.w - 1.0
    on, bound = np.flatnonzero(np.abs(r) <= 1e-6), np.flatnonzero(r < -1e-6)
    model = f.build(subset=on, at_bound=bound)
    model.problem.solve(solver="CLARABEL")
    np.testing.assert_allclose(model.variables["w"].value, sol.w, atol=1e-6)
    cand = f.read_model(model)
    assert cand.alpha.shape == (f.n_pairs,) and np.all(cand.alpha[bound] == 0)


def test_path_equals_separate_solves(solved):
    # the path reuses one compiled problem (C is a parameter); each point is the optimum at its C
    f, _ = solved
    path = f.path([0.1, 2.0], method="qp")
    for sol, C in zip(path, [0.1, 2.0], strict=True):
        assert sol.certificate.passed
        exact = qpsvm.RankingSVM(f.items, pairs=f.pairs, C=C).solve(method="qp").objective
        assert sol.objective == pytest.approx(exact, rel=1e-9)


# ------------------------------------------------------------------------ certificates
def test_certificate_accepts_the_optimum_from_every_entry_point(solved):
    f, sol = solved
    for cert in (f.certify(sol), f.certify(w=sol.w), f.certify(alpha=sol.alpha)):
        assert cert.passed and cert.relative_gap <= 1e-9
    assert sol.w.shape == (f.n_features,) and sol.xi.shape == (f.n_pairs,)
    assert sol.b == 0.0


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), C=st.floats(0.05, 20.0), eps=st.floats(1e-5, 1e-1))
def test_gap_bounds_true_suboptimality_and_rejects_perturbations(seed, C, eps):
    # weak duality: P(w) - D(alpha) >= P(w) - P*; a perturbation of size >= 1e-5 is not optimal
    X, y, groups = ranking_problem(seed, n_queries=3, per_query=6, d=3)
    if len(np.unique(y)) < 2:
        return
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=C)
    sol = f.solve()
    assert f.certify(sol).passed
    w = sol.w + eps * np.random.default_rng(seed).normal(size=sol.w.shape)
    cert = f.certify(w=w)
    true_sub = f.objective(w) - sol.objective
    assert cert.gap >= true_sub - 1e-9 * max(1.0, sol.objective)
    assert cert.distance_bound >= np.linalg.norm(w - sol.w) - 1e-9
    if true_sub > 1e-8 * max(1.0, sol.objective):
        assert not cert.passed


def test_certificate_rejects_an_intercept_and_scaled_duals(solved):
    f, sol = solved
    with pytest.raises(qpsvm.InvalidInputError, match="no intercept"):
        f.certify(w=sol.w, b=0.5)
    assert not f.certify(alpha=0.9 * sol.alpha).passed


# --------------------------------------------------------------- the lectures' examples
def test_terrain_patches_from_pairwise_judgements():
    # judges prefer patches with lower cost = slope + 2 roughness; the preferences are
    # separable with margin, so with a large C every judged pair is ranked correctly
    rng = np.random.default_rng(3)
    patches = rng.uniform(0, 1, size=(30, 2))
    cost = patches @ np.array([1.0, 2.0])
    a, b = rng.integers(0, 30, size=(2, 200))
    keep = np.abs(cost[a] - cost[b]) > 0.1
    judged = np.where((cost[a] < cost[b])[:, None], np.c_[a, b], np.c_[b, a])[keep]
    f = qpsvm.RankingSVM(patches, pairs=judged, C=1e3)
    sol = f.solve()
    assert f.certify(sol).passed
    assert pairwise_accuracy(None, f.decision_function(patches, sol), pairs=judged) == 1.0
    # the learnt utility points against the cost: w ~ -(1, 2) up to scale
    direction = sol.w / np.linalg.norm(sol.w)
    assert direction @ (-np.array([1.0, 2.0]) / np.sqrt(5)) > 0.99


def test_game_outcomes_between_teams():
    # teams described by features; the stronger team (by the hidden linear strength x.(1, 1/2):
    # 3.5, 2, 2.25, 0.25, 3.75, all distinct) wins every game of a full round robin; a large C
    # gives the hard-margin ranker, whose scores order the teams as the strengths do
    teams = np.array([[3.0, 1.0], [1.0, 2.0], [2.0, 0.5], [0.0, 0.5], [2.5, 2.5]])
    strength = teams @ np.array([1.0, 0.5])
    games = [(i, j) for i in range(5) for j in range(5) if strength[i] > strength[j]]
    f = qpsvm.RankingSVM(teams, pairs=games, C=100.0)
    sol = f.solve()
    assert f.certify(sol).passed
    assert np.argsort(-f.predict(teams, sol)).tolist() == np.argsort(-strength).tolist()


# -------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"pairs": [[0, 9]]}, qpsvm.InvalidInputError, "out of range"),
        ({"pairs": [[-1, 2]]}, qpsvm.InvalidInputError, "out of range"),
        ({"pairs": [[1, 1], [0, 2]]}, qpsvm.InvalidInputError, "itself"),
        ({"pairs": [0, 1]}, qpsvm.InvalidInputError, "shape"),
        ({"pairs": [[0, 1, 2]]}, qpsvm.InvalidInputError, "shape"),
        ({"pairs": np.zeros((0, 2), dtype=int)}, qpsvm.InvalidInputError, "empty"),
        ({"pairs": [[0.5, 1.0]]}, qpsvm.InvalidTypeError, "integer"),
        ({"pairs": [["a", "b"]]}, qpsvm.InvalidTypeError, "integer"),
        ({"y": [1, 1, 1, 1]}, qpsvm.InvalidInputError, "no pair"),
        ({"y": [0, 1, 0, 1], "groups": [1, 2, 3, 4]}, qpsvm.InvalidInputError, "no pair"),
        ({"y": [0, 1, 2]}, qpsvm.InvalidInputError, "match"),
        ({"y": [0, 1, 2, 3], "groups": [1, 1]}, qpsvm.InvalidInputError, "groups"),
        ({"y": [0, 1, np.nan, 3]}, qpsvm.InvalidInputError, "NaN"),
        ({"pairs": [[0, 1]], "y": [0, 1, 2, 3]}, qpsvm.InvalidInputError, "not both"),
        ({}, qpsvm.InvalidInputError, "no preferences"),
        ({"groups": [1, 1, 2, 2]}, qpsvm.InvalidInputError, "needs relevance"),
        ({"pairs": [[0, 1]], "pair_weight": [-1.0]}, qpsvm.InvalidInputError, "non-negative"),
        ({"pairs": [[0, 1]], "pair_weight": [1.0, 2.0]}, qpsvm.InvalidInputError, "1 pairs"),
        ({"pairs": [[0, 1]], "C": 0.0}, qpsvm.InvalidInputError, "C"),
    ],
)
def test_bad_input_is_a_typed_error(kwargs, error, match):
    X = np.arange(8.0).reshape(4, 2)
    with pytest.raises(error, match=match):
        qpsvm.RankingSVM(X, **kwargs)


def test_errors_subclass_builtin_exceptions():
    with pytest.raises(ValueError):
        qpsvm.RankingSVM(np.eye(3), pairs=[[0, 5]])
    with pytest.raises(TypeError):
        qpsvm.RankingSVM(np.eye(3), pairs=[[0.5, 1]])


# ------------------------------------------------------------------------------ metrics
def test_pairwise_accuracy_counts_ordered_pairs_and_half_ties():
    # y gives the pairs (1,0), (2,0), (2,1); items 0 and 1 tie, so (1,0) counts 1/2 and the
    # two pairs with item 2 count 1 each when it scores highest, 0 when it scores lowest
    y = [0, 1, 2]
    assert pairwise_accuracy(y, [0.3, 0.3, 0.35]) == pytest.approx((0.5 + 1.0 + 1.0) / 3)
    assert pairwise_accuracy(y, [0.3, 0.3, 0.1]) == pytest.approx(0.5 / 3)
    assert pairwise_accuracy(None, [1.0, 0.0], pairs=[[0, 1], [1, 0]]) == 0.5
    assert pairwise_accuracy(None, [1.0, 0.0], pairs=[[0, 1], [1, 0]], pair_weight=[3, 1]) == 0.75
    with pytest.raises(qpsvm.InvalidInputError):
        pairwise_accuracy(None, [1.0, 0.0])


def test_kendall_tau_per_group_matches_scipy():
    rng = np.random.default_rng(0)
    y, groups = rng.integers(0, 3, 30), np.repeat([7, 3, 5], 10)
    scores = y + rng.normal(size=30)
    taus = kendall_tau(y, scores, groups)
    for value, g in zip(taus, [3, 5, 7], strict=True):
        idx = groups == g
        assert value == pytest.approx(kendalltau(y[idx], scores[idx]).statistic, rel=1e-12)
    # a constant group has no tau
    assert np.isnan(kendall_tau([1, 1, 2], [0.1, 0.2, 0.3], [0, 0, 1])).all()


@pytest.mark.parametrize("k", [1, 3, 10])
def test_ndcg_matches_scikit_learn(k):
    # equal-sized groups are the rows of sklearn's 2-D ndcg_score; exponential gain is linear
    # gain on 2^y - 1; tied scores average their gains in both
    rng = np.random.default_rng(k)
    y = rng.integers(0, 4, size=(5, 8))
    y[:, 0] = 1  # every group has a relevant item (sklearn would count the others as 0)
    scores = np.round(rng.normal(size=(5, 8)), 1)
    groups = np.repeat(np.arange(5), 8)
    ours = ndcg_at_k(y.ravel(), scores.ravel(), groups, k=k, gain="linear")
    assert ours == pytest.approx(ndcg_score(y, scores, k=k), rel=1e-12)
    ours = ndcg_at_k(y.ravel(), scores.ravel(), groups, k=k)
    assert ours == pytest.approx(ndcg_score(2.0**y - 1, scores, k=k), rel=1e-12)


def test_ndcg_bad_input():
    with pytest.raises(qpsvm.InvalidInputError, match="no group"):
        ndcg_at_k([0, 0], [1.0, 2.0])
    with pytest.raises(qpsvm.InvalidInputError, match="at least 1"):
        ndcg_at_k([0, 1], [1.0, 2.0], k=0)
    with pytest.raises(qpsvm.InvalidInputError, match="non-negative"):
        ndcg_at_k([-1, 1], [1.0, 2.0])


def test_fitted_ranker_beats_random_scores(solved):
    # a sanity bound, not a precise number: the fitted scores order most training pairs
    f, sol = solved
    X, y, groups = ranking_problem(0)
    scores = f.decision_function(X, sol)
    assert pairwise_accuracy(y, scores, groups) > 0.8
    assert ndcg_at_k(y, scores, groups, k=5) > ndcg_at_k(y, -scores, groups, k=5)


# -------------------------------------------------------------------------- LETOR files
LETOR = b"""2 qid:10 1:0.5 3:1.0 # doc a
0 qid:10 1:0.1 2:0.3
1 qid:10 2:1.0
1 qid:11 1:1 2:1 3:1
0 qid:11 3:2
"""


def test_letor_file_to_ranking_svm():
    data = load_letor(io.BytesIO(LETOR))
    X, y, groups = data
    assert X.shape == (5, 3) and sp.issparse(X)
    assert y.tolist() == [2, 0, 1, 1, 0] and groups.tolist() == [10, 10, 10, 11, 11]
    assert data.n_queries == 2
    np.testing.assert_array_equal(load_letor(io.BytesIO(LETOR), dense=True).X, X.toarray())
    f = qpsvm.RankingSVM(X, y=y, groups=groups)
    # query 10: 2 > 1 > 0 gives 3 pairs; query 11: 1 > 0 gives 1
    assert f.pairs.tolist() == [[0, 1], [0, 2], [2, 1], [3, 4]]
    assert f.certify(f.solve()).passed


def test_letor_bad_files(tmp_path):
    with pytest.raises(qpsvm.InvalidInputError, match="qid"):
        load_letor(io.BytesIO(b"1 qid:1 1:2\n0 1:1\n"))
    with pytest.raises(qpsvm.InvalidInputError, match="could not read"):
        load_letor(io.BytesIO(b"1 qid:1 1:x\n"))
    with pytest.raises(FileNotFoundError):
        load_letor(tmp_path / "missing.txt")

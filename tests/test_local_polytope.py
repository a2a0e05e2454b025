"""The local polytope: its LP, points exactly in it, dual bounds valid for any messages, and the
relaxed structural SVM certified with fractional cutting planes (Finley & Joachims, ICML 2008)."""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.models import GraphModel, MultiLabelModel
from qpsvm.models.local_polytope import (
    Marginals,
    dual_bound,
    maximise_local_polytope,
    maximise_relaxation,
    relaxed_score,
    snap_marginals,
)
from qpsvm.models.pairwise import energy

seeds = st.integers(0, 2**32 - 1)
TRIANGLE = np.array([[0, 1], [1, 2], [0, 2]])


def brute_max(unary, edges, pairwise):
    n_nodes, k = unary.shape
    return max(
        energy(unary, edges, pairwise, np.array(x))
        for x in itertools.product(range(k), repeat=n_nodes)
    )


def random_graph(rng, tree=False):
    n_nodes, k = int(rng.integers(3, 7)), int(rng.integers(2, 4))
    if tree:
        pairs = [(int(rng.integers(0, v)), v) for v in range(1, n_nodes)]
    else:
        pairs = [(u, v) for u, v in itertools.combinations(range(n_nodes), 2) if rng.random() < 0.7]
    edges = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    unary = rng.standard_normal((n_nodes, k))
    return unary, edges, 2.0 * rng.standard_normal((edges.shape[0], k, k))


# --------------------------------------------------------------------------- the LP
def test_frustrated_cycle_is_not_tight():
    """Three nodes that want to differ pairwise: a labelling satisfies two edges of three, the
    local polytope all three with every marginal 1/2 (exactly representable)."""
    pairwise = np.tile(np.array([[0.0, 1.0], [1.0, 0.0]]), (3, 1, 1))
    unary = np.zeros((3, 2))
    result = maximise_local_polytope(unary, TRIANGLE, pairwise)
    assert brute_max(unary, TRIANGLE, pairwise) == 2.0
    assert result.value == 3.0 == relaxed_score(unary, pairwise, result.marginals)
    np.testing.assert_array_equal(result.marginals.nodes, np.full((3, 2), 0.5))
    assert 3.0 <= result.bound <= 3.0 + 1e-14  # the dual bound, rounded up by a few ulps
    relaxed = maximise_relaxation(unary, TRIANGLE, pairwise)
    assert isinstance(relaxed.output, Marginals) and relaxed.bound == result.bound


@settings(max_examples=40, deadline=None)
@given(seeds, st.booleans())
def test_lp_point_is_in_the_polytope_and_meets_its_bound(seed, tree):
    """The snapped maximiser passes the exact membership check; its score is at most the bound,
    which is at least the best labelling's score and meets the score to LP accuracy (HiGHS's
    optimal duals make the dual bound tight). On trees the local polytope is the marginal
    polytope: the LP's value is the brute-force maximum."""
    unary, edges, pairwise = random_graph(np.random.default_rng(seed), tree)
    result = maximise_local_polytope(unary, edges, pairwise)
    k = unary.shape[1]
    result.marginals.check(edges, k, "test")
    best = brute_max(unary, edges, pairwise)
    scale = max(1.0, abs(best))
    assert result.value <= result.bound
    assert result.bound >= best
    assert result.bound - result.value <= 1e-9 * scale
    if tree:
        assert result.value == pytest.approx(best, abs=1e-9 * scale)


@settings(max_examples=40, deadline=None)
@given(seeds)
def test_dual_bound_holds_for_any_messages(seed):
    """B(delta) >= max over the local polytope >= max over labellings, whatever delta."""
    rng = np.random.default_rng(seed)
    unary, edges, pairwise = random_graph(rng)
    k = unary.shape[1]
    lp = maximise_local_polytope(unary, edges, pairwise)
    for scale in (0.0, 1.0, 100.0):
        to_tail = scale * rng.standard_normal((edges.shape[0], k))
        to_head = scale * rng.standard_normal((edges.shape[0], k))
        bound = dual_bound(unary, edges, pairwise, to_tail, to_head)
        assert bound >= lp.value  # lp.marginals is a point of the polytope
        assert bound >= brute_max(unary, edges, pairwise)


@settings(max_examples=40, deadline=None)
@given(seeds)
def test_snapping_lands_exactly_in_the_polytope(seed):
    """A point of the polytope (a mixture of labellings) perturbed by 1e-9 (a solver's
    feasibility error) snaps to a point that passes the exact check, within 1e-8 of it."""
    rng = np.random.default_rng(seed)
    unary, edges, _ = random_graph(rng)
    n_nodes, k = unary.shape
    vertices = [Marginals.of_labels(rng.integers(0, k, n_nodes), edges, k) for _ in range(3)]
    weights = rng.dirichlet(np.ones(3))
    nodes = sum(wt * m.nodes for wt, m in zip(weights, vertices, strict=True))
    pair = sum(wt * m.edges for wt, m in zip(weights, vertices, strict=True))
    noisy_nodes = nodes + 1e-9 * rng.standard_normal(nodes.shape)
    noisy_pair = pair + 1e-9 * rng.standard_normal(pair.shape)
    snapped = snap_marginals(noisy_nodes, noisy_pair, edges).check(edges, k, "test")
    assert np.max(np.abs(snapped.nodes - nodes)) <= 1e-8
    assert np.max(np.abs(snapped.edges - pair)) <= 1e-8


def test_marginals_outside_the_polytope_are_refused():
    vertex = Marginals.of_labels(np.array([0, 1, 1]), TRIANGLE, 2)
    vertex.check(TRIANGLE, 2, "test")
    off_grid = Marginals(np.full((3, 2), 0.5) + np.array([1e-15, -1e-15]), vertex.edges)
    with pytest.raises(InvalidInputError, match="multiples"):
        off_grid.check(None, 2, "test")
    with pytest.raises(InvalidInputError, match="sum to 1"):
        Marginals(np.full((3, 2), 0.25), vertex.edges).check(None, 2, "test")
    inconsistent = Marginals(np.full((3, 2), 0.5), vertex.edges)
    with pytest.raises(InvalidInputError, match="consistency"):
        inconsistent.check(TRIANGLE, 2, "test")
    with pytest.raises(InvalidInputError, match="shape"):
        vertex.check(TRIANGLE[:2], 2, "test")
    model = GraphModel(2, 1)
    with pytest.raises(InvalidTypeError, match="labelling"):
        model.loss(vertex, np.array([0, 1, 1]))
    with pytest.raises(InvalidInputError, match="consistency"):
        model.joint_feature((np.ones((3, 1)), TRIANGLE), inconsistent)


# ---------------------------------------------------------------- linear extensions
@pytest.mark.parametrize(
    "model",
    [
        GraphModel(3, 2),
        GraphModel(3, 2, directed=True, class_weight=[1.0, 2.0, 0.5]),
        GraphModel(3, 2, n_edge_features=2),
        MultiLabelModel(3, 2, TRIANGLE, class_weight=[1.0, 3.0]),
    ],
    ids=["undirected", "directed", "edge-features", "multilabel"],
)
def test_joint_feature_and_loss_extend_linearly(model):
    """At a labelling's vertex Psi and Delta are the labelling's; at a mixture of vertices they
    are the mixture of theirs."""
    rng = np.random.default_rng(0)
    k = 2 if isinstance(model, MultiLabelModel) else 3
    if isinstance(model, MultiLabelModel):
        x = rng.standard_normal(2)
    elif model.n_edge_features:
        x = (rng.standard_normal((3, 2)), TRIANGLE, rng.standard_normal((3, 2)))
    else:
        x = (rng.standard_normal((3, 2)), TRIANGLE)
    truth = rng.integers(0, k, 3)
    labels = [rng.integers(0, k, 3) for _ in range(3)]
    vertices = [Marginals.of_labels(y, TRIANGLE, k) for y in labels]
    for y, vertex in zip(labels, vertices, strict=True):
        assert model.is_fractional(vertex) and not model.is_fractional(y)
        np.testing.assert_array_equal(model.joint_feature(x, vertex), model.joint_feature(x, y))
        assert model.loss(truth, vertex) == model.loss(truth, y)
    weights = (0.25, 0.25, 0.5)  # dyadic: the mixture is exactly on the grid
    mixture = Marginals(
        sum(wt * v.nodes for wt, v in zip(weights, vertices, strict=True)),
        sum(wt * v.edges for wt, v in zip(weights, vertices, strict=True)),
    )
    expected = sum(wt * model.joint_feature(x, y) for wt, y in zip(weights, labels, strict=True))
    np.testing.assert_allclose(model.joint_feature(x, mixture), expected, rtol=0, atol=1e-14)
    assert model.loss(truth, mixture) == pytest.approx(
        sum(wt * model.loss(truth, y) for wt, y in zip(weights, labels, strict=True)), abs=1e-14
    )
    w = rng.standard_normal(model.n_joint_features)
    (output,), (bound,) = model.loss_augmented_bounds_batch([x], [truth], w)
    # the relaxed oracle's bound plus the model's bound on its rounding is at least the exact
    # maximum of F(mu) = Delta(truth, mu) + w . Psi(x, mu) over the polytope
    # (models.Rounding.oracle), so at least F(output), which lies within the model's bounds on
    # the rounding of its float loss and joint feature of the float value; in fractions
    rounding = model.rounding([x], [truth], w)
    psi = model.joint_feature(x, output)
    value = F(model.loss(truth, output)) + sum(
        (F(a) * F(b) for a, b in zip(w, psi, strict=True)), F(0)
    )
    norm = F(float(np.nextafter(np.sqrt(w @ w), np.inf)))
    assert norm**2 >= sum((F(v) ** 2 for v in w), F(0))  # an upper bound on ||w||
    worst = value + F(rounding.loss[0]) + norm * F(rounding.feature[0])
    assert worst <= F(bound) + F(rounding.oracle[0])


# ------------------------------------------------------------ the relaxed structural SVM
def frustrated_triangles(n=6, noise=1.0, seed=0):
    """Triangles whose true labellings disagree on two edges of three (one node differs):
    the learned pairwise table is repulsive, which frustrates the cycle."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        y = np.array([0, 1, 0]) if rng.random() < 0.5 else np.array([1, 0, 1])
        y = y[rng.permutation(3)]
        feats = np.eye(2)[y] + noise * rng.standard_normal((3, 2))
        X.append((np.hstack([feats, np.ones((3, 1))]), TRIANGLE))
        Y.append(y)
    return X, Y


def layout(k):
    """The undirected table's parameters (upper triangle, row by row) of each entry (a, b)."""
    index = np.zeros((k, k), dtype=np.int64)
    rows, cols = np.triu_indices(k)
    index[rows, cols] = index[cols, rows] = np.arange(rows.size)
    L = np.zeros((k * k, rows.size))
    L[np.arange(k * k), index.ravel()] = 1.0
    return L


def joint_feature_reference(x, nodes, pair, L):
    """Psi of GraphModel(directed=False) from its definition: the unary block sums
    mu_v(s) x_v, the table entry of (a, b) sums mu_e(a, b) over the edges (CVXPY or numpy)."""
    unary = nodes.T @ x[0]
    if isinstance(nodes, np.ndarray):
        return np.concatenate([unary.ravel(), (pair.sum(axis=0) @ L).ravel()])
    return cp.hstack([cp.vec(unary, order="C"), cp.sum(pair, axis=0) @ L])


def relaxed_optimum_reference(X, Y, C, k):
    r"""The LP-relaxed structural SVM as one QP (its dual): marginals nu_i in the local polytope
    of each example,

    max_nu  C sum_i Delta(y_i, nu_i) - 1/2 || C sum_i (Psi(x_i, y_i) - Psi(x_i, nu_i)) ||^2,

    whose value is P*_relaxed by strong duality (each nu_i is the mixture of the planes of
    example i, the ground truth's share included; Psi and Delta are linear in nu)."""
    L = layout(k)
    total, gain, constraints = 0, 0, []
    for x, y in zip(X, Y, strict=True):
        n_nodes, edges = x[0].shape[0], x[1]
        nodes = cp.Variable((n_nodes, k), nonneg=True)
        pair = cp.Variable((edges.shape[0], k * k), nonneg=True)
        constraints.append(cp.sum(nodes, axis=1) == 1)
        for e, (u, v) in enumerate(edges):
            table = cp.reshape(pair[e], (k, k), order="C")
            constraints += [cp.sum(table, axis=1) == nodes[u], cp.sum(table, axis=0) == nodes[v]]
        truth = Marginals.of_labels(y, edges, k)
        psi_true = joint_feature_reference(x, truth.nodes, truth.edges.reshape(-1, k * k), L)
        total = total + psi_true - joint_feature_reference(x, nodes, pair, L)
        gain = gain + cp.sum(1 - cp.hstack([nodes[v, y[v]] for v in range(n_nodes)]))
    problem = cp.Problem(cp.Maximize(C * gain - 0.5 * cp.sum_squares(C * total)), constraints)
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    assert problem.status == "optimal"
    return problem.value


def exact_optimum_reference(model, X, Y, C, k):
    """The exact structural SVM with every labelling enumerated, as one primal QP."""
    w = cp.Variable(model.n_joint_features)
    xi = cp.Variable(len(X))
    constraints = [xi >= 0]
    for i, (x, y) in enumerate(zip(X, Y, strict=True)):
        psi_true = model.joint_feature(x, y)
        outputs = [np.array(o) for o in itertools.product(range(k), repeat=len(y))]
        A = np.array([psi_true - model.joint_feature(x, o) for o in outputs])
        c = np.array([model.loss(y, o) for o in outputs])
        constraints.append(xi[i] + A @ w >= c)
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * cp.sum(xi)), constraints)
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    assert problem.status == "optimal"
    return problem.value


LEARNERS = {
    "n-slack": {"method": "cutting_plane"},
    "1-slack": {"method": "cutting_plane", "variant": "one_slack"},
    "frank-wolfe": {"method": "frank_wolfe"},
}


@pytest.mark.parametrize("learner", list(LEARNERS))
@pytest.mark.parametrize("C", [1.0, 10.0])
def test_relaxed_optimum_is_certified_with_fractional_planes(learner, C):
    """On frustrated cycles the relaxation is not tight: the certificate encloses the relaxed
    optimum (fractional outputs carry weight in the dual point), which equals the relaxed
    problem solved directly and lies above the exact optimum."""
    X, Y = frustrated_triangles()
    model = GraphModel(2, 3)
    f = qpsvm.StructuralSVM(model, X, Y, C=C)
    sol = f.solve(**LEARNERS[learner])
    cert = sol.certificate
    assert sol.status == "optimal" and cert.passed and cert.relative_gap <= 1e-9
    assert sol.info["certified_problem"] == "relaxed"
    scale = max(1.0, abs(cert.primal_objective))
    relaxed = relaxed_optimum_reference(X, Y, C, 2)
    # the enclosure [D, P] holds the reference up to Clarabel's accuracy
    assert cert.dual_objective - 1e-8 * scale <= relaxed <= cert.primal_objective + 1e-8 * scale
    exact = exact_optimum_reference(model, X, Y, C, 2)
    assert exact <= cert.primal_objective + 1e-8 * scale
    # not tight: the integral dual points of the old certificate could not have closed the gap
    assert relaxed - exact >= 1e-3 * scale
    assert f.certify(sol).passed


def test_tight_relaxation_certifies_both_problems():
    """Attractive cycles: the relaxation is tight at the optimum, the dual point is made of
    labellings, and the enclosure holds the exact and the relaxed optimum alike."""
    rng = np.random.default_rng(1)
    X, Y = [], []
    for _ in range(6):
        y = np.full(3, int(rng.integers(0, 2)))
        y[int(rng.integers(0, 3))] ^= int(rng.random() < 0.3)
        feats = np.eye(2)[y] + 1.0 * rng.standard_normal((3, 2))
        X.append((np.hstack([feats, np.ones((3, 1))]), TRIANGLE))
        Y.append(y)
    model = GraphModel(2, 3)
    sol = qpsvm.StructuralSVM(model, X, Y, C=1.0).solve()
    assert sol.certificate.passed
    assert sol.info["certified_problem"] == "relaxed and exact"
    exact = exact_optimum_reference(model, X, Y, 1.0, 2)
    assert sol.certificate.dual_objective - 1e-8 <= exact <= sol.certificate.primal_objective + 1e-8

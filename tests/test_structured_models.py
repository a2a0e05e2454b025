"""Multi-label and graph models: oracles against brute force, the relaxation's bounds, and
certified training on generated problems."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.models import (
    ChainModel,
    GraphModel,
    MultiLabelModel,
    chow_liu_tree,
    grid_edges,
)
from qpsvm.models.pairwise import energy, forest_partition, is_forest, map_inference

seeds = st.integers(0, 2**32 - 1)


def brute_max(unary, edges, pairwise):
    n_nodes, k = unary.shape
    return max(
        energy(unary, edges, pairwise, np.array(x))
        for x in itertools.product(range(k), repeat=n_nodes)
    )


def random_forest(rng, n_nodes):
    """Edges of a random forest, each edge in a random direction."""
    edges = [
        (int(rng.integers(0, v)), v) if rng.random() < 0.5 else (v, int(rng.integers(0, v)))
        for v in range(1, n_nodes)
        if rng.random() < 0.85
    ]
    return np.array(edges, dtype=np.int64).reshape(-1, 2)


def random_potentials(rng, n_nodes, n_edges, k, scale=1.0):
    return rng.standard_normal((n_nodes, k)), scale * rng.standard_normal((n_edges, k, k))


# ------------------------------------------------------------------------ the engine
@settings(max_examples=40, deadline=None)
@given(seeds)
def test_max_product_equals_brute_force_on_forests(seed):
    rng = np.random.default_rng(seed)
    n_nodes, k = int(rng.integers(1, 8)), int(rng.integers(2, 4))
    edges = random_forest(rng, n_nodes)
    unary, pairwise = random_potentials(rng, n_nodes, edges.shape[0], k)
    result = map_inference(unary, edges, pairwise)
    best = brute_max(unary, edges, pairwise)
    assert result.exact
    # the maximiser's score, recomputed, is the brute-force maximum (same sums up to rounding)
    assert energy(unary, edges, pairwise, result.labels) == pytest.approx(best, abs=1e-12)
    assert result.bound == result.value


@settings(max_examples=40, deadline=None)
@given(seeds)
def test_relaxation_is_tight_on_trees(seed):
    """Dual decomposition of a tree split into several forests: the local polytope is the
    marginal polytope on trees, so the bound meets the exact maximum."""
    rng = np.random.default_rng(seed)
    n_nodes, k = int(rng.integers(3, 8)), int(rng.integers(2, 4))
    edges = np.array([(int(rng.integers(0, v)), v) for v in range(1, n_nodes)], dtype=np.int64)
    unary, pairwise = random_potentials(rng, n_nodes, edges.shape[0], k)
    groups = np.arange(edges.shape[0]) % 2  # two forests (n_nodes >= 3: two edges at least)
    relaxed = map_inference(unary, edges, pairwise, forests=groups)
    best = brute_max(unary, edges, pairwise)
    assert relaxed.value == pytest.approx(best, abs=1e-12)
    assert best - 1e-12 <= relaxed.bound <= best + 1e-9 * max(1.0, abs(best))


@settings(max_examples=40, deadline=None)
@given(seeds)
def test_relaxation_bounds_loopy_graphs(seed):
    rng = np.random.default_rng(seed)
    n_nodes, k = int(rng.integers(3, 7)), int(rng.integers(2, 4))
    pairs = [(u, v) for u, v in itertools.combinations(range(n_nodes), 2) if rng.random() < 0.6]
    edges = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    unary, pairwise = random_potentials(rng, n_nodes, edges.shape[0], k)
    result = map_inference(unary, edges, pairwise)
    best = brute_max(unary, edges, pairwise)
    assert result.value <= best + 1e-12  # a labelling's score
    assert result.bound >= best - 1e-12  # an upper bound on the maximum
    assert energy(unary, edges, pairwise, result.labels) == pytest.approx(result.value)
    if result.exact:
        assert result.value == pytest.approx(best, abs=1e-12)


def test_forest_partition_and_grid_edges():
    edges4 = grid_edges(3, 4)
    edges8 = grid_edges(3, 4, neighborhood=8)
    assert edges4.shape == (3 * 3 + 4 * 2, 2)  # h (w - 1) + w (h - 1)
    assert edges8.shape == (17 + 2 * 2 * 3, 2)  # plus 2 (h - 1)(w - 1) diagonals
    assert set(map(tuple, edges4)) <= set(map(tuple, edges8))
    assert (1, 5) in set(map(tuple, edges8)) and (1, 4) in set(map(tuple, edges8))
    assert not is_forest(12, edges4) and is_forest(4, grid_edges(1, 4))
    groups = forest_partition(12, edges4)
    for t in range(groups.max() + 1):
        assert is_forest(12, edges4[groups == t])
    with pytest.raises(InvalidInputError):
        grid_edges(3, 3, neighborhood=6)


# ---------------------------------------------------------------------- multi-label
def multilabel_data(rng, n=40, d=4, n_labels=5):
    X = rng.standard_normal((n, d))
    W = rng.standard_normal((n_labels, d))
    Y = (X @ W.T + 0.5 * rng.standard_normal((n, n_labels)) > 0).astype(np.int64)
    Y[:, 1] = Y[:, 0]  # a strongly dependent pair of labels
    return X, Y


@pytest.mark.parametrize("graph", ["independent", "tree", "full", "loopy"])
@settings(max_examples=25, deadline=None)
@given(seed=seeds)
def test_multilabel_oracles_equal_brute_force(graph, seed):
    rng = np.random.default_rng(seed)
    n_labels, d = 5, 3
    edges = {
        "independent": None,
        "tree": np.array([[0, 1], [1, 2], [1, 3], [4, 3]]),
        "full": "full",
        "loopy": np.array([[0, 1], [1, 2], [2, 0], [3, 4]]),
    }[graph]
    model = MultiLabelModel(n_labels, d, edges, class_weight=[1.0, 2.5])
    w = rng.standard_normal(model.n_joint_features)
    x, y = rng.standard_normal(d), rng.integers(0, 2, n_labels)
    outputs = list(model.enumerate_outputs(x))
    best = max(model.score(x, o, w) for o in outputs)
    best_aug = max(model.loss(y, o) + model.score(x, o, w) for o in outputs)
    (y_aug,), bounds = model.loss_augmented_bounds_batch([x], [y], w)
    value_aug = model.loss(y, y_aug) + model.score(x, y_aug, w)
    assert bounds[0] >= best_aug - 1e-9
    assert value_aug <= best_aug + 1e-9
    if model.exact_inference:
        assert model.score(x, model.inference(x, w), w) == pytest.approx(best, abs=1e-9)
        assert value_aug == pytest.approx(best_aug, abs=1e-9)
        assert bounds[0] == pytest.approx(best_aug, abs=1e-9)


def test_multilabel_full_graph_beyond_enumeration_is_relaxed():
    rng = np.random.default_rng(3)
    assert MultiLabelModel(16, 2, "full").exact_inference
    model = MultiLabelModel(18, 2, "full")
    assert not model.exact_inference
    w = rng.standard_normal(model.n_joint_features)
    x, y = rng.standard_normal(2), rng.integers(0, 2, 18)
    (y_aug,), bounds = model.loss_augmented_bounds_batch([x], [y], w)
    assert bounds[0] >= model.loss(y, y_aug) + model.score(x, y_aug, w) - 1e-9
    with pytest.raises(InvalidInputError, match="relaxed oracle"):
        qpsvm.StructuralSVM(model, [x], [y], rescaling="slack")


def test_chow_liu_tree_recovers_dependent_pairs():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 2, 500), rng.integers(0, 2, 500)
    noisy = a ^ (rng.random(500) < 0.1)
    Y = np.stack([a, noisy, b, b, rng.integers(0, 2, 500)], axis=1)
    edges = chow_liu_tree(Y)
    assert edges.shape == (4, 2) and is_forest(5, edges)  # a spanning tree
    pairs = {tuple(sorted(e)) for e in edges.tolist()}
    assert (0, 1) in pairs and (2, 3) in pairs
    with pytest.raises(InvalidInputError):
        chow_liu_tree(np.zeros((3, 1), dtype=int))
    with pytest.raises(InvalidTypeError):
        chow_liu_tree(np.zeros((3, 2)))


@pytest.mark.parametrize("edges", [None, "tree", "full", "loopy"])
def test_multilabel_training_is_certified(edges):
    """Exact oracles, and a label graph with a cycle (the relaxation; tight here, so the
    certificate of the relaxed problem closes)."""
    rng = np.random.default_rng(1)
    X, Y = multilabel_data(rng)
    graph = {"tree": chow_liu_tree(Y), "loopy": np.array([[0, 1], [1, 2], [2, 0], [3, 4]])}.get(
        edges, edges
    )
    model = MultiLabelModel(Y.shape[1], X.shape[1], graph)
    assert model.exact_inference == (edges != "loopy")
    f = qpsvm.StructuralSVM(model, X, Y, C=1.0)
    sol = f.solve()
    assert sol.certificate.passed and sol.certificate.relative_gap <= 1e-9
    # the tree and the full graph contain the independent model (edge tables 0), so their
    # optima are no worse
    if edges is not None:
        independent = qpsvm.StructuralSVM(MultiLabelModel(Y.shape[1], X.shape[1]), X, Y, C=1.0)
        assert sol.objective <= independent.solve().objective + 1e-7


# --------------------------------------------------------------------------- graphs
def chain_inputs(rng, n=12, d=3, k=3):
    lengths = rng.integers(1, 6, n)
    Xs = [rng.standard_normal((t, d)) for t in lengths]
    Ys = [rng.integers(0, k, t) for t in lengths]
    chain_edges = [np.stack([np.arange(t - 1), np.arange(1, t)], axis=1) for t in lengths]
    return Xs, Ys, [(x, e) for x, e in zip(Xs, chain_edges, strict=True)]


def test_directed_graph_chain_is_the_chain_model():
    rng = np.random.default_rng(0)
    Xs, Ys, Xg = chain_inputs(rng)
    chain, graph = ChainModel(3, 3), GraphModel(3, 3, directed=True)
    assert chain.n_joint_features == graph.n_joint_features
    w = rng.standard_normal(chain.n_joint_features)
    for x, xg, y in zip(Xs, Xg, Ys, strict=True):
        np.testing.assert_array_equal(chain.joint_feature(x, y), graph.joint_feature(xg, y))
        assert graph.score(xg, graph.inference(xg, w), w) == pytest.approx(
            chain.score(x, chain.inference(x, w), w), abs=1e-12
        )
        aug_c = chain.loss_augmented_inference(x, y, w)
        aug_g = graph.loss_augmented_inference(xg, y, w)
        assert graph.margin_violation(xg, y, aug_g, w) == pytest.approx(
            chain.margin_violation(x, y, aug_c, w), abs=1e-12
        )
    sol_c = qpsvm.StructuralSVM(chain, Xs, Ys, C=1.0).solve()
    sol_g = qpsvm.StructuralSVM(graph, Xg, Ys, C=1.0).solve()
    assert sol_g.certificate.passed
    # the same problem: both optima are certified to 1e-9, so they agree to that
    assert sol_g.objective == pytest.approx(sol_c.objective, rel=2e-9)
    assert np.linalg.norm(sol_g.w - sol_c.w) <= np.sqrt(2 * sol_g.certificate.gap) + np.sqrt(
        2 * sol_c.certificate.gap
    )


@pytest.mark.parametrize("directed", [False, True])
def test_graph_scores_are_the_mrf_energy(directed):
    """w . Psi(x, y) is the energy of y under the potentials the inference maximises."""
    rng = np.random.default_rng(2)
    model = GraphModel(3, 2, directed=directed, n_edge_features=2, class_weight=[1.0, 2.0, 0.5])
    edges = grid_edges(2, 3)
    x = (rng.standard_normal((6, 2)), edges, rng.standard_normal((edges.shape[0], 2)))
    w = rng.standard_normal(model.n_joint_features)
    unary, pairwise = model.potentials(x, w)
    if not directed:
        np.testing.assert_array_equal(pairwise, pairwise.transpose(0, 2, 1))
    for _ in range(5):
        y = rng.integers(0, 3, 6)
        assert model.score(x, y, w) == pytest.approx(energy(unary, edges, pairwise, y))
    y = rng.integers(0, 3, 6)
    outputs = [np.array(o) for o in itertools.product(range(3), repeat=6)]
    best_aug = max(model.loss(y, o) + model.score(x, o, w) for o in outputs)
    (y_aug,), bounds = model.loss_augmented_bounds_batch([x], [y], w)
    assert bounds[0] >= best_aug - 1e-9
    assert model.loss(y, y_aug) + model.score(x, y_aug, w) <= best_aug + 1e-9


def segmentation_data(rng, n=12, size=8, noise=1.0):
    """Binary images with one bright square, noisy per-pixel features plus a constant."""
    data = []
    for _ in range(n):
        image = np.zeros((size, size), dtype=np.int64)
        r, c = rng.integers(1, size - 1, 2)
        image[max(0, r - 3) : r + 3, max(0, c - 3) : c + 3] = 1
        feats = np.eye(2)[image.ravel()] + noise * rng.standard_normal((size * size, 2))
        nodes = np.hstack([feats, np.ones((size * size, 1))])
        data.append(((nodes, grid_edges(size, size)), image.ravel()))
    return [x for x, _ in data], [y for _, y in data]


def test_grid_segmentation_training_is_certified():
    """A loopy graph: the oracle is the LP relaxation; on these (submodular) problems it is
    tight, so the bound-based slacks meet the integer dual point and the gap closes."""
    rng = np.random.default_rng(0)
    X, Y = segmentation_data(rng)
    model = GraphModel(2, 3)
    assert not model.exact_inference
    f = qpsvm.StructuralSVM(model, X, Y, C=1.0)
    sol = f.solve()
    assert sol.certificate.passed and sol.certificate.relative_gap <= 1e-9
    predictions = f.predict(X, sol)
    errors = sum(int(np.sum(p != y)) for p, y in zip(predictions, Y, strict=True))
    assert errors < 0.1 * sum(y.size for y in Y)


def test_graph_model_bad_inputs():
    model = GraphModel(2, 3)
    nodes = np.zeros((4, 3))
    with pytest.raises(InvalidTypeError, match="tuple"):
        model.check_input(nodes)
    with pytest.raises(InvalidInputError, match="outside"):
        model.check_input((nodes, np.array([[0, 4]])))
    with pytest.raises(InvalidInputError, match="itself"):
        model.check_input((nodes, np.array([[1, 1]])))
    with pytest.raises(InvalidInputError, match="shape"):
        GraphModel(2, 3, n_edge_features=2).check_input((nodes, [[0, 1]], np.zeros((1, 3))))
    with pytest.raises(InvalidInputError, match="nodes"):
        model.check_output(np.zeros(3, dtype=int), (nodes, np.array([[0, 1]])))
    with pytest.raises(InvalidInputError, match="class_weight"):
        GraphModel(2, 3, class_weight=[1.0, -1.0])
    with pytest.raises(InvalidInputError, match="0 and 1"):
        MultiLabelModel(3, 2).check_output([0, 2, 1])
    with pytest.raises(InvalidInputError, match="edges"):
        MultiLabelModel(3, 2, "chain")

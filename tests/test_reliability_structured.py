"""Issue #8 (reliability) for the ranking, multiclass and structural formulations.

Two halves, as for the binary formulations (``test_hard_numerics.py``, ``test_reliability.py``):

* verifier soundness as properties over random problems (hypothesis): exact optima are accepted,
  perturbed ones (``w``, ``b``, ``alpha``, slacks) rejected, the certified gap never falls below
  the true suboptimality, and nothing depends on the order of the samples;
* numerically hard problems are solved exactly (certificate passed at ``1e-9``) and agree with an
  independent reference, or are refused with a typed error that says what to do.

Reasons for the asserted numbers:

* Rigorous enclosures (every certificate here is rigorous: ``lower <= P* <= upper`` and
  ``upper >= P(cand)`` in exact arithmetic), checked in fractions: ``P(cand)`` is evaluated
  exactly from the float data, and the solver's own certificate gives ``U >= P*``. Hence
  ``lower <= U`` and ``gap >= P(cand) - P* >= P(cand) - U`` for every candidate, whatever the
  solver's accuracy; and a candidate with ``P(cand) - U > tol * max(1, |P(cand)|)`` cannot pass.
* Two certified answers of one problem: ``P*`` lies in each ``[lower, upper]``, so the
  enclosures meet, and ``||w_a - w_b|| <= sqrt(2 gap_a) + sqrt(2 gap_b)`` (the objective is
  1-strongly convex in ``w``). Two certificates of the same point: each upper end lies in
  ``[P(w), P(w) + gap]`` and each lower end in ``[P* - gap, P*]``, so they differ by at most
  the larger gap.
* Permuting samples, pairs, queries, class names or chain states restates the same problem:
  the optimum and ``w`` (relabelled) are the same, and a relabelled certificate adds the same
  numbers in another order.
* Known optima, derived in the tests that use them; independent references: the ranking SVM is
  the binary SVM without intercept on signed pair differences (``C`` unchanged, see
  :func:`qpsvm.conventions.C_from_pair_svm`), Crammer-Singer is the structural SVM with
  :class:`~qpsvm.models.MulticlassModel` (Tsochantaridis et al. 2005, section 4.1), and the
  cutting plane's working set must reach the full QP over every output.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from conftest import hard_variants, ranking_problem
from hypothesis import example, given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm.datasets import make_chains
from qpsvm.models import ChainModel, MulticlassModel
from qpsvm.solution import Candidate, CuttingPlane, StructuralCandidate
from qpsvm.solvers import cutting_plane
from qpsvm.verify.structural import dual_pairs
from tests.test_structural_rigorous import exact_primal

TOL = 1e-9
F = Fraction
VARIANTS = ("crammer_singer", "weston_watkins")


# ------------------------------------------------------------------------------ problems
def ranking_pairs(seed: int, per_query: int = 6, d: int = 3):
    """Items and explicit pairs (with pair weights): the pairs of :func:`ranking_problem`, at
    least one (hypothesis may draw a seed whose queries have a single relevance level)."""
    X, y, groups = ranking_problem(seed, n_queries=3, per_query=per_query, d=d)
    if len(np.unique(y)) < 2:
        y = np.arange(len(y)) % 3
    pairs = qpsvm.RankingSVM(X, y=y, groups=groups).pairs
    weight = np.random.default_rng(seed).uniform(0.5, 2.0, len(pairs))
    return X, pairs, weight


def multiclass_problem(seed: int, n: int = 24, d: int = 3, k: int = 3):
    """Gaussian classes around random centres that overlap."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % k
    X = rng.normal(size=(n, d)) + rng.normal(scale=1.5, size=(k, d))[y]
    return X, y


def tiny_chains(seed: int, n: int = 4):
    """Sequences of exactly 3 positions, 4 features, 3 states: 27 outputs per example, so the
    full QP over every output is the exact reference."""
    data = make_chains(
        n_sequences=n, mean_length=3, n_features=4, n_states=3, noise=0.3, random_state=seed
    )
    return data.X, data.Y


def agree(a, b, what: str = "", w_a=None) -> None:
    """Two certified solutions of the same problem (see the module docstring); ``w_a`` is
    ``a.w`` in ``b``'s labelling when the problems differ by a relabelling."""
    ca, cb = a.certificate, b.certificate
    assert ca.passed and cb.passed, what
    assert ca.rigorous and cb.rigorous, what
    # both enclose P*, so they meet
    assert max(ca.lower, cb.lower) <= min(ca.upper, cb.upper), f"{what}: P* in each [D, P]"
    w_a = a.w if w_a is None else w_a
    gap = np.linalg.norm(np.ravel(w_a) - np.ravel(b.w))
    assert gap <= ca.distance_bound + cb.distance_bound, f"{what}: ||w - w*|| <= sqrt(2 gap)"


def same_point(ca, cb) -> None:
    """Two rigorous certificates of the same point (the same problem restated): their ends
    differ by at most the larger gap (module docstring)."""
    assert ca.rigorous and cb.rigorous
    slack = F(max(ca.gap, cb.gap))
    assert abs(F(ca.upper) - F(cb.upper)) <= slack
    assert abs(F(ca.lower) - F(cb.lower)) <= slack


def exact_objective(f, w) -> Fraction:
    """``P(w)`` of the exact problem the float data state, in fractions: the ranking SVM
    (pairs, pair weights, no intercept), Crammer-Singer / Weston-Watkins, or the structural SVM
    (every output enumerated, :func:`tests.test_structural_rigorous.exact_primal`)."""
    if isinstance(f, qpsvm.StructuralSVM):
        return exact_primal(f, w)
    W = np.atleast_2d(np.asarray(w, dtype=np.float64))
    norm2 = sum((F(float(v)) ** 2 for v in W.ravel()), F(0))
    C = F(float(f.C))
    if isinstance(f, qpsvm.RankingSVM):
        wf = [F(float(v)) for v in W.ravel()]
        items = [[F(float(v)) for v in x] for x in f.items]
        total = F(0)
        for (i, j), s in zip(f.pairs, f.sample_weight, strict=True):
            r = sum((wk * (a - b) for wk, a, b in zip(wf, items[i], items[j], strict=True)), F(0))
            total += F(float(s)) * max(F(0), 1 - r)
        return norm2 / 2 + C * total
    Wf = [[F(float(v)) for v in row] for row in W]
    total = F(0)
    for x, yi, s in zip(f.X, f.y, f.sample_weight, strict=True):
        xf = [F(float(v)) for v in x]
        scores = [sum((a * b for a, b in zip(row, xf, strict=True)), F(0)) for row in Wf]
        hinges = [max(F(0), 1 - scores[yi] + sc) for c, sc in enumerate(scores) if c != yi]
        total += F(float(s)) * (max(hinges) if f.crammer_singer else sum(hinges, F(0)))
    return norm2 / 2 + C * total


def assert_sound(cert, f, cand_w, reference) -> None:
    """``cert`` certifies the candidate ``cand_w`` of ``f``; ``reference`` is a solver's
    rigorous certificate (``upper >= P*``). The enclosures, as in the module docstring, in
    fractions."""
    assert cert.rigorous and reference.rigorous
    value = exact_objective(f, cand_w)
    optimum = F(reference.upper)  # >= P*
    assert F(cert.upper) >= value, "upper >= P(cand)"
    assert F(cert.lower) <= optimum, "lower <= P* <= U"
    excess = value - optimum
    assert F(cert.gap) >= excess, "gap >= P(cand) - P*"
    assert cert.distance_bound == pytest.approx(math.sqrt(2.0 * cert.gap))
    if excess > 2 * F(TOL) * max(1, abs(value)):
        assert not cert.passed, "a suboptimal candidate cannot be certified"


def perturbation(rng: np.random.Generator, shape, eps: float) -> np.ndarray:
    """A random direction of norm ``eps``."""
    v = rng.normal(size=shape)
    return eps * v / np.linalg.norm(v)


# ================================================================ verifier soundness: ranking
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    C=st.floats(0.01, 100.0),
    eps=st.floats(1e-6, 1e-1),
)
def test_ranking_verifier_is_sound(seed, C, eps):
    X, pairs, weight = ranking_pairs(seed)
    f = qpsvm.RankingSVM(X, pairs=pairs, C=C, pair_weight=weight)
    sol = f.solve()
    rng = np.random.default_rng(seed)
    # the optimum is accepted from every entry point
    assert sol.certificate.passed and sol.certificate.relative_gap <= TOL
    assert f.certify(sol).passed and f.certify(w=sol.w).passed
    assert f.certify(alpha=sol.alpha).passed
    # perturbed w
    w = sol.w + perturbation(rng, sol.w.shape, eps)
    assert_sound(f.certify(w=w), f, w, sol.certificate)
    # perturbed duals, even infeasible ones: the verifier projects them, w is their expansion
    alpha = sol.alpha + perturbation(rng, sol.alpha.shape, eps * C)
    cert = f.certify(alpha=alpha)
    assert cert.dual_infeasibility == pytest.approx(
        max(0.0, np.max(-alpha), np.max(alpha - C * weight)), abs=1e-15
    )
    assert_sound(cert, f, f.expansion(alpha), sol.certificate)
    # slacks claimed below the true ones are reported as primal infeasibility
    short = f.certify(Candidate(w=sol.w, b=0.0, xi=sol.xi - eps))
    assert short.primal_infeasibility == pytest.approx(eps, rel=1e-6, abs=1e-12)
    assert short.passed == (eps <= TOL * max(1.0, sol.objective))
    # an intercept is not part of the model: a typed error, not a silent zero
    with pytest.raises(qpsvm.InvalidInputError, match="no intercept"):
        f.certify(w=sol.w, b=eps)


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    C=st.floats(0.01, 100.0),
    given_pairs=st.booleans(),
    score_form=st.booleans(),
)
def test_ranking_does_not_depend_on_the_order(seed, C, given_pairs, score_form):
    # permute the items (and remap the pairs), then the pairs (with their weights) or the
    # query ids: the same problem
    rng = np.random.default_rng(seed)
    X, y, groups = ranking_problem(seed, 3, *((8, 4) if score_form else (6, 3)))
    if len(np.unique(y)) < 2:
        y = np.arange(len(y)) % 3
    perm = rng.permutation(len(X))
    new_index = np.argsort(perm)  # item i of X is item new_index[i] of X[perm]
    if given_pairs:
        f = qpsvm.RankingSVM(X, y=y, groups=groups, C=C)
        weight = rng.uniform(0.5, 2.0, f.n_pairs)
        f = qpsvm.RankingSVM(X, pairs=f.pairs, C=C, pair_weight=weight)
        sigma = rng.permutation(f.n_pairs)
        g = qpsvm.RankingSVM(
            X[perm], pairs=new_index[f.pairs][sigma], C=C, pair_weight=weight[sigma]
        )
    else:
        f = qpsvm.RankingSVM(X, y=y, groups=groups, C=C)
        query_ids = rng.permutation(10)[groups]  # other query names, in another order
        g = qpsvm.RankingSVM(X[perm], y=y[perm], groups=query_ids[perm], C=C)
        # g builds its pairs in its own order: match them to f's
        mapped = new_index[f.pairs]
        order_f = np.lexsort((mapped[:, 1], mapped[:, 0]))
        order_g = np.lexsort((g.pairs[:, 1], g.pairs[:, 0]))
        np.testing.assert_array_equal(mapped[order_f], g.pairs[order_g])
        sigma = np.empty(f.n_pairs, dtype=np.intp)
        sigma[order_g] = order_f  # pair p of g is pair sigma[p] of f
    a, b = f.solve(), g.solve()
    assert a.objective == pytest.approx(b.objective, rel=TOL, abs=TOL)
    np.testing.assert_allclose(b.w, a.w, rtol=0, atol=TOL * max(1.0, np.linalg.norm(a.w)))
    # the certificates of the same point agree, for its w and for its (relabelled) duals
    for ca, cb in [
        (f.certify(w=a.w), g.certify(w=a.w)),
        (f.certify(alpha=a.alpha), g.certify(alpha=a.alpha[sigma])),
    ]:
        assert ca.passed and cb.passed
        same_point(ca, cb)


# ============================================================= verifier soundness: multiclass
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    C=st.floats(0.01, 100.0),
    eps=st.floats(1e-6, 1e-1),
    variant=st.sampled_from(VARIANTS),
)
@example(seed=154, C=59.0, eps=0.0625, variant="crammer_singer")
def test_multiclass_verifier_is_sound(seed, C, eps, variant):
    X, y = multiclass_problem(seed)
    f = qpsvm.MulticlassSVM(X, y, C=C, variant=variant)
    sol = f.solve()
    rng = np.random.default_rng(seed)
    assert sol.certificate.passed and sol.certificate.relative_gap <= TOL
    assert f.certify(sol).passed and f.certify(w=sol.w).passed
    assert f.certify(alpha=sol.alpha).passed
    W = sol.w + perturbation(rng, sol.w.shape, eps)
    assert_sound(f.certify(w=W), f, W, sol.certificate)
    # perturbed duals on the constraints (i, c), c != y_i; the verifier projects them
    alpha = np.where(f.mask, sol.alpha + perturbation(rng, sol.alpha.shape, eps * C), 0.0)
    cert = f.certify(alpha=alpha)
    assert cert.dual_infeasibility == pytest.approx(f.dual_infeasibility(alpha), abs=0)
    assert_sound(cert, f, f.expansion(alpha), sol.certificate)
    # claimed slacks below the true ones
    short = f.certify(Candidate(w=sol.w, xi=sol.xi - eps))
    assert short.primal_infeasibility == pytest.approx(eps, rel=1e-6, abs=1e-12)
    assert short.passed == (eps <= TOL * max(1.0, sol.objective))
    with pytest.raises(qpsvm.InvalidInputError, match="no intercept"):
        f.certify(w=sol.w, b=eps)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), C=st.floats(0.01, 100.0), variant=st.sampled_from(VARIANTS))
@example(seed=2043, C=15.0, variant="crammer_singer")
def test_multiclass_does_not_depend_on_sample_order_or_class_names(seed, C, variant):
    X, y = multiclass_problem(seed)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    names = np.array(["c", "a", "b"])  # class 0 is named "c": it becomes the last class
    f = qpsvm.MulticlassSVM(X, y, C=C, variant=variant)
    g = qpsvm.MulticlassSVM(X[perm], names[y[perm]], C=C, variant=variant)
    row = np.searchsorted(g.classes_, names)  # row of class c of f in g's W
    a, b = f.solve(), g.solve()
    assert a.objective == pytest.approx(b.objective, rel=TOL, abs=TOL)
    Wa = np.empty_like(a.w)
    Wa[row] = a.w
    np.testing.assert_allclose(b.w, Wa, rtol=0, atol=TOL * max(1.0, np.linalg.norm(a.w)))
    agree(a, b, "both certified", w_a=Wa)
    alpha = np.empty_like(a.alpha)
    alpha[:, row] = a.alpha
    for ca, cb in [
        (f.certify(w=a.w), g.certify(w=Wa)),
        (f.certify(alpha=a.alpha), g.certify(alpha=alpha[perm])),
    ]:
        assert ca.passed and cb.passed
        same_point(ca, cb)


# ============================================================= verifier soundness: structural
def structural_problem(seed: int, kind: str, C: float, rescaling: str) -> qpsvm.StructuralSVM:
    if kind == "chain":
        X, Y = tiny_chains(seed)
        return qpsvm.StructuralSVM(ChainModel(4, 3), X, Y, C=C, rescaling=rescaling)
    X, y = multiclass_problem(seed, n=15)
    return qpsvm.StructuralSVM(MulticlassModel(3, 3), X, y, C=C, rescaling=rescaling)


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    C=st.floats(0.01, 100.0),
    eps=st.floats(1e-6, 1e-1),
    kind=st.sampled_from(["chain", "multiclass"]),
    rescaling=st.sampled_from(["margin", "slack"]),
)
def test_structural_verifier_is_sound(seed, C, eps, kind, rescaling):
    f = structural_problem(seed, kind, C, rescaling)
    full = f.solve(method="full")
    cut = f.solve()
    rng = np.random.default_rng(seed)
    for sol in (full, cut):
        assert sol.certificate.passed and sol.certificate.relative_gap <= TOL
        assert f.certify(sol).passed
    agree(full, cut, "the cutting plane reaches the full QP")
    reference = min(full.certificate, cut.certificate, key=lambda c: c.upper)  # upper >= P*
    planes = cut.info["constraints"]
    # perturbed w: a bare w gets a valid (loose) dual point
    w = cut.w + perturbation(rng, cut.w.shape, eps)
    assert_sound(f.certify(w=w), f, w, reference)
    # perturbed plane multipliers, kept feasible (scaled down): w is their expansion
    alpha = cut.alpha * (1.0 - eps) * rng.uniform(0.5, 1.0, cut.alpha.shape)
    cert = f.certify(StructuralCandidate(alpha=alpha, planes=planes))
    assert cert.dual_infeasibility == 0.0
    # the verifier's w is the expansion of the pairs' weights (dual_pairs, summed as it sums)
    pairs = dual_pairs(planes, alpha, f.n_samples)
    rows, _ = f.pair_rows(pairs.example, pairs.outputs, f.joint_rows(pairs.example, pairs.outputs))
    w_pairs = np.asarray(rows.T @ pairs.weight).ravel()
    assert_sound(cert, f, w_pairs, reference)
    assert F(cert.upper) - exact_objective(f, w_pairs) <= F(cert.gap)  # upper in [P, P + gap]
    # too much weight on the planes: reported, projected, and still a lower bound
    heavy = f.certify(StructuralCandidate(w=cut.w, alpha=(1.0 + eps) * cut.alpha, planes=planes))
    assert_sound(heavy, f, cut.w, reference)
    # claimed slacks below the true ones
    short = f.certify(StructuralCandidate(w=cut.w, alpha=cut.alpha, planes=planes, xi=cut.xi - eps))
    assert short.primal_infeasibility == pytest.approx(eps, rel=1e-6, abs=1e-12)
    assert short.passed == (eps <= TOL * max(1.0, cut.objective))
    with pytest.raises(qpsvm.InvalidInputError, match="no intercept"):
        f.certify(w=cut.w, b=eps)


def _relabel_chain_weights(w: np.ndarray, pi: np.ndarray, d: int) -> np.ndarray:
    """Weights of the chain model whose state ``s`` is ``pi[s]``: unary rows and transition rows
    and columns permuted."""
    k = pi.size
    U, T = w[: k * d].reshape(k, d), w[k * d :].reshape(k, k)
    U2, T2 = np.empty_like(U), np.empty_like(T)
    U2[pi] = U
    T2[np.ix_(pi, pi)] = T
    return np.concatenate([U2.ravel(), T2.ravel()])


@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    C=st.floats(0.01, 100.0),
    kind=st.sampled_from(["chain", "multiclass"]),
    rescaling=st.sampled_from(["margin", "slack"]),
)
def test_structural_does_not_depend_on_example_order_or_labels(seed, C, kind, rescaling):
    rng = np.random.default_rng(seed)
    pi = rng.permutation(3)  # state / class s is called pi[s]
    if kind == "chain":
        X, Y = tiny_chains(seed)
        perm = rng.permutation(len(X))
        f = qpsvm.StructuralSVM(ChainModel(4, 3), X, Y, C=C, rescaling=rescaling)
        g = qpsvm.StructuralSVM(
            ChainModel(4, 3), [X[i] for i in perm], [pi[Y[i]] for i in perm], C=C,
            rescaling=rescaling,
        )  # fmt: skip

        def relabel_w(w):
            return _relabel_chain_weights(w, pi, 4)

        def relabel_output(y):
            return pi[y]
    else:
        X, y = multiclass_problem(seed, n=15)
        perm = rng.permutation(len(y))
        model = MulticlassModel(3, 3)
        f = qpsvm.StructuralSVM(model, X, y, C=C, rescaling=rescaling)
        g = qpsvm.StructuralSVM(model, X[perm], pi[y[perm]], C=C, rescaling=rescaling)

        def relabel_w(w):
            W = np.empty((3, 3))
            W[pi] = w.reshape(3, 3)
            return W.ravel()

        def relabel_output(y):
            return int(pi[y])

    new_index = np.argsort(perm)
    for method in ("full", "cutting_plane"):
        a, b = f.solve(method=method), g.solve(method=method)
        # w only within sqrt(2 gap): there is no refinement here, and Clarabel's w on the full
        # QP moved by 2e-7 (relative) between two orders of one chain problem
        agree(a, b, method, w_a=relabel_w(a.w))
        assert a.objective == pytest.approx(b.objective, rel=TOL, abs=TOL)
        # the same problem: the exact objective of the relabelled w is the same number
        assert exact_objective(g, relabel_w(a.w)) == exact_objective(f, a.w)
        # the same multipliers on the relabelled planes: the same certificate
        planes = [
            CuttingPlane(new_index[p.examples], tuple(relabel_output(o) for o in p.outputs))
            for p in a.info["constraints"]
        ]
        ca = f.certify(a)
        cb = g.certify(StructuralCandidate(w=relabel_w(a.w), alpha=a.alpha, planes=planes))
        assert cb.passed
        same_point(ca, cb)


# ==================================================================== hard problems: ranking
def _ranking_cases():
    X, y, groups = ranking_problem(0, n_queries=3, per_query=8, d=4)
    pairs = qpsvm.RankingSVM(X, y=y, groups=groups).pairs
    rng = np.random.default_rng(1)
    wide = rng.normal(size=(6, 300))
    wide_pairs = np.array([[0, 1], [1, 2], [3, 4], [2, 5], [0, 5], [4, 1]])
    return {
        **hard_variants(X, pairs),
        "contradictory pairs": (X, np.vstack([pairs, pairs[:, ::-1]]), {}),
        "n << d": (wide, wide_pairs, {}),
        "d = 1": (X[:, :1], pairs, {}),
        "all pairs on the margin": (np.array([[0.0], [1.0], [2.0]]), [[1, 0], [2, 1]], {"C": 10.0}),
    }


RANKING_CASES = _ranking_cases()


@pytest.fixture(scope="module")
def ranking_reference():
    """The binary SVM without intercept on the signed differences ``(s_p z_p, s_p)``, one per
    pair: the same problem at the same ``C`` (C_from_pair_svm with mirrored=False)."""
    cache = {}

    def solve(name):
        if name not in cache:
            X, pairs, kw = RANKING_CASES[name]
            f = qpsvm.RankingSVM(X, pairs=pairs, **kw)
            sign = np.where(np.arange(f.n_pairs) % 2 == 0, 1.0, -1.0)
            Z = f.X.materialize() * sign[:, None]
            cache[name] = qpsvm.SoftMarginPrimal(Z, sign, fit_intercept=False, **kw).solve()
        return cache[name]

    return solve


@pytest.mark.parametrize("method", ["qp", "working_set"])
@pytest.mark.parametrize("name", list(RANKING_CASES))
def test_ranking_exact_on_hard_data(name, method, ranking_reference):
    X, pairs, kw = RANKING_CASES[name]
    sol = qpsvm.RankingSVM(X, pairs=pairs, **kw).solve(method=method)
    assert sol.certificate.passed and sol.certificate.relative_gap <= TOL
    agree(sol, ranking_reference(name), "binary SVM on the differences")


def test_ranking_known_optima_on_hard_data():
    # a common shift of the items cancels in every difference: the unshifted optimum
    X, pairs, _ = RANKING_CASES["features shifted by 1e3"]
    for C in (1.0, 1e4):
        shifted = qpsvm.RankingSVM(X, pairs=pairs, C=C).solve()
        plain = qpsvm.RankingSVM(X - 1e3, pairs=pairs, C=C).solve()
        agree(shifted, plain, "shift invariance")
    # every pair and its reverse: hinge(1 - t) + hinge(1 + t) >= 2 with equality iff |t| <= 1,
    # so w* = 0 and P* = 2 C per pair and reverse: C len(pairs) (C = 1)
    X, pairs, _ = RANKING_CASES["contradictory pairs"]
    sol = qpsvm.RankingSVM(X, pairs=pairs).solve()
    assert sol.objective == pytest.approx(len(pairs), rel=1e-15)
    np.testing.assert_allclose(sol.w, 0.0, atol=1e-12)
    # items 0, 1, 2 on a line, pairs (1, 0), (2, 1): P(w) = w^2/2 + 2C max(0, 1 - w) is
    # minimised at w = 1 for C >= 1/2, where both pairs are exactly on the margin
    X, pairs, kw = RANKING_CASES["all pairs on the margin"]
    sol = qpsvm.RankingSVM(X, pairs=pairs, **kw).solve()
    np.testing.assert_allclose(sol.w, [1.0], atol=1e-12)
    assert sol.objective == pytest.approx(0.5, abs=1e-12)
    np.testing.assert_allclose(sol.xi, 0.0, atol=1e-12)


@pytest.mark.parametrize("name", list(RANKING_CASES))
def test_ranking_osqp_exact_or_typed_error(name):
    X, pairs, kw = RANKING_CASES[name]
    try:
        sol = qpsvm.RankingSVM(X, pairs=pairs, **kw).solve(solver="OSQP")
    except qpsvm.InaccurateSolutionError as exc:
        assert "max_iter" in str(exc) and "C = 1e4" in name
        return
    assert sol.certificate.passed and sol.solver == "OSQP"


# ================================================================= hard problems: multiclass
def _multiclass_cases():
    X, y = multiclass_problem(0, n=30)
    rng = np.random.default_rng(1)
    wide, wide_y = rng.normal(size=(6, 300)), np.arange(6) % 3
    # 99:1 imbalance: 198 points of class 0, 2 of each other class
    imb_y = np.repeat([0, 1, 2], [198, 2, 2])
    imb_X = np.random.default_rng(2).normal(size=(202, 3)) + 2.0 * np.eye(3)[imb_y]
    return {
        **hard_variants(X, y),
        "duplicates with other classes": (np.vstack([X, X]), np.r_[y, (y + 1) % 3], {}),
        "every point with every class": (np.vstack([X[:10]] * 3), np.repeat([0, 1, 2], 10), {}),
        "n << d": (wide, wide_y, {}),
        "d = 1": (X[:, :1], y, {}),
        "99:1 imbalance": (imb_X, imb_y, {}),
        "all points on the margin": (
            np.vstack([np.eye(3)] * 2),
            np.tile([0, 1, 2], 2),
            {"C": 10.0},
        ),
    }


MULTICLASS_CASES = _multiclass_cases()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", list(MULTICLASS_CASES))
def test_multiclass_exact_on_hard_data(name, variant):
    X, y, kw = MULTICLASS_CASES[name]
    f = qpsvm.MulticlassSVM(X, y, variant=variant, **kw)
    solutions = {}
    for method in ("qp", "working_set"):
        sol = solutions[method] = f.solve(method=method)
        assert sol.certificate.passed and sol.certificate.relative_gap <= TOL, method
    if len(solutions) == 2:
        agree(solutions["qp"], solutions["working_set"], "full QP and working set")
    if variant == "crammer_singer":
        # w of MulticlassModel is W in row-major order
        structural = qpsvm.StructuralSVM(MulticlassModel(X.shape[1], 3), X, y, **kw).solve()
        agree(structural, solutions["qp"], "the structural SVM with MulticlassModel")


@pytest.mark.parametrize("variant", VARIANTS)
def test_multiclass_working_set_on_shifted_features_at_large_C(variant):
    # the start fixes most examples at their bound (the optimum has none there): the restricted
    # QP's linear term C G ~ 1e10 defeats the backends, and the engine releases those examples
    X, y, kw = MULTICLASS_CASES["C = 1e4, shifted by 1e3"]
    f = qpsvm.MulticlassSVM(X, y, variant=variant, **kw)
    agree(f.solve(method="working_set"), f.solve(method="qp"), "working set and full QP")


@pytest.mark.parametrize("method", ["qp", "working_set"])
@pytest.mark.parametrize(
    ("seed", "C", "variant"),
    [(71, 7.0, "weston_watkins"), (30, 50.0, "crammer_singer"), (43, 50.0, "weston_watkins")],
)
def test_multiclass_solution_duals_certify_on_their_own(seed, C, variant, method):
    # found by the soundness property: Clarabel's raw duals expand to a W about 1e-9 from the
    # optimum, 1e-9 to 1e-8 suboptimal (relative) at these C; the solution now carries the
    # certificate's dual point, which is fitted to W and certifies alone
    X, y = multiclass_problem(seed)
    f = qpsvm.MulticlassSVM(X, y, C=C, variant=variant)
    sol = f.solve(method=method)
    cert = f.certify(alpha=sol.alpha)
    assert cert.passed and cert.relative_gap <= TOL
    assert f.dual_infeasibility(sol.alpha) == 0.0
    assert cert.stationarity <= 1e-9 * max(1.0, np.linalg.norm(sol.w))


def test_multiclass_optimum_certifies_from_w_alone():
    # found by the order property: at this W one example has a slack of 1e-10 and two tight
    # classes; the dual point with it free (tau = 1e-8) was skipped as a duplicate of the one
    # with it on its budget (tau = 1e-10), leaving a relative gap of 1.7e-5
    X, y = multiclass_problem(1153)
    f = qpsvm.MulticlassSVM(X, y, C=0.01)
    sol = f.solve()
    cert = f.certify(w=sol.w)
    assert cert.passed and cert.relative_gap <= TOL
    assert cert.stationarity <= 1e-9


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", list(MULTICLASS_CASES))
def test_multiclass_osqp_exact_or_typed_error(name, variant):
    X, y, kw = MULTICLASS_CASES[name]
    try:
        # the full QP: the working set (the default) may certify its exact start with no QP
        sol = qpsvm.MulticlassSVM(X, y, variant=variant, **kw).solve(method="qp", solver="OSQP")
    except qpsvm.InaccurateSolutionError as exc:
        assert "max_iter" in str(exc) and "C = 1e4" in name
        return
    assert sol.certificate.passed and sol.solver == "OSQP"


def test_multiclass_known_optima_on_hard_data():
    # x_c = e_c, one point per class (twice): by symmetry W = a (I - J/3) (the rows of an
    # optimum sum to 0), every margin is a, ||W||^2 = 2a^2, so P = a^2 + 6C(1 - a)_+
    # (Crammer-Singer) or a^2 + 12C(1 - a)_+ (Weston-Watkins): a = 1 for C >= 1/3, P* = 1, and
    # every constraint is exactly on its margin
    X, y, kw = MULTICLASS_CASES["all points on the margin"]
    for variant in VARIANTS:
        sol = qpsvm.MulticlassSVM(X, y, variant=variant, **kw).solve()
        assert sol.objective == pytest.approx(1.0, abs=2 * TOL)
        np.testing.assert_allclose(sol.w, np.eye(3) - 1.0 / 3.0, atol=1e-9)
        np.testing.assert_allclose(sol.xi, 0.0, atol=1e-9)
    # every point with every class: at W = 0 every slack is 1 and a subgradient vanishes: row r
    # gets -x from label r and +x/(k-1) from each other label (CS, budget spread over the tied
    # classes), or -(k-1)x from label r and +x from each other label (WW); so W* = 0 and
    # P* = C n_points (CS, one slack each) or C n_points (k - 1) (WW)
    X, y, _ = MULTICLASS_CASES["every point with every class"]
    for variant, per_point in [("crammer_singer", 1.0), ("weston_watkins", 2.0)]:
        sol = qpsvm.MulticlassSVM(X, y, variant=variant).solve()
        assert sol.objective == pytest.approx(per_point * len(y), rel=TOL)
        np.testing.assert_allclose(sol.w, 0.0, atol=1e-9)


# ================================================================= hard problems: structural
def _chain_cases():
    X, Y = tiny_chains(0, n=6)
    rng = np.random.default_rng(1)
    wide_X = [rng.normal(size=(3, 100)) for _ in range(2)]
    wide_Y = [np.array([0, 1, 2]), np.array([2, 2, 0])]
    return {
        "features shifted by 1e3": ([x + 1e3 for x in X], Y, {}),
        "features scaled by 1e-4": ([x * 1e-4 for x in X], Y, {}),
        "features scaled by 1e4": ([x * 1e4 for x in X], Y, {}),
        "C = 1e-4": (X, Y, {"C": 1e-4}),
        "C = 1e4": (X, Y, {"C": 1e4}),
        "duplicates with other outputs": (X + X, Y + [(y + 1) % 3 for y in Y], {}),
        "n << d": (wide_X, wide_Y, {}),
        "d = 1": ([x[:, :1] for x in X], Y, {}),
    }


CHAIN_CASES = _chain_cases()


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
@pytest.mark.parametrize("name", list(CHAIN_CASES))
def test_chain_exact_on_hard_data(name, rescaling):
    X, Y, kw = CHAIN_CASES[name]
    f = qpsvm.StructuralSVM(ChainModel(X[0].shape[1], 3), X, Y, rescaling=rescaling, **kw)
    full = f.solve(method="full")
    assert full.certificate.passed and full.certificate.relative_gap <= TOL
    for variant in ("n_slack", "one_slack"):
        sol = f.solve(variant=variant)
        assert sol.status == "optimal", variant
        assert sol.certificate.passed and sol.certificate.relative_gap <= TOL, variant
        agree(sol, full, f"{variant} cutting plane and the full QP")


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
@pytest.mark.parametrize(
    "name", ["features shifted by 1e3", "C = 1e4, shifted by 1e3", "99:1 imbalance"]
)
def test_structural_multiclass_model_exact_on_hard_data(name, rescaling):
    X, y, kw = MULTICLASS_CASES[name]
    f = qpsvm.StructuralSVM(MulticlassModel(X.shape[1], 3), X, y, rescaling=rescaling, **kw)
    sol = f.solve()
    assert sol.status == "optimal" and sol.certificate.relative_gap <= TOL
    agree(sol, qpsvm.MulticlassSVM(X, y, **kw).solve(), "Psi = e_y (x) x is Crammer-Singer")


def test_stalled_coordinate_ascent_switches_to_the_exact_working_set_qp(caplog):
    # features shifted by 1e3 make the planes nearly parallel: block-coordinate ascent left the
    # gap near 1 after 300 rounds (before the fix, status "max_iter"); once it stalls the
    # working-set QP is solved by Clarabel, evaluated at its primal w
    X, Y, _ = CHAIN_CASES["features shifted by 1e3"]
    f = qpsvm.StructuralSVM(ChainModel(4, 3), X, Y)
    with caplog.at_level("INFO", logger="qpsvm"):
        sol = f.solve()
    assert sol.status == "optimal" and sol.certificate.passed
    assert sol.info["switched_at"] is not None and sol.solver == "CLARABEL"
    # the hand-over is logged at INFO: it is also the ordinary path of the chains at C = 1
    assert any(r.levelname == "INFO" and "cost more than" in r.message for r in caplog.records)
    # well-conditioned data never switch
    plain = qpsvm.StructuralSVM(ChainModel(4, 3), *tiny_chains(0, n=6)).solve()
    assert plain.info["switched_at"] is None and plain.solver == "coordinate"


def test_the_hand_over_to_clarabel_is_decided_by_the_sweeps_cost(monkeypatch):
    # 20 chains at C = 1 with 20 sweeps a round: the rounds run out while the gap still halves,
    # but 20 sweeps over a few thousand plane entries cost less than Clarabel's working-set QP
    # (its fixed 10 ms alone): coordinate ascent keeps the QP, and meets Clarabel's answer
    data = make_chains(n_sequences=20, n_features=6, n_states=4, random_state=0)
    f = qpsvm.StructuralSVM(ChainModel(6, 4), data.X, data.Y, C=1.0)
    reference = f.solve(solver="CLARABEL")
    short = f.solve(max_sweeps=20)
    assert short.info["switched_at"] is None and short.solver == "coordinate"
    agree(short, reference, "coordinate ascent in short rounds and Clarabel")
    # priced at a second a plane entry, the first round's sweeps cost more than any exact QP of
    # its working set: handed over at round 0, the same answer
    monkeypatch.setattr(cutting_plane, "SWEEP_ENTRY", 1.0)
    costly = f.solve()
    assert costly.info["switched_at"] == 0 and costly.solver == "CLARABEL"
    agree(costly, reference, "coordinate ascent handed over at once and Clarabel")


@example(planes=1, features=1, entries=1)
@given(
    planes=st.integers(1, 20_000),
    features=st.integers(1, 20_000),
    entries=st.integers(0, 10**12),
)
def test_the_hand_over_rule_is_monotone(planes, features, entries):
    # more sweeps' work only makes the exact QP cheaper by comparison, more planes or features
    # only dearer
    cheaper = cutting_plane._exact_cheaper(planes, features, entries)
    if cheaper:
        assert cutting_plane._exact_cheaper(planes, features, 2 * entries)
        assert cutting_plane._exact_cheaper(max(1, planes // 2), features, entries)
        assert cutting_plane._exact_cheaper(planes, max(1, features // 2), entries)
    else:
        assert not cutting_plane._exact_cheaper(planes, features, entries // 2)
        assert not cutting_plane._exact_cheaper(2 * planes, features, entries)


def test_the_hand_over_rule_at_the_measured_working_sets():
    # the chains of 120 x 32 x 8 at C = 1, round 21: 703 planes over 320 features, 65,798
    # entries, 2000 sweeps run out (0.69 s CPU) where Clarabel took 0.29 s at 642 planes: hand over
    assert cutting_plane._exact_cheaper(703, 320, 2000 * 65_798)
    # ... round 15 reached its target in 324 sweeps over 150,287 entries at 1618 planes: keep
    assert not cutting_plane._exact_cheaper(1618, 320, 324 * 150_287)
    # the chains of 2000 x 128 x 26 at C = 1: 909 sweeps over 4800 planes of about 440 entries
    # (4004 features) must never reach Clarabel (a minute or more); nor the full 2000 sweeps
    assert not cutting_plane._exact_cheaper(4800, 4004, 909 * 4800 * 440)
    assert not cutting_plane._exact_cheaper(4800, 4004, 2000 * 4800 * 440)
    # a few planes that stall (shifted features): 2000 sweeps over 100 planes of 10 entries do
    # not outweigh Clarabel's fixed cost, two such rounds in a row do
    assert not cutting_plane._exact_cheaper(100, 24, 2000 * 100 * 10)
    assert cutting_plane._exact_cheaper(100, 24, 2 * 2000 * 100 * 10)


def test_structural_known_optima_on_hard_data():
    # one-position chains x = e_s with every state (twice): the chain is the multiclass model
    # with unused transitions, so w* = (I - J/3, 0) and P* = 1 (see the multiclass test), every
    # constraint on its margin
    X = [np.eye(3)[[s]] for s in range(3)] * 2
    Y = [np.array([s]) for s in range(3)] * 2
    expected = np.concatenate([(np.eye(3) - 1.0 / 3.0).ravel(), np.zeros(9)])
    for rescaling in ("margin", "slack"):
        f = qpsvm.StructuralSVM(ChainModel(3, 3), X, Y, C=10.0, rescaling=rescaling)
        for sol in (f.solve(), f.solve(method="full")):
            assert sol.objective == pytest.approx(1.0, abs=2 * TOL)
            np.testing.assert_allclose(sol.w, expected, atol=1e-9)
    # every point with every class under the 0/1 loss: w* = 0, P* = C n (one unit slack each)
    X, y, _ = MULTICLASS_CASES["every point with every class"]
    sol = qpsvm.StructuralSVM(MulticlassModel(3, 3), X, y).solve()
    assert sol.objective == pytest.approx(len(y), rel=TOL)
    np.testing.assert_allclose(sol.w, 0.0, atol=1e-9)


def test_chain_too_large_to_enumerate_on_shifted_features():
    # 25 chains of up to 9 positions over 4 states: no full QP, but the cutting plane with
    # coordinate ascent (which stalls and switches) and with Clarabel throughout must agree
    data = make_chains(n_sequences=25, mean_length=5, n_features=6, n_states=4, random_state=3)
    X = [x + 1e3 for x in data.X]
    f = qpsvm.StructuralSVM(ChainModel(6, 4), X, data.Y, C=0.3)
    sol = f.solve()
    assert sol.status == "optimal" and sol.certificate.relative_gap <= TOL
    assert sol.info["switched_at"] is not None
    agree(sol, f.solve(solver="CLARABEL"), "coordinate ascent and the CVXPY working set")


# ======================================================== hard problems as properties (slow)
hard_transform = {
    "shift": st.sampled_from([0.0, 1e2, 1e3]),
    "scale": st.sampled_from([1e-4, 1e-2, 1.0, 1e2, 1e4]),
    "log_C": st.floats(-4.0, 4.0),
}


def exact_or_refused(f, **options):
    """``f.solve(**options)`` certified at ``1e-9``, or ``None`` after a typed refusal that
    says what to do."""
    try:
        sol = f.solve(**options)
    except qpsvm.UncertifiedSolutionError as exc:
        assert "standardise the features" in str(exc).lower()
        return None
    assert sol.certificate.passed and sol.certificate.relative_gap <= TOL
    return sol


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), score_form=st.booleans(), **hard_transform)
@example(seed=1999, score_form=False, shift=1e3, scale=0.01, log_C=4.0)
def test_ranking_exact_or_refused_on_random_hard_data(seed, score_form, shift, scale, log_C):
    X, pairs, weight = ranking_pairs(seed, *((8, 4) if score_form else (6, 3)))
    f = qpsvm.RankingSVM(X * scale + shift, pairs=pairs, C=10.0**log_C, pair_weight=weight)
    full, ws = exact_or_refused(f), exact_or_refused(f, method="working_set")
    if full is not None and ws is not None:
        agree(full, ws, "full QP and working set")


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), variant=st.sampled_from(VARIANTS), **hard_transform)
@example(seed=0, variant="crammer_singer", shift=1e3, scale=1e-4, log_C=0.0)
def test_multiclass_exact_or_refused_on_random_hard_data(seed, variant, shift, scale, log_C):
    X, y = multiclass_problem(seed)
    f = qpsvm.MulticlassSVM(X * scale + shift, y, C=10.0**log_C, variant=variant)
    sol = exact_or_refused(f)
    # duals alone certify only on well-scaled data: W = A^T X cancels digits when |x| ~ 1e4
    if sol is not None and scale == 1.0 and shift == 0.0:
        assert f.certify(alpha=sol.alpha).passed


@pytest.mark.slow
@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    rescaling=st.sampled_from(["margin", "slack"]),
    variant=st.sampled_from(["n_slack", "one_slack"]),
    **hard_transform,
)
@example(seed=0, rescaling="margin", variant="n_slack", shift=0.0, scale=100.0, log_C=3.0)
def test_chain_never_claims_an_uncertified_optimum_on_random_hard_data(
    seed, rescaling, variant, shift, scale, log_C
):
    # the extremes combined (features 1e3 + 1e-4 x at C = 1e4: the inputs are nearly equal)
    # can defeat both the full QP and the cutting plane; then the full QP refuses with a typed
    # error and the cutting plane returns status "max_iter" with its failing certificate
    X, Y = tiny_chains(seed)
    X = [x * scale + shift for x in X]
    f = qpsvm.StructuralSVM(ChainModel(4, 3), X, Y, C=10.0**log_C, rescaling=rescaling)
    try:
        full = f.solve(method="full")
    except qpsvm.RoundingFloorError as exc:
        # the certificate's rounding floor is above tol: no method can pass (the cutting plane
        # stops at max_iter below), and the typed error says so
        assert exc.relative_floor > TOL
        full = None
    except qpsvm.UncertifiedSolutionError as exc:
        assert "method='cutting_plane'" in str(exc)
        full = None
    sol = f.solve(variant=variant, max_iter=60)
    if sol.status != "optimal":
        assert sol.status == "max_iter" and not sol.certificate.passed
        return
    assert sol.certificate.passed and sol.certificate.relative_gap <= TOL
    if full is not None:
        agree(sol, full, "cutting plane and full QP")

"""The problem's own solution as a ceiling on ``P*`` in every family's certificate.

``certify`` gives the certifier the cached solution's multipliers and its rigorous primal, an
upper bound on the optimum. Once a candidate fails whatever the dual point (its objective above
the ceiling by more than ``tol``) and the solution's point leaves at most ``TIGHT`` of the gap
to close, no point of the candidate's own is searched: ``P* <= ceiling`` bounds every dual
value, so the gap is within ``1 / (1 - TIGHT)`` of the best any point gives. The enclosure is
checked against the exact rational optimum (``method="exact"``) where the family has one.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

import qpsvm
from qpsvm.datasets import make_chains
from qpsvm.formulations.composed import ComposedProblem
from qpsvm.models import ChainModel
from qpsvm.solution import Candidate
from qpsvm.solvers.exact import binary_qp, multiclass_qp
from qpsvm.verify import binary as binary_verify
from qpsvm.verify import fenchel
from qpsvm.verify import structural as structural_verify
from qpsvm.verify.certificate import TIGHT, beyond_ceiling
from tests.conftest import random_problem, ranking_problem


def _counting(monkeypatch, module, name: str) -> list[int]:
    """Count the points a generator of ``module`` yields, or the calls of a function."""
    seen: list[int] = []
    original = getattr(module, name)

    def points(*args, **kwargs):
        for point in original(*args, **kwargs):
            seen.append(1)
            yield point

    def call(*args, **kwargs):
        seen.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, points if name == "dual_points" else call)
    return seen


def _assert_tight(cert, optimum: Fraction) -> None:
    """Not passed, ``[D, P]`` holds the exact optimum, and the gap is within ``1 / (1 -
    TIGHT)`` of the candidate's true suboptimality (``P - P*``, ``P`` the proven primal)."""
    assert not cert.passed and cert.rigorous
    assert Fraction(cert.dual_objective) <= optimum <= Fraction(cert.primal_objective)
    assert Fraction(cert.gap) <= (Fraction(cert.primal_objective) - optimum) / (1 - Fraction(TIGHT))


def _assert_near_search(cert, searched) -> None:
    """The gap stopped at the solution's point is within ``1 / (1 - TIGHT)`` of the one the
    full search found (whose ``D <= P* <= ceiling``), up to both certificates' rounding floors
    (the stop is decided on the float objectives, the gaps are the rigorous ends')."""
    floors = cert.rounding_floor + searched.rounding_floor
    assert cert.gap <= searched.gap / (1 - TIGHT) + floors


def test_beyond_ceiling_needs_a_verdict_and_a_closed_share():
    # P = 10, ceiling 9 (fails at any tol below 0.1): D = 8.99 leaves 0.01 <= 1% of 1.01
    assert beyond_ceiling(10.0, 8.99, 9.0, 1e-9)
    # D = 8.9 leaves 0.1 > 1% of 1.1: a better point could still shrink the gap by more
    assert not beyond_ceiling(10.0, 8.9, 9.0, 1e-9)
    # the candidate may pass (P - ceiling below tol): the search must go on whatever D
    assert not beyond_ceiling(10.0, 9.99, 9.99, 1e-2)
    # no ceiling, no stop
    assert not beyond_ceiling(10.0, 9.99, float("inf"), 1e-9)


def test_a_multiple_of_w_shows_a_failing_candidate():
    # P(t w, t b) below P(w, b) by more than 2 tol proves P* < P(w, b) - tol: the candidate
    # 1e-2 off fails; the exact optimum has no such multiple (P(w*) = P*), nor has a kernel
    # candidate (no explicit w), one with its own multipliers (tried first, cheaper than the
    # screen) or a hard-margin w that violates a margin (P = inf)
    X, y = random_problem(7, n=40, d=4)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    opt = f.solve(method="exact")
    w = opt.w + 1e-2 * np.random.default_rng(7).normal(size=opt.w.shape)
    assert f._fails_by_scaling(Candidate(w=w, b=opt.b), 1e-9)
    assert not f._fails_by_scaling(Candidate(w=opt.w, b=opt.b), 1e-9)
    assert not f._fails_by_scaling(Candidate(alpha=opt.alpha), 1e-9)
    assert not f._fails_by_scaling(Candidate(w=w, b=opt.b, alpha=opt.alpha), 1e-9)
    hard = qpsvm.HardMargin(X + 3.0 * y[:, None], y)
    assert not hard._fails_by_scaling(Candidate(w=np.zeros(4), b=0.0), 1e-9)


@pytest.mark.parametrize(
    "make",
    [
        lambda X, y: qpsvm.SoftMarginPrimal(X, y, C=1.0),
        lambda X, y: qpsvm.SoftMarginPrimal(X, y, C=10.0, fit_intercept=False),
        lambda X, y: qpsvm.SoftMarginDual(X, y, C=1.0),
    ],
    ids=["primal", "no intercept", "dual"],
)
def test_binary_failing_w_stops_at_the_solution(make, monkeypatch):
    # a w 1e-2 off the exact optimum
    X, y = random_problem(7, n=40, d=4)
    opt = make(X, y).solve(method="exact")
    w = opt.w + 1e-2 * np.random.default_rng(7).normal(size=opt.w.shape)
    _certify_twice(make(X, y), {"w": w, "b": opt.b}, opt, monkeypatch)


def _certify_twice(f, candidate: dict, opt, monkeypatch) -> None:
    """The first call searches the candidate's own points (they fail) before it has the
    solution, later calls only the cached solution's (no point built from the candidate's
    sets, no re-read of the sets off a point): every gap tight against the exact ``P*``."""
    p_star = opt.info["exact"].objective
    _assert_tight(f.certify(**candidate), p_star)
    own = _counting(monkeypatch, binary_verify, "dual_points")
    improved = _counting(monkeypatch, binary_verify, "improve_dual")
    _assert_tight(f.certify(**candidate), p_star)
    assert own == [] and improved == []


def test_kernel_failing_alpha_stops_at_the_solution(monkeypatch):
    # poly kernel (exact rational values): multipliers 1e-2 off the exact ones
    X, y = random_problem(8, n=30, d=3)

    def make():
        return qpsvm.SoftMarginDual(X, y, C=1.0, kernel="poly", degree=2, gamma=0.5, coef0=1.0)

    opt = make().solve(method="exact")
    alpha = np.clip(opt.alpha + 1e-2 * np.random.default_rng(8).random(y.size), 0.0, 1.0)
    _certify_twice(make(), {"alpha": alpha}, opt, monkeypatch)


@pytest.mark.parametrize("pairs", [False, True], ids=["relevance labels", "pairs"])
def test_ranking_failing_w_stops_at_the_solution(pairs, monkeypatch):
    # relevance labels: the sweeps first (no pairs formed), the solution's pair multipliers
    # where they fail; explicit pairs: the binary certificate over the pair differences
    X, y, groups = ranking_problem(9)

    def make():
        f = qpsvm.RankingSVM(X, y=y, groups=groups, C=1.0)
        return qpsvm.RankingSVM(X, pairs=f.pairs, C=1.0) if pairs else f

    opt = make().solve(method="exact")
    w = opt.w + 1e-2 * np.random.default_rng(9).normal(size=opt.w.shape)
    _certify_twice(make(), {"w": w}, opt, monkeypatch)


@pytest.mark.parametrize("penalty", ["l1", "l2", "l1_l2"])
def test_composed_failing_w_skips_the_ascent(penalty, monkeypatch):
    # no exact oracle here: the solution's own certificate encloses P*, [D_ref, P_ref], so the
    # true suboptimality is at least P - P_ref and the gap at most (P - D_ref) / (1 - TIGHT)
    X, y = random_problem(10, n=60, d=5)

    def make():
        return qpsvm.ComposedClassifier(X, y, 1.0, loss="squared_hinge", penalty=penalty)

    sol = make().solve()
    w = sol.w + 1e-2 * np.random.default_rng(10).normal(size=sol.w.shape)
    f = make()
    first = f.certify(w=w, b=sol.b)
    ascents = _counting(monkeypatch, fenchel._Dual, "ascend")
    cert = f.certify(w=w, b=sol.b)
    assert ascents == [] and not cert.passed and cert.rigorous
    _assert_near_search(cert, first)
    ref = sol.certificate
    assert cert.dual_objective <= ref.primal_objective  # weak duality
    assert cert.gap <= (cert.primal_objective - ref.dual_objective) / (1 - TIGHT)


def test_composed_kernel_failing_alpha_skips_the_factor_problem(monkeypatch):
    X, y = random_problem(11, n=50, d=3)

    def make():
        return qpsvm.ComposedClassifier(X, y, 1.0, loss="hinge", kernel="rbf", gamma=0.5)

    sol = make().solve()
    alpha = np.clip(sol.alpha * (1 + 0.2 * np.random.default_rng(11).random(y.size)), 0, 1)
    f = make()
    first = f.certify(alpha=alpha, b=sol.b)
    factors = _counting(monkeypatch, ComposedProblem, "factor_problem")
    cert = f.certify(alpha=alpha, b=sol.b)
    assert factors == [] and not cert.passed and cert.rigorous
    _assert_near_search(cert, first)
    ref = sol.certificate
    assert cert.dual_objective <= ref.primal_objective
    assert cert.gap <= (cert.primal_objective - ref.dual_objective) / (1 - TIGHT)


@pytest.mark.parametrize("source", ["bare w", "loose solution"])
def test_structural_failing_candidate_stops_at_the_solution(source, monkeypatch):
    # chains; no exact oracle here: the solution's rigorous certificate encloses P* in
    # [D_ref, P_ref], so the gap stopped at its point is at most (P - D_ref) / (1 - TIGHT)
    data = make_chains(n_sequences=12, mean_length=3, n_features=4, n_states=3, random_state=5)

    def make():
        return qpsvm.StructuralSVM(ChainModel(4, 3), data.X, data.Y, C=1.0)

    sol = make().solve()
    if source == "bare w":
        candidate = sol.w + 1e-2 * np.random.default_rng(5).normal(size=sol.w.shape)
    else:
        candidate = make().solve(tol=1e-2)  # its own multipliers over its planes
    f = make()
    first = f.certify(candidate)
    assert not first.passed
    # again: one oracle pass over the examples (the candidate's primal), no ascent of its own
    oracles = _counting(monkeypatch, qpsvm.StructuralSVM, "maximisers")
    ascents = _counting(monkeypatch, structural_verify, "_best_single_output_dual")
    cert = f.certify(candidate)
    assert oracles == [1] and ascents == [] and not cert.passed and cert.rigorous
    # the full search: the candidate's own point and the solution's, no ceiling
    cand = structural_verify.read_structural_candidate(f, candidate)
    searched = structural_verify.certify_structural(f, cand, hints=(f.dual_hint(sol),))
    _assert_near_search(cert, searched)
    ref = sol.certificate
    assert ref.rigorous and cert.dual_objective <= ref.primal_objective  # weak duality
    assert cert.gap <= (cert.primal_objective - ref.dual_objective) / (1 - TIGHT)
    # the optimum itself still passes with the ceiling, at the solution's point
    assert f.certify(sol.w).passed


def _liblinear(X, y, tol: float, **options):
    from sklearn.svm import LinearSVC

    est = LinearSVC(loss="hinge", C=1.0, tol=tol, max_iter=1000, random_state=0, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # liblinear's ConvergenceWarning at a loose tol
        est.fit(X, y)
    return est


@pytest.mark.parametrize(
    ("family", "source"),
    [
        ("primal", "liblinear 0.1"),
        ("primal", "liblinear 0.01"),
        ("primal", "subgradient"),
        ("no intercept", "liblinear 0.1"),
        ("no intercept", "subgradient"),
        ("crammer_singer", "liblinear 0.1"),
        ("crammer_singer", "liblinear 0.01"),
        ("crammer_singer", "subgradient"),
    ],
)
def test_moderately_suboptimal_answers_get_their_true_suboptimality(family, source):
    # answers of liblinear at a loose tol and of qpsvm's subgradient descent, 1e-4 to 1e-1
    # off: the gap, first call (the candidate's own search, then the solution's point) and
    # again (the solution's point, stopped by the ceiling), is within 1.01x of the exact
    # suboptimality P(w, b) - P* (both exact rationals), up to the certificate's rounding floor
    if family == "crammer_singer":
        X, y = random_problem(12, n=60, d=4)
        y = np.where(X[:, 0] > 0.3, 2, np.where(y > 0, 1, 0))

        def make():
            return qpsvm.MulticlassSVM(X, y, C=1.0)
    else:
        X, y = random_problem(12, n=60, d=4)

        def make():
            return qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=family == "primal")

    f = make()
    opt = make().solve(method="exact")
    if source == "subgradient":
        sol = make().solve(method="subgradient", epochs=30, random_state=0)
        w, b = sol.w, sol.b
    else:
        options = {"multi_class": "crammer_singer"} if family == "crammer_singer" else {}
        options["fit_intercept"] = family == "primal"
        est = _liblinear(X, y, float(source.split()[1]), **options)
        w = est.coef_ if family == "crammer_singer" else est.coef_.ravel()
        b = float(est.intercept_[0]) if family == "primal" else None
    qp = multiclass_qp(f) if family == "crammer_singer" else binary_qp(f)
    joint = f.joint_weights(w, None).ravel() if family == "crammer_singer" else w
    true = qp.objective(joint, 0 if b is None else b) - opt.info["exact"].objective
    relative_true = float(true) / max(1.0, float(opt.info["exact"].objective))
    assert 1e-6 < relative_true < 0.5  # moderately suboptimal: far above any rounding
    for _ in range(2):
        cert = f.certify(w=w, b=b)
        assert not cert.passed and cert.rigorous
        assert Fraction(cert.lower) <= opt.info["exact"].objective <= Fraction(cert.upper)
        assert float(true) <= cert.gap + cert.rounding_floor
        assert cert.gap <= 1.01 * float(true) + cert.rounding_floor


def test_a_ranking_by_relevance_labels_certifies_a_bare_w_without_its_pairs():
    # the sweeps of certify_grouped settle a bare w from the labels alone; the scaling screen,
    # twelve objectives over the pairs, would form them (and cost more than the sweeps)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 6))
    groups = np.repeat(np.arange(6), 20)
    y = (X @ rng.normal(size=6) + 0.5 * rng.normal(size=120) > 0).astype(int)
    w = qpsvm.RankingSVM(X, y=y, groups=groups, C=0.1).solve(method="one_slack").w
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=0.1)
    assert f.certify(w=w).passed
    assert f._pairs is None


def test_a_solution_reports_the_multipliers_its_certificate_proves():
    # features shifted by 1e4, two zero sample weights (benchmarks/oracle_audit.py, seed 16):
    # the optimum is w* = 0, b* = 1, and the refinement that certifies it lost every support
    # vector on the way (alpha = 0); its certificate proved it with a dual point of its own.
    # The solution reports that point, so its D is the optimum's, and certify() then gives a
    # candidate 5% off its true suboptimality (the zero multipliers gave it 2.15x, D = 0)
    X = np.array(
        [
            [10002.849123847687, 10004.694556337836],
            [10004.656468956533, 10008.210850116733],
            [9998.260175998987, 10002.457940381706],
            [9998.345849331618, 9993.564241996324],
            [9996.820808017752, 10000.615018264398],
            [9995.866337344596, 9999.135163397104],
            [10005.05994730338, 10002.576617093675],
            [10002.58516272155, 10001.558849525023],
            [9999.208314027252, 9991.563775896777],
            [10004.478221580921, 9993.194715407099],
            [10000.976013262682, 9999.510416086265],
            [10000.620032309687, 10001.139755112841],
            [9998.492099343759, 10004.069563795201],
        ]
    )
    y = np.array([1, -1, 1, -1, 1, 1, 1, 1, 1, -1, -1, 1, 1])
    weights = np.array(
        [
            0.0,
            0.801970438497733,
            0.7952202082053523,
            0.0,
            1.4214737329725897,
            1.2546561310719515,
            1.6554201885003759,
            1.933830711011236,
            0.6329938096812004,
            0.7413404800127941,
            1.6347667921323434,
            1.0290397667196072,
            1.4805481869709172,
        ]
    )

    def make():
        return qpsvm.SoftMarginPrimal(X, y, C=69.39553033450449, sample_weight=weights)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the interior-point backends' trouble at this scale
        pstar = make().solve(method="exact").info["exact"].objective
        f = make()
        sol = f.solve()
    assert sol.certificate.passed
    assert Fraction(sol.certificate.lower) <= pstar <= Fraction(sol.certificate.upper)
    assert np.array_equal(sol.alpha, sol.certificate.alpha)
    assert abs(f.dual_objective(sol.alpha) - float(pstar)) <= 1e-9 * float(pstar)
    w = np.array([0.04, -0.02])  # the optimum is w* = 0
    true = binary_qp(f).objective(w, Fraction(f.optimal_intercept(f.scores(w=w)))) - pstar
    cert = f.certify(w=w)
    assert 1e-3 < float(true) / float(pstar) < 0.5 and not cert.passed
    assert Fraction(cert.lower) <= pstar <= Fraction(cert.upper)
    assert float(true) <= cert.gap + cert.rounding_floor
    assert cert.gap <= 1.01 * float(true) + cert.rounding_floor

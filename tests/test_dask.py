"""Exact SVMs on Dask data: the working set over row blocks (qpsvm.dask), on a LocalCluster
the tests start themselves, against the in-memory solver on data small enough for both."""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import qpsvm  # noqa: E402
from qpsvm.dask.formulation import DaskSoftMarginPrimal  # noqa: E402
from qpsvm.dask.multiclass import DaskMulticlassSVM  # noqa: E402
from qpsvm.dask.ranking import DaskRankingSVM  # noqa: E402
from qpsvm.exceptions import InvalidInputError  # noqa: E402
from qpsvm.solution import Candidate  # noqa: E402
from qpsvm.verify.certificate import DEFAULT_TOL  # noqa: E402


@pytest.fixture(scope="module")
def client():
    """Two worker processes on this machine: every pass goes through pickling and the
    distributed scheduler, as on a cluster."""
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def problem(seed: int, n: int = 3000, d: int = 4, noise: float = 1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X @ rng.normal(size=d) + noise * rng.normal(size=n) > 0.2, "pos", "neg")
    return X, y


def chunked(v: np.ndarray, rows: int):
    return da.from_array(v, chunks=(rows, *v.shape[1:]))


def assert_rounding_floor(cert) -> None:
    """The rounding floor ``(upper - P^) + (D^ - lower)`` of a Dask certificate: positive (the
    enclosures add their error bounds to the same sums evaluated in floating point), part of
    the gap, and on standardised data a hundredth of the default tol at most, as in memory
    (tests/test_rounding_floor.py)."""
    assert 0.0 < cert.rounding_floor <= cert.gap
    assert cert.relative_floor <= 1e-2 * DEFAULT_TOL


@pytest.mark.parametrize(
    ("seed", "fit_intercept", "weighted", "dtype", "min_work"),
    [
        (0, True, False, np.float64, 30_000),
        (1, False, True, np.float64, 30_000),
        (2, True, True, np.float32, 30_000),
        # a working set smaller than the data: rows fixed at their bound (folded into one
        # aggregated row per label of the restricted problem) or dropped, rounds
        (6, True, True, np.float64, 60),
        (8, False, True, np.float64, 60),
        (9, True, False, np.float32, 60),
    ],
)
def test_same_certified_optimum_as_in_memory(
    client, seed, fit_intercept, weighted, dtype, min_work
):
    X, y = problem(seed)
    X = X.astype(dtype)
    rng = np.random.default_rng(seed + 100)
    s = rng.uniform(0.5, 2.0, len(y)) if weighted else None
    m = rng.uniform(0.5, 1.5, len(y)) if weighted else None
    f = qpsvm.SoftMarginPrimal(
        chunked(X, 700),
        chunked(y, 700),
        C=0.3,
        fit_intercept=fit_intercept,
        sample_weight=None if s is None else chunked(s, 700),
        margin=None if m is None else chunked(m, 700),
    )
    assert isinstance(f, DaskSoftMarginPrimal)
    sol = f.solve(sample_rows=500, min_work=min_work)
    assert sol.info["working"] <= len(y)
    cert = sol.certificate
    assert cert.passed and cert.rigorous
    assert_rounding_floor(cert)
    ref = qpsvm.SoftMarginPrimal(
        X.astype(np.float64), y, C=0.3, fit_intercept=fit_intercept, sample_weight=s, margin=m
    ).solve()
    # both enclose the one optimum P* of the problem the float data state
    assert cert.dual_objective <= ref.certificate.primal_objective
    assert ref.certificate.dual_objective <= cert.primal_objective
    # so the objectives agree to the certificates' gaps
    assert abs(cert.primal_objective - ref.certificate.primal_objective) <= cert.gap + (
        ref.certificate.gap
    )
    # the optimum w* is unique: both within their distance bounds of it
    bound = cert.distance_bound + ref.certificate.distance_bound
    assert np.linalg.norm(sol.w - ref.w) <= bound
    # n-sized results stay Dask arrays; computed, they are the slacks and a feasible alpha
    assert isinstance(sol.alpha, da.Array) and isinstance(sol.xi, da.Array)
    xi = sol.xi.compute()
    signed = np.where(y == "pos", 1.0, -1.0)
    margin = np.ones(len(y)) if m is None else m
    np.testing.assert_array_equal(
        xi, np.maximum(0.0, margin - signed * (X.astype(np.float64) @ sol.w + sol.b))
    )
    alpha = sol.alpha.compute()
    upper = 0.3 * (np.ones(len(y)) if s is None else s)
    assert np.all(alpha >= 0) and np.all(alpha <= upper)
    if min_work < len(y):
        # rows outside W were fixed at their bound (rounded down into the exact box): the
        # aggregated rows were in the restricted problem
        outside = np.ones(len(y), dtype=bool)
        outside[sol.info["working_index"]] = False
        assert np.count_nonzero(outside & (alpha >= upper * (1 - 4e-16))) > 100
    # passes: every kind logged, and each reads every block of X and y once
    info = sol.info
    assert info["passes"] == len(info["pass_kinds"]) == len(info["pass_seconds"])
    assert info["pass_kinds"][-1] == "round" and "sort" in info["pass_kinds"]
    vectors = [v for v in (s, m) if v is not None]
    assert info["bytes_per_pass"] == X.nbytes + y.nbytes + sum(v.nbytes for v in vectors)


@pytest.mark.parametrize(
    # 0.3 is no float32: the constant column must be float64 for float32 features (a float32
    # column states another problem: the in-memory optimum lay above the Dask enclosure)
    ("scaling", "min_work"),
    [(0.3, 100), (4.0, 30_000)],
)
def test_regularized_intercept_same_certified_optimum(client, scaling, min_work):
    X, y = problem(7)
    X = X.astype(np.float32)
    f = qpsvm.SoftMarginPrimal(
        chunked(X, 700),
        chunked(y, 700),
        C=0.3,
        intercept="regularized",
        intercept_scaling=scaling,
    )
    sol = f.solve(sample_rows=500, min_work=min_work)
    cert = sol.certificate
    assert cert.passed and sol.w.shape == (X.shape[1],)
    ref_f = qpsvm.SoftMarginPrimal(
        X.astype(np.float64), y, C=0.3, intercept="regularized", intercept_scaling=scaling
    )
    ref = ref_f.solve()
    assert cert.dual_objective <= ref.certificate.primal_objective
    assert ref.certificate.dual_objective <= cert.primal_objective
    # (w, b / B) is the unique optimum of the problem on the rows (x_i, B)
    bound = cert.distance_bound + ref.certificate.distance_bound
    gap = np.append(sol.w - ref.w, (sol.b - ref.b) / scaling)
    assert np.linalg.norm(gap) <= bound
    # the objective of a pass is the in-memory objective, 1/2 (b / B)^2 included
    assert f.objective(sol.w, sol.b) == pytest.approx(ref_f.objective(sol.w, sol.b), rel=1e-13)
    assert f.certify(sol).passed


def assert_tight_for_any_candidate(f, sol, candidate):
    """The gap of a bare point off the optimum is its suboptimality ``P - P*`` (at least
    ``P - P(sol)``) to 1%: the reference solution's dual point is tried; with the point's own
    statuses alone (``reference=False``) the gap is many times its suboptimality."""
    cert = f.certify(candidate)
    excess = cert.primal_objective - sol.certificate.primal_objective
    assert 0 < excess and cert.gap <= 1.01 * excess
    own = f.certify(candidate, reference=False)
    assert own.primal_objective == cert.primal_objective and own.gap > 10 * excess


def test_certify_again_and_bare_points(client):
    X, y = problem(3)
    f = qpsvm.SoftMarginPrimal(chunked(X, 1000), chunked(y, 1000), C=1.0)
    sol = f.solve(sample_rows=500)
    again = f.certify(sol)
    assert again.passed
    assert again.primal_objective == sol.certificate.primal_objective
    # the objective of a pass is the plain objective of the solution
    assert f.objective(sol.w, sol.b) == pytest.approx(sol.objective, rel=1e-12)
    # a point off the optimum: a valid enclosure (D <= P* <= P), not a pass
    off = f.certify(Candidate(w=sol.w * 1.1, b=sol.b))
    assert off.dual_objective <= sol.certificate.primal_objective
    assert off.primal_objective >= sol.certificate.dual_objective
    assert not off.passed
    assert_tight_for_any_candidate(f, sol, Candidate(w=sol.w * 1.001, b=sol.b))


def test_dataframe_input_and_labels(client):
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    X, y = problem(4, n=2000)
    frame = dd.from_pandas(pd.DataFrame(X), npartitions=3)
    labels = dd.from_pandas(pd.Series(y), npartitions=3)
    f = qpsvm.SoftMarginPrimal(frame, labels, C=1.0)
    sol = f.solve(sample_rows=300)
    ref = qpsvm.SoftMarginPrimal(X, y, C=1.0).solve()
    assert np.linalg.norm(sol.w - ref.w) <= (
        sol.certificate.distance_bound + ref.certificate.distance_bound
    )
    np.testing.assert_array_equal(
        f.predict(da.from_array(X), sol).compute(), qpsvm.SoftMarginPrimal(X, y).predict(X, ref)
    )


def test_bad_input_is_refused():
    X, y = problem(5, n=400)
    with pytest.raises(InvalidInputError, match="hinge loss with the L2 penalty"):
        qpsvm.SoftMarginPrimal(chunked(X, 100), chunked(y, 100), loss="squared_hinge")
    with pytest.raises(InvalidInputError, match="intercept_scaling"):
        qpsvm.SoftMarginPrimal(
            chunked(X, 100), chunked(y, 100), intercept="regularized", intercept_scaling=0.0
        )
    with pytest.raises(InvalidInputError, match="entries for"):
        qpsvm.SoftMarginPrimal(chunked(X, 100), chunked(y[:-1], 100))
    third = y.copy()
    third[-1] = "other"
    with pytest.raises(InvalidInputError, match="label"):
        qpsvm.SoftMarginPrimal(chunked(X, 100), chunked(third, 100)).solve(sample_rows=50)
    bad = X.copy()
    bad[123, 1] = np.nan
    with pytest.raises(InvalidInputError, match="row 123"):
        qpsvm.SoftMarginPrimal(chunked(bad, 100), chunked(y, 100)).solve(sample_rows=50)
    with pytest.raises(InvalidInputError, match="method"):
        qpsvm.SoftMarginPrimal(chunked(X, 100), chunked(y, 100)).solve(method="qp")


# ---------------------------------------------------------------------------- multiclass
def classes_problem(seed: int, n: int = 3000, d: int = 5, k: int = 4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.argmax(X @ rng.normal(size=(k, d)).T * 1.5 + rng.normal(size=(n, k)), axis=1)
    return X, np.array(["ant", "bee", "cat", "dog", "eel"])[y]


@pytest.mark.parametrize(
    ("seed", "variant", "weighted", "dtype", "min_work"),
    [
        (0, "crammer_singer", False, np.float64, 30_000),
        (1, "crammer_singer", True, np.float32, 60),
        (2, "weston_watkins", False, np.float64, 60),
        (3, "weston_watkins", True, np.float64, 30_000),
    ],
)
def test_multiclass_same_certified_optimum_as_in_memory(
    client, seed, variant, weighted, dtype, min_work
):
    X, y = classes_problem(seed)
    X = X.astype(dtype)
    s = np.random.default_rng(seed + 100).uniform(0.5, 2.0, len(y)) if weighted else None
    f = qpsvm.MulticlassSVM(
        chunked(X, 700),
        chunked(y, 700),
        C=0.3,
        variant=variant,
        sample_weight=None if s is None else chunked(s, 700),
    )
    assert isinstance(f, DaskMulticlassSVM)
    sol = f.solve(sample_rows=500, min_work=min_work)
    cert = sol.certificate
    assert cert.passed and cert.rigorous
    assert_rounding_floor(cert)
    ref_f = qpsvm.MulticlassSVM(X.astype(np.float64), y, C=0.3, variant=variant, sample_weight=s)
    ref = ref_f.solve()
    # both enclose the one optimum P* of the problem the float data state, W* is unique
    assert cert.dual_objective <= ref.certificate.primal_objective
    assert ref.certificate.dual_objective <= cert.primal_objective
    bound = cert.distance_bound + ref.certificate.distance_bound
    assert np.linalg.norm(sol.w - ref.w) <= bound
    np.testing.assert_array_equal(f.classes_, ref_f.classes_)
    # n-sized results stay Dask arrays; computed, the slacks of W and a feasible alpha
    assert isinstance(sol.alpha, da.Array) and isinstance(sol.xi, da.Array)
    np.testing.assert_allclose(sol.xi.compute(), ref_f.slacks(sol.w), rtol=0, atol=1e-12)
    alpha = sol.alpha.compute()
    assert alpha.shape == (len(y), 4)
    assert ref_f.dual_infeasibility(alpha) == 0.0
    # the in-memory certificate of the Dask answer passes too
    assert ref_f.certify(sol.w).passed
    info = sol.info
    assert info["pass_kinds"][:2] == ["labels", "sort"] and info["pass_kinds"][-1] == "round"
    assert info["passes"] == 2 + info["rounds"]
    if min_work < len(y):
        assert info["working"] < len(y) and info["rounds"] > 1


def test_multiclass_certify_again_objective_and_predict(client):
    X, y = classes_problem(4, n=2000)
    f = qpsvm.MulticlassSVM(chunked(X, 500), chunked(y, 500), C=1.0)
    sol = f.solve(sample_rows=400, min_work=90)
    again = f.certify(sol)
    assert again.passed and again.primal_objective == sol.certificate.primal_objective
    ref = qpsvm.MulticlassSVM(X, y, C=1.0)
    assert f.objective(sol.w) == pytest.approx(ref.objective(sol.w), rel=1e-12)
    # a point off the optimum: a valid enclosure (D <= P* <= P), not a pass
    off = f.certify(Candidate(w=sol.w * 1.1))
    assert off.dual_objective <= sol.certificate.primal_objective
    assert off.primal_objective >= sol.certificate.dual_objective
    assert not off.passed
    assert_tight_for_any_candidate(f, sol, Candidate(w=sol.w * 1.001))
    np.testing.assert_array_equal(f.predict(chunked(X, 500), sol).compute(), ref.predict(X, sol.w))


def test_multiclass_bad_input_is_refused():
    X, y = classes_problem(5, n=400)
    with pytest.raises(InvalidInputError, match="fit_intercept"):
        qpsvm.MulticlassSVM(chunked(X, 100), chunked(y, 100), fit_intercept=True)
    with pytest.raises(InvalidInputError, match="variant"):
        qpsvm.MulticlassSVM(chunked(X, 100), chunked(y, 100), variant="one_vs_rest")
    with pytest.raises(InvalidInputError, match="one class"):
        qpsvm.MulticlassSVM(chunked(X, 100), chunked(np.full(400, "a"), 100)).solve()
    bad = X.copy()
    bad[123, 1] = np.inf
    with pytest.raises(InvalidInputError, match="row 123"):
        qpsvm.MulticlassSVM(chunked(bad, 100), chunked(y, 100)).solve(sample_rows=50)
    with pytest.raises(InvalidInputError, match="method"):
        qpsvm.MulticlassSVM(chunked(X, 100), chunked(y, 100)).solve(method="qp")
    with pytest.raises(InvalidInputError, match="squared hinge is solved in memory"):
        qpsvm.MulticlassSVM(chunked(X, 100), chunked(y, 100), loss="squared_hinge")
    with pytest.raises(InvalidInputError, match="L1 and elastic-net penalties are solved in"):
        qpsvm.MulticlassSVM(chunked(X, 100), chunked(y, 100), penalty="l1")
    with pytest.raises(InvalidInputError, match="constant column"):
        qpsvm.MulticlassSVM(chunked(X, 100), chunked(y, 100), intercept="regularized")


# ---------------------------------------------------------------------------- ranking
def ranking_problem(seed: int, queries: int = 120, per_query: int = 20, d: int = 5):
    """Relevance 0..4 from a noisy linear utility, queries of ``per_query`` consecutive items
    (blocks of a multiple of ``per_query`` rows keep every query in one block)."""
    rng = np.random.default_rng(seed)
    n = queries * per_query
    X = rng.normal(size=(n, d))
    rel = np.clip(np.round(X @ rng.normal(size=d) + rng.normal(size=n)), -2, 2) + 2
    groups = np.repeat(rng.permutation(10 * queries)[:queries], per_query)
    return X, rel, groups


@pytest.mark.parametrize(("seed", "dtype", "C"), [(0, np.float64, 0.1), (1, np.float32, 1.0)])
def test_ranking_same_certified_optimum_as_in_memory(client, seed, dtype, C):
    X, rel, groups = ranking_problem(seed)
    X = X.astype(dtype)
    f = qpsvm.RankingSVM(chunked(X, 400), y=chunked(rel, 400), groups=chunked(groups, 400), C=C)
    assert isinstance(f, DaskRankingSVM)
    sol = f.solve(sample_rows=600)
    cert = sol.certificate
    assert cert.passed and cert.rigorous
    assert_rounding_floor(cert)
    ref = qpsvm.RankingSVM(X.astype(np.float64), y=rel, groups=groups, C=C).solve()
    # both enclose the one optimum P*, and w* is unique
    assert cert.dual_objective <= ref.certificate.primal_objective
    assert ref.certificate.dual_objective <= cert.primal_objective
    bound = cert.distance_bound + ref.certificate.distance_bound
    assert np.linalg.norm(sol.w - ref.w) <= bound
    # the pairs are never formed: no alpha or xi (in memory they are formed on first read)
    assert sol.b == 0.0 and sol.alpha is None and sol.xi is None
    info = sol.info
    assert info["pass_kinds"][:2] == ["queries", "sort"] and info["pass_kinds"][-1] == "round"
    assert info["bytes_per_pass"] == X.nbytes + rel.nbytes + groups.nbytes
    # the working set holds a part of the pairs only
    assert info["working"] < qpsvm.RankingSVM(X, y=rel, groups=groups).n_pairs
    # certified again from the data; a point off the optimum: a valid enclosure, not a pass
    again = f.certify(sol)
    assert again.passed and again.primal_objective == cert.primal_objective
    off = f.certify(Candidate(w=sol.w * 1.1))
    assert off.dual_objective <= cert.primal_objective <= off.primal_objective
    assert not off.passed
    assert_tight_for_any_candidate(f, sol, Candidate(w=sol.w * 1.001))


def test_ranking_bad_input_is_refused(client):
    X, rel, groups = ranking_problem(2, queries=30)
    with pytest.raises(InvalidInputError, match="query spans two row blocks"):
        # blocks of 30 rows cut the queries of 20 items
        qpsvm.RankingSVM(chunked(X, 30), y=chunked(rel, 30), groups=chunked(groups, 30)).solve(
            sample_rows=100
        )
    with pytest.raises(InvalidInputError, match="relevance labels y= and query groups="):
        qpsvm.RankingSVM(chunked(X, 100), pairs=[[0, 1]])
    data = (chunked(X, 100), chunked(rel, 100), chunked(groups, 100))
    with pytest.raises(InvalidInputError, match="need the items in memory"):
        qpsvm.RankingSVM(data[0], y=data[1], groups=data[2], loss="squared_hinge")
    with pytest.raises(InvalidInputError, match="cancels in every difference"):
        qpsvm.RankingSVM(data[0], y=data[1], groups=data[2], intercept="free")
    with pytest.raises(InvalidInputError, match="no query holds two relevance levels"):
        qpsvm.RankingSVM(
            chunked(X, 100), y=chunked(np.ones(len(rel)), 100), groups=chunked(groups, 100)
        ).solve()

"""The rows fixed at their bound as aggregated rows of the restricted problem (qpsvm.dask.fold):
the identities that make the aggregated problem the folded one, and the multipliers mapped back
to the fixed rows."""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from qpsvm.dask.binary import BinaryFamily  # noqa: E402
from qpsvm.dask.blocks import RowBlock, Rows, Sort  # noqa: E402
from qpsvm.dask.fold import Fold  # noqa: E402
from qpsvm.dask.passes import DaskData  # noqa: E402
from qpsvm.dask.working_set import WorkingRows  # noqa: E402


def rows(seed: int, n: int = 200, d: int = 3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    s = rng.uniform(0.0, 2.0, n)
    s[:5] = 0.0  # rows of weight 0 belong to no group
    m = rng.uniform(0.5, 1.5, n)
    return X, y, s, m


def hinge(X, y, s, m, w, b):
    return s * np.maximum(0.0, m - y * (X @ w + b))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_aggregated_hinge_is_the_linear_fold_while_every_row_is_fixed(seed):
    X, y, s, m = rows(seed)
    rng = np.random.default_rng(seed + 10)
    w, b = rng.normal(size=X.shape[1]), float(rng.normal())
    r = y * (X @ w + b) - m
    fixed = r < 0.0
    fold = Fold.of(X, y, s, m, fixed)
    Xg, yg, sg, mg = fold.rows()
    assert sorted(fold.label) == [-1.0, 1.0]
    np.testing.assert_array_equal(
        fold.count, [np.count_nonzero(fixed & (y == v) & (s > 0)) for v in fold.label]
    )
    # every fixed row inside its margin: each group's aggregated hinge is its rows' hinge sum,
    # the linear term C sum s_i (m_i - y_i (w.x_i + b)) of the folded problem
    for g in range(len(fold)):
        members = fixed & (y == fold.label[g])
        assert hinge(Xg[g : g + 1], yg[g : g + 1], sg[g : g + 1], mg[g : g + 1], w, b)[
            0
        ] == pytest.approx(float(np.sum(hinge(X, y, s, m, w, b)[members])), rel=1e-12)
    lin_w, lin_b = fold.linear
    np.testing.assert_allclose(lin_w, X.T @ np.where(fixed, s * y, 0.0), rtol=1e-12)
    assert lin_b == pytest.approx(float(np.sum(np.where(fixed, s * y, 0.0))), rel=1e-12)
    # at any other point the aggregate is below the hinge sum (Jensen: the hinge is convex),
    # above the linear term, and the two are equal exactly when it is active
    w2, b2 = rng.normal(size=X.shape[1]), float(rng.normal())
    for g in range(len(fold)):
        members = fixed & (y == fold.label[g])
        agg = hinge(Xg[g : g + 1], yg[g : g + 1], sg[g : g + 1], mg[g : g + 1], w2, b2)[0]
        linear = float(np.sum((s * (m - y * (X @ w2 + b2)))[members]))
        assert max(linear, 0.0) == pytest.approx(agg, rel=1e-12, abs=1e-12)
        assert agg <= float(np.sum(hinge(X, y, s, m, w2, b2)[members])) * (1 + 1e-12)


def test_rows_leaving_the_fold():
    X, y, s, m = rows(3)
    fixed = np.arange(len(y)) % 3 != 0
    leaving = fixed & (np.arange(len(y)) % 2 == 0)
    fold = Fold.of(X, y, s, m, fixed).minus(Fold.of(X, y, s, m, leaving))
    rest = Fold.of(X, y, s, m, fixed & ~leaving)
    np.testing.assert_array_equal(fold.label, rest.label)
    np.testing.assert_array_equal(fold.count, rest.count)
    np.testing.assert_allclose(fold.weight, rest.weight, rtol=1e-13)
    np.testing.assert_allclose(fold.xs, rest.xs, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fold.ms, rest.ms, rtol=1e-13)
    # a group whose rows all leave disappears (its count reaches 0)
    positive = y > 0
    gone = Fold.of(X, y, s, m, fixed).minus(Fold.of(X, y, s, m, fixed & positive))
    np.testing.assert_array_equal(gone.label, [-1.0])


def test_multiplier_below_its_bound_is_shared_among_the_fixed_rows():
    """Three fixed rows at x = 1 (y = +1) that end on their margin: the restricted optimum is
    w = 1 with the aggregate's multiplier 1 < C S = 3, so each fixed row takes t C s_i with
    t = 1/3, and the expansion of all rows' multipliers is w (a KKT point of the whole
    problem, which the certificate pass needs)."""
    C = 1.0
    work = Rows(
        np.array([0, 1]),
        np.array([[2.0], [-2.0]]),
        np.array([1.0, -1.0]),
        np.ones(2),
        np.ones(2),
        np.zeros(2),
    )
    Xf, yf, sf, mf = np.ones((3, 1)), np.ones(3), np.ones(3), np.ones(3)
    ws = WorkingRows(work, Fold.of(Xf, yf, sf, mf, np.ones(3, dtype=bool)))
    da = da = pytest.importorskip("dask.array")
    data = DaskData(
        da.zeros((5, 1)), da.zeros(5), None, None, C, False, classes=np.array([-1.0, 1.0])
    )
    solved = BinaryFamily().restricted(data, ws, None, {}, 1e-10)
    np.testing.assert_allclose(solved.point.w, [1.0], atol=1e-9)
    keys, taken = solved.point.share
    np.testing.assert_array_equal(keys, [[1.0]])
    assert taken[0] == pytest.approx(1.0 / 3.0, abs=1e-9)
    block = RowBlock(Xf, yf, mf, sf, C, False, 2)
    fixed_alpha = Sort(solved.point.w, 0.0, solved.point.share).fixed_alpha(
        block, np.ones(3, dtype=bool)
    )
    expansion = work.X.T @ (solved.alpha_work * work.y) + Xf.T @ (fixed_alpha * yf)
    np.testing.assert_allclose(expansion, solved.point.w, atol=1e-9)


@pytest.mark.parametrize("crammer_singer", [True, False])
def test_aggregated_example_is_the_linear_fold_of_its_multiclass_group(crammer_singer):
    """Examples grouped by label and fixed classes: while each keeps its statuses (Crammer-
    Singer: its top loss positive and the largest; Weston-Watkins: its fixed losses positive,
    the others negative), the aggregated example's loss is its group's linear fold."""
    from qpsvm.dask.class_blocks import ClassBlock, class_fold, class_statuses

    rng = np.random.default_rng(4)
    n, d, k = 400, 3, 4
    X = rng.normal(size=(n, d))
    y = rng.integers(0, k, n)
    s = rng.uniform(0.5, 2.0, n)
    W = rng.normal(size=(k, d))
    block = ClassBlock(X, y, s, 1.0, crammer_singer, k, 0)
    fixed = class_statuses(block, Sort(W, 0.0), np.zeros(0, dtype=np.intp))[1]
    fold = class_fold(X, y, s, fixed)
    assert len(fold) > 1 and np.all(fold.pattern.any(axis=1))
    Xg, yg, sg, _ = fold.rows()
    h = block.losses(W)
    hg = ClassBlock(Xg, yg.astype(np.intp), sg, 1.0, crammer_singer, k, 0).losses(W)
    for g in range(len(fold)):
        members = (y == yg[g]) & np.all(fixed == fold.pattern[g], axis=1)
        assert np.count_nonzero(members) == fold.count[g]
        linear = float(np.sum(s[members, None] * np.where(fixed[members], h[members], 0.0)))
        positive = np.maximum(0.0, hg[g])
        loss = positive.max() if crammer_singer else positive.sum()
        assert sg[g] * loss == pytest.approx(linear, rel=1e-12)

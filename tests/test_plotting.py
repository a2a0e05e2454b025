"""Plots of a binary SVM: each function returns its Axes with the artists the math predicts."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.collections import PathCollection
from matplotlib.colors import to_rgba
from matplotlib.contour import ContourSet
from sklearn.datasets import load_iris
from sklearn.svm import SVC, LinearSVC

import qpsvm
from qpsvm.estimators import SVMClassifier
from qpsvm.plotting import (
    plot_certificate,
    plot_certificates,
    plot_decision_boundary,
    plot_dual,
    plot_slack,
)
from qpsvm.plotting.boundary import VERDICT_COLORS


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


@pytest.fixture(scope="module")
def overlap():
    """Two overlapping Gaussian classes in 2-D: margin violations and misclassified points."""
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(-1.0, 1.0, (40, 2)), rng.normal(1.0, 1.0, (40, 2))])
    y = np.repeat(["neg", "pos"], 40)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    return f, f.solve()


def _contours(ax):
    return [c for c in ax.collections if isinstance(c, ContourSet)]


def _scatters(ax):
    return [c for c in ax.collections if isinstance(c, PathCollection)]


def test_boundary_lines_are_the_level_sets_of_the_decision_function(overlap, ax):
    f, sol = overlap
    assert plot_decision_boundary(f, sol, ax=ax) is ax
    filled, lines = _contours(ax)
    assert filled.filled and not lines.filled
    np.testing.assert_array_equal(lines.levels, [-1.0, 0.0, 1.0])
    # every vertex of the drawn level c lies on w.x + b = c, up to the grid's interpolation
    step = np.ptp(ax.get_xlim()) / 199
    for level, paths in zip(lines.levels, lines.get_paths(), strict=True):
        vertices = paths.vertices
        assert len(vertices) > 0
        np.testing.assert_allclose(
            vertices @ sol.w + sol.b, level, atol=step * np.linalg.norm(sol.w)
        )
    # one scatter per class, then the support vectors: exactly the points with alpha_i > 0
    neg, pos, support = _scatters(ax)
    assert len(neg.get_offsets()) == 40 and len(pos.get_offsets()) == 40
    np.testing.assert_allclose(support.get_offsets(), f.X[sol.alpha > 1e-10])


def test_boundary_of_a_kernel_formulation_and_of_estimators(ax):
    X, y = load_iris(return_X_y=True)
    X, y = X[y < 2, :2], y[y < 2]
    f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf", gamma=1.0)
    plot_decision_boundary(f, f.solve(), ax=ax)
    assert len(_contours(ax)) == 2
    # a fitted estimator brings its own support_: qpsvm's and scikit-learn's SVC alike
    for est in (SVMClassifier(kernel="rbf", gamma=1.0), SVC(kernel="rbf", gamma=1.0)):
        fig, ax2 = plt.subplots()
        est.fit(X, y)
        plot_decision_boundary(est, X=X, y=y, ax=ax2)
        assert len(_scatters(ax2)[-1].get_offsets()) == len(est.support_)
        plt.close(fig)
    # a linear model without support_: support vectors are the points with y f(x) <= 1
    fig, ax3 = plt.subplots()
    lin = LinearSVC(C=1.0).fit(X, y)
    plot_decision_boundary(lin, X=X, y=y, ax=ax3)
    yf = np.where(y == 1, 1, -1) * lin.decision_function(X)
    assert len(_scatters(ax3)[-1].get_offsets()) == int(np.sum(yf <= 1 + 1e-9))
    plt.close(fig)


def test_multiclass_regions_have_no_margins(ax):
    X, y = load_iris(return_X_y=True)
    clf = SVMClassifier(fit_intercept=False).fit(X[:, 2:], y)
    plot_decision_boundary(clf, X=X[:, 2:], y=y, ax=ax)
    (filled,) = _contours(ax)  # the argmax regions only: margins are a binary notion
    assert filled.filled
    assert len(_scatters(ax)) == 3  # one per class, no support-vector ring


def test_slack_bars_are_the_hinge_values(overlap, ax):
    f, sol = overlap
    plot_slack(f, sol, ax=ax)
    # one bar per margin violation: the slacks xi_i = max(0, 1 - y_i f(x_i)) that are positive
    heights = np.concatenate([[p.get_height() for p in c] for c in ax.containers])
    violations = np.sort(sol.xi[sol.xi > 1e-9])
    np.testing.assert_allclose(np.sort(heights), violations, atol=1e-12)
    assert ax.lines[0].get_ydata()[0] == 1.0  # xi = m: misclassified above
    title = ax.get_title()
    assert f"{len(violations)} margin violations, {int(np.sum(sol.xi > 1))} misclassified" in title


def test_dual_scatter_shows_complementary_slackness(overlap, ax):
    f, sol = overlap
    plot_dual(f, sol, ax=ax)
    points = np.vstack([c.get_offsets() for c in _scatters(ax)])
    residual, scaled = points[:, 0], points[:, 1]
    # KKT at the optimum: alpha = 0 beyond the margin, alpha = C s inside it
    assert np.all(scaled[residual > 1e-7] <= 1e-8)
    assert np.all(np.abs(scaled[residual < -1e-7] - 1.0) <= 1e-8)
    assert len(points) == f.n_samples


def test_certificate_plots(overlap, ax):
    f, sol = overlap
    cert = sol.certificate
    plot_certificate(cert, ax=ax)
    (bars,) = ax.containers
    assert len(bars) == 5 and ax.get_xscale() == "log"
    assert bars[0].get_width() == pytest.approx(max(cert.relative_gap, 1e-17))
    assert ax.lines[0].get_xdata()[0] == cert.tol
    fig, ax2 = plt.subplots()
    X, y = f.X, f.classes_[(f.y > 0).astype(int)]
    certs = {"qpsvm": cert, "LinearSVC": f.certify(LinearSVC(C=1.0).fit(X, y))}
    plot_certificates(certs, ax=ax2)
    (bars,) = ax2.containers
    # green for the certified optimum, red for liblinear's squared-hinge answer
    assert [b.get_facecolor() for b in bars] == [
        to_rgba(VERDICT_COLORS[True]),
        to_rgba(VERDICT_COLORS[False]),
    ]
    assert len(ax2.texts) == 2
    plt.close(fig)


def test_bad_inputs_are_typed_errors(overlap, ax):
    f, sol = overlap
    with pytest.raises(qpsvm.InvalidInputError, match="two features"):
        plot_decision_boundary(qpsvm.SoftMarginPrimal(np.eye(3), [0, 1, 1]), sol, ax=ax)
    with pytest.raises(qpsvm.InvalidTypeError, match="decision_function"):
        plot_decision_boundary(object(), X=f.X, y=f.y, ax=ax)
    with pytest.raises(qpsvm.InvalidInputError, match="pass the data"):
        plot_decision_boundary(SVMClassifier().fit(f.X, f.y), ax=ax)
    with pytest.raises(qpsvm.InvalidTypeError, match="binary formulation"):
        plot_slack(SVMClassifier(), sol, ax=ax)
    with pytest.raises(qpsvm.InvalidInputError, match="solution"):
        plot_dual(f, None, ax=ax)
    with pytest.raises(qpsvm.InvalidTypeError, match="Certificate"):
        plot_certificate(sol, ax=ax)
    with pytest.raises(qpsvm.InvalidInputError, match="no certificates"):
        plot_certificates({}, ax=ax)

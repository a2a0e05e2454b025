"""Small problems, where fixed costs (CVXPY compilation, backend probing, numba dispatch)
dominate: qpsvm's certified solve against the specialised solver at its defaults.

Binary soft margin (n = 200, d = 10) against ``LinearSVC(loss="hinge")``, the rbf kernel dual
(n = 200, d = 10) against ``SVC`` (libsvm), Crammer-Singer
(n = 300, d = 10, 4 classes) against ``LinearSVC(multi_class="crammer_singer")`` (liblinear
``-s 4``), a ranking problem of 20 queries x 10 items from relevance labels against dlib's
``svm_rank_trainer``.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC, LinearSVC

import qpsvm
from qpsvm.conventions import C_from_dlib_rank
from regimes._grid import Point, Tightened, certifies, liblinear_at, libsvm_at
from regimes.ranking import dlib_pairs, dlib_tightened, ranking_data


def _quiet(fit):
    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return fit()

    return run


def points(scale: str) -> list[Point]:
    import dlib

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 10))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=200) > 0, 1, -1)
    Xm = rng.normal(size=(300, 10))
    ym = rng.integers(0, 4, 300)
    Xm += 0.8 * rng.normal(size=(4, 10))[ym]
    Xr, yr, groups = ranking_data(20, 10, 5, graded=False)
    data = dlib_pairs(Xr, yr, groups)
    n_pairs = qpsvm.RankingSVM(Xr, y=yr, groups=groups).n_pairs
    trainer = dlib.svm_rank_trainer()
    trainer.c = 10.0

    def binary() -> qpsvm.SoftMarginPrimal:
        return qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False)

    def rbf() -> qpsvm.SoftMarginDual:
        return qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf", gamma=0.1)

    def crammer_singer() -> qpsvm.MulticlassSVM:
        return qpsvm.MulticlassSVM(Xm, ym, C=1.0)

    def ranking() -> qpsvm.RankingSVM:
        return qpsvm.RankingSVM(Xr, y=yr, groups=groups, C=C_from_dlib_rank(10.0, n_pairs))

    return [
        Point(
            "small",
            "binary n=200 d=10 C=1",
            "liblinear",
            lambda: binary().solve(),
            _quiet(lambda: LinearSVC(C=1.0, loss="hinge", fit_intercept=False).fit(X, y)),
            formulation=binary,
            tightened=Tightened(
                liblinear_at(X, y, C=1.0, loss="hinge", fit_intercept=False), certifies(binary)
            ),
        ),
        Point(
            "small",
            "rbf n=200 d=10 gamma=0.1 C=1",
            "libsvm",
            lambda: rbf().solve(),
            lambda: SVC(C=1.0, gamma=0.1).fit(X, y),
            formulation=rbf,
            tightened=Tightened(libsvm_at(X, y, C=1.0, gamma=0.1), certifies(rbf)),
        ),
        Point(
            "small",
            "crammer_singer n=300 d=10 k=4 C=1",
            "liblinear",
            lambda: crammer_singer().solve(),
            _quiet(
                lambda: LinearSVC(C=1.0, multi_class="crammer_singer", fit_intercept=False).fit(
                    Xm, ym
                )
            ),
            formulation=crammer_singer,
            tightened=Tightened(
                liblinear_at(Xm, ym, C=1.0, multi_class="crammer_singer", fit_intercept=False),
                certifies(crammer_singer),
            ),
        ),
        Point(
            "small",
            f"ranking 20x10 d=5 ({n_pairs} pairs) dlib c=10",
            "dlib",
            lambda: ranking().solve(method="one_slack"),
            lambda: trainer.train(data),
            formulation=ranking,
            tightened=dlib_tightened(10.0, data, ranking),
        ),
    ]

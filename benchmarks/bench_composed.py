"""Composed problems: qpsvm's certified exact solve of every combination against its anchor.

On standardised breast cancer (569 x 30; regression: the first feature from the others) it
times, in the same run, for each (loss, penalty, intercept):

* qpsvm: ``f.solve()`` (exact, certified at 1e-9),
* the anchor that solves the same problem, where one exists: ``LinearSVC`` (liblinear ``-s 1``,
  ``-s 3``, ``-s 5`` with ``intercept_scaling``), ``LinearSVR`` (``-s 12``, ``-s 13``),
  ``SVC`` and ``SVR`` with the linear kernel (libsvm, free intercept), each at a tight
  tolerance,

and prints the ratio qpsvm / anchor with the anchor's certified relative gap and its true
suboptimality against qpsvm's exact optimum.

Usage: ``python benchmarks/bench_composed.py [--repeat 3] [--C 1.0]``
"""

from __future__ import annotations

import argparse
import itertools
import warnings

import numpy as np
from _common import timed
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, SVR, LinearSVC, LinearSVR

import qpsvm

TOL = 1e-10
ITER = 1_000_000


def anchor(loss: str, penalty: str, intercept: str, C: float):
    """The scikit-learn estimator solving this combination, or ``None``."""
    if intercept == "regularized" and penalty == "l2" and loss in ("hinge", "squared_hinge"):
        return LinearSVC(loss=loss, C=C, tol=TOL, max_iter=ITER)
    if intercept == "regularized" and penalty == "l1" and loss == "squared_hinge":
        return LinearSVC(loss=loss, penalty="l1", dual=False, C=C, tol=TOL, max_iter=ITER)
    if intercept == "regularized" and penalty == "l2" and "epsilon" in loss:
        return LinearSVR(loss=loss, C=C, epsilon=0.1, tol=TOL, max_iter=ITER)
    if intercept == "free" and penalty == "l2" and loss == "hinge":
        return SVC(kernel="linear", C=C, tol=TOL)
    if intercept == "free" and penalty == "l2" and loss == "epsilon_insensitive":
        return SVR(kernel="linear", C=C, epsilon=0.1, tol=TOL)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--C", type=float, default=1.0)
    args = parser.parse_args()
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    Xr, yr = X[:, 1:], X[:, 0]
    C = args.C
    print(f"composed problems on breast cancer (569 x 30), C={C}; times in s")
    print(
        f"{'loss':<28} {'penalty':<6} {'intercept':<11} {'qpsvm':>7} {'anchor':>7} "
        f"{'qpsvm/anchor':>12} {'anchor gap':>10} {'true sub.':>9}"
    )
    losses = ("hinge", "squared_hinge", "epsilon_insensitive", "squared_epsilon_insensitive")
    for loss, penalty, intercept in itertools.product(
        losses, ("l2", "l1", "l1_l2"), ("free", "none", "regularized")
    ):
        regression = "epsilon" in loss
        if regression:
            data = (Xr, yr)

            def build(loss=loss, penalty=penalty, intercept=intercept):
                return qpsvm.SupportVectorRegression(
                    Xr, yr, C, 0.1, loss=loss, penalty=penalty, intercept=intercept
                )
        else:
            data = (X, y)

            def build(loss=loss, penalty=penalty, intercept=intercept):
                return qpsvm.SoftMarginPrimal(
                    X, y, C, loss=loss, penalty=penalty, intercept=intercept
                )

        seconds, sol = timed(lambda build=build: build().solve(), args.repeat)
        assert sol.certificate.passed
        row = f"{loss:<28} {penalty:<6} {intercept:<11} {seconds:7.3f}"
        est = anchor(loss, penalty, intercept, C)
        if est is None:
            print(row + f" {'-':>7} {'-':>12} {'-':>10} {'-':>9}")
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            their, fitted = timed(lambda est=est, data=data: est.fit(*data), args.repeat)
        f = build()
        cert = f.certify(fitted)
        b = float(np.ravel(fitted.intercept_)[0])
        true = f.objective(np.ravel(fitted.coef_), b) - sol.objective
        print(
            row + f" {their:7.3f} {seconds / their:12.1f} {cert.relative_gap:10.1e} "
            f"{true / max(1.0, sol.objective):9.1e}"
        )


if __name__ == "__main__":
    main()

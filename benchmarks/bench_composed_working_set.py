"""The working set of the kernel composed problems and SVR against the full QP and scikit-learn.

On generated data (``d = 10``; labels from a noisy linear rule, regression targets
``x_0 + sin(x_1)`` plus noise), at each size it times in the same run, every answer certified
at 1e-9:

* ``f.solve(method="working_set")``: for a nonlinear kernel the exact start of
  :mod:`qpsvm.solvers.kernel_descent` (certified first) with the restricted QPs as fallback;
  for the linear kernel the restricted problems from a sample's optimum,
* ``f.solve(method="qp")``: the full CVXPY problem (skipped above ``--qp-max``: minutes),
* the scikit-learn estimator solving the same problem where one exists: ``SVR`` (libsvm,
  epsilon-insensitive, free intercept, rbf or linear kernel) and ``LinearSVR`` (liblinear
  ``-s 13``, regularised intercept), at ``tol=1e-10``,

and prints the ratios working set / full QP and working set / scikit-learn.

Usage: ``python benchmarks/bench_composed_working_set.py [--sizes 500 1000 2000 5000]
[--repeat 1] [--qp-max 2000]`` (with ``OMP_NUM_THREADS=1``)
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import timed
from sklearn.svm import SVR, LinearSVR

import qpsvm

TOL = 1e-10
C = 1.0
EPSILON = 0.1


def problems(n: int):
    """``(name, build, anchor, data)`` for each benchmarked combination at ``n`` samples."""
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, 10))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1, -1)
    t = X[:, 0] + np.sin(X[:, 1]) + 0.3 * rng.standard_normal(n)
    svr = SVR(C=C, epsilon=EPSILON, tol=TOL, cache_size=2000)
    linear_svr = LinearSVR(C=C, epsilon=EPSILON, tol=TOL, max_iter=1_000_000)
    return [
        (
            "squared hinge, rbf, free",
            lambda: qpsvm.SoftMarginDual(X, y, C, loss="squared_hinge", kernel="rbf"),
            None,
            None,
        ),
        (
            "hinge, rbf, regularized",
            lambda: qpsvm.SoftMarginDual(X, y, C, intercept="regularized", kernel="rbf"),
            None,
            None,
        ),
        (
            "eps-insensitive, rbf, free",
            lambda: qpsvm.SupportVectorRegression(X, t, C, EPSILON, kernel="rbf"),
            svr,
            (X, t),
        ),
        (
            "sq. eps-insensitive, rbf, free",
            lambda: qpsvm.SupportVectorRegression(
                X, t, C, EPSILON, loss="squared_epsilon_insensitive", kernel="rbf"
            ),
            None,
            None,
        ),
        (
            "eps-insensitive, linear, regularized",
            lambda: qpsvm.SupportVectorRegression(X, t, C, EPSILON, intercept="regularized"),
            linear_svr,
            (X, t),
        ),
        (
            "sq. eps-insensitive, linear, free",
            lambda: qpsvm.SupportVectorRegression(
                X, t, C, EPSILON, loss="squared_epsilon_insensitive"
            ),
            None,
            None,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 5000])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--qp-max", type=int, default=2000)
    args = parser.parse_args()
    print(f"{'n':>5} {'problem':<38} {'ws s':>7} {'qp s':>7} {'ws/qp':>6} {'sk s':>7} {'ws/sk':>7}")
    for n in args.sizes:
        for name, build, anchor, data in problems(n):
            ws, sol = timed(lambda build=build: build().solve(method="working_set"), args.repeat)
            assert sol.certificate.passed and sol.certificate.rigorous
            row = f"{n:>5} {name:<38} {ws:7.2f}"
            if n <= args.qp_max:
                qp, full = timed(lambda build=build: build().solve(method="qp"), args.repeat)
                assert full.certificate.passed
                assert abs(full.objective - sol.objective) <= 1e-8 * max(1.0, sol.objective)
                row += f" {qp:7.2f} {ws / qp:6.2f}"
            else:
                row += f" {'-':>7} {'-':>6}"
            if anchor is not None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    theirs, _ = timed(lambda a=anchor, d=data: a.fit(*d), args.repeat)
                row += f" {theirs:7.2f} {ws / theirs:7.1f}"
            print(row, flush=True)


if __name__ == "__main__":
    main()

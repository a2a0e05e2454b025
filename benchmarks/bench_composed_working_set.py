"""The working set of the kernel composed problems and SVR against the full QP and scikit-learn.

On generated data (``d = 10``; labels from a noisy linear rule, regression targets
``x_0 + sin(x_1)`` plus noise), at each size and ``C`` it times in the same run, every answer
certified at 1e-9:

* ``f.solve(method="working_set")``: for a nonlinear kernel the exact start of
  :mod:`qpsvm.solvers.kernel_start` (SMO on the dual's units, the KKT equations on its free
  set, certified first) with the restricted QPs as fallback; for the linear kernel the
  restricted problems from a sample's optimum,
* ``f.solve(method="qp")``: the full CVXPY problem (skipped above ``--qp-max``: minutes),
* libsvm through scikit-learn on the nearest problem it solves, at its default ``tol=1e-3``
  (``--anchor-tol``; as the regime grid's kernel points): ``SVR`` (epsilon-insensitive, free
  intercept, rbf) for the regression rows, ``SVC`` (the hinge with a free intercept, rbf) for
  the classification rows, and ``LinearSVR`` (liblinear ``-s 13``, regularised intercept) for
  the linear one,

and prints the ratios working set / full QP and working set / scikit-learn. Where the
certificate's rounding floor is above 1e-9 (large ``C``), the row is certified at
:data:`FLOOR_TOL` and marked ``*``.

Usage: ``python benchmarks/bench_composed_working_set.py [--sizes 500 1000 2000 5000]
[--C 1 100] [--repeat 1] [--qp-max 2000] [--anchor-tol 1e-3]`` (with ``OMP_NUM_THREADS=1``)
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import timed
from sklearn.svm import SVC, SVR, LinearSVR

import qpsvm
from qpsvm.exceptions import RoundingFloorError

EPSILON = 0.1
#: Where the certificate's rounding floor is above 1e-9 (``RoundingFloorError``, large ``C``),
#: the answer is certified at this tolerance instead (the row is marked ``*``).
FLOOR_TOL = 1e-8


def problems(n: int, C: float, tol: float):
    """``(name, build, anchor, data)`` for each benchmarked combination at ``n`` samples."""
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, 10))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1, -1)
    t = X[:, 0] + np.sin(X[:, 1]) + 0.3 * rng.standard_normal(n)
    svc = SVC(C=C, tol=tol, cache_size=2000)
    svr = SVR(C=C, epsilon=EPSILON, tol=tol, cache_size=2000)
    linear_svr = LinearSVR(C=C, epsilon=EPSILON, tol=tol, max_iter=1_000_000)
    return [
        (
            "squared hinge, rbf, free",
            lambda: qpsvm.SoftMarginDual(X, y, C, loss="squared_hinge", kernel="rbf"),
            svc,
            (X, y),
        ),
        (
            "hinge, rbf, regularized",
            lambda: qpsvm.SoftMarginDual(X, y, C, intercept="regularized", kernel="rbf"),
            svc,
            (X, y),
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
            svr,
            (X, t),
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
    parser.add_argument("--C", type=float, nargs="+", default=[1.0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--qp-max", type=int, default=2000)
    parser.add_argument("--anchor-tol", type=float, default=1e-3)
    args = parser.parse_args()
    print(
        f"{'n':>5} {'C':>5} {'problem':<38} {'ws s':>7} {'qp s':>7} {'ws/qp':>6} {'sk s':>7} "
        f"{'ws/sk':>7}"
    )
    for _, build, _, _ in problems(60, 1.0, args.anchor_tol):  # compile outside the timings
        build().solve(method="working_set")
    for n in args.sizes:
        for C in args.C:
            for name, build, anchor, data in problems(n, C, args.anchor_tol):
                try:
                    ws, sol = timed(
                        lambda build=build: build().solve(method="working_set"), args.repeat
                    )
                    floor = ""
                except RoundingFloorError:  # large C: certified at the floor's tolerance
                    ws, sol = timed(
                        lambda build=build: build().solve(method="working_set", tol=FLOOR_TOL),
                        args.repeat,
                    )
                    floor = "*"
                assert sol.certificate.passed and sol.certificate.rigorous
                row = f"{n:>5} {C:>5g} {name + floor:<38} {ws:7.2f}"
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
                    row += f" {theirs:7.3f} {ws / theirs:7.2f}"
                print(row, flush=True)


if __name__ == "__main__":
    main()

"""Small dense binary soft-margin problems: the box QPs against Clarabel and liblinear.

For n x d in 100 x 5 .. 1000 x 50, standardised and shifted (by 5) features, C = 0.01 .. 1000,
with and without a free intercept, it times in the same run (best of ``--repeat``):

* ``SoftMarginPrimal(X, y, C).solve()``: the default, the box QPs where they certify
  (``solver == "box_dual"``: one box QP without intercept, the search on ``b`` with one);
* the same with the box QPs left out: Clarabel on the matrices, as before them;
* ``LinearSVC(loss="hinge", dual=True, tol=1e-10)`` (liblinear; its intercept is a regularised
  feature, a neighbouring problem),

and prints the ratios of the first two to liblinear. Every qpsvm answer is certified at 1e-9.
The compiled kernels are taken as compiled (the steady state, as ``bench_regimes.py``).

Usage: ``OMP_NUM_THREADS=1 python benchmarks/bench_small_binary.py [--repeat 5]
[--intercept/--no-intercept]``
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

import qpsvm
from qpsvm import _numerics
from qpsvm.solvers import direct

SIZES = ((100, 5), (200, 10), (500, 20), (1000, 10), (1000, 50))
SHIFTS = (0.0, 5.0)
CS = (1e-2, 1.0, 100.0, 1e3)


def make_data(n: int, d: int, shift: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Standard normal features shifted by ``shift``, labels from a noisy linear rule."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.5 * rng.normal(size=n) > 0.3, 1, -1)
    return X + shift, y


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Least wall time of ``repeat`` calls of ``fn`` and the last result."""
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--intercept", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    _numerics.compiled = lambda dispatcher: True
    warnings.simplefilter("ignore", ConvergenceWarning)
    box_dual = direct._box_dual
    print(f"{'n x d':>9} {'shift':>5} {'C':>6} {'qpsvm ms':>9} {'solver':>8} "
          f"{'clarabel':>9} {'liblinear':>9} {'ratio':>6} {'before':>6}")  # fmt: skip
    for n, d in SIZES:
        for shift in SHIFTS:
            X, y = make_data(n, d, shift)
            for C in CS:
                problem = lambda: qpsvm.SoftMarginPrimal(X, y, C=C, fit_intercept=args.intercept)  # noqa: B023, E731
                problem().solve()  # compiles what the solve uses
                t_new, sol = best(lambda: problem().solve(), args.repeat)  # noqa: B023
                direct._box_dual = lambda f, tol: None
                try:
                    t_old, _ = best(lambda: problem().solve(), args.repeat)  # noqa: B023
                finally:
                    direct._box_dual = box_dual
                svc = LinearSVC(
                    C=C, loss="hinge", dual=True, tol=1e-10, max_iter=100_000,
                    fit_intercept=args.intercept,
                )  # fmt: skip
                t_svc, _ = best(lambda: svc.fit(X, y), args.repeat)  # noqa: B023
                print(
                    f"{n:>4} x {d:<3} {shift:>5g} {C:>6g} {1e3 * t_new:>9.2f} {sol.solver:>8} "
                    f"{1e3 * t_old:>9.2f} {1e3 * t_svc:>9.2f} {t_new / t_svc:>6.2f} "
                    f"{t_old / t_svc:>6.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()

"""Soft-margin primal: qpsvm's certified exact solve against scikit-learn and plain CVXPY.

For n in 1e3 .. 1e5 (d = 50) it times, in the same run:

* ``SoftMarginPrimal(X, y).solve()`` plus ``f.certify(sol)`` (qpsvm, exact and certified),
* ``LinearSVC(loss="hinge")`` at its default tolerance (liblinear, approximate, regularised b),
* ``SVC(kernel="linear")`` (libsvm, approximate; skipped above ``--svc-max-n``, it is O(n^2)),
* the plain full CVXPY problem solved with CVXPY's defaults (no tuning, no refinement),

and prints time ratios qpsvm / anchor next to each answer's certified relative gap (every
answer, ours or not, is certified by qpsvm's verifier on the same problem).

Usage: ``python benchmarks/bench_binary.py [--quick] [--repeat 3] [--max-n 100000]``
"""

from __future__ import annotations

import argparse
import warnings

import cvxpy as cp
import numpy as np
from _common import timed
from sklearn.svm import SVC, LinearSVC

import qpsvm


def make_data(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two overlapping Gaussian classes (about 10% of points inside the margin)."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1, 1)
    X = rng.normal(size=(n, d)) + 0.35 * y[:, None] * (np.arange(d) < 5)
    return X, y


def plain_cvxpy(X: np.ndarray, y: np.ndarray, C: float) -> tuple[np.ndarray, float]:
    """The textbook CVXPY model with CVXPY's default solver settings."""
    w, b, xi = cp.Variable(X.shape[1]), cp.Variable(), cp.Variable(X.shape[0])
    cons = [cp.multiply(y, X @ w + b) >= 1 - xi, xi >= 0]
    cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * cp.sum(xi)), cons).solve()
    return w.value, float(b.value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="n in {1e3, 3e3} only")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-n", type=int, default=100_000)
    parser.add_argument("--svc-max-n", type=int, default=20_000)
    parser.add_argument("--cvxpy-max-n", type=int, default=100_000)
    parser.add_argument("--C", type=float, default=1.0)
    args = parser.parse_args()
    sizes = [1000, 3000] if args.quick else [n for n in (1000, 10_000, 100_000) if n <= args.max_n]
    d, C = 50, args.C
    print(f"soft-margin primal, d={d}, C={C}; times in s (median of {args.repeat} where cheap)")
    header = (
        f"{'n':>7} {'solver':<28} {'time':>8} {'qpsvm/this':>10} {'rel. gap':>9} {'certified':>9}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        X, y = make_data(n, d)
        f = qpsvm.SoftMarginPrimal(X, y, C=C)

        def ours(X=X, y=y):
            g = qpsvm.SoftMarginPrimal(X, y, C=C)
            sol = g.solve()
            return sol, g.certify(sol)

        t_ours, (sol, cert) = timed(ours, args.repeat if n <= 10_000 else 1)
        rows = [("qpsvm solve + certify", t_ours, cert)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t, est = timed(lambda X=X, y=y: LinearSVC(loss="hinge", C=C).fit(X, y), args.repeat)
        rows.append(("LinearSVC(loss='hinge')", t, f.certify(est)))
        if n <= args.svc_max_n:
            t, est = timed(lambda X=X, y=y: SVC(kernel="linear", C=C).fit(X, y), 1)
            rows.append(("SVC(kernel='linear')", t, f.certify(est)))
        if n <= args.cvxpy_max_n:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # CVXPY's defaults often end "inaccurate"
                t, (w, b) = timed(lambda X=X, y=y: plain_cvxpy(X, y, C), 1)
            rows.append(("plain CVXPY (defaults)", t, f.certify(w=w, b=b)))
        for name, t, c in rows:
            print(
                f"{n:>7} {name:<28} {t:>8.3f} {t_ours / t:>10.2f} {c.relative_gap:>9.1e} "
                f"{c.passed!s:>9}"
            )
        print(
            f"{'':>7} qpsvm: method={sol.method}, solver={sol.solver}, "
            f"{int((sol.alpha > 1e-9 * C).sum())} support vectors"
        )


if __name__ == "__main__":
    main()

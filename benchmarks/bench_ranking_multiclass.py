"""Ranking SVM and Crammer-Singer multiclass SVM: qpsvm's certified solve against liblinear.

Times, in the same run:

* ranking (default 200 queries x 40 items, d = 46 as LETOR, relevance 0/1/2):
  ``RankingSVM(X, y=y, groups=qid, C=C).solve()`` plus ``f.certify(sol)`` against
  ``LinearSVC(loss="hinge", fit_intercept=False, C=C/2)`` fitted on the mirrored pair
  differences (``C_from_pair_svm``: both signs count every hinge twice), at its default
  tolerance; forming the differences is timed separately;
* multiclass (default n = 2e4, d = 50, 10 classes): ``MulticlassSVM(X, y, C=C).solve()`` plus
  ``f.certify(sol)`` against ``LinearSVC(multi_class="crammer_singer", fit_intercept=False)``
  (liblinear minimises the same ``1/2||W||^2 + C sum xi_i``).

Every answer, ours or liblinear's, is certified by qpsvm's verifier on the same problem; the
script prints the ratio qpsvm / anchor next to each relative gap. ``f.solve()`` uses the default
method (the full QP unless a faster exact method is the default; ``--method`` forces one); the
full QP is slow at the target sizes, and the numbers are printed as measured.

Usage: ``python benchmarks/bench_ranking_multiclass.py [--quick] [--repeat 3]
[--skip-ranking] [--skip-multiclass] [--method qp]``
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import timed
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

import qpsvm
from qpsvm.conventions import C_from_pair_svm


def ranking_data(n_queries: int, per_query: int, d: int, seed: int = 0):
    """Items scored by a hidden linear utility plus noise, cut into relevance 0/1/2 per query."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * per_query, d))
    utility = X @ rng.normal(size=d) / np.sqrt(d) + 0.5 * rng.normal(size=len(X))
    y = np.digitize(utility, [-0.5, 0.8])
    return X, y, np.repeat(np.arange(n_queries), per_query)


def multiclass_data(n: int, d: int, k: int, seed: int = 0):
    """Overlapping Gaussian classes around random centres."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = rng.normal(size=(n, d)) + 0.6 * rng.normal(size=(k, d))[y]
    return X, y


def report(rows: list[tuple[str, float, object]], t_ours: float) -> None:
    """One line per solver: time, ratio qpsvm / it, certified relative gap (``None``: a
    preparation step, timed only)."""
    for name, t, cert in rows:
        if cert is None:
            print(f"  {name:<46} {t:>9.3f}")
            continue
        print(
            f"  {name:<46} {t:>9.3f} {t_ours / t:>10.2f} {cert.relative_gap:>9.1e} "
            f"{cert.passed!s:>9}"
        )


def bench_ranking(args, C: float) -> None:
    Q, m, d = (20, 20, 10) if args.quick else (args.queries, args.items, 46)
    X, y, qid = ranking_data(Q, m, d)

    def ours():
        f = qpsvm.RankingSVM(X, y=y, groups=qid, C=C)
        sol = f.solve(method=args.method)
        return f, sol, f.certify(sol)

    t_ours, (f, sol, cert) = timed(ours, args.repeat if Q * m <= 2000 else 1)
    t_form, Z = timed(lambda: f.X.materialize(), 1)
    Zm = np.vstack([Z, -Z])
    ym = np.r_[np.ones(len(Z)), -np.ones(len(Z))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t_lin, est = timed(
            lambda: LinearSVC(loss="hinge", fit_intercept=False, C=C / 2).fit(Zm, ym), args.repeat
        )
    print(
        f"ranking, {Q} queries x {m} items, d={d}: {f.n_pairs} pairs, C={C} "
        f"(LinearSVC C={C / 2}: C_from_pair_svm({C / 2}) = {C_from_pair_svm(C / 2)})"
    )
    report(
        [
            (f"qpsvm solve + certify (method={sol.method})", t_ours, cert),
            ("LinearSVC(loss='hinge') on pair differences", t_lin, f.certify(est)),
            ("  forming the mirrored differences", t_form, None),
        ],
        t_ours,
    )


def bench_multiclass(args, C: float) -> None:
    n, d, k = (1000, 10, 4) if args.quick else (args.n, 50, 10)
    X, y = multiclass_data(n, d, k)

    def ours():
        f = qpsvm.MulticlassSVM(X, y, C=C)
        sol = f.solve(method=args.method)
        return f, sol, f.certify(sol)

    t_ours, (f, sol, cert) = timed(ours, args.repeat if n <= 2000 else 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t_lin, est = timed(
            lambda: LinearSVC(multi_class="crammer_singer", fit_intercept=False, C=C).fit(X, y),
            args.repeat,
        )
    print(f"Crammer-Singer, n={n}, d={d}, {k} classes, C={C}")
    report(
        [
            (f"qpsvm solve + certify (method={sol.method})", t_ours, cert),
            ("LinearSVC(multi_class='crammer_singer')", t_lin, f.certify(est)),
        ],
        t_ours,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--n", type=int, default=20_000, help="multiclass samples")
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--method", default=None, help="solve method (default: f's default)")
    parser.add_argument("--skip-ranking", action="store_true")
    parser.add_argument("--skip-multiclass", action="store_true")
    args = parser.parse_args()
    header = f"  {'solver':<46} {'time (s)':>9} {'qpsvm/this':>10} {'rel. gap':>9} {'certified':>9}"
    print(f"times: median of {args.repeat} where cheap, else one run")
    print(header)
    print("-" * len(header))
    if not args.skip_ranking:
        bench_ranking(args, args.C)
    if not args.skip_multiclass:
        bench_multiclass(args, args.C)


if __name__ == "__main__":
    main()

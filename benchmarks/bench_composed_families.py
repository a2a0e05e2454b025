"""Composed ranking and multiclass problems: qpsvm's certified solves against their anchors.

Times, in the same run (median of ``--repeat``):

* ranking (graded relevance from a noisy linear score, 20 features, queries of 40 items): the
  squared hinge + L2 by ``method="newton"`` (its default), ``"qp"`` and ``"dcd"``, and the L1
  and L1 + L2 penalties by ``"qp"`` and ``"working_set"``,
  against the anchor qpsvm's hinge + L2 ``RankingSVM`` (its default route) on the same pairs;
* multiclass (standardised digits, 64 features, 10 classes): Crammer-Singer and
  Weston-Watkins with the squared hinge, with free per-class intercepts and with the L1 and
  elastic-net penalties (by the full QP and the working set) against the hinge + L2 without
  intercept by the same method, and
  Crammer-Singer with liblinear's regularised intercept (``intercept="regularized"``) against
  ``LinearSVC(multi_class="crammer_singer", fit_intercept=True)`` at ``tol=1e-10``, whose
  answer qpsvm certifies (its relative gap is printed).

Prints the ratio qpsvm / anchor per row.

Usage: ``python benchmarks/bench_composed_families.py [--repeat 2] [--items 2000] [--digits 500]
[--family all|ranking|multiclass]``
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import timed
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

import qpsvm


def ranking(n_items: int, repeat: int) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_items, 20))
    rel = np.digitize(X @ rng.normal(size=20) + rng.normal(size=n_items), [-1.0, 0.0, 1.0])
    groups = np.repeat(np.arange(n_items // 40 + 1), 40)[:n_items]
    anchor = qpsvm.RankingSVM(X, y=rel, groups=groups, C=0.1)
    base, _ = timed(lambda: anchor.fresh_copy().solve(), repeat)
    print(
        f"ranking: {n_items} items, {anchor.n_pairs} pairs, C=0.1; anchor hinge + l2 "
        f"(RankingSVM, {anchor.default_method()}) {base:.2f} s"
    )
    for loss, penalty, method in [
        ("squared_hinge", "l2", "newton"),
        ("squared_hinge", "l2", "qp"),
        ("squared_hinge", "l2", "dcd"),
        ("hinge", "l1", "qp"),
        ("hinge", "l1", "working_set"),
        ("hinge", "l1_l2", "qp"),
        ("hinge", "l1_l2", "working_set"),
        ("squared_hinge", "l1", "qp"),
        ("squared_hinge", "l1", "working_set"),
    ]:
        f = qpsvm.RankingSVM(X, y=rel, groups=groups, C=0.1, loss=loss, penalty=penalty)
        seconds, sol = timed(lambda f=f, m=method: f.fresh_copy().solve(method=m), repeat)
        assert sol.certificate.passed
        print(
            f"  {loss:<14} {penalty:<5} {method:<11} {seconds:7.3f} s  "
            f"x{seconds / base:5.1f}  rel. gap {sol.certificate.relative_gap:.1e}"
        )


#: The multiclass combinations timed against the hinge + L2 without intercept: (loss,
#: intercept, method, penalty).
MULTICLASS_ROWS = [
    ("squared_hinge", "none", "qp", "l2"),
    ("hinge", "free", "qp", "l2"),
    ("hinge", "free", "working_set", "l2"),
    ("squared_hinge", "free", "qp", "l2"),
    ("hinge", "none", "qp", "l1"),
    ("hinge", "none", "qp", "l1_l2"),
    ("squared_hinge", "none", "qp", "l1"),
    ("hinge", "none", "working_set", "l1"),
    ("hinge", "none", "working_set", "l1_l2"),
]


def multiclass(n_digits: int, repeat: int) -> None:
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)[:n_digits]
    y = y[:n_digits]
    print(
        f"multiclass: {n_digits} digits x 64, 10 classes, C=0.1; anchor: the hinge without "
        "intercept by the same method"
    )
    for variant in ("crammer_singer", "weston_watkins"):
        anchors = {}
        for method in ("qp", "working_set"):
            f = qpsvm.MulticlassSVM(X, y, C=0.1, variant=variant)
            anchors[method], _ = timed(lambda f=f, m=method: f.fresh_copy().solve(method=m), repeat)
            print(f"  {variant:<15} hinge         none l2    {method:<11} {anchors[method]:7.2f} s")
        for loss, intercept, method, penalty in MULTICLASS_ROWS:
            f = qpsvm.MulticlassSVM(
                X, y, C=0.1, variant=variant, loss=loss, intercept=intercept, penalty=penalty
            )
            seconds, sol = timed(lambda f=f, m=method: f.fresh_copy().solve(method=m), repeat)
            assert sol.certificate.passed
            print(
                f"  {variant:<15} {loss:<13} {intercept:<4} {penalty:<5} {method:<11} "
                f"{seconds:7.2f} s  x{seconds / anchors[method]:5.1f}  rel. gap "
                f"{sol.certificate.relative_gap:.1e}"
            )
    est = LinearSVC(
        multi_class="crammer_singer",
        fit_intercept=True,
        intercept_scaling=1.0,
        C=0.1,
        tol=1e-10,
        max_iter=1_000_000,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs, fitted = timed(lambda: est.fit(X, y), repeat)
    f = qpsvm.MulticlassSVM(X, y, C=0.1, intercept="regularized")
    seconds, sol = timed(lambda: f.fresh_copy().solve(), repeat)
    cert = f.certify(w=fitted.coef_, b=fitted.intercept_)
    print(
        f"  crammer_singer regularized intercept: qpsvm ({f.default_method()}) {seconds:.2f} s, "
        f"LinearSVC {theirs:.2f} s, x{seconds / theirs:.1f}; LinearSVC's certified relative "
        f"gap {cert.relative_gap:.1e}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--digits", type=int, default=500)
    parser.add_argument("--family", choices=["all", "ranking", "multiclass"], default="all")
    args = parser.parse_args()
    if args.family in ("all", "ranking"):
        ranking(args.items, args.repeat)
    if args.family in ("all", "multiclass"):
        multiclass(args.digits, args.repeat)


if __name__ == "__main__":
    main()

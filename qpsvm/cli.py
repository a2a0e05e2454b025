"""Command line: ``qpsvm demo`` solves the formulations on bundled data and prints certificates."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from sklearn.svm import SVC, LinearSVC

    import qpsvm
    from qpsvm.datasets import load_cancer, load_iris_binary

    iris, cancer = load_iris_binary(), load_cancer()
    cases = [
        (iris.description, qpsvm.HardMargin(iris.X, iris.y)),
        (cancer.description, qpsvm.SoftMarginPrimal(cancer.X, cancer.y, C=args.C)),
        (cancer.description, qpsvm.SoftMarginDual(cancer.X, cancer.y, C=args.C)),
        (cancer.description, qpsvm.SoftMarginDual(cancer.X, cancer.y, C=args.C, kernel="rbf")),
    ]
    failed = 0
    for description, f in cases:
        start = time.perf_counter()
        sol = f.solve()
        cert = f.certify(sol)
        failed += not cert.passed
        kernel = f.kernel.name
        print(f"\n== {type(f).__name__} (kernel={kernel}) on {description}")
        print(
            f"   solved by {sol.solver} in {time.perf_counter() - start:.2f} s, "
            f"objective {sol.objective:.12g}, {int((sol.alpha > 1e-9).sum())} support vectors"
        )
        print("   " + str(cert).replace("\n", "\n   "))
    print(f"\n== What the certificate says about scikit-learn on {cancer.description}")
    primal = qpsvm.SoftMarginPrimal(cancer.X, cancer.y, C=args.C)
    rbf = cases[3][1]
    for name, f, est in [
        ("SVC(kernel='linear')", primal, SVC(kernel="linear", C=args.C)),
        ("SVC(kernel='rbf')", rbf, SVC(kernel="rbf", C=args.C)),
        ("LinearSVC(loss='hinge')", primal, LinearSVC(loss="hinge", C=args.C, max_iter=100_000)),
    ]:
        cert = f.certify(est.fit(cancer.X, cancer.y))
        print(
            f"   {name:<24} relative gap {cert.relative_gap:.2e}  "
            f"||w - w*|| <= {cert.distance_bound:.2e}  certified: {cert.passed}"
        )
    print("\nall qpsvm answers certified" if not failed else f"\n{failed} answers NOT certified")
    return 0 if not failed else 1


def build_parser() -> argparse.ArgumentParser:
    """The ``qpsvm`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="qpsvm", description="Support vector machines solved exactly, with certificates."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log solver progress")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="solve the formulations on bundled data and certify them")
    demo.add_argument("--C", type=float, default=1.0, help="slack penalty (default 1.0)")
    demo.set_defaults(run=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``qpsvm`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())

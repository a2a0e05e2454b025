"""The solver-validation suite on the solvers installed here, against qpsvm in the same run.

Every solver runs on every instance of a tier (default small); each answer is certified on the
instance's problem (:mod:`qpsvm.suite`). The anchor is qpsvm's own certified solve
(``f.solve()``); the table prints, per solver, the success rates at 1e-3 / 1e-6 / 1e-9
certified relative suboptimality, the failures, the share of answers wrong in the 4th digit,
the shifted geometric mean of the time and its ratio to the anchor's, and the suboptimality's.

Usage: ``python benchmarks/bench_suite.py [--tier small] [--family binary] [--plot FILE]``
"""

from __future__ import annotations

import argparse
import importlib.util
import warnings

import qpsvm.suite as suite
from qpsvm.suite import report
from qpsvm.suite.score import summarize

#: CVXPY and qpsolvers backends tried, when installed.
CVXPY = ("CLARABEL", "OSQP", "SCS", "ECOS", "PIQP", "PROXQP")
QPSOLVERS = ("clarabel", "osqp", "proxqp", "piqp", "highs", "scs")


def qpsvm_solve(instance: suite.Instance) -> dict:
    """The anchor: qpsvm's default certified solve."""
    sol = instance.build().solve()
    return {"alpha": sol.alpha} if sol.w is None else {"w": sol.w, "b": sol.b}


def solvers() -> list[suite.Solver]:
    import cvxpy as cp
    import qpsolvers

    out: list[suite.Solver] = [suite.Callable(qpsvm_solve, "qpsvm (anchor)")]
    installed = set(cp.installed_solvers())
    for name in CVXPY:
        if name in installed:
            out.append(suite.CvxpySolver(name))
    out.append(suite.CvxpySolver("OSQP", high_accuracy=True))
    for name in QPSOLVERS:
        if name in qpsolvers.available_solvers:
            out.append(suite.QpSolver(name, high_accuracy=True))
    out.append(suite.parse_solver("sklearn:SVC"))
    out.append(suite.parse_solver("sklearn:SVC(tol=1e-8)"))
    out.append(suite.parse_solver("sklearn:LinearSVC(loss='hinge', dual=True, max_iter=100000)"))
    out.append(suite.parse_solver("sklearn:LinearSVC()"))
    if importlib.util.find_spec("liblinear"):
        out.append(suite.Liblinear("-s 3"))
        out.append(suite.Liblinear("-s 3 -B 1"))
    if importlib.util.find_spec("libsvm"):
        out.append(suite.Libsvm("-t 0"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", default="small")
    parser.add_argument("--family", default=None)
    parser.add_argument("--plot", default=None, help="performance profile + accuracy vs time")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    instances = suite.load(args.tier, family=args.family)
    results = []
    for solver in solvers():
        results += suite.score(solver, instances)
        s = summarize([r for r in results if r.solver == solver.name])
        print(f"{solver.name}: {s.n} scored, {s.failures} failures", flush=True)
    anchor = summarize([r for r in results if r.solver == "qpsvm (anchor)"]).time_sgm
    print()
    print(report.markdown_table(results), end="")
    print()
    print("| solver | time SGM / qpsvm's |")
    print("|---|---|")
    for name in dict.fromkeys(r.solver for r in results):
        s = summarize([r for r in results if r.solver == name])
        print(f"| {name} | {s.time_sgm / anchor:.2f} |")
    if args.json:
        report.write_json(results, args.json)
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (left, right) = plt.subplots(1, 2, figsize=(16, 5.5))
        report.performance_profile_plot(results, 1e-6, ax=left)
        report.accuracy_time_plot(results, ax=right)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)


if __name__ == "__main__":
    main()

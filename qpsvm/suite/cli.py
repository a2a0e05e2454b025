"""``qpsvm suite run`` and ``qpsvm suite export``, and the solver names they accept.

Solver names (:func:`parse_solver`):

- ``cvxpy:NAME`` / ``cvxpy:NAME:high`` — a CVXPY solver (``OSQP``, ``CLARABEL``, ``SCS``,
  ``ECOS``, ``PIQP``, ``PROXQP``...) on ``f.problem`` at its defaults / at high accuracy;
- ``qpsolvers:NAME`` / ``qpsolvers:NAME:high`` — a qpsolvers backend on the exported QP;
- ``sklearn:CLASS`` or ``sklearn:CLASS(key=value,...)`` — a scikit-learn estimator of
  ``sklearn.svm`` or ``sklearn.linear_model`` (values are Python literals);
- ``liblinear:OPTIONS`` / ``libsvm:OPTIONS`` — the official bindings, e.g. ``liblinear:-s 3``;
- ``command:TEMPLATE`` — a command line with ``{train}``, ``{model}`` and ``{C}``;
- ``python:MODULE:FUNCTION`` — a function ``instance -> (w, b)`` or a dict.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import re
from pathlib import Path
from typing import Any

from qpsvm.exceptions import InvalidInputError
from qpsvm.suite import solvers

__all__ = ["add_suite_parser", "parse_solver"]


def _estimator(spec: str) -> solvers.Estimator:
    match = re.fullmatch(r"(\w+)(?:\((.*)\))?", spec.strip())
    if match is None:
        raise InvalidInputError(f"cannot read the estimator {spec!r}; write CLASS(key=value,...).")
    name, args = match.groups()
    for module in ("sklearn.svm", "sklearn.linear_model"):
        cls = getattr(importlib.import_module(module), name, None)
        if cls is not None:
            break
    else:
        raise InvalidInputError(f"no estimator {name!r} in sklearn.svm or sklearn.linear_model.")
    params: dict[str, Any] = {}
    if args:
        call = ast.parse(f"f({args})", mode="eval").body
        for kw in call.keywords:  # type: ignore[attr-defined]
            node = kw.value
            params[kw.arg] = node.id if isinstance(node, ast.Name) else ast.literal_eval(node)
    return solvers.Estimator(cls, params)


def parse_solver(name: str) -> solvers.Solver:
    """The solver a name states (see the module docstring for the forms)."""
    kind, _, rest = name.partition(":")
    if kind in ("cvxpy", "qpsolvers"):
        backend, _, accuracy = rest.partition(":")
        if accuracy not in ("", "high"):
            raise InvalidInputError(f"{name!r}: the accuracy is empty or 'high'.")
        if kind == "cvxpy":
            return solvers.CvxpySolver(backend.upper(), accuracy == "high")
        return solvers.QpSolver(backend.lower(), accuracy == "high")
    if kind == "sklearn":
        return _estimator(rest)
    if kind == "liblinear":
        return solvers.Liblinear(rest)
    if kind == "libsvm":
        return solvers.Libsvm(rest)
    if kind == "command":
        return solvers.Command(rest)
    if kind == "python":
        module, _, function = rest.rpartition(":")
        return solvers.Callable(getattr(importlib.import_module(module), function), name)
    raise InvalidInputError(
        f"unknown solver {name!r}; use cvxpy:NAME[:high], qpsolvers:NAME[:high], "
        "sklearn:CLASS(...), liblinear:OPTIONS, libsvm:OPTIONS, command:TEMPLATE or "
        "python:MODULE:FUNCTION."
    )


def _run(args: Any) -> int:
    from qpsvm.suite import load, report, score

    instances = load(args.tier, family=args.family)
    results = []
    for name in args.solver:
        results += score(parse_solver(name), instances, progress=not args.quiet)
    print(report.markdown_table(results), end="")
    if args.json:
        report.write_json(results, args.json)
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (left, right) = plt.subplots(1, 2, figsize=(15, 5))
        report.performance_profile_plot(results, args.tol, ax=left)
        report.accuracy_time_plot(results, ax=right)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
    return 0


def _export(args: Any) -> int:
    from qpsvm.suite import export, load

    path = export(load(args.tier, family=args.family), args.directory)
    count = len(json.loads(Path(path).read_text())["instances"])
    print(f"wrote {count} QPs and {path}")
    return 0


def add_suite_parser(sub: Any) -> None:
    """Add ``suite run`` and ``suite export`` to the ``qpsvm`` subcommands."""
    suite = sub.add_parser(
        "suite",
        help="score solvers on the certified reference instances, or export them as QPs",
        description="The solver-validation suite: reference SVM instances with certified optima.",
    )
    actions = suite.add_subparsers(dest="action", required=True)
    run = actions.add_parser(
        "run",
        help="score solvers and print the results table",
        description="Run each --solver on the tier's instances, certify every answer and print "
        "the results table (success at 1e-3 / 1e-6 / 1e-9 certified relative suboptimality, "
        "failures, shifted geometric means).\n\nSolver names"
        + __doc__.split("Solver names")[1].replace("``", "").replace(" (:func:`parse_solver`)", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("--solver", action="append", required=True, help="solver name (repeatable)")
    for action in (run, actions.add_parser("export", help="write every instance as a QP file")):
        action.add_argument("--tier", default="small", choices=("small", "medium", "large"))
        action.add_argument("--family", default=None, help="only this family")
    run.add_argument("--json", metavar="FILE", help="write per-instance results and summaries")
    run.add_argument("--plot", metavar="PNG", help="performance profile and accuracy vs time")
    run.add_argument("--tol", type=float, default=1e-6, help="tolerance of the profile")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(run=_run)
    export = actions.choices["export"]
    export.add_argument("directory", metavar="DIR")
    export.set_defaults(run=_export)

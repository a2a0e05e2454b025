"""Command line.

* ``qpsvm demo`` solves every formulation exactly on bundled data and certifies it, compares the
  online solvers with the exact optima and certifies scikit-learn's answers
  (:mod:`qpsvm.demo`).
* ``qpsvm fit DATA`` solves a linear SVM on an svmlight / LETOR file exactly, prints the
  certificate and writes the model as JSON (``w``, ``b``, classes, formulation, ``C`` and the
  certificate summary).
* ``qpsvm certify DATA MODEL`` certifies another solver's model (LIBLINEAR, LIBSVM, SVM-light /
  SVM-rank, JSON or text) on the data, against the problem that solver solved
  (:func:`qpsvm.interop.validate`); ``qpsvm validate DATA MODEL...`` does so for many models and
  can print JSON.
* ``qpsvm suite run --solver NAME --tier small`` scores solvers on the certified reference
  instances; ``qpsvm suite export DIR`` writes them as QP files (:mod:`qpsvm.suite`).

Exit codes: 0 certified, 1 not certified (or no certified optimum found), 2 usage error or a
file that cannot be read, 3 a model whose problem qpsvm cannot state.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np

from qpsvm.contract import METHODS
from qpsvm.exceptions import (
    InvalidInputError,
    InvalidTypeError,
    SolverError,
    UnsupportedProblemError,
)

__all__ = [
    "EXIT_CANNOT_CHECK",
    "EXIT_CERTIFIED",
    "EXIT_NOT_CERTIFIED",
    "EXIT_USAGE",
    "build_parser",
    "main",
]

EXIT_CERTIFIED, EXIT_NOT_CERTIFIED, EXIT_USAGE, EXIT_CANNOT_CHECK = 0, 1, 2, 3
_EXIT_CODES = (
    "Exit 0 when certified, 1 when not (the answer is not optimal at --tol), 2 for bad input, "
    "3 when qpsvm cannot state the model's problem (logistic loss, nu-SVM, ...)."
)
#: Model file formats ``certify`` and ``validate`` read (see :mod:`qpsvm.interop.files`).
MODEL_FORMATS = ("liblinear", "libsvm", "svmlight", "json", "text")

#: ``--formulation`` choices: name -> (formulation class, multiclass variant).
FORMULATIONS: dict[str, tuple[str, str | None]] = {
    "primal": ("SoftMarginPrimal", None),
    "dual": ("SoftMarginDual", None),
    "ranking": ("RankingSVM", None),
    "crammer_singer": ("MulticlassSVM", "crammer_singer"),
    "weston_watkins": ("MulticlassSVM", "weston_watkins"),
}


def _status_line(stream: TextIO) -> Callable[[str], None]:
    """A transient status line on ``stream``, rewritten in place (shown only on a terminal)."""
    if not stream.isatty():
        return lambda message: None

    def show(message: str) -> None:
        stream.write(f"\r\x1b[K{message}")
        stream.flush()

    return show


def _demo(args: argparse.Namespace) -> int:
    from qpsvm.demo import run

    report = run(sys.stdout, C=args.C, status=_status_line(sys.stderr))
    return EXIT_CERTIFIED if report.certified else EXIT_NOT_CERTIFIED


def build_parser() -> argparse.ArgumentParser:
    """The ``qpsvm`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="qpsvm", description="Support vector machines solved exactly, with certificates."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log solver progress")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo",
        help="solve every formulation exactly on bundled data, certify it, and measure the "
        "online solvers and scikit-learn against it",
        description="Every formulation solved exactly and certified on data bundled with "
        "scikit-learn or generated, the online solvers (subgradient, SMO) compared with the "
        "exact optima, and scikit-learn's answers certified. Exit 0 when every qpsvm answer is "
        "certified and every comparison agrees with the certificates (scikit-learn's answers are "
        "informational), 1 otherwise.",
    )
    demo.add_argument(
        "--C",
        type=float,
        default=1.0,
        help="slack penalty of every formulation but the hard margin (default 1.0)",
    )
    demo.set_defaults(run=_demo)

    fit = sub.add_parser(
        "fit",
        help="solve a linear SVM on an svmlight / LETOR file exactly and certify it",
        description="Solve a linear SVM on DATA exactly, print its certificate and (with "
        "--output) write the model as JSON. Exit 0 when certified, 1 when not, 2 for bad input.",
    )
    fit.add_argument("data", metavar="DATA", help="svmlight / LETOR file (qid: gives groups)")
    _add_problem_arguments(fit)
    fit.add_argument(
        "--method",
        choices=sorted(name for name, method in METHODS.items() if method.solve),
        help="solve method (default: the formulation's measured default); "
        + ", ".join(f"{m.name}: {m.summary}" for m in METHODS.values() if m.solve),
    )
    fit.add_argument("--output", "-o", metavar="MODEL", help="write the model here, as JSON")
    fit.set_defaults(run=_fit)

    certify = sub.add_parser(
        "certify",
        help="certify another solver's model on an svmlight / LETOR file, on the problem it solved",
        description="Certify MODEL on DATA against the problem the tool that wrote it solved. "
        "MODEL is a LIBLINEAR, LIBSVM or SVM-light model file (kernel models included), an "
        "SVM-rank model file, a JSON model (as `qpsvm fit` writes) or a text file of numbers "
        "(w, or w then b; the larger label positive). The format is detected from the first line. "
        f"{_EXIT_CODES}",
    )
    certify.add_argument("data", metavar="DATA", help="svmlight / LETOR file")
    certify.add_argument("model", metavar="MODEL", help="model file")
    _add_validation_arguments(certify)
    certify.set_defaults(run=_certify)

    validate = sub.add_parser(
        "validate",
        help="certify one or many models of other solvers on the problems they solved",
        description="Certify every MODEL on DATA as `qpsvm certify` does and print one report "
        f"per model (or, with --json, a JSON list). {_EXIT_CODES}",
    )
    validate.add_argument("data", metavar="DATA", help="svmlight / LETOR file")
    validate.add_argument("models", metavar="MODEL", nargs="+", help="model files")
    _add_validation_arguments(validate)
    validate.add_argument("--json", action="store_true", help="print the reports as JSON")
    validate.set_defaults(run=_validate)

    from qpsvm.suite.cli import add_suite_parser

    add_suite_parser(sub)
    return parser


def _add_problem_arguments(parser: argparse.ArgumentParser) -> None:
    """``--formulation``, ``--C``, ``--no-intercept``, ``--tol`` and ``--solver`` of ``fit``."""
    parser.add_argument(
        "--formulation",
        choices=["auto", *FORMULATIONS],
        default="auto",
        help="auto: ranking when DATA has qid:, crammer_singer for more than two labels, "
        "primal otherwise",
    )
    parser.add_argument("--C", type=float, default=1.0, help="slack penalty C > 0 (default 1.0)")
    parser.add_argument(
        "--no-intercept",
        dest="fit_intercept",
        action="store_false",
        help="no intercept b (binary SVMs; ranking and multiclass SVMs never have one)",
    )
    parser.add_argument(
        "--tol", type=float, default=1e-9, help="relative gap to certify at (default 1e-9)"
    )
    parser.add_argument("--solver", help="CVXPY backend (default: qpsvm's, Clarabel)")


@dataclass
class _Data:
    """A data file: features, labels and, for LETOR files, query groups."""

    path: str
    X: Any
    y: np.ndarray
    qid: np.ndarray | None


def _load_data(path: str, n_features: int | None = None) -> _Data:
    from sklearn.datasets import load_svmlight_file

    try:
        X, y, qid = load_svmlight_file(path, n_features=n_features, query_id=True)
    except FileNotFoundError:
        raise InvalidInputError(f"data file {path!r} does not exist.") from None
    except (OSError, ValueError) as exc:
        raise InvalidInputError(
            f"cannot read {path!r} as an svmlight / LETOR file ('label [qid:q] index:value "
            f"...' per line): {exc}"
        ) from None
    if X.shape[0] == 0:
        raise InvalidInputError(f"data file {path!r} holds no samples.")
    return _Data(path, X, y, qid if qid.size else None)


def _resolve(name: str | None, data: _Data) -> str:
    if name not in (None, "auto"):
        return name
    if data.qid is not None:
        return "ranking"
    return "crammer_singer" if np.unique(data.y).shape[0] > 2 else "primal"


def _has_intercept(name: str) -> bool:
    """Only the binary SVMs have a free intercept (ranking cancels it, multiclass has none)."""
    return FORMULATIONS[name][0] in ("SoftMarginPrimal", "SoftMarginDual")


def _formulation(name: str, data: _Data, C: float, fit_intercept: bool) -> Any:
    import qpsvm.formulations as formulations

    cls_name, variant = FORMULATIONS[name]
    cls = getattr(formulations, cls_name)
    if name == "ranking":
        return cls(data.X, y=data.y, groups=data.qid, C=C)
    if variant is not None:
        return cls(data.X, data.y, C=C, variant=variant)
    return cls(data.X, data.y, C=C, fit_intercept=fit_intercept)


def _summary(cert: Any) -> dict[str, Any]:
    """The certificate's numbers, for JSON (infinities as strings)."""
    fields = {
        "passed": bool(cert.passed),
        "tol": cert.tol,
        "primal_objective": cert.primal_objective,
        "dual_objective": cert.dual_objective,
        "gap": cert.gap,
        "relative_gap": cert.relative_gap,
        "distance_bound": cert.distance_bound,
        "primal_infeasibility": cert.primal_infeasibility,
        "dual_infeasibility": cert.dual_infeasibility,
        "complementarity": cert.complementarity,
        "stationarity": cert.stationarity,
    }
    return {
        k: (v if isinstance(v, bool) or math.isfinite(v) else str(v)) for k, v in fields.items()
    }


def _fit(args: argparse.Namespace) -> int:
    import qpsvm

    data = _load_data(args.data)
    name = _resolve(args.formulation, data)
    fit_intercept = args.fit_intercept and _has_intercept(name)
    f = _formulation(name, data, args.C, fit_intercept)
    start = time.perf_counter()
    method = f.default_method() if args.method is None else args.method
    options = {"tol": args.tol} if METHODS[method].certified else {}
    sol = f.solve(method=method, solver=args.solver, **options)
    cert = f.certify(sol, tol=args.tol)
    n, d = data.X.shape
    print(
        f"{type(f).__name__} ({name}), C={args.C:g}, {n} samples x {d} features from "
        f"{args.data}: solved by {sol.solver} in {time.perf_counter() - start:.2f} s"
    )
    print(cert)
    if args.output:
        model = {
            "qpsvm_version": qpsvm.__version__,
            "formulation": name,
            "class": type(f).__name__,
            "C": args.C,
            "fit_intercept": fit_intercept,
            "n_features": d,
            "classes": None if name == "ranking" else f.classes_.tolist(),
            "w": np.asarray(sol.w).tolist(),
            "b": np.asarray(sol.b, dtype=np.float64).tolist(),
            "certificate": _summary(cert),
        }
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                json.dump(model, fh, indent=2)
                fh.write("\n")
        except OSError as exc:
            raise InvalidInputError(f"cannot write the model to {args.output!r}: {exc}") from None
        print(f"model written to {args.output}")
    return EXIT_CERTIFIED if cert.passed else EXIT_NOT_CERTIFIED


def _add_validation_arguments(parser: argparse.ArgumentParser) -> None:
    """``--C``, ``--weight``, ``--format``, ``--tol``, ``--exact`` of ``certify`` / ``validate``."""
    parser.add_argument(
        "--C",
        type=float,
        help="the C the model was trained with, in its tool's convention (SVM-rank: -c); "
        "model files of LIBLINEAR, LIBSVM and SVM-rank do not record it",
    )
    parser.add_argument(
        "--weight",
        action="append",
        metavar="LABEL:FACTOR",
        help="a class weight the model was trained with (LIBLINEAR / LIBSVM -wi); repeat per class",
    )
    parser.add_argument(
        "--format",
        choices=["auto", *MODEL_FORMATS],
        default="auto",
        help="the model file's format (default: detected from its first line)",
    )
    parser.add_argument(
        "--tol", type=float, default=1e-9, help="relative gap to certify at (default 1e-9)"
    )
    parser.add_argument(
        "--exact",
        action="store_true",
        help="also solve exactly and report P - P*, ||w - w*|| and |b - b*|",
    )


def _class_weight(items: list[str] | None) -> dict[float, float] | None:
    if not items:
        return None
    weights = {}
    for item in items:
        label, sep, factor = item.partition(":")
        try:
            weights[float(label)] = float(factor)
        except ValueError:
            sep = ""
        if not sep:
            raise InvalidInputError(f"--weight takes LABEL:FACTOR, e.g. 1:3; got {item!r}.")
    return weights


def _validation(args: argparse.Namespace, model: str) -> Any:
    from qpsvm.interop import validate

    data = _load_data(args.data)
    return validate(
        model,
        data.X,
        data.y,
        groups=data.qid,
        C=args.C,
        class_weight=_class_weight(args.weight),
        format=args.format,
        tol=args.tol,
        exact=args.exact,
    )


def _certify(args: argparse.Namespace) -> int:
    result = _validation(args, args.model)
    print(result)
    return EXIT_CERTIFIED if result.passed else EXIT_NOT_CERTIFIED


def _validate(args: argparse.Namespace) -> int:
    reports, codes = [], []
    for model in args.models:
        try:
            result = _validation(args, model)
        except UnsupportedProblemError as exc:
            reports.append({"source": model, "error": str(exc)})
            codes.append(EXIT_CANNOT_CHECK)
            continue
        reports.append(result.to_dict() if args.json else str(result))
        codes.append(EXIT_CERTIFIED if result.passed else EXIT_NOT_CERTIFIED)
    if args.json:
        print(json.dumps(reports, indent=2))
    else:
        print(
            "\n\n".join(
                r if isinstance(r, str) else f"{r['source']}: {r['error']}" for r in reports
            )
        )
    return max(codes)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``qpsvm`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return args.run(args)
    except UnsupportedProblemError as exc:
        print(f"qpsvm {args.command}: cannot check: {exc}", file=sys.stderr)
        return EXIT_CANNOT_CHECK
    except (InvalidInputError, InvalidTypeError) as exc:
        print(f"qpsvm {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SolverError as exc:
        print(f"qpsvm {args.command}: not certified: {exc}", file=sys.stderr)
        return EXIT_NOT_CERTIFIED


if __name__ == "__main__":
    sys.exit(main())

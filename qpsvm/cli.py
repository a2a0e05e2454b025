"""Command line.

* ``qpsvm demo`` solves every formulation exactly on bundled data and certifies it, compares the
  online solvers with the exact optima and certifies scikit-learn's answers
  (:mod:`qpsvm.demo`).
* ``qpsvm fit DATA`` solves a linear SVM on an svmlight / LETOR file exactly, prints the
  certificate and writes the model as JSON (``w``, ``b``, classes, formulation, ``C`` and the
  certificate summary).
* ``qpsvm certify DATA MODEL`` certifies another solver's linear model (a JSON file, or a text
  file holding ``w`` then ``b``) on the data.

Exit codes: 0 certified, 1 not certified (or no certified optimum found), 2 usage error or a
file that cannot be read.
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

from qpsvm.exceptions import InvalidInputError, InvalidTypeError, SolverError

__all__ = ["EXIT_CERTIFIED", "EXIT_NOT_CERTIFIED", "EXIT_USAGE", "build_parser", "main"]

EXIT_CERTIFIED, EXIT_NOT_CERTIFIED, EXIT_USAGE = 0, 1, 2

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
    fit.add_argument("--output", "-o", metavar="MODEL", help="write the model here, as JSON")
    fit.set_defaults(run=_fit)

    certify = sub.add_parser(
        "certify",
        help="certify a linear model (JSON, or text: w then b) on an svmlight / LETOR file",
        description="Certify the linear model MODEL on DATA: the duality gap of (w, b) for the "
        "SVM with slack penalty C. MODEL is a JSON file (as written by `qpsvm fit`, or any "
        'object with "w", "b" and optionally "C", "formulation", "classes", "fit_intercept") '
        "or a text file of numbers, w then b (binary or ranking; classes_[1], the larger label, "
        "is +1). Exit 0 when certified, 1 when not, 2 for bad input.",
    )
    certify.add_argument("data", metavar="DATA", help="svmlight / LETOR file")
    certify.add_argument("model", metavar="MODEL", help="JSON model, or text file: w then b")
    _add_problem_arguments(certify, defaults=False)
    certify.set_defaults(run=_certify)
    return parser


def _add_problem_arguments(parser: argparse.ArgumentParser, defaults: bool = True) -> None:
    """``--formulation``, ``--C``, ``--no-intercept``, ``--tol`` (and ``--solver`` for fit).

    Without ``defaults`` (certify), unset options fall back on the model file's values.
    """
    parser.add_argument(
        "--formulation",
        choices=["auto", *FORMULATIONS],
        default="auto" if defaults else None,
        help="auto: ranking when DATA has qid:, crammer_singer for more than two labels, "
        "primal otherwise" + ("" if defaults else " (default: the model's, else auto)"),
    )
    parser.add_argument(
        "--C",
        type=float,
        default=1.0 if defaults else None,
        help="slack penalty C > 0" + (" (default 1.0)" if defaults else " (default: the model's)"),
    )
    parser.add_argument(
        "--no-intercept",
        dest="fit_intercept",
        action="store_false",
        default=True if defaults else None,
        help="no intercept b (binary SVMs; ranking and multiclass SVMs never have one)",
    )
    parser.add_argument(
        "--tol", type=float, default=1e-9, help="relative gap to certify at (default 1e-9)"
    )
    if defaults:
        parser.add_argument("--solver", help="CVXPY backend (default: qpsvm's, Clarabel)")


@dataclass
class _Data:
    """A data file: features, labels and, for LETOR files, query groups."""

    path: str
    X: Any
    y: np.ndarray
    qid: np.ndarray | None


@dataclass
class _LinearModel:
    """A linear model read from a file; unset fields fall back on the command line."""

    w: np.ndarray
    b: Any
    C: float | None = None
    formulation: str | None = None
    fit_intercept: bool | None = None
    classes: list | None = None


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
    sol = f.solve(solver=args.solver, tol=args.tol)
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


def _numbers(value: Any, what: str, path: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{path}: {what} must be numbers; got {value!r:.80}.") from None
    if arr.size == 0 or not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{path}: {what} must be non-empty and finite.")
    return arr


def _read_model(path: str) -> _LinearModel:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise InvalidInputError(f"model file {path!r} does not exist.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read the model file {path!r}: {exc}") from None
    if text.lstrip().startswith("{"):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{path} is not valid JSON: {exc}") from None
        if "w" not in obj:
            raise InvalidInputError(f'{path}: the JSON model has no "w" (the weight vector).')
        name = obj.get("formulation")
        if name is not None and name not in FORMULATIONS:
            raise InvalidInputError(
                f"{path}: unknown formulation {name!r}; expected one of {sorted(FORMULATIONS)}."
            )
        C = obj.get("C")
        return _LinearModel(
            w=_numbers(obj["w"], '"w"', path),
            b=_numbers(obj.get("b", 0.0), '"b"', path),
            C=None if C is None else float(_numbers(C, '"C"', path)),
            formulation=name,
            fit_intercept=obj.get("fit_intercept"),
            classes=obj.get("classes"),
        )
    try:
        values = np.array(text.replace(",", " ").split(), dtype=np.float64)
    except ValueError:
        raise InvalidInputError(
            f"{path} is neither a JSON model nor a text file of numbers (w then b)."
        ) from None
    if values.size < 2 or not np.all(np.isfinite(values)):
        raise InvalidInputError(
            f"{path}: a text model holds w then b, at least two finite numbers; got {values.size}."
        )
    return _LinearModel(w=values[:-1], b=values[-1])


def _certify(args: argparse.Namespace) -> int:
    model = _read_model(args.model)
    data = _load_data(args.data, n_features=model.w.shape[-1])
    name = _resolve(args.formulation or model.formulation, data)
    C = args.C if args.C is not None else model.C
    if C is None:
        raise InvalidInputError(f"{args.model} does not say which C it was fitted with: pass --C.")
    if FORMULATIONS[name][1] is None and model.w.ndim != 1:
        raise InvalidInputError(
            f"{args.model}: w has shape {model.w.shape}, a multiclass model; pass "
            "--formulation crammer_singer or weston_watkins."
        )
    fit_intercept = _has_intercept(name) and (
        args.fit_intercept if args.fit_intercept is not None else model.fit_intercept is not False
    )
    f = _formulation("primal" if name == "dual" else name, data, C, fit_intercept)
    if model.classes is not None and name != "ranking":
        classes = np.asarray(model.classes)
        if classes.shape != f.classes_.shape or np.any(classes != f.classes_):
            raise InvalidInputError(
                f"the model's classes {model.classes} differ from the labels of {args.data} "
                f"({f.classes_.tolist()}); certify it on the data it was fitted to."
            )
    cert = f.certify(w=model.w, b=model.b, tol=args.tol)
    print(f"{args.model} on {args.data} as {type(f).__name__} ({name}), C={C:g}")
    print(cert)
    return EXIT_CERTIFIED if cert.passed else EXIT_NOT_CERTIFIED


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
    except (InvalidInputError, InvalidTypeError) as exc:
        print(f"qpsvm {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SolverError as exc:
        print(f"qpsvm {args.command}: not certified: {exc}", file=sys.stderr)
        return EXIT_NOT_CERTIFIED


if __name__ == "__main__":
    sys.exit(main())

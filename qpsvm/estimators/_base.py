"""What every qpsvm estimator shares: scikit-learn input checks as qpsvm's typed errors, and a
solve that always ends in a certificate."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from qpsvm.contract import METHODS, Problem
from qpsvm.exceptions import InvalidInputError, InvalidTypeError, QPSVMError
from qpsvm.solution import Solution
from qpsvm.verify.certificate import Certificate

__all__ = ["solve_certified", "typed_errors"]


@contextmanager
def typed_errors() -> Iterator[None]:
    """Re-raise scikit-learn's validation errors as qpsvm's typed errors, message unchanged.

    ``ValueError`` becomes :class:`~qpsvm.exceptions.InvalidInputError` and ``TypeError``
    :class:`~qpsvm.exceptions.InvalidTypeError`; both still subclass the original type, so
    scikit-learn's own checks (which match on those messages) keep passing.
    """
    try:
        yield
    except QPSVMError:
        raise
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from exc
    except TypeError as exc:
        raise InvalidTypeError(str(exc)) from exc


def solve_certified(
    f: Problem, method: str | None, solver: str | None, tol: float, options: dict[str, Any] | None
) -> tuple[Solution, Certificate]:
    """Solve ``f`` by ``method`` (``None``: its ``default_method()``) and return the solution
    with its certificate at ``tol``.

    Certified methods (:attr:`qpsvm.contract.Method.certified`) receive ``tol`` (they refuse to
    return an uncertified point); the answer of any other method (subgradient, SMO, the exact
    rational oracle) is certified afterwards, so a fitted estimator always reports how far from
    the optimum it is.
    """
    options = dict(options or {})
    method = f.default_method() if method is None else method
    if method in METHODS and METHODS[method].certified:
        options.setdefault("tol", tol)
    solution = f.solve(method=method, solver=solver, **options)
    certificate = solution.certificate
    if certificate is None or certificate.tol != tol:
        certificate = f.certify(solution, tol=tol)
    return solution, certificate

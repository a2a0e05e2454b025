"""What every qpsvm estimator shares: scikit-learn input checks as qpsvm's typed errors, and a
solve that always ends in a certificate."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from qpsvm.exceptions import InvalidInputError, InvalidTypeError, QPSVMError
from qpsvm.solution import Solution
from qpsvm.verify.certificate import Certificate

__all__ = ["EXACT_METHODS", "solve_certified", "typed_errors"]

#: Methods that solve to a certified optimum and accept the certificate tolerance ``tol``.
EXACT_METHODS = frozenset({"qp", "full", "working_set", "cutting_plane"})


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
    f: Any, method: str, solver: str | None, tol: float, options: dict[str, Any] | None
) -> tuple[Solution, Certificate]:
    """Solve ``f`` by ``method`` and return the solution with its certificate at ``tol``.

    Exact methods receive ``tol`` (they refuse to return an uncertified point); the answer of an
    approximate method (subgradient, SMO) is certified afterwards, so a fitted estimator always
    reports how far from the optimum it is.
    """
    options = dict(options or {})
    if method in EXACT_METHODS:
        options.setdefault("tol", tol)
    solution = f.solve(method=method, solver=solver, **options)
    certificate = solution.certificate
    if certificate is None or certificate.tol != tol:
        certificate = f.certify(solution, tol=tol)
    return solution, certificate

"""The one exception hierarchy of qpsvm.

Every error the library raises on purpose is a :class:`QPSVMError`. Errors about the caller's
input also subclass :class:`ValueError` or :class:`TypeError`, so code that already catches those
keeps working; solver failures subclass :class:`RuntimeError`. Each message says what is wrong
and how to fix it.
"""

from __future__ import annotations

__all__ = [
    "EnclosureError",
    "InaccurateSolutionError",
    "InfeasibleProblemError",
    "InvalidInputError",
    "InvalidTypeError",
    "NonConvexProblemError",
    "NotSeparableError",
    "ProblemMismatchWarning",
    "QPSVMError",
    "RoundingFloorError",
    "SolverError",
    "SolverNotInstalledError",
    "UncertifiedSolutionError",
    "UnsupportedProblemError",
]


class QPSVMError(Exception):
    """Base class of every error raised by qpsvm."""


class InvalidInputError(QPSVMError, ValueError):
    """An argument has the right type but a wrong value: NaN, a bad shape, C <= 0, one class..."""


class InvalidTypeError(QPSVMError, TypeError):
    """An argument has a type qpsvm cannot use (e.g. a kernel neither named nor callable)."""


class NotSeparableError(InvalidInputError):
    """The hard-margin problem is infeasible: no hyperplane separates the two classes.

    Use :class:`qpsvm.SoftMarginPrimal` (slack variables) instead.
    """


class NonConvexProblemError(InvalidInputError):
    """The kernel's Gram matrix on the data is proven not positive semidefinite (the poly
    kernel with ``coef0 < 0`` can be): the dual is then a nonconvex QP, whose global maximum
    no duality gap can certify (and the primal over the kernel expansion is unbounded below).

    Use a positive semidefinite kernel (poly with ``coef0 >= 0``, rbf, linear).
    """


class SolverError(QPSVMError, RuntimeError):
    """A solver failed or stopped without reaching an optimum qpsvm can certify."""


class InaccurateSolutionError(SolverError):
    """The solver stopped early (``optimal_inaccurate``, ``user_limit``, iteration limit)."""


class InfeasibleProblemError(SolverError):
    """The solver reports the problem infeasible or unbounded."""


class UncertifiedSolutionError(SolverError):
    """A solver returned a point whose certificate does not pass at the requested tolerance."""


class RoundingFloorError(UncertifiedSolutionError):
    """float64 cannot certify the tolerance asked: the certificate's rounding floor (the part
    of its gap that is its allowance for rounding, :attr:`qpsvm.Certificate.rounding_floor`)
    exceeds it and accounts for the gap of the best point found.

    The message states the floor reached. What helps: a ``tol`` above the floor, centring and
    rescaling the features (shifted or badly scaled features make large sums, whose rounding
    sets the floor), or the exact rational optimum, ``method="exact"``.

    Attributes
    ----------
    relative_floor : float
        The certificate's :attr:`~qpsvm.Certificate.relative_floor`.
    relative_gap : float
        The relative gap the best point reached (a ``tol`` it meets).
    """

    relative_floor: float = float("nan")
    relative_gap: float = float("nan")


class EnclosureError(QPSVMError, RuntimeError):
    """A rigorous lower bound exceeded a rigorous upper bound: impossible in exact arithmetic,
    so a bug in qpsvm (please report it with the data)."""


class SolverNotInstalledError(QPSVMError, ImportError):
    """The requested solver backend is not installed; the message names the package to install."""


class UnsupportedProblemError(InvalidInputError):
    """Another tool's model solves a problem qpsvm cannot state (logistic loss, nu-SVM, ...).

    The message names what is unsupported; qpsvm never certifies such a model against a
    different problem.
    """


class ProblemMismatchWarning(UserWarning):
    """A candidate comes from a solver that solved another problem than the formulation states.

    ``f.certify(estimator)`` still certifies the answer on ``f``'s problem; the warning names
    the differences (loss, intercept mode, ``C``, class weights...). :func:`qpsvm.validate`
    certifies the answer on the problem its solver solved.
    """

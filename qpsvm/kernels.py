"""Kernels ``k(x, x')`` for the dual formulation, and a factor of the Gram matrix for CVXPY.

The dual's quadratic term is ``||sum_i a_i y_i phi(x_i)||^2 = (a*y)^T K (a*y)``. CVXPY receives it
as ``sum_squares(L^T (a*y))`` with ``K = L L^T`` (or ``X^T (a*y)`` for the linear kernel, where no
``n x n`` matrix is ever formed), which is faster and more accurate than ``quad_form(K)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from numbers import Real

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from qpsvm.exceptions import InvalidInputError, InvalidTypeError

__all__ = ["KERNELS", "Kernel", "check_precomputed", "gram_factor", "make_kernel"]

KERNELS = ("linear", "rbf", "poly", "precomputed")


def _dense(A: np.ndarray | sp.spmatrix) -> np.ndarray:
    return A.toarray() if sp.issparse(A) else np.asarray(A)


def _sq_norms(A: np.ndarray | sp.spmatrix) -> np.ndarray:
    if sp.issparse(A):
        return np.asarray(A.multiply(A).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", A, A)


@dataclass(frozen=True)
class Kernel:
    """A kernel function with its parameters.

    ``linear``: ``x.x'``; ``rbf``: ``exp(-gamma ||x - x'||^2)``; ``poly``:
    ``(gamma x.x' + coef0)^degree``; ``precomputed``: the data already are the Gram matrix
    (rows: samples, columns: training samples); a callable ``k(A, B)`` returns the matrix
    ``[k(a_i, b_j)]``.
    """

    name: str
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 1.0
    function: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None

    def __call__(self, A: np.ndarray | sp.spmatrix, B: np.ndarray | sp.spmatrix) -> np.ndarray:
        """The matrix ``[k(a_i, b_j)]`` of shape ``(len(A), len(B))``."""
        if self.name == "linear":
            return _dense(A @ B.T)
        if self.name == "rbf":
            # in place: ||a||^2 + ||b||^2 - 2 a.b, clipped at 0, then exp(-gamma d2)
            K = _dense(A @ B.T)
            K *= -2.0
            K += _sq_norms(A)[:, None]
            K += _sq_norms(B)[None, :]
            np.maximum(K, 0.0, out=K)
            K *= -self.gamma
            return np.exp(K, out=K)
        if self.name == "poly":
            return (self.gamma * _dense(A @ B.T) + self.coef0) ** self.degree
        if self.name == "callable":
            K = np.asarray(self.function(A, B), dtype=np.float64)  # type: ignore[misc]
            if K.shape != (A.shape[0], B.shape[0]) or not np.all(np.isfinite(K)):
                raise InvalidInputError(
                    f"the kernel callable must return a finite array of shape "
                    f"({A.shape[0]}, {B.shape[0]}); got shape {K.shape}."
                )
            return K
        raise InvalidInputError("a precomputed kernel has no function; pass Gram matrices.")


def make_kernel(
    kernel: str | Callable,
    X: np.ndarray | sp.spmatrix,
    gamma: float | str | None,
    degree: int,
    coef0: float,
) -> Kernel:
    """Resolve the ``kernel`` argument; ``gamma=None`` (or ``"scale"``) is scikit-learn's
    ``1 / (n_features * X.var())``, ``"auto"`` is ``1 / n_features``."""
    if callable(kernel):
        return Kernel("callable", function=kernel)
    if not isinstance(kernel, str):
        raise InvalidTypeError(
            f"kernel must be one of {KERNELS} or a callable k(A, B); got {type(kernel).__name__}."
        )
    if kernel not in KERNELS:
        raise InvalidInputError(
            f"unknown kernel {kernel!r}; choose one of {KERNELS} or a callable."
        )
    if not (gamma is None or (isinstance(gamma, str | Real) and not isinstance(gamma, bool))):
        raise InvalidTypeError(
            f"gamma must be a positive number, 'scale' or 'auto'; got {type(gamma).__name__}."
        )
    if not isinstance(degree, Real) or isinstance(degree, bool):
        raise InvalidTypeError(f"degree must be a positive integer; got {type(degree).__name__}.")
    if not isinstance(coef0, Real) or isinstance(coef0, bool):
        raise InvalidTypeError(f"coef0 must be a real number; got {type(coef0).__name__}.")
    if gamma is None or gamma == "scale":
        var = (X.multiply(X).mean() - X.mean() ** 2) if sp.issparse(X) else X.var()
        g = 1.0 / (X.shape[1] * var) if var > 0 else 1.0
    elif gamma == "auto":
        g = 1.0 / X.shape[1]
    else:
        if isinstance(gamma, str) or not np.isfinite(gamma) or gamma <= 0:
            raise InvalidInputError(f"gamma must be > 0, 'scale' or 'auto'; got {gamma!r}.")
        g = float(gamma)
    if kernel == "poly" and (int(degree) != degree or degree < 1):
        raise InvalidInputError(f"degree must be a positive integer; got {degree!r}.")
    if not np.isfinite(coef0):
        raise InvalidInputError(f"coef0 must be finite; got {coef0!r}.")
    return Kernel(kernel, gamma=g, degree=int(degree), coef0=float(coef0))


def check_precomputed(K: np.ndarray) -> np.ndarray:
    """Check a training Gram matrix: square, symmetric and positive semidefinite."""
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise InvalidInputError(
            f"a precomputed kernel must be the square n x n Gram matrix of the training data; "
            f"got shape {K.shape}."
        )
    scale = max(1.0, float(np.max(np.abs(K))))
    if not np.allclose(K, K.T, rtol=0, atol=1e-10 * scale):
        raise InvalidInputError("the precomputed kernel is not symmetric; pass (K + K.T) / 2.")
    lam_min = float(np.linalg.eigvalsh(K)[0])
    if lam_min < -1e-8 * scale * K.shape[0]:
        raise InvalidInputError(
            f"the precomputed kernel is not positive semidefinite (smallest eigenvalue "
            f"{lam_min:.3g}); a valid kernel gives a PSD Gram matrix. Add a ridge or fix the "
            "kernel."
        )
    return K


def gram_factor(K: np.ndarray, rtol: float = 1e-13) -> np.ndarray:
    """A factor ``L`` with ``L L^T = K``.

    A Cholesky factorisation when ``K`` is positive definite (10-20x faster than an
    eigendecomposition); otherwise (rank-deficient ``K``, e.g. duplicated points) a symmetric
    eigendecomposition with eigenvalues below ``rtol * max`` dropped, so the factor exists for
    every PSD matrix.
    """
    try:
        return scipy.linalg.cholesky(K, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        pass
    lam, V = scipy.linalg.eigh(K, driver="evd", check_finite=False)
    keep = lam > rtol * max(float(lam[-1]), 1e-300)
    return V[:, keep] * np.sqrt(lam[keep])

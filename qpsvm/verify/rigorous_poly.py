r"""Proven bounds on the poly kernel's values and scores: the certificate's own evaluation of
:math:`K_{ij} = (\gamma\, x_i\cdot x_j + c_0)^p`, each value with a bound on its rounding that
follows the pair's own base, so values whose inner products cancel get bounds as small as the
values themselves.

The rounding model (:func:`poly_rows`), with ``u`` the unit roundoff and :math:`\gamma_k` Higham's
:math:`ku/(1 - ku)`:

* :math:`\hat d = fl(x_i \cdot x_j)`, a sum of at most ``L`` products (the features, or the most
  nonzeros of a sparse row) in any order, fused multiply-adds or not:
  :math:`|\hat d - d| \le \gamma_L A_{ij}` with :math:`A_{ij} = \sum_k |x_{ik} x_{jk}|
  \le N_i N_j`, :math:`N_i \ge \|x_i\|` (Cauchy-Schwarz; Higham, ASNA Lemma 3.1 and 3.3);
* :math:`t = fl(\gamma \hat d)`, :math:`z = fl(t + c_0)`: :math:`|z - b| \le \zeta_{ij} =
  \gamma\gamma_L A_{ij} + u|t| + u|z|` for the exact base :math:`b = \gamma d + c_0`;
* :math:`\hat K = z^p` by binary powering (:func:`int_power`), a product of ``p`` copies of
  ``z`` with ``p - 1`` roundings on every path: :math:`|\hat K - z^p| \le \gamma_{p-1}|z|^p
  \le \gamma_{p-1}|\hat K| / (1 - \gamma_{p-1})`;
* the mean value theorem: :math:`|z^p - b^p| \le p \max(|z|, |b|)^{p-1} |z - b|
  \le p (|z| + \zeta_{ij})^{p-1} \zeta_{ij}`.

So :math:`|\hat K_{ij} - K_{ij}| \le E_{ij} = \gamma_{p-1}|\hat K_{ij}|/(1 - \gamma_{p-1})
+ p (|z| + \zeta_{ij})^{p-1}\zeta_{ij}`, plus :data:`~qpsvm._numerics.TINY` per operation for
underflow (a product that underflows loses at most half a subnormal unit, and later factors
of a base below 1 in magnitude do not enlarge it); every operation of the bound is rounded up.
The scores :math:`g = K(\alpha y)` are summed by Dot2 from these values (:func:`poly_score_error`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from qpsvm._numerics import TINY, U, gamma, up
from qpsvm.verify.rigorous import SPLIT_LIMIT

__all__ = ["PolyBound", "int_power", "poly_bound", "poly_rows", "poly_score_error"]


@dataclass(frozen=True)
class PolyBound:
    r"""What the proven bounds on the poly kernel's values need (:func:`poly_bound`).

    Attributes
    ----------
    scale, coef0 : float
        :math:`\gamma` and :math:`c_0`.
    degree : int
        ``p``.
    norm : numpy.ndarray
        :math:`N_i \ge \|x_i\|`, upper bounds on the exact row norms.
    leaves : int
        ``L``, the most products in one inner product.
    diagonal : float
        An upper bound on :math:`\max_i K_{ii}`, which bounds every :math:`|K_{ij}|` when the
        kernel is positive semidefinite (:math:`c_0 \ge 0`).
    """

    scale: float
    coef0: float
    degree: int
    norm: np.ndarray
    leaves: int
    diagonal: float

    @property
    def positive_semidefinite(self) -> bool:
        r"""Whether the kernel is positive semidefinite: :math:`c_0 \ge 0` (then
        :math:`(\gamma\, x\cdot x' + c_0)^p` is a sum of products of such kernels, Schur's
        product theorem), which the duality argument of the certificate needs."""
        return self.coef0 >= 0.0


def int_power(base: np.ndarray, degree: int) -> np.ndarray:
    """``base ** degree`` by binary powering (as numba's integer power computes it in the
    compiled kernel rows): ``degree - 1`` roundings on every path (:mod:`this module's model
    <qpsvm.verify.rigorous_poly>`); ``numpy.power`` calls the C library's ``pow``, whose error
    is not documented."""
    square = np.array(base, dtype=np.float64)
    result = None
    while degree:
        if degree & 1:
            result = square.copy() if result is None else result * square
        degree >>= 1
        if degree:
            square = square * square
    return np.ones_like(square) if result is None else result


def poly_bound(scale: float, coef0: float, degree: int, X: Any) -> PolyBound:
    r"""The :class:`PolyBound` of the kernel :math:`(\gamma\, x\cdot x' + c_0)^p` on the rows of
    ``X``: :math:`N_i` from the computed squared norm (a sum of ``L`` squares, within
    :math:`\gamma_L` of itself, and the square root rounded up), and
    :math:`\max_i K_{ii} \le \max_i (\gamma N_i^2 + |c_0|)^p`, rounded up."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        leaves = int(np.max(np.diff(X.indptr), initial=0))
        sq = np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    else:
        leaves = int(X.shape[1])
        sq = np.einsum("ij,ij->i", X, X)
    sq = up(up(sq * (1.0 + 2.0 * gamma(leaves + 1))) + leaves * TINY)
    norm = up(np.sqrt(sq))
    top = up(up(scale * float(np.max(sq, initial=0.0))) + abs(coef0))
    diagonal = float(up(int_power(np.array([top]), degree)[0] * (1.0 + 2.0 * gamma(degree + 1))))
    return PolyBound(float(scale), float(coef0), int(degree), norm, leaves, diagonal)


def poly_rows(bound: PolyBound, X: Any, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Rows ``K[idx, :]`` of the poly kernel, evaluated as the module describes, and the
    proven bound ``E[idx, :]`` on each value's error, :math:`|\hat K_{ij} - K_{ij}| \le E_{ij}`
    with ``K`` the exact kernel of the float data."""
    rows = X[idx] @ X.T
    d = rows.toarray() if sp.issparse(rows) else np.asarray(rows, dtype=np.float64)
    p = bound.degree
    t = bound.scale * d
    z = t + bound.coef0
    K = int_power(z, p)
    # zeta = gamma gamma_L N_i N_j + u |t| + u |z|, rounded up (|d^ - d| <= gamma_L N_i N_j)
    g_l = gamma(bound.leaves)
    reach = np.multiply.outer(bound.norm[idx], bound.norm * (bound.scale * g_l))
    np.abs(t, out=t)
    zeta = t
    zeta *= U
    zeta += np.abs(z) * U
    zeta += reach
    zeta *= 1.0 + 16.0 * U
    zeta += float(up((bound.scale * bound.leaves + 3.0) * TINY))
    del reach
    # p (|z| + zeta)^(p - 1) zeta, rounded up
    np.abs(z, out=z)
    z += zeta
    z *= 1.0 + 4.0 * U
    slope = int_power(z, p - 1) if p > 1 else np.ones_like(z)
    slope *= zeta
    slope *= p * (1.0 + 2.0 * gamma(p + 2))
    # gamma_{p-1} |K^| / (1 - gamma_{p-1})
    g_p = gamma(p - 1)
    slope += np.abs(K) * (g_p / (1.0 - g_p) * (1.0 + 4.0 * U))
    slope *= 1.0 + 8.0 * U
    slope += (2 * p + 2) * TINY
    if float(np.max(np.abs(K), initial=0.0)) >= SPLIT_LIMIT:
        # Dot2's splitting of the values would overflow (tdot2 then sums plainly): no bound
        slope[:] = np.inf
    return K, up(slope)


def poly_score_error(
    alpha: np.ndarray, magnitude: np.ndarray, errors: np.ndarray, scores: np.ndarray
) -> np.ndarray:
    r"""``e`` with :math:`|\hat g_i - g_i| \le e_i` for scores ``g = K (alpha y)`` summed in
    twice the working precision (Dot2, :func:`qpsvm._numerics.tdot2`) over the ``m`` nonzero
    ``alpha_j`` from the values of :func:`poly_rows`, with ``magnitude`` the computed
    :math:`\hat M = |\hat K|\,|\alpha|` and ``errors`` the computed :math:`\hat E^T |\alpha|`:

    .. math::

        e_i = u |\hat g_i| + \frac{\gamma_m^2 \hat M_i + (\hat E^T|\alpha|)_i}{1 - \gamma_m}

    (Dot2's bound :math:`u|g| + \gamma_m^2 \sum_j |\alpha_j \hat K_{ij}|`, Ogita, Rump and
    Oishi 2005, for the sum of the rounded values; each value within :math:`E_{ij}` of the exact
    one; the sums of nonnegative terms within :math:`\gamma_m` of their computed values),
    rounded up."""
    m = int(np.count_nonzero(alpha))
    g_m = gamma(m + 1)
    shrink = 1.0 / (1.0 - g_m) * (1.0 + 4.0 * U)
    total = (g_m * g_m * np.abs(magnitude) + errors) * shrink
    return up((U * np.abs(scores) + total) * (1.0 + 4.0 * U) + m * TINY)

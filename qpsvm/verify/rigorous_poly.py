r"""Proven bounds on the poly kernel's values and scores: the certificate's own evaluation of
:math:`K_{ij} = (\gamma\, x_i\cdot x_j + c_0)^p`, each value with a bound on its rounding that
follows the pair's own base, so values whose inner products cancel get bounds as small as the
values themselves.

The rounding model (:func:`poly_rows`), with ``u`` the unit roundoff and :math:`\gamma_k` Higham's
:math:`ku/(1 - ku)`:

* the inner product :math:`d = x_i \cdot x_j`, a sum of at most ``L`` products (the features,
  or the most nonzeros of a sparse row), computed nearly exactly by splitting (Ozaki's scheme,
  :class:`SplitRows`): each row is ``x = h + l`` with ``h`` on a grid of
  :math:`2^{-\beta}` times a power of two above the row's largest entry,
  :math:`2\beta + \lceil\log_2 L\rceil \le 53`, so that :math:`h_i \cdot h_j` is exact in
  any order (every partial sum an integer below :math:`2^{53}` times the grids' product), and
  :math:`\hat d = fl(h_i\cdot h_j + fl(h_i\cdot l_j + l_i\cdot x_j))` is within
  :math:`\delta_{ij} = u|\hat d| + \gamma_{L+2}(\|h_i\|\|l_j\| + \|l_i\|\|x_j\|)`
  (Higham, ASNA Lemma 3.1 and 3.3, on the small cross products; fused multiply-adds or not).
  Where the grids would leave the exponent range, the plain product, within
  :math:`\delta_{ij} = \gamma_L \|x_i\|\|x_j\|`;
* :math:`t = fl(\gamma \hat d)`, :math:`z = fl(t + c_0)`: :math:`|z - b| \le \zeta_{ij} =
  \gamma\delta_{ij} + u|t| + u|z|` for the exact base :math:`b = \gamma d + c_0`;
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

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from qpsvm._jit import ENTRY
from qpsvm._numerics import TINY, U, gamma, up
from qpsvm.verify.rigorous import SPLIT_LIMIT

__all__ = [
    "PolyBound",
    "SplitRows",
    "int_power",
    "poly_bound",
    "poly_rows",
    "poly_score_error",
    "split_rows",
]


@dataclass(frozen=True)
class SplitRows:
    r"""The rows of ``X`` split as ``X = high + low`` (:func:`split_rows`): the entries of row
    ``i`` of ``high`` are integers of at most ``bits`` bits times the power of two ``q_i``,
    so every inner product of two rows of ``high`` over ``L`` features is exact in floating
    point; ``low`` is the exact remainder, :math:`|l_{ik}| \le q_i / 2`.

    Attributes
    ----------
    high, low : numpy.ndarray or scipy.sparse.csr_matrix
        The parts, of the type of ``X``.
    high_norm, low_norm : numpy.ndarray
        Upper bounds on the exact 2-norms of their rows.
    """

    high: Any
    low: Any
    high_norm: np.ndarray
    low_norm: np.ndarray


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
    split : SplitRows or None
        The rows split for nearly exact inner products (``None`` where the grids would leave
        the exponent range).
    diagonal : float
        An upper bound on :math:`\max_i K_{ii}`, which bounds every :math:`|K_{ij}|` when the
        kernel is positive semidefinite (:math:`c_0 \ge 0`).
    """

    scale: float
    coef0: float
    degree: int
    norm: np.ndarray
    leaves: int
    split: SplitRows | None
    diagonal: float

    @property
    def positive_semidefinite(self) -> bool:
        r"""Whether the kernel is positive semidefinite: :math:`c_0 \ge 0` (then
        :math:`(\gamma\, x\cdot x' + c_0)^p` is a sum of products of such kernels, Schur's
        product theorem), which the duality argument of the certificate needs."""
        return self.coef0 >= 0.0


@numba.njit(**ENTRY)
def int_power(base: float, degree: int) -> float:  # pragma: no cover - compiled
    """``base ** degree`` by binary powering (as numba's integer power computes it in the
    compiled kernel rows): a product of ``degree`` copies of ``base`` with ``degree - 1``
    roundings on every path (the module's model); ``numpy.power`` calls the C library's
    ``pow``, whose error is not documented."""
    result = 1.0
    square = base
    first = True
    while degree:
        if degree & 1:
            result = square if first else result * square
            first = False
        degree >>= 1
        if degree:
            square = square * square
    return result


@numba.njit(**ENTRY)
def _values_and_bounds(
    d, left, right, left2, right2, on_d, scale, coef0, degree, c, out
):  # pragma: no cover - compiled
    """The poly values from the inner products ``d`` (in place) and their bounds (``out``) in
    one pass (:func:`poly_rows`): ``delta = left_i right_j + left2_i right2_j + on_d |d|``,
    then the module's model with the constants ``c`` of :func:`poly_rows`, every rounding
    covered by the factors in ``c`` and the final step rounded up."""
    for i in range(d.shape[0]):
        for j in range(d.shape[1]):
            dd = d[i, j]
            delta = (left[i] * right[j] + left2[i] * right2[j] + on_d * abs(dd)) * c[0] + c[1]
            t = scale * dd
            z = t + coef0
            value = int_power(z, degree)
            d[i, j] = value
            zeta = (scale * delta + U * abs(t) + U * abs(z)) * c[0] + c[2]
            w = (abs(z) + zeta) * c[3]
            slope = int_power(w, degree - 1) * zeta * c[4] + abs(value) * c[5]
            out[i, j] = np.nextafter(slope * c[6] + c[7], np.inf)


def _norm_upper(X: Any, leaves: int) -> np.ndarray:
    r"""Upper bounds on the exact row norms: the computed squared norm (a sum of ``L`` squares,
    within :math:`\gamma_L` of itself, and ``TINY`` per square for underflow), its square root
    rounded up."""
    if sp.issparse(X):
        sq = np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    else:
        sq = np.einsum("ij,ij->i", X, X)
    sq = up(up(sq * (1.0 + 2.0 * gamma(leaves + 1))) + leaves * TINY)
    return up(np.sqrt(sq))


def split_rows(X: Any, leaves: int, norm: np.ndarray) -> SplitRows | None:
    r"""``X = high + low`` (:class:`SplitRows`) with :math:`\beta = \lfloor (53 -
    \lceil\log_2 L\rceil) / 2 \rfloor` bits per entry of ``high``: ``q_i = 2^{e_i - \beta}``
    with :math:`2^{e_i}` above the row's largest magnitude, ``high = round(x / q) q`` (exact:
    ``q`` is a power of two), ``low = x - high`` (exact: the remainder of a float on a coarser
    grid), so :math:`|h_{ik} h_{jk}| \le 2^{2\beta} q_i q_j` and the ``L`` products sum
    exactly. ``None`` when a product of grids :math:`q_i q_j` could be below the smallest
    subnormal :math:`2^{-1074}` or a sum :math:`L\, 2^{e_i + e_j}` near overflow (then every
    partial sum is no longer representable)."""
    bits = (53 - math.ceil(math.log2(max(leaves, 1)))) // 2
    if sp.issparse(X):
        values = X.data
        largest = np.asarray(abs(X).max(axis=1).todense(), dtype=np.float64).ravel()
    else:
        values = X
        largest = np.max(np.abs(X), axis=1, initial=0.0)
    _, exponent = np.frexp(largest)  # largest < 2^exponent
    if exponent.size == 0:
        return None
    low_end = 2 * (int(np.min(exponent)) - bits)
    high_end = 2 * int(np.max(exponent)) + math.ceil(math.log2(max(leaves, 1)))
    if low_end < -1074 or high_end > 1000:
        return None
    q = np.ldexp(1.0, exponent - bits)
    grid = q[np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))] if sp.issparse(X) else q[:, None]
    high_values = np.round(values / grid) * grid
    low_values = values - high_values
    if sp.issparse(X):
        high = sp.csr_matrix((high_values, X.indices, X.indptr), shape=X.shape)
        low = sp.csr_matrix((low_values, X.indices, X.indptr), shape=X.shape)
    else:
        high, low = high_values, low_values
    low_norm = _norm_upper(low, leaves)
    return SplitRows(high, low, up(norm + low_norm), low_norm)


def poly_bound(scale: float, coef0: float, degree: int, X: Any) -> PolyBound:
    r"""The :class:`PolyBound` of the kernel :math:`(\gamma\, x\cdot x' + c_0)^p` on the rows of
    ``X``: :math:`N_i` from the computed squared norm (a sum of ``L`` squares, within
    :math:`\gamma_L` of itself, and the square root rounded up), and
    :math:`\max_i K_{ii} \le \max_i (\gamma N_i^2 + |c_0|)^p`, rounded up."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        leaves = int(np.max(np.diff(X.indptr), initial=0))
    else:
        leaves = int(X.shape[1])
    norm = _norm_upper(X, leaves)
    square = float(up(float(np.max(norm, initial=0.0)) ** 2))
    top = up(up(scale * square) + abs(coef0))
    diagonal = float(up(int_power(float(top), int(degree)) * (1.0 + 2.0 * gamma(degree + 1))))
    split = split_rows(X, leaves, norm)
    return PolyBound(float(scale), float(coef0), int(degree), norm, leaves, split, diagonal)


def _dense(M: Any) -> np.ndarray:
    return M.toarray() if sp.issparse(M) else np.asarray(M, dtype=np.float64)


def poly_rows(bound: PolyBound, X: Any, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Rows ``K[idx, :]`` of the poly kernel, evaluated as the module describes, and the
    proven bound ``E[idx, :]`` on each value's error, :math:`|\hat K_{ij} - K_{ij}| \le E_{ij}`
    with ``K`` the exact kernel of the float data.

    The inner products are split (:class:`SplitRows`) when they can be, with
    :math:`\delta_{ij} = u|\hat d| + \gamma_{L+2}(\|h_i\|\|l_j\| + \|l_i\|\|x_j\|)`, else
    plain with :math:`\delta_{ij} = \gamma_L \|x_i\|\|x_j\|`; the rest is one compiled pass
    whose sums and products of nonnegative terms are each covered by a factor :math:`1 + 2u`
    (``c``), plus :data:`~qpsvm._numerics.TINY` per operation that may underflow."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
    split, L, p, scale = bound.split, bound.leaves, bound.degree, bound.scale
    zero = np.zeros(X.shape[0])
    if split is None:
        d = _dense(X[idx] @ X.T)
        terms = (bound.norm[idx], bound.norm * gamma(L), zero[idx], zero, 0.0)
    else:
        d = _dense(split.high[idx] @ split.high.T)  # exact
        d += _dense(split.high[idx] @ split.low.T) + _dense(split.low[idx] @ X.T)
        g = gamma(L + 2)
        terms = (split.high_norm[idx], split.low_norm * g, split.low_norm[idx], bound.norm * g, U)
    g_p = gamma(p - 1)
    c = np.array(
        [
            1.0 + 16.0 * U,  # delta, zeta: at most six roundings
            float(up((2 * L + 1) * TINY)),  # delta: products that underflow
            float(up((scale * (2 * L + 1) + 3.0) * TINY)),  # zeta: and gamma d, t + c0
            1.0 + 4.0 * U,  # |z| + zeta
            p * (1.0 + 2.0 * gamma(p + 2)),  # the power p - 1, the products by zeta and p
            g_p / (1.0 - g_p) * (1.0 + 4.0 * U),  # gamma_{p-1} |K| / (1 - gamma_{p-1})
            1.0 + 8.0 * U,  # the sum
            float((2 * p + 2) * TINY),  # underflow in the powers
        ]
    )
    E = np.empty_like(d)
    _values_and_bounds(d, *terms, float(scale), float(bound.coef0), int(p), c, E)
    if float(np.max(np.abs(d), initial=0.0)) >= SPLIT_LIMIT:
        # Dot2's splitting of the values would overflow (tdot2 then sums plainly): no bound
        E[:] = np.inf
    return d, E


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

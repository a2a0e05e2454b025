r"""Proven bounds on the poly kernel's values and scores: the certificate's own evaluation of
:math:`K_{ij} = (\gamma\, x_i\cdot x_j + c_0)^p`, each value an unevaluated sum ``hi + lo``
with a bound on its error that follows the pair's own base, far below a unit of round-off of
the value, so that the scores' bounds do not grow with :math:`\sum_j \alpha_j |K_{ij}|` where
large values cancel in a small score.

The rounding model (:func:`poly_pair_rows`), with ``u`` the unit roundoff and :math:`\gamma_k`
Higham's :math:`ku/(1 - ku)`:

* the inner product :math:`d = x_i \cdot x_j`, a sum of at most ``L`` products (the features,
  or the most nonzeros of a sparse row), computed nearly exactly by splitting (Ozaki's scheme,
  :class:`SplitRows`): each row is ``x = h + l`` with ``h`` on a grid of
  :math:`2^{-\beta}` times a power of two above the row's largest entry,
  :math:`2\beta + \lceil\log_2 L\rceil \le 53`, so that :math:`d_h = h_i \cdot h_j` is exact
  in any order (every partial sum an integer below :math:`2^{53}` times the grids' product),
  and the cross part :math:`\hat d_l = fl(h_i\cdot l_j + l_i\cdot x_j)` (about
  :math:`2^{-\beta}` of ``d``) is within
  :math:`\delta_{ij} = \gamma_{L+2}(\|h_i\|\|l_j\| + \|l_i\|\|x_j\|)` (Higham, ASNA Lemma 3.1
  and 3.3; fused multiply-adds or not). Where the grids would leave the exponent range,
  :math:`d_h` is the plain product and :math:`\delta_{ij} = \gamma_L \|x_i\|\|x_j\|`;
* the base :math:`b = \gamma d + c_0` as ``s + t``: :math:`\gamma d_h = p + e_p` (TwoProduct),
  :math:`p + c_0 = s + e_s` (TwoSum), :math:`t = fl(fl(e_p + e_s) + fl(\gamma \hat d_l))`, so
  :math:`|s + t - b| \le \zeta_{ij} = \gamma\delta_{ij} + 8u(|e_p| + |e_s| + |\gamma\hat d_l|
  + |t|)`, about :math:`u 2^{-\beta}|b|` (the pair renormalised by TwoSum, exactly);
* :math:`z^p`, ``z = s + t``, by ``p - 1`` double-double products: ``(v_h + v_l) z`` is
  :math:`v_h s` (TwoProduct, exact) plus :math:`fl(fl(v_h t) + fl(v_l s)) + e`, renormalised,
  with :math:`v_l t` dropped, so the running bound
  :math:`\epsilon_k = \epsilon_{k-1}|z| + |v_l||t| + 8u(|v_h t| + |v_l s| + |e|)` (``8u``
  covering :math:`\gamma_3` and TwoProduct's error where its partial products underflow)
  bounds :math:`|v_h + v_l - z^k|`, a few :math:`u^2 |z|^k`;
* the mean value theorem: :math:`|z^p - b^p| \le p \max(|z|, |b|)^{p-1} |z - b|
  \le p (|z| + \zeta_{ij})^{p-1} \zeta_{ij}`.

So :math:`|\hat K^{hi}_{ij} + \hat K^{lo}_{ij} - K_{ij}| \le E_{ij} = \epsilon_p
+ p (|z| + \zeta_{ij})^{p-1}\zeta_{ij}`, plus :data:`~qpsvm._numerics.TINY` per operation for
underflow (a product that underflows loses at most half a subnormal unit, and later factors
of a base below 1 in magnitude do not enlarge it); every operation of the bound is rounded up.
On the kernel benchmark's data :math:`E_{ij}` is a median :math:`2\cdot 10^{-21}` of the value,
where one rounding to float64 is :math:`1.1\cdot 10^{-16}` and binary powering's
:math:`\gamma_{p-1}` with the base's error about :math:`8u`. The scores
:math:`g = K(\alpha y)` are summed by Dot2 from the high parts, the low parts' products
joining it as single terms (:func:`poly_score_error`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from qpsvm._jit import ENTRY
from qpsvm._numerics import TINY, U, gamma, next_up, product_error, up
from qpsvm.verify.rigorous import SPLIT_LIMIT

__all__ = [
    "PolyBound",
    "SplitRows",
    "int_power",
    "poly_bound",
    "poly_pair_rows",
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


@numba.njit(cache=True, inline="always")
def _two_sum(a, b):  # pragma: no cover - compiled
    """Knuth's TwoSum: ``a + b = s + e`` exactly, ``s = fl(a + b)`` (``|e| <= u|s|``)."""
    s = a + b
    z = s - a
    return s, (a - (s - z)) + (b - z)


@numba.njit(**ENTRY)
def _values_and_bounds(
    dh, dl, left, right, left2, right2, scale, coef0, degree, c, hi, lo, out
):  # pragma: no cover - compiled
    """The poly values as unevaluated sums ``hi + lo`` from the inner products ``dh + dl``
    and their bounds (``out``) (:func:`poly_pair_rows`): the cross part ``dl`` within
    ``delta = left_i right_j + left2_i right2_j`` of its exact value, then the base ``s + t``
    and the power in double-double arithmetic with the running bounds of the module's model,
    the constants ``c`` of :func:`poly_pair_rows` covering the roundings of the bounds, and
    the final step rounded up (:func:`~qpsvm._numerics.next_up`).

    Row by row, each stage a pass over the row's entries (the base, each of the ``p - 1``
    products, the binary powering of :func:`int_power` for the slope, the bound), loops
    without calls or inner loops that the compiler vectorises; the same operations on each
    entry as one entry's chain (measured, 667 x 2000 at degree 3: 8.2 ms against 27.6 ms for
    the chain entry by entry, whose ``nextafter`` from libm alone was 5 ms more; the same
    floats)."""
    n = dh.shape[1]
    S, T, Z, size, eps = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    W, R = np.empty(n), np.empty(n)
    for i in range(dh.shape[0]):
        arow, crow, vh, vl, bound = dh[i], dl[i], hi[i], lo[i], out[i]
        li, l2i = left[i], left2[i]
        for j in range(n):
            a = arow[j]
            delta = (li * right[j] + l2i * right2[j]) * c[0] + c[1]
            # the base gamma (dh + cross) + c0 = s + t: TwoProduct, TwoSum, the small parts
            p = scale * a
            ep = product_error(scale, a, p)
            cc = scale * crow[j]
            s, es = _two_sum(p, coef0)
            t = (ep + es) + cc
            Z[j] = (scale * delta + c[2] * (abs(ep) + abs(es) + abs(cc) + abs(t))) * c[0] + c[3]
            s, t = _two_sum(s, t)
            S[j], T[j] = s, t
            size[j] = (abs(s) + abs(t)) * c[4]
            vh[j], vl[j], eps[j] = s, t, 0.0
        # z^p by repeated double-double products, eps bounding |vh + vl - z^k|
        for _ in range(degree - 1):
            for j in range(n):
                s, t, uh, ul = S[j], T[j], vh[j], vl[j]
                ph = uh * s
                pe = product_error(uh, s, ph)
                x1 = uh * t
                x2 = ul * s
                step = abs(ul) * abs(t) + c[5] * (abs(x1) + abs(x2) + abs(pe))
                eps[j] = (eps[j] * size[j] + step) * c[0] + c[6]
                vh[j], vl[j] = _two_sum(ph, (x1 + x2) + pe)
        for j in range(n):
            W[j] = (size[j] + Z[j]) * c[4]
        # R = int_power(W, degree - 1), entry by entry: the same binary powering
        e, first = degree - 1, True
        while e:
            if e & 1:
                for j in range(n):
                    R[j] = W[j] if first else R[j] * W[j]
                first = False
            e >>= 1
            if e:
                for j in range(n):
                    W[j] = W[j] * W[j]
        if first:
            R[:] = 1.0
        for j in range(n):
            slope = R[j] * Z[j] * c[7]
            top = next_up((slope + eps[j]) * c[0] + c[8])
            finite = abs(arow[j]) < SPLIT_LIMIT and abs(S[j]) < SPLIT_LIMIT
            bound[j] = top if finite and abs(vh[j]) < SPLIT_LIMIT else np.inf


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


def poly_pair_rows(
    bound: PolyBound, X: Any, idx: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Rows ``K[idx, :]`` of the poly kernel as unevaluated sums ``hi + lo``, evaluated as the
    module describes, and the proven bound ``E[idx, :]``,
    :math:`|\hat K^{hi}_{ij} + \hat K^{lo}_{ij} - K_{ij}| \le E_{ij}` with ``K`` the exact
    kernel of the float data.

    The inner products are split (:class:`SplitRows`) when they can be: ``hh`` exact and the
    cross part within :math:`\delta_{ij} = \gamma_{L+2}(\|h_i\|\|l_j\| + \|l_i\|\|x_j\|)`,
    else plain (``hh`` the computed product, no cross part) with
    :math:`\delta_{ij} = \gamma_L \|x_i\|\|x_j\|`; the rest is one compiled pass whose sums
    and products of nonnegative terms are each covered by the factors ``c``, plus
    :data:`~qpsvm._numerics.TINY` per operation that may underflow. Where a value, a base or
    an inner product reaches Dekker's splitting limit (:data:`SPLIT_LIMIT`), its bound is
    infinite."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
    split, L, p, scale = bound.split, bound.leaves, bound.degree, bound.scale
    zero = np.zeros(X.shape[0])
    if split is None:
        dh = _dense(X[idx] @ X.T)
        dl = np.zeros_like(dh)
        terms = (bound.norm[idx], bound.norm * gamma(L), zero[idx], zero)
    else:
        dh = _dense(split.high[idx] @ split.high.T)  # exact
        dl = _dense(split.high[idx] @ split.low.T) + _dense(split.low[idx] @ X.T)
        g = gamma(L + 2)
        terms = (split.high_norm[idx], split.low_norm * g, split.low_norm[idx], bound.norm * g)
    c = np.array(
        [
            1.0 + 16.0 * U,  # delta, zeta, eps and E: at most eight roundings each
            float(up((2 * L + 1) * TINY)),  # delta: products that underflow
            8.0 * U,  # zeta: gamma dl, the sums into t, TwoProduct's error under underflow
            float(up(16.0 * TINY)),  # zeta: gamma dh, gamma dl and t's parts underflowing
            1.0 + 4.0 * U,  # |s| + |t| >= |z|, and |z| + zeta
            8.0 * U,  # a product's low part: gamma_3, and TwoProduct under underflow
            float(up(16.0 * TINY)),  # a product's parts underflowing
            p * (1.0 + 2.0 * gamma(p + 2)),  # the power p - 1, the products by zeta and p
            float((2 * p + 2) * TINY),  # underflow in the powers
        ]
    )
    hi, lo, E = np.empty_like(dh), np.empty_like(dh), np.empty_like(dh)
    _values_and_bounds(dh, dl, *terms, float(scale), float(bound.coef0), int(p), c, hi, lo, E)
    if not abs(scale) < SPLIT_LIMIT:
        E[:] = np.inf
    return hi, lo, E


def poly_rows(bound: PolyBound, X: Any, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Rows ``K[idx, :]`` of the poly kernel rounded to float64, :math:`\hat K = fl(hi + lo)`
    of :func:`poly_pair_rows`, and the proven bound ``E[idx, :]`` on each value's error,
    :math:`|\hat K_{ij} - K_{ij}| \le E_{ij} + u|\hat K_{ij}| / (1 - u)`, rounded up."""
    hi, lo, E = poly_pair_rows(bound, X, idx)
    K = hi + lo
    return K, up(up(E + up(U * np.abs(K) * (1.0 + 2.0 * U))) + TINY)


def poly_score_error(
    alpha: np.ndarray,
    magnitude: np.ndarray,
    errors: np.ndarray,
    scores: np.ndarray,
    low: np.ndarray | None = None,
    parts: int = 0,
) -> np.ndarray:
    r"""``e`` with :math:`|\hat g_i - g_i| \le e_i` for scores ``g = K (alpha y)`` summed in
    twice the working precision (Dot2, :func:`qpsvm._numerics.tdot2`) over the ``m`` nonzero
    ``alpha_j`` from values :math:`\hat K_{ij}` within :math:`E_{ij}` of the exact ones, with
    ``magnitude`` the computed :math:`\hat M = |\hat K|\,|\alpha|` and ``errors`` the
    computed :math:`\hat E^T |\alpha|`:

    .. math::

        e_i = u |\hat g_i| + \frac{\gamma_m^2 \hat M_i + (\hat E^T|\alpha|)_i}{1 - \gamma_m}

    (Dot2's bound :math:`u|g| + \gamma_m^2 \sum_j |\alpha_j \hat K_{ij}|`, Ogita, Rump and
    Oishi 2005, for the sum of the rounded values; each value within :math:`E_{ij}` of the exact
    one; the sums of nonnegative terms within :math:`\gamma_m` of their computed values),
    rounded up.

    Values as unevaluated sums ``hi + lo`` (:func:`poly_pair_rows`): ``magnitude`` is
    :math:`|\hat K^{hi}|\,|\alpha|`, ``low`` the computed :math:`\hat N = |\hat K^{lo}|\,
    |\alpha|`, and the low parts' products ``K^{lo} (alpha y)``, summed plainly (within
    :math:`\gamma_m N`) in ``parts`` pieces, join the Dot2 as ``parts`` further terms, each
    at most :math:`N (1 + \gamma_m)` in magnitude:

    .. math::

        e_i = u |\hat g_i| + \frac{\gamma_{m'}^2 (\hat M_i + 2\hat N_i)
        + (\hat E^T|\alpha|)_i + \gamma_{m'} \hat N_i}{1 - \gamma_{m'}},
        \qquad m' = m + \text{parts}."""
    m = int(np.count_nonzero(alpha)) + parts
    g_m = gamma(m + 1)
    shrink = 1.0 / (1.0 - g_m) * (1.0 + 4.0 * U)
    if low is None:
        total = (g_m * g_m * np.abs(magnitude) + errors) * shrink
    else:
        sized = g_m * g_m * (np.abs(magnitude) + 2.0 * low)
        total = (sized + errors + g_m * low * (1.0 + 2.0 * U)) * shrink
    return up((U * np.abs(scores) + total) * (1.0 + 4.0 * U) + m * TINY)

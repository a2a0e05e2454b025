r"""Rigorous enclosures for the composed problems (linear kernel, L2, L1 or elastic-net penalty).

The problem of :mod:`qpsvm.verify.fenchel`, ``P(w, b) = R(w[, b/B]) + sum_i W_i ell(z_i)`` with
``W_i = C c_i`` and ``z_i = sigma_i (x_i . w + b)``, read as the exact problem its float64 data
state. As for the binary problems (:mod:`qpsvm.verify.rigorous`, whose tools this module uses):

- ``upper`` bounds the candidate's exact ``P(w, b)``: the margins are enclosed by error-free
  dot products, each loss is evaluated at the end of its margin's interval where it is largest
  (the losses are monotone in the excess), the products and sums rounded upward;
- ``lower`` bounds the exact dual value ``D(u) = sum_i phi_i(u_i) - R^*(v)`` of an exactly
  feasible ``u``: the box ``[lo_i, hi_i]`` uses caps at most the exact ``W_i``; the squared
  losses' term ``u^2 / (4 W_i)`` is bounded above with ``W_i`` bounded below; ``v = sum_i u_i
  sigma_i x_i`` (and ``B sum_i sigma_i u_i`` for a regularised intercept) is enclosed, and
  ``R^*(v)`` bounded above (L2: ``||v||^2 / 2``; L1: ``0`` once ``||v||_inf <= 1`` is proven,
  the point being scaled down until it is; elastic net ``r ||w||_1 + (1 - r)/2 ||w||^2``:
  ``sum_j max(0, |v_j| - r)^2 / (2 (1 - r))``, with ``|v_j|`` bounded above and the exact
  ``1 - r`` bounded below, :func:`~qpsvm.verify.rigorous.complement_bounds`; the pieces'
  bounds are :func:`~qpsvm.verify.rigorous.penalty_upper` and
  :func:`~qpsvm.verify.rigorous.conjugate_upper`).

For the ranking problems the rows are the exact differences ``x_i - x_j`` of item pairs
(``f.item_pairs``): the margins and ``v`` are enclosed from the items, never from rounded
differences (:func:`~qpsvm.verify.rigorous.binary_margins`,
:func:`~qpsvm.verify.rigorous.binary_expansion`).

A free intercept's coupling ``sum_i sigma_i u_i = 0`` holds only to round-off; its residual is
bounded through an optimal intercept, as for the binary problems:
:math:`P^* \ge D(u) - |b^*|\,|\sum_i \sigma_i u_i|` (fixing ``b = b*`` keeps the optimum and
removes the coupling), with :math:`|b^*| \le \max_i |t_i| + \varepsilon + \|w^*\| \max_i
\|x_i\|` for targets ``t`` (margins or regression targets): some optimal ``b*`` puts a loss at
a kink, or has positive losses on both sides, either way within that range of
``-x_i . w*``; and :math:`\|w^*\| \le \sqrt{2U}` (L2), :math:`\le U` (L1) or
:math:`\le \min(\sqrt{2U / (1 - r)}, U / r)` (elastic net) for any upper bound ``U`` on
``P*``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from qpsvm._numerics import fsum
from qpsvm.contract import CompositeProblem
from qpsvm.verify.rigorous import (
    TINY,
    U,
    _capped,
    binary_expansion,
    binary_margins,
    conjugate_upper,
    dot_upper,
    down,
    gamma,
    penalty_upper,
    row_norm_upper,
    score_ends,
    shortfall,
    up,
    upper_sum,
    weight_norm_bound,
    worse_end_sum,
)

__all__ = [
    "RIGOROUS_PENALTIES",
    "composed_box",
    "composed_dual_lower",
    "composed_kernel_dual_lower",
    "composed_kernel_primal_upper",
    "composed_primal_upper",
]

#: Penalties whose enclosures are rigorous here.
RIGOROUS_PENALTIES = frozenset({"l2", "l1", "l1_l2"})


def _excess_upper(f: CompositeProblem, margins: tuple, b: float) -> np.ndarray:
    """Upper bounds on each exact excess ``max(0, m - z)`` or ``max(0, |z - y| - eps)``, from
    the scores ``x_i . w`` (or ``(K (u sigma))_i``) enclosed (``hi, lo, err``)."""
    r, e = shortfall(f.target, f.sigma, margins, b)
    if not f.loss.regression:
        return np.maximum(0.0, up(r + e))
    return np.maximum(0.0, up(up(np.abs(r) + e) - f.epsilon))


def _coordinate_upper(f: CompositeProblem, b: float) -> float:
    """An upper bound on ``|b / B|``, the regularised intercept's coordinate (0 otherwise)."""
    if not f.intercept.regularized:
        return 0.0
    return float(up(abs(b) / f.intercept.scaling))


def _loss_terms(f: CompositeProblem, excess: np.ndarray) -> np.ndarray:
    """Upper bounds on each loss ``ell(z_i)`` from upper bounds on its nonnegative excess: the
    excess itself, or its square rounded up for the squared losses."""
    return up(excess * excess) if f.loss.squared else excess


def _loss_cost_upper(f: CompositeProblem, margins: tuple, b: float) -> float:
    """An upper bound on the exact ``sum_i W_i ell(z_i)`` for scores enclosed (``hi, lo,
    err``)."""
    terms = _loss_terms(f, _excess_upper(f, margins, b))
    return float(up(f.C * upper_sum(f.sample_weight * terms) * (1.0 + 2.0 * U)))


def composed_primal_upper(f: CompositeProblem, w: np.ndarray, b: float) -> float:
    """An upper bound on the exact ``P(w, b)`` of a composed problem (linear kernel)."""
    cost = _loss_cost_upper(f, binary_margins(f, w, f.item_pairs), b)
    return float(up(penalty_upper(f.penalty, w, _coordinate_upper(f, b)) + cost))


def composed_kernel_primal_upper(
    f: CompositeProblem, u: np.ndarray, b: float, scores: np.ndarray, err: np.ndarray
) -> float:
    r"""An upper bound on the exact kernel primal :math:`P(u, b) = \tfrac12 (u\sigma)^T K
    (u\sigma) + \tfrac12 (b/B)^2 + \sum_i W_i \ell(z_i)` (the middle term for a regularised
    intercept only), :math:`z_i = \sigma_i (g_i + b)`, from scores ``g = K (u sigma)`` within
    ``err`` of the exact ones.

    With :math:`v = u\sigma`, :math:`v^T K v = v \cdot g` exactly, so ``P`` is the intercept's
    term (no score in it) plus a sum of terms each of one exact score,

    .. math::

        P = \tfrac12 (b/B)^2 + \sum_i \varphi_i(g_i), \qquad
        \varphi_i(t) = \tfrac12 v_i t + W_i \ell\big(\sigma_i (t + b)\big),

    each convex in ``t`` (every loss is convex: the hinge :math:`\max(0, m_i - z)`, its
    square, the tube :math:`\max(0, |z - t_i| - \varepsilon)` and its square), so each is
    taken at the larger end of its score's interval
    (:func:`~qpsvm.verify.rigorous.worse_end_sum`): the loss at an end bounded above from its
    enclosed excess (:func:`_excess_upper`, squared upward for the squared losses) times an
    upper bound on :math:`W_i = C c_i`. A score's error is paid once, with its term's slope
    on the worse side: :math:`\max(\tfrac12|u_i|, W_i - \tfrac12|u_i|)\,e_i` for a free
    sample on its margin or on an edge of the tube, :math:`\tfrac12 W_i e_i` at its bound,
    :math:`\tfrac12|u_i| e_i` for the squared losses' samples off their kink, where bounding
    :math:`v^T K v` and the losses apart costs :math:`(\tfrac12|u_i| + W_i)\,e_i`,
    :math:`(\tfrac12|u_i| + 2 W_i \xi_i)\,e_i` for the squared losses' slack ``xi``."""
    zero = np.zeros_like(scores)
    weight = up(f.C * f.sample_weight)
    ends = score_ends(scores, err)
    costs = [up(weight * _loss_terms(f, _excess_upper(f, (t, zero, zero), b))) for t in ends]
    terms = worse_end_sum(u * f.sigma, ends, costs)
    extra = _coordinate_upper(f, b)
    return float(up(terms + up(0.5 * up(extra * extra))))


def _signed_lower(t: np.ndarray) -> float:
    """A lower bound on the exact sum of the exact values each ``t_i`` rounds once."""
    err = float(up(2.0 * U * upper_sum(np.abs(t)))) + t.size * TINY
    return float(down(down(fsum(t)) - err))


def _box(f: CompositeProblem) -> tuple[np.ndarray, np.ndarray]:
    """The multipliers' box with caps at most the exact ``W_i`` (zero weights: ``u = 0``)."""
    cap = _capped(f.C, f.sample_weight)
    if f.loss.squared:
        hi = np.where(cap > 0, np.inf, 0.0)
    else:
        hi = cap
    return (-hi if f.loss.regression else np.zeros_like(hi)), hi


def _loss_part_lower(f: CompositeProblem, u: np.ndarray) -> float:
    """A lower bound on ``sum_i phi_i(u_i)`` (``u`` in the box)."""
    terms = [f.target * u]
    if f.loss.regression:
        terms.append(-f.epsilon * np.abs(u))
    value = _signed_lower(np.concatenate(terms))
    if f.loss.squared:
        weight = _capped(f.C, f.sample_weight)  # at most W_i: u^2 / (4 W) bounded above
        live = u != 0.0
        quad = up(up(u[live] * u[live]) / (4.0 * weight[live]))
        value = float(down(value - upper_sum(quad)))
    return value


def _sum_upper_abs(su: np.ndarray) -> float:
    """An upper bound on the exact ``|sum_i su_i|`` (Sum2's error bound)."""
    total = abs(fsum(su)) * (1.0 + 2.0 * U) + 4.0 * gamma(su.size) ** 2 * upper_sum(np.abs(su))
    return float(up(total))


def _intercept_coordinate(f: CompositeProblem, su: np.ndarray) -> float:
    """An upper bound on ``|B sum_i sigma_i u_i|`` (the regularised intercept's coordinate of
    ``v``; 0 otherwise), for ``su = u sigma``."""
    if not f.intercept.regularized:
        return 0.0
    return float(up(f.intercept.scaling * _sum_upper_abs(su) * (1.0 + 2.0 * U)))


def _v(
    f: CompositeProblem, u: np.ndarray, enclosure: Callable[[np.ndarray], tuple] | None = None
) -> tuple[tuple, float]:
    """``v = sum_i u_i sigma_i x_i`` enclosed (by ``enclosure(u sigma)`` where given, which
    must return :func:`binary_expansion`'s enclosure or its
    :class:`~qpsvm.verify.rigorous.TouchedEnclosure`), and an upper bound on
    ``|B sum_i sigma_i u_i|`` (:func:`_intercept_coordinate`)."""
    su = u * f.sigma  # exact: sigma is +-1
    enclosed = binary_expansion(f, su, f.item_pairs) if enclosure is None else enclosure(su)
    return enclosed, _intercept_coordinate(f, su)


def _dual_value(
    f: CompositeProblem,
    u: np.ndarray,
    conjugate: float,
    upper: float,
    feature_norm: float | None = None,
) -> float:
    """A lower bound on ``P*`` from ``u`` in the exact box with ``R^*(v) <= conjugate``: the
    loss part bounded below, less the conjugate and, for a free intercept, the coupling's
    residual times the bound on ``|b*|`` (:func:`_intercept_bound`, rows of norm at most
    ``feature_norm``, by default the rows of ``X``)."""
    value = float(down(_loss_part_lower(f, u) - conjugate))
    if f.intercept.coupled:
        residual = _sum_upper_abs(u * f.sigma)
        if residual > 0.0:
            norm = row_norm_upper(f.X) if feature_norm is None else feature_norm
            bound = _intercept_bound(f, upper, norm)
            value = (
                float(down(value - float(up(bound * residual)))) if bound < math.inf else -math.inf
            )
    return value


def composed_dual_lower(
    f: CompositeProblem,
    u: np.ndarray,
    upper: float,
    enclosure: Callable[[np.ndarray], tuple] | None = None,
) -> tuple[float, np.ndarray]:
    r"""A lower bound on ``P*`` from multipliers ``u`` (moved into the exact domain), and that
    point; ``upper`` is a rigorous upper bound on ``P*`` (for the coupling's residual).
    ``enclosure`` (``u sigma`` to :func:`binary_expansion`'s enclosure of the expansion) lets
    a caller that kept the enclosure of its point share it."""
    u = composed_box(f, u)
    for _ in range(8):  # the L1 penalty: scaled until its domain is proven
        conjugate, shrink = conjugate_upper(f.penalty, *_v(f, u, enclosure))
        if shrink == 1.0:
            break
        u = u * shrink
    else:
        return -math.inf, u
    return _dual_value(f, u, conjugate, upper), u


def composed_box(f: CompositeProblem, u: np.ndarray) -> np.ndarray:
    """``u`` clipped into the multipliers' exact box (:func:`_box`)."""
    return np.clip(np.asarray(u, dtype=np.float64), *_box(f))


def composed_kernel_dual_lower(
    f: CompositeProblem,
    u: np.ndarray,
    scores: np.ndarray,
    err: np.ndarray,
    upper: float,
    diagonal: float,
) -> float:
    r"""A lower bound on ``P*`` from multipliers ``u`` in the exact box (:func:`composed_box`)
    with scores ``g = K (u sigma)`` within ``err`` of a positive semidefinite kernel with
    :math:`\max_i K_{ii} \le` ``diagonal``: the dual
    :math:`D(u) = \sum_i \varphi_i(u_i) - \tfrac12 (u\sigma)^T K (u\sigma)
    - \tfrac12 (B \sigma\cdot u)^2` (the last term for a regularised intercept), the
    quadratic bounded above by :math:`(u\sigma)\cdot\hat g + \sum_i |u_i| e_i`; a free
    intercept's coupling residual is paid with features of norm
    :math:`\|\phi(x_i)\| = \sqrt{K_{ii}} \le \sqrt{\text{diagonal}}`. ``upper`` is a rigorous
    upper bound on ``P*``."""
    su = u * f.sigma
    quad = max(0.0, float(up(dot_upper(su, scores) + upper_sum(np.abs(u) * err))))
    extra = _intercept_coordinate(f, su)
    conjugate = float(up(0.5 * float(up(quad + up(extra * extra)))))
    return _dual_value(f, u, conjugate, upper, float(up(math.sqrt(diagonal))))


def _intercept_bound(f: CompositeProblem, upper: float, feature_norm: float) -> float:
    """``|b*| <= max_i |t_i| + eps + ||w*|| max_i ||x_i||`` (module docstring), with
    ``feature_norm`` an upper bound on ``max_i ||x_i||`` (or on the kernel's feature norms)."""
    norm = weight_norm_bound(f.penalty, upper)
    if not math.isfinite(norm):
        return math.inf
    reach = float(up(norm * feature_norm))
    epsilon = f.epsilon if f.loss.regression else 0.0
    return float(up(up(float(np.max(np.abs(f.target), initial=0.0)) + epsilon) + reach))

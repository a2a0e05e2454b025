r"""Rigorous enclosures of the structural SVM's optimum: ``lower <= P* <= upper`` under rounding.

The exact problem is the one the float64 data state: exact joint features :math:`\Psi`, exact
task losses :math:`\Delta`. The model's float evaluations of both, and of its oracles, are
bounded by the model itself (:class:`qpsvm.models.Rounding`, uniform over the outputs of
each example); the verifier's own sums are enclosed by Dot2 (:func:`enclosed_product`) and
rounded outward.

**Upper end.** :math:`P(w) = \tfrac12\|w\|^2 + C\sum_i \xi_i(w)`. With an exact oracle, whose
output :math:`\hat y` maximises its float value :math:`\hat F`, within ``oracle`` of the exact
:math:`F(y) = \Delta(y_i, y) + w\cdot\Psi(x_i, y)` for every ``y``:

.. math::

    \max_y F(y) \le \hat F(\hat y) + e \le F(\hat y) + 2e,\qquad
    \xi_i \le \max\big(0,\ \hat\Delta + \lambda_i + w\cdot(\hat\Psi(\hat y) - \hat\Psi(y_i))
    + 2\|w\|\varphi_i + 2 e\big),

with :math:`\varphi_i` the joint features' rounding and :math:`\lambda_i` the loss's; slack
rescaling the same with :math:`\Phi(y) = \Delta(y)(1 + s(y) - s(y_i))`, bounded by
:math:`(\hat\Delta + \lambda)\max(0, 1 + w\cdot(\hat\Psi(\hat y) - \hat\Psi(y_i))
+ 2\|w\|\varphi)`. A relaxed oracle's bound ``u_i`` gives
:math:`\xi_i \le \max(0, u_i + e - w\cdot\hat\Psi(y_i) + \|w\|\varphi_i)`. The products
:math:`w\cdot\hat\Psi` are enclosed exactly for the float features.

**Lower end.** A dual point :math:`\alpha_{iy} \ge 0` is made exactly feasible
(:math:`\sum_y \alpha_{iy} \le C`, per example, proven by a bound on the sum); its value
:math:`\sum \alpha_{iy} c_{iy} - \tfrac12\|\sum \alpha_{iy} a_{iy}\|^2` uses the exact rows
:math:`a_{iy} = m_{iy}(\Psi(x_i, y_i) - \Psi(x_i, y))` (:math:`m = 1`, or :math:`\Delta` for
slack rescaling), whose expansion is enclosed from the float features (never their rounded
differences) and differs from the exact one by at most
:math:`2\sum \alpha_{iy} m_{iy}\varphi_i` in norm.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from qpsvm._numerics import U, down, gamma, two_product, up
from qpsvm.contract import StructuralProblem
from qpsvm.verify.rigorous import (
    dd_sub,
    enclosed_product,
    lower_sum,
    norm2_upper,
    primal_upper,
    row_norms_upper,
    upper_sum,
)

__all__ = ["ENUMERATED", "proven", "structural_dual_lower", "structural_primal_upper"]

#: Outputs per example up to which the primal bound also maximises over every output itself
#: (with enclosed scores, free of the oracle's rounding): a few times the work of one oracle
#: call for multiclass models and short chains.
ENUMERATED = 64


def proven(f: StructuralProblem, rounding: Any, every: Any) -> bool:
    """Whether the model's bounds make the certificate rigorous: given and finite; the
    oracle's bound may be missing (``inf``) where every output is enumerated (``every``, from
    :meth:`~qpsvm.StructuralSVM.every_output`), which bounds the slacks without it. A rounded
    loss is bounded at both ends (slack rescaling scales the rows by it: see
    :func:`structural_dual_lower`)."""
    if rounding is None:
        return False
    parts = [rounding.feature, rounding.loss]
    if every is None:
        parts.append(rounding.oracle if f.rescaling == "margin" else rounding.rescaled)
    return all(bool(np.all(np.isfinite(p))) for p in parts)


def _sqrt_up(x: float) -> float:
    return float(up(math.sqrt(x))) if math.isfinite(x) else math.inf


def _bounds(hi: np.ndarray, lo: np.ndarray, err: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds on the exact values enclosed by ``hi + lo`` within ``err``."""
    total = hi + lo
    return down(down(total) - err), up(up(total) + err)


def _pair_upper(
    f: StructuralProblem,
    w: np.ndarray,
    examples: np.ndarray,
    joint: Any,
    loss: np.ndarray,
    rounding: Any,
    own: tuple,
    reach: np.ndarray,
) -> np.ndarray:
    r"""Upper bounds on the exact :math:`H_i(y; w)` of pairs ``(i, y)`` (their float joint
    features ``joint`` and losses ``loss``), from the enclosed :math:`w\cdot\hat\Psi(x_i, y_i)`
    of every example (``own``) and ``reach`` :math:`= 2\|w\|\varphi_i`."""
    hat = enclosed_product(joint.T, w)
    mine = tuple(part[examples] for part in own)
    diff = up(_bounds(*dd_sub(hat, mine))[1] + reach[examples])  # >= s(y) - s(y_i)
    top = up(loss + rounding.loss[examples])
    if f.rescaling == "margin":
        return up(top + diff)
    return up(top * np.maximum(0.0, up(1.0 + diff)))


def structural_primal_upper(
    f: StructuralProblem,
    w: np.ndarray,
    joint: Any,
    loss: np.ndarray,
    bounds: np.ndarray | None,
    rounding: Any,
    every: Any,
) -> float:
    r"""An upper bound on the exact :math:`P(w) = \tfrac12\|w\|^2 + C\sum_i \xi_i(w)` from the
    oracle's outputs (their float joint features ``joint``, one row per example, and losses
    ``loss``) or, for a relaxed oracle, its ``bounds`` (see the module docstring). Where every
    example has at most :data:`ENUMERATED` outputs (``every``, the pairs of
    :meth:`~qpsvm.StructuralSVM.every_output`, or ``None``), each slack is also bounded by the
    enclosed maximum over all of them, free of the oracle's rounding, and the smaller bound is
    kept."""
    n = f.n_samples
    norm2 = norm2_upper(w, np.zeros_like(w), np.zeros_like(w))
    reach = up(2.0 * up(_sqrt_up(norm2) * rounding.feature))  # 2 ||w|| phi, rounded up
    own = enclosed_product(f.true_features.T, w)
    if bounds is not None:
        low = down(_bounds(*own)[0] - up(0.5 * reach))
        xi = np.maximum(0.0, up(up(bounds + rounding.oracle) - low))
        return primal_upper(norm2, f.C, upper_sum(xi))
    examples = np.arange(n)
    error = rounding.oracle if f.rescaling == "margin" else rounding.rescaled
    value = _pair_upper(f, w, examples, joint, loss, rounding, own, reach)
    xi = np.maximum(0.0, up(value + up(2.0 * error)))
    if every is not None:
        pairs, candidates = every
        losses = np.asarray(f.model.batch_loss([f.Y[i] for i in pairs], candidates), float)
        top = np.zeros(n)
        rows = f.joint_rows(pairs, candidates)
        bound = _pair_upper(f, w, pairs, rows, losses, rounding, own, reach)
        np.maximum.at(top, pairs, bound)
        xi = np.minimum(xi, top)
    return primal_upper(norm2, f.C, upper_sum(xi))


def feasible_pairs(weight: np.ndarray, example: np.ndarray, n: int, C: float) -> np.ndarray:
    r"""Pair weights made exactly feasible: :math:`\alpha \ge 0` and, per example, the exact
    :math:`\sum_y \alpha_{iy} \le C` (the float sum of ``m`` nonnegative terms is within
    :math:`\gamma_m` of it); an example over its budget is scaled down, and zeroed if a
    second check still fails."""
    a = np.maximum(np.asarray(weight, dtype=np.float64), 0.0)
    if a.size == 0:
        return a
    slack = float(up(1.0 + 2.0 * gamma(int(np.bincount(example).max()))))

    def totals(v: np.ndarray) -> np.ndarray:
        return up(np.bincount(example, weights=v, minlength=n) * slack)

    total = totals(a)
    over = total > C
    if np.any(over):
        factor = np.where(over, down(down(C / np.where(over, total, 1.0)) * (1.0 - 4.0 * U)), 1.0)
        a = np.maximum(a * factor[example], 0.0)
        a[(totals(a) > C)[example]] = 0.0
    return a


def structural_dual_lower(
    f: StructuralProblem,
    example: np.ndarray,
    joint: Any,
    c: np.ndarray,
    weight: np.ndarray,
    rounding: Any,
) -> tuple[float, np.ndarray]:
    r"""A lower bound on ``P*`` from weights ``weight`` of pairs ``(i, y)`` (their examples
    ``example``, float joint features ``joint`` and losses ``c``), made exactly feasible
    (:func:`feasible_pairs`), and that point.

    The expansion :math:`\sum_p \alpha_p m_p (\hat\Psi(x_{i_p}, y_{i_p}) - \hat\Psi(x_{i_p},
    y_p))` (``m = 1``, or the loss for slack rescaling, its products with the weights split
    exactly by TwoProduct) is enclosed by Dot2 over the float features, without forming their
    differences; the exact features add at most :math:`2 \sum_p \alpha_p m_p \varphi_{i_p}` to
    its norm (see the module docstring). For slack rescaling the float loss ``c`` is within
    :math:`\lambda_i` of the exact :math:`\Delta` (:attr:`~qpsvm.models.Rounding.loss`), so
    the exact row :math:`\Delta(\Psi_i - \Psi_y)` differs from the float one
    :math:`c(\hat\Psi_i - \hat\Psi_y)` by at most
    :math:`\lambda(\|\hat\Psi_i - \hat\Psi_y\| + 2\varphi_i) + 2c\varphi_i`: ``m = c +
    lambda`` in the features' term, and :math:`\sum_p \alpha_p\lambda_{i_p}(\|\hat\Psi_{i_p} -
    \hat\Psi_{y_p}\| + 2\varphi_{i_p})` added to the norm (each difference rounded once, its
    exact norm at most the rounded one's over :math:`1 - u`); the gain uses
    :math:`\Delta \ge c - \lambda`."""
    a = feasible_pairs(weight, example, f.n_samples, f.C)
    if f.rescaling == "margin":
        parts = [a]
    else:
        high, low = two_product(a, c)
        parts = [high, low] if np.all(np.isfinite(low)) else None
    if parts is None:
        return -math.inf, a
    own = f.true_features[example]
    hat = joint
    acc = None
    for part in parts:
        acc = enclosed_product(own, part, start=acc)
        acc = enclosed_product(hat, -part, start=acc)
    norm = _sqrt_up(norm2_upper(*acc))
    scale = a
    if f.rescaling == "slack":
        # the rows scale by the exact loss, within lambda of c: (c + lambda) bounds it, and
        # the loss's error adds a_p lambda_p ||Psi(x_i, y_i) - Psi(x_i, y_p)|| to the norm
        error = rounding.loss[example]
        scale = up(a * up(c + error))
        if np.any(error > 0.0):
            apart = up(row_norms_upper(sp.csr_matrix(own - hat)) * (1.0 + 2.0 * U))
            reach = up(apart + up(2.0 * rounding.feature[example]))
            norm = float(up(norm + upper_sum(up(up(a * error) * reach))))
    norm = float(up(norm + upper_sum(up(2.0 * up(scale * rounding.feature[example])))))
    gain = lower_sum(down(a * np.maximum(0.0, down(c - rounding.loss[example]))))
    return float(down(gain - float(up(0.5 * float(up(norm * norm)))))), a

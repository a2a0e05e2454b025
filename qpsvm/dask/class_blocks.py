r"""What one row block computes in a pass of the out-of-core working set of a multiclass SVM.

The multiclass counterpart of :mod:`qpsvm.dask.blocks`, for
:class:`~qpsvm.MulticlassSVM` (Crammer-Singer or Weston-Watkins). With the losses

.. math::

    h_{ic}(W) = 1 - (w_{y_i} - w_c) \cdot x_i \qquad (c \ne y_i),

the working set ``W`` is a set of *examples*, each with all its ``k - 1`` constraints in the
restricted QP. Every other example has statuses fixed by the sort point ``W_0`` and a band
``beta``:

- Crammer-Singer: an example with :math:`\max_c h_{ic}(W_0) < -\beta` is *dropped*
  (``alpha_i = 0``); one whose largest loss exceeds ``beta`` and its runner-up by more than
  ``beta`` is *fixed at its bound* on that class (``alpha_{i c*} = C s_i``), as in
  :class:`~qpsvm.solvers.working_set.CrammerSingerSets`;
- Weston-Watkins: an example whose losses are all more than ``beta`` from 0 has each constraint
  fixed (``alpha_{ic} = C s_i`` where :math:`h_{ic}(W_0) > 0`) or dropped (0 elsewhere), as in
  :class:`~qpsvm.solvers.working_set.WestonWatkinsSets`.

Any block recomputes these statuses from ``W_0`` alone, and no rounding flips them (every
decision is at least ``beta`` from its threshold). The certificate sums are those of
:mod:`qpsvm.verify.rigorous` (:func:`~qpsvm.verify.rigorous.multiclass_slack_upper`,
:func:`~qpsvm.verify.rigorous.multiclass_dual_sums`) on the block.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from qpsvm.dask.blocks import RoundParts, Rows, Sort, SortParts, finite_features
from qpsvm.dask.fold import Fold, keys_of
from qpsvm.exceptions import InvalidInputError
from qpsvm.verify.rigorous import (
    multiclass_dual_sums,
    multiclass_feasible,
    multiclass_slack_upper,
    upper_sum,
)

__all__ = [
    "ClassBlock",
    "class_alpha",
    "class_fold",
    "class_round_parts",
    "class_slack",
    "class_sort_parts",
    "class_statuses",
    "make_class_block",
]


@dataclass(frozen=True)
class ClassBlock:
    """Rows ``offset .. offset + n`` of a multiclass problem, in memory (float64, class indices
    ``0 .. k-1``), with the attributes :mod:`qpsvm.verify.rigorous` reads off a problem."""

    X: np.ndarray
    y: np.ndarray
    sample_weight: np.ndarray
    C: float
    crammer_singer: bool
    n_classes: int
    offset: int

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def margin(self) -> np.ndarray:
        """Unit margins (the rows handed to the client carry them)."""
        return np.ones(self.n_samples)

    @property
    def mask(self) -> np.ndarray:
        """``True`` where a constraint exists (``c != y_i``)."""
        mask = np.ones((self.n_samples, self.n_classes), dtype=bool)
        mask[np.arange(self.n_samples), self.y] = False
        return mask

    @property
    def upper(self) -> np.ndarray:
        """``C s_i``."""
        return self.C * self.sample_weight

    def losses(self, W: np.ndarray) -> np.ndarray:
        """``h_ic = 1 - (w_{y_i} - w_c) . x_i``, ``-inf`` at ``c = y_i``."""
        S = self.X @ W.T
        own = S[np.arange(self.n_samples), self.y]
        return np.where(self.mask, 1.0 - own[:, None] + S, -np.inf)


def make_class_block(
    X: np.ndarray,
    y: np.ndarray,
    sample_weight: np.ndarray | None,
    margin: None,
    offset: int,
    classes: np.ndarray,
    C: float,
    crammer_singer: bool,
) -> ClassBlock:
    """A :class:`ClassBlock` from the raw block, checked: finite features, labels among
    ``classes`` (mapped to their indices), finite nonnegative weights.

    Raises
    ------
    InvalidInputError
        A check fails; the message gives the first offending row.
    """
    X = finite_features(X, offset)
    y = np.asarray(y).ravel()
    index = np.minimum(np.searchsorted(classes, y), classes.size - 1)
    unknown = classes[index] != y
    if np.any(unknown):
        row = int(np.argmax(unknown))
        raise InvalidInputError(f"y holds a label {y[row]!r} (row {offset + row}) not in classes_.")
    s = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, np.float64)
    if not np.all(np.isfinite(s) & (s >= 0)):
        raise InvalidInputError("sample_weight must be finite and nonnegative.")
    return ClassBlock(X, index.astype(np.intp), s.ravel(), C, crammer_singer, classes.size, offset)


def _first_two(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The largest and second largest loss of every example."""
    ordered = np.partition(h, -2, axis=1)
    return ordered[:, -1], ordered[:, -2]


def class_statuses(
    block: ClassBlock, sort: Sort, work: np.ndarray, h0: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Masks ``(in W, constraints fixed at their bound)`` of the block's examples at the sort
    point (the second of shape ``(n, k)``); ``work`` holds the block's positions of ``W``."""
    h0 = block.losses(sort.w) if h0 is None else h0
    out = np.ones(block.n_samples, dtype=bool)
    out[work] = False
    if block.crammer_singer:
        fixed = np.zeros(h0.shape, dtype=bool)
        rows = np.flatnonzero(out & (h0.max(axis=1) >= 0.0))
        fixed[rows, np.argmax(h0[rows], axis=1)] = True
    else:
        fixed = out[:, None] & (h0 > 0.0)
    return ~out, fixed


def _distance(block: ClassBlock, h0: np.ndarray) -> np.ndarray:
    """How far each example is from a change of status: the band that would put it in ``W``."""
    if block.crammer_singer:
        first, second = _first_two(h0)
        return np.where(first < 0.0, -first, np.minimum(first, first - second))
    return np.min(np.where(block.mask, np.abs(h0), np.inf), axis=1)


def class_sort_parts(block: ClassBlock, sort: Sort, band: float, least: int) -> SortParts:
    """The examples within ``max(band, tau)`` of a change of status at the sort point (``tau``:
    the ``least``-th smallest distance of the block) and the sums of the other examples with
    fixed constraints (:func:`class_fold`)."""
    h0 = block.losses(sort.w)
    dist = _distance(block, h0)
    if 0 < least < block.n_samples:
        band = max(band, float(np.partition(dist, least - 1)[least - 1]))
    near = dist <= band if least < block.n_samples else np.ones(block.n_samples, dtype=bool)
    work = np.flatnonzero(near)
    fixed = class_statuses(block, sort, work, h0)[1]
    return SortParts(
        Rows.take(block, work, dist), class_fold(block.X, block.y, block.sample_weight, fixed)
    )


def class_fold(X: np.ndarray, y: np.ndarray, s: np.ndarray, fixed: np.ndarray) -> Fold:
    """The sums of the examples with constraints fixed at their bound (``fixed``, shape
    ``(n, k)``), per label and pattern of fixed classes (:class:`~qpsvm.dask.fold.Fold`)."""
    held = fixed.any(axis=1)
    return Fold.of(X, y.astype(np.float64), s, np.ones(y.size), held, fixed)


def class_alpha(
    block: ClassBlock, sort: Sort, work: np.ndarray, alpha_work: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The multipliers of the block (``alpha_work`` on ``W``, ``C s_i`` on the fixed
    constraints, 0 elsewhere, or ``t_{gc} C s_i`` on the examples of a group ``g`` whose
    aggregated example took ``t_g`` of its bound, :attr:`~qpsvm.dask.blocks.Sort.share`) made
    exactly feasible
    (:func:`~qpsvm.verify.rigorous.multiclass_feasible`), as given, and the status masks."""
    in_work, fixed = class_statuses(block, sort, work)
    held = fixed.any(axis=1)
    t = sort.fractions(keys_of(block.y.astype(np.float64), fixed), fixed.astype(np.float64))
    alpha = np.where(held[:, None] & block.mask, t * block.upper[:, None], 0.0)
    alpha[work] = alpha_work
    return multiclass_feasible(block, alpha), alpha, in_work, fixed


def class_slack(block: ClassBlock, W: np.ndarray) -> np.ndarray:
    """Slacks of the block at ``W``: ``max(0, max_c h_ic)`` (Crammer-Singer, ``(n,)``) or
    ``max(0, h_ic)`` (Weston-Watkins, ``(n, k)``, 0 at ``y_i``)."""
    h = np.maximum(0.0, block.losses(W))
    return h.max(axis=1) if block.crammer_singer else h


def _wrong(block: ClassBlock, h: np.ndarray, in_work: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    """By how much each example outside ``W`` violates its statuses at the losses ``h``."""
    if block.crammer_singer:
        first = h.max(axis=1)
        held = fixed.any(axis=1)
        top = h[np.arange(block.n_samples), np.argmax(fixed, axis=1)]
        dropped = np.where(~in_work & ~held, first, 0.0)
        return dropped + np.where(held, np.maximum(-top, first - top), 0.0)
    free = block.mask & ~fixed & ~in_work[:, None]
    wrong = np.where(fixed, -h, 0.0) + np.where(free, h, 0.0)
    return np.max(wrong, axis=1, initial=0.0)


def class_round_parts(
    block: ClassBlock,
    work: np.ndarray,
    alpha_work: np.ndarray,
    sort: Sort,
    W: np.ndarray,
    b: float,
    eps: float,
    cap: int,
) -> RoundParts:
    """Check every example of the block at the candidate ``W`` with multipliers
    ``alpha_work`` (shape ``(|W_block|, k)``) on ``W`` (``b`` is 0: no intercept).

    Outside ``W``, a dropped constraint needs ``h_ic <= 0`` and a fixed one ``h_ic >= 0``
    (Crammer-Singer: and the largest of its example's losses); a wrong sign by more than
    ``eps`` is a violated status, the ``cap`` most violated examples are returned with their
    data. The certificate sums: an upper bound on ``sum_i s_i xi_i`` and the dual sums of the
    feasible point.
    """
    a, given, in_work, fixed = class_alpha(block, sort, work, alpha_work)
    h = block.losses(W)
    wrong = _wrong(block, h, in_work, fixed)
    violated = np.flatnonzero(wrong > eps)
    n_violated = violated.size
    if violated.size > cap:
        violated = violated[np.argpartition(-wrong[violated], cap)[:cap]]
    mask, upper = block.mask, block.upper
    hinge = np.where(mask, np.maximum(0.0, h), 0.0)
    xi = hinge.max(axis=1) if block.crammer_singer else hinge
    loss = xi if block.crammer_singer else xi.sum(axis=1)
    slack = xi[:, None] if block.crammer_singer else xi
    comp = np.where(mask, np.abs(a * (slack - np.where(mask, h, 0.0))), 0.0)
    if block.crammer_singer:
        unused = np.abs((upper - a.sum(axis=1)) * xi)
        over = given.sum(axis=1) - upper
    else:
        unused = np.where(mask, np.abs((upper[:, None] - a) * xi), 0.0)
        over = given - upper[:, None]
    return RoundParts(
        violators=Rows.take(block, violated, wrong),
        n_violated=int(n_violated),
        max_violation=float(np.max(wrong, initial=0.0)),
        cost=upper_sum(block.sample_weight * multiclass_slack_upper(block, W)),
        worst=-math.inf,
        dual=multiclass_dual_sums(block, a),
        max_margin=1.0,
        max_row_norm=0.0,
        box=float(max(0.0, np.max(over, initial=0.0), np.max(-given, initial=0.0))),
        balance=0.0,
        complementarity=float(max(np.max(comp, initial=0.0), np.max(unused, initial=0.0))),
        slack_sum=float(np.sum(block.sample_weight * loss)),
    )

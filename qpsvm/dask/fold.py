r"""The rows fixed at their bound, folded into a few aggregated rows of the restricted problem.

Outside the working set ``W`` a row fixed at its bound (``alpha_i = C s_i``, the row inside its
margin: ``r_i = y_i (w \cdot x_i + b) - m_i < 0``) contributes to the primal objective the linear
term of its hinge,

.. math::

    C s_i (m_i - y_i (w \cdot x_i + b)),

and the rows of one *group* ``g`` (binary: one label ``y_g``; ranking: the pairs, ``y = +1``, no
intercept; multiclass: below) sum to ``C S_g (\bar m_g - y_g (w \cdot \bar x_g + b))`` with

.. math::

    S_g = \sum_{i \in g} s_i, \qquad \bar x_g = \sum_{i \in g} s_i x_i / S_g, \qquad
    \bar m_g = \sum_{i \in g} s_i m_i / S_g.

That is the hinge of one *aggregated row* ``(\bar x_g, y_g)`` with weight ``S_g`` and margin
``\bar m_g`` wherever its hinge is active. So the restricted problem (``W``'s hinges plus the
fixed rows' linear terms) is an ordinary soft-margin SVM on ``W`` plus one aggregated row per
group, which qpsvm's in-memory engine solves, as long as the aggregated hinge stays active:

* while every fixed row keeps its status, ``r_i < 0`` for every ``i`` in ``g``, the aggregate's
  residual ``\bar r_g = \sum_g s_i r_i / S_g`` is negative (``r`` is affine in ``x`` and
  ``m``), its hinge is active and equal to the linear fold, and the two problems agree near
  the point: the aggregated problem's optimum is the folded problem's (both are convex);
* if the aggregate's hinge is not active at the restricted optimum (``\bar r_g \ge 0``), some
  row of ``g`` has ``r_i \ge 0``: a fixed row changed status. The check pass, which tests
  every row's status, finds it when it is violated by more than the status tolerance; a
  group whose rows all sit on their margin within it (``alpha_g < C S_g``, the degenerate
  case) is answered exactly by sharing the aggregate's multiplier among its rows,
  ``alpha_i = (alpha_g / (C S_g)) C s_i`` (:attr:`~qpsvm.dask.blocks.Sort.share`): the
  multipliers a KKT point of the folded problem gives them.

Either way the multipliers map back exactly: the aggregate's ``alpha_g`` contributes
``alpha_g y_g \bar x_g = \sum_g t_g C s_i y_i x_i`` to ``w``, ``alpha_g \bar m_g`` to the dual
objective and ``alpha_g y_g`` to the balance, with ``t_g = alpha_g / (C S_g)``, the same as the
rows of ``g`` at ``t_g C s_i``, which is what the certificate pass gives them.

The multiclass SVMs fold the same way, with the losses ``h_ic = 1 - (w_{y_i} - w_c) \cdot x_i``
affine in ``x_i``. An example outside ``W`` with constraints fixed at their bound (Crammer-
Singer: its largest loss, on class ``c*``; Weston-Watkins: each positive loss, the others
dropped) joins the group of its label and *pattern* of fixed classes ``F``; the group's
aggregated example ``(\bar x_g, y_g)`` of weight ``S_g`` has the losses ``\bar h_{gc} =
\sum_g s_i h_ic / S_g``. While every example of ``g`` keeps its statuses, ``\bar h_{gc} > 0``
on ``F`` and (Weston-Watkins) ``\le 0`` elsewhere, or (Crammer-Singer) ``\bar h_{gc*}`` is
positive and the largest, so the aggregated example's loss, ``S_g \sum_c \max(0, \bar h_{gc})``
or ``S_g \max_c \max(0, \bar h_{gc})``, is the linear fold ``\sum_g s_i \sum_{c \in F}
h_ic``; its multipliers ``alpha_{gc}`` map back as ``t_{gc} C s_i`` with ``t_{gc} = alpha_{gc}
/ (C S_g)`` (their sum stays within ``C s_i`` for Crammer-Singer).

The sums are carried per group as ``(count, S, sum s x, sum s m)``; rows that leave the fixed
set (they violate their status and join ``W``) are subtracted, and a group without rows left
(its count, an integer, reaches 0) disappears. Rows of weight 0 are in no group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Fold", "keys_of", "lookup"]


def keys_of(label: np.ndarray, pattern: np.ndarray) -> np.ndarray:
    """Group keys: rows ``(y, pattern)`` (the pattern's booleans as 0/1)."""
    return np.column_stack([label, pattern]).astype(np.float64)


def lookup(table: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The row of ``table`` (distinct keys) equal to each row of ``keys``, -1 where none is."""
    if not table.shape[0] or not keys.shape[0]:
        return np.full(keys.shape[0], -1, dtype=np.intp)
    _, inverse = np.unique(np.vstack([table, keys]), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    where = np.full(int(inverse.max()) + 1, -1, dtype=np.intp)
    where[inverse[: table.shape[0]]] = np.arange(table.shape[0])
    return where[inverse[table.shape[0] :]]


@dataclass
class Fold:
    """Sums of the rows fixed at their bound, per group (see the module).

    Attributes
    ----------
    label : ndarray of shape (g,)
        The group's label (``+-1``; a class index for a multiclass SVM).
    pattern : ndarray of bool, shape (g, p)
        The group's fixed classes (a multiclass SVM's; ``p = 0`` for the binary and ranking
        SVMs).
    count : ndarray of int64, shape (g,)
        Rows in the group.
    weight : ndarray of shape (g,)
        ``S_g = sum s_i``.
    xs : ndarray of shape (g, d)
        ``sum s_i x_i``.
    ms : ndarray of shape (g,)
        ``sum s_i m_i``.
    """

    label: np.ndarray
    pattern: np.ndarray
    count: np.ndarray
    weight: np.ndarray
    xs: np.ndarray
    ms: np.ndarray

    @classmethod
    def empty(cls, d: int, p: int = 0) -> Fold:
        """No group."""
        zero = np.zeros(0)
        return cls(
            zero, np.zeros((0, p), bool), np.zeros(0, np.int64), zero, np.zeros((0, d)), zero
        )

    @classmethod
    def of(
        cls,
        X: np.ndarray,
        y: np.ndarray,
        s: np.ndarray,
        m: np.ndarray,
        fixed: np.ndarray,
        pattern: np.ndarray | None = None,
    ) -> Fold:
        """The sums of the rows ``fixed`` (a mask) of positive weight, per label (and
        ``pattern`` row, shape ``(n, p)``, when given)."""
        pattern = np.zeros((y.size, 0), bool) if pattern is None else pattern
        rows = np.flatnonzero(fixed & (s > 0.0))
        if not rows.size:
            return cls.empty(X.shape[1], pattern.shape[1])
        keys = keys_of(y[rows], pattern[rows])
        table, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        order = np.argsort(inverse, kind="stable")
        starts = np.searchsorted(inverse[order], np.arange(table.shape[0]))
        rows = rows[order]
        sw = s[rows]
        return cls(
            table[:, 0],
            table[:, 1:] > 0.5,
            np.diff(np.append(starts, rows.size)).astype(np.int64),
            np.add.reduceat(sw, starts),
            np.add.reduceat(X[rows] * sw[:, None], starts, axis=0),
            np.add.reduceat(sw * m[rows], starts),
        )

    @classmethod
    def combine(cls, parts: list[Fold], d: int, p: int = 0) -> Fold:
        """The sums of ``parts`` (e.g. the blocks') per group."""
        parts = [q for q in parts if q.label.size]
        if not parts:
            return cls.empty(d, p)
        keys = np.vstack([q.keys for q in parts])
        table, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.ravel()

        def total(v: np.ndarray) -> np.ndarray:
            out = np.zeros((table.shape[0], *v.shape[1:]), dtype=v.dtype)
            np.add.at(out, inverse, v)
            return out

        count = total(np.concatenate([q.count for q in parts]))
        keep = count > 0
        return cls(
            table[keep, 0],
            table[keep, 1:] > 0.5,
            count[keep],
            total(np.concatenate([q.weight for q in parts]))[keep],
            total(np.concatenate([q.xs for q in parts]))[keep],
            total(np.concatenate([q.ms for q in parts]))[keep],
        )

    def minus(self, other: Fold) -> Fold:
        """These sums without the rows of ``other`` (a subset of them)."""
        negated = Fold(
            other.label, other.pattern, -other.count, -other.weight, -other.xs, -other.ms
        )
        return Fold.combine([self, negated], self.xs.shape[1], self.pattern.shape[1])

    @property
    def keys(self) -> np.ndarray:
        """The groups' keys (:func:`keys_of`)."""
        return keys_of(self.label, self.pattern)

    @property
    def linear(self) -> tuple[np.ndarray, float]:
        """``(sum s_i y_i x_i, sum s_i y_i)`` (binary): the linear term of the folded
        problem."""
        return self.label @ self.xs, float(self.label @ self.weight)

    def rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The aggregated rows ``(X, y, sample_weight, margin)``: ``bar x_g``, ``y_g``,
        ``S_g``, ``bar m_g``."""
        return self.xs / self.weight[:, None], self.label, self.weight, self.ms / self.weight

    def __len__(self) -> int:
        return self.label.size

r"""What one row block of the data computes in a pass of the out-of-core working set.

Every function here takes a block of rows in memory (on a Dask worker) and the small state the
client broadcasts, and returns a small record; the client combines the records of all blocks
(sums, maxima, the most violated rows). Nothing returned grows with the number of rows except
the rows the client asks for (the working set), which are capped.

Statuses. The client keeps the working set ``W`` as sorted global row indices with their rows.
Every other row has a status fixed by the *sort*, a point ``(w_0, b_0)`` and a band ``beta``:
the sort put every row with ``|r_i(w_0, b_0)| <= beta`` into ``W``, where

.. math::

    r_i(w, b) = y_i (w \cdot x_i + b) - m_i,

so a row outside ``W`` has ``|r_i(w_0, b_0)| > beta`` and is *fixed at its bound*
(``alpha_i = C s_i``) when ``r_i(w_0, b_0) < 0``, *dropped* (``alpha_i = 0``) otherwise: a
status any block recomputes from ``(w_0, b_0)`` alone, whose sign no rounding can flip (it is
at least ``beta`` away from 0). This is the in-memory engine's three-status bookkeeping
(:class:`~qpsvm.solvers.working_set.ResidualSets`) without an ``n``-sized array on the client.

The certificate sums are those of :mod:`qpsvm.verify.rigorous` on the block
(:func:`~qpsvm.verify.rigorous.shortfall`, :func:`~qpsvm.verify.rigorous.slack_cost`,
:func:`~qpsvm.verify.rigorous.binary_dual_sums`), which combine over blocks into the enclosure
of the whole problem (compensated sums carried as ``hi + lo`` with error bounds).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qpsvm._numerics import fsum
from qpsvm.dask.fold import Fold, keys_of, lookup
from qpsvm.exceptions import InvalidInputError
from qpsvm.solvers.warm_start import _curvature
from qpsvm.verify.rigorous import (
    DualSums,
    binary_dual_sums,
    binary_feasible,
    enclosed_product,
    row_norm_upper,
    shortfall,
    slack_cost,
)

__all__ = [
    "LineParts",
    "NewtonParts",
    "RoundParts",
    "RowBlock",
    "Rows",
    "Sort",
    "SortParts",
    "block_alpha",
    "block_slack",
    "make_block",
    "newton_parts",
    "round_parts",
    "sort_parts",
]


@dataclass(frozen=True)
class RowBlock:
    """Rows ``offset .. offset + n`` of a binary problem, in memory (float64, labels ``+-1``).

    It has the attributes :mod:`qpsvm.verify.rigorous` reads off a problem (``X``, ``y``,
    ``margin``, ``sample_weight``, ``C``, ``fit_intercept``), so its functions run on a block.
    """

    X: np.ndarray
    y: np.ndarray
    margin: np.ndarray
    sample_weight: np.ndarray
    C: float
    fit_intercept: bool
    offset: int

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def upper(self) -> np.ndarray:
        """Bounds ``C s_i`` of the multipliers."""
        return self.C * self.sample_weight

    def residual(self, w: np.ndarray, b: float) -> np.ndarray:
        """``r_i = y_i (w . x_i + b) - m_i``."""
        return self.y * (self.X @ w + b) - self.margin

    def local(self, index: np.ndarray) -> np.ndarray:
        """The block's positions of the sorted global indices ``index`` that fall in it."""
        lo, hi = np.searchsorted(index, [self.offset, self.offset + self.n_samples])
        return index[lo:hi] - self.offset


def finite_features(X: np.ndarray, offset: int) -> np.ndarray:
    """A raw block's features as float64, checked finite.

    Raises
    ------
    InvalidInputError
        A row holds NaN or inf; the message gives the first (``offset`` is the block's first
        row in the whole data).
    """
    X = np.asarray(X, dtype=np.float64)
    bad = ~np.all(np.isfinite(X), axis=1)
    if np.any(bad):
        raise InvalidInputError(f"X holds NaN or inf (row {offset + int(np.argmax(bad))}).")
    return X


def make_block(
    X: np.ndarray,
    y: np.ndarray,
    sample_weight: np.ndarray | None,
    margin: np.ndarray | None,
    offset: int,
    classes: np.ndarray,
    C: float,
    fit_intercept: bool,
) -> RowBlock:
    """A :class:`RowBlock` from the raw block, checked: finite features, labels among the two
    ``classes`` (``classes[1]`` is ``+1``), finite nonnegative weights and margins.

    Raises
    ------
    InvalidInputError
        A check fails; the message gives the first offending row.
    """
    X = finite_features(X, offset)
    n = X.shape[0]
    y = np.asarray(y).ravel()
    plus, minus = y == classes[1], y == classes[0]
    if not np.all(plus | minus):
        row = int(np.argmax(~(plus | minus)))
        raise InvalidInputError(
            f"y holds a third label {y[row]!r} (row {offset + row}); the two labels of the "
            f"sample read to start are {classes[0]!r} and {classes[1]!r}."
        )

    def vector(v: np.ndarray | None, name: str) -> np.ndarray:
        if v is None:
            return np.ones(n)
        v = np.asarray(v, dtype=np.float64).ravel()
        if not np.all(np.isfinite(v) & (v >= 0)):
            raise InvalidInputError(f"{name} must be finite and nonnegative.")
        return v

    return RowBlock(
        X,
        np.where(plus, 1.0, -1.0),
        vector(margin, "margin"),
        vector(sample_weight, "sample_weight"),
        C,
        fit_intercept,
        offset,
    )


@dataclass(frozen=True)
class Sort:
    """The statuses of the rows outside the working set: the sort point ``(w_0, b_0)``
    (a row is fixed at its bound where ``r_i(w_0, b_0) < 0``, dropped elsewhere), and the
    multipliers of the fixed rows as fractions ``t_g`` of their bound by group, those of the
    restricted problem's aggregated rows (:mod:`qpsvm.dask.fold`): ``share = (keys, t)``, the
    groups' keys (:func:`~qpsvm.dask.fold.keys_of`) and their fractions; ``None``, or a group
    not listed: the whole bound."""

    w: np.ndarray
    b: float
    share: tuple[np.ndarray, np.ndarray] | None = None

    def fractions(self, keys: np.ndarray, default: np.ndarray) -> np.ndarray:
        """``t`` of the rows whose groups' keys are ``keys`` (``default`` for the others)."""
        if self.share is None:
            return default
        table, taken = self.share
        where = lookup(table, keys)
        out = default.astype(np.float64)
        listed = where >= 0
        out[listed] = taken[where[listed]]
        return out

    def fixed_alpha(self, block: RowBlock, bound: np.ndarray) -> np.ndarray:
        """The multipliers ``t_{y_i} C s_i`` of the block's fixed rows ``bound``, 0 elsewhere."""
        keys = keys_of(block.y, np.zeros((block.n_samples, 0), bool))
        t = self.fractions(keys, np.ones(block.n_samples))
        return np.where(bound, t * block.upper, 0.0)

    def statuses(
        self, block: RowBlock, work: np.ndarray, r0: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Masks ``(in W, fixed at the bound)`` of the block's rows; ``work`` holds the block's
        positions of ``W``."""
        r0 = block.residual(self.w, self.b) if r0 is None else r0
        in_work = np.zeros(block.n_samples, dtype=bool)
        in_work[work] = True
        return in_work, ~in_work & (r0 < 0.0)


@dataclass
class Rows:
    """Rows handed to the client: global indices, features, labels (``+-1``), slack weights,
    margins and a score (the violation, or the distance to the margin)."""

    index: np.ndarray
    X: np.ndarray
    y: np.ndarray
    sample_weight: np.ndarray
    margin: np.ndarray
    score: np.ndarray

    @classmethod
    def take(cls, block: RowBlock, pos: np.ndarray, score: np.ndarray) -> Rows:
        return cls(
            block.offset + pos,
            block.X[pos],
            block.y[pos],
            block.sample_weight[pos],
            block.margin[pos],
            score[pos],
        )

    @classmethod
    def concat(cls, parts: list[Rows]) -> Rows:
        return cls(*(np.concatenate([getattr(p, k) for p in parts]) for k in cls.fields()))

    @staticmethod
    def fields() -> tuple[str, ...]:
        return ("index", "X", "y", "sample_weight", "margin", "score")

    def subset(self, keep: np.ndarray) -> Rows:
        return Rows(*(getattr(self, k)[keep] for k in self.fields()))

    def __len__(self) -> int:
        return self.index.size


# ---------------------------------------------------------------------------- warm start
@dataclass
class NewtonParts:
    r"""One block's share of the smoothed objective (:mod:`qpsvm.solvers.warm_start`)
    ``F_mu = 1/2 ||w||^2 + C sum_i s_i h_mu(z_i)``, ``z_i = m_i - y_i (w.x_i + b)``: the value
    of the sum, its gradient in ``(w, b)`` and the curvature ``sum_{0 < z_i < mu} s_i x~_i
    x~_i^T`` (``x~_i = (x_i, 1)``)."""

    value: float
    gradient: np.ndarray
    curvature: np.ndarray


def _huber(z: np.ndarray, mu: float) -> np.ndarray:
    """The smoothed hinge ``h_mu(z)``."""
    return np.where(z <= 0.0, 0.0, np.where(z < mu, z * z / (2.0 * mu), z - 0.5 * mu))


def _smoothed(block: RowBlock, z: np.ndarray, mu: float) -> NewtonParts:
    """:class:`NewtonParts` at width ``mu`` of the point whose ``z_i`` are ``z``."""
    s = block.sample_weight
    coef = s * np.clip(z / mu, 0.0, 1.0) * block.y
    quad = (z > 0.0) & (z < mu) & (s > 0.0)
    return NewtonParts(
        value=float(np.sum(s * _huber(z, mu))),
        gradient=np.append(-(block.X.T @ coef), -np.sum(coef)),
        curvature=_curvature(block.X, quad, s[quad]),
    )


@dataclass
class LineParts:
    """One block's share of a Newton pass along a direction: :class:`NewtonParts` at the first
    step length (by width), the sums ``sum_i s_i h_mu(z_i)`` at every step length for the first
    width, the largest move ``max_i |u_i|`` of a margin along the direction and the largest
    margin."""

    parts: list[NewtonParts]
    values: np.ndarray
    max_move: float
    max_margin: float


def newton_parts(
    block: RowBlock,
    w: np.ndarray,
    b: float,
    dw: np.ndarray,
    db: float,
    steps: tuple[float, ...],
    mus: tuple[float, ...],
) -> LineParts:
    """:class:`LineParts` along ``(w + t dw, b + t db)`` for ``t`` in ``steps``: a line search
    and the data of the next Newton step (at ``steps[0]``) in one read of the block."""
    z = -block.residual(w, b)
    u = block.y * (block.X @ dw + db)
    s = block.sample_weight
    values = np.array([float(np.sum(s * _huber(z - t * u, mus[0]))) for t in steps])
    return LineParts(
        parts=[_smoothed(block, z - steps[0] * u, mu) for mu in mus],
        values=values,
        max_move=float(np.max(np.abs(u), initial=0.0)),
        max_margin=float(np.max(block.margin, initial=0.0)),
    )


# ---------------------------------------------------------------------------- sort
@dataclass
class SortParts:
    """One block's rows within the band of the sort point (the working set's start) and the
    sums of its fixed rows (:class:`~qpsvm.dask.fold.Fold`)."""

    work: Rows
    fold: Fold


def sort_parts(block: RowBlock, sort: Sort, band: float, least: int) -> SortParts:
    """The rows with ``|r_i(w_0, b_0)| <= max(band, tau)``, ``tau`` the ``least``-th smallest
    ``|r_i|`` of the block (so the working set starts with at least ``least`` of its rows), and
    the sums of the other rows with ``r_i < 0`` (:class:`~qpsvm.dask.fold.Fold`). Every row left
    out has ``|r_i| > band > 0``, so its status is the same in every pass."""
    r0 = block.residual(sort.w, sort.b)
    dist = np.abs(r0)
    if 0 < least < block.n_samples:
        band = max(band, float(np.partition(dist, least - 1)[least - 1]))
    near = dist <= band if least < block.n_samples else np.ones(block.n_samples, dtype=bool)
    fold = Fold.of(block.X, block.y, block.sample_weight, block.margin, ~near & (r0 < 0.0))
    return SortParts(Rows.take(block, np.flatnonzero(near), dist), fold)


# ---------------------------------------------------------------------------- rounds
@dataclass
class RoundParts:
    """One block's check of a candidate: its most violated rows (at most the cap asked), how
    many rows violate their status and by how much at most, the certificate sums
    (:mod:`qpsvm.verify.rigorous`) with the largest margin and a bound on the largest row norm
    (for the intercept bound), the residuals of the candidate's own multipliers (box
    violation, ``sum_i alpha_i y_i``), complementarity, and the plain slack sum for progress
    reports."""

    violators: Rows
    n_violated: int
    max_violation: float
    cost: float
    worst: float
    dual: DualSums
    max_margin: float
    max_row_norm: float
    box: float
    balance: float
    complementarity: float
    slack_sum: float


def block_alpha(
    block: RowBlock, sort: Sort, work: np.ndarray, alpha_work: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The multipliers of the block's rows (``alpha_work`` on ``W``, ``C s_i`` on the fixed
    rows, 0 on the dropped), clipped into the exact box
    (:func:`~qpsvm.verify.rigorous.binary_feasible`), as given, and the status masks."""
    in_work, bound = sort.statuses(block, work)
    alpha = sort.fixed_alpha(block, bound)
    alpha[work] = alpha_work
    return binary_feasible(block, alpha), alpha, in_work, bound


def block_slack(block: RowBlock, w: np.ndarray, b: float) -> np.ndarray:
    """Slacks ``max(0, m_i - y_i (w.x_i + b))`` of the block's rows."""
    return np.maximum(0.0, -block.residual(w, b))


def round_parts(
    block: RowBlock,
    work: np.ndarray,
    alpha_work: np.ndarray,
    sort: Sort,
    w: np.ndarray,
    b: float,
    eps: float,
    cap: int,
) -> RoundParts:
    """Check every row of the block at the candidate ``(w, b)`` with multipliers
    ``alpha_work`` on ``W`` (``work``: the block's positions of ``W``).

    A dropped row needs ``r_i >= 0``, a fixed one ``r_i <= 0``; a wrong sign by more than
    ``eps`` is a violated status (the in-memory engine's test,
    :meth:`~qpsvm.solvers.working_set.ResidualSets.update`). The ``cap`` most violated rows
    are returned with their data.
    """
    a, given, in_work, bound = block_alpha(block, sort, work, alpha_work)
    r = block.residual(w, b)
    dropped = ~in_work & ~bound
    wrong = np.where(dropped, -r, 0.0) + np.where(bound, r, 0.0)
    violated = np.flatnonzero(wrong > eps)
    if violated.size > cap:
        violated = violated[np.argpartition(-wrong[violated], cap)[:cap]]
    scores = enclosed_product(block.X.T, w)
    cost, worst = slack_cost(*shortfall(block.margin, block.y, scores, b), block.sample_weight)
    hinge = np.maximum(0.0, -r)
    comp = np.maximum(np.abs(a * (r + hinge)), np.abs((block.upper - a) * hinge))
    return RoundParts(
        violators=Rows.take(block, violated, wrong),
        n_violated=int(np.count_nonzero(wrong > eps)),
        max_violation=float(np.max(wrong, initial=0.0)),
        cost=cost,
        worst=worst,
        dual=binary_dual_sums(block, a),
        max_margin=float(np.max(block.margin, initial=0.0)),
        max_row_norm=row_norm_upper(block.X),
        box=float(np.max(np.maximum(-given, given - block.upper), initial=0.0)),
        balance=fsum(given * block.y),
        complementarity=float(np.max(comp, initial=0.0)),
        slack_sum=float(np.sum(block.sample_weight * hinge)),
    )

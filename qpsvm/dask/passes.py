"""The data of a binary problem held as Dask collections, and the passes over its row blocks.

A pass maps one function of :mod:`qpsvm.dask.blocks` over every row block (each block is read
once, from wherever the collection reads it: Zarr, ``.npy`` files, worker memory) and brings the
small records back to the client, which combines them. The scheduler is Dask's current one: a
``dask.distributed`` client when one is active, the threaded scheduler otherwise.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dask
import dask.array as da
import numpy as np

from qpsvm.dask.blocks import (
    LineParts,
    NewtonParts,
    RoundParts,
    Rows,
    Sort,
    SortParts,
    block_alpha,
    block_slack,
    make_block,
    newton_parts,
    round_parts,
    sort_parts,
)
from qpsvm.dask.class_blocks import (
    class_alpha,
    class_round_parts,
    class_slack,
    class_sort_parts,
    make_class_block,
)
from qpsvm.dask.fold import Fold
from qpsvm.dask.rank_blocks import make_item_block, rank_round_parts, rank_sort_parts
from qpsvm.exceptions import InvalidInputError

__all__ = ["DaskClassData", "DaskData", "DaskRankData", "PassLog", "as_dask_array"]

logger = logging.getLogger("qpsvm")


def as_dask_array(v: Any, name: str, ndim: int) -> da.Array:
    """A Dask array of ``ndim`` dimensions from a Dask array, dataframe or series (row chunk
    sizes computed when unknown), or a NumPy array (one chunk)."""
    import dask.dataframe as dd

    if isinstance(v, dd.DataFrame | dd.Series):
        v = v.to_dask_array(lengths=True)
    elif not isinstance(v, da.Array):
        v = da.from_array(np.asarray(v))
    if any(np.isnan(c) for c in v.chunks[0]):
        v = v.compute_chunk_sizes()
    if v.ndim == 2 and ndim == 1 and v.shape[1] == 1:
        v = v[:, 0]
    if v.ndim != ndim:
        shape = "(n_samples, n_features)" if ndim == 2 else "(n_samples,)"
        raise InvalidInputError(f"{name} must have shape {shape}; got {v.ndim}-D {v.shape}.")
    return v


@dataclass
class PassLog:
    """Passes made over the data: what each was for and its wall-clock seconds."""

    kinds: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.kinds)


@dataclass
class DaskData:
    """Rows of a binary problem as Dask arrays chunked along the rows only.

    ``X`` is ``(n, d)`` with one chunk across the columns; ``y``, ``sample_weight`` and
    ``margin`` are chunked like its rows. ``classes`` are the two label values (``classes[1]``
    is ``+1``).
    """

    X: da.Array
    y: da.Array
    sample_weight: da.Array | None
    margin: da.Array | None
    C: float
    fit_intercept: bool
    classes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    log: PassLog = field(default_factory=PassLog)

    #: What a block computes in each pass (:mod:`qpsvm.dask.blocks`).
    make_block = staticmethod(make_block)
    sort_parts = staticmethod(sort_parts)
    round_parts = staticmethod(round_parts)
    block_alpha = staticmethod(block_alpha)
    block_slack = staticmethod(block_slack)

    def __post_init__(self) -> None:
        self.X = self.X.rechunk({1: -1})
        rows = self.X.chunks[0]
        self.y = self._align(self.y, "y", rows)
        self.sample_weight = self._align(self.sample_weight, "sample_weight", rows)
        self.margin = self._align(self.margin, "margin", rows)
        self.offsets = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)

    def _align(self, v: da.Array | None, name: str, rows: tuple[int, ...]) -> da.Array | None:
        if v is None:
            return None
        if v.shape[0] != self.X.shape[0]:
            raise InvalidInputError(
                f"{name} has {v.shape[0]} entries for {self.X.shape[0]} rows of X."
            )
        return v.rechunk((rows,))

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_blocks(self) -> int:
        return len(self.X.chunks[0])

    @property
    def bytes_per_pass(self) -> int:
        """Bytes read by one pass: every block of ``X``, ``y`` and the optional vectors."""
        parts = [self.X, self.y, self.sample_weight, self.margin]
        return int(sum(p.nbytes for p in parts if p is not None))

    def raw_blocks(self, which: list[int]) -> list[tuple]:
        """The raw blocks ``which`` as delayed ``(X, y, sample_weight, margin)`` tuples."""

        def part(v: da.Array | None, k: int) -> Any:
            return None if v is None else v.to_delayed().ravel()[k]

        Xd = self.X.to_delayed().ravel()
        return [
            (Xd[k], part(self.y, k), part(self.sample_weight, k), part(self.margin, k))
            for k in which
        ]

    def blocks(self) -> list[Any]:
        """Every row block as a delayed, checked :class:`~qpsvm.dask.blocks.RowBlock`."""
        checked = dask.delayed(self.make_block, pure=True)
        return [
            checked(X, y, s, m, int(self.offsets[k]), *self.block_settings())
            for k, (X, y, s, m) in enumerate(self.raw_blocks(list(range(self.n_blocks))))
        ]

    def block_settings(self) -> tuple:
        """What :attr:`make_block` takes after the raw block and its offset."""
        return (self.classes, self.C, self.fit_intercept)

    @property
    def alpha_shape(self) -> tuple[int, ...]:
        """The shape of a row's multipliers after the row axis."""
        return ()

    @property
    def slack_shape(self) -> tuple[int, ...]:
        """The shape of a row's slacks after the row axis."""
        return ()

    def run(
        self, kind: str, fn: Callable, per_block: Callable[[int], tuple] | None = None, *shared: Any
    ) -> list[Any]:
        """One pass: ``fn(block, *per_block(k), *shared)`` on every block ``k``, computed."""
        began = time.perf_counter()
        call = dask.delayed(fn, pure=True)
        tasks = [
            call(block, *(per_block(k) if per_block else ()), *shared)
            for k, block in enumerate(self.blocks())
        ]
        out = list(dask.compute(*tasks))
        self.log.kinds.append(kind)
        self.log.seconds.append(time.perf_counter() - began)
        logger.info("dask pass %d (%s): %.1fs", len(self.log), kind, self.log.seconds[-1])
        return out

    def labels(self) -> np.ndarray:
        """The sorted label values of ``y`` (a pass that reads ``y`` only)."""
        began = time.perf_counter()
        classes = np.asarray(da.unique(self.y).compute())
        self.log.kinds.append("labels")
        self.log.seconds.append(time.perf_counter() - began)
        return classes

    def split(self, index: np.ndarray, values: np.ndarray) -> Callable[[int], tuple]:
        """Per block ``k``: its positions of the sorted global ``index`` and their ``values``."""
        cuts = np.searchsorted(index, self.offsets)

        def part(k: int) -> tuple:
            lo, hi = cuts[k], cuts[k + 1]
            return index[lo:hi] - self.offsets[k], values[lo:hi]

        return part

    # ------------------------------------------------------------------ the passes
    def newton(
        self,
        w: np.ndarray,
        b: float,
        dw: np.ndarray,
        db: float,
        steps: tuple[float, ...],
        mus: tuple[float, ...],
    ) -> LineParts:
        """The smoothed objective along ``(w, b) + t (dw, db)`` for each ``t`` of ``steps`` and
        width of ``mus`` (with its gradient and curvature at ``steps[0]``), summed over the
        blocks (:func:`~qpsvm.dask.blocks.newton_parts`)."""
        per_block = self.run("start", newton_parts, None, w, b, dw, db, steps, mus)

        def total(j: int) -> NewtonParts:
            parts = [p.parts[j] for p in per_block]
            return NewtonParts(
                value=float(np.sum([p.value for p in parts])),
                gradient=np.sum([p.gradient for p in parts], axis=0),
                curvature=np.sum([p.curvature for p in parts], axis=0),
            )

        return LineParts(
            parts=[total(j) for j in range(len(mus))],
            values=np.sum([p.values for p in per_block], axis=0),
            max_move=max(p.max_move for p in per_block),
            max_margin=max(p.max_margin for p in per_block),
        )

    def sort(self, sort: Sort, band: float, least: int) -> SortParts:
        """The rows within ``band`` of the sort point, at least about ``least`` of them (shared
        among the blocks by their sizes), and the fixed rows' sums."""

        def share(k: int) -> tuple[int]:
            rows = int(self.offsets[k + 1] - self.offsets[k])
            return (math.ceil(least * rows / max(1, self.n_samples)),)

        sort_fn = self.sort_parts  # the closure must not carry the collections

        def parts_of(block: Any, least: int, sort: Sort, band: float) -> SortParts:
            return sort_fn(block, sort, band, least)

        parts = self.run("sort", parts_of, share, sort, band)
        work = Rows.concat([p.work for p in parts])
        return SortParts(work, self.combine([p.fold for p in parts]))

    def combine(self, folds: list[Fold]) -> Fold:
        """The fixed rows' sums of all blocks from the blocks' (:class:`~qpsvm.dask.fold.Fold`;
        a multiclass SVM's groups carry a pattern of ``k`` fixed classes)."""
        return Fold.combine(
            folds, self.n_features, int(self.alpha_shape[0]) if self.alpha_shape else 0
        )

    def check(
        self,
        sort: Sort,
        work: np.ndarray,
        alpha_work: np.ndarray,
        w: np.ndarray,
        b: float,
        eps: float,
        cap: int,
    ) -> list[RoundParts]:
        """Every block's check of the candidate (:func:`~qpsvm.dask.blocks.round_parts`)."""
        return self.run(
            "round", self.round_parts, self.split(work, alpha_work), sort, w, b, eps, cap
        )

    # ------------------------------------------------------------------ n-sized results
    def lazy(
        self,
        fn: Callable,
        *shared: Any,
        per_block: Callable[[int], tuple] | None = None,
        tail: tuple[int, ...] = (),
    ) -> da.Array:
        """A Dask array (one entry of shape ``tail`` per row, never computed here) of
        ``fn(block, ...)``."""
        call = dask.delayed(fn, pure=True)
        pieces = [
            da.from_delayed(
                call(block, *(per_block(k) if per_block else ()), *shared),
                shape=(int(self.offsets[k + 1] - self.offsets[k]), *tail),
                dtype=np.float64,
            )
            for k, block in enumerate(self.blocks())
        ]
        return da.concatenate(pieces)

    def alpha(self, sort: Sort, work: np.ndarray, alpha_work: np.ndarray) -> da.Array:
        """The multipliers of every row (:func:`~qpsvm.dask.blocks.block_alpha`), lazily."""

        block_alpha = self.block_alpha

        def values(block: Any, pos: np.ndarray, a: np.ndarray) -> np.ndarray:
            return block_alpha(block, sort, pos, a)[0]

        return self.lazy(values, per_block=self.split(work, alpha_work), tail=self.alpha_shape)

    def slack(self, w: np.ndarray, b: float) -> da.Array:
        """The slacks of every row at ``(w, b)``, lazily."""
        block_slack = self.block_slack

        def values(block: Any, w: np.ndarray, b: float) -> np.ndarray:
            return block_slack(block, w, b)

        return self.lazy(values, w, b, tail=self.slack_shape)


@dataclass
class DaskClassData(DaskData):
    """Rows of a multiclass problem as Dask arrays (:class:`DaskData` without margins or
    intercept); ``classes`` are all the label values, ``crammer_singer`` the variant. The
    passes run the functions of :mod:`qpsvm.dask.class_blocks`."""

    crammer_singer: bool = True

    make_block = staticmethod(make_class_block)
    sort_parts = staticmethod(class_sort_parts)
    round_parts = staticmethod(class_round_parts)
    block_alpha = staticmethod(class_alpha)

    @staticmethod
    def block_slack(block: Any, w: np.ndarray, b: float) -> np.ndarray:
        return class_slack(block, w)

    def block_settings(self) -> tuple:
        return (self.classes, self.C, self.crammer_singer)

    @property
    def n_classes(self) -> int:
        return int(self.classes.size)

    @property
    def alpha_shape(self) -> tuple[int, ...]:
        return (self.n_classes,)

    @property
    def slack_shape(self) -> tuple[int, ...]:
        return () if self.crammer_singer else (self.n_classes,)


@dataclass
class DaskRankData(DaskData):
    """Items of a ranking problem as Dask arrays: ``X``, relevance labels ``y`` and query
    identifiers ``groups`` chunked alike (no weights, margins or intercept), every query in one
    block. The blocks are :class:`~qpsvm.dask.rank_blocks.ItemBlock`, the working set's rows
    pairs keyed ``i N + j`` (global item indices, ``N`` items); the multipliers and slacks of
    the pairs are never formed (``alpha`` and ``slack`` are ``None``)."""

    groups: da.Array | None = None

    make_block = staticmethod(make_item_block)
    sort_parts = staticmethod(rank_sort_parts)
    round_parts = staticmethod(rank_round_parts)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.groups = self._align(self.groups, "groups", self.X.chunks[0])

    def block_settings(self) -> tuple:
        return (self.n_samples, self.C)

    @property
    def bytes_per_pass(self) -> int:
        return int(self.X.nbytes + self.y.nbytes + self.groups.nbytes)

    def raw_blocks(self, which: list[int]) -> list[tuple]:
        """The raw blocks ``which`` as delayed ``(X, y, groups, None)`` tuples."""
        Xd, yd = self.X.to_delayed().ravel(), self.y.to_delayed().ravel()
        gd = self.groups.to_delayed().ravel()
        return [(Xd[k], yd[k], gd[k], None) for k in which]

    def split(self, index: np.ndarray, values: np.ndarray) -> Callable[[int], tuple]:
        """Per block ``k``: its pairs of the sorted keys ``index`` as rows of local item
        indices, and their ``values``."""
        n = self.n_samples
        cuts = np.searchsorted(index, self.offsets * n)

        def part(k: int) -> tuple:
            keys = index[cuts[k] : cuts[k + 1]]
            local = np.column_stack([keys // n, keys % n]) - self.offsets[k]
            return local.astype(np.intp), values[cuts[k] : cuts[k + 1]]

        return part

    def alpha(self, sort: Sort, work: np.ndarray, alpha_work: np.ndarray) -> None:
        return None

    def slack(self, w: np.ndarray, b: float) -> None:
        return None

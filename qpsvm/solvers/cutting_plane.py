r"""The cutting-plane method of the structural SVM, stopped on a certified duality gap.

Algorithm 1 of the lectures (Tsochantaridis et al., JMLR 2005; "n-slack"): keep a working set
``W_i`` of outputs per example; for each example find its most violated output
:math:`\hat y_i = \arg\max_y H_i(y; w)` (loss-augmented or slack-rescaled inference), add it to
``W_i`` if it is new, and re-optimise the QP over the working set. The 1-slack variant
(Joachims, Finley & Yu, "Cutting-plane training of structural SVMs", MLJ 2009) adds instead one
plane per round that sums the most violated constraints of all examples.

Every round is certified. At the working-set dual point :math:`\alpha` (a feasible point of the
full dual, :mod:`qpsvm.verify.structural`) and its :math:`w = \sum_k \alpha_k a_k`, one batched
oracle call on every example gives the true slacks, hence :math:`P(w)`; the dual value
:math:`D(\alpha) \le P^*` is a lower bound, and the method stops when
:math:`P(w) - D(\alpha) \le \mathrm{tol}\cdot\max(1, |P|)` and the independent certificate
(:func:`~qpsvm.verify.structural.certify_structural`) agrees; not when "the working set did not
change". Constraints whose multiplier stayed 0 for ``drop_after`` rounds are dropped: the QP over
fewer planes is still a relaxation, so the bound stays valid.

The working-set QP
    :math:`\max_\alpha \sum_k \alpha_k c_k - \tfrac12\|\sum_k \alpha_k a_k\|^2` over
    :math:`\alpha \ge 0,\ \sum_{k \in W_b}\alpha_k \le C` per block ``b`` (an example for
    n-slack, everything for 1-slack) is solved in one of two ways:

    * ``solver=None`` (the default, by measurement): block-coordinate ascent in the dual,
      warm-started from the previous round's :math:`\alpha`. Within a block, mass moves between
      two vertices of the block's simplex (the best plane and the worst plane in use, or the
      ground truth, whose plane is 0) with an exact line search, using the block's Gram matrix
      (pairwise Frank-Wolfe, as in SMO and in the multi-plane block-coordinate Frank-Wolfe of
      Shah, Kolmogorov & Lampert, CVPR 2015). Sweeps over the blocks run until the working-set
      gap is below ``kappa`` times the certified gap. For n-slack, each round also visits the
      examples one by one, each with a fresh oracle call at the current ``w`` and an update of its
      block: Algorithm 1 with the QP re-optimised over the example's working set (the block
      coordinate Frank-Wolfe step of Lacoste-Julien, Jaggi, Schmidt & Pletscher, ICML 2013, plus
      the cached planes). Coordinate ascent crawls on ill-conditioned planes (features shifted by
      ``1e3`` or scaled by ``1e4``: a gap near 1 after hundreds of rounds); once the sweeps
      spent since a round last reached its target cost more than the exact QP of the working set
      would (:func:`_exact_cheaper`), the remaining rounds solve it by CVXPY, below.
    * ``solver="CLARABEL"`` (or any CVXPY QP solver): the formulation's own declarative model
      (:meth:`~qpsvm.StructuralSVM.build` over the working set), solved exactly each round; its
      ``planes`` duals are :math:`\alpha`, and the round is evaluated at its primal ``w`` (on
      ill-conditioned planes the expansion of the duals is far less accurate). Exact per round
      but slow on large working sets:
      on the 700-sequence chain benchmark the optimum has about 5000 active planes, and one
      Clarabel solve of that QP takes 70-120 s, while the whole default training takes about
      20 s (``benchmarks/bench_structural.py``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from qpsvm._jit import CALLEE, ENTRY
from qpsvm._numerics import fsum, uncompiled
from qpsvm._validation import check_int, check_number, check_random_state, check_tol
from qpsvm.contract import StructuralProblem, check_method
from qpsvm.exceptions import InvalidInputError
from qpsvm.formulations.structural import PlaneMatrix
from qpsvm.solution import CuttingPlane, History, Solution, StructuralCandidate
from qpsvm.solvers.backends import BackendResult, backend_order, solve_model
from qpsvm.verify.certificate import DEFAULT_TOL, Certificate, relative
from qpsvm.verify.structural import certify_structural, output_key

__all__ = ["VARIANTS", "solve_cutting_plane"]

logger = logging.getLogger("qpsvm")

#: The two cutting-plane variants.
VARIANTS = ("n_slack", "one_slack")
#: Pairwise steps per block visit at most.
BLOCK_STEPS = 50
#: The working-set QP's two ways priced in CPU seconds (docs/performance.md, "The structural
#: working-set QP's hand-over by cost"). A sweep of block-coordinate ascent passes over every
#: plane entry: about ``SWEEP_ENTRY`` seconds each (4-5 ns on the chains of 120 sequences x 32
#: features x 8 states and of 200 x 128 x 26, 60,000 to 2.7 million entries).
SWEEP_ENTRY = 4.5e-9
#: CVXPY/Clarabel's exact solve of ``m`` planes over ``d`` features takes about ``EXACT_FIXED +
#: EXACT_PLANE m + EXACT_FACTOR m min(m, d)^2`` seconds (10-19 interior-point iterations, each
#: factorising the planes' system; fitted within 0.6-1.2x of 11 solves of 20-2378 planes over
#: 40-320 features, 10 ms to 0.88 s; 291 s at 5400 planes over 4004 features, where one
#: measured 70-120 s: on the safe side where sweeps are cheap).
EXACT_FIXED = 0.01
EXACT_PLANE = 4e-5
EXACT_FACTOR = 3.4e-9
#: How many plane entries the numpy equivalents of :func:`_expand` and :func:`_block_values` may
#: pass over in a process before the kernel is compiled: about its compile (0.13 and 0.26 s CPU,
#: numba's allocation helpers included) at the equivalents' 5 and 40 ns an entry (the chain of
#: 120 sequences, 2.3 million entries a solve in 23 calls each; load 3 on 2 cores). Renting
#: until the rent paid is about the price.
PLANE_ENTRIES = 2**22
#: ... and of :func:`_dots` until :func:`_sweep`, which it calls, is compiled (0.65-0.75 s; the
#: equivalent about 90 ns an entry with its binary search and 50-80 us a call). The ascent's
#: first pass compiles the sweep anyway; a working set solved by CVXPY rents until then.
DOT_ENTRIES = 2**23


# ----------------------------------------------------------------------------- kernels
# The sweep of block ascent allocates nothing and takes views of its caller's arrays: it is
# compiled without numba's reference counting (``_nrt=False``: no incref/decref of each view,
# no refcount pruning pass), 0.1 s of the 0.45 s its compile took on a cold call. The block
# gradient and the changes' expansion, shared with the Frank-Wolfe step, are inlined by numba
# (``inline="always"``: typed and lowered inside the caller, no library of their own that the
# caller links and optimises again; see docs/performance.md).
@numba.njit(**CALLEE, _nrt=False, inline="always")
def _block_gradient(ids, start, end, idx, val, c, alpha, w, g, old):  # pragma: no cover
    """``g[q] = c_k - a_k . w`` and ``old[q] = alpha_k`` for the block's planes ``k = ids[q]``;
    returns ``sum_k alpha_k g_k``."""
    used = 0.0
    for q in range(ids.shape[0]):
        k = ids[q]
        gk = c[k]
        for p in range(start[k], end[k]):
            gk -= val[p] * w[idx[p]]
        g[q] = gk
        old[q] = alpha[k]
        used += alpha[k] * gk
    return used


@numba.njit(**CALLEE, _nrt=False, inline="always")
def _apply_changes(ids, start, end, idx, val, alpha, old, w):  # pragma: no cover - compiled
    """``w += sum_k (alpha_k - old_k) a_k`` over the block's planes."""
    for q in range(ids.shape[0]):
        k = ids[q]
        delta = alpha[k] - old[q]
        if delta != 0.0:
            for p in range(start[k], end[k]):
                w[idx[p]] += delta * val[p]


@numba.njit(**ENTRY)
def _frank_wolfe_step(  # pragma: no cover - compiled
    ids, G, start, end, idx, val, c, alpha, spare, b, w, C, vertex, g, old
):
    """One block Frank-Wolfe step (Lacoste-Julien et al., ICML 2013) towards the vertex putting
    the block's whole mass ``C`` on plane ``ids[vertex]`` (``vertex = -1``: on the ground truth,
    plane 0), with exact line search: ``alpha <- (1 - gamma) alpha + gamma C e_vertex``,
    ``gamma = clip(gain / curvature, 0, 1)`` with ``gain = C g_s - sum_k alpha_k g_k`` (the
    block's duality gap, ``g_k = c_k - a_k . w``) and ``curvature = ||C a_s - sum_k alpha_k
    a_k||^2`` from the block's Gram matrix ``G``."""
    m = ids.shape[0]
    gain = -_block_gradient(ids, start, end, idx, val, c, alpha, w, g, old)
    curvature = 0.0
    for q in range(m):
        for r in range(m):
            curvature += old[q] * old[r] * G[q, r]
    if vertex >= 0:
        gain += C * g[vertex]
        cross = 0.0
        for q in range(m):
            cross += old[q] * G[vertex, q]
        curvature += C * C * G[vertex, vertex] - 2.0 * C * cross
    if not gain > 0.0 or not curvature > 0.0:
        return
    gamma = min(1.0, gain / curvature)
    for q in range(m):
        alpha[ids[q]] = (1.0 - gamma) * old[q]
    spare[b] = (1.0 - gamma) * spare[b]
    if vertex >= 0:
        alpha[ids[vertex]] += gamma * C
    else:
        spare[b] += gamma * C
    _apply_changes(ids, start, end, idx, val, alpha, old, w)


@numba.njit(**ENTRY, _nrt=False)
def _sweep(  # pragma: no cover - compiled
    order, bptr, bids, gptr, gram, start, end, idx, val, c, alpha, spare, w, C, steps, g, old
):
    """One pass of block-coordinate ascent over the blocks in ``order``, at most ``steps``
    pairwise steps on each; returns the sum of the blocks' working-set gaps before their steps
    (``g`` and ``old``, as long as the widest block, are its scratch space).

    Block ``b``'s dual variables are ``alpha[ids]`` (``ids = bids[bptr[b] : bptr[b + 1]]``) and
    the ground truth's weight ``spare[b] = C - sum alpha[ids]`` (its plane is 0). A step moves
    ``t`` from the worst vertex in use (lowest ``g_k = c_k - a_k . w``) to the best (highest),
    ``t = (g_best - g_worst) / ||a_best - a_worst||^2`` clipped to the mass available; ``G`` is
    the block's Gram matrix, flat in row order (``G[q * m + r]``, ``m`` the block's planes: a
    view of the pool's layout, which the sweep takes without compiling numba's ``reshape``).
    The block's steps are written out here rather than called: a callee of their own was
    compiled, then linked and optimised again in the sweep (0.1 s of a cold chain's first call,
    docs/performance.md).
    """
    total = 0.0
    for r in range(order.shape[0]):
        b = order[r]
        m = bptr[b + 1] - bptr[b]
        if m == 0:
            continue
        G = gram[gptr[b] : gptr[b] + m * m]
        ids = bids[bptr[b] : bptr[b + 1]]
        used = _block_gradient(ids, start, end, idx, val, c, alpha, w, g, old)
        gap = 0.0
        for step in range(steps):
            best = -1
            g_best = 0.0
            worst = -1
            g_worst = 0.0 if spare[b] > 0.0 else np.inf
            for q in range(m):
                if g[q] > g_best:
                    g_best = g[q]
                    best = q
                if alpha[ids[q]] > 0.0 and g[q] < g_worst:
                    g_worst = g[q]
                    worst = q
            if step == 0:
                gap = C * g_best - used
            diff = g_best - g_worst
            if best == worst or not diff > 0.0:
                break
            if worst == -1:
                curvature = G[best * m + best]
                room = spare[b]
            elif best == -1:
                curvature = G[worst * m + worst]
                room = alpha[ids[worst]]
            else:
                curvature = G[best * m + best] + G[worst * m + worst] - 2.0 * G[best * m + worst]
                room = alpha[ids[worst]]
            t = room if curvature <= 0.0 else diff / curvature
            if room < t:  # min(diff / curvature, room) without compiling numba's ``min``
                t = room
            if not t > 0.0:
                break
            if best >= 0:
                alpha[ids[best]] += t
                for q in range(m):
                    g[q] -= t * G[q * m + best]
            else:
                spare[b] += t
            if worst >= 0:
                kw = ids[worst]
                alpha[kw] = 0.0 if t >= alpha[kw] else alpha[kw] - t
                for q in range(m):
                    g[q] += t * G[q * m + worst]
            else:
                spare[b] = 0.0 if t >= spare[b] else spare[b] - t
        _apply_changes(ids, start, end, idx, val, alpha, old, w)
        total += gap
    return total


@numba.njit(**ENTRY)
def _expand(ids, start, end, idx, val, alpha, w):  # pragma: no cover - compiled
    """``w = sum_k alpha_k a_k`` over ``ids`` (overwrites ``w``)."""
    w[:] = 0.0
    for k in ids:
        if alpha[k] != 0.0:
            for p in range(start[k], end[k]):
                w[idx[p]] += alpha[k] * val[p]


@numba.njit(**ENTRY)
def _block_values(bptr, bids, start, end, idx, val, c, w, out):  # pragma: no cover - compiled
    """``out[b] = max(0, max_k in b c_k - a_k . w)``: the working-set slack of each block."""
    for b in range(bptr.shape[0] - 1):
        top = 0.0
        for q in range(bptr[b], bptr[b + 1]):
            k = bids[q]
            v = c[k]
            for p in range(start[k], end[k]):
                v -= val[p] * w[idx[p]]
            if v > top:  # max(top, v) without compiling numba's ``max``
                top = v
        out[b] = top


def _entries(ids: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, ...]:
    """The positions of planes ``ids``' entries, plane after plane, and each plane's count."""
    lengths = end[ids] - start[ids]
    first = np.cumsum(lengths) - lengths
    take = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(start[ids] - first, lengths)
    return take, lengths


def _sequential_sums(first: np.ndarray, values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``first[s] + v_1 + v_2 + ...`` over segment ``s``'s values, added left to right as the
    kernels' loops add them (``np.add.accumulate`` along the rows of a table padded with
    ``-0.0``, which leaves every float unchanged): the same floats."""
    width = int(lengths.max(initial=0))
    table = np.full((lengths.size, width + 1), -0.0)
    table[:, 0] = first
    rows = np.repeat(np.arange(lengths.size), lengths)
    cols = np.arange(values.size) - np.repeat(np.cumsum(lengths) - lengths, lengths) + 1
    table[rows, cols] = values
    return np.add.accumulate(table, axis=1)[:, -1]


def _dots(
    k: int,
    ids: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    idx: np.ndarray,
    val: np.ndarray,
    out: np.ndarray,
    d: int,
) -> None:
    """``out[j] = a_k . a_{ids[j]}`` (rows with sorted indices below ``d``), each sum of the
    products of the indices the two rows share, in their order, added left to right from
    ``0.0``: :func:`_sweep`'s gradient pass over the block of planes ``ids`` at ``w = a_k``
    (written out over ``d`` features) with ``c = 0``, no mass and no steps gives ``g_j = 0 -
    a_{j,1} w_1 - ...``, and ``out = 0 - g``. The same floats: from ``+0`` a running sum and
    a running difference of the same terms are each other's negation (rounding is symmetric)
    and never ``-0``, so ``0 - g`` takes the sign of a zero sum too; an index ``a_k`` lacks adds
    a finite value times ``0``, a zero, which changes neither. The sweep is the ascent's, which
    its first pass compiles (a kernel of its own took 0.2-0.3 s more, docs/performance.md)."""
    dense = np.zeros(d)
    dense[idx[start[k] : end[k]]] = val[start[k] : end[k]]
    zero = np.zeros(int(ids.max(initial=0)) + 1)  # the planes' c and alpha, and the spare mass
    g, old = np.empty(ids.size), np.empty(ids.size)
    layout = _block_layout(ids, zero[:0])
    _sweep(*layout, start, end, idx, val, zero, zero, zero[:1], dense, 0.0, 0, g, old)
    np.subtract(0.0, g, out=out)


def _dots_numpy(k, ids, start, end, idx, val, out) -> None:
    """:func:`_dots` in numpy, the same floats: the entries of plane ``k`` matched to each
    plane's by a binary search over ``k``'s sorted indices, the products summed in order."""
    own, theirs = idx[start[k] : end[k]], val[start[k] : end[k]]
    take, lengths = _entries(ids, start, end)
    where = np.searchsorted(own, idx[take])
    hit = where < own.size
    hit[hit] = own[where[hit]] == idx[take][hit]
    hits = np.concatenate([[0], np.cumsum(hit)])
    ends = np.cumsum(lengths)
    counts = hits[ends] - hits[ends - lengths]
    products = theirs[where[hit]] * val[take][hit]
    out[:] = _sequential_sums(np.zeros(ids.size), products, counts)


def _expand_numpy(ids, start, end, idx, val, alpha, w) -> None:
    """:func:`_expand` in numpy, the same floats: ``np.add.at`` adds in the given order."""
    ids = ids[alpha[ids] != 0.0]
    take, lengths = _entries(ids, start, end)
    w[:] = 0.0
    np.add.at(w, idx[take], np.repeat(alpha[ids], lengths) * val[take])


def _block_values_numpy(bptr, bids, start, end, idx, val, c, w, out) -> None:
    """:func:`_block_values` in numpy, the same floats (``v - p`` is ``v + (-p)`` exactly)."""
    take, lengths = _entries(bids, start, end)
    values = _sequential_sums(c[bids], -(val[take] * w[idx[take]]), lengths)
    full = np.flatnonzero(bptr[1:] > bptr[:-1])
    out[:] = 0.0
    if full.size:
        out[full] = np.maximum(0.0, np.maximum.reduceat(values, bptr[full]))


# ------------------------------------------------------------------------- the pool
@dataclass
class _Block:
    """One block's planes (ids into the pool), their Gram matrix and their output keys."""

    ids: list[int] = field(default_factory=list)
    gram: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    keys: dict[Any, int] = field(default_factory=dict)


class _Pool:
    """The working set: sparse plane rows, their multipliers, and per-block bookkeeping.

    A plane ``k`` has the row ``a_k`` (``idx/val[start[k]:end[k]]``, sorted indices), the
    constant ``c_k``, its block and its multiplier ``alpha[k]``; ``spare[b] = C - sum of the
    block's alpha`` is the ground truth's weight. ``w = sum_k alpha_k a_k`` is kept up to date by
    the kernels and recomputed exactly by :meth:`expansion`.
    """

    def __init__(self, d: int, n_blocks: int, C: float) -> None:
        self.C = C
        self.idx = np.zeros(1 << 16, dtype=np.int64)
        self.val = np.zeros(1 << 16)
        self.used = 0
        self.start = np.zeros(64, dtype=np.int64)
        self.end = np.zeros(64, dtype=np.int64)
        self.c = np.zeros(64)
        self.alpha = np.zeros(64)
        self.idle = np.zeros(64, dtype=np.int64)
        self.count = 0
        self.planes: list[CuttingPlane] = []
        self.blocks = [_Block() for _ in range(n_blocks)]
        self.spare = np.full(n_blocks, C)
        self.w = np.zeros(d)

    # ---------------------------------------------------------------- growing and shrinking
    def _reserve(self, planes: int, entries: int) -> None:
        if self.count + planes > self.start.shape[0]:
            size = max(2 * self.start.shape[0], self.count + planes)
            for name in ("start", "end", "c", "alpha", "idle"):
                arr = getattr(self, name)
                grown = np.zeros(size, dtype=arr.dtype)
                grown[: self.count] = arr[: self.count]
                setattr(self, name, grown)
        if self.used + entries > self.idx.shape[0]:
            live = self.alive_ids()
            live_entries = int(np.sum(self.end[live] - self.start[live]))
            size = max(2 * (live_entries + entries), 1 << 16)
            idx, val = np.zeros(size, dtype=np.int64), np.zeros(size)
            pos = 0
            for k in live:  # compaction: dropped planes' entries are not copied
                s, e = self.start[k], self.end[k]
                idx[pos : pos + e - s], val[pos : pos + e - s] = self.idx[s:e], self.val[s:e]
                self.start[k], self.end[k] = pos, pos + e - s
                pos += e - s
            self.idx, self.val, self.used = idx, val, pos

    def add(
        self,
        b: int,
        key: Any,
        indices: np.ndarray,
        values: np.ndarray,
        c: float,
        plane: CuttingPlane,
    ) -> bool:
        """Add a plane to block ``b`` unless the block already has one with this ``key``."""
        block = self.blocks[b]
        if key in block.keys:
            return False
        self._reserve(1, indices.size)
        k = self.count
        s = self.used
        self.idx[s : s + indices.size] = indices
        self.val[s : s + indices.size] = values
        self.start[k], self.end[k], self.c[k] = s, s + indices.size, c
        self.alpha[k], self.idle[k] = 0.0, 0
        self.used += indices.size
        self.count += 1
        self.planes.append(plane)
        ids = np.asarray(block.ids, dtype=np.int64)
        dots = np.empty(ids.size + 1)
        both = np.append(ids, k)
        entries = int(np.sum(self.end[both] - self.start[both]))
        if uncompiled(_sweep, entries, DOT_ENTRIES):
            _dots_numpy(k, both, self.start, self.end, self.idx, self.val, dots)
        else:
            _dots(k, both, self.start, self.end, self.idx, self.val, dots, self.w.size)
        m = ids.size
        gram = np.empty((m + 1, m + 1))
        gram[:m, :m] = block.gram
        gram[m, :], gram[:, m] = dots, dots
        block.gram = gram
        block.ids.append(k)
        block.keys[key] = k
        return True

    def drop_idle(self, after: int) -> int:
        """Drop planes whose multiplier has been 0 for more than ``after`` rounds."""
        dropped = 0
        for block in self.blocks:
            if not block.ids:
                continue
            ids = np.asarray(block.ids)
            zero = self.alpha[ids] == 0.0
            self.idle[ids] = np.where(zero, self.idle[ids] + 1, 0)
            keep = self.idle[ids] <= after
            if keep.all():
                continue
            dropped += int(np.count_nonzero(~keep))
            gone = set(ids[~keep].tolist())
            block.keys = {key: k for key, k in block.keys.items() if k not in gone}
            block.ids = ids[keep].tolist()
            block.gram = block.gram[np.ix_(keep, keep)]
        return dropped

    # -------------------------------------------------------------------------- views
    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """``start, end, idx, val, c, alpha``: the planes as the kernels take them."""
        return self.start, self.end, self.idx, self.val, self.c, self.alpha

    def alive_ids(self) -> np.ndarray:
        """Ids of the planes in the working set, block by block."""
        ids = [k for block in self.blocks for k in block.ids]
        return np.asarray(ids, dtype=np.int64)

    def layout(self) -> tuple[np.ndarray, ...]:
        """Flat arrays of the blocks for the sweep kernel: ``bptr, bids, gptr, gram``."""
        sizes = np.array([len(block.ids) for block in self.blocks], dtype=np.int64)
        bptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        gptr = np.concatenate([[0], np.cumsum(sizes**2)]).astype(np.int64)
        bids = self.alive_ids()
        grams = [block.gram.ravel() for block in self.blocks if block.ids]
        gram = np.concatenate(grams) if grams else np.zeros(0)
        return bptr, bids, gptr, gram

    def expansion(self) -> np.ndarray:
        """``w = sum_k alpha_k a_k``, recomputed from the multipliers (no accumulated drift);
        also resets ``spare`` to ``C - sum`` of each block's multipliers."""
        ids = self.alive_ids()
        entries = int(np.sum(self.end[ids] - self.start[ids]))
        expand = _expand_numpy if uncompiled(_expand, entries, PLANE_ENTRIES) else _expand
        expand(ids, self.start, self.end, self.idx, self.val, self.alpha, self.w)
        for b, block in enumerate(self.blocks):
            self.spare[b] = max(0.0, self.C - fsum(self.alpha[block.ids]))
        return self.w

    def dual(self, w: np.ndarray) -> float:
        """``D(alpha) = sum_k alpha_k c_k - 1/2 ||w||^2`` at ``w = expansion()``."""
        ids = self.alive_ids()
        return fsum(self.alpha[ids] * self.c[ids]) - 0.5 * fsum(w * w)

    def block_slacks(self, w: np.ndarray) -> np.ndarray:
        """Working-set slack of every block at ``w``."""
        bptr, bids, _, _ = self.layout()
        out = np.zeros(len(self.blocks))
        entries = int(np.sum(self.end[bids] - self.start[bids]))
        values = (
            _block_values_numpy
            if uncompiled(_block_values, entries, PLANE_ENTRIES)
            else _block_values
        )
        values(bptr, bids, self.start, self.end, self.idx, self.val, self.c, w, out)
        return out

    def matrix(self, ids: np.ndarray, n: int) -> PlaneMatrix:
        """The rows of planes ``ids`` as a :class:`PlaneMatrix` (for the CVXPY working set)."""
        lengths = self.end[ids] - self.start[ids]
        take = np.concatenate(
            [np.arange(s, e) for s, e in zip(self.start[ids], self.end[ids], strict=True)]
            or [np.zeros(0, dtype=np.int64)]
        )
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        A = sp.csr_matrix((self.val[take], self.idx[take], indptr), shape=(ids.size, self.w.size))
        members = [self.planes[k].examples for k in ids]
        rows = np.repeat(np.arange(ids.size), [m.size for m in members])
        cols = np.concatenate(members) if members else np.zeros(0, dtype=np.intp)
        E = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(ids.size, n))
        return PlaneMatrix(A=A, c=self.c[ids].copy(), E=E)


# --------------------------------------------------------------------------- helpers
def _progress_bar(enabled: bool, total: int) -> Any:
    """A tqdm bar over the rounds, or ``None``."""
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        raise ImportError(
            "progress=True needs tqdm: `pip install tqdm` (or `pip install qpsvm[progress]`), "
            "or leave progress=False and follow the rounds with logging."
        ) from None
    return tqdm(total=total, desc="cutting plane", unit="round")


@dataclass
class _Round:
    """The certificate of one round, computed in the loop."""

    w: np.ndarray
    outputs: list[Any]
    rows: sp.csr_matrix
    c: np.ndarray
    xi: np.ndarray
    primal: float
    dual: float

    @property
    def gap(self) -> float:
        return max(0.0, self.primal - self.dual)


def _evaluate(f: StructuralProblem, pool: _Pool, w: np.ndarray | None = None) -> _Round:
    """Oracle on every example at ``w``: true slacks and ``P(w)``; ``D`` at the pool's
    multipliers.

    ``w`` defaults to their expansion ``sum alpha_k a_k``. A CVXPY working-set QP passes its
    primal ``w`` instead: on ill-conditioned planes (badly scaled features) its duals are
    accurate only where they matter for ``D``, and their expansion can be far less accurate
    than the primal solution, while any ``w`` gives a valid ``P(w) >= P*``.
    """
    expansion = pool.expansion().copy()
    w = expansion if w is None else w
    outputs, rows, c, xi = f.violations(w)
    primal = 0.5 * fsum(w * w) + f.C * fsum(xi)
    return _Round(w, outputs, rows, c, xi, primal, pool.dual(expansion))


def _row(rows: sp.csr_matrix, i: int) -> tuple[np.ndarray, np.ndarray]:
    s, e = rows.indptr[i], rows.indptr[i + 1]
    return rows.indices[s:e].astype(np.int64), rows.data[s:e].copy()


def _add_planes(f: StructuralProblem, pool: _Pool, rnd: _Round, variant: str) -> int:
    """Add the round's most violated constraints: one per violated example (n-slack) or their
    sum (1-slack)."""
    if variant == "one_slack":
        total = sp.csr_matrix(rnd.rows.sum(axis=0))
        total.eliminate_zeros()
        total.sort_indices()
        key = tuple(output_key(y) for y in rnd.outputs)
        plane = CuttingPlane.joint(rnd.outputs)
        c = fsum(rnd.c)
        indices, values = total.indices.astype(np.int64), total.data.copy()
        return int((c > 0 or indices.size > 0) and pool.add(0, key, indices, values, c, plane))
    rows = rnd.rows.copy()
    rows.sort_indices()
    added = 0
    for i in np.flatnonzero(rnd.xi > 0):
        y = rnd.outputs[i]
        indices, values = _row(rows, int(i))
        added += pool.add(
            int(i), output_key(y), indices, values, rnd.c[i], CuttingPlane.single(int(i), y)
        )
    return added


def _block_layout(ids: np.ndarray, gram: np.ndarray) -> tuple[np.ndarray, ...]:
    """:func:`_sweep`'s ``order, bptr, bids, gptr, gram`` of one block alone, planes ``ids``
    and Gram matrix ``gram`` (C-contiguous: flat, a view): passed with that block's entry of
    ``spare`` as a view of one (``spare[b : b + 1]``), the sweep takes its steps on the block,
    so that the ascent is compiled once, as the sweep (0.12 s of a cold chain's first call, see
    docs/performance.md)."""
    first = np.zeros(1, dtype=np.int64)  # the block's index, and its Gram matrix's start
    return first, np.array([0, ids.size], dtype=np.int64), ids, first, gram.reshape(-1)


def _sequential_pass(
    f: StructuralProblem, pool: _Pool, order: np.ndarray, steps: int = BLOCK_STEPS
) -> int:
    """Algorithm 1 on one example at a time: fresh oracle at the current ``w``, new plane if
    any, and pairwise steps on that example's block (``steps=0``: instead, one block
    Frank-Wolfe step towards the oracle's output, :func:`_frank_wolfe_step`). Returns the
    number of new planes."""
    g = np.empty(1)
    old = np.empty(1)
    added = 0
    for i in order.tolist():
        y = f.oracle(pool.w, examples=[i])[0]
        block = pool.blocks[i]
        if output_key(y) not in block.keys:
            rows, c = f.pair_rows([i], [y])
            if c[0] > 0 or rows.nnz:  # not the ground truth's plane 0
                rows.sort_indices()
                indices, values = _row(rows, 0)
                added += pool.add(
                    i, output_key(y), indices, values, c[0], CuttingPlane.single(i, y)
                )
        if not block.ids:
            continue
        ids = np.asarray(block.ids, dtype=np.int64)
        if g.size < ids.size:
            g, old = np.empty(2 * ids.size), np.empty(2 * ids.size)
        if steps:
            layout = _block_layout(ids, block.gram)
            _sweep(*layout, *pool.arrays, pool.spare[i : i + 1], pool.w, pool.C, steps, g, old)
        else:
            plane = block.keys.get(output_key(y), -1)  # -1: the ground truth, plane 0
            vertex = block.ids.index(plane) if plane >= 0 else -1
            _frank_wolfe_step(
                ids, block.gram, *pool.arrays, pool.spare, i, pool.w, pool.C, vertex, g, old
            )
    return added


def _sweeps(
    pool: _Pool, target: float, max_sweeps: int, rng: np.random.Generator
) -> tuple[int, bool]:
    """Sweeps of block-coordinate ascent until the working-set gap is at most ``target``; the
    number of sweeps and whether the target was reached within ``max_sweeps``."""
    bptr, bids, gptr, gram = pool.layout()
    widest = max(int(np.diff(bptr).max(initial=0)), 1)
    g, old = np.empty(widest), np.empty(widest)
    done = 0
    while done < max_sweeps:
        order = rng.permutation(len(pool.blocks)).astype(np.int64)
        gap = _sweep(
            order,
            bptr,
            bids,
            gptr,
            gram,
            *pool.arrays,
            pool.spare,
            pool.w,
            pool.C,
            BLOCK_STEPS,
            g,
            old,
        )
        done += 1
        if gap <= target:
            return done, True
    return done, False


def _solve_cvxpy(
    f: StructuralProblem, pool: _Pool, order: list[str], options: dict[str, Any]
) -> tuple[BackendResult, np.ndarray]:
    """Solve the working-set QP exactly with the formulation's CVXPY model; read ``alpha`` into
    the pool and return the backend's result and the QP's primal ``w``."""
    ids = pool.alive_ids()
    model = f.build([pool.planes[k] for k in ids], rows=pool.matrix(ids, f.n_samples))
    result = solve_model(model, order, options, f.always_feasible)
    cand = f.read_model(model)
    pool.alpha[ids] = cand.alpha
    for block in pool.blocks:  # round-off can exceed a budget by a few ulps: scale it back
        total = float(np.sum(pool.alpha[block.ids]))
        if total > pool.C:
            pool.alpha[block.ids] *= pool.C / total
    pool.expansion()
    return result, cand.w


# ---------------------------------------------------------------------------- solvers
def solve_cutting_plane(
    f: StructuralProblem,
    solver: str | None = None,
    *,
    variant: str = "n_slack",
    tol: float = DEFAULT_TOL,
    max_iter: int = 300,
    max_time: float | None = None,
    sequential: bool = True,
    drop_after: int = 10,
    kappa: float = 0.3,
    max_sweeps: int = 2000,
    progress: bool = False,
    random_state: Any = 0,
    **options: Any,
) -> Solution:
    r"""Train a structural SVM by cutting planes until the certified gap is below ``tol``.

    Parameters
    ----------
    f : StructuralSVM
    solver : str, optional
        ``None``: the working-set QP by block-coordinate ascent (fastest, by measurement), or by
        the default CVXPY backend once the sweeps cost more than that would
        (``info["switched_at"]``, logged at INFO).
        A CVXPY solver name (``"CLARABEL"``, ``"OSQP"``...): the formulation's CVXPY model over
        the working set, solved exactly every round (see :mod:`qpsvm.solvers.cutting_plane`).
    variant : {"n_slack", "one_slack"}, default="n_slack"
        One plane per example and output (Algorithm 1), or one summed plane per round
        (Joachims, Finley & Yu 2009). On the chain benchmark n-slack reaches a relative gap of
        ``1e-5`` in about 20 s (22 rounds); 1-slack was at ``1.5e-4`` after 1078 rounds (3 min).
    tol : float, default=1e-9
        Relative certified gap ``(P - D) / max(1, |P|)`` to reach.
    max_iter : int, default=300
        Rounds at most; then the last point is returned with ``status="max_iter"`` and its
        (failing) certificate, and a warning is logged.
    max_time : float, optional
        Seconds at most (checked once per round); then the same with ``status="time_limit"``.
    sequential : bool, default=True
        n-slack only, with ``solver=None``: also visit the examples one by one each round, with
        a fresh oracle call at the current ``w`` (early rounds progress much faster).
    drop_after : int, default=10
        Drop a plane whose multiplier has been 0 for this many rounds (0 keeps every plane).
    kappa : float, default=0.3
        ``solver=None``: sweep until the working-set gap is below ``kappa`` times the certified
        gap of the round (tightened tenfold when a round finds no new plane).
    max_sweeps : int, default=2000
        ``solver=None``: sweeps per round at most.
    progress : bool, default=False
        Show a tqdm progress bar (needs ``tqdm``). Rounds are also logged at ``INFO`` on the
        ``"qpsvm"`` logger: round, working-set size, maximum violation, gap, time.
    random_state : int, Generator or None, default=0
        Order of the block visits.
    **options
        Backend settings for a CVXPY ``solver``.

    Returns
    -------
    Solution
        ``w``; ``b = 0``; ``xi`` the true slacks; ``alpha`` the multipliers of the final
        working set, whose planes are ``info["constraints"]`` (a list of
        :class:`~qpsvm.verify.structural.CuttingPlane`); ``objective`` ``P(w)``; ``history``
        per round (iteration, objective, time, gap); ``n_iter`` rounds; ``certificate`` from
        :func:`~qpsvm.verify.structural.certify_structural`. ``info`` also holds the variant,
        the working-set and support sizes, the numbers of sweeps and of dropped planes, the
        round from which coordinate ascent gave way to CVXPY (``switched_at``,
        ``None`` if it did not), and the time spent in the oracle, the working-set QP (with a
        CVXPY solver: inside the backend, ``backend_time``) and the certificates.
    """
    check_method(f, "cutting_plane")
    if variant not in VARIANTS:
        raise InvalidInputError(f"unknown variant {variant!r}; choose one of {VARIANTS}.")
    tol = check_tol(tol)
    max_iter = check_int(max_iter, "max_iter", 1, "solve_cutting_plane")
    drop_after = check_int(drop_after, "drop_after", 0, "solve_cutting_plane")
    max_sweeps = check_int(max_sweeps, "max_sweeps", 1, "solve_cutting_plane")
    kappa = check_number(kappa, "kappa", 1.0)
    if max_time is not None:
        max_time = check_number(max_time, "max_time")
    order = backend_order(solver) if solver is not None else []
    pool = _Pool(f.n_features, f.n_samples if variant == "n_slack" else 1, f.C)
    backend = "coordinate" if solver is None else order[0]
    rng = check_random_state(random_state)
    loop = _Loop(
        f,
        pool,
        variant,
        tol,
        kappa,
        sequential,
        drop_after,
        max_sweeps,
        rng,
        order,
        options,
        backend,
    )
    bar = _progress_bar(progress, max_iter)
    start = time.perf_counter()
    status = "max_iter"
    try:
        for it in range(max_iter + 1):
            rnd, elapsed = loop.evaluate(it, start, bar)
            if loop.certified(rnd):
                status = "optimal"
                break
            if it == max_iter:
                break
            if max_time is not None and elapsed > max_time:
                status = "time_limit"
                break
            loop.add_planes(rnd)
            loop.solve_working_set(rnd, it)
    finally:
        if bar is not None:
            bar.close()
    return loop.solution(rnd, status)


@dataclass
class _Loop:
    """The cutting plane's state over its rounds: the working set (``pool``), how its QP is
    solved (block-coordinate ascent while ``order`` is empty, else the CVXPY backends of
    ``order``), the history, the timers and the counters reported in ``info``."""

    f: StructuralProblem
    pool: _Pool
    variant: str
    tol: float
    #: The working-set QP is solved to ``kappa`` times the round's certified gap.
    kappa: float
    sequential: bool
    drop_after: int
    max_sweeps: int
    rng: np.random.Generator
    order: list[str]
    options: dict[str, Any]
    backend: str
    #: The CVXPY working-set QP's ``w``, once one is solved.
    primal_w: np.ndarray | None = None
    rel_gaps: list[float] = field(default_factory=list)
    #: Plane entries the sweeps passed over since a round last reached its target.
    spent: int = 0
    switched_at: int | None = None
    history: list[tuple[int, float, float, float]] = field(default_factory=list)
    timing: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(
            ("oracle_time", "qp_time", "backend_time", "certify_time"), 0.0
        )
    )
    sweeps: int = 0
    backend_iter: int = 0
    dropped: int = 0
    cert: Certificate | None = None

    @contextmanager
    def timed(self, key: str) -> Iterator[None]:
        """Add the seconds spent in the block to ``timing[key]``."""
        tick = time.perf_counter()
        yield
        self.timing[key] += time.perf_counter() - tick

    def evaluate(self, it: int, start: float, bar: Any) -> tuple[_Round, float]:
        """Round ``it``'s oracle and gap (:func:`_evaluate`), recorded, logged and shown; the
        round and the seconds since ``start``."""
        with self.timed("oracle_time"):
            rnd = _evaluate(self.f, self.pool, self.primal_w)
        elapsed = time.perf_counter() - start
        self.history.append((it, rnd.primal, elapsed, rnd.gap))
        rel = relative(rnd.gap, rnd.primal)
        self.rel_gaps.append(rel)
        if logger.isEnabledFor(logging.INFO):  # the violation is the log's alone
            logger.info(
                "cutting plane round %d: working set %d, max violation %.3g, gap %.3g "
                "(relative %.2e), %.2fs",
                it,
                self.pool.alive_ids().size,
                _max_violation(self.pool, rnd, self.variant),
                rnd.gap,
                rel,
                elapsed,
            )
        if bar is not None:
            bar.update(1)
            bar.set_postfix(gap=f"{rel:.1e}")
        return rnd, elapsed

    def certified(self, rnd: _Round) -> bool:
        """Whether the round's gap is below ``tol`` and the independent certificate of its
        point passes; where only the first holds, the QP is solved ten times tighter."""
        with self.timed("certify_time"):
            self.cert = _round_certificate(self.f, self.pool, rnd, self.tol)
        if self.cert is None:
            return False
        if self.cert.passed:
            return True
        logger.info(
            "the loop's gap %.3g is below tol but the independent certificate's is %.3g; "
            "continuing",
            rnd.gap,
            self.cert.gap,
        )
        self.kappa /= 10.0
        return False

    def add_planes(self, rnd: _Round) -> None:
        """The round's new planes (and, n-slack with coordinate ascent, a sequential pass);
        idle planes dropped; a round without a new plane tightens the QP tenfold."""
        with self.timed("oracle_time"):
            added = _add_planes(self.f, self.pool, rnd, self.variant)
            if self.variant == "n_slack" and self.sequential and not self.order:
                _sequential_pass(self.f, self.pool, self.rng.permutation(self.f.n_samples))
        if self.drop_after:
            self.dropped += self.pool.drop_idle(self.drop_after)
        if added == 0:
            self.kappa /= 10.0

    def solve_working_set(self, rnd: _Round, it: int) -> None:
        """The working-set QP: sweeps of block-coordinate ascent (handing over to CVXPY from
        round ``it`` on once they cost more than it would, :func:`_exact_cheaper`), or the
        CVXPY model."""
        with self.timed("qp_time"):
            if not self.order:
                done, reached = _sweeps(self.pool, self.kappa * rnd.gap, self.max_sweeps, self.rng)
                self.sweeps += done
                ids = self.pool.alive_ids()
                self.spent += done * int(np.sum(self.pool.end[ids] - self.pool.start[ids]))
                if _exact_cheaper(ids.size, self.pool.w.size, self.spent):
                    self.order, self.switched_at = backend_order(None), it
                    logger.info(
                        "block-coordinate ascent's sweeps cost more than the exact working-set "
                        "QP of %d planes at a relative gap of %.2e (nearly parallel planes: a "
                        "large C or badly scaled features); solving it with %s from round %d on",
                        ids.size,
                        min(self.rel_gaps),
                        self.order[0],
                        it,
                    )
                if reached:
                    self.spent = 0
            if self.order:
                result, self.primal_w = _solve_cvxpy(self.f, self.pool, self.order, self.options)
                self.backend = result.solver
                self.backend_iter += result.n_iter
                self.timing["backend_time"] += result.solve_time

    def solution(self, rnd: _Round, status: str) -> Solution:
        """The last round's point with its certificate (computed, and a warning logged, when
        the loop stopped short of ``tol``), history and ``info``."""
        f, pool = self.f, self.pool
        with self.timed("certify_time"):
            self.cert = _last_certificate(
                f,
                pool,
                rnd,
                self.cert,
                self.tol,
                f"the cutting plane stopped ({status}) after {len(self.history) - 1} rounds",
                "max_iter",
            )
        ids = pool.alive_ids()
        return Solution(
            w=rnd.w,
            b=0.0,
            xi=rnd.xi,
            alpha=pool.alpha[ids].copy(),
            objective=rnd.primal,
            status=status,
            solver=self.backend,
            solve_time=0.0,
            n_iter=len(self.history) - 1,
            method="cutting_plane",
            history=_history(self.history),
            certificate=self.cert,
            info={
                "constraints": [pool.planes[k] for k in ids],
                "certified_problem": f.certified_problem(
                    [pool.planes[k] for k in ids], pool.alpha[ids]
                ),
                "variant": self.variant,
                "working_set": int(ids.size),
                "support": int(np.count_nonzero(pool.alpha[ids])),
                "sweeps": self.sweeps,
                "switched_at": self.switched_at,
                "dropped": self.dropped,
                "backend_iterations": self.backend_iter,
                **self.timing,
            },
        )


def _candidate(pool: _Pool, w: np.ndarray) -> StructuralCandidate:
    ids = pool.alive_ids()
    return StructuralCandidate(
        w=w, alpha=pool.alpha[ids].copy(), planes=[pool.planes[k] for k in ids]
    )


def _round_certificate(
    f: StructuralProblem, pool: _Pool, rnd: _Round, tol: float
) -> Certificate | None:
    """The independent certificate of the round's point once the loop's own gap is at most
    ``tol`` (``None`` before): a loop stops only on a certificate that passes."""
    if relative(rnd.gap, rnd.primal) <= tol:
        return certify_structural(f, _candidate(pool, rnd.w), tol)
    return None


def _last_certificate(
    f: StructuralProblem,
    pool: _Pool,
    rnd: _Round,
    cert: Certificate | None,
    tol: float,
    stopped: str,
    limit: str,
) -> Certificate:
    """``cert`` if it passed; else the certificate of the last round's point, with a warning
    that the loop stopped short of ``tol`` (``stopped``: what stopped after how many rounds;
    ``limit``: the option to raise)."""
    if cert is not None and cert.passed:
        return cert
    cert = certify_structural(f, _candidate(pool, rnd.w), tol)
    logger.warning(
        "%s at a certified relative gap of %.2e > tol %.0e; raise %s or max_time, or loosen tol.",
        stopped,
        cert.relative_gap,
        tol,
        limit,
    )
    return cert


def _history(rows: list[tuple[int, float, float, float]]) -> History:
    """The rounds' ``(iteration, objective, time, gap)`` as a :class:`History`."""
    it_arr, obj, tm, gap = (np.array(v) for v in zip(*rows, strict=True))
    return History(iteration=it_arr.astype(np.int64), objective=obj, time=tm, gap=gap)


def _max_violation(pool: _Pool, rnd: _Round, variant: str) -> float:
    """Largest true slack of a block minus its working-set slack at the round's ``w`` (the
    cutting-plane ``eps``)."""
    xi = rnd.xi
    ws = pool.block_slacks(rnd.w)
    if variant == "one_slack":
        return max(0.0, fsum(xi) - float(ws[0]))
    return max(0.0, float(np.max(xi - ws)))


def _exact_cheaper(planes: int, features: int, entries: int) -> bool:
    """Whether the exact working-set QP of ``planes`` planes over ``features`` features costs
    less (:data:`EXACT_FIXED`, :data:`EXACT_PLANE`, :data:`EXACT_FACTOR`) than sweeps over
    ``entries`` plane entries did (:data:`SWEEP_ENTRY` each): those since a round last reached
    its target, as many as the next round is expected to need."""
    m = float(planes)
    exact = EXACT_FIXED + EXACT_PLANE * m + EXACT_FACTOR * m * min(m, float(features)) ** 2
    return exact < SWEEP_ENTRY * entries

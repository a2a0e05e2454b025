r"""Dual coordinate ascent over the rows' nonzeros (Hsieh et al. 2008; liblinear's ``-s 1/-s 3``).

The L2-penalised linear SVMs with a hinge or squared hinge loss and no coupling constraint have
the dual

.. math::

    \max_{lo \le u \le hi}\; D(u) = \sum_i \big(p_i u_i - \tfrac12 d_i u_i^2\big)
    - \tfrac12 \|v\|^2,\qquad v = \sum_i u_i \sigma_i \tilde x_i,

with ``tilde x_i = (x_i, B)`` when the intercept is a regularised feature of value ``B``
(liblinear's bias, ``b = B v_{d+1}``) and ``tilde x_i = x_i`` otherwise; hinge: ``d_i = 0``,
``0 <= u_i <= C s_i``; squared hinge: ``d_i = 1 / (2 C s_i)``, ``u_i >= 0``
(:class:`~qpsvm.verify.fenchel.LossConjugate` gives ``p, d, lo, hi``). A free intercept ``b``
held fixed shifts the linear term, ``p_i - sigma_i b``: the problem with ``b`` fixed, whose dual
has no balance constraint.

One coordinate at a time is maximised exactly, ``u_i <- clip(u_i - G_i / (||x_i||^2 + d_i))``
with ``G_i = sigma_i v . tilde x_i - p_i + d_i u_i`` (the gradient of ``-D``), and ``v`` is
updated in place: a step costs ``O(nnz(x_i))``, an epoch ``O(nnz(X))``, and no dense matrix is
ever formed. Coordinates are visited in a fresh random order each epoch, and those at a bound
whose gradient pushes them outward beyond the previous epoch's largest violation are shrunk
(skipped) until the active ones converge (liblinear's ``solve_l2r_l1l2_svc``); then the
shrunk ones are checked by a pass over their gradients in storage order, and those the last
epoch would not have shrunk rejoin the active set (liblinear puts every one back, and its next
two epochs visit every row in a random order). The ascent stops when the projected gradients
of every coordinate span at most ``tol``.

Where the ascent is slow (the hinge with ``n > d``: the free coordinates nearly as many as the
features, their Hessian ill-conditioned) a primal active-set method on the free set finishes it
(:func:`free_set_step`), with a free intercept for the multipliers and ``b`` together.

Every point it returns is in the box, so its ``D`` is a valid lower bound for the problem
without coupling; the verifier evaluates it rigorously, never trusting the ascent.
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from typing import Any

import numba
import numpy as np
import scipy.linalg
import scipy.sparse as sp

from qpsvm._jit import CALLEE, ENTRY
from qpsvm._numerics import _sum2_python, charge, csr_tdot2_abs, fsum, fsum_dot, tdot, uncompiled
from qpsvm._rows import (
    _example_axpy,
    _example_dot,
    canonical_csr,
    clustered_columns,
    data_arrays,
    linear_data,
    ranked_indices,
    row_products,
    touched_columns,
    used_columns,
)

logger = logging.getLogger("qpsvm")

#: Epochs a certificate's ascent may run to find its dual point (liblinear's own limit).
CERTIFY_EPOCHS = 1000
#: The ascent puts every shrunk coordinate back this often (in epochs).
UNSHRINK_EVERY = 10
#: ... and the solver's ascents (``method="dcd"``, with a free intercept each inner problem of
#: the search on ``b``) this often: closer to liblinear, which puts them back only once the
#: active set has converged (with a free intercept at 20000 x 200: 161 ms against 86 ms,
#: 5000 x 2000: 50 ms against 40 ms, CPU time best of 5). Where the ascent
#: is slow (the hinge with ``n > d``: 440 epochs to the tolerance 1e-3 at 20000 x 200, 10
#: nonzeros a row) a full pass every 10 epochs was most of its time (0.10 s against 0.03 s at
#: 100 epochs, measured on benchmarks/regimes/sparse.py); a coordinate shrunk wrongly meanwhile
#: is the free-set finish's to free (:func:`free_set_step`). Every 1000 epochs rather than 100:
#: each return to the full set costs two or three epochs without shrinking (1.4 ms each at
#: 20000 x 200, against 0.03 ms shrunk); with a free intercept at 20000 x 200, 94-98 ms against
#: 83-88 ms, without one 62-64 ms against 58-61 ms, the other sparse points of the quick grid
#: unchanged (CPU time, best of 7, two alternating runs, load 7-10 on 2 cores).
SOLVER_UNSHRINK_EVERY = 1000
#: Most values of the free intercept the outer search tries.
MAX_SHIFTS = 100
#: Largest first step of the outer search on ``b`` (relative to ``max(1, max p_i)``), before
#: it has a secant.
FIRST_STEP = 0.5
#: The outer search gives up when its best gap has not halved over this many values of ``b``.
STALL = 8
#: The outer search keeps ``b`` and tightens its inner problem to the target once balancing its
#: multipliers costs at most this fraction of the target.
SETTLED = 0.1
#: The relative gap the regularised start (:func:`_regularised_start`) is solved to where the
#: ascent is fast (:func:`first_tolerance`): its rank-one coupling halves the ascent's steps
#: (2000 x 20000, 20 nonzeros a row: 13 + 18 epochs to the tolerances 0.1 and 1e-3, where the
#: problem with ``b`` fixed takes 6 + 8), so the search on ``b`` takes over after its first
#: tolerance (the search 68 epochs to 53). Where it is slow (the hinge with ``n > d``) the
#: free-set finish takes over from its point at 1e-3, the search's first inner tolerance.
REGULARISED_FAST = 1e-2
#: The residual (relative) of the conjugate gradients of the outer search's first slope.
SLOPE_RTOL = 1e-2
#: The balanced ascent's bracket drops an end found at a looser inner tolerance once the other
#: side has been replaced this many times in a row after it was first found (:class:`_Bracket`).
STALE_STREAK = 2
#: Epochs between the Newton steps on a free intercept that moves with the multipliers
#: (:func:`coordinate_epochs` with ``intercept``): with 1, 2 and 3 the ascent from 0 took 49,
#: 46 and 49 epochs at 2000 x 20000 (20 nonzeros a row), 53, 54 and 56 at 5000 x 20000 (50 a
#: row; benchmarks/regimes/sparse.py), and 1 cost the most time (a return to Python an epoch).
BALANCE_SLICE = 2
#: The ascent (:func:`ascend`, and with a moving intercept :func:`_newton_ascent`) tightens
#: its tolerance by this times ``target / gap`` where that is less than the next of
#: :data:`TOLERANCES` (:func:`_next_tolerance`): 5000 x 20000 (50 nonzeros a row), the hinge
#: without intercept, left a gap of 7.0e-12 against 5e-12 after the tolerance 1e-9, and the
#: tolerance 1e-11 cost 10 more epochs (benchmarks/regimes/sparse.py).
LAST_TOLERANCE = 0.3
#: The projected-gradient tolerances of the ascent run one after the other, each warm started.
#: Two decades apart: each restart costs a pass without shrinking.
TOLERANCES = tuple(10.0**-k for k in range(1, 15, 2))
#: :func:`ascend`'s last tolerance may lie this many times farther down than two decades
#: (:func:`_next_tolerance`'s ``reach``): at the sparse points of benchmarks/regimes/sparse.py
#: without intercept the gap after the tolerance 1e-7 was 5e-10 to 1.1e-9 and after 1e-9
#: 6e-12 to 9e-12, just above the target 5e-12, so the ladder's 1e-9 was followed by a last
#: tolerance of about 2.3e-10 (1 to 4 epochs, a sweep of the shrunk rows and a gap); taken
#: from 1e-7 at once, about 2.5e-10, it left gaps of 1e-12 to 2e-12.
LAST_REACH = 1e-2
#: The ascent tries the free-set solve (:func:`free_set_step`) after each tolerance from this
#: one on (by then the free set is the optimum's or close to it) that took at least
#: ``FINISH_EPOCHS`` epochs: where the ascent is fast (text-like data with n < d: 8-13 epochs a
#: tolerance, up to n = 20000, d = 50000) the solve costs more than it saves, where it is slow
#: (n > d, the hinge: 47-71) it ends the ascent (measured on benchmarks/regimes/sparse.py).
FINISH_FROM = 1e-3
FINISH_EPOCHS = 25
#: ... and only once the relative gap is at most this: farther from the optimum the free set
#: holds many coordinates that end at a bound, each a ratio step of the finish (measured on
#: the n > d points of benchmarks/regimes/sparse.py: relative gaps of 1e-6 to 3e-6 after the
#: tolerance 1e-3, where the finish takes 13-30 steps; 1e-3 with a free intercept far from its
#: root, where it took seconds and did not end the ascent).
FINISH_GAP = 1e-5
#: ... or, whatever the tolerance and the gap, once the free set has at most this many
#: coordinates: its dense factor and ratio steps cost well under a millisecond, against a
#: slow stage of the ascent (dense 500 x 20, the hinge at C = 100: 15656 epochs to the first
#: tolerance, 33 free coordinates at a gap of 1.2e-3, which the finish took to 4e-8 in 3 ms;
#: the next tolerance ran out of 100000 epochs at 5.6e-5 with the gap gate alone).
FINISH_FREE = 64
#: The hinge's ascent runs a tolerance in slices of at most this many epochs, the finish
#: tried after each: on dense 500 x 20 at C = 100 the first tolerance took 15000-32000 epochs
#: (0.1-0.4 s), its free set at most ``FINISH_FREE`` from 6000 on, where the finish reached
#: the optimum (gaps of 3e-14 to 8e-14 from every slice's point). The ascents of the quick
#: sparse grid run fewer epochs a tolerance, and are not sliced.
FINISH_SLICE = 1000
#: A tolerance at least this many times the ascent's target that converged (not a slice run
#: out) is followed by the next without the gap evaluated (:func:`_unevaluated`), the hinge's
#: (first) and the squared hinge's: the gap falls with the tolerance, for the hinge 1e-2 times
#: it on benchmarks/regimes/sparse.py (2000 x 20000, 20 nonzeros a row, free intercept: 9.5e-4,
#: 1.2e-5, 1.1e-7, 1.1e-9 after 1e-1 to 1e-7), for the squared hinge faster (1.4e-4, 1.2e-8,
#: 9.6e-11 after 1e-1, 1e-3, 1e-5, where the target 5e-12 was in :data:`LAST_TOLERANCE`'s
#: reach), so such a gap is never within the target, nor within that reach of it. Each
#: evaluation is a pass over the rows and the features (with a free intercept the balanced
#: point's too), 50-160 us of a 4-7 ms solve there.
UNEVALUATED_FROM = (1e6, 1e8)
#: Factorizations of one free-set finish at most (the first, then one each time bound
#: coordinates whose gradient points into the box join the free set: once or twice from the
#: free set of a loose ascent, measured on benchmarks/regimes/sparse.py; but five or six at
#: 50000 x 500, 10 nonzeros a row, with an intercept, from the free set of 1000 epochs at the
#: tolerance 1e-3: with four the finish left a gap of 9e-4 and the ascent ran another 1000
#: epochs and a second finish, with a free intercept 1022 more epochs).
FREE_SET_ROUNDS = 8
#: ... unless the free set has at most :data:`FINISH_FREE` coordinates: then the steps alone
#: bound the rounds (a factor costs microseconds; dense 500 x 20 at C = 100 with a
#: regularised intercept: 5 rounds from the free set of the ascent's first tolerance, each
#: adding 4-26 coordinates, the fourth leaving the gap at 2.6e-3).
#: Ratio steps of one free-set finish at most (each moves one coordinate to its bound, or
#: solves the equations of the free set: 13-30 from the ascent's free set at tolerance 1e-3 on
#: the n > d points of benchmarks/regimes/sparse.py).
FREE_SET_STEPS = 200
#: Most free coordinates the finish forms its dense ``|F| x |F|`` Hessian for (72 MB at 3000):
#: past it only the iterative system serves (sparse rows fewer than the columns they touch),
#: else the ascent goes on alone.
DENSE_FREE_MAX = 3000
#: A round of the finish extends the last round's dense factor by the coordinates joining
#: (:meth:`_FreeSystem.extend`) rather than factoring the new free set, while the coordinates
#: dropped and joining together are at most this fraction of the factor's: the dropped ones
#: stay in it as bordered constraints, every solve's triangular passes and bordered columns
#: growing with them (50000 x 500, 10 nonzeros a row, the hinge with a free intercept: 491
#: free, then 27, 6, 7, 1, 1 joining and 25, 22, 11, 3, 2 leaving, a new factor 4.2-5 ms a
#: round).
EXTEND_MAX = 0.25
#: The finish solves its equations by conjugate gradients
#: (:class:`_IterativeSystem`) instead of a dense factor when the factor's ``|F|^3 / 3`` flops
#: exceed this many times ``nnz(Z_F) + |F|`` (a product with ``H`` costs four times that, a
#: solve 150-250 products), the rows being sparse and fewer than the columns they touch (a
#: singular ``H``, more free coordinates than independent rows, is the dense factor's: its
#: proximal shift makes the null-space steps long). Measured (CPU time, loaded machine) at
#: 5000 x 2000, 10 nonzeros a row, the hinge without intercept: 814 free, ratio 2e4, the
#: finish 7.4 ms against 24 ms dense, the solve 18 ms against 30 ms. With a free intercept
#: projected conjugate gradients keep the balance, one solve a ratio step (two solves, ``H^-1
#: g`` and ``H^-1 sigma_K`` per ``K``, measured 68 ms against 48 ms dense, as 4 of 5 steps hit
#: a bound): at the same size with a free intercept, 805 free, the finish 21 ms against 26 ms
#: dense, the solve 36-38 ms against 41-42 ms (CPU time, best of 9, two alternating runs).
ITERATIVE_FROM = 5000.0
#: ... but conjugate gradients converge at a rate set by the condition number of ``H``, which
#: grows as the free rows approach the number of columns they touch: a round of the finish
#: gives way to the dense factor once its solves have run as many products as the factor
#: costs, ``|F|^3 / 3`` flops at this many times the flop rate of a product (``nnz(Z_F) +
#: |F|`` flops, measured: at 50000 x 500, 10 nonzeros a row, 493 free over 499 columns, the
#: factor 5-6 ms, a product 7 us, ratio 8.2; at 50000 x 2000, 20 a row, 1659 free, the factor
#: 180-210 ms, a product about 25 us, ratio 6-7). Run in full, those solves took 1000
#: products each, short of ``CG_STEP_RTOL``, at 50000 x 500 without intercept (the finish
#: 120 ms against 60 ms with the factor), 200-900 with a free one (97 solves, 0.35 s). A
#: tight solve (``CG_RTOL``) that runs out of iterations is no reason to give way: at 100000 x
#: 2000 with a free intercept the round's last, a refinement, did, and the factor of 1845
#: coordinates then served a single step (0.15 s more).
FACTOR_PRODUCTS = 8.0
#: The solves a round of the finish is taken to need where it chooses between conjugate
#: gradients and the dense factor before any has run (:func:`_free_system`): 4-9 at 50000 x
#: 500, 10 nonzeros a row, 3-7 at 100000 x 2000, 20 a row (the hinge). There, 494 free rows
#: over 499 columns, the first round's first solve ran its :data:`CG_ITERATIONS` products,
#: about 10 ms, and gave way to the factor; at 473 free over 498, 1335 products in four
#: solves against a factor of 847 (predicted 770 a solve, :func:`_cg_products`).
ROUND_SOLVES = 4
#: Conjugate-gradient iterations of one solve at most, and the residual (relative to the first,
#: projected with a free intercept) they stop at: the steps of the finish refine what a solve
#: leaves.
CG_ITERATIONS = 1000
CG_RTOL = 1e-12
#: Before :func:`_free_cg` is compiled (about 1 s) its numpy equivalent runs
#: (:func:`_free_cg_numpy`, the same floats) until its products would have paid for the
#: compile: a product costs it about 22 us plus 2 ns an entry of ``Z_K`` and ``x`` (the
#: compiled loop 0.6-10 us at 250-8000 nonzeros, 120-240 us at 75000-150000; CPU time, load
#: 1 on 2 cores), charged as ``CG_NUMPY_FIXED`` entries plus the entries, up to 1 s of it.
CG_NUMPY_FIXED = 10_000
CG_NUMPY_ENTRIES = 500_000_000
#: ... and :func:`coordinate_expansion`'s (about 0.4 s of compile) until its rows' nonzeros
#: would have paid for it (a transposed sparse product, about 2 ns a nonzero).
NUMPY_ENTRIES = 200_000_000
#: ... and :func:`_sweep_shrunk`'s (0.3 s of compile with the row dot it links) until its
#: sweeps would have paid for it: each is charged every row's nonzeros (it selects and
#: multiplies the shrunk rows, 6-7 ns a nonzero of the matrix with 70% of its rows shrunk at
#: 20000-500000 nonzeros; CPU time, load 4 on 2 cores).
SWEEP_ENTRIES = 40_000_000
#: ... and :func:`coordinate_objectives`'s (about 0.35 s) until its Sum2 in Python floats (about
#: 0.09 us an element) would have.
OBJECTIVES_ELEMENTS = 2**22
#: ... and :func:`_rotate_out`'s (about 0.2 s of compile) until its rotations would have paid
#: for it: a rotation costs its numpy equivalent about 6 us plus 3 ns an entry, charged as
#: ``ROTATION_FIXED`` entries plus the entries.
ROTATION_FIXED = 2_000
ROTATION_ENTRIES = 70_000_000
#: ... and the residual the solves of steps likely to end at a bound stop at (each round's
#: first, and each after a step that ended at one), started from the last step's ``(1 - t) x``:
#: a ratio step needs an ascent direction, not the equations' solution, which the steps
#: without a bound then solve to ``CG_RTOL``. Measured in conjugate-gradient products
#: per finish (benchmarks/regimes/sparse.py, the same steps and optimum): 5000 x 2000 with a
#: free intercept 665 against 271 at 1e-4 (234 at 1e-3, 488 at 1e-6 with the first solve
#: tight and no start), without one 196 against 179; 50000 x 2000 (20 nonzeros a row) 11827
#: against 5001 without intercept, 19178 against 5172 with a free one.
CG_STEP_RTOL = 1e-4
#: ... and, given the caller's target relative gap, the residual a refinement (a step of the
#: finish after one without a bound) stops at: this times ``sqrt(target / gap)`` relative to
#: the cold start's (at most :data:`CG_STEP_RTOL`), the finish ending at the first step whose
#: gap meets the target. The gap falls about as the residual's square times the condition:
#: at 5000 x 20000 (50 nonzeros a row, the hinge without intercept) a residual 1e-4 times
#: the cold start's took the gap from 7.4e-6 to 5.1e-10, and again from 5.1e-10 to 4.0e-14.
GAP_RTOL = 1e-2
#: The finish's Hessian is shifted by this times its largest diagonal entry before it is
#: factored: far above the rounding of a Cholesky factorization (``|F| eps``), far below the
#: curvature of the directions the optimum depends on; each step then solves the equations to
#: a relative ``PROXIMAL / lambda``, refined by the next.
PROXIMAL = 1e-11
#: A step of the finish without a bound whose first-order gain in ``D`` (``G_F . x``) is at
#: most this relative to ``max(1, |p| . u)`` ends its refinement: the equations hold to
#: round-off, and a null-space direction with a gradient of rounding size is not followed.
STEP_FLOOR = 1e-14

__all__ = [
    "SOLVER_UNSHRINK_EVERY",
    "Ascent",
    "CoordinateData",
    "ascend",
    "balanced_ascent",
    "compiled_coordinate_epochs",
    "coordinate_epochs",
    "coordinate_expansion",
    "coordinate_objectives",
    "first_tolerance",
    "free_set_step",
    "moves_intercept",
    "regularised_ascent",
    "shrinking_epochs",
]


#: Floats a coordinate's record holds (:func:`coordinate_records`): its five read at every
#: visit, padded to 64 bytes, one cache line where the records are aligned to it.
RECORD = 8


def coordinate_records(
    sigma: np.ndarray, p: np.ndarray, d: np.ndarray, hi: np.ndarray, qd: np.ndarray
) -> np.ndarray:
    """``K[i] = (sigma_i, p_i, d_i, hi_i, qd_i)`` (and padding), rows of :data:`RECORD` floats
    aligned to 64 bytes: what :func:`shrinking_epochs` reads of coordinate ``i`` at each visit,
    one cache line instead of five arrays' (the same numbers, so the same floats). In an
    epoch's random order each array is a read from outside the cache: at 50000 x 500 (10
    nonzeros a row, the hinge) a visit of the first epochs cost 51-70 ns, and 600 epochs
    32.5 ms against 30.2 ms with the records, their packing included (CPU, best of 7)."""
    n = sigma.shape[0]
    raw = np.empty((n + 1) * RECORD)
    start = -(raw.ctypes.data // raw.itemsize) % RECORD
    K = raw[start : start + n * RECORD].reshape(n, RECORD)
    for j, a in enumerate((sigma, p, d, hi, qd)):
        K[:, j] = a
    return K


def coordinate_epochs(
    M: tuple,
    sigma: np.ndarray,
    p: np.ndarray,
    d: np.ndarray,
    hi: np.ndarray,
    bias: float,
    qd: np.ndarray,
    u: np.ndarray,
    v: np.ndarray,
    max_epochs: int,
    tol: float,
    seed: int,
    unshrink_every: int,
    intercept: np.ndarray | None = None,
    slope: float = 0.0,
    curvature: float = 0.0,
    carry: list | None = None,
) -> tuple[int, float]:
    """Dual coordinate ascent with shrinking (see the module docstring) over the rows of ``M``
    (:func:`qpsvm._rows.data_arrays`: dense, CSR, or a ranking SVM's pair differences); ``v``
    has one more entry than there are features (the regularised intercept's coordinate, 0 when
    ``bias == 0``). The coordinates with ``hi_i > 0`` and ``qd_i + d_i > 0`` take part. The
    epochs run compiled (:func:`shrinking_epochs`); once the active coordinates converge, and
    every ``unshrink_every`` epochs (on a singular active set convergence can take long while a
    shrunk coordinate has become violated), the shrunk ones are swept in storage order
    (:func:`_sweep_shrunk`, or on CSR rows before it is compiled its numpy equivalent with the
    same floats): the ascent ends when the projected gradients of all of them span at most
    ``tol``, else the swept coordinates the last epoch would not have shrunk rejoin the active
    set. The sweep is called from here, not from the compiled epochs, so that a call whose
    ascent never shrinks, or a cold one on CSR rows, does not compile it (0.3 s). Updates ``u``
    and ``v`` in place and returns the epochs run and the last spread of projected gradients.

    With ``intercept`` (a one-element array) the free intercept ``b = intercept[0]`` moves
    with the multipliers: the dual's linear term is ``p - sigma b`` (``p`` unshifted), and
    after every :data:`BALANCE_SLICE` epochs (and every sweep) ``b`` takes Newton's step on
    ``g(b) = sum_i sigma_i u_i``, ``b + g / slope`` (``slope`` an estimate of ``-g'``,
    :func:`_slope`), in place; the shrunk set and the generator's state carry over. With
    ``curvature = 1 / B^2 > 0`` the intercept is regularised (a penalty ``b^2 / (2 B^2)``):
    the step is Newton's on ``g(b) - b / B^2``, ``b + (g - b / B^2) / (slope + 1 / B^2)``.

    With ``carry`` (a list, empty at first) the active set is kept from one call to the next:
    the call starts from the coordinates the last one left active (the shrunk ones rejoin
    only where a sweep finds them violated), not from every coordinate, and stores its own.
    A tighter tolerance then opens with an epoch over the active coordinates rather than all:
    at 5000 x 20000 (50 nonzeros a row, the hinge without intercept) 1590 of 5000 rows, about
    190 us against 600 us, at each of the ascent's six tolerances. Only for calls on the same
    problem whose ``u`` nothing else moved in between.
    """
    n = sigma.shape[0]
    if carry:
        index, shrunk, active, total = carry
    else:
        live = np.flatnonzero((hi > 0.0) & (qd + d > 0.0))
        total = live.shape[0]
        index = np.zeros(n, dtype=np.int64)
        index[:total] = live
        shrunk = np.zeros(n, dtype=np.bool_)
        active = total
    # the generator's state, a 64-bit linear congruential one (Knuth's MMIX constants): the
    # order is reproducible from the seed and numpy's global random state is left alone
    state = np.array([(int(seed) * 2654435761 + 1) % 2**64], dtype=np.uint64)
    counts = np.array([0, active], dtype=np.int64)  # epochs run, active coordinates
    base = p
    K = coordinate_records(sigma, p, d, hi, qd)
    # the shrinking's thresholds: none in the first epoch and after a sweep, kept over a
    # Newton step on the intercept
    previous = np.array([np.inf, -np.inf])
    while True:
        if intercept is not None:
            p = base - sigma * intercept[0]
            K[:, 1] = p
        until = max_epochs if intercept is None else min(max_epochs, counts[0] + BALANCE_SLICE)
        violation, pg_min, pg_max, sweep = shrinking_epochs(
            M, K, bias, u, v, until, tol, unshrink_every,
            index, shrunk, counts, state, total, previous,
        )  # fmt: skip
        if intercept is not None:
            # a step only steers: a plain sum
            intercept[0] += (float(sigma @ u) - curvature * intercept[0]) / (slope + curvature)
        if not sweep:
            if intercept is None or violation <= tol or counts[0] >= max_epochs:
                break
            continue
        pairs = M[5].ndim == 2
        if M[4] and not pairs and uncompiled(_sweep_shrunk, M[1].shape[0], SWEEP_ENTRIES):
            sweep_shrunk = _sweep_shrunk_numpy
        else:
            sweep_shrunk = _sweep_shrunk
        active, violation = sweep_shrunk(
            M, sigma, p, d, hi, bias, u, v, index, shrunk, counts[1], pg_min, pg_max
        )
        counts[1] = active
        previous[:] = (np.inf, -np.inf)
        if violation <= tol or counts[0] >= max_epochs:
            break
    if carry is not None:
        carry[:] = (index, shrunk, int(counts[1]), total)
    return int(counts[0]), float(violation)


@numba.njit(**CALLEE)
def compiled_coordinate_epochs(
    M, sigma, p, d, hi, bias, qd, u, v, max_epochs, tol, seed, unshrink_every
):  # pragma: no cover - compiled
    """:func:`coordinate_epochs` for compiled callers (the ranking windows' box QPs): the same
    epochs and sweeps, the sweep compiled with them."""
    n = sigma.shape[0]
    index = np.zeros(n, dtype=np.int64)
    total = np.int64(0)
    for i in range(n):
        if hi[i] > 0.0 and qd[i] + d[i] > 0.0:
            index[total] = i
            total += 1
    shrunk = np.zeros(n, dtype=np.bool_)
    state = np.empty(1, dtype=np.uint64)
    state[0] = np.uint64(seed) * np.uint64(2654435761) + np.uint64(1)
    counts = np.zeros(2, dtype=np.int64)
    counts[1] = total
    previous = np.empty(2)
    K = np.zeros((n, RECORD))  # coordinate_records' rows (the windows are small: unaligned)
    for i in range(n):
        K[i, 0], K[i, 1], K[i, 2], K[i, 3], K[i, 4] = sigma[i], p[i], d[i], hi[i], qd[i]
    while True:
        previous[0], previous[1] = np.inf, -np.inf
        violation, pg_min, pg_max, sweep = shrinking_epochs(
            M, K, bias, u, v, max_epochs, tol, unshrink_every,
            index, shrunk, counts, state, total, previous,
        )  # fmt: skip
        if not sweep:
            return counts[0], violation
        counts[1], violation = _sweep_shrunk(
            M, sigma, p, d, hi, bias, u, v, index, shrunk, counts[1], pg_min, pg_max
        )
        if violation <= tol or counts[0] >= max_epochs:
            return counts[0], violation


# The epochs allocate nothing and take views only (``w = v[:last]``): compiled without numba's
# reference counting (``_nrt=False``, as the multiclass descents), the same floats.
@numba.njit(**ENTRY, _nrt=False)
def shrinking_epochs(
    M,
    K,
    bias,
    u,
    v,
    max_epochs,
    tol,
    unshrink_every,
    index,
    shrunk,
    counts,
    state,
    total,
    previous,
):  # pragma: no cover - compiled
    """The epochs of :func:`coordinate_epochs` (each coordinate's ``sigma, p, d, hi, qd`` in
    its record ``K[i]``, :func:`coordinate_records`) over the active coordinates ``index[:active]``
    (``counts = [epochs run, active]``, ``state[0]`` the generator's state, ``previous`` the
    shrinking's thresholds from the epoch before, ``[inf, -inf]`` for none: all updated), in a
    random order each, shrinking as liblinear does (``shrunk`` marks the coordinates moved out),
    until ``max_epochs`` have run or the spread of the projected gradients is at most ``tol``
    with none shrunk, or a sweep of the shrunk ones is due (the active ones converged, or
    ``unshrink_every`` epochs). Returns the spread, the last epoch's least and largest projected
    gradients, and whether a sweep is due."""
    last = v.shape[0] - 1
    w = v[:last]  # a view: the rows' coordinates (dense rows are read over its length)
    rng = state[0]
    epochs = counts[0]
    active = counts[1]
    pg_max_old = previous[0]
    pg_min_old = previous[1]
    pg_max = -np.inf
    pg_min = np.inf
    violation = np.inf
    sweep = False
    while epochs < max_epochs:
        epochs += 1
        pg_max = -np.inf
        pg_min = np.inf
        for s in range(active):
            rng = rng * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)
            j = s + np.int64((rng >> np.uint64(33)) % np.uint64(active - s))
            index[s], index[j] = index[j], index[s]
        s = 0
        while s < active:
            i = index[s]
            a = u[i]
            sigma_i, d_i, hi_i = K[i, 0], K[i, 2], K[i, 3]
            G = sigma_i * (_example_dot(i, M, w) + v[last] * bias) - K[i, 1] + d_i * a
            PG = 0.0
            if a <= 0.0:
                if G > pg_max_old:
                    active -= 1
                    shrunk[i] = True
                    index[s], index[active] = index[active], index[s]
                    continue
                if G < 0.0:
                    PG = G
            elif a >= hi_i:
                if G < pg_min_old:
                    active -= 1
                    shrunk[i] = True
                    index[s], index[active] = index[active], index[s]
                    continue
                if G > 0.0:
                    PG = G
            else:
                PG = G
            if PG > pg_max:  # max(pg_max, PG), written out (numba's max is compiled apart)
                pg_max = PG
            if PG < pg_min:  # min(pg_min, PG)
                pg_min = PG
            if PG != 0.0:
                new = a - G / (K[i, 4] + d_i)  # min(max(new, 0.0), hi_i)
                if 0.0 > new:
                    new = 0.0
                if hi_i < new:
                    new = hi_i
                delta = (new - a) * sigma_i
                if delta != 0.0:
                    u[i] = new
                    _example_axpy(i, M, delta, w)
                    v[last] += delta * bias
            s += 1
        violation = pg_max - pg_min
        if active < total and (violation <= tol or epochs % unshrink_every == 0):
            sweep = True
            break
        if violation <= tol:
            break
        pg_max_old = pg_max if pg_max > 0.0 else np.inf
        pg_min_old = pg_min if pg_min < 0.0 else -np.inf
    counts[0] = epochs
    counts[1] = active
    state[0] = rng
    previous[0] = pg_max_old
    previous[1] = pg_min_old
    return violation, pg_min, pg_max, sweep


@numba.njit(**ENTRY)
def _sweep_shrunk(
    M, sigma, p, d, hi, bias, u, v, index, shrunk, active, pg_min, pg_max
):  # pragma: no cover - compiled
    """The shrunk coordinates of :func:`coordinate_epochs` (``shrunk``, all at a bound) swept in
    storage order, their gradients only (rows read in sequence, where an epoch reads them in a
    random order: a full epoch cost about three such sweeps at 50000 x 500, 10 nonzeros a
    row): the spread of the projected gradients over every coordinate (``pg_min, pg_max`` the
    active ones'), and the coordinates whose gradient the last epoch would not have shrunk
    (at 0 ``G <= max(pg_max, 0)``, at the upper bound ``G >= min(pg_min, 0)``, every one with
    a projected gradient among them) appended to the active ``index[:active]``, the others
    stored after them. Returns the new number of active coordinates and the spread."""
    last = v.shape[0] - 1
    w = v[:last]
    lo, up = pg_min, pg_max
    back_lo, back_up = max(pg_max, 0.0), min(pg_min, 0.0)
    for i in range(sigma.shape[0]):
        if not shrunk[i]:
            continue
        a = u[i]
        G = sigma[i] * (_example_dot(i, M, w) + v[last] * bias) - p[i] + d[i] * a
        PG = min(G, 0.0) if a <= 0.0 else max(G, 0.0)
        lo, up = min(lo, PG), max(up, PG)
        back = G <= back_lo if a <= 0.0 else G >= back_up
        if back:
            shrunk[i] = False
            index[active] = i
            active += 1
    q = active
    for i in range(sigma.shape[0]):
        if shrunk[i]:
            index[q] = i
            q += 1
    return active, up - lo


def _sweep_shrunk_numpy(
    M: tuple,
    sigma: np.ndarray,
    p: np.ndarray,
    d: np.ndarray,
    hi: np.ndarray,
    bias: float,
    u: np.ndarray,
    v: np.ndarray,
    index: np.ndarray,
    shrunk: np.ndarray,
    active: int,
    pg_min: float,
    pg_max: float,
) -> tuple[int, float]:
    """:func:`_sweep_shrunk` on CSR rows in numpy, with the same floats: scipy's CSR product adds
    each row's terms in the compiled dot's order from 0, the gradients' other operations are
    elementwise in the same order, and the extremes of the projected gradients are exact
    (equal in value to the compiled loop's, a zero's sign aside)."""
    last = v.shape[0] - 1
    rows = np.flatnonzero(shrunk)
    X = sp.csr_matrix((M[1], M[2], M[3]), shape=(M[3].shape[0] - 1, last))
    a = u[rows]
    G = sigma[rows] * (X[rows] @ v[:last] + v[last] * bias) - p[rows] + d[rows] * a
    at_zero = a <= 0.0
    PG = np.where(at_zero, np.minimum(G, 0.0), np.maximum(G, 0.0))
    spread = max(pg_max, float(PG.max())) - min(pg_min, float(PG.min()))
    back = np.where(at_zero, G <= max(pg_max, 0.0), G >= min(pg_min, 0.0))
    shrunk[rows[back]] = False
    joined = int(np.count_nonzero(back))
    index[active : active + joined] = rows[back]
    index[active + joined : active + rows.shape[0]] = rows[~back]
    return active + joined, spread


@numba.njit(**CALLEE)
def _sum2_add(s, c, x):  # pragma: no cover - compiled
    """One step of Sum2 (:func:`qpsvm._numerics.fsum`): TwoSum ``s + x = t + e``, ``e`` joins
    ``c``; returns ``t`` and the new ``c``."""
    t = s + x
    z = t - s
    return t, c + ((s - (t - z)) + (x - z))


@numba.njit(**ENTRY)
def coordinate_objectives(M, sigma, p, d, hi, bias, u, v, shift, primal):  # pragma: no cover
    """``P(v)`` and ``D(u)`` of :class:`CoordinateData` at the fixed intercept ``shift``
    (floating point, each sum by Sum2, as :func:`qpsvm._numerics.fsum`): the losses from one
    pass over the rows of ``M`` (skipped without ``primal``, ``P`` then ``nan``), the dual's
    linear and quadratic terms over ``u`` (none for an empty ``u``). The estimates that steer
    the ascent; the certificate evaluates its own bounds."""
    last = v.shape[0] - 1
    w = v[:last]
    norm, norm_c = 0.0, 0.0
    for j in range(v.shape[0]):
        norm, norm_c = _sum2_add(norm, norm_c, v[j] * v[j])
    norm += norm_c
    out_p = np.nan
    if primal:
        b = shift + bias * v[last]
        loss, loss_c = 0.0, 0.0
        for i in range(sigma.shape[0]):
            r = p[i] - sigma[i] * (_example_dot(i, M, w) + b)
            if r > 0.0:
                term = r * r / (2.0 * d[i]) if d[i] > 0.0 else hi[i] * r
                loss, loss_c = _sum2_add(loss, loss_c, term)
        out_p = 0.5 * norm + (loss + loss_c)
    gain, gain_c = 0.0, 0.0
    for i in range(u.shape[0]):
        a = u[i]
        gain, gain_c = _sum2_add(gain, gain_c, (p[i] - sigma[i] * shift) * a - 0.5 * d[i] * a * a)
    return out_p, (gain + gain_c) - 0.5 * norm


@numba.njit(**ENTRY)
def coordinate_expansion(M, sigma, bias, u, width):  # pragma: no cover - compiled
    """``v = sum_i u_i sigma_i tilde x_i`` (``width`` entries, the last ``bias sum_i u_i
    sigma_i``) by plain products over the rows of ``M``, the nonzero ``u_i`` only: the
    expansion that steers the ascent."""
    v = np.zeros(width)
    w = v[: width - 1]
    for i in range(sigma.shape[0]):
        if u[i] != 0.0:
            c = u[i] * sigma[i]
            _example_axpy(i, M, c, w)
            v[width - 1] += c * bias
    return v


@dataclass
class CoordinateData:
    """One problem of the ascent: the rows (CSR), signs ``sigma``, the dual's ``p, d`` and upper
    bounds ``hi`` (lower bounds 0), and the regularised intercept's feature value ``bias`` (0:
    none). ``qd`` are the squared norms ``||tilde x_i||^2``. ``columns``: where the caller keeps
    :func:`qpsvm._rows.touched_columns` of these rows (a formulation's cached
    :meth:`~qpsvm.formulations.kernel_rows.KernelRows.touched_columns`), for
    :meth:`on_touched_columns`. ``sqnorm``: the rows' squared norms where the caller has them
    (a formulation's cached
    :meth:`~qpsvm.formulations.kernel_rows.TouchedRows.row_sq_norms`), for rows that are
    already a canonical CSR matrix or dense; else summed here."""

    X: Any
    sigma: np.ndarray
    p: np.ndarray
    d: np.ndarray
    hi: np.ndarray
    bias: float = 0.0
    columns: Callable[[], tuple[sp.csr_matrix, np.ndarray] | None] | None = field(
        default=None, repr=False
    )
    sqnorm: InitVar[np.ndarray | None] = None
    qd: np.ndarray = field(init=False, repr=False)
    rows: tuple = field(init=False, repr=False)

    def __post_init__(self, sqnorm: np.ndarray | None) -> None:
        if sp.issparse(self.X):
            X = canonical_csr(self.X)
            # the caller's norms are of its rows: kept where those are the rows used
            sqnorm = sqnorm if X is self.X else None
            self.X = X
        if sqnorm is not None and (sp.issparse(self.X) or isinstance(self.X, np.ndarray)):
            self.rows = data_arrays(self.X)
        else:
            self.rows, sqnorm = linear_data(self.X, self.X.shape[1])
        self.qd = sqnorm + self.bias**2

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def nnz(self) -> int:
        """The rows' stored entries (all of them for dense rows): an epoch's cost."""
        return int(self.X.nnz) if sp.issparse(self.X) else int(self.X.size)

    def expansion(self, u: np.ndarray, exact: bool = True) -> np.ndarray:
        """``v = sum_i u_i sigma_i tilde x_i``: in twice the working precision, or (``exact=False``,
        for the estimates that steer the ascent) a plain product."""
        if exact:
            su = u * self.sigma
            return np.append(tdot(self.X, su), self.bias * fsum(su))
        if sp.issparse(self.X) and uncompiled(coordinate_expansion, self.nnz, NUMPY_ENTRIES):
            # the compiled loop's operations in its order: scipy's transposed product adds
            # each row's products column by column, row after row (a zero u_i adds +-0)
            su = u * self.sigma
            return np.append(self.X.T @ su, _ordered_sum(su * self.bias))
        return coordinate_expansion(self.rows, self.sigma, self.bias, u, self.n_features + 1)

    def enclosed_expansion(self, u: np.ndarray) -> tuple[np.ndarray, tuple | None]:
        """:meth:`expansion` in twice the working precision and, for canonical CSR rows, what
        it was made of: ``(c, hi, lo, m)`` with ``c = u sigma``, Dot2's unevaluated ``X^T c =
        hi + lo`` and the magnitudes ``m = |X|^T |c|``, one pass for both
        (:func:`~qpsvm._numerics.csr_tdot2_abs`, the floats of :func:`~qpsvm._numerics.tdot2`),
        which a certificate's enclosure of the same product reuses; ``None`` for other rows or
        where the splitting overflowed."""
        if not (sp.issparse(self.X) and self.X.has_canonical_format):
            return self.expansion(u), None
        c = u * self.sigma
        hi, lo, m = csr_tdot2_abs(self.X, c)
        if not (np.all(np.isfinite(hi)) and np.all(np.isfinite(lo))):
            return self.expansion(u), None
        v = np.empty(hi.shape[0] + 1)  # the sum in place, the intercept's entry after it
        np.add(hi, lo, out=v[:-1])
        v[-1] = self.bias * fsum(c)
        return v, (c, hi, lo, m)

    def on_touched_columns(self) -> tuple[CoordinateData, np.ndarray | None]:
        """The same problem over the columns some row touches (:func:`qpsvm._rows.touched_columns`)
        and those columns, or ``self`` and ``None`` (dense rows, pair differences, or most
        columns touched). Its ``v`` is this problem's at ``touched`` and at the intercept's
        entry, the same floats: every other entry of this one's is an exact 0 in every
        expansion and adds an exact 0 to every sum of squares (Sum2 included)."""
        if self.columns is not None:
            restricted = self.columns()
        else:
            restricted = touched_columns(self.X) if sp.issparse(self.X) else None
        if restricted is None:
            return self, None
        out = copy.copy(self)
        out.X, touched = restricted
        out.columns = None
        out.rows = data_arrays(out.X)
        return out, touched

    def clustered(self) -> CoordinateData:
        """The same problem with the columns renumbered by their first appearance along the rows
        (:func:`qpsvm._rows.clustered_columns`), for the epochs: its multipliers are this
        one's to the bit (each ``x_i . w`` the same float, ``w`` permuted); its ``v`` is in
        the new order. ``self`` where the rows are not CSR or are not renumbered. Measured at
        10000 x 1e6 (100 nonzeros a row, 400825 columns touched), the hinge without intercept:
        the ascent 68 -> 57 ms, the same 23 epochs and multipliers."""
        renumbered = clustered_columns(self.X) if sp.issparse(self.X) else None
        if renumbered is None:
            return self
        out = copy.copy(self)
        out.X = renumbered[0]
        out.columns = None
        out.rows = data_arrays(out.X)
        return out

    def regularised(self, bias: float) -> CoordinateData:
        """The same problem with the intercept a regularised feature of value ``bias`` (no
        coupling): the rows shared, their squared norms shifted by the change of ``bias^2``."""
        out = copy.copy(self)
        out.qd = self.qd + (bias**2 - self.bias**2)
        out.bias = bias
        return out

    def intercept(self, v: np.ndarray, shift: float) -> float:
        """The intercept ``b`` of ``v``: the fixed ``shift`` plus ``B v_{d+1}``."""
        return shift + self.bias * float(v[-1])

    def primal(self, v: np.ndarray, shift: float = 0.0) -> float:
        """``P = 1/2 ||v||^2 + sum_i L_i(sigma_i (x_i . w + b))`` at ``w = v[:d]``, with each
        loss ``L_i(z) = max_{0 <= u <= hi_i} u (p_i - z) - d_i u^2 / 2`` (floating point)."""
        return self.objectives(np.zeros(0), v, shift)[0]

    def dual(self, u: np.ndarray, v: np.ndarray, shift: float = 0.0) -> float:
        """``D(u) = sum_i ((p_i - sigma_i shift) u_i - d_i u_i^2 / 2) - 1/2 ||v||^2``."""
        return self.objectives(u, v, shift, primal=False)[1]

    def objectives(
        self, u: np.ndarray, v: np.ndarray, shift: float = 0.0, primal: bool = True
    ) -> tuple[float, float]:
        """:meth:`primal` at ``v`` (``nan`` without ``primal``) and :meth:`dual` at ``u, v`` (0
        for an empty ``u``), in one compiled pass (:func:`coordinate_objectives`)."""
        rows = v.size + u.size + (self.sigma.size if primal else 0)
        if sp.issparse(self.X) and uncompiled(coordinate_objectives, rows, OBJECTIVES_ELEMENTS):
            return self._objectives_numpy(u, v, float(shift), primal)
        P, D = coordinate_objectives(
            self.rows, self.sigma, self.p, self.d, self.hi, self.bias, u, v, float(shift), primal
        )
        return float(P), float(D)

    def _objectives_numpy(
        self, u: np.ndarray, v: np.ndarray, shift: float, primal: bool
    ) -> tuple[float, float]:
        """:func:`coordinate_objectives` on CSR rows by the same operations in the same order:
        each row's dot by scipy's CSR loop (from 0, in the row's order), the sums by Sum2 in
        Python floats (:func:`qpsvm._numerics._sum2_python`)."""
        norm = _sum2_total(v * v)
        out_p = np.nan
        if primal:
            b = shift + self.bias * v[-1]
            r = self.p - self.sigma * (self.X @ v[:-1] + b)
            active = r > 0.0
            r, d, hi = r[active], self.d[active], self.hi[active]
            terms = np.where(d > 0.0, r * r / np.where(d > 0.0, 2.0 * d, 1.0), hi * r)
            out_p = 0.5 * norm + _sum2_total(terms)
        p, d = self.p[: u.size], self.d[: u.size]
        gain = _sum2_total((p - self.sigma[: u.size] * shift) * u - 0.5 * d * u * u)
        return float(out_p), gain - 0.5 * norm

    def run(
        self,
        u: np.ndarray,
        v: np.ndarray,
        tol: float,
        max_epochs: int,
        shift: float,
        seed: int,
        unshrink_every: int = UNSHRINK_EVERY,
        intercept: np.ndarray | None = None,
        slope: float = 0.0,
        curvature: float = 0.0,
        carry: list | None = None,
    ) -> int:
        """Epochs of :func:`coordinate_epochs` on ``u, v`` in place, at the fixed intercept
        ``shift`` (or the free one in ``intercept``, moved by Newton's steps of slope
        ``slope``, regularised with ``curvature``), shrunk coordinates put back every
        ``unshrink_every`` epochs; returns the epochs run."""
        p = self.p - self.sigma * shift if shift else self.p
        epochs, _ = coordinate_epochs(
            self.rows, self.sigma, p, self.d, self.hi, self.bias, self.qd, u, v, max_epochs,
            tol, seed, unshrink_every, intercept, slope, curvature, carry,
        )  # fmt: skip
        return int(epochs)


def _gradient(data: CoordinateData, u: np.ndarray, v: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``G = sigma (X w + bias v_{d+1}) - p + d u``, the gradient of ``-D`` at ``u`` (``v``
    its expansion by a plain product: the finish's steering, never the returned bound)."""
    return data.sigma * (np.asarray(data.X @ v[:-1]).ravel() + data.bias * v[-1]) - p + data.d * u


class _FreeSystem:
    r"""The dual's Hessian on a free set ``F``, ``H = diag(sigma_F) (Z_F Z_F^T + bias^2 1 1^T)
    diag(sigma_F) + diag(d_F)``, formed densely and factored once (Cholesky), and solves of the
    equations of subsets ``K`` of ``F`` with linear constraints: with ``R = F \ K`` (the
    coordinates dropped since) and ``C = [E_R, c]`` (their unit columns, and the column
    ``sigma_F`` when a free intercept couples the multipliers),

    .. math::

        H x + C \lambda = g,\quad C^\top x = e
        \quad\Longleftrightarrow\quad
        (C^\top H^{-1} C) \lambda = C^\top H^{-1} g - e,\quad x = H^{-1} (g - C \lambda),

    one column ``H^{-1} e_r`` per dropped coordinate, kept (bordering: no refactorization).

    With the coupling, ``H`` is augmented by ``rho c c^T`` (``rho`` its largest diagonal entry)
    and the right-hand side by ``rho e c``: on ``c^T x = e`` the equations are the same, with
    the same multipliers, but where ``H`` is singular along a direction that ``c`` does not
    annihilate (the free rows one more than their rank, as at a degenerate optimum with an
    intercept) the augmented matrix is not. Unaugmented, the proximal shift made ``H^{-1} g``
    and ``H^{-1} c lambda`` of size ``1 / delta`` along that direction, and their difference
    lost ``eps / delta`` of its accuracy: residuals of ``1e-7`` on the free margins, which
    refinement from the same factor did not remove (500 x 20 dense, rank 18, ``C = 1``)."""

    def __init__(
        self, H: np.ndarray, factor: tuple, coupling: np.ndarray | None, rho: float = 0.0
    ) -> None:
        # H shifted, and augmented with the coupling (None once extended: not formed then)
        self.H, self.factor = H, factor
        self.columns: dict[int, np.ndarray] = {}
        self.coupling, self.rho = coupling, rho
        self.delta = 0.0  # the proximal shift of H (:meth:`factored`)
        self.coupled = None if coupling is None else self._solve(coupling)

    @classmethod
    def factored(
        cls, data: CoordinateData, F: np.ndarray, coupled: bool, Z: Any = None
    ) -> _FreeSystem | None:
        """The system of ``F`` (``Z`` its rows ``data.X[F]``, if at hand), its Hessian shifted
        by ``delta = PROXIMAL max_i H_ii`` (a proximal term: where ``H`` is singular, more free
        coordinates than independent rows, the step along its null space is long and the ratio
        test ends it at a bound), or ``None`` when even the shifted matrix does not factor."""
        sigma = data.sigma[F]
        Z = data.X[F] if Z is None else Z
        H = row_products(Z, Z, F.size) + data.bias**2
        H *= np.outer(sigma, sigma)
        largest = float(np.max(np.diag(H)))
        H[np.diag_indices_from(H)] += data.d[F] + PROXIMAL * largest
        rho = largest if coupled else 0.0
        if coupled:
            H += rho * np.outer(sigma, sigma)
        chol, info = scipy.linalg.lapack.dpotrf(H, lower=1, clean=1)
        if info != 0:
            return None
        system = cls(H, (chol, True), sigma if coupled else None, rho)
        system.delta = PROXIMAL * largest
        return system

    def extend(self, data: CoordinateData, Z: Any, F: np.ndarray, J: np.ndarray) -> bool:
        r"""The system of ``F`` (its rows ``Z``) extended by the coordinates ``J`` appended,
        ``H' = [[H, B], [B^T, C]]``, without a new factor: ``L' = [[L, 0], [L_{21}, L_{22}]]``
        with ``L_{21}^T = L^{-1} B`` and ``L_{22} L_{22}^T = S = C - L_{21} L_{21}^T`` (the
        Schur complement; the last columns of a Cholesky factorization of ``H'``), ``B`` and
        ``C`` formed as in :meth:`factored` with the same shift and coupling weight. The
        kept columns ``H^{-1} a`` follow from the block inverse: with ``W = H^{-1} B`` and
        ``z = S^{-1} (b - W^T a)``, ``H'^{-1} [a; b] = [H^{-1} a - W z; z]`` (``a = e_r``,
        ``b = 0`` for a dropped coordinate's, ``[sigma_F; sigma_J]`` for the coupling's).
        Costs two triangular solves with ``|J|`` right sides and the copy of ``L``, against
        a new factor's ``(|F| + |J|)^3 / 3`` flops and dense Gram. Returns ``False`` (the
        system unchanged) where ``S`` does not factor."""
        ZJ = data.X[J]
        sF, sJ = data.sigma[F], data.sigma[J]

        def block(rows: Any, s: np.ndarray) -> np.ndarray:
            M = row_products(rows, ZJ, F.size + J.size) + data.bias**2
            M *= np.outer(s, sJ)
            if self.coupling is not None:
                M += self.rho * np.outer(s, sJ)
            return M

        B, C = block(Z, sF), block(ZJ, sJ)
        C[np.diag_indices_from(C)] += data.d[J] + self.delta
        L = self.factor[0]
        L21T = _triangular_solve(L, B, trans=0)
        L22, info = scipy.linalg.lapack.dpotrf(C - L21T.T @ L21T, lower=1, clean=1)
        if info != 0:
            return False
        W = _triangular_solve(L, L21T, trans=1)
        m, k = F.size, J.size
        grown = np.zeros((m + k, m + k), order="F")
        grown[:m, :m] = L
        grown[m:, :m] = L21T.T
        grown[m:, m:] = L22
        kept = list(self.columns)
        if kept:
            Y = _columns([self.columns[r] for r in kept])
            Zr = _cho_solve(L22, -W[kept].T)
            Y = np.vstack([Y - W @ Zr, Zr])
            self.columns = {r: Y[:, j] for j, r in enumerate(kept)}
        if self.coupling is not None:
            z = _cho_solve(L22, sJ - W.T @ sF)
            self.coupled = np.concatenate([self.coupled - W @ z, z])
            self.coupling = np.concatenate([sF, sJ])
        self.factor, self.H = (grown, True), None
        return True

    def restricted(self, keep: np.ndarray) -> _FreeSystem:
        r"""The system of the coordinates ``keep`` of ``F`` alone, its factor the dropped
        coordinates' rows and columns deleted from this one (:func:`_factor_without`: ``L_K
        L_K^T`` the principal submatrix of ``L L^T`` on ``K``, with the same shift and
        coupling weight), no Gram and no factor formed: the refactor of the kept set where the
        bordered solves would lose accuracy (:meth:`nearly_singular`), at the backward error of
        the factor it comes from."""
        factor = _factor_without(self.factor[0], keep)
        coupling = None if self.coupling is None else self.coupling[keep]
        system = _FreeSystem(None, (factor, True), coupling, self.rho)
        system.delta = self.delta
        return system

    def nearly_singular(self, keep: np.ndarray) -> bool:
        """Whether a column ``H^{-1} e_r`` of a coordinate dropped from ``keep`` reaches
        ``sqrt(eps) / delta``: ``H`` (shifted by ``delta``) nearly singular along it, where
        the bordered solves lose ``eps / delta`` of their accuracy. Elsewhere the columns are
        small (``delta |H^{-1} e_r|`` at most 3.4e-8 where the free rows were fewer than their
        columns at 50000 x 500 and 20000 x 200, 10 nonzeros a row, the hinge; 3e-10 to 9e-10
        in the rounds that ended the finish; 0.05 at 509 free rows over 499 columns)."""
        dropped = [self.columns[r] for r in np.flatnonzero(~keep) if r in self.columns]
        largest = float(np.max(np.abs(dropped))) if dropped else 0.0
        return largest * self.delta >= math.sqrt(np.finfo(float).eps)

    def _solve(self, rhs: np.ndarray) -> np.ndarray:
        return _cho_solve(self.factor[0], rhs)

    def solve(
        self,
        g: np.ndarray,
        keep: np.ndarray,
        e: float,
        start: np.ndarray | None = None,
        rtol: float = CG_RTOL,
    ) -> tuple[np.ndarray, float]:
        """``x`` (zero off the mask ``keep``) and the coupling's multiplier ``beta`` (0 without
        one) with ``H_{KK} x_K + beta sigma_K = g_K`` and ``sigma_K . x_K = e``. The factor
        solves exactly: ``start`` and ``rtol`` are for :meth:`_IterativeSystem.solve`."""
        R = np.flatnonzero(~keep)
        if self.coupling is not None:
            g = g + self.rho * e * self.coupling
        # the new columns solved with g, one pass over the factor (the triangular solves read
        # it from memory: at 500 free about 0.3 ms for one right-hand side, 0.4 ms for two)
        new = [r for r in R if r not in self.columns]
        rhs = np.zeros((keep.size, len(new) + 1))
        rhs[:, 0] = g
        rhs[new, np.arange(1, len(new) + 1)] = 1.0
        solved = self._solve(rhs)
        x = solved[:, 0]
        for j, r in enumerate(new, start=1):
            self.columns[r] = solved[:, j]
        cols = [self.columns[r] for r in R]
        if self.coupling is not None:
            cols.append(self.coupled)
        if not cols:
            return x, 0.0
        # C^T Y and C^T x - e: the unit columns of R pick rows, the coupling is a product
        Y = _columns(cols)
        CY, Cx = np.empty((len(cols), len(cols))), np.empty(len(cols))
        CY[: R.size], Cx[: R.size] = Y[R], x[R]
        if self.coupling is not None:
            CY[-1], Cx[-1] = self.coupling @ Y, self.coupling @ x - e
        lam = _bordered_multipliers(CY, Cx)
        x = x - Y @ lam
        x[R] = 0.0
        return x, float(lam[-1]) if self.coupling is not None else 0.0


def _cho_solve(L: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``(L L^T)^{-1} rhs`` for the lower Cholesky factor ``L``: LAPACK's ``dpotrs``, the call
    ``scipy.linalg.cho_solve`` makes (the same floats), without its checks and wrappers (36
    against 44 us for three right sides of 200 rows, about 20 calls a finish)."""
    x, info = scipy.linalg.lapack.dpotrs(L, rhs, lower=1)
    if info != 0:
        raise ValueError(f"illegal value in argument {-info} of dpotrs")
    return x


def _triangular_solve(L: np.ndarray, rhs: np.ndarray, trans: int) -> np.ndarray:
    """``L^{-1} rhs`` (``trans`` 0) or ``L^{-T} rhs`` (``trans`` 1) for the lower factor ``L``
    in Fortran order (as :class:`_FreeSystem` keeps each factor): LAPACK's ``dtrtrs``, the
    call ``scipy.linalg.solve_triangular`` makes for such an ``L`` (the same floats), without
    its checks and wrappers (31 against 57 us for three right sides of 200 rows)."""
    x, info = scipy.linalg.lapack.dtrtrs(L, rhs, lower=1, trans=trans)
    if info != 0:
        raise ValueError(f"dtrtrs: info {info}")
    return x


def _columns(cols: list[np.ndarray]) -> np.ndarray:
    """The vectors ``cols`` as the columns of a C-ordered matrix, ``np.column_stack``'s array
    (the same layout, so the same products with it) by one copy of their rows' transpose
    (10 against 25 us for 15 columns of 200)."""
    return np.array(cols).T.copy()


def _factor_without(L: np.ndarray, keep: np.ndarray) -> np.ndarray:
    r"""The lower Cholesky factor of ``(L L^T)_{KK}``, ``K`` the indices ``keep`` marks, from
    the lower factor ``L`` (its upper part zero, as :class:`_FreeSystem` makes each factor:
    LAPACK's cleaned ``dpotrf``, the blocks of :meth:`_FreeSystem.extend`, the ``triu``
    below): the rows ``K`` of ``L``, ``A = L_{K,:}`` (``A A^T = (L L^T)_{KK}``), made lower
    triangular by rotating each column of an index
    left out into the kept columns after it, one Givens rotation a row (Golub and Van Loan,
    *Matrix Computations*, 2013, section 6.5.4: deleting a row and column of a Cholesky
    factor), ``(|F| - r)^2`` flops for an index left out at position ``r``, against a new
    Gram and ``|K|^3 / 3`` flops. Returned in Fortran order (LAPACK's triangular solves read
    it in place). Compiled (:func:`_rotate_out`), or before it is, its numpy equivalent (the
    same floats) until its rotations would have paid for the compile
    (:data:`ROTATION_ENTRIES`)."""
    rows = np.flatnonzero(keep)
    # A's columns as rows, each contiguous: the columns K of L^T (a C-ordered view of the
    # Fortran-ordered factor), gathered in one pass (0.26 ms at 474 of 500, against 1.9 ms for
    # a copy of tril(L), its rows K and their transpose)
    At = np.take(L.T, rows, axis=1)
    if uncompiled(_rotate_out, 0, ROTATION_ENTRIES):
        charge(_rotate_out, _rotate_out_numpy(At, keep, rows))
    else:
        _rotate_out(At, keep, rows)
    return np.triu(At[rows]).T


@numba.njit(**ENTRY, _nrt=False)
def _rotate_out(At, keep, rows):  # pragma: no cover - compiled
    """The rotations of :func:`_factor_without` on ``A^T`` (``At``, in place): each row ``j``
    of an index left out rotated into the rows ``rows[r]`` of the kept indices after it,
    zeroing its entries ``r`` in turn (``sqrt(a^2 + b^2)`` written out, as its equivalent)."""
    m = rows.shape[0]
    first = 0  # the first entry of the row left out that can be nonzero: the kept before it
    for j in range(At.shape[0]):
        if keep[j]:
            first += 1
            continue
        x = At[j]
        for r in range(first, m):
            b = x[r]
            if b == 0.0:
                continue
            column = At[rows[r]]
            a = column[r]
            radius = math.sqrt(a * a + b * b)
            c, s = a / radius, b / radius
            column[r] = radius
            x[r] = 0.0
            for q in range(r + 1, m):
                t = column[q]
                column[q] = c * t + s * x[q]
                x[q] = c * x[q] - s * t


def _rotate_out_numpy(At: np.ndarray, keep: np.ndarray, rows: np.ndarray) -> int:
    """:func:`_rotate_out` in numpy, the same operations on each entry in the same order;
    returns what it cost, :data:`ROTATION_FIXED` entries a rotation plus the entries
    rotated."""
    m, cost = rows.shape[0], 0
    first = np.cumsum(keep) - keep  # the kept indices before each
    for j in np.flatnonzero(~keep):
        x = At[j]
        for r in range(int(first[j]), m):
            b = float(x[r])
            if b == 0.0:
                continue
            column = At[rows[r]]
            a = float(column[r])
            radius = math.sqrt(a * a + b * b)
            c, s = a / radius, b / radius
            column[r] = radius
            x[r] = 0.0
            t, xq = column[r + 1 :].copy(), x[r + 1 :].copy()
            column[r + 1 :] = c * t + s * xq
            x[r + 1 :] = c * xq - s * t
            cost += ROTATION_FIXED + m - r
    return cost


def _path_step(
    Z: Any,
    sigma: np.ndarray,
    bias: float,
    diag: np.ndarray,
    a: np.ndarray,
    x: np.ndarray,
    room: np.ndarray,
    keep: np.ndarray,
    ZT: Any = None,
) -> float:
    r"""The step ``t`` in ``[t_1, 1]`` at the first maximum from ``t_1`` on of ``phi(t) = a .
    delta(t) - delta(t)^T H delta(t) / 2`` along the projected path of the direction ``x``
    (zero off ``keep``): ``delta_j(t) = t x_j`` up to the coordinate's breakpoint ``t_j =
    room_j``, where it reaches its bound, and ``t_j x_j`` from there on; ``H = diag(sigma) (Z
    Z^T + bias^2 1 1^T) diag(sigma) + diag(diag)`` and ``t_1`` the first breakpoint (the
    ratio test's step).

    ``phi`` is a concave quadratic on each piece between breakpoints, ``delta = c + t d`` with
    ``c`` the displacements of the coordinates past their breakpoint and ``d`` the direction
    of the others: its slope ``a . d - c^T H d - t d^T H d``. The pieces are walked in order
    while the slope at a piece's start is positive, and the walk stops at the first zero of
    the slope; passing a breakpoint moves one coordinate from ``d`` to ``c``, which updates
    ``Z^T sigma c``, ``Z^T sigma d`` and the three products in ``O(nnz(z_j))``. The ratio
    test alone (one coordinate leaves a step, Nocedal and Wright, section 16.5) stops at
    ``t_1``, where ``phi`` still grows on the next pieces when ``H`` is ill-conditioned
    (the hinge with ``n > d``: past 12-16 breakpoints of 40-50, with 8 to 60 times the ratio
    step's gain, measured at 100000 x 2000, 20 nonzeros a row); ``phi`` does not decrease
    from ``t_1`` to the step, so ``D`` grows at least as much as by the ratio step (the path
    is piecewise concave, not concave: a later piece may rise again, and the walk does not
    look for it). With a free intercept ``a`` is the gradient less ``beta sigma`` (the
    Lagrangian at the step's intercept). ``ZT``: ``Z^T`` at hand as CSR rows (the finish's,
    the same floats as ``Z.T``'s product: each column's terms added in the order of the rows,
    4 against 43 us at 190 rows of 10 nonzeros, where ``Z``, rows gathered from ``X``, is
    not flagged canonical)."""
    order = np.flatnonzero(keep & (room < 1.0))
    order = order[np.argsort(room[order], kind="stable")]
    bias2 = float(bias) ** 2
    d = np.where(keep, x, 0.0)
    wd = np.asarray((Z.T if ZT is None else ZT) @ (sigma * d)).ravel()  # Z^T sigma d
    wc = np.zeros_like(wd)  # Z^T sigma c
    Ad = float(a @ d)
    sd, sc = float(sigma @ d), 0.0
    dd = float(wd @ wd) + bias2 * sd * sd + float(diag @ (d * d))  # d^T H d
    cd, t = 0.0, 0.0  # c^T H d
    sparse = sp.issparse(Z)
    for k, j in enumerate(order):
        tj = float(room[j])
        if k and tj > t:  # the breakpoints at t pass together, as in the ratio test
            slope = Ad - cd - t * dd
            if slope <= 0.0:
                return t
            if dd > 0.0 and t + slope / dd < tj:
                return t + slope / dd
        t = tj
        if sparse:
            cols = Z.indices[Z.indptr[j] : Z.indptr[j + 1]]
            r = sigma[j] * Z.data[Z.indptr[j] : Z.indptr[j + 1]]
        else:
            cols, r = slice(None), sigma[j] * np.asarray(Z[j])
        xj, sj = float(x[j]), float(sigma[j])
        rwd, rwc, rr = float(r @ wd[cols]), float(r @ wc[cols]), float(r @ r)
        cd += xj * (tj * rwd - rwc - tj * xj * rr) + bias2 * sj * xj * (tj * (sd - sj * xj) - sc)
        dd += xj * (xj * rr - 2.0 * rwd) + bias2 * sj * xj * (sj * xj - 2.0 * sd)
        dd -= float(diag[j]) * xj * xj
        wd[cols] -= xj * r
        wc[cols] += tj * xj * r
        sd -= sj * xj
        sc += tj * sj * xj
        Ad -= float(a[j]) * xj
    slope = Ad - cd - t * dd
    if slope <= 0.0:
        return t
    return min(1.0, t + slope / dd) if dd > 0.0 else 1.0


def _bordered_multipliers(CY: np.ndarray, Cx: np.ndarray) -> np.ndarray:
    """``lambda`` with ``(C^T H^{-1} C) lambda = C^T H^{-1} g - e``: ``CY`` is symmetric positive
    definite where ``C`` has full column rank, solved by its Cholesky factor (LAPACK, about 30
    us at 20 x 20 against 0.2-0.5 ms for numpy's least squares, once a ratio step of the
    finish); else (``C`` rank deficient, the coupling in the span of the dropped coordinates'
    columns) the least-squares solution."""
    factor, info = scipy.linalg.lapack.dpotrf(CY, lower=1)
    if info == 0:
        lam, info = scipy.linalg.lapack.dpotrs(factor, Cx, lower=1)
        if info == 0 and np.all(np.isfinite(lam)):
            return lam
    return np.linalg.lstsq(CY, Cx, rcond=None)[0]


@numba.njit(**ENTRY)
def _free_cg(
    data,
    indices,
    indptr,
    sigma,
    bias2,
    diag,
    keep,
    rhs,
    coupled,
    e,
    start,
    width,
    max_iter,
    rtol,
    atol,
):  # pragma: no cover - compiled
    """Conjugate gradients on ``H_KK x_K = rhs_K`` (``x`` zero off ``keep``), ``H = Z Z^T +
    bias2 sigma sigma^T + diag(diag)`` with ``Z`` the CSR rows ``(data, indices, indptr)`` over
    ``width`` columns, from ``start_K``; with ``coupled``, projected conjugate gradients on
    ``H_KK x_K + beta sigma_K = rhs_K``, ``sigma_K . x_K = e``: from ``start_K`` moved along
    ``sigma_K`` onto the balance, every direction and residual projected onto ``sigma_K``'s
    orthogonal complement (Gould, Hribar and Nocedal, SIAM J. Sci. Comput. 23, 2001). Runs
    until the (projected) residual's norm is at most ``rtol`` times that of the cold start's
    (from 0, or ``e sigma_K / ||sigma_K||^2`` with coupling) or ``atol``, a direction has no
    curvature, or ``max_iter`` iterations. Returns ``x``, ``beta = sigma_K . (rhs - H x) /
    ||sigma_K||^2`` (0 without ``coupled``) and the products with ``H`` it took (the start's
    and ``beta``'s included, as :func:`_free_cg_numpy` counts them)."""
    k = sigma.shape[0]
    Hd = np.zeros(k)
    buf = np.zeros(width)
    ss = 0.0
    for j in range(k):
        if keep[j]:
            ss += sigma[j] * sigma[j]
    # every vector operation written as a loop, in the order numba's array expressions and
    # ``np.sum`` (a sequential sum) take, so the same floats: numba's ``np.where``, ``np.any``,
    # ``np.sum`` and array expressions took most of this function's compile (3.7 s with
    # ``np.where``, 1.8-2.0 s without it, 0.x s as loops)
    rhs_K = np.zeros(k)
    x = np.zeros(k)
    guess = np.zeros(k)
    balanced = coupled and ss > 0.0
    started = False
    for j in range(k):
        if keep[j]:
            rhs_K[j] = rhs[j]
            guess[j] = start[j]
            started = started or start[j] != 0.0
            if balanced:
                x[j] = e * sigma[j] / ss
    r = rhs_K.copy()
    value = 0.0  # the quadratic 1/2 x.Hx - rhs.x the iterations lower
    products = 0
    if balanced:
        _free_product(data, indices, indptr, sigma, bias2, diag, keep, x, buf, Hd)
        products += 1
        value = _quadratic(x, Hd, rhs_K)
        for j in range(k):
            r[j] -= Hd[j]
        _project(r, sigma, keep, ss)
    cold = _dot(r, r)
    if started:
        if balanced:
            balance = (e - _dot(sigma, guess)) / ss
            for j in range(k):
                if keep[j]:
                    guess[j] += sigma[j] * balance
        _free_product(data, indices, indptr, sigma, bias2, diag, keep, guess, buf, Hd)
        products += 1
        # the start is taken where it is below the cold start's value: every iterate then
        # is too, so the step along x still raises D (its gain g.x - x.Hx/2 is positive)
        if _quadratic(guess, Hd, rhs_K) < value:
            x = guess
            for j in range(k):
                r[j] = rhs_K[j] - Hd[j]
            if balanced:
                _project(r, sigma, keep, ss)
    direction = r.copy()
    rr = _dot(r, r)
    stop = max(rtol * rtol * cold, atol * atol)
    for _ in range(max_iter):
        if rr <= stop:
            break
        products += 1
        curvature = _free_product(
            data, indices, indptr, sigma, bias2, diag, keep, direction, buf, Hd
        )
        if not curvature > 0.0:
            break
        step = rr / curvature
        for j in range(k):
            x[j] += step * direction[j]
            r[j] -= step * Hd[j]
        if coupled:
            # the residual itself kept in the complement (the residual update of Gould et
            # al.): projecting only the directions lets its sigma part grow and CG diverge
            _project(r, sigma, keep, ss)
        previous = rr
        rr = _dot(r, r)
        scale = rr / previous
        for j in range(k):
            direction[j] = r[j] + scale * direction[j]
    beta = 0.0
    if coupled and ss > 0.0:
        _free_product(data, indices, indptr, sigma, bias2, diag, keep, x, buf, Hd)
        products += 1
        residual = 0.0
        for j in range(k):
            residual += sigma[j] * (rhs_K[j] - Hd[j]) if keep[j] else 0.0
        beta = residual / ss
    return x, beta, products


@numba.njit(**CALLEE)
def _free_product(
    data, indices, indptr, sigma, bias2, diag, keep, direction, buf, Hd
):  # pragma: no cover - compiled
    """``Hd = H_KK direction`` (zero off ``keep``, ``buf`` a scratch vector over the columns);
    returns the curvature ``direction . Hd``."""
    k = sigma.shape[0]
    buf[:] = 0.0
    total = 0.0
    for j in range(k):
        c = direction[j]
        if keep[j] and c != 0.0:
            for q in range(np.uintp(indptr[j]), np.uintp(indptr[j + 1])):
                buf[np.uintp(indices[q])] += c * data[q]
            total += c * sigma[j]
    curvature = 0.0
    for j in range(k):
        if keep[j]:
            dot = 0.0
            for q in range(np.uintp(indptr[j]), np.uintp(indptr[j + 1])):
                dot += data[q] * buf[np.uintp(indices[q])]
            Hd[j] = dot + bias2 * sigma[j] * total + diag[j] * direction[j]
            curvature += direction[j] * Hd[j]
        else:
            Hd[j] = 0.0
    return curvature


@numba.njit(**CALLEE)
def _project(r, sigma, keep, ss):  # pragma: no cover - compiled
    """``r_K <- r_K - sigma_K (sigma_K . r_K) / ss`` in place (``ss = ||sigma_K||^2``), ``r``
    zero off ``keep``."""
    dot = 0.0
    for j in range(r.shape[0]):
        if keep[j]:
            dot += sigma[j] * r[j]
    scale = dot / ss if ss > 0.0 else 0.0
    for j in range(r.shape[0]):
        r[j] = r[j] - scale * sigma[j] if keep[j] else 0.0


@numba.njit(**CALLEE)
def _dot(a, b):  # pragma: no cover - compiled
    """``sum_j a_j b_j``, summed in order (as numba's ``np.sum(a * b)``)."""
    total = 0.0
    for j in range(a.shape[0]):
        total += a[j] * b[j]
    return total


@numba.njit(**CALLEE)
def _quadratic(x, Hx, g):  # pragma: no cover - compiled
    """``sum_j x_j (Hx_j / 2 - g_j)``, summed in order (``1/2 x.Hx - g.x``)."""
    total = 0.0
    for j in range(x.shape[0]):
        total += x[j] * (0.5 * Hx[j] - g[j])
    return total


def _sum2_total(a: np.ndarray) -> float:
    """``s + c`` of Sum2 over ``a`` in Python floats, as the compiled passes add it up."""
    s, c = _sum2_python(a)
    return s + c


def _ordered_sum(a: np.ndarray) -> float:
    """``sum_j a_j`` added in order from 0.0 (as the compiled loops add): ``np.add.accumulate``
    is sequential where ``np.sum`` is pairwise; ``+ 0.0`` takes a zero sum's sign to the loop's."""
    return float(np.add.accumulate(a)[-1]) + 0.0 if a.size else 0.0


def _free_cg_numpy(
    data: np.ndarray,
    indices: np.ndarray,
    indptr: np.ndarray,
    sigma: np.ndarray,
    bias2: float,
    diag: np.ndarray,
    keep: np.ndarray,
    rhs: np.ndarray,
    coupled: bool,
    e: float,
    start: np.ndarray,
    width: int,
    max_iter: int,
    rtol: float,
    atol: float,
) -> tuple[np.ndarray, float, int]:
    """:func:`_free_cg` in numpy, the same operations in the same order (the same floats): the
    sums added in order (:func:`_ordered_sum`), the products by scipy's CSR and CSC loops (each
    row's and column's terms in the order of the compiled loop; the rows off ``keep`` or with a
    zero coefficient add products ``+-0``, which change no sum). Returns ``x``, ``beta`` and
    the products with ``H`` it took."""
    Z = sp.csr_matrix((data, indices, indptr), shape=(sigma.size, width))
    ZT = Z.T

    def product(direction: np.ndarray) -> tuple[np.ndarray, float]:
        d = np.where(keep, direction, 0.0)
        total = _ordered_sum(d * sigma)
        Hd = np.where(keep, Z @ (ZT @ d) + bias2 * sigma * total + diag * direction, 0.0)
        return Hd, _ordered_sum(np.where(keep, direction * Hd, 0.0))

    def project(r: np.ndarray) -> np.ndarray:
        dot = _ordered_sum(np.where(keep, sigma * r, 0.0))
        scale = dot / ss if ss > 0.0 else 0.0
        return np.where(keep, r - scale * sigma, 0.0)

    ss = _ordered_sum(np.where(keep, sigma * sigma, 0.0))
    rhs_K = np.where(keep, rhs, 0.0)
    guess = np.where(keep, start, 0.0)
    balanced = coupled and ss > 0.0
    x = np.where(keep, e * sigma / ss, 0.0) if balanced else np.zeros(sigma.size)
    r = rhs_K.copy()
    value = 0.0
    products = 0
    if balanced:
        Hd, _ = product(x)
        products += 1
        value = _ordered_sum(x * (0.5 * Hd - rhs_K))
        r = project(r - Hd)
    cold = _ordered_sum(r * r)
    if np.any(guess != 0.0):
        if balanced:
            balance = (e - _ordered_sum(sigma * guess)) / ss
            guess = np.where(keep, guess + sigma * balance, guess)
        Hd, _ = product(guess)
        products += 1
        if _ordered_sum(guess * (0.5 * Hd - rhs_K)) < value:
            x = guess
            r = rhs_K - Hd
            if balanced:
                r = project(r)
    direction = r.copy()
    rr = _ordered_sum(r * r)
    stop = max(rtol * rtol * cold, atol * atol)
    for _ in range(max_iter):
        if rr <= stop:
            break
        Hd, curvature = product(direction)
        products += 1
        if not curvature > 0.0:
            break
        step = rr / curvature
        x = x + step * direction
        r = r - step * Hd
        if coupled:
            r = project(r)
        previous = rr
        rr = _ordered_sum(r * r)
        direction = r + (rr / previous) * direction
    beta = 0.0
    if coupled and ss > 0.0:
        Hd, _ = product(x)
        products += 1
        beta = _ordered_sum(np.where(keep, sigma * (rhs_K - Hd), 0.0)) / ss
    return x, beta, products


class _IterativeSystem:
    r"""The equations of :class:`_FreeSystem` solved by conjugate gradients (Hestenes and
    Stiefel 1952) on the sparse rows of ``F``, never forming ``H``: a product costs ``O(nnz(Z_F)
    + |F|)``, against ``|F|^3 / 3`` flops for the dense factor. The dropped coordinates ``R``
    are removed from the system (``x_R = 0``); with a free intercept, projected conjugate
    gradients keep ``sigma_K . x_K = e`` and give ``beta`` from the last residual (one solve a
    step, as without it). The Hessian has the same proximal shift."""

    def __init__(
        self,
        data: CoordinateData,
        F: np.ndarray,
        Z: Any,
        coupled: bool,
        floor: float,
        used: np.ndarray | None = None,
    ) -> None:
        sigma = data.sigma[F]
        used = used_columns(Z) if used is None else used
        self.indices = ranked_indices(Z, used)
        self.data = Z.data * np.repeat(sigma, np.diff(Z.indptr))
        self.indptr, self.n_columns = Z.indptr, int(np.count_nonzero(used))
        self.sigma, self.bias2 = sigma, float(data.bias) ** 2
        self.diag = data.d[F] + PROXIMAL * float(np.max(data.qd[F]))
        self.coupled = coupled
        # a gradient within rounding of zero on every coordinate is solved already
        self.atol = floor * np.sqrt(F.size)
        # the products the dense factor of F costs (:data:`FACTOR_PRODUCTS`), and those run
        self.budget = _factor_products(Z)
        self.products = 0
        self.exhausted = False  # whether the dense factor would have been cheaper

    @staticmethod
    def suits(Z: Any, used: np.ndarray | None = None) -> bool:
        """Whether the free rows ``Z`` (CSR; ``used`` its :func:`used_columns`) are fewer than
        the columns they touch and the dense factor costs more than :data:`ITERATIVE_FROM`
        products."""
        k = Z.shape[0]
        if k >= np.count_nonzero(used_columns(Z) if used is None else used):
            return False
        return k**3 / 3.0 > ITERATIVE_FROM * (Z.nnz + k)

    def solve(
        self,
        g: np.ndarray,
        keep: np.ndarray,
        e: float,
        start: np.ndarray | None = None,
        rtol: float = CG_RTOL,
    ) -> tuple[np.ndarray, float]:
        """As :meth:`_FreeSystem.solve`, by conjugate gradients from ``start`` (default 0)
        to the residual ``rtol`` times the cold start's (:func:`_free_cg`)."""
        guess = np.zeros(keep.size) if start is None else start
        args = (
            self.data, self.indices, self.indptr, self.sigma, self.bias2, self.diag, keep, g,
            self.coupled, float(e), guess, self.n_columns, CG_ITERATIONS, rtol, self.atol,
        )  # fmt: skip
        if uncompiled(_free_cg, 0, CG_NUMPY_ENTRIES):
            x, beta, products = _free_cg_numpy(*args)
            charge(_free_cg, products * (self.data.size + keep.size + CG_NUMPY_FIXED))
        else:
            x, beta, products = _free_cg(*args)
        self.products += int(products)
        self.exhausted = self.products > self.budget
        return x, float(beta)


def _factor_products(Z: Any) -> float:
    """The dense factor of the ``k`` free rows ``Z`` in products with their Hessian: ``k^3 /
    3`` flops at :data:`FACTOR_PRODUCTS` times the flop rate of a product, ``nnz(Z) + k``."""
    k = Z.shape[0]
    return k**3 / 3.0 / (FACTOR_PRODUCTS * (Z.nnz + k))


def _cg_products(Z: Any, used: np.ndarray | None = None) -> float:
    r"""The products a step's conjugate-gradient solve on the ``k`` free rows ``Z`` (CSR,
    fewer than the ``m`` columns they touch) is predicted to take: ``sqrt(kappa) ln(2 /``
    :data:`CG_STEP_RTOL` ``)`` (Hestenes and Stiefel's bound, halved), with the condition
    number of ``Z Z^T`` that of a random ``k x m`` matrix of independent entries, ``sqrt(kappa)
    = (1 + sqrt(r)) / (1 - sqrt(r))``, ``r = k / m`` (Marchenko and Pastur's edges of its
    spectrum, ``(1 +- sqrt(r))^2``). Measured on the sparse grid's rows (the hinge, the first
    solves of a round): ``r = 0.46`` (5000 x 2000) predicted 51, took 55-73; ``r = 0.83``
    (50000 x 2000) 213 against 200-365; ``r = 0.91`` (100000 x 2000) 411 against 400-690;
    ``r = 0.99`` (50000 x 500) 3950 against more than :data:`CG_ITERATIONS`."""
    used = used_columns(Z) if used is None else used
    root = math.sqrt(Z.shape[0] / max(1, np.count_nonzero(used)))
    if root >= 1.0:
        return math.inf
    return (1.0 + root) / (1.0 - root) * math.log(2.0 / CG_STEP_RTOL)


def _free_system(
    data: CoordinateData,
    F: np.ndarray,
    coupled: bool,
    floor: float,
    iterative: bool = True,
    Z: Any = None,
) -> _FreeSystem | _IterativeSystem | None:
    """The system of the free set ``F`` (``Z`` its rows ``data.X[F]``, if at hand):
    conjugate gradients where ``iterative`` and :meth:`_IterativeSystem.suits` (its solves
    stop at residuals of the gradient's rounding ``floor`` per coordinate) unless
    :data:`ROUND_SOLVES` solves are predicted to cost more than the factor
    (:func:`_cg_products`), else the dense factor up to :data:`DENSE_FREE_MAX` coordinates,
    else ``None``."""
    if iterative and sp.issparse(data.X):
        Z = data.X[F] if Z is None else Z
        used = used_columns(Z)
        # a round's solves predicted to cost more products than the factor: the factor
        if _IterativeSystem.suits(Z, used) and (
            F.size > DENSE_FREE_MAX or ROUND_SOLVES * _cg_products(Z, used) <= _factor_products(Z)
        ):
            return _IterativeSystem(data, F, Z, coupled, floor, used)
    if F.size > DENSE_FREE_MAX:
        return None
    return _FreeSystem.factored(data, F, coupled, Z)


def _rebalances(
    data: CoordinateData,
    balance: float,
    F: np.ndarray,
    uF: np.ndarray,
    x: np.ndarray,
    t: float,
    room: np.ndarray,
    keep: np.ndarray,
) -> bool:
    r"""Whether the coordinates of ``F`` still free at the path's point ``t`` (``keep``, not
    passed: ``room > t``) can bring ``sum_i sigma_i u_i`` back to 0 inside their box, the
    others held: the imbalance ``s`` after the step is at most what they can move the other
    way, ``sum_j max(sigma_j (u_j - l_j))`` over ``u_j`` in ``[0, hi_j]``. The projected path
    leaves the plane of the balance (``sigma . delta(t) != 0`` once a coordinate stops at its
    bound), and the next step's equations restore it on the free set; where they cannot, every
    step stops at a bound (rows scaled by 1e-2, 120 x 8, C = 1: the path passed 56 of 61 free
    coordinates, ``s = 14.5``, five left free; the finish ended at ``b = -189``, gap 0.99).
    ``balance`` is ``sum_i sigma_i u_i`` before the step (the caller's, by :func:`fsum`)."""
    hiF = data.hi[F]
    passed = keep & (room <= t)
    moved = np.where(passed, np.where(x > 0.0, hiF, 0.0), np.clip(uF + t * x, 0.0, hiF))
    sigma_F = data.sigma[F]
    s = balance + fsum(sigma_F * (moved - uF))
    free = keep & ~passed
    down = np.where(sigma_F > 0.0, sigma_F * moved, -sigma_F * (hiF - moved))
    up = np.where(sigma_F > 0.0, sigma_F * (hiF - moved), -sigma_F * moved)
    return abs(s) <= fsum((down if s > 0.0 else up)[free])


def free_set_step(
    data: CoordinateData,
    u: np.ndarray,
    shift: float = 0.0,
    coupled: bool = False,
    target: float = 0.0,
    gap: float = 0.0,
    met: list | None = None,
) -> tuple[np.ndarray, float] | None:
    r"""``u`` moved to the maximiser of ``D`` by a primal active-set method started on its free
    coordinates ``F = {i : 0 < u_i < hi_i}`` (the others held at their bound), and the
    intercept there: ``shift`` held fixed, or, with ``coupled`` (a free intercept: ``sum_i
    sigma_i u_i = 0``), the multiplier of that constraint.

    Each step solves the equations of the free set, ``H x = -G_F`` (``G`` the gradient of
    ``-D`` at the intercept ``shift``, ``H`` the dual's Hessian on ``F``,
    :class:`_FreeSystem`: ``|F| x |F|``, dense, shifted by a proximal ``delta I``), with a
    free intercept ``H x + sigma_F beta = -G_F``, ``sigma_F . x = -sigma . u`` (the intercept
    ``shift + beta``), and moves along ``x`` until the first coordinate reaches its bound (the
    ratio test), which leaves ``F``, and on along the projected path while ``D`` grows
    (:func:`_path_step`): every coordinate the path passes leaves ``F`` at its bound, several a
    solve where ``H`` is ill-conditioned (at 100000 x 2000, 20 nonzeros a row, the hinge
    without intercept: 11 solves against 47, none by the dense factor against 25); with the
    coupling only where the coordinates left free can restore the balance the path leaves
    (:func:`_rebalances`), else at the ratio test's bound;
    ``D`` never decreases (``x`` is an ascent direction and
    ``D`` grows along it up to the full step at least). Steps without a bound repeat until
    they vanish (refining away the shift). Where ``H`` is singular (more free coordinates
    than independent rows, duplicated rows) its null space costs the shifted step nothing but
    ``delta``: the step is long there and the ratio test moves a coordinate to its bound. Once
    the equations hold in the box, the bound coordinates whose gradient points into the box
    join ``F`` and the system is formed again, and when none does the point is the optimum
    (the KKT conditions hold, up to the rounding of the solves). Coordinate descent converges
    linearly at a rate set by the condition number of ``H``, badly where ``|F|`` approaches
    the number of features (``n > d``, the hinge); from the free set of a loose ascent this
    finish takes a few dozen steps and one or two factorizations (the primal active-set
    method for convex QP, Nocedal and Wright, *Numerical Optimization*, 2006, section 16.5).
    Where the free rows are sparse and the dense factor would cost more than the products of
    conjugate gradients, those solve the same equations (:class:`_IterativeSystem`), until
    their products cost as much as the factor (:data:`FACTOR_PRODUCTS`): the round's other
    steps are then the factor's. Returns
    the point and its intercept, or ``None`` when nothing is free or no system serves
    (:func:`_free_system`). The point is in the box; whether it is better is
    for the caller to check.

    With a ``target`` relative gap (and ``gap``, that of ``u``), without coupling, the finish
    stops at the first step without a bound whose point meets it (one objective pass a step;
    none for a refinement within :data:`STEP_FLOOR` after a step that missed it, which leaves
    the round's end to decide), and refines by conjugate gradients only to :data:`GAP_RTOL`
    times ``sqrt(target / gap)`` rather than to :data:`CG_RTOL`. Where it so stops, ``met`` (a
    list, given empty) receives ``[v, P, D]``: the point's plain expansion as the steps updated
    it (a few ulps from :meth:`CoordinateData.expansion`'s) and the objectives its gap was
    found with, for a caller that would otherwise evaluate them again."""
    movable = data.qd + data.d > 0.0
    F = np.flatnonzero((u > 0.0) & (u < data.hi) & movable)
    if F.size == 0:
        return None
    p = data.p - data.sigma * shift
    magnitude = np.abs(p)
    floor = np.finfo(float).eps * max(1.0, float(np.max(magnitude)))
    Z = data.X[F]
    system = _free_system(data, F, coupled, floor, Z=Z)
    if system is None:
        return None
    u, b, steps = u.copy(), shift, 0
    rounds = FREE_SET_ROUNDS if F.size > FINISH_FREE else FREE_SET_STEPS
    # whether a round's first conjugate-gradient solve alone cost more than the factor: the
    # later rounds' free sets are nearly the same, and are factored from the start
    factor_only = False
    # the steps move u_F only: the gradient on F from v updated by the free rows alone,
    # recomputed in full at the end of each round (for the gradient on every coordinate)
    v = data.expansion(u, exact=False)
    # the coordinates of F still free: all of them, but where an extended factor keeps the
    # ones dropped in earlier rounds as bordered constraints
    keep = np.ones(F.size, dtype=bool)
    for _ in range(rounds):
        gave_way, solves = False, 0
        # the steps the round has left, at least: one for each kept coordinate the last
        # solve's full step takes out of the box (each leaves at a ratio step), and one more
        pending = int(np.count_nonzero(keep))
        # the round's first step likely ends at a bound: solved loosely (CG_STEP_RTOL)
        guess, bounded = None, True
        # whether the last step's point had its gap checked (a step without a bound)
        checked = False
        sigma_F, hiF, pF, dF = data.sigma[F], data.hi[F], p[F], data.d[F]
        # the transposed product by CSR rows: scipy's product with the transpose of a CSR
        # matrix not in canonical form costs about 15 times as much (67 us against 4.5 us at
        # 500 rows of 10 nonzeros), the terms added in the same order
        ZT = Z.T.tocsr() if sp.issparse(Z) else Z.T
        while steps < FREE_SET_STEPS:
            steps += 1
            uF = u[F]
            g = pF - sigma_F * (Z @ v[:-1] + data.bias * v[-1]) - dF * uF
            e = -fsum_dot(data.sigma, u) if coupled else 0.0
            if (
                isinstance(system, _IterativeSystem)
                and system.exhausted
                and not gave_way
                and pending * system.products > solves * system.budget
            ):
                # conjugate gradients are slow where H is nearly singular (the free rows about
                # as many as the columns they touch): the round's other steps by the factor,
                # once the steps left at the solves' mean cost would cost more than it too
                # (100000 x 2000 with a free intercept: after 35 solves of about 190 products,
                # the factor of 1845 free served the last nine steps, twice the cheaper choice)
                gave_way = True
                factor_only = factor_only or solves == 1
                system = _free_system(data, F, coupled, floor, iterative=False) or system
            rtol = CG_STEP_RTOL if bounded else CG_RTOL
            if target > 0.0 and not bounded:
                rtol = min(CG_STEP_RTOL, GAP_RTOL * math.sqrt(target / max(gap, target)))
            x, beta = system.solve(g, keep, e, guess, rtol)
            solves += 1
            with np.errstate(divide="ignore", invalid="ignore"):
                room = np.where(x > 0.0, (hiF - uF) / x, np.where(x < 0.0, -uF / x, np.inf))
            room[~keep] = np.inf
            t = min(1.0, float(np.min(room, initial=np.inf)))
            if t < 1.0:
                # on along the projected path: every coordinate it passes leaves at its bound
                ratio = t
                lagrangian = g - beta * sigma_F
                t = _path_step(Z, sigma_F, data.bias, dF, lagrangian, x, room, keep, ZT)
                if coupled and t > ratio and not _rebalances(data, -e, F, uF, x, t, room, keep):
                    t = ratio
            hit = keep & (room <= t)
            pending = int(np.count_nonzero(keep & ~hit & (room < 1.0))) + 1
            new = np.clip(uF + t * x, 0.0, hiF)
            new[hit] = np.where(x[hit] > 0.0, hiF[hit], 0.0)
            u[F] = new
            moved = sigma_F * (new - uF)
            v[:-1] += ZT @ moved
            v[-1] += data.bias * float(np.sum(moved))
            keep &= ~hit
            # after a step to a bound the equations' right side is (1 - t) times the last
            # one's, up to the column of the coordinate that left: (1 - t) x starts the next
            # iterative solve nearly there (a refinement step starts from 0)
            bounded = bool(hit.any())
            guess = (1.0 - t) * x if bounded else None
            if not bounded:
                b = shift + beta
                # the proximal shift leaves the equations off by delta x: steps from the
                # same factor refine them (iterative refinement) while they raise D
                refined = float(g @ x) <= STEP_FLOOR * max(1.0, float(magnitude @ u))
                # such a step after one whose gap was checked (and missed the target) raised D
                # by at most g . x: the round's end decides instead (nothing joins: done),
                # sparing a pass over the rows
                if target > 0.0 and not coupled and not (refined and checked):
                    primal, dual = data.objectives(u, v, shift)
                    gap = (primal - dual) / max(1.0, abs(primal))
                    if gap <= target:
                        if met is not None:
                            met[:] = (v, primal, dual)
                        return u, b
                    checked = True
                if refined:
                    break
            else:
                checked = False
        v = data.expansion(u, exact=False)
        G = _gradient(data, u, v, p) + data.sigma * (b - shift)
        inward = ((u <= 0.0) & (G < -floor)) | ((u >= data.hi) & (G > floor))
        inward &= movable
        inward[F[keep]] = False
        # the dense factor's columns of the dropped coordinates are of size 1 / delta where
        # H is singular (more free rows than their rank), and the bordered solves lose eps /
        # delta of their accuracy (the balance off by 1e-9 at 500 x 20, rank 18): a factor of
        # the kept set refines the point, where H is nearly singular along those columns (a
        # round of the factor and a step, about 7 ms at 50000 x 500, saved elsewhere)
        bordered = (
            isinstance(system, _FreeSystem)
            and not keep.all()
            and keep.any()
            and system.nearly_singular(keep)
        )
        if not (np.any(inward) or bordered) or steps >= FREE_SET_STEPS:
            break
        # the dropped coordinates joining again lift their constraints; the others are
        # appended to the factor, while they and the dropped ones are few against it
        rejoin = inward[F]
        inward[F] = False
        joining = np.flatnonzero(inward)
        kept = keep | rejoin
        dropped = F.size - int(np.count_nonzero(kept))
        few = dropped + joining.size <= EXTEND_MAX * F.size
        if (
            isinstance(system, _FreeSystem)
            and not bordered
            and few
            and (joining.size == 0 or system.extend(data, Z, F, joining))
        ):
            keep = np.concatenate([kept, np.ones(joining.size, dtype=bool)])
            F = np.concatenate([F, joining])
            Z = data.X[F]
            continue
        if bordered and few:
            # the dropped coordinates, whose columns would cost the bordered solves accuracy,
            # deleted from the factor instead of a factor of the kept set, the joining ones
            # appended: at 50000 x 500 (10 nonzeros a row, the hinge) the second and third
            # rounds' Gram and factor of 494 and 484 free, about 5 ms each
            system = system.restricted(kept)
            F = F[kept]
            kept = np.ones(F.size, dtype=bool)
            Z = data.X[F]
            if joining.size == 0 or system.extend(data, Z, F, joining):
                F = np.concatenate([F, joining])
                keep = np.ones(F.size, dtype=bool)
                Z = data.X[F]
                continue
        F = np.union1d(F[kept], joining)
        keep = np.ones(F.size, dtype=bool)
        Z = data.X[F]
        system = _free_system(data, F, coupled, floor, iterative=not factor_only, Z=Z)
        if system is None:
            break
    return u, b


@dataclass
class Ascent:
    """A point of the ascent and what it cost: multipliers ``u``, their expansion ``v``
    (recomputed in twice the working precision), floating-point ``P`` and ``D`` and the epochs
    run."""

    u: np.ndarray
    v: np.ndarray
    primal: float
    dual: float
    epochs: int


def ascend(
    data: CoordinateData,
    u: np.ndarray,
    target: float,
    *,
    shift: float = 0.0,
    max_epochs: int = 100_000,
    seed: int = 0,
    start: float = TOLERANCES[0],
    force: bool = False,
    exact: bool = True,
    evaluate: bool = True,
    unshrink_every: int = UNSHRINK_EVERY,
    carry: list | None = None,
    estimate: tuple[np.ndarray, float, float] | None = None,
) -> Ascent:
    """Run the ascent from ``u`` (clipped into the box) at tightening tolerances until the gap
    ``P(v) - D(u)`` of the problem with the intercept fixed at ``shift`` is at most ``target``,
    the tolerances are exhausted, or ``max_epochs`` have run.

    Parameters
    ----------
    data : CoordinateData
    u : ndarray
        Start (copied).
    target : float
        Relative gap ``(P - D) / max(1, |P|)`` to reach.
    shift : float
        The fixed free intercept (0 without one).
    start : float
        The first projected-gradient tolerance.
    force : bool
        Run at least the first tolerance even if the gap is met already (after a change of
        ``shift``, to update the multipliers).
    exact : bool
        Recompute the returned expansion in twice the working precision; otherwise, where a
        tolerance ran, return the last tolerance's expansion and objectives (``v`` updated in
        place, a few ulps from the expansion of ``u``: they steer the caller only).
    evaluate : bool
        Evaluate ``P`` and ``D`` at the returned exact point (a pass over the rows and the
        features); ``False`` returns those of the last gap estimate (the same ``u``, its
        expansion as the ascent updated it), for callers that use ``u`` and ``v`` alone.
    unshrink_every : int
        Epochs between the ascent's putting back every shrunk coordinate.
    carry : list, optional
        The active set of an earlier ascent on the same coordinates (:func:`coordinate_epochs`'s
        ``carry``; empty for none), opened on and left updated: the caller's sequence of
        shifts then opens each ascent on the last one's active coordinates. By default
        carried between this call's tolerances only.
    estimate : tuple, optional
        ``(v, P, D)``: the caller's plain expansion of ``u`` (in the box) as its own ascent
        left it, handed over (updated in place here), and ``P`` and ``D`` there at ``shift``
        (:meth:`CoordinateData.objectives`), instead of a pass over the rows for each.
    """
    u = np.clip(np.asarray(u, dtype=np.float64), 0.0, data.hi)
    epochs = 0
    if estimate is not None:
        v, primal, dual = estimate
    else:
        v = data.expansion(u, exact=False)  # steers the ascent only
        # from u = 0 (the solver's start) the first tolerance runs unestimated (nan: no gap is
        # met), which costs nothing where 0 is optimal (every loss 0 at v = 0: the run ends at
        # once) and saves a pass over the rows and features everywhere else; forced, it runs
        # whatever the gap
        unestimated = force or not u.any()
        primal, dual = (math.nan, math.nan) if unestimated else data.objectives(u, v, shift)
    tried: set[bytes] = set()
    # the squared hinge's curvature d_i >= 1 / (2 C s_i) bounds the condition number, and the
    # ascent alone converges in a few tens of epochs (measured)
    finish = not np.any(data.d)
    tol = next((t for t in TOLERANCES if t <= start), TOLERANCES[-1])
    carry = [] if carry is None else carry
    while True:
        met = primal - dual <= target * max(1.0, abs(primal))
        if (met and not force) or epochs >= max_epochs:
            break
        force = False
        last_gap, stalled = math.inf, False
        while True:
            # the hinge's ascent in slices, each followed by the finish where it is worth it
            budget = max_epochs - epochs
            if finish:
                budget = min(budget, FINISH_SLICE)
            ran = data.run(u, v, tol, budget, shift, seed + epochs, unshrink_every, carry=carry)
            epochs += ran
            if epochs < max_epochs and _unevaluated(data, u, ran, budget, tol, target):
                primal = dual = gap = math.nan
                break
            # the updated v drifts from the expansion of u by a few ulps per epoch: enough to
            # steer the ascent, and recomputed exactly for the point returned
            primal, dual = data.objectives(u, v, shift)
            gap = (primal - dual) / max(1.0, abs(primal))
            if finish and target < gap and _worth_finishing(data, u, ran, tol, gap):
                carry.clear()  # the finish moves u: every coordinate active again
                u, v, primal, dual = _finish_free_set(
                    data, u, v, primal, dual, shift, tried, target
                )
                gap = (primal - dual) / max(1.0, abs(primal))
            if ran < budget or gap <= target or epochs >= max_epochs:
                break
            if gap >= last_gap:
                # a whole slice left the gap where it was: the ascent is at its rounding
                # floor (rows shifted far from the origin: w a small difference of large
                # terms), and the tighter tolerances would not move it either
                stalled = True
                break
            last_gap = gap
            # the next slice opens on every coordinate, as the tolerance's first did: carried
            # over slices, the shrunk set steered the slow hinge's ascent on (poly feature map,
            # 8000 x 1771, C = 100, free intercept: the regularised start's gap fell 2-4% a
            # slice, 0.98 to 0.84 over six, where the slices opening on every coordinate left
            # it at 0.97 after the third, the stall that hands the search its b; 49736 epochs
            # against 17062). Only the tolerances' ascents, which end converged, carry theirs
            carry.clear()
        if stalled or tol <= TOLERANCES[-1] or gap <= target:
            break
        if math.isnan(gap):
            tol *= TOLERANCES[1] / TOLERANCES[0]  # unevaluated, far above the target
        elif target < FINISH_GAP:
            tol = _next_tolerance(tol, target, gap, LAST_REACH)
        else:
            # a loose target (the regularised start's, 1e-3 where the hinge's ascent is slow)
            # keeps the ladder: where that ascent ends, the free-set finish's gates take over
            # (5000 x 2000, 10 nonzeros a row, with a free intercept: ended at a gap of 2.8e-4
            # by LAST_TOLERANCE, short of FINISH_GAP, the search took two values of b)
            tol *= TOLERANCES[1] / TOLERANCES[0]
        # on the ladder, its own floats (no drift of repeated products)
        tol = next((t for t in TOLERANCES if math.isclose(t, tol)), tol)
    if not exact and not math.isnan(primal):
        # the estimates steer the caller only: those of the last tolerance, at the v updated
        # in place (a few ulps from the expansion of u), rather than two more passes
        return Ascent(u, v, primal, dual, epochs)
    v = data.expansion(u, exact)
    if evaluate:
        primal, dual = data.objectives(u, v, shift)
    return Ascent(u, v, primal, dual, epochs)


def _next_tolerance(tol: float, target: float, gap: float, reach: float = 1.0) -> float:
    """The tolerance after ``tol``, whose ascent left the relative gap ``gap`` above ``target``:
    the gap falls about as the tolerance, so the next of :data:`TOLERANCES` (two decades down),
    or where :data:`LAST_TOLERANCE` times ``target / gap`` reaches the target from at most
    ``reach`` times two decades down (:data:`LAST_REACH`), that tolerance; never below the
    last of :data:`TOLERANCES`."""
    ladder = TOLERANCES[1] / TOLERANCES[0]
    last = LAST_TOLERANCE * target / gap
    return max(TOLERANCES[-1], tol * (last if last >= ladder * reach else ladder))


def first_tolerance(data: CoordinateData) -> float:
    """The first projected-gradient tolerance of the solver's ascent without coupling:
    :data:`FINISH_FROM` for the hinge with more rows than features, where the free-set finish
    ends the ascent after that tolerance, else ``TOLERANCES[0]``. Each tolerance's ascent
    puts its shrunk coordinates back when it converges on them, so the looser tolerance
    before costs passes over every row: at 20000 x 200 (10 nonzeros a row) 32 epochs
    (about 40% of the ascent's time) for 21 fewer at 1e-3, at 5000 x 2000 13 for 11 fewer
    (benchmarks/regimes/sparse.py)."""
    slow = not np.any(data.d) and data.X.shape[0] > data.X.shape[1]
    return FINISH_FROM if slow else TOLERANCES[0]


def _unevaluated(
    data: CoordinateData, u: np.ndarray, ran: int, budget: int, tol: float, target: float
) -> bool:
    """Whether the ascent goes on to the next tolerance without the gap at ``u``, after ``ran``
    epochs of the ``budget`` to the tolerance ``tol``: it converged there, ``tol`` is at least
    :data:`UNEVALUATED_FROM` (the loss's) times ``target`` and not the last of
    :data:`TOLERANCES`, and, for the hinge (whose free-set finish the gap gates),
    :func:`_worth_finishing` could not hold whatever the gap (more than :data:`FINISH_FREE`
    coordinates of ``u`` free, and ``tol`` above :data:`FINISH_FROM` or fewer than
    :data:`FINISH_EPOCHS` epochs). The gap decides nothing else there: the next tolerance is
    two decades down unless the gap is within ``LAST_TOLERANCE / 0.01`` times the target."""
    smooth = bool(np.any(data.d))
    if ran >= budget or tol < UNEVALUATED_FROM[smooth] * target or tol <= TOLERANCES[-1]:
        return False
    if smooth:
        return True
    if tol <= FINISH_FROM and ran >= FINISH_EPOCHS:
        return False
    return int(np.count_nonzero((u > 0.0) & (u < data.hi))) > FINISH_FREE


def _worth_finishing(
    data: CoordinateData, u: np.ndarray, epochs: int, tol: float, gap: float
) -> bool:
    """Whether the free-set finish is tried after an ascent of ``epochs`` to the tolerance
    ``tol`` that left the relative gap ``gap`` at ``u``: at most :data:`FINISH_FREE`
    coordinates are free (the finish is cheap from any free set); or the ascent stalls (a
    whole slice of :data:`FINISH_SLICE` epochs) and the free set's dense factor, ``|F|^3 /
    3`` flops, costs no more than the slice did, ``epochs nnz(X)``; or the ascent was slow (at
    least :data:`FINISH_EPOCHS` epochs) and reached :data:`FINISH_FROM` and
    :data:`FINISH_GAP` (the free set is nearly the optimum's)."""
    free = int(np.count_nonzero((u > 0.0) & (u < data.hi)))
    if free <= FINISH_FREE:
        return True
    if epochs >= FINISH_SLICE and free**3 / 3.0 <= epochs * data.nnz:
        return True
    return epochs >= FINISH_EPOCHS and tol <= FINISH_FROM and gap <= FINISH_GAP


def _finish_free_set(
    data: CoordinateData,
    u: np.ndarray,
    v: np.ndarray,
    primal: float,
    dual: float,
    shift: float,
    tried: set[bytes],
    target: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The point of :func:`free_set_step` from ``u`` (once per free set, recorded in ``tried``;
    stopping once the relative gap ``target`` is met, where given) with its ``v``, ``P`` and
    ``D`` when its gap is smaller; else ``u`` as it is."""
    key = np.packbits((u > 0.0) & (u < data.hi)).tobytes()
    if key in tried:
        return u, v, primal, dual
    tried.add(key)
    gap = (primal - dual) / max(1.0, abs(primal))
    met: list = []
    step = free_set_step(data, u, shift, target=target, gap=gap, met=met)
    if step is None:
        return u, v, primal, dual
    trial = step[0]
    if met:
        # the finish stopped at the target: its own estimates, rather than a pass over the
        # rows and the features for each (1.1 ms at 50000 x 500, 10 nonzeros a row)
        v_trial, p_trial, d_trial = met
    else:
        v_trial = data.expansion(trial, exact=False)
        p_trial, d_trial = data.objectives(trial, v_trial, shift)
    if p_trial - d_trial < primal - dual:
        logger.debug("dcd: free-set solve: gap %.3e -> %.3e", primal - dual, p_trial - d_trial)
        return trial, v_trial, p_trial, d_trial
    return u, v, primal, dual


def _finish_coupled(
    data: CoordinateData,
    balance: Callable[[np.ndarray], np.ndarray],
    u: np.ndarray,
    tried: set[bytes],
) -> tuple[float, np.ndarray, np.ndarray, float] | None:
    """The point of :func:`free_set_step` with the free intercept from the balanced ``u``
    (once per free set, recorded in ``tried``): its relative gap, balanced point, multipliers
    and intercept; ``None`` when there is none to try."""
    key = np.packbits((u > 0.0) & (u < data.hi)).tobytes()
    if key in tried:
        return None
    tried.add(key)
    step = free_set_step(data, u, coupled=True)
    if step is None:
        return None
    trial, b = step
    gap, balanced = _gap(data, balance, trial, data.primal(data.expansion(trial, exact=False), b))
    logger.debug("dcd: free-set solve with the intercept: gap %.3e", gap)
    return gap, balanced, trial, b


def _gap(
    data: CoordinateData, balance: Callable[[np.ndarray], np.ndarray], u: np.ndarray, primal: float
) -> tuple[float, np.ndarray]:
    """Relative gap of ``primal`` to ``D`` at the balanced point of ``u``, and that point."""
    balanced = balance(u)
    dual = data.dual(balanced, data.expansion(balanced, exact=False))
    return (primal - dual) / max(1.0, abs(primal)), balanced


@dataclass
class _Bracket:
    """The outer search's knowledge of the root of the nonincreasing ``g``: the newest ``(b,
    g(b), u(b))`` with ``g > 0`` (``lo``, the root lies right of it) and with ``g < 0``
    (``hi``), the inner tolerance each end's ``g`` was found at, the side replaced last
    and how many times in a row after the first (``streak``, for the Illinois rule), the last
    ``g`` seen on each side and whether the newest repeated it exactly (``flat``: a plateau of
    ``g``, every multiplier that moves with ``b`` at a bound), and the ``b`` of an end dropped
    as stale, to be solved again (``recheck``)."""

    lo: tuple[float, float, np.ndarray] | None = None
    hi: tuple[float, float, np.ndarray] | None = None
    last: str = ""
    previous: tuple[float, float, np.ndarray] | None = None
    streak: int = 0
    tols: dict[str, float] = field(default_factory=dict)
    expand: bool = True
    flat: bool = False
    seen: dict[str, float] = field(default_factory=dict)
    recheck: float | None = None

    def add(self, b: float, g: float, u: np.ndarray, tol: float) -> None:
        side = "lo" if g > 0 else "hi"
        other = "hi" if side == "lo" else "lo"
        self.streak = self.streak + 1 if side == self.last else 0
        self.last = side
        self.recheck = None
        if self.lo is not None and self.hi is not None:
            self.previous = None
        else:
            self.previous = self.lo if side == "lo" else self.hi
        self.flat = self.seen.get(side) == g
        self.seen[side] = g
        setattr(self, side, (b, g, u))
        self.tols[side] = tol
        # inexact inner solves can invert the bracket: keep the newest end only
        if self.lo is not None and self.hi is not None and self.lo[0] >= self.hi[0]:
            setattr(self, other, None)
            self.tols.pop(other, None)
        # g is only as accurate as the inner solve: an end found at a looser tolerance than
        # the side replaced three times in a row may have the wrong sign (its g -0.028 where a
        # tighter solve at the same b gave +0.43, 50000 x 500 with the squared hinge), and the
        # bracket would close on it; it is dropped, and the search solves again at its b
        elif self.streak >= STALE_STREAK and self.tols.get(other, tol) > tol:
            self.recheck = getattr(self, other)[0]
            setattr(self, other, None)
            del self.tols[other]
            self.previous = None

    def next(self, first: float) -> float:
        """Regula falsi with the Illinois rule (the kept end's ``g`` halved once for each
        time the other side was replaced again in a row) inside a bracket, its midpoint where
        the newest end repeated its side's ``g`` (a plateau, whose values say nothing of the
        root's distance: on rows scaled by 1e-2, ``g = -2`` on one side and 59 on the other,
        regula falsi with one halving crept to the far end by 6% a value of ``b`` and the
        search stalled at a gap of 2e-3); the ``b`` of an end just dropped as stale, solved
        again at the newest tolerance (stepping out by ``first`` instead lost a bracket of
        width 0.03 to one of 0.5); otherwise a secant step towards the sign change, expanded to
        at least the last step (unless the first was Newton's, ``expand`` false) and at most 16
        times it, twice it on a plateau (no secant), ``first`` the first step."""
        if self.lo is not None and self.hi is not None:
            (b_lo, g_lo, _), (b_hi, g_hi, _) = self.lo, self.hi
            if self.flat:
                return 0.5 * (b_lo + b_hi)
            if self.last == "lo":
                g_hi *= 0.5**self.streak
            else:
                g_lo *= 0.5**self.streak
            return b_lo + g_lo / (g_lo - g_hi) * (b_hi - b_lo)
        if self.recheck is not None:
            return self.recheck
        b, g, _ = self.lo if self.lo is not None else self.hi
        direction = 1.0 if g > 0 else -1.0
        if self.previous is None:
            return b + direction * first
        b0, g0, _ = self.previous
        step = abs(b - b0)
        if not step:
            return b + direction * first
        if g0 == g:
            return b + direction * 2.0 * step  # a plateau: no secant, the step doubled
        secant = abs(g * (b - b0) / (g0 - g))
        return b + direction * min(max(secant, step) if self.expand else secant, 16.0 * step)

    def mixed(self) -> tuple[np.ndarray, float] | None:
        """The balanced convex combination ``t u_lo + (1 - t) u_hi`` of the ends' multipliers
        and the same combination of their ``b`` (``None`` without a bracket). Where ``g`` jumps
        over 0 (a kink of ``V``: many multipliers at a bound, ``n > d``) no ``u(b)`` is
        balanced, but both ends are nearly optimal at the root as the bracket closes, and so is
        their combination (the dual is concave)."""
        if self.lo is None or self.hi is None:
            return None
        (b_lo, g_lo, u_lo), (b_hi, g_hi, u_hi) = self.lo, self.hi
        t = g_hi / (g_hi - g_lo)
        return t * u_lo + (1.0 - t) * u_hi, t * b_lo + (1.0 - t) * b_hi


def _slope(data: CoordinateData, u: np.ndarray) -> tuple[float, bool]:
    r"""``-g'(b) = sigma_F^T H_FF^{-1} sigma_F`` on the free set ``F`` of ``u``, held (``u_F(b)``
    solves ``H_FF u_F = p_F - sigma_F b - ...``), by conjugate gradients to a residual of
    :data:`SLOPE_RTOL` (the quadratic form's error is of the order of the residual's square)
    for the squared hinge on sparse rows, whose ``H_FF = S X_F X_F^T S + D_F`` with ``D_F >
    0`` is nonsingular whatever the rows and columns (68.35 against the exact 68.36 at 20000
    x 200, 10 nonzeros a row, 15789 free), and for the hinge where the free rows suit them
    (:meth:`_IterativeSystem.suits`); elsewhere ``sum_F 1 / (||x_i||^2 + d_i)``, each free
    multiplier moved alone (``w`` fixed), which overestimates ``|g'|`` (5.3 times at 2000 x
    20000, 803 free: its step was 0.00044 where the root was 0.0023 away, and cost a value of
    ``b``; the squared hinge's 190 times at 20000 x 200, where the search's first step was
    7.7e-6 against 0.0015); the secant steps then expand the step (whether they should: the
    second value returned)."""
    curvature = data.qd + data.d
    free = (u > 0.0) & (u < data.hi) & (curvature > 0.0)  # a zero row never moves
    F = np.flatnonzero(free)
    if F.size and sp.issparse(data.X):
        Z = data.X[F]
        used = used_columns(Z)
        if np.all(data.d[F] > 0.0) or (not np.any(data.d) and _IterativeSystem.suits(Z, used)):
            floor = np.finfo(float).eps * max(1.0, float(np.max(np.abs(data.p))))
            system = _IterativeSystem(data, F, Z, False, floor, used)
            sigma = data.sigma[F]
            x, _ = system.solve(sigma, np.ones(F.size, dtype=bool), 0.0, rtol=SLOPE_RTOL)
            return float(sigma @ x), False
    return fsum(1.0 / curvature[free]), True


def _stalled(history: list[float]) -> bool:
    """Whether the best gap of the outer search (``history``, one entry a value of ``b`` or a
    tightening at the same one, not a bisection of a plateau of ``g``, which halves the
    bracket whatever the gap) has not halved over the last :data:`STALL`."""
    return len(history) > STALL and history[-1] > 0.5 * history[-1 - STALL]


def _regularised_start(
    data: CoordinateData,
    target: float,
    max_epochs: int,
    seed: int,
    unshrink_every: int,
    carry: list | None = None,
) -> tuple[np.ndarray, float, int]:
    r"""The multipliers, intercept and epochs of the problem with the intercept a regularised
    feature of value ``B`` instead of free (liblinear's bias; ``B^2`` the rows' mean squared
    norm, the feature scaled like them), solved by :func:`ascend` to the relative gap
    ``target`` from 0 (shrunk coordinates put back every ``unshrink_every`` epochs), its
    active set left in ``carry`` where given (for the ascents with ``b`` fixed that follow).

    Its objective is the free one plus ``b^2 / (2 B^2)``: its ``b`` is one proximal-point step
    on the optimal value ``V`` from 0 (Rockafellar 1976), ``b = B^2 g(b)``, between 0 and the
    root of ``g``, and its multipliers solve the problem with ``b`` fixed there; near the root
    where ``V``'s curvature is large against ``1 / B^2``: 0.444 against 0.456 at 20000 x 200
    (the hinge, 10 nonzeros a row, benchmarks/regimes/sparse.py), where the search from 0
    (its first step set by a slope estimate 13 times too steep) solved inner problems at 0.037
    and 0.476 to the tolerance the free-set finish needs, 1008 epochs against 499 from here."""
    norms = data.qd[data.qd > 0.0] - data.bias**2
    bias = math.sqrt(float(np.mean(norms))) if norms.size else 1.0
    regularised = data.regularised(bias)
    u = np.zeros(data.sigma.shape[0])
    step = ascend(
        regularised,
        u,
        target,
        max_epochs=max_epochs,
        seed=seed,
        exact=False,
        unshrink_every=unshrink_every,
        carry=carry,
    )
    b = regularised.intercept(step.v, 0.0)
    logger.debug("dcd: the regularised intercept (B = %.3g): b=%.17g", bias, b)
    return step.u, b, step.epochs


def _better_finished(
    data: CoordinateData,
    balance: Callable[[np.ndarray], np.ndarray],
    balanced: np.ndarray,
    tried: set[bytes],
    best: tuple[float, np.ndarray, np.ndarray, float],
) -> tuple[float, np.ndarray, np.ndarray, float]:
    """The free-set finish with the intercept from ``balanced`` (:func:`_finish_coupled`)
    where it has a smaller gap than ``best``, else ``best``."""
    finished = _finish_coupled(data, balance, balanced, tried)
    return finished if finished is not None and finished[0] < best[0] else best


def moves_intercept(data: CoordinateData) -> bool:
    """Whether the balanced ascent from 0 moves the free intercept inside the ascent
    (:func:`_newton_ascent`): where the ascent is fast (:func:`first_tolerance`), for the
    squared hinge on sparse rows (its slope by conjugate gradients, :func:`_slope`); elsewhere
    the search on ``b`` from the regularised start (the squared hinge's slope on dense rows is
    an estimate, and the slow hinge's regularised free set is finished at once)."""
    smooth = bool(np.any(data.d))
    return first_tolerance(data) != FINISH_FROM and (not smooth or sp.issparse(data.X))


def _newton_ascent(
    data: CoordinateData,
    balance: Callable[[np.ndarray], np.ndarray],
    target: float,
    max_epochs: int,
    seed: int,
    unshrink_every: int,
    tried: set[bytes],
) -> tuple[np.ndarray, float, int, tuple[float, np.ndarray, np.ndarray, float] | None]:
    r"""The ascent from ``u = 0, b = 0`` with the free intercept moving inside it: after
    :data:`BALANCE_SLICE` epochs at ``b = 0``, ``b`` takes Newton's step on ``g`` every
    :data:`BALANCE_SLICE` epochs (:func:`coordinate_epochs` with ``intercept``), the slope
    ``-g'`` by :func:`_slope` at the first slice's point, held; the tolerances tighten as in
    :func:`ascend` (by less where :data:`LAST_TOLERANCE` reaches the target), the gap to the
    balanced point evaluated after each and, for the hinge, the free-set finish with the
    intercept tried where :func:`_worth_finishing` (free sets in ``tried``, as the search
    tries it); each tolerance opens on the active set the last one left (``carry`` of
    :func:`coordinate_epochs`), not on every row (10000 x 1e6, 100 nonzeros a row: 195-210
    ms to 171-177 ms, the same 27 epochs);
    a tolerance not met in :data:`FINISH_SLICE` epochs ends it. A step ``g / s`` with
    ``s`` the slope of the free set a few epochs in is Newton's on ``V'(b) = -g(b)`` up to
    the change of the free set, so ``b`` converges with the multipliers instead of an outer
    search solving an inner problem at each of its values (2000 x 20000, 20 nonzeros a row:
    46 epochs against the search's 53, the ascent without intercept 40). Returns the
    multipliers, ``b`` and the epochs, and the best point ``(gap, balanced point,
    multipliers, b)``, ``None`` when none was evaluated."""
    u = np.zeros(data.sigma.shape[0])
    v = data.expansion(u, exact=False)
    intercept = np.zeros(1)
    carry: list = []
    epochs = data.run(u, v, TOLERANCES[0], BALANCE_SLICE, 0.0, seed, unshrink_every, carry=carry)
    slope, _ = _slope(data, u)
    best = None
    if slope <= 0.0:
        return u, 0.0, epochs, best
    tol = TOLERANCES[0]
    while True:
        budget = min(max_epochs - epochs, FINISH_SLICE)
        if budget <= 0:
            break
        ran = data.run(
            u, v, tol, budget, 0.0, seed + epochs, unshrink_every, intercept, slope, 0.0, carry
        )
        epochs += ran
        if epochs < max_epochs and _unevaluated(data, u, ran, budget, tol, target):
            tol *= TOLERANCES[1] / TOLERANCES[0]
            continue
        b = float(intercept[0])
        gap, balanced = _gap(data, balance, u, data.primal(v, b))
        logger.debug("dcd: moving b=%.17g tolerance %.0e gap %.3e epochs %d", b, tol, gap, epochs)
        if best is None or gap < best[0]:
            best = (gap, balanced, u.copy(), b)
        if gap <= target:
            break
        if not np.any(data.d) and _worth_finishing(data, balanced, ran, tol, gap):
            best = _better_finished(data, balance, balanced, tried, best)
            if best[0] <= target:
                break
        if ran >= budget:
            break  # slow: the search on b, with its finishes, takes over from here
        if tol <= TOLERANCES[-1]:
            break
        tol = _next_tolerance(tol, target, gap)
    return u, float(intercept[0]), epochs, best


def regularised_ascent(
    data: CoordinateData, target: float, max_epochs: int, seed: int, unshrink_every: int
) -> tuple[np.ndarray, int, float, tuple[np.ndarray, float, float] | None]:
    r"""A start for :func:`ascend` on ``data`` with a regularised intercept (``bias = B > 0``):
    the ascent from ``u = 0`` on the problem with the intercept a shift ``b`` (``bias = 0``,
    the rows shared), ``b`` moving inside it as in :func:`_newton_ascent`, by Newton's steps on
    the regularised problem's ``g(b) - b / B^2`` (``V'(b) = -g(b)`` for the optimal value ``V``
    of the problem with ``b`` fixed, and the penalty ``b^2 / (2 B^2)``), the slope ``-g'`` by
    :func:`_slope` after :data:`BALANCE_SLICE` epochs, held. The regularised feature's rank-one
    coupling, ``B^2 sigma sigma^T`` in the dual's Hessian, slows every coordinate's step (5000
    x 20000, 50 nonzeros a row, the hinge: 109 epochs against 53 without intercept); the
    Newton step takes that direction out of the ascent. At the optimum ``b = B^2 sum_i sigma_i
    u_i`` and ``u`` is the regularised problem's optimum; the gap after each tolerance is that
    problem's at ``u`` (its own ``w`` and ``b`` from ``u``), skipped where :func:`_unevaluated`
    (a loose tolerance that converged: the gap decides nothing there). Each tolerance opens on
    the active set the last one left (``carry`` of :func:`coordinate_epochs`; the rows, their
    live set and ``u`` are the ascent's alone), not on every row: at 10000 x 1e6 (100 nonzeros
    a row) each of seven tolerances opened with a pass over all 10000 rows. Stops at
    ``target``, after the last of :data:`TOLERANCES`, or at a tolerance not met in
    :data:`FINISH_SLICE` epochs; returns the multipliers, the epochs run, the last tolerance
    (the start of :func:`ascend`) and the last estimate ``(v, P, D)`` of the regularised
    problem (its ``estimate``; ``None`` if none was taken)."""
    fixed = data.regularised(0.0)
    curvature = 1.0 / data.bias**2
    u = np.zeros(data.sigma.shape[0])
    v = fixed.expansion(u, exact=False)
    intercept = np.zeros(1)
    carry: list = []
    epochs = fixed.run(u, v, TOLERANCES[0], BALANCE_SLICE, 0.0, seed, unshrink_every, carry=carry)
    slope, _ = _slope(fixed, u)
    tol = TOLERANCES[0]
    estimate = None
    while epochs < max_epochs:
        budget = min(max_epochs - epochs, FINISH_SLICE)
        ran = fixed.run(
            u, v, tol, budget, 0.0, seed + epochs, unshrink_every, intercept, slope, curvature,
            carry,
        )  # fmt: skip
        epochs += ran
        if epochs < max_epochs and _unevaluated(data, u, ran, budget, tol, target):
            tol *= TOLERANCES[1] / TOLERANCES[0]
            continue
        # the regularised problem's plain expansion of u: the ascent's w as it updated it in
        # place (it steers only, as in ascend) and the feature's coordinate B sum_i sigma_i u_i
        # (the last entry is read by the fixed problem's epochs only times its bias, 0)
        v[-1] = data.bias * float(data.sigma @ u)
        primal, dual = data.objectives(u, v)
        estimate = (v, primal, dual)
        gap = (primal - dual) / max(1.0, abs(primal))
        logger.debug("dcd: regularised b=%.17g tolerance %.0e gap %.3e", intercept[0], tol, gap)
        if gap <= target or ran >= budget or tol <= TOLERANCES[-1]:
            break
        tol = _next_tolerance(tol, target, gap)
    return u, epochs, tol, estimate


def balanced_ascent(
    data: CoordinateData,
    balance: Callable[[np.ndarray], np.ndarray],
    target: float,
    *,
    u: np.ndarray | None = None,
    b: float = 0.0,
    max_epochs: int = 100_000,
    seed: int = 0,
    unshrink_every: int = UNSHRINK_EVERY,
) -> tuple[np.ndarray, np.ndarray, float, int]:
    """The ascent with a free intercept (``sum_i sigma_i u_i = 0``), from ``u`` (default 0)
    and ``b``: the problem with ``b`` fixed is solved by :func:`ascend` for a sequence of
    ``b`` converging to the root of ``g(b) = sum_i sigma_i u_i(b)`` (nonincreasing; ``V'(b) =
    -g(b)`` for the optimal value ``V`` of the problem with ``b`` fixed) by the secant method,
    bracketed and safeguarded by the Illinois rule, each inner problem warm started and solved
    more tightly as the gap closes. ``balance`` maps multipliers to the balanced point whose
    ``D`` is a lower bound (the certificate's own). Stops when the relative gap of
    ``P(w(u), b)`` to that ``D`` is at most ``target``; returns the balanced point of smallest
    gap, the expansion of its unbalanced multipliers, its ``b`` and the epochs run. Without a
    start ``u`` the intercept first moves inside the ascent from 0 where
    :func:`moves_intercept` (:func:`_newton_ascent`; the search takes over from its point if
    a tolerance is slow), else the search starts from the problem with a regularised
    intercept (:func:`_regularised_start`). The first step is Newton's where the free rows suit
    conjugate gradients (:func:`_slope`), and once balancing the multipliers costs at most
    :data:`SETTLED` times the target, ``b`` stays and the inner problem is solved to the
    target. Every ascent puts its shrunk coordinates back every ``unshrink_every`` epochs."""
    scale = max(1.0, float(np.max(data.p, initial=0.0)))
    inner, start, epochs = 1e-3, TOLERANCES[0], 0
    tried: set[bytes] = set()
    best = None
    # the regularised start's active set, on which the ascent at its b opens (its closing
    # sweep over the shrunk coordinates still ends it) rather than on every row, where the
    # hinge's ascent is slow: 2 epochs over 50000 rows, 6-7 ms, against 2.7 ms at 50000 x 500
    # (10 nonzeros a row). Not carried on to the next values of b (measured there: no gain)
    carry: list | None = []
    if u is None and moves_intercept(data):
        u, b, epochs, best = _newton_ascent(
            data, balance, target, max_epochs, seed, unshrink_every, tried
        )
        if best is not None and best[0] <= target:
            return best[1], data.expansion(best[2]), best[3], epochs
        if best is None:
            # no free multiplier to take the slope from (C small: every one at a bound),
            # where g jumps at its root: the search from the regularised start (from b = 0
            # at 2000 x 20000, C = 0.01, it stalled at a gap of 6e-5)
            u = None
    if u is None:
        fast = first_tolerance(data) != FINISH_FROM
        first_target = REGULARISED_FAST if fast else inner
        # the regularised rows have the same coordinates, and the same live ones where no
        # row is 0 (there the bias makes a coordinate live that is not with b fixed); where
        # the ascent is fast its own first epochs are few (the search at 2000 x 20000, 20 a
        # row: 54 epochs against 49 from the carried set)
        same = not fast and bool(np.all(data.qd + data.d > 0.0))
        u, b, epochs = _regularised_start(
            data, first_target, max_epochs, seed, unshrink_every, carry if same else None
        )
        if not np.any(data.d):
            # the slow hinge's free set of the regularised problem is nearly the optimum's:
            # the finish with the intercept from it, before an ascent with b fixed (poly
            # feature map, 8000 x 1771, C = 1: 3135 epochs and a finish of 0.39 s, gap 1e-13,
            # where the ascent with b fixed took 1008 more epochs to the same finish)
            gap, balanced = _gap(data, balance, u, data.primal(data.expansion(u, exact=False), b))
            if _worth_finishing(data, balanced, epochs, FINISH_FROM, gap):
                best = _finish_coupled(data, balance, balanced, tried)
                if best is not None and best[0] <= target:
                    return best[1], data.expansion(best[2]), best[3], epochs
                if best is not None and best[0] < gap:
                    # the search goes on from the finish's point, its b nearer the root: rows
                    # shifted by -20 and scaled by 1e-3 (120 x 8, C = 0.1), the finish's b
                    # -1.0000014 against the regularised start's -0.00064, from which 8 values
                    # of b did not better the finish's gap (4.5e-5, :func:`_stalled`)
                    u, b = best[2], best[3]
    else:
        u = np.clip(u, 0.0, data.hi)
    # the epochs that led to the first point (the regularised start's), for whether its
    # ascent was slow enough for the free-set finish
    ran = epochs
    bracket = _Bracket()
    history: list[float] = []
    for _ in range(MAX_SHIFTS):
        step = ascend(
            data,
            u,
            inner,
            shift=b,
            max_epochs=max_epochs - epochs,
            seed=seed + epochs,
            start=start,
            force=True,
            exact=False,
            unshrink_every=unshrink_every,
            carry=carry,
        )
        carry = None
        u, epochs, solved_at = step.u, epochs + step.epochs, inner
        ran += step.epochs
        gap, balanced = _gap(data, balance, u, step.primal)
        # what balancing cost: the gap beyond the inner problem's own (of order g^2)
        settled = gap - (step.primal - step.dual) / max(1.0, abs(step.primal)) <= SETTLED * target
        if best is None or gap < best[0]:
            best = (gap, balanced, u.copy(), b)
        if logger.isEnabledFor(logging.DEBUG):
            # g of the log alone where the search stops here (a pass over the rows)
            g = fsum_dot(data.sigma, u)
            logger.debug("dcd: b=%.17g g=%.3e gap %.3e epochs %d", b, g, gap, epochs)
        if gap <= target or epochs >= max_epochs:
            break
        if not np.any(data.d) and _worth_finishing(data, balanced, ran, FINISH_FROM, gap):
            best = _better_finished(data, balance, balanced, tried, best)
            if best[0] <= target:
                break
        g = fsum_dot(data.sigma, u)
        # the inner problems are solved more tightly as the gap closes (g is only as accurate
        # as the multipliers), each started at the tolerance the last one reached
        inner = max(0.1 * target, min(inner, 0.3 * gap))
        start = max(TOLERANCES[-1], min(start, 10.0 * gap))
        if step.epochs >= FINISH_EPOCHS and not np.any(data.d):
            # the ascent is slow and the free-set finish ends it: from the tolerance it
            # needs, a tighter one costs thousands of epochs (n > d, the hinge)
            start = max(start, FINISH_FROM)
        if g == 0.0 or settled:
            # balanced, or so nearly that only the inner problem is left to tighten: at this
            # b, to the target at once (2000 x 20000 with a free intercept: the last two
            # values of b were 7.8e-8 apart, the gap of the first 6.4e-12 against 5e-12)
            if step.epochs == 0 and inner <= 0.5 * target:
                break
            inner = max(0.1 * target, min(inner, 0.5 * target))
            history.append(best[0])
            if _stalled(history):
                break
            continue
        bracket.add(b, g, u.copy(), solved_at)
        mixed = bracket.mixed()
        if mixed is not None:
            v_mix = data.expansion(mixed[0], exact=False)
            gap_mix, balanced_mix = _gap(data, balance, mixed[0], data.primal(v_mix, mixed[1]))
            logger.debug("dcd: the bracket's combination: gap %.3e", gap_mix)
            if gap_mix < best[0]:
                best = (gap_mix, balanced_mix, mixed[0], mixed[1])
            if gap_mix <= target:
                break
        first = FIRST_STEP * scale
        if bracket.previous is None and (bracket.lo is None or bracket.hi is None):
            # the first step, before any secant: Newton's on g
            slope, bracket.expand = _slope(data, u)
            first = min(abs(g) / slope, first) if slope > 0 else first
        following = bracket.next(first)
        if following == b and step.epochs == 0:
            break  # b cannot move in floating point and the inner problem is solved
        ran = 0
        if not bracket.flat:
            history.append(best[0])
        if _stalled(history):
            break  # slow inner solves where g jumps: the caller finishes otherwise
        b = following
    _, balanced, source, b = best
    return balanced, data.expansion(source), b, epochs

"""A cold first call (nothing compiled, an empty compile cache) takes paths that compile nothing
heavy, and returns the same certified optimum as the compiled paths (DESIGN.md "Compiled
kernels and the cold start")."""

from __future__ import annotations

import itertools
import json
import logging
import os
import subprocess
import sys
from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import random_problem
from hypothesis import example, given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm import _numerics, kernels
from qpsvm.datasets import make_chains
from qpsvm.models import ChainModel, chain
from qpsvm.solvers import cutting_plane, direct, one_slack, smo, warm_start
from qpsvm.verify import ascent, ranking_sweep, rigorous

PROBE = """
import json, sys
import qpsvm
from qpsvm._compile_cache import compiled
from qpsvm._numerics import _sum2
from qpsvm.solvers._online_kernels import smo_loop
import numpy as np
before = {"sum2": compiled(_sum2), "smo_loop": compiled(smo_loop)}
if sys.argv[1] == "call":
    _sum2(np.arange(3.0))
print(json.dumps({"before": before, "compiled_here": bool(_sum2.signatures)}))
"""


def _probe(cache, action: str) -> dict:
    env = {**os.environ, "QPSVM_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, action],
        env=env,
        check=True,
        timeout=600,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.splitlines()[-1])


def test_compiled_reads_numbas_disk_cache_without_compiling(tmp_path):
    # an empty cache: nothing compiled; the call compiles _sum2 and numba writes its entry
    first = _probe(tmp_path, "call")
    assert first == {"before": {"sum2": False, "smo_loop": False}, "compiled_here": True}
    # a new process sees the entry (and none for the SMO loop) before any call: if numba's
    # private cache index changes, this fails rather than the probe silently saying False
    second = _probe(tmp_path, "look")
    assert second == {"before": {"sum2": True, "smo_loop": False}, "compiled_here": False}


def _wide(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Floats over 30 decades with zeros: sums that cancel and products whose errors matter."""
    a = rng.normal(size=shape) * 10.0 ** rng.integers(-15, 15, size=shape)
    a[rng.random(shape) < 0.2] = 0.0
    return a


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 40))
def test_uncompiled_sums_equal_the_compiled_ones_to_the_bit(seed, n, d):
    # the numpy equivalents do the same operations in the same order: the certificate's
    # numbers do not depend on whether its kernels were compiled yet
    rng = np.random.default_rng(seed)
    X, v = _wide(rng, (n, d)), _wide(rng, (n,))
    compiled_out, numpy_out = (np.zeros(d), np.zeros(d)), (np.zeros(d), np.zeros(d))
    _numerics._dense_tdot2(X, v, *compiled_out)
    _numerics._dense_tdot2_numpy(X, v, *numpy_out)
    by_column = (np.zeros(d), np.zeros(d))
    _numerics._dense_tdot2_by_column(np.ascontiguousarray(X.T), v, *by_column)
    for hi_lo in (numpy_out, by_column):
        np.testing.assert_array_equal(hi_lo[0], compiled_out[0])
        np.testing.assert_array_equal(hi_lo[1], compiled_out[1])
    expected, by_rows = np.zeros(d), np.empty(d)
    rigorous._abs_columns(X, v, expected)
    np.testing.assert_array_equal(rigorous._abs_columns_numpy(X, v), expected)
    rigorous._abs_rows(np.ascontiguousarray(X.T), v, by_rows)
    np.testing.assert_array_equal(by_rows, expected)
    assert _numerics._sum2_python(X.ravel()) == _numerics._sum2(X.ravel())
    # Sum2 of the products formed in the loop: the float of Sum2 over the product array
    for a, b in ((X.ravel(), X.ravel()), (v, _wide(rng, (n,)))):
        fused_sum = sum(_numerics._sum2_dot(a, b))
        assert fused_sum == sum(_numerics._sum2_python(a * b))
        assert _numerics.fsum_dot(a, b) == _numerics.fsum(a * b)
    # and on CSR rows (zeros not stored), each row's terms in their order; zeros' signs too
    S = sp.csr_matrix(X)
    compiled_out, numpy_out = (np.zeros(d), np.zeros(d)), (np.zeros(d), np.zeros(d))
    _numerics._csr_tdot2(S.data, S.indices, S.indptr, v, *compiled_out)
    _numerics._csr_tdot2_numpy(S, v, *numpy_out)
    w = _wide(rng, (d,))
    rows = _numerics._csr_rows_dot2(S.data, S.indices, S.indptr, w)
    pairs = [*zip(numpy_out, compiled_out, strict=True)]
    pairs += zip(_numerics._csr_rows_dot2_numpy(S, w), rows, strict=True)
    # the expansion with its magnitudes |X|^T |v| in one pass, and scipy's product
    fused = (np.zeros(d), np.zeros(d), np.zeros(d))
    _numerics._csr_tdot2_abs(S.data, S.indices, S.indptr, v, *fused)
    pairs += zip((*numpy_out, abs(S).T @ np.abs(v)), fused, strict=True)
    for a, b in pairs:
        assert np.array_equal(a, b) and np.array_equal(np.signbit(a), np.signbit(b))


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 60),
    st.integers(1, 12),
    st.sampled_from([1, 7, 40, 2**14]),
    st.booleans(),
)
def test_uncompiled_dense_dot2_and_magnitudes_chunk_by_chunk_equal_the_compiled_ones(
    seed, n, d, chunk, huge
):
    # dense Dot2 and |M|^T |v| in numpy over chunks of rows (vectorised over a chunk's rows
    # and columns, each column's running sums by np.add.accumulate): the compiled loops'
    # floats to the bit, from starting sums with zeros of both signs, across chunk boundaries,
    # and where Dekker's splitting overflows (entries near 1e300: nan and inf in the same
    # places, which tdot2 then replaces by the plain product; a nan's sign means nothing)
    rng = np.random.default_rng(seed)
    X, v = _wide(rng, (n, d)), _wide(rng, (n,))
    X[rng.random((n, d)) < 0.1] = -0.0
    v[rng.random(n) < 0.1] = -0.0
    if huge:
        X[rng.random((n, d)) < 0.05] = 1e300
        X[rng.random((n, d)) < 0.02] = -np.inf
    s, c = _wide(rng, (d,)), _wide(rng, (d,))
    s[rng.random(d) < 0.3], c[rng.random(d) < 0.3] = -0.0, -0.0
    out = {}
    with mock.patch.object(_numerics, "CHUNK_ENTRIES", chunk):  # both chunk by chunk_rows
        for name, layout in (("C", X), ("F", np.asfortranarray(X))):
            out[name] = (s.copy(), c.copy())
            _numerics._dense_tdot2_numpy(layout, v, *out[name])
            out[name] += (rigorous._abs_columns_numpy(layout, v),)
    expected = (s.copy(), c.copy(), np.zeros(d))
    with np.errstate(over="ignore", invalid="ignore"):  # the compiled loops raise no flags
        _numerics._dense_tdot2(X, v, expected[0], expected[1])
        rigorous._abs_columns(X, v, expected[2])
    for got in out.values():
        for a, b in zip(got, expected, strict=True):
            assert np.array_equal(a, b, equal_nan=True)
            assert np.array_equal(np.signbit(a[~np.isnan(a)]), np.signbit(b[~np.isnan(b)]))


def _planes(rng: np.random.Generator, planes: int, d: int) -> tuple[np.ndarray, ...]:
    """A cutting-plane pool's rows: ``start, end, idx, val`` with sorted indices, some empty."""
    lengths = rng.integers(0, d + 1, size=planes)
    idx = [np.sort(rng.choice(d, size=m, replace=False)) for m in lengths]
    end = np.cumsum(lengths).astype(np.int64)
    idx = np.concatenate([np.zeros(0, dtype=np.int64), *idx]).astype(np.int64)
    return end - lengths, end, idx, _wide(rng, (idx.size,))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 30), st.integers(1, 30))
def test_uncompiled_plane_products_equal_the_compiled_ones_to_the_bit(seed, planes, d):
    # the cutting plane's Gram row, expansion w = sum alpha_k a_k and working-set slacks in
    # numpy: each sum added in the kernels' order, the same floats with their zeros' signs;
    # the Gram row's products, of the indices two rows share, added in Python floats too
    rng = np.random.default_rng(seed)
    start, end, idx, val = _planes(rng, planes, d)
    ids = rng.permutation(planes)[: rng.integers(0, planes + 1)].astype(np.int64)
    alpha, c, w = _wide(rng, (planes,)), _wide(rng, (planes,)), _wide(rng, (d,))
    cuts = np.sort(rng.integers(0, ids.size + 1, size=rng.integers(0, 6)))
    bptr = np.concatenate([[0], cuts, [ids.size]]).astype(np.int64)
    k = int(rng.integers(0, planes))
    row, numpy_row = np.full(ids.size, np.nan), np.full(ids.size, np.nan)
    cutting_plane._dots(k, ids, start, end, idx, val, row, d)
    cutting_plane._dots_numpy(k, ids, start, end, idx, val, numpy_row)
    own = dict(zip(idx[start[k] : end[k]].tolist(), val[start[k] : end[k]].tolist(), strict=True))
    python_row = []
    for j in ids:
        total = 0.0
        for p in range(start[j], end[j]):
            if int(idx[p]) in own:
                total += float(val[p]) * own[int(idx[p])]
        python_row.append(total)
    pairs = [(row, numpy_row), (row, np.array(python_row, dtype=np.float64))]
    for kernel, equivalent, args, out in [
        (cutting_plane._expand, cutting_plane._expand_numpy, (ids, start, end, idx, val, alpha), d),
        (
            cutting_plane._block_values,
            cutting_plane._block_values_numpy,
            (bptr, ids, start, end, idx, val, c, w),
            bptr.size - 1,
        ),
    ]:
        a, b = np.full(out, np.nan), np.full(out, np.nan)
        kernel(*args, a)
        equivalent(*args, b)
        pairs.append((a, b))
    for a, b in pairs:
        assert np.array_equal(a, b) and np.array_equal(np.signbit(a), np.signbit(b))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 300), st.sampled_from([1, 7, 64, 2**14]))
@example(seed=0, n=0, chunk=2**14)  # an empty matrix (no rows to predict): no chunk at all
def test_uncompiled_exponential_is_its_source_in_floats_rounded_apart(seed, n, chunk):
    # exp_nonpositive's source run by Python on numpy floats (each operation rounded apart, no
    # fused multiply-add) and the numpy equivalent, chunk by chunk: the same floats, zeros,
    # subnormal results and the clamp at -746 included
    rng = np.random.default_rng(seed)
    x = -rng.exponential(10.0 ** rng.uniform(-3, 2.5), size=n)
    x[rng.random(n) < 0.1] = rng.choice([0.0, -0.0, -745.5, -746.0, -800.0, -708.4])
    expected, bits = x.copy(), np.empty(n, dtype=np.int64)
    kernels.exp_nonpositive.py_func(expected, bits, bits.view(np.float64))
    got = x.copy()
    with mock.patch.object(kernels, "_EXP_CHUNK", chunk):
        kernels._exp_nonpositive_numpy(got)
    assert np.array_equal(got.view(np.int64), expected.view(np.int64))


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 40),
    st.integers(1, 40),
    st.integers(1, 8),
    st.sampled_from([1, 3, 64]),
)
def test_uncompiled_distances_by_blocks_add_each_term_in_order(seed, rows, cols, d, block):
    # -gamma sum_k (x_tk - a_rk)^2 in numpy by blocks of rows: each entry the terms added in
    # Python floats in the features' order; a Gram matrix's upper triangle and its transpose
    # are the same floats
    rng = np.random.default_rng(seed)
    A, B = _wide(rng, (rows, d)) * 1e-10, rng.normal(size=(cols, d))
    gamma = float(rng.uniform(0.01, 2.0))
    with mock.patch.object(kernels, "_DISTANCE_ROWS", block):
        for R, symmetric in ((A, False), (B, False), (B, True)):
            out = np.full((R.shape[0], cols), np.nan)
            kernels._dense_distances_numpy(R, np.ascontiguousarray(B.T), gamma, out, symmetric)
            for r, t in itertools.product(range(R.shape[0]), range(cols)):
                total = 0.0
                for k in range(d):
                    diff = float(B[t, k]) - float(R[r, k])
                    total += diff * diff
                assert out[r, t] == -gamma * total


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 30), st.integers(1, 12), st.integers(1, 20))
def test_one_block_layout_takes_the_sweeps_steps_on_its_block(seed, planes, d, steps):
    # the sequential pass's pairwise steps on one block: the sweep over that block's layout
    # alone (its spare mass a view of one) takes the same steps as the sweep over every block
    # ordered to visit that one: the same gap, multipliers, spare masses and w to the bit
    rng = np.random.default_rng(seed)
    start, end, idx, val = _planes(rng, planes, d)
    rows = np.zeros((planes, d))
    for k in range(planes):
        rows[k, idx[start[k] : end[k]]] = val[start[k] : end[k]]
    ids = rng.permutation(planes).astype(np.int64)
    cuts = np.sort(rng.integers(0, planes + 1, size=rng.integers(0, 4)))
    bptr = np.concatenate([[0], cuts, [planes]]).astype(np.int64)
    grams = [rows[ids[a:b]] @ rows[ids[a:b]].T for a, b in itertools.pairwise(bptr)]
    gptr = np.concatenate([[0], np.cumsum(np.diff(bptr) ** 2)]).astype(np.int64)
    gram = np.concatenate([np.zeros(0)] + [g.ravel() for g in grams])
    C = 1.0
    alpha = rng.random(planes) * (rng.random(planes) < 0.7)
    spare = np.empty(bptr.size - 1)
    for b in range(spare.size):
        block = ids[bptr[b] : bptr[b + 1]]
        alpha[block] *= C / max(1.0, 2.0 * alpha[block].sum())
        spare[b] = C - alpha[block].sum()
    c, w = rng.normal(size=planes), alpha @ rows
    b = int(rng.integers(0, spare.size))
    got = []
    for layout, cut in [
        ((np.array([b]), bptr, ids, gptr, gram), slice(None)),
        (cutting_plane._block_layout(ids[bptr[b] : bptr[b + 1]], grams[b]), slice(b, b + 1)),
    ]:
        a, s, v, g, old = alpha.copy(), spare.copy(), w.copy(), np.empty(planes), np.empty(planes)
        gap = cutting_plane._sweep(*layout, start, end, idx, val, c, a, s[cut], v, C, steps, g, old)
        got.append((np.array([gap]), a, s, v))
    for x, y in zip(*got, strict=True):
        assert np.array_equal(x.view(np.uint64), y.view(np.uint64))
    assert cutting_plane._sweep.signatures[:1] == cutting_plane._sweep.signatures


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 8), st.integers(0, 12))
def test_uncompiled_resort_is_the_insertion_sorts_order_and_verdict(seed, queries, most):
    # a ranking re-sort in numpy: a stable sort within each query, the same order as the
    # insertion sort's to the item (ties, zeros of both signs) and the same verdict on its budget
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, most + 1, size=queries)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
    start = np.concatenate(
        [np.zeros(0, dtype=np.intp)]
        + [rng.permutation(np.arange(a, b, dtype=np.intp)) for a, b in itertools.pairwise(starts)]
    )
    key = rng.integers(-2, 3, size=start.size) * rng.choice([1.0, -1.0, 0.25], size=start.size)
    key[rng.random(start.size) < 0.2] = -0.0
    budget = int(rng.integers(0, 3 * start.size + 1))
    order, complete = ranking_sweep._resort(start, starts, key, budget)
    numpy_order, numpy_complete = ranking_sweep._resort_numpy(start, starts, key, budget)
    assert numpy_complete == complete
    if complete:
        np.testing.assert_array_equal(numpy_order, order)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 12),
    st.integers(1, 6),
    st.sampled_from([0.0, 1e-13, 1e-3]),
    st.integers(0, 60),
)
def test_uncompiled_simplex_qp_takes_the_compiled_steps_to_the_bit(seed, k, d, tol, steps):
    # the 1-slack planes' QP in numpy: the same pairwise steps from the same warm start, so the
    # same mu and gradient to the bit (ties between planes, zero planes, singular Gram matrices)
    rng = np.random.default_rng(seed)
    G = rng.integers(-2, 3, size=(k, d)) * rng.choice([1.0, 0.1, 3.0], size=(k, d))
    G[rng.random(k) < 0.2] = 0.0
    Q = G @ G.T
    c = rng.integers(0, 4, size=k) * rng.choice([1.0, 0.3], size=k)
    mu = rng.random(k) * (rng.random(k) < 0.6)
    mu = mu / mu.sum() if mu.sum() > 0 else np.eye(k)[rng.integers(0, k)]
    mu_numpy, grad, grad_numpy = mu.copy(), np.full(k, np.nan), np.full(k, np.nan)
    one_slack._simplex_qp(Q, c, mu, tol, steps, grad)
    taken = one_slack._simplex_qp_numpy(Q, c, mu_numpy, tol, steps, grad_numpy)
    assert 0 <= taken <= steps
    for a, b in ((mu, mu_numpy), (grad, grad_numpy)):
        assert np.array_equal(a, b) and np.array_equal(np.signbit(a), np.signbit(b))


def test_uncompiled_simplex_qp_and_pair_sums_give_the_compiled_ranking_optimum(monkeypatch):
    # a one-slack ranking fit whose planes' QP, pair sweeps and certificate sums run in numpy
    # (a cold first call's path) takes the compiled steps: the same w and certificate to the bit
    # (more than DIRECT_PAIRS pairs: solved by the planes; its first finish window's sides are
    # wrong, a gap the certificate no longer retries with Dot2: the numpy Dot2 and |M|^T |v|
    # are compared with the compiled ones above, not here)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(800, 12))
    y = np.minimum(3, np.floor(np.abs(X[:, 0] + 0.5 * rng.normal(size=800)) * 2)).astype(int)
    groups = np.repeat(np.arange(40), 20)
    for module in (ranking_sweep, _numerics, rigorous):
        monkeypatch.setattr(module, "uncompiled", lambda kernel, rows, budget: False)
    warm = qpsvm.RankingSVM(X, y=y, groups=groups, C=0.1).solve(method="one_slack")
    ran = []
    equivalent = one_slack._simplex_qp_numpy
    monkeypatch.setattr(one_slack, "_simplex_qp_numpy", lambda *a: ran.append(1) or equivalent(*a))
    sums = ranking_sweep._sums_numpy
    monkeypatch.setattr(ranking_sweep, "_sums_numpy", lambda *a: ran.append(2) or sums(*a))
    for module in (one_slack, ranking_sweep, _numerics):
        monkeypatch.setattr(module, "uncompiled", lambda kernel, rows, budget: True)
    # (the plain products' BLAS fallback is not the compiled products' floats: not here)
    magnitude_kernels = (rigorous._abs_columns, rigorous._abs_rows)
    monkeypatch.setattr(rigorous, "uncompiled", lambda kernel, *_: kernel in magnitude_kernels)
    cold = qpsvm.RankingSVM(X, y=y, groups=groups, C=0.1).solve(method="one_slack")
    assert set(ran) == {1, 2} and cold.certificate.passed
    np.testing.assert_array_equal(cold.w, warm.w)
    assert (cold.certificate.lower, cold.certificate.upper) == (
        warm.certificate.lower,
        warm.certificate.upper,
    )


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 8), st.integers(1, 12), st.booleans())
def test_uncompiled_pair_sums_equal_the_compiled_sweeps_to_the_bit(seed, queries, most, monotone):
    # the ranking sweep's pair counts and sums in numpy, level by level over every query at
    # once: the same counts and the same floats (ties between keys, zeros of both signs, queries
    # of one item or one level, levels that some queries lack)
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, most + 1, size=queries)
    ids = np.repeat(rng.permutation(queries), sizes)
    relevance = rng.integers(0, 4, size=ids.size) * rng.choice([1.0, 2.5], size=ids.size)
    lay = ranking_sweep.layout(relevance, ids)
    b = rng.integers(-3, 4, size=ids.size) * rng.choice([1.0, 0.1, 1e-17], size=ids.size)
    b[rng.random(ids.size) < 0.2] = -0.0
    a = b - 1.0 if monotone else rng.integers(-3, 4, size=ids.size) * 0.5
    by_b = ranking_sweep.sorted_by_query(lay, b)
    by_a = by_b if monotone else ranking_sweep.sorted_by_query(lay, a)
    n = ids.size
    compiled = [np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(n), np.zeros(n)]
    numpy = [x.copy() for x in compiled]
    items, keys = ranking_sweep._scratch(lay)
    ranking_sweep._sums(lay.starts, lay.level, a, b, by_a, by_b, *compiled, items, keys)
    ranking_sweep._sums_numpy(lay.starts, lay.level, a, b, by_a, by_b, *numpy)
    for x, y in zip(compiled, numpy, strict=True):
        assert np.array_equal(x, y) and np.array_equal(np.signbit(x), np.signbit(y))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(1, 5), st.integers(1, 7))
def test_uncompiled_viterbi_decodes_the_compiled_states(seed, sequences, states, longest):
    # the chain's Viterbi in numpy, the sequences of each length at once (one alone as the
    # sequential pass calls it): the same states as the compiled pass, ties (equal sums, zeros
    # of both signs) to the first maximum as its comparisons
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, longest + 1, size=sequences)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    unary = rng.integers(-2, 3, size=(offsets[-1], states)) * rng.choice([1.0, 0.5, -0.0])
    pairwise = rng.integers(-2, 3, size=(states, states)) * rng.choice([1.0, 0.25])
    numpy = chain._viterbi_numpy(unary, pairwise, offsets)
    alone = [
        chain._viterbi_numpy(unary[a:b], pairwise, np.array([0, b - a]))
        for a, b in itertools.pairwise(offsets)
    ]
    np.testing.assert_array_equal(np.concatenate(alone), numpy)
    compiled = np.empty(offsets[-1], dtype=np.int64)
    back = np.zeros((longest, states), dtype=np.int64)
    chain._viterbi_batch(
        unary, pairwise, offsets, compiled, back, np.empty(states), np.empty(states)
    )
    np.testing.assert_array_equal(numpy, compiled)


def test_uncompiled_plane_products_give_the_compiled_structural_optimum(monkeypatch, caplog):
    # a structural fit whose plane products and Viterbi run in numpy (a cold first call's path)
    # takes the same steps as the compiled one: the same w and certificate to the bit (logged
    # at INFO, whose rounds' violations take the working-set slacks)
    caplog.set_level(logging.INFO, logger="qpsvm")
    data = make_chains(n_sequences=30, n_features=6, n_states=3, random_state=0)
    model = ChainModel(data.n_features, data.n_states)
    warm = qpsvm.StructuralSVM(model, data.X, data.Y, C=0.1).solve()
    ran = []
    for module, name in [
        (cutting_plane, "_dots_numpy"),
        (cutting_plane, "_expand_numpy"),
        (cutting_plane, "_block_values_numpy"),
        (chain, "_viterbi_numpy"),
    ]:
        equivalent = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, f=equivalent: ran.append(f) or f(*a))
    monkeypatch.setattr(cutting_plane, "uncompiled", lambda kernel, rows, budget: True)
    monkeypatch.setattr(chain, "uncompiled", lambda kernel, rows, budget: True)
    cold = qpsvm.StructuralSVM(model, data.X, data.Y, C=0.1).solve()
    assert len({id(f) for f in ran}) == 4 and cold.certificate.passed
    np.testing.assert_array_equal(cold.w, warm.w)
    assert (cold.certificate.lower, cold.certificate.upper) == (
        warm.certificate.lower,
        warm.certificate.upper,
    )


def test_working_set_slacks_are_the_rounds_log_alone(monkeypatch, caplog):
    # the rounds' violations (every block's working-set slack, a kernel of its own) are
    # computed for the INFO log only: without it a fit neither computes nor compiles them
    caplog.set_level(logging.WARNING, logger="qpsvm")
    data = make_chains(n_sequences=10, n_features=4, n_states=3, random_state=0)
    model = ChainModel(data.n_features, data.n_states)
    monkeypatch.setattr(cutting_plane._Pool, "block_slacks", None)
    assert qpsvm.StructuralSVM(model, data.X, data.Y, C=0.1).solve().certificate.passed


@pytest.mark.parametrize("intercept", [True, False])
@pytest.mark.parametrize("sparse", [True, False])
def test_dual_matrices_state_the_dual(intercept, sparse):
    # rows: F^T (y o alpha) - t = 0 (F = X, linear kernel), y.alpha = 0, -alpha <= 0,
    # alpha <= C s; P the identity on t, q = (-m, 0): the dual written out by hand
    X, y = random_problem(2, n=7, d=3)
    X[0, 1] = 0.0
    s, m = np.array([1.0, 0.5, 0.0, 2.0, 1.0, 1.0, 0.5]), np.linspace(0.5, 1.5, 7)
    data = sp.csr_matrix(X) if sparse else X
    f = qpsvm.SoftMarginDual(data, y, C=1.5, fit_intercept=intercept, sample_weight=s, margin=m)
    P, q, A, b, zero = direct._dual_matrices(f)
    n, d = X.shape
    yy = np.where(y > 0, 1.0, -1.0)
    rows = [np.hstack([X.T * yy, -np.eye(d)])]
    if intercept:
        rows.append(np.r_[yy, np.zeros(d)][None, :])
    rows += [np.hstack([-np.eye(n), np.zeros((n, d))]), np.hstack([np.eye(n), np.zeros((n, d))])]
    np.testing.assert_array_equal(A.toarray(), np.vstack(rows))
    assert zero == d + int(intercept)
    np.testing.assert_array_equal(P.toarray(), np.diag(np.r_[np.zeros(n), np.ones(d)]))
    np.testing.assert_array_equal(q, np.r_[-m, np.zeros(d)])
    np.testing.assert_array_equal(b, np.r_[np.zeros(zero + n), 1.5 * s])


@pytest.mark.parametrize("intercept", [True, False])
def test_positive_definite_gram_states_the_dual_over_alpha(intercept):
    # a positive definite rbf Gram matrix: P = diag(y) K diag(y) (its upper triangle, as
    # Clarabel reads P) over alpha alone; rows y.alpha = 0, -alpha <= 0, alpha <= C s
    X, y = random_problem(3, n=8, d=3)
    f = qpsvm.SoftMarginDual(X, y, C=1.5, kernel="rbf", gamma=0.5, fit_intercept=intercept)
    P, q, A, b, zero = direct._dual_matrices(f)
    n = X.shape[0]
    yy = np.where(y > 0, 1.0, -1.0)
    np.testing.assert_array_equal(P.toarray(), np.triu(f.gram() * np.outer(yy, yy)))
    rows = ([yy[None, :]] if intercept else []) + [-np.eye(n), np.eye(n)]
    np.testing.assert_array_equal(A.toarray(), np.vstack(rows))
    assert zero == int(intercept)
    np.testing.assert_array_equal(q, -np.ones(n))
    np.testing.assert_array_equal(b, np.r_[np.zeros(zero + n), 1.5 * np.ones(n)])


def test_singular_gram_states_the_dual_through_its_factor():
    # a duplicated point makes K singular (its Cholesky factorization fails): the dual keeps
    # t = F^T (y o alpha) for the factor F F^T = K of kernels.gram_factor
    X, y = random_problem(3, n=8, d=3)
    X[1], y[1] = X[0], y[0]
    f = qpsvm.SoftMarginDual(X, y, C=1.5, kernel="rbf", gamma=0.5)
    P, _, A, _, zero = direct._dual_matrices(f)
    k = zero - 1
    assert 0 < k < 8 and A.shape == (k + 1 + 16, 8 + k)
    np.testing.assert_array_equal(P.toarray(), np.diag(np.r_[np.zeros(8), np.ones(k)]))


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
@pytest.mark.parametrize("intercept", [True, False])
@pytest.mark.parametrize("duplicate", [False, True])
def test_direct_dual_has_the_primal_optimum(kernel, intercept, duplicate):
    # strong duality: the dual solved from its matrices (over alpha alone for a positive
    # definite Gram matrix, through a factor for a singular one) and the CVXPY model (the
    # statement of the problem) enclose the same optimum, each certified at 1e-9
    X, y = random_problem(4, n=60, d=3)
    if duplicate:
        X[1], y[1] = X[0], y[0]
    f = qpsvm.SoftMarginDual(X, y, C=2.0, kernel=kernel, gamma=0.5, fit_intercept=intercept)
    sol = direct.solve_dual_direct(f, 1e-9)
    assert sol is not None and sol.certificate.passed and f._model is None
    reference = qpsvm.SoftMarginDual(
        X, y, C=2.0, kernel=kernel, gamma=0.5, fit_intercept=intercept
    ).solve(method="full")
    assert reference.certificate.passed
    assert sol.certificate.lower <= reference.certificate.upper
    assert reference.certificate.lower <= sol.certificate.upper


def test_full_qp_first_only_before_the_smo_loop_is_compiled(monkeypatch):
    # (the suite's own setting, 0 calls, is replaced by a budget of 3)
    monkeypatch.setattr(smo, "FULL_QP_FIRST_CALLS", 3)
    monkeypatch.setattr(smo, "_full_qp_calls", [0])
    monkeypatch.setattr(smo, "compiled", lambda dispatcher: False)
    assert not smo.full_qp_first(smo.FULL_QP_FIRST_SAMPLES + 1)
    assert [smo.full_qp_first(100) for _ in range(4)] == [True, True, True, False]
    monkeypatch.setattr(smo, "_full_qp_calls", [0])
    monkeypatch.setattr(smo, "compiled", lambda dispatcher: True)
    assert not smo.full_qp_first(100)


def test_uncompiled_equivalents_run_until_their_rows_would_pay_for_a_compile(monkeypatch):
    monkeypatch.setattr(_numerics, "_uncompiled_rows", {})
    monkeypatch.setattr(_numerics, "compiled", lambda kernel: False)
    kernel, other = _numerics._dense_tdot2, _numerics._sum2
    assert _numerics.uncompiled(kernel, 90, 100)
    assert _numerics.uncompiled(kernel, 10, 100)
    assert not _numerics.uncompiled(kernel, 1, 100)  # the next call compiles the kernel
    assert not _numerics.uncompiled(other, 101, 100)  # a call larger than the budget at once
    assert _numerics.uncompiled(other, 100, 100)  # each kernel has its own budget
    monkeypatch.setattr(_numerics, "compiled", lambda kernel: True)
    assert not _numerics.uncompiled(other, 0, 100)


def test_uncompiled_equivalents_are_charged_a_floor_per_call(monkeypatch):
    # small calls (0 or 1 row) against a large budget: the floor budget // UNCOMPILED_CALLS a
    # call ends the numpy equivalent after UNCOMPILED_CALLS calls, however small each one
    monkeypatch.setattr(_numerics, "_uncompiled_rows", {})
    monkeypatch.setattr(_numerics, "compiled", lambda kernel: False)
    monkeypatch.setattr(_numerics, "UNCOMPILED_CALLS", 8)
    kernel = _numerics._dense_tdot2
    assert all(_numerics.uncompiled(kernel, k % 2, 800) for k in range(8))
    assert not _numerics.uncompiled(kernel, 0, 800)
    assert _numerics.uncompiled(_numerics._sum2, 7, 7)  # a budget below the calls: no floor


COLD = """
import json
import numpy as np
import qpsvm
from qpsvm.solvers._online_kernels import smo_loop
rng = np.random.default_rng(0)
X = rng.normal(size=(300, 5)); y = np.where(X[:, 0] + 0.3 * rng.normal(size=300) > 0, 1, -1)
sol = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf", gamma=0.2, fit_intercept=False).solve()
lin = qpsvm.SoftMarginPrimal(X, y, C=1.0).solve()
print(json.dumps({
    "method": sol.method, "smo_compiled": bool(smo_loop.signatures), "linear_solver": lin.solver,
    "passed": [sol.certificate.passed, lin.certificate.passed],
    "rbf": [sol.certificate.lower, sol.certificate.upper],
    "linear": [lin.certificate.lower, lin.certificate.upper], "w": lin.w.tolist(),
}))
"""


def test_cold_first_call_returns_the_warm_optimum(tmp_path, monkeypatch):
    # a fresh process with an empty compile cache solves the rbf problem without intercept
    # (where numpy's SMO steps do not apply) as the full QP (the SMO loop is not compiled)
    # and the linear one by Clarabel (the box QPs' ascent is not
    # compiled) with the uncompiled sums; its enclosures hold the optimum the compiled paths
    # of this process certify
    env = {**os.environ, "QPSVM_CACHE_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", COLD], env=env, check=True, timeout=600, capture_output=True
    )
    cold = json.loads(out.stdout.decode().splitlines()[-1])
    assert cold["method"] == "qp" and not cold["smo_compiled"] and cold["passed"] == [True, True]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=300) > 0, 1, -1)
    warm = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf", gamma=0.2, fit_intercept=False).solve(
        method="working_set"
    )
    assert warm.solver == "smo" and warm.certificate.passed
    lower, upper = cold["rbf"]
    assert lower <= warm.certificate.upper and warm.certificate.lower <= upper
    # this process takes Clarabel too, so that only the sums differ between the two
    monkeypatch.setattr(direct, "uncompiled", lambda kernel, rows, budget: True)
    lin = qpsvm.SoftMarginPrimal(X, y, C=1.0).solve()
    assert cold["linear_solver"] == lin.solver == "CLARABEL"
    lower, upper = cold["linear"]
    assert lower <= lin.certificate.upper and lin.certificate.lower <= upper
    # the same solver in both processes: the uncompiled sums change no bit of the answer
    assert lin.certificate.lower == lower and lin.certificate.upper == upper
    np.testing.assert_array_equal(lin.w, cold["w"])


COLD_SPARSE = """
import json
import numpy as np
import scipy.sparse as sp
import qpsvm
from qpsvm import _numerics
from qpsvm.verify import ascent
rng = np.random.default_rng(0)
X = sp.random(5000, 500, density=0.02, format="csr", random_state=0)
y = np.where(X @ rng.normal(size=500) + 0.1 * rng.normal(size=5000) > 0, 1, -1)
ascent.ROUND_SOLVES = 0  # the finish's conjugate gradients wherever they suit
sol = qpsvm.SoftMarginPrimal(X, y, C=1.0).solve()
print(json.dumps({
    "solver": sol.solver, "passed": sol.certificate.passed,
    "bounds": [sol.certificate.lower, sol.certificate.upper], "w": sol.w.tolist(), "b": sol.b,
    "numpy": [id(k) in _numerics._uncompiled_rows for k in
              (ascent._free_cg, ascent.coordinate_expansion, ascent.coordinate_objectives,
               ascent._sweep_shrunk)],
    "compiled": [bool(k.signatures) for k in
                 (ascent._free_cg, ascent.coordinate_expansion, ascent.coordinate_objectives,
                  ascent._sweep_shrunk)],
    "compiles": compiled,
}))
"""


def test_cold_sparse_call_with_more_rows_than_features_equals_the_compiled_one(
    tmp_path, monkeypatch
):
    # a fresh process with an empty compile cache runs the finish's conjugate gradients, the
    # ascent's steering passes and its sweeps of the shrunk coordinates as their numpy
    # equivalents (none of the four compiled),
    # the same operations in the same order: the same certified answer to the bit as this
    # process's compiled paths. Both processes take the conjugate gradients wherever they
    # suit (ROUND_SOLVES = 0): with nearly as many free rows as the columns they touch the
    # finish would otherwise choose the dense factor at once (the choice is not what is tested).
    # What the call compiles is the ascent's epochs with the CSR rows' two accessors written
    # into them: none of numba's helpers (builtin min and max, 0.06 s) and no call level of its
    # own between the epochs and a row (two overloads that only forwarded, 0.15 s)
    monkeypatch.setattr(ascent, "ROUND_SOLVES", 0)
    env = {**os.environ, "QPSVM_CACHE_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", COMPILES + COLD_SPARSE],
        env=env,
        check=True,
        timeout=600,
        capture_output=True,
    )
    cold = json.loads(out.stdout.decode().splitlines()[-1])
    assert cold["passed"] and cold["numpy"] == [True] * 4 and cold["compiled"] == [False] * 4
    assert sorted(cold["compiles"]) == [
        "qpsvm._rows._row_axpy_typed.<locals>.sparse",
        "qpsvm._rows._row_dot_typed.<locals>.sparse",
        "qpsvm.verify.ascent.shrinking_epochs",
    ]
    rng = np.random.default_rng(0)
    X = sp.random(5000, 500, density=0.02, format="csr", random_state=0)
    y = np.where(X @ rng.normal(size=500) + 0.1 * rng.normal(size=5000) > 0, 1, -1)
    warm = qpsvm.SoftMarginPrimal(X, y, C=1.0).solve()
    assert warm.solver == cold["solver"] and warm.certificate.passed
    assert [warm.certificate.lower, warm.certificate.upper] == cold["bounds"]
    np.testing.assert_array_equal(warm.w, cold["w"])
    assert warm.b == cold["b"]


@pytest.mark.parametrize(("C", "weighted"), [(0.1, False), (1.0, True), (100.0, False)])
def test_numpy_smo_steps_start_the_same_certified_optimum(C, weighted, monkeypatch):
    # before the SMO loop is compiled, a kernel problem above the full QP's bound starts from
    # libsvm's steps in numpy on the Gram matrix: a start of the working set like the compiled
    # loop's, whose certified enclosure holds the compiled path's optimum
    X, y = random_problem(5, n=150, d=4)
    weights = np.linspace(0.5, 2.0, 150) if weighted else None
    runs = []
    original = smo._smo_numpy

    def spy(*args):
        out = original(*args)
        runs.append((*out, args[6]))  # steps, violation, tol
        return out

    def build():
        return qpsvm.SoftMarginDual(X, y, C=C, kernel="rbf", gamma=0.5, sample_weight=weights)

    warm = build().solve()
    assert warm.certificate.passed and not runs
    monkeypatch.setattr(smo, "uncompiled", lambda kernel, rows, budget: True)
    monkeypatch.setattr(smo, "_smo_numpy", spy)
    cold = build().solve()
    assert cold.certificate.passed and cold.method == "working_set" and runs
    assert cold.certificate.lower <= warm.certificate.upper
    assert warm.certificate.lower <= cold.certificate.upper
    # each run ends below its tolerance: the KKT violation over I_up and I_low
    assert runs[0][0] > 0 and all(violation < tol for _, violation, tol in runs)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 6),
    k=st.integers(2, 9),
    scale=st.sampled_from([1e-3, 1.0, 1e3]),
)
def test_crammer_singer_projection_meets_the_sum_at_its_one_threshold(seed, n, k, scale):
    # the projection onto sum_m a_m = 0, a_m <= 0 off the label, a_y <= c is min(caps, v + beta)
    # at the beta where the sum is 0: found here apart, by bisection on the sum (decreasing in
    # beta), to the last bits
    rng = np.random.default_rng(seed)
    V = scale * rng.normal(size=(n, k))
    cap = scale * rng.uniform(0.0, 2.0, n) * (rng.random(n) > 0.2)
    y = rng.integers(0, k, n)
    A = warm_start._cs_project(V, cap, y)
    caps = np.zeros((n, k))
    caps[np.arange(n), y] = cap
    assert np.all(A <= caps)
    bound = 64 * k * np.finfo(float).eps * (np.abs(V).max() + cap.max() + scale)
    for i in range(n):
        lo, hi = -np.abs(V[i]).max() - cap[i] - 1.0, np.abs(V[i]).max() + cap[i] + 1.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if np.minimum(caps[i], V[i] + mid).sum() < 0.0 else (lo, mid)
        np.testing.assert_allclose(A[i], np.minimum(caps[i], V[i] + lo), rtol=0, atol=bound)
        assert abs(A[i].sum()) <= bound


@pytest.mark.parametrize("variant", ["crammer_singer", "weston_watkins"])
@pytest.mark.parametrize(
    ("n", "d", "k", "C", "weighted"),
    [(1000, 20, 5, 1.0, False), (200, 25, 4, 100.0, True), (300, 50, 10, 0.01, True)],
)
def test_multiclass_gradient_start_reaches_the_compiled_optimum(
    variant, n, d, k, C, weighted, monkeypatch
):
    # before its descent is compiled, a multiclass SVM starts from numpy's accelerated gradient
    # steps over every example at once: another start, from which the working set reaches a
    # certified optimum whose enclosure holds the compiled path's (weights some of them 0).
    # The floats are the same where both end in the same support set's KKT point (37 of 40
    # random Crammer-Singer problems, 35 of 40 Weston-Watkins; the others apart by 2e-13 to
    # 8e-8, each certified, as numpy's SMO steps start a kernel problem)
    rng = np.random.default_rng(k)
    X = rng.normal(size=(n, d))
    y = np.argmax(X[:, :k] + 0.5 * rng.normal(size=(n, k)), axis=1)
    weights = rng.uniform(0.0, 2.0, n) * (rng.random(n) > 0.1) if weighted else None

    def build():
        return qpsvm.MulticlassSVM(X, y, C=C, variant=variant, sample_weight=weights)

    warm = build().solve()
    monkeypatch.setattr(warm_start, "uncompiled", lambda kernel, rows, budget: True)
    cold = build().solve()
    assert warm.info["start"] != "multiclass_gradient"
    assert cold.info["start"] in ("multiclass_gradient", "kkt")
    assert warm.certificate.passed and cold.certificate.passed
    assert cold.certificate.lower <= warm.certificate.upper
    assert warm.certificate.lower <= cold.certificate.upper


@pytest.mark.parametrize("variant", ["crammer_singer", "weston_watkins"])
def test_multiclass_gradient_start_only_where_its_steps_fit_the_budget(variant, monkeypatch):
    # its steps are charged as if all were taken: 1000 x 20 with 5 classes fits, 2000 x 30
    # with 8 does not (the descent is compiled), nor does a warm start or sparse rows
    monkeypatch.setattr(warm_start, "uncompiled", lambda kernel, rows, budget: rows <= budget)
    methods = []
    for n, d, k, sparse in [(1000, 20, 5, False), (2000, 30, 8, False), (1000, 20, 5, True)]:
        rng = np.random.default_rng(0)
        X = rng.normal(size=(n, d))
        y = np.argmax(X[:, :k] + 0.5 * rng.normal(size=(n, k)), axis=1)
        f = qpsvm.MulticlassSVM(sp.csr_matrix(X) if sparse else X, y, C=1.0, variant=variant)
        start = warm_start.multiclass_dual(f)
        methods.append(start.method)
        if not sparse and start.method == "multiclass_gradient":
            again = warm_start.multiclass_dual(f, warm=start.candidate)
            methods.append(again.method)
    assert methods == [
        "multiclass_gradient",
        "multiclass_dual",
        "multiclass_dual",
        "multiclass_dual",
    ]


#: A cold process's record of what numba compiles (the functions' qualified names, one per
#: signature), from numba's ``numba:compile`` events.
COMPILES = """
import json
from numba.core import event

compiled = []


class Compiles(event.Listener):
    def on_start(self, ev):
        pass

    def on_end(self, ev):
        f = ev.data["dispatcher"].py_func
        compiled.append(f.__module__ + "." + f.__qualname__)


event.register("numba:compile", Compiles())
"""

COLD_RBF = (
    COMPILES
    + """
import numpy as np
import qpsvm
from qpsvm.solvers._online_kernels import smo_loop
out = []
for n in (300, 800):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 5)); y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1, -1)
    sol = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf", gamma=0.2).solve()
    out.append({
        "method": sol.method, "solver": sol.solver, "smo_compiled": bool(smo_loop.signatures),
        "passed": sol.certificate.passed, "bounds": [sol.certificate.lower, sol.certificate.upper],
    })
print(json.dumps({"compiled": compiled, "calls": out}))
"""
)


def test_cold_kernel_calls_with_an_intercept_start_from_numpy_smo_steps(tmp_path):
    # a fresh process with an empty compile cache: 300 samples (within the full QP's bound)
    # and 800 (above it) start from numpy's SMO steps, the loop is not compiled, and each
    # certified enclosure holds the optimum of the compiled paths of this process; the Gram
    # matrices' distances and exponentials are numpy's, so that nothing compiles
    env = {**os.environ, "QPSVM_CACHE_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", COLD_RBF], env=env, check=True, timeout=600, capture_output=True
    )
    record = json.loads(out.stdout.decode().splitlines()[-1])
    assert record["compiled"] == []
    for n, cold in zip((300, 800), record["calls"], strict=True):
        assert cold["method"] == "working_set" and cold["solver"] == "smo"
        assert cold["passed"] and not cold["smo_compiled"]
        rng = np.random.default_rng(0)
        X = rng.normal(size=(n, 5))
        y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1, -1)
        warm = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf", gamma=0.2).solve()
        assert warm.certificate.passed
        lower, upper = cold["bounds"]
        assert lower <= warm.certificate.upper and warm.certificate.lower <= upper


#: The chain's, the one-slack ranking's and the multiclass fits (the dual coordinate descents of
#: both variants): run by a cold process and by this one.
FITS = """
import numpy as np
import qpsvm
from qpsvm.datasets import make_chains
from qpsvm.models import ChainModel


def fits():
    data = make_chains(n_sequences=30, n_features=6, n_states=3, random_state=0)
    chain = qpsvm.StructuralSVM(ChainModel(6, 3), data.X, data.Y, C=0.1).solve()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 25))
    y = np.minimum(3, np.floor(np.abs(X[:, 0] + 0.5 * rng.normal(size=200)) * 2)).astype(int)
    groups = np.repeat(np.arange(20), 10)
    rank = qpsvm.RankingSVM(X, y=y, groups=groups, C=0.1).solve(method="one_slack")
    labels = np.argmax(X[:, :4] + 0.5 * rng.normal(size=(200, 4)), axis=1)
    multiclass = [
        qpsvm.MulticlassSVM(X, labels, C=1.0, variant=variant).solve()
        for variant in ("crammer_singer", "weston_watkins")
    ]
    return chain, rank, *multiclass
"""

COLD_STRUCTURED = (
    FITS
    + COMPILES
    + """
answers = [[s.w.tolist(), s.certificate.lower, s.certificate.upper] for s in fits()]
print(json.dumps({"compiled": compiled, "answers": answers}))
"""
)


def test_cold_chain_ranking_and_multiclass_compile_only_qpsvms_kernels_and_the_warm_answer(
    tmp_path,
):
    # a fresh process with an empty compile cache: the structural chain's, the one-slack
    # ranking's kernels get their scratch arrays from their callers and compare scalars by
    # hand, so that a first call compiles none of numba's own helpers (np.empty, np.zeros,
    # np.arange, np.full, min, max: 0.2-0.4 s of each kind's cold call), and each of its own
    # for one signature (the multiclass fits start from numpy's gradient steps and compile
    # nothing); the chain's and the ranking's answers are this process's (compiled paths) to
    # the bit, the multiclass ones another start's: both enclosures hold the one optimum
    env = {**os.environ, "QPSVM_CACHE_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", COLD_STRUCTURED],
        env=env,
        check=True,
        timeout=600,
        capture_output=True,
    )
    cold = json.loads(out.stdout.decode().splitlines()[-1])
    assert cold["compiled"] and all(name.startswith("qpsvm.") for name in cold["compiled"])
    assert len(set(cold["compiled"])) == len(cold["compiled"])  # each for one signature
    namespace: dict = {}
    exec(FITS, namespace)
    fits = zip(namespace["fits"](), cold["answers"], strict=True)
    for k, (warm, (w, lower, upper)) in enumerate(fits):
        assert warm.certificate.passed
        if k < 2:
            np.testing.assert_array_equal(warm.w, w)
            assert (warm.certificate.lower, warm.certificate.upper) == (lower, upper)
        else:
            assert lower <= warm.certificate.upper and warm.certificate.lower <= upper


#: One-slack ranking on the cold kinds' scale (100 queries of 40 items, d = 40, graded:
#: 50,897 pairs, Dot2 and ``|M|^T |v|`` over them in its certificate), run cold and in this process.
RANKING = """
import numpy as np
import qpsvm


def ranking_fit():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 40))
    utility = X @ rng.normal(size=40) / np.sqrt(40) + 0.5 * rng.normal(size=4000)
    y, groups = np.digitize(utility, [-0.5, 0.8]), np.repeat(np.arange(100), 40)
    return qpsvm.RankingSVM(X, y=y, groups=groups, C=0.01).solve(method="one_slack")
"""

COLD_RANKING = (
    RANKING
    + COMPILES
    + """
fit = ranking_fit()
print(json.dumps({"compiled": compiled, "answer": [fit.w.tolist(), fit.certificate.lower,
                  fit.certificate.upper]}))
"""
)


def test_cold_first_ranking_call_compiles_nothing_and_returns_the_compiled_answer(
    tmp_path, monkeypatch
):
    # a fresh process with an empty compile cache: the first one-slack ranking call runs its
    # planes' QP, pair sweeps, Dot2 over the pair rows and |M|^T |v| in numpy (numba's
    # target context is not even built: 0.6-0.7 s of the call), and its answer is the
    # compiled paths' to the bit
    env = {**os.environ, "QPSVM_CACHE_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", COLD_RANKING], env=env, check=True, timeout=600, capture_output=True
    )
    cold = json.loads(out.stdout.decode().splitlines()[-1])
    assert cold["compiled"] == []
    for module in (ranking_sweep, _numerics, rigorous):
        monkeypatch.setattr(module, "uncompiled", lambda kernel, rows, budget: False)
    namespace: dict = {}
    exec(RANKING, namespace)
    warm = namespace["ranking_fit"]()
    w, lower, upper = cold["answer"]
    assert warm.certificate.passed
    np.testing.assert_array_equal(warm.w, w)
    assert (warm.certificate.lower, warm.certificate.upper) == (lower, upper)


LINEAR_IMPORTS = """
import sys
import numpy as np
import qpsvm
on_import = [m for m in ("scipy.sparse.linalg", "scipy.sparse.csgraph") if m in sys.modules]
rng = np.random.default_rng(0)
X = rng.normal(size=(200, 5))
y = np.argmax(X[:, :3] + 0.5 * rng.normal(size=(200, 3)), axis=1)
assert qpsvm.MulticlassSVM(X, y, C=1.0).solve().certificate.passed
labels = np.where(y == 0, 1, -1)
assert qpsvm.SoftMarginPrimal(X, labels, C=1.0).solve().certificate.passed
kernel = [m for m in ("qpsvm.solvers.kernel_start", "qpsvm.solvers.smo") if m in sys.modules]
print(on_import, kernel)
"""


def test_import_and_linear_calls_leave_unused_modules_unimported():
    # scipy's sparse solvers and graph routines (0.04-0.07 s of the import) are imported by
    # the generic QP's certificate on first use, and the kernel start with the SMO loop's
    # module (0.04-0.07 s of a first multiclass or binary working-set call) by kernel problems
    out = subprocess.run(
        [sys.executable, "-c", LINEAR_IMPORTS], check=True, timeout=600, capture_output=True
    )
    assert out.stdout.decode().split() == ["[]", "[]"]


SERIAL_CHAIN = """
import sys
import qpsvm
from qpsvm.datasets import make_chains
from qpsvm.models import ChainModel
data = make_chains(n_sequences=10, n_features=4, n_states=3, random_state=0)
assert qpsvm.StructuralSVM(ChainModel(4, 3), data.X, data.Y, C=0.1).solve().certificate.passed
print("joblib" in sys.modules)
"""


def test_a_chain_fit_without_workers_does_not_import_joblib():
    # joblib (with multiprocessing, asyncio and psutil: 0.04 s of a first call) is imported by
    # the oracle calls that run in parallel only, not by every oracle call
    out = subprocess.run(
        [sys.executable, "-c", SERIAL_CHAIN], check=True, timeout=600, capture_output=True
    )
    assert out.stdout.decode().split() == ["False"]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1), st.integers(1, 40), st.sampled_from([1e-16, 1e-8, 1e-3, 0.3, 5.0])
)
def test_uncompiled_rebalance_is_the_compiled_ones_point_to_the_bit(seed, n, scale):
    # the balance restored by the same shift of the same free coordinates, the same floats,
    # or refused by both (every free one or every roomy one pushed out of the box)
    from qpsvm.verify import binary

    rng = np.random.default_rng(seed)
    upper = rng.choice([1.0, 0.3, 7.0], size=n)
    a = upper * rng.random(n)
    a[rng.random(n) < 0.3] = 0.0
    hair = rng.random(n) < 0.2
    a[hair] = upper[hair] * (1.0 - 1e-12)  # free by a hair: only the roomy ones can move
    bound = rng.random(n) < 0.2
    a[bound] = upper[bound]
    y = rng.choice([-1.0, 1.0], size=n)
    excess = scale * rng.normal()
    moved, compiled_out = binary._rebalance(a, upper, y, excess)
    try:
        binary.uncompiled = lambda kernel, rows, budget: True
        numpy_out = binary.rebalance(a, upper, y, excess)
    finally:
        binary.uncompiled = _numerics.uncompiled
    assert moved == (numpy_out is not None)
    if moved:
        assert np.array_equal(compiled_out, numpy_out)
        assert np.array_equal(binary.rebalance(a, upper, y, excess), numpy_out)
    else:
        assert binary.rebalance(a, upper, y, excess) is None

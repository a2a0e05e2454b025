r"""MAP inference in pairwise Markov random fields: exact on forests, dual decomposition on
loopy graphs.

A pairwise model over ``V`` nodes with ``k`` states each, edges :math:`e = (u, v)`, unary scores
:math:`\theta_v(s)` (``unary[v, s]``) and pairwise scores :math:`\theta_e(a, b)`
(``pairwise[e, a, b]``, ``a`` the state of ``u``, ``b`` of ``v``) scores a labelling ``x`` by

.. math:: E(x) = \sum_v \theta_v(x_v) + \sum_{e=(u,v)} \theta_e(x_u, x_v).

* On a forest (no cycle), :func:`map_inference` maximises ``E`` exactly by max-product
  (dynamic programming from the leaves to a root of each tree, then back), ``O(V k^2)``.
* On a graph with cycles it solves the linear-programming relaxation over the local polytope by
  dual decomposition (Komodakis, Paragios & Tziritas, "MRF optimization via dual decomposition",
  ICCV 2007; Sontag, Globerson & Jaakkola, "Introduction to dual decomposition for inference",
  2011). The edges are split into forests :math:`F_1..F_T` (:func:`forest_partition`); forest
  ``t`` gets the unary scores :math:`\theta_v / T + \lambda^t_v` with
  :math:`\sum_t \lambda^t_v = 0`, and for *every* :math:`\lambda`

  .. math:: \max_x E(x) \;\le\; \max_{\mu \in \mathbb L} \theta\cdot\mu \;\le\;
            B(\lambda) = \sum_t \max_x \Big[\sum_v (\theta_v/T + \lambda^t_v)(x_v)
            + \sum_{e \in F_t}\theta_e(x_e)\Big],

  each maximum exact by max-product. :math:`B` is minimised by projected subgradient steps
  (Polyak's step towards the best labelling found). When the forests agree on one labelling,
  it attains the bound: it is an exact maximiser and the relaxation is tight. Otherwise the
  result carries the best labelling found (a lower bound) and :math:`B` (an upper bound on the
  relaxation's optimum, hence on the exact one).

The structural-SVM certificate uses the upper bound as the slack of a relaxed oracle
(:class:`MapResult`), as in Finley & Joachims, "Training structural SVMs when exact inference is
intractable", ICML 2008.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from qpsvm._jit import ENTRY
from qpsvm._numerics import sum_error, sum_upper, up
from qpsvm.exceptions import InvalidInputError

__all__ = [
    "MapResult",
    "decomposition_bound",
    "energy",
    "forest_partition",
    "is_forest",
    "map_inference",
]

#: Subgradient iterations of dual decomposition at most.
DD_MAX_ITER = 2000
#: Iterations without a better bound after which the Polyak step is halved.
DD_PATIENCE = 10
#: Dual decomposition stops when its bound is within this relative distance of the best
#: labelling's score (ties can keep the forests from agreeing on a labelling that is optimal).
DD_TOLERANCE = 1e-12


@dataclass(frozen=True)
class MapResult:
    """The result of :func:`map_inference`.

    Attributes
    ----------
    labels : ndarray of int64, shape (V,)
        The best labelling found.
    value : float
        Its score :math:`E(x)`.
    bound : float
        An upper bound on :math:`\\max_x E(x)` (and on the local-polytope relaxation): by dual
        decomposition, proven for the potentials as given, rounding included
        (:func:`decomposition_bound`); on a forest, max-product's value, which the exact
        maximum exceeds by at most the float sum's rounding.
    exact : bool
        Whether ``labels`` is proven a maximiser (a forest, or dual decomposition agreed).
    """

    labels: np.ndarray
    value: float
    bound: float
    exact: bool


# ------------------------------------------------------------------------------ kernels
@numba.njit(**ENTRY, nogil=True)
def _forest_structure(n_nodes, edges, members):  # pragma: no cover - compiled
    """Breadth-first order of the forest formed by the edges ``members`` (indices into
    ``edges``): ``order``, each node's ``parent`` and parent edge ``pedge`` (-1 at roots), and
    whether the graph is a forest at all (the last return value)."""
    deg = np.zeros(n_nodes + 1, dtype=np.int64)
    for e in members:
        deg[edges[e, 0] + 1] += 1
        deg[edges[e, 1] + 1] += 1
    ptr = np.cumsum(deg)
    fill = ptr[:-1].copy()
    adj_node = np.empty(ptr[-1], dtype=np.int64)
    adj_edge = np.empty(ptr[-1], dtype=np.int64)
    for e in members:
        u, v = edges[e, 0], edges[e, 1]
        adj_node[fill[u]], adj_edge[fill[u]] = v, e
        fill[u] += 1
        adj_node[fill[v]], adj_edge[fill[v]] = u, e
        fill[v] += 1
    order = np.empty(n_nodes, dtype=np.int64)
    parent = np.full(n_nodes, -1, dtype=np.int64)
    pedge = np.full(n_nodes, -1, dtype=np.int64)
    seen = np.zeros(n_nodes, dtype=np.bool_)
    head = 0
    tail = 0
    for root in range(n_nodes):
        if seen[root]:
            continue
        seen[root] = True
        order[tail] = root
        tail += 1
        while head < tail:
            u = order[head]
            head += 1
            for p in range(ptr[u], ptr[u + 1]):
                v, e = adj_node[p], adj_edge[p]
                if e == pedge[u]:
                    continue
                if seen[v]:
                    return order, parent, pedge, False
                seen[v] = True
                parent[v] = u
                pedge[v] = e
                order[tail] = v
                tail += 1
    return order, parent, pedge, True


@numba.njit(**ENTRY, nogil=True)
def _tree_map(unary, edges, pairwise, order, parent, pedge, out, belief, arg):  # pragma: no cover
    """Max-product on a forest given by :func:`_forest_structure`; writes the maximiser to
    ``out`` and returns the maximum. Ties go to the smallest state."""
    n_nodes, k = unary.shape
    for v in range(n_nodes):
        for state in range(k):
            belief[v, state] = unary[v, state]
    for idx in range(n_nodes - 1, -1, -1):
        v = order[idx]
        u = parent[v]
        if u < 0:
            continue
        e = pedge[v]
        forward = edges[e, 0] == u
        for a in range(k):
            best = -np.inf
            best_state = 0
            for b in range(k):
                t = pairwise[e, a, b] if forward else pairwise[e, b, a]
                val = belief[v, b] + t
                if val > best:
                    best = val
                    best_state = b
            arg[v, a] = best_state
            belief[u, a] += best
    total = 0.0
    for idx in range(n_nodes):
        v = order[idx]
        u = parent[v]
        if u < 0:
            state = 0
            for s in range(1, k):
                if belief[v, s] > belief[v, state]:
                    state = s
            out[v] = state
            total += belief[v, state]
        else:
            out[v] = arg[v, out[u]]
    return total


@numba.njit(**ENTRY, nogil=True)
def _energy(unary, edges, pairwise, labels):  # pragma: no cover - compiled
    total = 0.0
    for v in range(unary.shape[0]):
        total += unary[v, labels[v]]
    for e in range(edges.shape[0]):
        total += pairwise[e, labels[edges[e, 0]], labels[edges[e, 1]]]
    return total


@numba.njit(**ENTRY, nogil=True)
def _partition(n_nodes, edges):  # pragma: no cover - compiled
    """First-fit split of the edges into forests (a union-find per forest)."""
    n_edges = edges.shape[0]
    forest = np.empty(n_edges, dtype=np.int64)
    roots = np.empty((0, n_nodes), dtype=np.int64)
    n_forests = 0
    for e in range(n_edges):
        u, v = edges[e, 0], edges[e, 1]
        placed = False
        for t in range(n_forests):
            ru = u
            while roots[t, ru] != ru:
                roots[t, ru] = roots[t, roots[t, ru]]
                ru = roots[t, ru]
            rv = v
            while roots[t, rv] != rv:
                roots[t, rv] = roots[t, roots[t, rv]]
                rv = roots[t, rv]
            if ru != rv:
                roots[t, ru] = rv
                forest[e] = t
                placed = True
                break
        if not placed:
            grown = np.empty((n_forests + 1, n_nodes), dtype=np.int64)
            for t in range(n_forests):
                for s in range(n_nodes):
                    grown[t, s] = roots[t, s]
            for s in range(n_nodes):
                grown[n_forests, s] = s
            grown[n_forests, u] = v
            roots = grown
            forest[e] = n_forests
            n_forests += 1
    return forest


@numba.njit(**ENTRY, nogil=True)
def _dual_decomposition(  # pragma: no cover - compiled
    unary, edges, pairwise, orders, parents, pedges, max_iter, patience, tolerance
):
    """Projected subgradient descent on :math:`B(\\lambda)` (see the module docstring).

    Returns the best labelling, its energy, the multipliers of the best bound and whether the
    forests agreed (then the last multipliers, where they agree)."""
    n_forests = orders.shape[0]
    n_nodes, k = unary.shape
    lam = np.zeros((n_forests, n_nodes, k))
    best_lam = np.zeros((n_forests, n_nodes, k))
    sub = np.empty((n_forests, n_nodes), dtype=np.int64)
    local = np.empty((n_nodes, k))
    belief = np.empty((n_nodes, k))
    arg = np.empty((n_nodes, k), dtype=np.int64)
    counts = np.empty((n_nodes, k))
    best_labels = np.zeros(n_nodes, dtype=np.int64)
    best_value = -np.inf
    best_bound = np.inf
    scale = 1.0
    stale = 0
    agreed = False
    for _ in range(max_iter):
        bound = 0.0
        for t in range(n_forests):
            for v in range(n_nodes):
                for s in range(k):
                    local[v, s] = unary[v, s] / n_forests + lam[t, v, s]
            bound += _tree_map(
                local, edges, pairwise, orders[t], parents[t], pedges[t], sub[t], belief, arg
            )
        for t in range(n_forests):
            value = _energy(unary, edges, pairwise, sub[t])
            if value > best_value:
                best_value = value
                for v in range(best_labels.shape[0]):
                    best_labels[v] = sub[t, v]
        if bound < best_bound:
            best_bound = bound
            best_lam[:, :, :] = lam
            stale = 0
        else:
            stale += 1
            if stale >= patience:
                scale *= 0.5
                stale = 0
        counts[:, :] = 0.0
        for t in range(n_forests):
            for v in range(n_nodes):
                counts[v, sub[t, v]] += 1.0
        norm = 0.0
        for t in range(n_forests):
            for v in range(n_nodes):
                for s in range(k):
                    g = (1.0 if sub[t, v] == s else 0.0) - counts[v, s] / n_forests
                    norm += g * g
        if norm == 0.0:
            agreed = True
            best_lam[:, :, :] = lam
            break
        if best_bound - best_value <= tolerance * max(1.0, abs(best_value)):
            break
        step = scale * (bound - best_value) / norm
        for t in range(n_forests):
            for v in range(n_nodes):
                for s in range(k):
                    g = (1.0 if sub[t, v] == s else 0.0) - counts[v, s] / n_forests
                    lam[t, v, s] -= step * g
    return best_labels, best_value, best_lam, agreed


# ------------------------------------------------------------------------------ python
def forest_partition(n_nodes: int, edges: np.ndarray) -> np.ndarray:
    """Split the edges into forests, first fit in edge order: the forest index of each edge.

    A forest (no cycle) gets one index, 0; a 4-connected grid given row by row gets two or three.
    """
    edges = np.ascontiguousarray(edges, dtype=np.int64).reshape(-1, 2)
    return _partition(int(n_nodes), edges)


def is_forest(n_nodes: int, edges: np.ndarray) -> bool:
    """Whether the undirected graph has no cycle (parallel edges count as a cycle)."""
    edges = np.ascontiguousarray(edges, dtype=np.int64).reshape(-1, 2)
    return bool(_forest_structure(int(n_nodes), edges, np.arange(edges.shape[0]))[3])


def energy(unary: np.ndarray, edges: np.ndarray, pairwise: np.ndarray, labels: np.ndarray) -> float:
    r"""The score :math:`E(x) = \sum_v \theta_v(x_v) + \sum_e \theta_e(x_u, x_v)`."""
    return float(
        _energy(
            np.ascontiguousarray(unary, dtype=np.float64),
            np.ascontiguousarray(edges, dtype=np.int64).reshape(-1, 2),
            np.ascontiguousarray(pairwise, dtype=np.float64),
            np.ascontiguousarray(labels, dtype=np.int64),
        )
    )


def map_inference(
    unary: np.ndarray,
    edges: np.ndarray,
    pairwise: np.ndarray,
    *,
    forests: np.ndarray | None = None,
    max_iter: int = DD_MAX_ITER,
) -> MapResult:
    r"""Maximise :math:`E(x)`: exactly on a forest, by dual decomposition otherwise.

    Parameters
    ----------
    unary : ndarray of shape (V, k)
    edges : ndarray of int, shape (E, 2)
        Node pairs ``(u, v)``, ``u != v``.
    pairwise : ndarray of shape (E, k, k)
        ``pairwise[e, a, b]`` scores ``x_u = a, x_v = b``.
    forests : ndarray of int, shape (E,), optional
        The forest of each edge for dual decomposition (each group must be a forest); default
        :func:`forest_partition`. A forest given as several groups is solved by dual
        decomposition too (the tests use this: the relaxation is tight on trees).
    max_iter : int
        Subgradient iterations at most.

    Returns
    -------
    MapResult
    """
    unary = np.ascontiguousarray(unary, dtype=np.float64)
    edges = np.ascontiguousarray(edges, dtype=np.int64).reshape(-1, 2)
    pairwise = np.ascontiguousarray(pairwise, dtype=np.float64)
    n_nodes, k = unary.shape
    groups = forest_partition(n_nodes, edges) if forests is None else np.asarray(forests)
    n_forests = int(groups.max()) + 1 if groups.size else 1
    structures = [
        _forest_structure(n_nodes, edges, np.flatnonzero(groups == t).astype(np.int64))
        for t in range(n_forests)
    ]
    if not all(s[3] for s in structures):
        raise InvalidInputError(
            "map_inference: a group of `forests` has a cycle; each group must be a forest."
        )
    if n_forests == 1:
        order, parent, pedge, _ = structures[0]
        labels = np.empty(n_nodes, dtype=np.int64)
        value = _tree_map(
            unary,
            edges,
            pairwise,
            order,
            parent,
            pedge,
            labels,
            np.empty((n_nodes, k)),
            np.empty((n_nodes, k), dtype=np.int64),
        )
        return MapResult(labels, float(value), float(value), True)
    orders, parents, pedges = (np.stack([s[j] for s in structures]) for j in range(3))
    labels, value, lam, agreed = _dual_decomposition(
        unary, edges, pairwise, orders, parents, pedges, int(max_iter), DD_PATIENCE, DD_TOLERANCE
    )
    value = float(value)
    bound = decomposition_bound(unary, edges, pairwise, groups, structures, lam)
    return MapResult(labels, value, max(bound, value), bool(agreed))


def decomposition_bound(
    unary: np.ndarray,
    edges: np.ndarray,
    pairwise: np.ndarray,
    groups: np.ndarray,
    structures: list[tuple],
    lam: np.ndarray,
) -> float:
    r""":math:`B(\lambda)` of the module docstring as a proven upper bound on the maximum of
    :math:`E` over the local polytope of the potentials as given (floats), whatever the
    rounding of the subgradient steps.

    Forest ``t`` is maximised on its rounded potentials
    :math:`\ell^t_v = \mathrm{fl}(\theta_v / T + \lambda^t_v)`; the residual
    :math:`r_v = \theta_v - \sum_t \ell^t_v` (not 0 after rounding) is bounded above, so for
    every point :math:`\mu` of the local polytope (labellings included)
    :math:`\theta\cdot\mu = \sum_t \ell^t\cdot\mu_{F_t} + r\cdot\mu
    \le \sum_t \max_{F_t} + \sum_v \max_s r_v(s)` (each forest's relaxation is tight).
    Max-product's value is the float sum of the best labelling's terms in its own order, and
    rounding is monotone, so it is at least the float sum of every labelling in that order:
    the exact maximum exceeds it by at most ``sum_error`` of the
    ``V + |F_t|`` terms. The final sums are bounded by ``sum_upper``.
    """
    n_forests = lam.shape[0]
    n_nodes, k = unary.shape
    total = []
    residual = [unary]
    for t in range(n_forests):
        local = unary / n_forests + lam[t]
        residual.append(-local)
        order, parent, pedge, _ = structures[t]
        members = groups == t
        value = _tree_map(
            local,
            edges,
            pairwise,
            order,
            parent,
            pedge,
            np.empty(n_nodes, dtype=np.int64),
            np.empty((n_nodes, k)),
            np.empty((n_nodes, k), dtype=np.int64),
        )
        size = float(np.sum(np.abs(local).max(axis=1)))
        if members.any():
            size += float(np.sum(np.abs(pairwise[members]).max(axis=(1, 2))))
        total.append(value)
        total.append(float(sum_error(n_nodes + int(members.sum()), size)))
    terms = np.stack(residual)  # r_v(s) = sum of these, n_forests + 1 terms each
    spread = np.abs(terms).sum(axis=0)
    r_up = up(terms.sum(axis=0) + sum_error(n_forests + 1, spread))
    total.extend(r_up.max(axis=1).tolist())
    return sum_upper(np.asarray(total))

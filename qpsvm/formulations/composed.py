r"""Composed problems: a loss, a penalty and an intercept mode over weighted examples.

.. math::

    \min_{w, b}\; R(w, b/B) + C \sum_i c_i\, \ell(z_i),
    \qquad z_i = \sigma_i (w\cdot x_i + b),

with the pieces of :mod:`qpsvm.formulations.pieces` (loss ``ell``, penalty ``R``, intercept
mode), weights ``c_i`` (sample weight times class weight) and ``sigma_i = y_i`` for
classification (``ell`` acts on the functional margin, target the margin ``m_i``) or ``1`` for
regression (``ell`` acts on the prediction, target ``y_i``). The CVXPY problem is each piece's
own expression; the certificate is Fenchel duality of the pieces
(:func:`qpsvm.verify.fenchel.certify_composed`).

With a kernel (L2 penalty only: ``w`` lives in the kernel's feature space) the CVXPY problem is
the dual, ``max_u sum_i phi_i(u_i) - 1/2 (u sigma)^T K (u sigma)`` (minus
``B^2/2 (sigma . u)^2`` for a regularised intercept, the kernel ``K + B^2``) over the loss's box
and, with a free intercept, ``sigma . u = 0``.

Fast paths: the hinge loss with the L2 penalty and a free or no intercept is
:class:`~qpsvm.SoftMarginPrimal` itself (working set, SMO, homotopy paths). Every other
combination is solved by the full CVXPY problem (``method="qp"``) or the working set
(:class:`~qpsvm.solvers.working_set.ComposedSets`: restricted problems over the units near a
kink of their loss, the others fixed at a bound or dropped; for a nonlinear kernel from the
exact start of :mod:`qpsvm.solvers.kernel_start`), then the Fenchel certificate, whose dual
point is improved by exact dual coordinate ascent for the L2 penalty.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from qpsvm._lazy import lazy_module
from qpsvm._numerics import fsum_dot, tdot
from qpsvm._validation import (
    check_binary_labels,
    check_data,
    check_intercept,
    check_positive,
    check_sample_weight,
    check_vector,
    check_weight_vector,
)
from qpsvm.exceptions import InvalidInputError
from qpsvm.formulations.base import Formulation
from qpsvm.formulations.kernel_rows import TouchedRows
from qpsvm.formulations.model import CvxModel
from qpsvm.formulations.pieces import make_intercept, make_loss, make_penalty
from qpsvm.kernels import LINEAR, Kernel, check_precomputed, gram_factor, make_kernel
from qpsvm.solution import Candidate, Solution
from qpsvm.verify.fenchel import LossConjugate

optimize = lazy_module("scipy.optimize")

cp = lazy_module("cvxpy")

__all__ = ["ComposedClassifier", "ComposedProblem", "checked_data", "class_weights"]


def class_weights(class_weight: Any, labels: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Per-sample class weights: ``None`` (1), a dict ``{label: weight}`` (missing labels 1)
    or ``"balanced"``, ``n / (n_classes * n_c)`` as in scikit-learn; ``labels`` are indices
    into ``classes``."""
    if class_weight is None:
        return np.ones(labels.shape[0])
    counts = np.bincount(labels, minlength=classes.shape[0]).astype(np.float64)
    if isinstance(class_weight, str) and class_weight == "balanced":
        table = labels.shape[0] / (classes.shape[0] * counts)
    elif isinstance(class_weight, dict):
        unknown = [k for k in class_weight if k not in set(classes.tolist())]
        if unknown:
            raise InvalidInputError(
                f"class_weight names labels {unknown} that are not in y {classes.tolist()}."
            )
        table = np.array([float(class_weight.get(c, 1.0)) for c in classes.tolist()])
        if not np.all(np.isfinite(table)) or np.any(table < 0):
            raise InvalidInputError(f"class weights must be finite and >= 0; got {class_weight}.")
    else:
        raise InvalidInputError(
            f"class_weight must be None, 'balanced' or a dict {{label: weight}}; got "
            f"{class_weight!r}."
        )
    return table[labels]


def checked_data(X: Any, kernel: Any) -> Any:
    """``X`` validated: the data, or the training Gram matrix for ``kernel="precomputed"``."""
    if isinstance(kernel, str) and kernel == "precomputed":
        return check_precomputed(check_data(X, "X (precomputed kernel)"))
    return check_data(X)


class ComposedProblem(TouchedRows, Formulation):
    """The generic composed problem (see the module docstring); built by
    :class:`ComposedClassifier` and :class:`~qpsvm.SupportVectorRegression`.

    Attributes
    ----------
    X : ndarray or csr_matrix of shape (n_samples, n_features)
    sigma : ndarray
        ``y_i = +-1`` (classification) or ones (regression).
    target : ndarray
        Margins ``m_i`` (classification) or targets ``y_i`` (regression).
    epsilon : float
        Insensitivity of the regression losses (0 for classification).
    sample_weight : ndarray
        Weights ``c_i`` of the loss terms (sample times class weight).
    loss, penalty, intercept
        The pieces.
    """

    methods: ClassVar[tuple[str, ...]] = ("qp", "full", "working_set")
    refusals: ClassVar[dict[str, str]] = {
        name: "composed problems are solved by the full CVXPY problem (method='qp') or the "
        "working set; SMO, the online methods and the rational oracle serve the hinge loss with "
        "the L2 penalty and a free or no intercept (SoftMarginPrimal, SoftMarginDual)"
        for name in ("smo", "subgradient", "exact", "homotopy")
    } | {
        "dcd": "dual coordinate descent serves the linear classifiers with the L2 penalty and "
        "a hinge or squared hinge loss",
        "newton": "Newton's method serves the squared hinge loss with the L2 penalty and the "
        "linear kernel",
    }
    certifier: ClassVar[str] = "qpsvm.verify.fenchel:certify_composed"
    working_set: ClassVar[str] = "qpsvm.solvers.working_set:composed_sets"
    #: Above this many samples (or pairs) :meth:`default_method` is ``"working_set"`` for the
    #: L1 and L1 + L2 penalties: at 5106 ranking pairs (d = 20, C = 0.1) the working set took
    #: half the full LP's time, the crossover of the binary problems (1000) is kept.
    working_set_min_samples: ClassVar[int] = 1000
    #: Sparse data take :meth:`default_method` ``"newton"`` where it applies and ``d^3`` is at
    #: most this many times ``nnz(X)`` (a Newton iteration factors a dense ``d x d`` system, a
    #: dual coordinate descent epoch is a pass over the nonzeros). Measured on
    #: benchmarks/regimes/sparse.py's data (10 nonzeros a row, the squared hinge without or
    #: with the regularised intercept; 4 Newton iterations, 38-69 epochs): Newton 0.04-0.05 s
    #: against dcd 0.08-0.11 s at 20000 x 200 (``d^3 / nnz = 40``), 0.13-0.14 s against
    #: 0.32-0.47 s at 50000 x 500 (250), but 0.14 s against 0.03-0.05 s at 10000 x 1000 (1e4).
    newton_max_cube: ClassVar[float] = 1000.0
    coordinate_problem: ClassVar[str] = "qpsvm.solvers.coordinate:composed_problem"
    regression: ClassVar[bool] = False
    #: ``(items, pairs)`` when the rows are the exact differences ``items[i] - items[j]`` of
    #: index pairs (the ranking problems, whose ``X`` is the pair-difference operator), which
    #: the certificate encloses from the items' scores; ``None`` when the rows are ``X``'s.
    item_pairs: tuple | None = None

    def __init__(
        self,
        X: Any,
        sigma: np.ndarray,
        target: np.ndarray,
        C: float,
        *,
        loss: Any,
        penalty: Any,
        intercept: Any,
        intercept_scaling: Any,
        l1_ratio: Any,
        weights: np.ndarray,
        epsilon: float = 0.0,
        kernel: Kernel | None = None,
    ) -> None:
        self.X = X
        self.kernel = kernel if kernel is not None else LINEAR
        self.sigma = sigma
        self.target = target
        self.C = check_positive(C, "C")
        self.loss = make_loss(loss, self.regression)
        self.penalty = make_penalty(penalty, l1_ratio)
        self.intercept = make_intercept(intercept, intercept_scaling)
        self.sample_weight = weights
        self.epsilon = float(epsilon)
        self._model: CvxModel | None = None
        self._gram: np.ndarray | None = None
        if self.linear and self.penalty.name == "l2" and not self.regression:
            # dual coordinate descent: the hinge losses' duals have a box and no kernel
            self.methods = (*self.methods, "dcd")
            if self.loss.name == "squared_hinge":
                # a piecewise quadratic primal in w (and an intercept's coordinate w_{d+1} =
                # b / B, unpenalised when free) alone: the finite Newton method
                self.methods = (*self.methods, "newton")
        if not self.linear and self.penalty.name != "l2":
            raise InvalidInputError(
                f"penalty={self.penalty.name!r} has no kernel form (w lives in the kernel's "
                f"feature space, where only the L2 penalty is stated); use kernel='linear' or "
                "penalty='l2'."
            )

    def default_method(self) -> str:
        """``"dcd"`` for sparse data where it applies (measured in
        benchmarks/regimes/sparse.py), ``"newton"`` instead for the squared hinge with many
        more nonzeros than features (:attr:`newton_max_cube`); ``"working_set"`` for a
        nonlinear kernel (its exact start, :mod:`qpsvm.solvers.kernel_start`, certified by its
        own multipliers: 0.02-0.09 of the full QP's time at n = 500, ``C`` = 1 and 100, and
        0.4-5.2 times libsvm's at n = 500-2000, benchmarks/bench_composed_working_set.py) and
        for the L1 and L1 + L2 penalties above :attr:`working_set_min_samples` samples
        (measured in benchmarks/bench_composed_families.py on ranking pairs); else ``"qp"``
        (linear SVR: the working set measured 0.9-2.2 times the full QP at n = 500-2000)."""
        if "dcd" in self.methods and sp.issparse(self.X):
            cube = float(self.n_features) ** 3
            if "newton" in self.methods and cube <= self.newton_max_cube * self.X.nnz:
                return "newton"
            return "dcd"
        if not self.linear:
            return "working_set"
        if (
            "working_set" in self.methods
            and self.penalty.name != "l2"
            and self.n_samples > self.working_set_min_samples
        ):
            return "working_set"
        return super().default_method()

    @property
    def linear(self) -> bool:
        """True when ``w`` is explicit (linear kernel)."""
        return self.kernel.name == "linear"

    def with_C(self, C: float) -> ComposedProblem:
        """The same problem with another ``C``: a shallow copy sharing the data and, for a
        nonlinear kernel, the Gram matrix (formed here once: a path's copies would each form
        their own, measured about half of an rbf SVR path at n = 1000)."""
        if not self.linear:
            self.gram()
        return super().with_C(C)

    def gram(self) -> np.ndarray:
        """The training Gram matrix ``K`` (nonlinear kernels; cached)."""
        if self.linear:
            raise InvalidInputError("the linear kernel's problems use X directly, not its Gram.")
        if self._gram is None:
            self._gram = self.kernel.gram(self.X)
        return self._gram

    def gram_rows(self, idx: np.ndarray) -> np.ndarray:
        """Rows ``K[idx, :]`` of the Gram matrix."""
        return self.gram()[idx]

    def kernel_product(self, u: np.ndarray) -> np.ndarray:
        """Scores ``g = K (u sigma)`` of multipliers ``u`` (nonlinear kernels)."""
        return self.gram() @ (u * self.sigma)

    def factor_problem(self) -> ComposedProblem:
        """The same problem on the features ``L`` of a factor ``K = L L^T`` (linear kernel):
        where the certificate searches its dual point (its values use ``K`` itself)."""
        shadow = copy.copy(self)
        shadow.X = gram_factor(self.gram())
        shadow.kernel = LINEAR
        shadow._model = None
        shadow._gram = None
        shadow._touched = shadow._kept = None  # of the factor's own rows
        return shadow

    # ---------------------------------------------------------------------- the pieces
    @property
    def fit_intercept(self) -> bool:
        """Whether ``b`` is a variable (free or regularised)."""
        return self.intercept.fitted

    def describe(self) -> str:
        """The combination, e.g. ``ComposedClassifier(squared_hinge, l2, regularized B=1)``."""
        mode = self.intercept.mode
        if self.intercept.regularized:
            mode += f" B={self.intercept.scaling:g}"
        kernel = "" if self.linear else f", kernel={self.kernel.name}"
        return f"{type(self).__name__}({self.loss.name}, {self.penalty.name}, {mode}{kernel})"

    def loss_weights(self) -> np.ndarray:
        """``W_i = C c_i``, the weights of the loss terms."""
        return self.C * self.sample_weight

    def loss_conjugate(self) -> LossConjugate:
        """The dual side of the weighted losses (:class:`~qpsvm.verify.fenchel.LossConjugate`)."""
        return self.loss.conjugate(self.target, self.epsilon, self.loss_weights())

    def loss_young_gaps(self, z: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Per-sample Fenchel-Young gaps of the losses at margins ``z`` and multipliers ``u``."""
        return self.loss.young_gaps(z, u, self.target, self.epsilon, self.loss_weights())

    # ------------------------------------------------------------------ CVXPY problem
    def build(self) -> CvxModel:
        """The declarative problem: ``penalty(w[, b/B]) + C sum_i c_i term_i`` over the loss's
        epigraph (for a nonlinear kernel the dual, :meth:`build_dual`).

        Variables ``w``, ``b`` (free or regularised intercept), ``xi``; the loss's named
        constraints (``margin`` and ``slack`` for the hinge losses, ``upper``, ``lower`` and
        ``slack`` for the epsilon-insensitive ones, see :mod:`qpsvm.formulations.pieces.losses`);
        parameter ``C``.
        """
        if not self.linear:
            return self.build_dual()
        return self.build_restricted(None, None)

    def build_restricted(self, subset: np.ndarray | None, bound: np.ndarray | None) -> CvxModel:
        r"""The problem over the samples ``subset`` (default: all), with the samples of
        ``bound`` folded in at their multipliers' bound ``u_i = s_i C c_i`` (the loss in a linear
        piece); ``bound`` holds the signs ``s_i`` (``+1`` for the margin losses and for a target
        above the tube, ``-1`` below it; a boolean mask means ``+1``), 0 for the other samples.

        Linear kernel: the primal, where a fixed sample adds ``C c_i s_i (t_i - z_i)`` (up to a
        constant, ``t_i`` its margin or target), which is ``-C (w . g + b t)``,
        ``g = sum_E c_i s_i sigma_i x_i``, ``t = sum_E c_i s_i sigma_i``, instead of
        constraints; ``C`` stays a parameter. A nonlinear kernel: the dual over ``subset``
        (:meth:`build_dual`). The model's ``index`` is ``subset`` (the rows of its constraints).
        """
        if not self.linear:
            return self.build_dual(subset, bound)
        w = cp.Variable(self.n_features, name="w")
        prediction, extra, stated = self.predictions(w, subset)
        variables: dict[str, cp.Variable] = {"w": w, **extra}
        argument: cp.Expression = w
        rows = slice(None) if subset is None else subset
        b = None
        if self.intercept.fitted:
            b = cp.Variable(name="b")
            variables["b"] = b
            prediction = prediction + b
            if self.intercept.regularized:
                argument = cp.hstack([w, cp.reshape(b / self.intercept.scaling, (1,), order="C")])
        z = prediction if self.regression else cp.multiply(self.sigma[rows], prediction)
        term, xi, constraints = self.loss.epigraph(z, self.target[rows], self.epsilon)
        constraints = {**stated, **constraints}
        variables["xi"] = xi
        C = cp.Parameter(nonneg=True, value=self.C, name="C")
        loss = self.sample_weight[rows] @ term
        if bound is not None and np.any(bound):
            c = self.sample_weight * np.asarray(bound, dtype=np.float64)
            loss = loss - w @ self.expansion(c)
            if b is not None:
                loss = loss - b * fsum_dot(c, self.sigma)
        objective = self.penalty.expression(argument) + C * loss
        problem = cp.Problem(cp.Minimize(objective), list(constraints.values()))
        return CvxModel(problem, variables, constraints, {"C": C}, index=subset)

    def predictions(
        self, w: cp.Variable, subset: np.ndarray | None = None
    ) -> tuple[cp.Expression, dict[str, cp.Variable], dict[str, cp.Constraint]]:
        """The predictions ``w . x_i`` of the samples ``subset`` (default: all) in CVXPY, with
        any variables and constraints they need (none here: ``X @ w``)."""
        return (self.X if subset is None else self.X[subset]) @ w, {}, {}

    def build_dual(
        self, subset: np.ndarray | None = None, bound: np.ndarray | None = None
    ) -> CvxModel:
        """The kernel dual: ``max sum_i (p_i u_i - eps_i |u_i| - d_i u_i^2 / 2)
        - 1/2 ||L^T (u sigma)||^2 [- B^2/2 (sigma . u)^2]`` with ``K = L L^T`` (the factor:
        Clarabel is more accurate on it than on ``K``), the loss's ``p, eps, d`` and box
        (:meth:`loss_conjugate`).

        Over the samples ``subset`` (default: all) with the others fixed: ``u_i = s_i C c_i``
        for the signs ``s_i`` of ``bound`` (:meth:`build_restricted`), 0 elsewhere. The fixed
        ``u_E`` add ``-(u sigma)_S . K_SE (u sigma)_E`` to the objective and their sums to the
        intercept's terms; ``L`` factors ``K_SS``.

        Variable ``alpha`` (the multipliers ``u_S``); constraints ``lower`` (``u >= lo`` where
        finite), ``upper`` (``u <= hi`` where finite) and, with a free intercept, ``balance``
        (``sigma . u = 0``). ``C`` enters the box and ``d`` as data. The model's ``index`` is
        ``subset``.
        """
        c = self.loss_conjugate()
        rows = np.arange(self.n_samples) if subset is None else np.asarray(subset, dtype=np.intp)
        fixed = np.zeros(self.n_samples)
        if bound is not None:
            fixed = np.asarray(bound, dtype=np.float64) * self.loss_weights()
            fixed[rows] = 0.0
        sigma = self.sigma[rows]
        u = cp.Variable(rows.size, name="alpha")
        block = self.gram() if subset is None else self.gram_rows(rows)
        inner = block if subset is None else block[:, rows]
        quad = cp.sum_squares(gram_factor(inner).T @ cp.multiply(sigma, u))
        objective = c.p[rows] @ u - 0.5 * quad
        su = cp.multiply(sigma, u)
        coupling: Any = cp.sum(su)
        if np.any(fixed):
            objective = objective - su @ (block @ (fixed * self.sigma))
            coupling = coupling + fsum_dot(fixed, self.sigma)
        if np.any(c.eps[rows] > 0):
            objective = objective - c.eps[rows] @ cp.abs(u)
        if np.any(c.d[rows] > 0):
            objective = objective - 0.5 * (c.d[rows] @ cp.square(u))
        if self.intercept.regularized:
            objective = objective - 0.5 * self.intercept.scaling**2 * cp.square(coupling)
        constraints: dict[str, cp.Constraint] = {}
        lo, hi = c.lo[rows], c.hi[rows]
        low, high = np.flatnonzero(np.isfinite(lo)), np.flatnonzero(np.isfinite(hi))
        if low.size:
            constraints["lower"] = u[low] >= lo[low]
        if high.size:
            constraints["upper"] = u[high] <= hi[high]
        if self.intercept.coupled:
            constraints["balance"] = coupling == 0
        problem = cp.Problem(cp.Maximize(objective), list(constraints.values()))
        return CvxModel(problem, {"alpha": u}, constraints, index=subset)

    def kernel_intercept(self, u: np.ndarray, scores: np.ndarray) -> float:
        """The intercept of multipliers ``u`` with scores ``g``: ``B^2 sigma . u`` when
        regularised (``b' = B sigma . u``), else the best one for ``g``."""
        if self.intercept.regularized:
            return self.intercept.scaling**2 * fsum_dot(self.sigma, u)
        return self.optimal_intercept(scores)

    def read_model(self, model: CvxModel) -> Candidate:
        """``w``, ``b`` and the multipliers ``u`` (as ``alpha``) off a solved model."""
        if not self.linear:
            u = self.loss_conjugate().clip(
                np.asarray(model.variables["alpha"].value, dtype=np.float64).ravel()
            )
            return Candidate(w=None, b=self.kernel_intercept(u, self.kernel_product(u)), alpha=u)
        w = np.asarray(model.variables["w"].value, dtype=np.float64)
        b = float(model.variables["b"].value) if self.intercept.fitted else 0.0
        return Candidate(w=w, b=b, alpha=self.loss.read_dual(model.constraints))

    def infeasible_error(self) -> Exception | None:
        """Composed problems always have a solution: no specific error."""
        return None

    # --------------------------------------------------------------------- numpy math
    def check_w(self, w: Any) -> np.ndarray:
        """A candidate ``w`` as a finite float64 vector of length ``n_features``."""
        return check_weight_vector(w, self.n_features, self.kernel.name)

    def check_b(self, b: Any) -> float:
        """A candidate intercept; must be 0 when the problem has none."""
        return check_intercept(
            b, self.intercept.fitted, "intercept='none'", "build the problem with an intercept"
        )

    def check_alpha(self, alpha: Any) -> np.ndarray:
        """Candidate multipliers ``u`` as a finite float64 vector of length ``n_samples``."""
        return check_vector(alpha, self.n_samples, "alpha")

    def scores(self, w: np.ndarray) -> np.ndarray:
        """``w . x_i`` on the training data."""
        return np.asarray(self.X @ w).ravel()

    def margins(self, w: Any, b: Any = 0.0) -> np.ndarray:
        """``z_i = sigma_i (w . x_i + b)``: what the loss acts on."""
        return self.sigma * (self.scores(self.check_w(w)) + self.check_b(b))

    def objective(self, w: Any, b: Any = 0.0, scores: np.ndarray | None = None) -> float:
        """``P(w, b) = R(w[, b/B]) + C sum_i c_i ell(z_i)``, with compensated sums; ``scores``
        are :meth:`scores` of ``w`` where the caller has them (a product with ``X`` fewer)."""
        w = self.check_w(w)
        b = self.check_b(b)
        z = self.sigma * ((self.scores(w) if scores is None else scores) + b)
        loss = fsum_dot(self.sample_weight, self.loss.value(z, self.target, self.epsilon))
        return self.penalty.value(w, self.intercept.tail(b)) + self.C * loss

    def objective_alpha(self, alpha: Any, b: Any = None) -> float:
        """``P`` at ``w = sum_i u_i sigma_i phi(x_i)`` (any kernel); ``b=None`` takes
        :meth:`kernel_intercept`. ``R(w) = 1/2 (u sigma) . g`` with ``g = K (u sigma)``."""
        u = self.check_alpha(alpha)
        if self.linear:
            w = self.expansion(u)
            b = self.optimal_intercept(self.scores(w)) if b is None else b
            return self.objective(w, b)
        g = self.kernel_product(u)
        b = self.kernel_intercept(u, g) if b is None else self.check_b(b)
        z = self.sigma * (g + b)
        loss = fsum_dot(self.sample_weight, self.loss.value(z, self.target, self.epsilon))
        extra = self.penalty.value(np.array([b / self.intercept.scaling]))
        reg = extra if self.intercept.regularized else 0.0
        return 0.5 * fsum_dot(u * self.sigma, g) + reg + self.C * loss

    def expansion(self, u: np.ndarray) -> np.ndarray:
        """``v = sum_i u_i sigma_i x_i`` in twice the working precision."""
        return tdot(self.X, u * self.sigma)

    def primal_from_dual(self, u: np.ndarray) -> np.ndarray:
        """``w = grad R^*(v)`` of multipliers ``u`` (penalties with a differentiable
        conjugate; for L1 pass ``w``)."""
        w = self.penalty.primal(self.expansion(u))
        if w is None:
            raise InvalidInputError(
                f"the {self.penalty.name!r} penalty does not determine w from the multipliers; "
                "pass w (and b)."
            )
        return w

    def optimal_intercept(self, scores: np.ndarray) -> float:
        """The ``b`` minimising ``P(w, b)`` for fixed scores ``w . x_i`` (0 without one): the
        one-dimensional convex problem solved by bounded search between the loss's
        breakpoints, then compared with the breakpoints next to it (where piecewise-linear
        losses have their minimum)."""
        if not self.intercept.fitted:
            return 0.0
        if self.regression:
            breaks = np.concatenate(
                [self.target - self.epsilon - scores, self.target + self.epsilon - scores]
            )
        else:
            breaks = self.sigma * self.target - scores
        weights = self.loss_weights()

        def value(b: float) -> float:
            z = self.sigma * (scores + b)
            total = fsum_dot(weights, self.loss.value(z, self.target, self.epsilon))
            if self.intercept.regularized:
                total += self.penalty.value(np.array([b / self.intercept.scaling]))
            return total

        lo, hi = float(np.min(breaks)), float(np.max(breaks))
        width = max(1.0, hi - lo)
        found = optimize.minimize_scalar(
            value, bounds=(lo - width, hi + width), method="bounded", options={"xatol": 1e-13}
        )
        order = np.sort(breaks)
        k = int(np.searchsorted(order, found.x))
        trial = [float(found.x)] + [float(order[j]) for j in (k - 1, k) if 0 <= j < order.size]
        return min(trial, key=value)

    def dual_infeasibility(self, u: np.ndarray) -> float:
        """Largest violation of the dual constraints by ``u``: its box, the coupling (free
        intercept) and the penalty's domain (``||v||_inf <= 1`` for L1)."""
        c = self.loss_conjugate()
        worst = max(0.0, float(np.max(c.lo - u)), float(np.max(u - c.hi)))
        if self.intercept.coupled:
            worst = max(worst, abs(fsum_dot(self.sigma, u)))
        if self.penalty.name == "l1":
            v = self.expansion(u)
            if self.intercept.regularized:
                v = np.append(v, self.intercept.scaling * fsum_dot(self.sigma, u))
            worst = max(worst, float(np.max(np.abs(v), initial=0.0)) - 1.0)
        return worst

    def slack_violation(self, z: np.ndarray, xi: Any) -> float:
        """Largest violation of the loss's epigraph constraints by given slacks ``xi``."""
        xi = np.asarray(xi, dtype=np.float64).ravel()
        if xi.shape != (self.n_samples,):
            raise InvalidInputError(f"xi must have shape ({self.n_samples},); got {xi.shape}.")
        excess = self.loss.excess(z, self.target, self.epsilon)
        worst = float(np.max(excess - xi, initial=0.0))
        if not self.loss.squared:
            worst = max(worst, float(np.max(-xi, initial=0.0)))
        return max(0.0, worst)

    def decision_function(self, X: Any, solution: Any) -> np.ndarray:
        """``w . phi(x) + b`` for new points (for ``kernel="precomputed"``, ``X`` is the kernel
        between new and training points)."""
        Xn = check_data(X)
        if not self.linear:
            K = Xn if self.kernel.name == "precomputed" else self.kernel(Xn, self.X)
            if K.shape[1] != self.n_samples:
                raise InvalidInputError(
                    f"the kernel between new and training points must have {self.n_samples} "
                    f"columns; got {K.shape[1]}."
                )
            return np.asarray(K @ (solution.alpha * self.sigma)).ravel() + float(solution.b)
        if Xn.shape[1] != self.n_features:
            raise InvalidInputError(
                f"X has {Xn.shape[1]} features but the problem was built with {self.n_features}."
            )
        return np.asarray(Xn @ solution.w).ravel() + float(solution.b)

    def solution_from(self, cand: Candidate, certificate: Any = None, **fields: Any) -> Solution:
        """A :class:`~qpsvm.Solution` for ``cand``: ``xi`` is the loss's excess
        (``max(0, m - z)`` or ``max(0, |z - y| - eps)``), ``alpha`` the multipliers ``u``."""
        fields.setdefault("solve_time", 0.0)
        fields.setdefault("n_iter", 0)
        if not self.linear:
            u = self.check_alpha(cand.alpha)
            g = self.kernel_product(u)
            b = self.kernel_intercept(u, g) if cand.b is None else self.check_b(cand.b)
            return Solution(
                w=None,
                b=b,
                xi=self.loss.excess(self.sigma * (g + b), self.target, self.epsilon),
                alpha=u,
                objective=float(self.objective_alpha(u, b)),
                certificate=certificate,
                **fields,
            )
        w = self.check_w(cand.w) if cand.w is not None else self.primal_from_dual(cand.alpha)
        scores = self.scores(w)
        b = self.optimal_intercept(scores) if cand.b is None else self.check_b(cand.b)
        z = self.sigma * (scores + b)
        return Solution(
            w=w,
            b=b,
            xi=self.loss.excess(z, self.target, self.epsilon),
            alpha=cand.alpha,
            objective=float(self.objective(w, b, scores=scores)),
            certificate=certificate,
            **fields,
        )


class ComposedClassifier(ComposedProblem):
    r"""A binary classifier composed of a loss, a penalty and an intercept mode.

    .. math::

        \min_{w, b}\; R(w, b/B) + C \sum_i s_i\, \kappa_{y_i}\, \ell(y_i (w\cdot x_i + b)),

    what :class:`~qpsvm.SoftMarginPrimal` builds for every combination other than the hinge
    loss with the L2 penalty and a free or no intercept (those are today's
    :class:`~qpsvm.SoftMarginPrimal`, with its fast paths). ``kappa`` are the class weights.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Two label values; ``classes_[1]`` (larger, sorted) is ``+1``.
    C : float
    loss : {"hinge", "squared_hinge"}
    penalty : {"l2", "l1", "l1_l2"}
    intercept : {"free", "none", "regularized"}
    intercept_scaling : float
        ``B`` of the regularised intercept (liblinear's ``-B``).
    l1_ratio : float
        ``r`` of the ``"l1_l2"`` penalty ``r ||w||_1 + (1 - r)/2 ||w||^2``.
    class_weight : dict, "balanced" or None
        Multiplies the weight of every sample of a class (scikit-learn's convention).
    sample_weight, margin : array-like of shape (n_samples,), optional
    kernel, gamma, degree, coef0
        As in :class:`~qpsvm.SoftMarginDual` (a nonlinear kernel needs the L2 penalty).
    """

    regression: ClassVar[bool] = False

    def __init__(
        self,
        X: Any,
        y: Any,
        C: float = 1.0,
        *,
        loss: str = "hinge",
        penalty: str = "l2",
        intercept: str = "free",
        intercept_scaling: float = 1.0,
        l1_ratio: float = 0.5,
        class_weight: Any = None,
        sample_weight: Any = None,
        margin: Any = None,
        kernel: Any = "linear",
        gamma: Any = None,
        degree: int = 3,
        coef0: float = 1.0,
    ) -> None:
        X = checked_data(X, kernel)
        n = X.shape[0]
        sigma, classes = check_binary_labels(y, n)
        self.classes_ = classes
        self.y = sigma
        weights = check_sample_weight(sample_weight, n) * class_weights(
            class_weight, (sigma > 0).astype(np.intp), classes
        )
        if not np.any(weights > 0):
            raise InvalidInputError("every sample has weight 0; at least one must be > 0.")
        self.margin = (
            np.ones(n) if margin is None else check_vector(margin, n, "margin", nonnegative=True)
        )
        super().__init__(
            X,
            sigma,
            self.margin,
            C,
            loss=loss,
            penalty=penalty,
            intercept=intercept,
            intercept_scaling=intercept_scaling,
            l1_ratio=l1_ratio,
            weights=weights,
            kernel=make_kernel(kernel, X, gamma, degree, coef0),
        )

    def predict(self, X: Any, solution: Any) -> np.ndarray:
        """Predicted labels: ``classes_[1]`` where the decision is > 0."""
        return np.where(self.decision_function(X, solution) > 0, self.classes_[1], self.classes_[0])

r"""Exact at scale: the working-set engine.

At the optimum of an SVM most constraints are inactive (the sample is beyond its margin,
``alpha_i = 0``) or their multiplier sits at its bound (the sample is inside the margin,
``alpha_i = C s_i``); only the few on the margin need a QP. The engine

1. starts from a fast approximate solution (:mod:`qpsvm.solvers.warm_start`, or SMO for a
   kernel) and sorts the constraints by their residual ``r_i = y_i f(x_i) - m_i``: those within a
   few error bands of the margin form the working set ``W``; those certainly inside it are
   *fixed at their bound* ``E`` and enter the QP as the linear term
   ``C sum_{i in E} s_i (m_i - y_i f(x_i))``; the rest drop out;
2. solves the formulation's own declarative CVXPY model over ``W`` (``f.build(subset=W, ...)``)
   exactly (Clarabel through :func:`~qpsvm.solvers.backends.run_backend`); with the default
   backend, a formulation that names a ``direct_restricted`` (the soft-margin primal, the
   ranking SVM and the multiclass SVMs) first hands the same QP to Clarabel as matrices
   (:mod:`qpsvm.solvers.direct`, :mod:`qpsvm.solvers.direct_multiclass`), without CVXPY,
   and the model is solved only where Clarabel does not report it solved;
3. checks every constraint on the full data in one vectorised pass: a dropped sample with
   ``r_i < 0`` or a fixed one with ``r_i > 0`` breaks the KKT conditions of the full problem;
   such samples join ``W``, and the loop repeats;
4. when no status is violated, the restricted optimum is a KKT point of the full problem
   (stationarity and balance hold by construction, complementarity by the check), and the
   full-data certificate (``f.certify``) proves it. A point that fails its certificate is never
   returned: :class:`~qpsvm.exceptions.UncertifiedSolutionError` is raised instead.

``W`` only grows, so the loop ends after at most ``n`` rounds; ``max_rounds`` turns a pathological
case into a clear error. The compiled model is kept while the sets do not change (for a
regularisation path only the parameter ``C`` changes: see :mod:`qpsvm.solvers.path`).

The loop (:func:`run_working_set`) only talks to a :class:`WorkingSet`: a formulation-specific
object that builds the restricted model, reads its solution back as a full-data candidate and
checks the full data. :class:`StatusSets` keeps the three statuses and grows ``W``;
:class:`BinarySets` (binary and ranking SVMs) and :class:`WestonWatkinsSets` have one scalar
residual per constraint (:class:`ResidualSets`), :class:`CrammerSingerSets` one status per
example whose constraints share a slack. A formulation names its sets in its ``working_set``
attribute (:func:`binary_sets`, :func:`multiclass_sets`; see :mod:`qpsvm.contract`). The
structural SVM's cutting plane (:mod:`qpsvm.solvers.cutting_plane`) grows its working set of
planes by loss-augmented inference, with a loop of its own (its working-set QP is solved in the
dual by block-coordinate ascent).
"""

from __future__ import annotations

import logging
import math
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from qpsvm._validation import check_int, check_number, check_tol
from qpsvm.contract import (
    BinaryProblem,
    CompositeProblem,
    MulticlassProblem,
    Problem,
    load,
    part,
)
from qpsvm.exceptions import InaccurateSolutionError, InfeasibleProblemError, SolverError
from qpsvm.formulations.model import CvxModel
from qpsvm.solution import Candidate, History, Solution
from qpsvm.solvers.backends import BackendResult, backend_order, solve_model
from qpsvm.solvers.finish import finish
from qpsvm.solvers.refine import refine_multiclass
from qpsvm.solvers.warm_start import (
    NEWTON_MAX_FEATURES,
    Start,
    dual_coordinate_descent,
    multiclass_dual,
    multiclass_dual_tol,
    smoothed_newton,
)
from qpsvm.verify.certificate import DEFAULT_TOL, GOOD_ENOUGH

__all__ = [
    "BinarySets",
    "ComposedSets",
    "CrammerSingerSets",
    "ResidualSets",
    "Round",
    "StatusSets",
    "WestonWatkinsSets",
    "WorkingSet",
    "binary_sets",
    "composed_sets",
    "composed_units",
    "kkt_start",
    "multiclass_sets",
    "run_working_set",
    "sampled_start",
    "solve_working_set",
    "start_binary",
    "unit_residuals",
    "working_set_for",
]

logger = logging.getLogger("qpsvm")

#: Samples within this many error bands of their margin start in the working set.
WIDTH = 8.0
#: A round adds at most ``max(MIN_ADD, |W|)`` violated constraints (the most violated).
MIN_ADD = 100
#: Slack penalty of the soft-margin problem whose optimum starts the hard margin.
HARD_SURROGATE_C = 1.0
#: Tolerance and epoch limit of the dual coordinate descent start (wide linear data): a rough
#: optimum sorts the samples well enough, the full-data checks repair the rest.
DCD_TOL = 1e-2
DCD_MAX_EPOCHS = 200
#: A status is violated when its residual has the wrong sign by more than this (relative to
#: the margins' scale): the exact restricted optimum's own round-off stays below it.
STATUS_TOL = 1e-9
#: SMO tolerance of the kernel start's first stage (libsvm's default).
SMO_TOL = 1e-3
#: Relative duality gap the kernel start is run to (:func:`~qpsvm.solvers.smo.solve_smo`'s
#: ``gap``): below the certificate's early stop (``GOOD_ENOUGH * DEFAULT_TOL``), so that its own
#: multipliers certify it without a search for a better dual point. Measured: from SMO's
#: ``1e-3`` to this gap costs 2-3 times SMO's steps but no more kernel rows (n = 2000-8000,
#: rbf), far less than a restricted QP on the free support vectors.
START_GAP = 0.5 * GOOD_ENOUGH * DEFAULT_TOL
#: Units (samples or pairs) of the sample whose restricted optimum starts the penalties without a
#: dual method of their own (:func:`sampled_start`); a sample this size solves in well under a
#: second as an LP or QP.
START_SAMPLE = 1000
#: Thresholds of the multiclass exact start (:func:`kkt_start`), in error bands of the dual
#: coordinate descent: measured on 300 x 10 with 4 classes (Crammer-Singer), one band misses
#: constraints that two find.
KKT_BANDS = (2.0, 4.0)
#: Threshold (margin units) of the tight sets that polish a multiclass restricted optimum.
POLISH_TAU = 1e-4
#: Where the multiclass exact start fails at the descent's tolerance, the descent continues at
#: tolerances this factor apart, down to :data:`KKT_TIGHTEST`, each allowed as many epochs as
#: the first descent took (:func:`tightened_kkt_start`), when that descent took at most
#: :data:`KKT_TIGHTEN_VISITS` example visits (epochs times examples).
KKT_TIGHTEN = math.sqrt(10.0)
KKT_TIGHTEST = 1e-4
KKT_TIGHTEN_VISITS = 1e7


def folds(f: MulticlassProblem | CompositeProblem) -> bool:
    """Whether units may be fixed at their multipliers' bound (a linear term of the restricted
    problem): not under the L1 penalty alone, where ``||w||_1`` minus a linear term can be
    unbounded below; a penalty with an L2 part keeps every restricted problem bounded."""
    return f.penalty.name != "l1"


@dataclass
class Round:
    """What one full-data check found.

    Attributes
    ----------
    added : int
        Units (constraints, or examples) that joined the working set (0: the candidate is
        optimal for the full problem, up to the check's tolerance).
    objective : float
        Primal objective of the round's candidate on the full data.
    violation : float
        Largest violation found by the check (a residual of the wrong sign for the status).
    """

    added: int
    objective: float
    violation: float


class WorkingSet(ABC):
    """One formulation's half of the working-set method (the loop is :func:`run_working_set`).

    An implementation keeps the working set, builds the formulation's CVXPY model over it
    (the same declarative code as the full problem), reads the solved model back as a candidate
    on the full data, and checks the full data. A cutting-plane method (the structural SVM)
    implements :meth:`update` with its separation oracle (loss-augmented inference on every
    example): ``added`` is the number of new most-violated constraints, 0 once none is violated
    by more than its tolerance; the loop then certifies the point with ``f.certify`` and builds
    the answer with ``f.solution_from``.
    """

    f: Problem

    @abstractmethod
    def model(self) -> CvxModel:
        """The QP over the current working set; the same object while the set is unchanged."""

    @abstractmethod
    def read(self, model: CvxModel) -> Candidate:
        """The full-data candidate defined by the solved restricted model."""

    @abstractmethod
    def update(self, cand: Candidate) -> Round:
        """Check every constraint at ``cand`` and grow the working set with the violated ones."""

    def sizes(self) -> dict[str, int]:
        """Sizes of the sets, for logging and ``Solution.info``."""
        return {}

    def polish(self, cand: Candidate) -> Candidate:
        """The point the certificate is given for the final restricted optimum ``cand`` (the
        same point here)."""
        return cand

    def aimed(self, cand: Candidate, excess: float) -> Candidate | None:
        """A point that trades a little of the exact point ``cand``'s optimality for a lower
        rounding floor of its certificate, tried where ``cand`` fails by ``excess`` (its gap
        beyond the tolerance) and its floor and round-off account for that (none here)."""
        return None

    def infeasible(self, exc: InfeasibleProblemError) -> Exception:
        """The error for a restricted model the backend reports infeasible."""
        return exc

    def direct(self) -> tuple[Candidate, BackendResult] | None:
        """The restricted QP solved from its matrices without CVXPY, read as :meth:`read`
        reads the solved model, with the backend's run; ``None`` where there is no such
        solve or it failed (the model is then solved). None here."""
        return None

    def release(self) -> np.ndarray:
        """Move the units fixed at a bound into the working set after the backends failed on
        the restricted model; returns their indices (none here)."""
        return np.zeros(0, dtype=np.intp)


class StatusSets(WorkingSet):
    """Working sets whose units each have one of three statuses (shared bookkeeping).

    A unit (a constraint, or an example's group of constraints) is in the working set ``W``
    (its constraints are in the restricted QP), *fixed at its bound* (its multiplier is known to
    be ``C s_i``: a linear term of the QP) or *dropped* (multiplier 0). Subclasses sort the units
    from an approximate optimum (:meth:`sort`), build the restricted model (:meth:`build`) and
    say which statuses a candidate violates (:meth:`update`); growing ``W``, caching the
    compiled model and re-targeting to another ``C`` are shared.

    Parameters
    ----------
    f : Formulation
    start : Start
        Approximate optimum and its error band.
    width : float
        Units within ``width * start.band`` of their margin start in ``W``.
    """

    def __init__(self, f: Problem, start: Start, width: float = WIDTH) -> None:
        self.f = f
        self.width = width
        self._model: CvxModel | None = None
        self.work = np.zeros(0, dtype=bool)
        self.bound = np.zeros(0, dtype=bool)
        self.start = start
        self.restart(start)

    @abstractmethod
    def sort(self, start: Start) -> None:
        """Set :attr:`work` and :attr:`bound` from the approximate optimum ``start``."""

    @abstractmethod
    def build(self) -> CvxModel:
        """The formulation's model over ``W`` with the other units folded in."""

    def key(self) -> tuple[np.ndarray, ...]:
        """Arrays that define the sets (equal keys: the same restricted model)."""
        return (self.work, self.bound)

    @property
    def c_parametric(self) -> bool:
        """Whether the restricted model depends on ``C`` only through its parameter ``C`` (a
        fixed term ``C`` times data), so it survives a change of ``C``."""
        return True

    def restart(self, start: Start) -> None:
        """Re-sort every unit at ``start``; keep the compiled model if the sets are unchanged
        (with the new value of ``C``)."""
        previous = self.key() if self._model is not None else None
        self.start = start
        self.sort(start)
        if self._model is not None and self.c_parametric and previous is not None:
            if all(np.array_equal(a, b) for a, b in zip(previous, self.key(), strict=True)):
                self._model.parameters["C"].value = self.f.C
                return
        self._model = None

    def retarget(self, f: Problem, start: Start) -> None:
        """Switch to ``f`` (the same data at another ``C``) and re-sort the units at ``start``
        (e.g. the optimum at the previous ``C``)."""
        self.f = f
        self.restart(start)

    def model(self) -> CvxModel:
        if self._model is None:
            self._model = self.build()
        return self._model

    def grow(self, wrong: np.ndarray, eps: float) -> int:
        """Move the units whose status is violated by more than ``eps`` into ``W`` (at most
        ``max(MIN_ADD, |W|)`` of them, the most violated: ``W`` at most doubles, as in a
        cutting-plane method); returns how many moved."""
        violated = wrong > eps
        added = int(np.count_nonzero(violated))
        cap = max(MIN_ADD, int(np.count_nonzero(self.work)))
        if added > cap:
            violated = np.zeros_like(violated)
            violated[np.argpartition(-wrong, cap)[:cap]] = True
            added = cap
        if added:
            self.work |= violated
            self.bound &= ~violated
            self._model = None
        return added

    def release(self) -> np.ndarray:
        """Move every unit fixed at its bound into ``W`` (their linear term ``C`` times data is
        what can make a restricted QP too badly scaled for a backend); returns their indices."""
        moved = np.flatnonzero(self.bound)
        if moved.size:
            self.work[moved], self.bound[moved] = True, False
            self._model = None
        return moved

    def seed(self, closeness: np.ndarray, groups: tuple[np.ndarray, ...]) -> None:
        """Put into ``W`` the unit of smallest ``closeness`` of each group with none in ``W``
        (the restricted QP needs a constraint, and one of each class with an intercept)."""
        for group in groups:
            members = np.flatnonzero(group)
            if members.size and not np.any(self.work[members]):
                i = members[np.argmin(closeness[members])]
                self.work[i], self.bound[i] = True, False
                self._model = None

    def sizes(self) -> dict[str, int]:
        return {
            "working": int(np.count_nonzero(self.work)),
            "fixed": int(np.count_nonzero(self.bound)),
            "dropped": int(np.count_nonzero(~self.work & ~self.bound)),
        }


class ResidualSets(StatusSets):
    r"""Units that are single constraints ``r_j >= 0`` with multipliers ``0 <= alpha_j <= u_j``.

    A dropped unit needs ``r_j >= 0``, a fixed one ``r_j <= 0``; a wrong sign is a violated
    status. Units with ``|r_j| <= width * band`` at the start are in ``W``, the others fixed
    (``r_j < 0``, finite ``u_j``) or dropped. With balance labels (a free intercept) the fixed
    multipliers must leave ``sum_j alpha_j y_j = 0`` reachable by ``W``'s; the sets are corrected
    so that it is (otherwise the restricted primal would be unbounded in ``b``).
    """

    @abstractmethod
    def evaluate(self, cand: Candidate) -> tuple[np.ndarray, float]:
        """Residuals ``r_j`` of every unit and the primal objective, in one pass over the data."""

    @property
    @abstractmethod
    def upper(self) -> np.ndarray:
        """Bounds ``u_j`` of the multipliers (``inf`` for hard constraints)."""

    @property
    def labels(self) -> np.ndarray | None:
        """Labels ``y_j`` of the balance constraint, ``None`` without an intercept."""
        return None

    @property
    def scale(self) -> float:
        """Scale of the residuals (the largest margin, at least 1)."""
        return 1.0

    def fixed_alpha(self) -> np.ndarray:
        """Multipliers outside ``W``: ``u_j`` on fixed units, 0 on dropped ones."""
        return np.where(self.bound, self.upper, 0.0)

    def sort(self, start: Start) -> None:
        r = self.evaluate(start.candidate)[0]
        band = self.width * start.band
        finite = np.isfinite(self.upper)
        self.work = (np.abs(r) <= band) | ((r < -band) & ~finite)
        self.bound = (r < -band) & finite
        y = self.labels
        self.seed(np.abs(r), (y < 0, y > 0) if y is not None else (np.ones(r.shape, bool),))
        self.balance(r)

    def balance(self, r: np.ndarray) -> int:
        """Move fixed units into ``W`` until ``W`` can balance them; returns how many.

        The fixed multipliers need ``sum_W alpha_j y_j = t`` with ``t = -sum_E u_j y_j``, which
        ``0 <= alpha_W <= u_W`` reaches iff ``-sum_{W, y<0} u <= t <= sum_{W, y>0} u``. If ``t``
        is too large, fixed negatives (nearest the margin first) join ``W``; if too small,
        fixed positives.
        """
        y = self.labels
        if y is None or not np.any(self.bound):
            return 0
        u = self.upper
        target = -float(u[self.bound] @ y[self.bound])
        room_pos = float(np.sum(u[self.work & (y > 0)]))
        room_neg = float(np.sum(u[self.work & (y < 0)]))
        if target > room_pos:
            label, deficit = -1.0, target - room_pos
        elif target < -room_neg:
            label, deficit = 1.0, -target - room_neg
        else:
            return 0
        # moving a fixed unit of class `label` into W brings t towards the room by u_j
        candidates = np.flatnonzero(self.bound & (y == label))
        order = candidates[np.argsort(-r[candidates], kind="stable")]
        moved = order[: int(np.searchsorted(np.cumsum(u[order]), deficit)) + 1]
        self.work[moved], self.bound[moved] = True, False
        self._model = None
        return int(moved.size)

    def update(self, cand: Candidate) -> Round:
        r, objective = self.evaluate(cand)
        dropped = ~self.work & ~self.bound
        wrong = np.where(dropped, -r, 0.0) + np.where(self.bound, r, 0.0)
        added = self.grow(wrong, STATUS_TOL * self.scale)
        if added:
            added += self.balance(r)
        return Round(added, objective, float(np.max(wrong, initial=0.0)))


class BinarySets(ResidualSets):
    """The binary formulations (and the ranking SVM, a binary SVM on pair differences): one unit
    per sample, residual ``r_i = y_i (w . phi(x_i) + b) - m_i``."""

    f: BinaryProblem

    @property
    def upper(self) -> np.ndarray:
        return self.f.upper

    @property
    def labels(self) -> np.ndarray | None:
        return self.f.y if self.f.fit_intercept else None

    @property
    def scale(self) -> float:
        return max(1.0, float(np.max(self.f.margin)))

    @property
    def c_parametric(self) -> bool:
        return self.f.c_parametric

    def evaluate(self, cand: Candidate) -> tuple[np.ndarray, float]:
        f = self.f
        scores = f.scores(w=cand.w) if cand.w is not None else f.scores(alpha=cand.alpha)
        b = float(cand.b or 0.0)
        norm2 = float(cand.w @ cand.w) if cand.w is not None else float(cand.alpha * f.y @ scores)
        return f.y * (scores + b) - f.margin, float(f.primal_value(norm2, scores, b))

    def build(self) -> CvxModel:
        return self.f.build_restricted(np.flatnonzero(self.work), self.bound)

    def read(self, model: CvxModel) -> Candidate:
        return self.f.read_model(model, fixed=self.fixed_alpha())

    def direct(self) -> tuple[Candidate, BackendResult] | None:
        name = getattr(self.f, "direct_restricted", "")
        return load(name)(self.f, np.flatnonzero(self.work), self.bound) if name else None

    def infeasible(self, exc: InfeasibleProblemError) -> Exception:
        # a subset of the constraints is infeasible only if the full problem is (hard margin)
        return self.f.infeasible_error() or exc


class ComposedSets(ResidualSets):
    r"""The composed problems (any loss, penalty and intercept; linear, kernel or ranking on
    pair differences): units are the sides of the losses' kinks.

    Every loss is piecewise quadratic in ``z_i = sigma_i (w . phi(x_i) + b)``. A margin loss
    has one unit per sample, residual ``r_i = z_i - m_i``; an epsilon-insensitive loss two,
    one per side of its tube: ``r_i^+ = z_i - y_i + eps`` (its multiplier ``u_i > 0`` when the
    target is above the tube) and ``r_i^- = y_i - z_i + eps`` (``u_i < 0`` below it), so
    ``u_i = alpha_i^+ - alpha_i^-`` with each ``alpha`` in ``[0, C c_i]`` (libsvm's
    ``alpha, alpha^*``), at most one of them nonzero. Beyond its kink (``r > 0``) a unit adds
    nothing (dropped, ``alpha = 0``); short of it the unsquared losses are linear (fixed at
    ``alpha = C c_i``: a linear term of the restricted problem), the squared ones quadratic
    (their multiplier is unbounded, so such units stay in ``W``). Under the L1 penalty alone no
    unit is fixed either: ``||w||_1`` minus a linear term can be unbounded below, where a penalty
    with an L2 part keeps every restricted problem bounded. A free intercept's coupling
    ``sum_i sigma_i u_i = 0`` reads ``sum_j l_j alpha_j = 0`` with labels ``l = sigma s`` (``s``
    the unit's side), which :meth:`ResidualSets.balance` keeps reachable.

    The restricted problem is the formulation's own CVXPY problem over the samples with a unit
    in ``W`` (:meth:`~qpsvm.formulations.composed.ComposedProblem.build_restricted`): the primal
    (an LP or QP) for the linear kernel, the dual over those samples for a nonlinear one. A
    sample with a unit in ``W`` has its whole loss there, so its other unit joins ``W`` too.
    """

    def __init__(self, f: CompositeProblem, start: Start, width: float) -> None:
        self.rows, self.sides = composed_units(f)
        super().__init__(f, start, width)

    @property
    def upper(self) -> np.ndarray:
        hi = self.f.loss_conjugate().hi[self.rows]
        return hi if folds(self.f) else np.full(hi.shape, np.inf)

    @property
    def labels(self) -> np.ndarray | None:
        return self.f.sigma[self.rows] * self.sides if self.f.intercept.coupled else None

    @property
    def scale(self) -> float:
        return max(1.0, float(np.max(np.abs(self.f.target))) + self.f.epsilon)

    @property
    def c_parametric(self) -> bool:
        # the kernel dual states C in its box and fixed multipliers
        return self.f.linear

    def evaluate(self, cand: Candidate) -> tuple[np.ndarray, float]:
        f = self.f
        if f.linear:
            z = f.margins(cand.w, cand.b or 0.0)
            objective = f.objective(cand.w, cand.b or 0.0)
        else:
            z = f.sigma * (f.kernel_product(cand.alpha) + (cand.b or 0.0))
            objective = f.objective_alpha(cand.alpha, cand.b or 0.0)
        return unit_residuals(f, z, self.rows, self.sides), float(objective)

    def sort(self, start: Start) -> None:
        super().sort(start)
        self.tie()

    def update(self, cand: Candidate) -> Round:
        found = super().update(cand)
        return Round(found.added + self.tie(), found.objective, found.violation)

    def tie(self) -> int:
        """Move into ``W`` the fixed units of samples with a unit in ``W``; returns how many."""
        inside = np.zeros(self.f.n_samples, dtype=bool)
        inside[self.rows[self.work]] = True
        tied = self.bound & inside[self.rows]
        if np.any(tied):
            self.work |= tied
            self.bound &= ~tied
            self._model = None
        return int(np.count_nonzero(tied))

    def fixed_signs(self) -> np.ndarray:
        """Per sample, the side ``s_i`` of its unit fixed at the bound (0 for none)."""
        signs = np.zeros(self.f.n_samples)
        np.add.at(signs, self.rows[self.bound], self.sides[self.bound])
        return signs

    def build(self) -> CvxModel:
        subset = np.unique(self.rows[self.work])
        return self.f.build_restricted(subset, self.fixed_signs())

    def polish(self, cand: Candidate) -> Candidate:
        """For a nonlinear kernel, the restricted optimum, its KKT polish
        (:func:`~qpsvm.solvers.kernel_start.kkt_polish`) or the exact start, whichever has the
        lowest primal objective (an interior-point answer on a large ``C`` can be less accurate
        than the start)."""
        f = self.f
        if f.linear:
            return cand
        from qpsvm.solvers.kernel_start import kkt_polish  # with the SMO loop: kernels only

        pool = [cand, *kkt_polish(f, cand.alpha, float(cand.b or 0.0))]
        if self.start.exact:
            pool.append(self.start.candidate)
        return min(pool, key=lambda c: f.objective_alpha(c.alpha, c.b))

    def aimed(self, cand: Candidate, excess: float) -> Candidate | None:
        """For a nonlinear kernel, ``cand``'s free samples aimed inside their kinks
        (:func:`~qpsvm.solvers.kernel_start.aimed_point`)."""
        if self.f.linear:
            return None
        from qpsvm.solvers.kernel_start import aimed_point

        return aimed_point(self.f, cand, excess)

    def read(self, model: CvxModel) -> Candidate:
        f = self.f
        alpha = self.fixed_signs() * f.loss_weights()
        if f.linear:
            cand = f.read_model(model)
            alpha[model.index] = cand.alpha
            return Candidate(w=cand.w, b=cand.b, alpha=alpha)
        value = np.asarray(model.variables["alpha"].value, dtype=np.float64).ravel()
        conjugate = f.loss_conjugate()
        index = model.index
        alpha[index] = np.clip(value, conjugate.lo[index], conjugate.hi[index])
        return Candidate(w=None, b=f.kernel_intercept(alpha, f.kernel_product(alpha)), alpha=alpha)


def composed_units(f: CompositeProblem) -> tuple[np.ndarray, np.ndarray]:
    """The working-set units of a composed problem (:class:`ComposedSets`): their samples and
    sides, one unit per sample for a margin loss, two (``+1`` then ``-1``) for a tube."""
    n = f.n_samples
    if f.regression:
        return np.tile(np.arange(n), 2), np.repeat([1.0, -1.0], n)
    return np.arange(n), np.ones(n)


def unit_residuals(
    f: CompositeProblem, z: np.ndarray, rows: np.ndarray, sides: np.ndarray
) -> np.ndarray:
    """``r_j = s_j (z_i - t_i) + eps`` of the units ``(i, s_j)`` at the margins or predictions
    ``z``: their distance beyond the kink (``t`` the margins or targets)."""
    return sides * (z[rows] - f.target[rows]) + f.epsilon


class MulticlassPolish(ABC):
    """The multiclass sets' restricted QP, as the CVXPY model (:meth:`build`, :meth:`read`) or
    as matrices (:meth:`direct`,
    :func:`~qpsvm.solvers.direct_multiclass.solve_restricted_multiclass`) from the same
    constraints (:meth:`restricted`, :meth:`fill`), and their :meth:`WorkingSet.polish`: the
    restricted optimum (an
    interior-point answer, relative gap about ``1e-11``) replaced by its refinement
    (:func:`~qpsvm.solvers.refine.refine_multiclass`, the KKT equations on the constraints
    within :data:`POLISH_TAU` of tight), when its primal objective is lower. The refined point
    is the optimum to round-off when its sets are right, and the certificate's first dual
    points then prove it. Measured on the digits and 1e4 x 50 with 10 classes, both variants:
    the threshold ``1e-4`` found the optimum's sets at all four points, ``1e-7`` (the
    refinement's first for a full QP's answer) at one."""

    f: MulticlassProblem

    @abstractmethod
    def restricted(self) -> tuple[np.ndarray, np.ndarray | None]:
        """The restricted model's constraints (indices into ``f.rows`` / ``f.cols``) and
        those fixed at their bound (``None`` for none)."""

    @abstractmethod
    def fill(self, cand: Candidate) -> Candidate:
        """``cand`` with the multipliers of the constraints fixed at their bound set."""

    def build(self) -> CvxModel:
        subset, at_bound = self.restricted()
        return self.f.build(subset=subset, at_bound=at_bound)

    def read(self, model: CvxModel) -> Candidate:
        return self.fill(self.f.read_model(model))

    def direct(self) -> tuple[Candidate, BackendResult] | None:
        solved = load(self.f.direct_restricted)(self.f, *self.restricted())
        return None if solved is None else (self.fill(solved[0]), solved[1])

    def polish(self, cand: Candidate) -> Candidate:
        f = self.f
        if cand.w is None:
            return cand
        best, lowest = cand, f.objective(cand.w)
        for refined in refine_multiclass(f, cand, taus=(POLISH_TAU,)):
            value = f.objective(refined.w)
            if value < lowest:
                best, lowest = refined, value
        return best


class WestonWatkinsSets(MulticlassPolish, ResidualSets):
    """Weston-Watkins: one unit per constraint ``(i, c)``, ``c != y_i``, residual
    ``r_ic = w_{y_i} . x_i - w_c . x_i - 1``, bound ``C s_i``."""

    f: MulticlassProblem

    @property
    def upper(self) -> np.ndarray:
        upper = self.f.upper[self.f.rows]
        return upper if folds(self.f) else np.full(upper.shape, np.inf)

    def evaluate(self, cand: Candidate) -> tuple[np.ndarray, float]:
        f = self.f
        S = f.scores(cand.w)
        r = f.margins(S)[f.rows, f.cols] - 1.0
        return r, float(f.primal_value(f.penalty_value(cand.w), S))

    def restricted(self) -> tuple[np.ndarray, np.ndarray | None]:
        bound = np.flatnonzero(self.bound)
        return np.flatnonzero(self.work), bound if bound.size else None

    def fill(self, cand: Candidate) -> Candidate:
        f = self.f
        bound = np.flatnonzero(self.bound)
        cand.alpha[f.rows[bound], f.cols[bound]] = f.upper[f.rows[bound]]
        return cand


class CrammerSingerSets(MulticlassPolish, StatusSets):
    r"""Crammer-Singer: one unit per example, whose constraints ``(i, c)`` share one slack.

    With the unclipped losses ``h_ic = 1 - (w_{y_i} - w_c) . x_i``: a dropped example needs
    ``max_c h_ic <= 0``; an example fixed at its bound has its whole budget ``C s_i`` on one
    class ``c* = top_i`` and needs ``h_{ic*} >= 0`` and ``h_{ic*} = max_c h_ic``; an example in
    ``W`` has in the QP its *active* constraints, those within ``band`` of its largest loss, and
    needs every other one to satisfy ``h_ic <= xi_i = max(0, max_{active} h_ic)`` (a violated one
    becomes active). At the start, examples with ``max_c h_ic < -band`` are dropped, those with
    ``max_c h_ic > band`` and a runner-up more than ``band`` below are fixed, the others are in
    ``W``.
    """

    f: MulticlassProblem

    def _losses(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        S = self.f.scores(W)
        return S, np.where(self.f.mask, 1.0 - self.f.margins(S), -np.inf)

    def key(self) -> tuple[np.ndarray, ...]:
        return (self.work, self.bound, self.top, self.active)

    def _activate(self, h: np.ndarray, first: np.ndarray, rows: np.ndarray) -> None:
        """Make the constraints of the examples ``rows`` within ``band`` of their largest loss
        active."""
        self.active[rows] = self.f.mask[rows] & (h[rows] >= first[rows, None] - self.band)

    def sort(self, start: Start) -> None:
        h = self._losses(start.candidate.w)[1]
        self.band = self.width * start.band
        self.top = np.argmax(h, axis=1)
        ordered = np.partition(h, -2, axis=1)
        first, second = ordered[:, -1], ordered[:, -2]
        self.bound = (first > self.band) & (first - second > self.band) & folds(self.f)
        self.work = (first >= -self.band) & ~self.bound
        self.seed(np.abs(first), (np.ones(first.shape, bool),))
        self.active = np.zeros_like(self.f.mask)
        self._activate(h, first, np.flatnonzero(self.work))

    def update(self, cand: Candidate) -> Round:
        S, h = self._losses(cand.w)
        rows = np.arange(h.shape[0])
        first = h.max(axis=1)
        fixed = h[rows, self.top]
        dropped = ~self.work & ~self.bound
        wrong = np.where(dropped, first, 0.0) + np.where(
            self.bound, np.maximum(-fixed, first - fixed), 0.0
        )
        # an example in W: an inactive constraint above the slack of the active ones
        xi = np.maximum(0.0, np.max(np.where(self.active, h, -np.inf), axis=1))
        loose = np.where(self.work[:, None] & ~self.active & self.f.mask, h - xi[:, None], 0.0)
        activated = self.work[:, None] & (loose > STATUS_TOL)
        self.active |= activated
        joined = self.work.copy()
        added = self.grow(wrong, STATUS_TOL) + int(np.count_nonzero(activated))
        self._activate(h, first, np.flatnonzero(self.work & ~joined))
        if np.any(activated):
            self._model = None
        objective = float(self.f.primal_value(self.f.penalty_value(cand.w), S))
        violation = max(float(np.max(wrong, initial=0.0)), float(np.max(loose, initial=0.0)))
        return Round(added, objective, violation)

    def release(self) -> np.ndarray:
        moved = super().release()
        self.active[moved] = self.f.mask[moved]
        return moved

    def _constraint(self, i: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Index into ``f.rows`` / ``f.cols`` of the constraints ``(i, c)``, ``c != y_i``."""
        y = self.f.y[i]
        return i * (self.f.n_classes - 1) + c - (c > y)

    def restricted(self) -> tuple[np.ndarray, np.ndarray | None]:
        f = self.f
        subset = np.flatnonzero(self.active[f.rows, f.cols])
        bound = np.flatnonzero(self.bound)
        at_bound = self._constraint(bound, self.top[bound])
        return subset, at_bound if at_bound.size else None

    def fill(self, cand: Candidate) -> Candidate:
        bound = np.flatnonzero(self.bound)
        cand.alpha[bound, self.top[bound]] = self.f.upper[bound]
        return cand


# ---------------------------------------------------------------------------- starting point
def start_binary(f: BinaryProblem) -> Start:
    """The measured-fastest approximate optimum for a binary formulation.

    Smoothed Newton for linear problems with at most
    :data:`~qpsvm.solvers.warm_start.NEWTON_MAX_FEATURES` features (for the hard margin on the
    soft margin with ``C =`` :data:`HARD_SURROGATE_C`), dual coordinate descent for wider (e.g.
    sparse text) data, SMO run to the duality gap :data:`START_GAP` for a nonlinear kernel (an
    exact start: certified, it is the answer); for a poly kernel with many samples per
    coordinate of its explicit feature map, the linear SVM on that map instead
    (:mod:`~qpsvm.solvers.feature_map`, an exact start too).
    """
    if not f.linear:
        from qpsvm.solvers.feature_map import feature_map_pays, feature_map_point
        from qpsvm.solvers.smo import smo_start

        if feature_map_pays(f):
            return Start(feature_map_point(f), STATUS_TOL, "feature_map", 0, exact=True)
        run = smo_start(f, SMO_TOL, START_GAP)
        cand = Candidate(w=None, b=run.b, alpha=run.alpha)
        band = max(run.violation, STATUS_TOL)
        return Start(cand, band, "smo", run.n_iter, exact=run.status == "gap")
    if f.n_features <= NEWTON_MAX_FEATURES:
        return smoothed_newton(f, C=f.C if math.isfinite(f.C) else HARD_SURROGATE_C)
    return dual_coordinate_descent(f, tol=DCD_TOL, max_epochs=DCD_MAX_EPOCHS)


def sampled_start(f: Problem, model: CvxModel, sample: np.ndarray, units: int) -> Start:
    """The optimum of the restricted problem ``model`` over ``sample`` (``sample.size`` of the
    ``units`` units, ``C`` scaled by ``units / sample.size`` so that the losses weigh as on the
    full data): the start of the penalties without a dual method of their own (L1, L1 + L2).
    Its band is set so that about ``sample.size`` units lie within :data:`WIDTH` bands of their
    margin (the restricted problem's size, which the full-data checks then grow as needed)."""
    model.parameters["C"].value = f.C * units / sample.size
    solve_model(model, backend_order(None), {}, f.always_feasible)
    cand = f.read_model(model)
    return Start(Candidate(w=cand.w, b=cand.b, alpha=None), math.nan, "sample", 0)


def composed_sets(f: CompositeProblem, start: Start | None, width: float) -> ComposedSets:
    """The working set of a composed problem, sorted at ``start`` (default: the optimum over a
    sample of :data:`START_SAMPLE` samples, :func:`sampled_start` for the linear kernel,
    its band from the residuals' distribution; for a nonlinear kernel the exact start of
    :func:`~qpsvm.solvers.kernel_start.kernel_smo_start`)."""
    if start is None and not f.linear:
        from qpsvm.solvers.kernel_start import kernel_smo_start

        start = kernel_smo_start(f)
    if start is None:
        sample = _sample(f.n_samples)
        start = sampled_start(f, f.build_restricted(sample, None), sample, f.n_samples)
        z = f.margins(start.candidate.w, start.candidate.b)
        r = unit_residuals(f, z, *composed_units(f))
        start.band = _band(r, sample.size, width)
    return ComposedSets(f, start, width)


def _sample(n: int, constraints: int = 1) -> np.ndarray:
    """Units of ``n``, evenly spread, that hold about :data:`START_SAMPLE` constraints
    (``constraints`` per unit; all units when they hold fewer)."""
    size = min(n, max(1, START_SAMPLE // constraints))
    return np.unique(np.linspace(0, n - 1, size).astype(np.intp))


def _band(r: np.ndarray, size: int, width: float) -> float:
    """The band that puts the ``size`` residuals ``r`` nearest 0 within ``width`` bands."""
    nearest = float(np.partition(np.abs(r), size - 1)[size - 1])
    return max(nearest / width, STATUS_TOL)


def binary_sets(f: BinaryProblem, start: Start | None, width: float) -> BinarySets:
    """The working set of a binary (or ranking) SVM, sorted at ``start`` (default:
    :func:`start_binary`)."""
    return BinarySets(f, start_binary(f) if start is None else start, width)


def multiclass_sets(f: MulticlassProblem, start: Start | None, width: float) -> StatusSets:
    """The working set of a multiclass SVM (:class:`CrammerSingerSets` or
    :class:`WestonWatkinsSets`), sorted at ``start`` (default:
    :func:`~qpsvm.solvers.warm_start.multiclass_dual` for the L2 penalty, else the optimum over
    a sample of :data:`START_SAMPLE` examples, :func:`sampled_start`)."""
    sets = CrammerSingerSets if f.crammer_singer else WestonWatkinsSets
    if start is not None:
        return sets(f, start, width)
    if f.penalty.name != "l2":  # the dual method states the L2 penalty: a sample's optimum
        sample = _sample(f.n_samples, f.n_classes - 1)
        constraints = np.flatnonzero(np.isin(f.rows, sample))
        start = sampled_start(f, f.build(subset=constraints), sample, f.n_samples)
        r = 1.0 - f.margins(f.scores(start.candidate.w))
        losses = np.where(f.mask, r, -np.inf)
        units = losses.max(axis=1) if f.crammer_singer else losses[f.rows, f.cols]
        start.band = _band(units, sample.size, width)
        return sets(f, start, width)
    start, exact = tightened_kkt_start(f, multiclass_dual(f))
    ws = sets(f, start, width)
    if exact is not None:
        ws.start = exact  # certified first; the sets stay sorted at the approximate start
    return ws


def tightened_kkt_start(f: MulticlassProblem, start: Start) -> tuple[Start, Start | None]:
    """The descent's start and its exact start (:func:`kkt_start`), continuing the descent at
    tighter tolerances while the exact start fails.

    Each step divides the tolerance by :data:`KKT_TIGHTEN` (down to :data:`KKT_TIGHTEST`) and
    continues the descent from where it stopped with as many epochs as the first descent took;
    a step that does not reach its tolerance ends the search, and the last start that did sorts
    the working set. Measured on generated data (``d = 50``, 10 classes, ``C = 1``,
    Weston-Watkins, one thread): at ``n = 1000`` the descent's ``1e-2`` (94 epochs) reads sets
    whose KKT point is ``2.3e-4`` off, and the restricted QP on 372 units takes 0.2-0.5 s;
    continuing to ``3.2e-3`` takes 40 more epochs (0.002 s), and its KKT point is the optimum to
    ``8e-14``. Each half decade costs 0.4-1.5 times the first descent's epochs (``n`` = 1000
    to 7000 and the digits), while the restricted QP's cost hardly grows with ``n``: at
    ``n = 1e4`` (2363 epochs) and ``2e4`` (3011) the continuation took 0.4-1.5 s without
    reaching the sets, so it is tried only after a descent of at most
    :data:`KKT_TIGHTEN_VISITS` example visits.
    """
    exact = kkt_start(f, start)
    if exact is not None or start.band > multiclass_dual_tol(f):
        return start, exact
    if start.iterations * f.n_samples > KKT_TIGHTEN_VISITS:
        return start, None
    tol, budget = start.band, max(start.iterations, 1)
    while exact is None and tol > KKT_TIGHTEST:
        tol = max(tol / KKT_TIGHTEN, KKT_TIGHTEST)
        tighter = multiclass_dual(f, tol=tol, max_epochs=budget, warm=start.candidate)
        if tighter.band > tol:
            break
        start = Start(tighter.candidate, tol, tighter.method, start.iterations + tighter.iterations)
        exact = kkt_start(f, start)
    return start, exact


def kkt_start(f: MulticlassProblem, start: Start) -> Start | None:
    """An exact start from the approximate one: the KKT equations on the sets the start makes
    tight within :data:`KKT_BANDS` error bands (:func:`~qpsvm.solvers.refine.refine_multiclass`),
    kept when its duality gap (its own multipliers, projected) is below :data:`START_GAP`: with
    the optimum's sets it is the optimum to round-off, and no restricted QP is solved. Tried only
    when the dual coordinate descent reached its default tolerance (where its epochs ran out,
    as for Crammer-Singer on 1e4 x 50 with 10 classes, the sets read off it were measured to
    be far off)."""
    if start.band > multiclass_dual_tol(f):
        return None
    for cand in refine_multiclass(
        f, start.candidate, taus=tuple(b * start.band for b in KKT_BANDS)
    ):
        primal = f.objective(cand.w)
        dual = f.dual_objective(f.project_dual(cand.alpha))
        if primal - dual <= START_GAP * max(1.0, abs(primal)):
            return Start(cand, STATUS_TOL, "kkt", start.iterations, exact=True)
    return None


def working_set_for(f: Problem, start: Start | None = None, width: float = WIDTH) -> StatusSets:
    """The working set formulation ``f`` names (its ``working_set``), sorted at ``start``
    (default: the formulation's fast approximate optimum)."""
    return part(f, "working_set", "working_set")(f, start, width)


# ---------------------------------------------------------------------------- the loop
def run_working_set(
    ws: WorkingSet,
    *,
    solver: str | None = None,
    tol: float = DEFAULT_TOL,
    max_rounds: int = 50,
    refine: bool = True,
    options: dict[str, Any] | None = None,
) -> Solution:
    """The working-set loop: solve on ``W``, check the full data, grow ``W``, certify.

    Parameters
    ----------
    ws : WorkingSet
        The formulation's sets (e.g. :class:`BinarySets`), already initialised.
    solver : str, optional
        CVXPY solver for the restricted QPs; ``None`` tries Clarabel, then OSQP.
    tol : float, default=1e-9
        Relative gap the returned point is certified at.
    max_rounds : int, default=50
        Restricted solves at most.
    refine : bool, default=True
        If the final candidate fails its certificate, try its support-set refinements
        (:func:`~qpsvm.solvers.finish.finish`) before giving up.
    options : dict, optional
        Backend settings, overriding :data:`~qpsvm.solvers.backends.SETTINGS`.

    Raises
    ------
    InaccurateSolutionError
        The working set still changed after ``max_rounds`` rounds.
    UncertifiedSolutionError
        The final point does not pass its certificate at ``tol``.
    InfeasibleProblemError, NotSeparableError
        A restricted problem, hence the full one, is infeasible.
    """
    f = ws.f
    # a named backend is checked at once; the default order is probed (importing CVXPY) only
    # when a restricted model is solved
    if solver is not None:
        backend_order(solver)
    start = time.perf_counter()
    if ws.start.exact:
        solution = _certified_start(ws, tol, start)
        if solution is not None:
            return solution
    grown = _grow(ws, solver, options or {}, max_rounds, start)
    certifying = time.perf_counter()
    cand, cert = finish(
        f,
        ws.polish(grown.cand),
        tol,
        what="the working-set optimum",
        advice="Standardise the features, or use method='full'.",
        refine=refine,
        eager=False,
    )
    certify_time = time.perf_counter() - certifying
    it, obj, tm = (np.array(v) for v in zip(*grown.rows, strict=True))
    return f.solution_from(
        cand,
        cert,
        solver=grown.solver,
        status="optimal",
        n_iter=len(grown.rows),
        history=History(iteration=it.astype(int), objective=obj, time=tm),
        info={
            "rounds": len(grown.rows),
            "certify_time": certify_time,
            "backend_time": grown.backend_time,
            "backend_iterations": grown.backend_iter,
            **ws.sizes(),
        },
    )


def _certified_start(ws: WorkingSet, tol: float, start: float) -> Solution | None:
    """The start (marked exact) as the solution when it passes its certificate at ``tol``;
    ``None`` (logged) when the restricted QPs are needed."""
    f = ws.f
    certify = load(f.certifier)
    cand = ws.start.candidate
    cert = certify(f, cand, tol=tol)
    if not cert.passed:
        scale = max(1.0, abs(cert.primal_objective))
        excess = cert.primal_objective - cert.dual_objective - tol * scale
        aimed = ws.aimed(cand, excess)
        if aimed is not None:
            aimed_cert = certify(f, aimed, tol=tol)
            if aimed_cert.passed:
                cand, cert = aimed, aimed_cert
    if cert.passed:
        return f.solution_from(
            cand,
            cert,
            solver=ws.start.method,
            status="optimal",
            n_iter=0,
            info={"rounds": 0, "certify_time": time.perf_counter() - start, **ws.sizes()},
        )
    logger.info(
        "the %s start is certified only to %.3g: solving restricted QPs",
        ws.start.method,
        cert.relative_gap,
    )
    return None


@dataclass
class _Grown:
    """The working set's rounds: per round ``(round, objective, seconds)``, the last restricted
    optimum, the backend that solved it, and the backends' seconds and iterations."""

    rows: list[tuple[int, float, float]]
    cand: Candidate
    solver: str
    backend_time: float
    backend_iter: int


def _grow(
    ws: WorkingSet, solver: str | None, options: dict[str, Any], max_rounds: int, start: float
) -> _Grown:
    """Restricted QPs on ``W``, each checked on the full data (``ws.update``), until a round
    adds nothing; :class:`~qpsvm.exceptions.InaccurateSolutionError` after ``max_rounds``.
    With the default backend and settings each is first solved from its matrices
    (:meth:`WorkingSet.direct`), then, where that fails, as the CVXPY model."""
    rows: list[tuple[int, float, float]] = []
    backend_time, backend_iter = 0.0, 0
    check = Round(0, math.nan, math.inf)
    for rnd in range(1, max_rounds + 1):
        direct = ws.direct() if solver is None and not options else None
        if direct is not None:
            cand, result = direct
        else:
            solved = _solve_restricted(ws, backend_order(solver), options)
            if solved is None:
                continue
            result = solved
            cand = ws.read(ws.model())
        backend_time += result.solve_time
        backend_iter += result.n_iter
        check = ws.update(cand)
        rows.append((rnd, check.objective, time.perf_counter() - start))
        logger.info(
            "working set round %d: %s, added %d, max violation %.3g, objective %.12g, %.3fs",
            rnd,
            ws.sizes(),
            check.added,
            check.violation,
            check.objective,
            rows[-1][2],
        )
        if check.added == 0:
            return _Grown(rows, cand, result.solver, backend_time, backend_iter)
    raise InaccurateSolutionError(
        f"the working set still changed after max_rounds={max_rounds} rounds "
        f"({ws.sizes()}, last violation {check.violation:.3g}); raise max_rounds, or solve "
        "the full problem with method='full'."
    )


def _solve_restricted(
    ws: WorkingSet, order: list[str], options: dict[str, Any]
) -> BackendResult | None:
    """The backend's run on the restricted model, or ``None`` when the backends failed on it
    and the units fixed at their bound were released into ``W`` (the round is then repeated).

    A start far from the optimum can fix many units at their bound; their large linear term may
    defeat the backends, and the model without it solves.
    """
    try:
        return solve_model(ws.model(), order, options, ws.f.always_feasible)
    except InfeasibleProblemError as exc:
        raise ws.infeasible(exc) from exc
    except SolverError as exc:
        if not ws.release().size:
            raise
        logger.warning("restricted QP failed (%s); releasing the fixed units into W", exc)
        return None


def solve_working_set(
    f: Problem,
    solver: str | None = None,
    *,
    tol: float = DEFAULT_TOL,
    max_rounds: int = 50,
    width: float = WIDTH,
    start: Start | None = None,
    refine: bool = True,
    **options: Any,
) -> Solution:
    """Exact, certified optimum by the working-set method (see :mod:`~qpsvm.solvers.working_set`).

    Parameters
    ----------
    f : Formulation
        ``SoftMarginPrimal``, ``HardMargin``, ``SoftMarginDual`` (any kernel), ``RankingSVM``
        or ``MulticlassSVM`` (both variants).
    solver : str, optional
        CVXPY solver of the restricted QPs (default Clarabel, falling back to OSQP).
    tol : float, default=1e-9
        Relative gap the answer is certified at.
    max_rounds : int, default=50
        Restricted solves at most; degenerate data that keep changing the working set end in
        :class:`~qpsvm.exceptions.InaccurateSolutionError`.
    width : float, default=8
        Constraints within ``width`` error bands of their margin start in the working set.
    start : Start, optional
        Approximate optimum to start from (default: see :func:`working_set_for`).
    refine : bool, default=True
        Try support-set refinements if the final candidate fails its certificate.
    **options
        Backend settings.

    Returns
    -------
    Solution
        Certified at ``tol``; ``info`` holds the rounds, backend time and final set sizes,
        ``history`` the objective after each round.
    """
    max_rounds = check_int(max_rounds, "max_rounds")
    width = check_number(width, "width")
    tol = check_tol(tol)
    begun = time.perf_counter()
    ws = working_set_for(f, start, float(width))
    start_time = time.perf_counter() - begun
    sol = run_working_set(
        ws, solver=solver, tol=tol, max_rounds=max_rounds, refine=refine, options=options
    )
    sol.info.update(start=ws.start.method, start_time=start_time)
    return sol

"""The :class:`Formulation` base: data plus math, with thin entry points to solvers and verify."""

from __future__ import annotations

import copy
import math
import sys
import time
from abc import ABC, abstractmethod
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from qpsvm._lazy import lazy_module
from qpsvm.contract import check_method, load, option_names, signature_of
from qpsvm.exceptions import InvalidInputError
from qpsvm.solution import Solution
from qpsvm.verify.certificate import DEFAULT_TOL

cp = lazy_module("cvxpy")

if TYPE_CHECKING:
    from qpsvm.formulations.model import CvxModel
    from qpsvm.solution import Candidate
    from qpsvm.verify.certificate import Certificate
    from qpsvm.verify.comparison import Comparison

__all__ = ["Formulation"]


class Formulation(ABC):
    """A support vector machine stated once: a CVXPY problem and its numpy math.

    Subclasses store validated data in ``__init__`` and implement :meth:`build_problem` (the
    declarative CVXPY model over all or part of the constraints) and the numpy side used by the
    verifier and the online solvers (:meth:`objective`, ``dual_objective``, ``project_dual``).
    :meth:`solve`, :meth:`certify` and :meth:`compare` only dispatch: solver and verifier modules
    are imported inside them, so the math never depends on the machinery. What solvers may ask
    of a formulation is declared in :mod:`qpsvm.contract`.
    """

    #: Names of the methods of :data:`qpsvm.contract.METHODS` this formulation supports.
    methods: ClassVar[tuple[str, ...]] = ()
    #: "module:function" ``(f, start, width) -> StatusSets``: this formulation's working set
    #: (:mod:`qpsvm.solvers.working_set`); ``""`` without one.
    working_set: ClassVar[str] = ""
    #: "module:function" ``f -> OnlineProblem``: this formulation's stochastic subgradient
    #: step (:mod:`qpsvm.solvers.subgradient`); ``""`` without one.
    online_problem: ClassVar[str] = ""
    #: "module:function" ``f -> CoordinateProblem``: this formulation's dual coordinate
    #: descent data (:mod:`qpsvm.solvers.coordinate`, ``method="dcd"``); ``""`` without one.
    coordinate_problem: ClassVar[str] = ""
    #: "module:function" ``(f, cand) -> list[Candidate]``: exact refinements of an approximate
    #: optimum (:mod:`qpsvm.solvers.refine`); ``""`` without one.
    refinement: ClassVar[str] = ""
    #: "module:function" ``(f, tol, refine) -> Solution | None``: the full QP given to its
    #: backend as matrices, without CVXPY's compilation (:mod:`qpsvm.solvers.direct`), tried
    #: first by ``method="qp"`` with the default backend; ``""`` without one.
    direct_qp: ClassVar[str] = ""
    #: "module:function" ``(f, work, bound) -> (Candidate, BackendResult) | None``: the
    #: working set's restricted QP given to its backend as matrices (:mod:`qpsvm.solvers.direct`,
    #: :mod:`qpsvm.solvers.direct_multiclass`: ``work`` and ``bound`` as the working set states
    #: them to ``build``), tried first with the default backend; ``""`` without one.
    direct_restricted: ClassVar[str] = ""
    #: "module:function" ``(f, solver, start) -> Solution``: the exact rational optimum
    #: (:mod:`qpsvm.solvers.exact`, ``method="exact"``); ``""`` without one.
    exact_oracle: ClassVar[str] = ""
    #: Why a registered method is not among :attr:`methods`, said in its error (method ->
    #: reason).
    refusals: ClassVar[dict[str, str]] = {}
    #: "module:function" that certifies a candidate of this formulation.
    certifier: ClassVar[str] = ""
    #: "module:function" that turns a solution, estimator or arrays into a candidate.
    candidate_reader: ClassVar[str] = "qpsvm.verify.candidates:read_candidate"
    #: Whether every instance has a solution (soft margins: ``w = 0`` with large slacks, and the
    #: objective is bounded below): a backend that reports such a problem infeasible or
    #: unbounded has failed numerically, and the next backend is tried.
    always_feasible: ClassVar[bool] = True

    _model: CvxModel | None = None
    _reference: Any = None
    #: Largest ``n_samples * n_features`` for which :meth:`reference_solution` falls back on
    #: the exact oracle.
    exact_hint_size: ClassVar[int] = 20_000

    @abstractmethod
    def build(self, **subset: Any) -> CvxModel:
        """Build the CVXPY model over every constraint (no arguments) or over a subset of them
        (a working set); each formulation documents its subsets and named parts."""

    @property
    def full_model(self) -> CvxModel:
        """The full model (problem, named variables, constraints, parameters), built once."""
        if self._model is None:
            self._model = self.build()
        return self._model

    @property
    def problem(self) -> cp.Problem:
        """The full :class:`cvxpy.Problem`, built on first access and cached."""
        return self.full_model.problem

    @property
    def variables(self) -> dict[str, cp.Variable]:
        """Named CVXPY variables of the full problem."""
        return self.full_model.variables

    @property
    def constraints(self) -> dict[str, cp.Constraint]:
        """Named CVXPY constraints of the full problem; their duals follow
        :mod:`qpsvm.verify.conventions`."""
        return self.full_model.constraints

    def build_problem(self, **subset: Any) -> cp.Problem:
        """The CVXPY problem over all constraints or a subset (see :meth:`build`)."""
        return self.build(**subset).problem

    def make_feasible(self, cand: Candidate) -> Candidate:
        """``cand`` moved onto the feasible set where rounding may leave it just outside (the
        hard margin); the soft margins have no constraint a candidate can violate."""
        return cand

    @abstractmethod
    def objective(self, w: Any, b: Any = 0.0) -> float:
        """Primal objective ``1/2 ||w||^2 + C sum_i s_i xi_i`` of a candidate, in numpy."""

    def with_C(self, C: float) -> Formulation:
        """The same problem with another ``C``: a shallow copy sharing the data, with its own
        model. Used by regularisation paths."""
        from qpsvm._validation import check_positive

        other = self.fresh_copy()
        other.C = check_positive(C, "C")
        return other

    def fresh_copy(self) -> Formulation:
        """The same problem as a shallow copy sharing the data, with its own model and no
        cached solution: what a solve may fill (a model, a Gram matrix) stays off ``self``."""
        other = copy.copy(self)
        other._model = None
        other._reference = None
        return other

    @property
    def n_samples(self) -> int:
        """Number of training samples ``n``."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of features ``d`` (of the input space)."""
        return int(self.X.shape[1])

    def check_features(self, X: Any) -> Any:
        """New points ``X`` (already a checked matrix), refused unless they have the training
        data's ``n_features`` columns."""
        if X.shape[1] != self.n_features:
            raise InvalidInputError(
                f"X has {X.shape[1]} features but the formulation was built with {self.n_features}."
            )
        return X

    def weights_of(self, solution: Any) -> Any:
        """The checked ``w`` of a :class:`~qpsvm.Solution`, or ``solution`` itself taken as
        ``w``."""
        return self.check_w(solution.w if isinstance(solution, Solution) else solution)

    def default_method(self) -> str:
        """The method :meth:`solve` uses when none is named."""
        return "qp"

    def default_path_method(self) -> str:
        """The method :meth:`path` uses when none is named: ``"working_set"`` if supported
        (the previous optimum's sets start the next value), else ``"qp"``."""
        return "working_set" if "working_set" in self.methods else "qp"

    def solve(
        self, method: str | None = None, solver: str | None = None, **options: Any
    ) -> Solution:
        """Solve the problem.

        Parameters
        ----------
        method : str, optional
            One of :attr:`methods` (e.g. ``"qp"``: the full problem by a QP solver, exact and
            certified; see :data:`qpsvm.contract.METHODS`). ``None`` picks
            :meth:`default_method`.
        solver : str, optional
            CVXPY solver name for the methods that use one (``"CLARABEL"``, ``"OSQP"``, ...).
            ``None`` picks the measured default.
        **options
            Passed to the method (and, for exact methods, to the backend).

        Returns
        -------
        Solution
        """
        method = self.default_method() if method is None else method
        spec = check_method(self, method)
        if solver is not None and not spec.backend:
            raise InvalidInputError(
                f"method={method!r} uses no CVXPY solver; got solver={solver!r}. Drop it (or use "
                "an exact method such as method='qp' to solve with that solver)."
            )
        run = load(spec.run)
        names = option_names(run) if options else None
        if names is not None:
            unknown = sorted(set(options) - names)
            if unknown:
                accepted = sorted(names - {"f", "solver"})
                raise InvalidInputError(
                    f"unknown option(s) {unknown} for method={method!r}; it accepts {accepted}."
                )
        start = time.perf_counter()
        solution = run(self, solver=solver, **options)
        solution.solve_time = time.perf_counter() - start
        solution.method = method
        return solution

    def path(self, Cs: Any, **options: Any) -> list[Solution]:
        """Certified solutions along a regularisation path, one per value of ``C``.

        The binary and ranking SVMs follow their support sets from one value to the next by
        event tracking; the others re-solve their compiled problem (``C`` is a CVXPY parameter)
        or keep their working set. See :func:`qpsvm.solvers.path.solve_path`.
        """
        return load("qpsvm.solvers.path:solve_path")(self, Cs, **options)

    def certify(
        self,
        candidate: Any = None,
        *,
        w: Any = None,
        b: Any = None,
        alpha: Any = None,
        tol: float = DEFAULT_TOL,
        reference: bool = True,
    ) -> Certificate:
        """Certify a candidate: a :class:`~qpsvm.Solution`, a fitted scikit-learn estimator, or
        arrays ``w`` (and ``b``) or ``alpha``.

        ``b=None`` means the best intercept for the given ``w`` (0 without an intercept). The
        certificate is computed from the data alone; see :class:`~qpsvm.verify.Certificate`.
        When the candidate's own dual points do not certify it and ``reference`` is true, the
        dual point of the problem's own solution (:meth:`reference_solution`, solved once) is
        tried as well, so the gap bounds the candidate's suboptimality tightly however poor the
        candidate is; solvers checking their own iterates pass ``reference=False``. The
        certifier (every family's; another's where it takes ``hints`` and ``ceiling``) is given
        the solution's point as a hint and its rigorous primal as a bound on the optimum, so
        that it stops at that point for a candidate that fails whatever the point
        (:func:`~qpsvm.verify.certificate.beyond_ceiling`); once the solution is cached its
        point is tried with the candidate's first, and a failing candidate's certificate then
        costs no search of its own sets however poor the candidate. So is a candidate that a
        multiple of its own ``w`` shows to fail (:meth:`_fails_by_scaling`), with the solution
        solved first.
        """
        candidate = self._read_estimator(candidate)
        cand = load(self.candidate_reader)(self, candidate, w=w, b=b, alpha=alpha)
        certifier = load(self.certifier)
        if not reference or not {"hints", "ceiling"} <= signature_of(certifier).parameters.keys():
            return certifier(self, cand, tol=tol)
        cached = self._reference is not None and self._reference is not False
        if cached or (self._fails_by_scaling(cand, tol) and self._solved()):
            # the solution is at hand (or the candidate fails whatever the point, so its own
            # sets cannot settle it) and bounds the optimum: its point first, and the search
            # stops there for a candidate it passes or one that fails whatever the point
            return certifier(self, cand, tol=tol, **self._reference_hint())
        cert = certifier(self, cand, tol=tol)
        if cert.passed or not self._solved():
            return cert
        # the bounds must not depend on the candidate: try this problem's own solution (cached),
        # its multipliers made exactly feasible and evaluated rigorously
        other = certifier(self, cand, tol=tol, **self._reference_hint())
        return other if other.dual_objective > cert.dual_objective else cert

    def _solved(self) -> bool:
        """Whether :meth:`reference_solution` has (or now finds) a solution."""
        return self.reference_solution() is not None

    def _fails_by_scaling(self, cand: Candidate, tol: float) -> bool:
        r"""Whether a multiple :math:`t (w, b)`, :math:`t = 1 \pm 10^{-j}`, ``j = 1..6``, of
        a bare ``w`` (and ``b``, 0 when not given; a candidate with multipliers has its own
        point to try first, which costs less than the screen) has a float objective
        below the candidate's by more than twice ``tol`` relative to it: then
        :math:`P^* < P(w, b)` by more than the tolerance, and the candidate fails whatever
        the dual point, so the points of its own sets cannot settle its certificate and the
        problem's own solution is fetched first (:meth:`certify`). Twelve objectives, each a
        product with ``X``. A screen: only the order of the work depends on it, never a
        bound (a spurious decrease costs a solve, a missed one the search of the candidate's
        sets); on a moderately suboptimal ``w`` the best multiple takes about 2% of the
        suboptimality (the digits, Crammer-Singer and Weston-Watkins, ``W*`` perturbed by
        1e-8 to 1e-2), so it decides from about 1e-7 relative."""
        if cand.w is None or cand.alpha is not None:
            return False
        w = np.asarray(cand.w, dtype=np.float64)
        b = 0.0 if cand.b is None else np.asarray(cand.b, dtype=np.float64)
        value = self.objective(w, b)
        if not math.isfinite(value):
            return False
        below = value - 2.0 * tol * max(1.0, abs(value))
        for step in 10.0 ** -np.arange(1, 7):
            for t in (1.0 - step, 1.0 + step):
                if self.objective(t * w, t * b) < below:
                    return True
        return False

    def _reference_hint(self) -> dict[str, Any]:
        """The certifier's keywords for the cached :meth:`reference_solution`: its dual point as
        a hint and its rigorous primal as the ``ceiling`` on the optimum."""
        reference = self._reference
        return {"hints": (self.dual_hint(reference),), "ceiling": _ceiling_of(reference)}

    def dual_hint(self, solution: Solution) -> Any:
        """The dual point of ``solution`` that :meth:`certify` gives its certifier to try:
        ``solution.alpha``."""
        return solution.alpha

    def reference_solution(self) -> Solution | None:
        """This problem's own certified solution, computed once and kept: :meth:`certify`
        takes its dual point when a candidate's own does not certify it. When the float solve
        cannot certify its answer (badly scaled data), the exact oracle's is used on problems of
        at most :attr:`exact_hint_size` numbers; ``None`` when neither works."""
        from qpsvm.exceptions import QPSVMError

        if self._reference is None:
            self._reference = False
            methods = [None] + (["exact"] if "exact" in self.methods else [])
            for method in methods:
                if method == "exact" and np.prod(self.X.shape) > self.exact_hint_size:
                    break
                try:
                    self._reference = self.fresh_copy().solve(method=method)
                    break
                except QPSVMError:
                    continue
        return None if self._reference is False else self._reference

    def _read_estimator(self, candidate: Any) -> Any:
        """A fitted scikit-learn estimator as a :class:`~qpsvm.solution.Candidate` of this
        formulation (:func:`qpsvm.interop.candidates.estimator_candidate`, which warns when the
        estimator solved another problem); anything else unchanged. scikit-learn is not
        imported for it: if it never was, nothing can be one of its estimators."""
        base = sys.modules.get("sklearn.base")
        if base is None or not isinstance(candidate, base.BaseEstimator):
            return candidate
        from qpsvm.interop.candidates import estimator_candidate

        return estimator_candidate(self, candidate)

    def compare(self, candidate: Any, reference: Any = None) -> Comparison:
        """Compare a candidate with the exact optimum (or with ``reference``).

        See :class:`~qpsvm.verify.Comparison` for the fields.
        """
        from qpsvm.verify.comparison import compare

        if reference is None:
            reference = self.solve()
        return compare(self, self._read_estimator(candidate), self._read_estimator(reference))


def _ceiling_of(solution: Solution) -> float:
    """A float at or above the optimum that ``solution`` proves: its certificate's rigorous
    primal, or for the exact oracle's answer (no float certificate: the float solve could not
    certify) its rational ``P*`` rounded up; ``inf`` when neither is at hand."""
    if solution.certificate is not None:
        return solution.certificate.primal_objective
    exact = solution.info.get("exact")
    if exact is None:
        return math.inf
    value = float(exact.objective)
    return value if Fraction(value) >= exact.objective else math.nextafter(value, math.inf)

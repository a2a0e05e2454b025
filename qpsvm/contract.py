r"""The contract between formulations and the machinery: what a solver may ask, and which solver.

A formulation (:class:`~qpsvm.formulations.Formulation`) is the math of one SVM; solvers,
paths, estimators and the command line reach it only through this contract:

* **The protocols** say, per family, what a solver may call on a formulation, with one
  signature each: :class:`Problem` (every formulation: the CVXPY model, the primal objective, a
  solution from a candidate), :class:`BinaryProblem` (the binary SVMs and the ranking SVM, a
  binary SVM on pair differences: ``scores(w=, alpha=)``, the KKT equations on support sets;
  :class:`RankingProblem` adds the items and pairs), :class:`MulticlassProblem` (``scores(W)``,
  margins per class), :class:`CompositeProblem` (a loss, a penalty and an intercept mode,
  certified by Fenchel duality) and :class:`StructuralProblem` (inference oracle, cutting
  planes). A solver annotates its formulation with the protocol it
  needs; the methods a formulation registers are exactly those whose protocol it implements.
* **One registry of methods**, :data:`METHODS`: a :class:`Method` per name with its solver
  (``"module:function"``, imported on use so the math never imports the machinery) and its
  capabilities: certified (a certified optimum or an error), optimal (the optimum: certified,
  or exact in rational arithmetic) or approximate, usable by a path, takes a CVXPY backend,
  handles nonlinear kernels. A formulation lists the names it supports
  (``Formulation.methods``); :func:`check_method` is the one check of a (formulation, method)
  pair, with a typed error naming the methods that are supported.
* **The formulation names its own solver pieces**, as ``"module:function"`` class attributes
  loaded by :func:`part`: ``working_set`` (its sets for the working-set engine),
  ``online_problem`` (its stochastic subgradient step), ``coordinate_problem`` (its dual
  coordinate descent data), ``refinement`` (its exact support-set
  refinement), ``exact_oracle`` (its rational oracle). No solver picks code by the
  formulation's class.

This module imports no formulation, solver or CVXPY: it is a shared leaf, like
:mod:`qpsvm.solution`.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.solution import Candidate, Solution

if TYPE_CHECKING:
    import cvxpy as cp

    from qpsvm.formulations.model import CvxModel
    from qpsvm.kernels import Kernel
    from qpsvm.verify.certificate import Certificate

__all__ = [
    "METHODS",
    "BinaryProblem",
    "CompositeProblem",
    "Method",
    "MulticlassProblem",
    "Problem",
    "RankingProblem",
    "StructuralProblem",
    "check_method",
    "load",
    "method_names",
    "part",
    "register",
    "signature_of",
    "supported",
]


# ----------------------------------------------------------------------------- protocols
class Problem(Protocol):
    """What every formulation provides to every solver (attributes are read, never set)."""

    #: Slack penalty (``inf`` for the hard margin).
    C: float
    #: Names of the :data:`METHODS` this formulation supports.
    methods: tuple[str, ...]
    #: ``"module:function"`` certifying a candidate: ``(f, cand, tol) -> Certificate``.
    certifier: str
    #: Whether every instance has a solution (a backend reporting otherwise has failed).
    always_feasible: bool
    #: ``"module:function"`` ``(f, cand) -> list[Candidate]`` of exact refinements, or ``""``.
    refinement: str
    #: ``"module:function"`` ``(f, solver, start) -> Solution`` of the exact rational optimum,
    #: or ``""``.
    exact_oracle: str
    #: Why a method of :data:`METHODS` is not supported, for its error (method -> reason).
    refusals: dict[str, str]
    #: ``"module:function"`` reading a candidate (a solution, an estimator, arrays) for
    #: :meth:`certify`.
    candidate_reader: str

    #: Numbers of samples (or pairs) and of features (the length of ``w``).
    n_samples: int
    n_features: int
    #: The full CVXPY model, built once, and its problem.
    full_model: CvxModel
    problem: cp.Problem

    def build(self, **subset: Any) -> CvxModel: ...

    def read_model(self, model: Any) -> Candidate: ...

    def objective(self, w: Any, b: Any = 0.0) -> float: ...

    def check_w(self, w: Any) -> np.ndarray:
        """A candidate's ``w`` as a float array of the right shape (a typed error otherwise)."""

    def check_b(self, b: Any) -> float:
        """A candidate's intercept, checked (0 where the formulation has none)."""

    def solution_from(
        self, cand: Candidate, certificate: Certificate | None = None, **fields: Any
    ) -> Solution: ...

    def certify(self, candidate: Any = None, *, w: Any = None, tol: float = ...) -> Certificate:
        """The certificate of a candidate (a :class:`~qpsvm.solution.Candidate`, a
        :class:`~qpsvm.solution.Solution`, or arrays), from the data alone."""

    def infeasible_error(self) -> Exception | None: ...

    def make_feasible(self, cand: Candidate) -> Candidate:
        """``cand`` moved onto the feasible set where rounding left it just outside."""

    def with_C(self, C: float) -> Problem: ...

    def fresh_copy(self) -> Problem: ...

    def default_method(self) -> str: ...

    def default_path_method(self) -> str: ...


class BinaryProblem(Problem, Protocol):
    r"""A binary SVM ``min 1/2 ||w||^2 + C sum_i s_i xi_i, y_i (w.phi(x_i) + b) >= m_i - xi_i``
    (the ranking SVM is one, on pair differences): per sample one residual
    ``r_i = y_i f(x_i) - m_i`` and one multiplier ``0 <= alpha_i <= C s_i``."""

    X: Any
    y: np.ndarray
    sample_weight: np.ndarray
    margin: np.ndarray
    fit_intercept: bool
    kernel: Kernel
    #: Whether the restricted model of a working set depends on ``C`` only through its
    #: parameter (False for the dual, whose fixed multipliers ``C s_i`` are data).
    c_parametric: bool
    #: Whether ``w`` is explicit (linear kernel).
    linear: bool
    #: Bounds ``C s_i`` of the multipliers (``inf`` for the hard margin).
    upper: np.ndarray

    def scores(self, w: np.ndarray | None = None, alpha: np.ndarray | None = None) -> np.ndarray:
        """``w . phi(x_i)`` for every sample, from ``w`` or from ``alpha``."""

    def expansion(self, alpha: np.ndarray) -> np.ndarray: ...

    def primal_value(self, norm2: float, scores: np.ndarray, b: float) -> float: ...

    def optimal_intercept(self, scores: np.ndarray) -> float: ...

    def build_restricted(self, work: np.ndarray, bound: np.ndarray) -> CvxModel:
        """The model over the samples ``work`` with those of the mask ``bound`` at ``C s_i``."""

    def read_restricted(self, model: CvxModel, bound: np.ndarray) -> Candidate: ...

    def gram(self) -> np.ndarray: ...

    def gram_rows(self, idx: np.ndarray) -> np.ndarray: ...

    def gram_block(self, idx: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray: ...

    def check_alpha(self, alpha: Any) -> np.ndarray: ...

    def dual_objective(self, alpha: Any) -> float: ...

    def dual_parts(self, alpha: Any) -> tuple[float, np.ndarray | None]:
        """``D(alpha)`` and, for the linear kernel, the expansion ``sum_i alpha_i y_i x_i``."""

    def project_dual(self, alpha: Any) -> np.ndarray:
        """The nearest point of the dual's feasible set (box and, with an intercept, balance)."""

    def dual_infeasibility(self, alpha: np.ndarray) -> float: ...


class RankingProblem(BinaryProblem, Protocol):
    r"""The ranking SVM: a binary SVM on the pair differences ``x_i - x_j`` of ``items``."""

    #: The items' features (``X`` is their pair differences).
    items: Any
    #: The pairs ``(i, j)``, item ``i`` preferred over ``j``.
    pairs: np.ndarray
    #: The queries sorted for the pair sweeps (:mod:`qpsvm.verify.ranking_sweep`), or ``None``
    #: for explicit or weighted pairs.
    query_layout: Any
    #: ``items^T`` of the layout's level difference and the items' columns' squared norms,
    #: summed by the pass that copied ``items`` (``None`` where it did not).
    level_sums: tuple[np.ndarray, np.ndarray] | None


class MulticlassProblem(Problem, Protocol):
    r"""A multiclass SVM: weights ``W`` (one row per class), one constraint per
    ``(i, c != y_i)``, listed by ``rows``/``cols``; scores ``S = X W^T``."""

    X: Any
    y: np.ndarray
    sample_weight: np.ndarray
    mask: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    n_classes: int
    #: Crammer-Singer (one slack per example) or Weston-Watkins (one per constraint).
    crammer_singer: bool
    #: ``"crammer_singer"`` or ``"weston_watkins"``.
    variant: str
    #: Whether the slacks are squared (``loss="squared_hinge"``).
    squared: bool
    #: Budgets ``C s_i`` of the examples.
    upper: np.ndarray
    #: The penalty ``R(W)`` and the intercept mode (:mod:`qpsvm.formulations.pieces`).
    penalty: Any
    intercept: Any

    def scores(self, W: np.ndarray) -> np.ndarray:
        """``S = X W^T``, shape ``(n, k)``."""

    def margins(self, S: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray: ...

    def primal_value(self, norm2: float, S: np.ndarray) -> float: ...

    def slacks_from_scores(self, S: np.ndarray) -> np.ndarray: ...

    def check_alpha(self, alpha: Any) -> np.ndarray: ...

    def expansion(self, alpha: np.ndarray) -> np.ndarray: ...

    def dual_objective(self, alpha: Any) -> float: ...

    def project_dual(self, alpha: Any) -> np.ndarray: ...

    def dual_infeasibility(self, alpha: np.ndarray) -> float: ...

    def bound_term(self, at_bound: Any, used: np.ndarray) -> np.ndarray:
        """``G = sum_{(i,c) in at_bound} s_i x_i (e_{y_i} - e_c)^T`` (shape ``(k, d)``) of the
        constraints fixed at their bound (indices into ``rows``/``cols``)."""

    def joint_weights(self, w: Any, b: Any = None) -> np.ndarray:
        """The weights over the problem's features of a candidate ``(w, b)`` (with a
        regularised intercept, ``[w, b / B]``)."""

    def intercepts(self, W: np.ndarray) -> Any:
        """The per-class intercepts of ``W`` (0 without an intercept)."""

    def penalised(self, W: np.ndarray) -> np.ndarray:
        """The columns of ``W`` the penalty acts on (a view)."""

    def penalty_value(self, W: np.ndarray) -> float:
        """``R(W)`` over the penalised columns (all but a free intercept's)."""

    def stationary(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What ``A^T X`` equals at an optimum where determined (``grad R(W)``; a free
        intercept's column 0), and the mask of the determined entries."""


class CompositeProblem(Problem, Protocol):
    r"""A composed binary problem (a loss, a penalty and an intercept mode,
    :mod:`qpsvm.formulations.pieces`): ``min_w penalty(w) + sum_i c_i L(sigma_i (w.phi(x_i) + b),
    t_i)`` with signs ``sigma`` (classification) or targets ``t`` (regression), certified by
    Fenchel duality of its pieces (:mod:`qpsvm.verify.fenchel`)."""

    X: Any
    kernel: Kernel
    linear: bool
    fit_intercept: bool
    sample_weight: np.ndarray
    sigma: np.ndarray
    target: np.ndarray
    epsilon: float
    #: ``(items, index pairs)`` when the rows are exact item differences (ranking), else None.
    item_pairs: tuple | None
    #: The pieces (:mod:`qpsvm.formulations.pieces`).
    loss: Any
    penalty: Any
    intercept: Any

    def scores(
        self, w: np.ndarray | None = None, alpha: np.ndarray | None = None
    ) -> np.ndarray: ...

    def gram_rows(self, idx: np.ndarray) -> np.ndarray: ...

    def optimal_intercept(self, scores: np.ndarray) -> float: ...

    def check_alpha(self, alpha: Any) -> np.ndarray: ...

    def expansion(self, u: np.ndarray) -> np.ndarray: ...

    def primal_from_dual(self, u: np.ndarray) -> np.ndarray: ...

    def dual_infeasibility(self, u: np.ndarray) -> float: ...

    def loss_weights(self) -> np.ndarray: ...

    def objective(self, w: Any, b: Any = 0.0, scores: np.ndarray | None = None) -> float: ...

    def loss_conjugate(self) -> Any: ...

    def loss_young_gaps(self, z: np.ndarray, u: np.ndarray) -> np.ndarray: ...

    def kernel_intercept(self, u: np.ndarray, scores: np.ndarray) -> float: ...

    def slack_violation(self, z: np.ndarray, xi: Any) -> float: ...

    def factor_problem(self) -> Any: ...

    def build_restricted(self, subset: np.ndarray | None, bound: np.ndarray | None) -> Any:
        """The primal over the samples ``subset``, those in the mask ``bound`` folded in at
        their multipliers' bound (the working set's restricted problem)."""

    def margins(self, w: Any, b: Any = 0.0) -> np.ndarray: ...

    def describe(self) -> str: ...


class StructuralProblem(Problem, Protocol):
    r"""A structural SVM: exponentially many constraints ``xi_i >= c_iy - a_iy . w``, reached
    through the model's loss-augmented inference."""

    def oracle(self, w: Any, examples: Sequence[int] | None = None) -> list[Any]: ...

    def pair_rows(
        self, examples: Any, outputs: Sequence[Any], joint: Any = None
    ) -> tuple[Any, np.ndarray]: ...

    def slacks(self, w: Any, return_outputs: bool = False) -> Any: ...

    #: ``"margin"`` or ``"slack"`` rescaling.
    rescaling: str
    #: The pairs of dual points already certified, kept by
    #: :func:`qpsvm.verify.structural.side_of`.
    _pair_cache: dict[Any, Any]

    def violations(
        self, w: Any, maxima: Any = None, joint: Any = None
    ) -> tuple[list[Any], Any, np.ndarray, np.ndarray]:
        """One oracle call per example at ``w``: the outputs, their rows (:meth:`pair_rows`),
        offsets and the true slacks."""

    def certified_problem(self, planes: Sequence[Any] | None, alpha: np.ndarray | None) -> str:
        """Whose optimum a certificate with the dual point ``(planes, alpha)`` encloses
        (``"exact"`` or ``"relaxed"``)."""

    def maximisers(self, w: Any) -> tuple[list[Any], np.ndarray | None]:
        """The oracle's outputs at ``w`` and, for a relaxed oracle, its upper bounds."""

    def joint_rows(self, examples: Any, outputs: Sequence[Any]) -> Any:
        """The model's float joint features of pairs ``(i, y)``, stacked (sparse)."""

    def rounding(self, w: Any) -> Any:
        """The model's bounds on its rounding (:class:`qpsvm.models.Rounding`) or
        ``None``."""

    def every_output(self, per_example: int) -> tuple[np.ndarray, list[Any]] | None:
        """Every output of every example as pairs, when each has at most ``per_example``."""

    #: The float joint features of the training outputs, one row per example (sparse).
    true_features: Any
    #: The structured-output model and the training outputs.
    model: Any
    Y: list[Any]


# ----------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class Method:
    """A solve method and what it can do.

    Attributes
    ----------
    name : str
        What users pass as ``method=``.
    run : str
        ``"module:function"`` of the solver, called as ``run(f, solver=..., **options)``.
    certified : bool
        Its answers carry a certificate passed at its option ``tol`` (it raises otherwise).
    optimal : bool
        It returns the optimum (status ``"optimal"``): certified, or the exact rational optimum
        of ``method="exact"``; otherwise it is approximate and reports its own status.
    backend : bool
        It takes a CVXPY backend (``solver=``); the others refuse one.
    kernels : bool
        It solves nonlinear kernels (it never needs an explicit ``w``).
    path : bool
        :meth:`~qpsvm.formulations.Formulation.path` may follow ``C`` with it.
    solve : bool
        :meth:`~qpsvm.formulations.Formulation.solve` may run it (``False``: path only).
    summary : str
        One line for error messages and the docs.
    """

    name: str
    run: str
    certified: bool
    optimal: bool
    backend: bool
    kernels: bool
    path: bool
    summary: str
    solve: bool = True


def _method(name: str, run: str, capabilities: str, summary: str) -> Method:
    """A :class:`Method` whose capabilities are the words of ``capabilities``."""
    words = set(capabilities.split())
    flags = {"certified", "optimal", "backend", "kernels", "path", "solve"}
    if not words <= flags:
        raise InvalidInputError(f"unknown capabilities {sorted(words - flags)} of method {name!r}")
    return Method(name, run, summary=summary, **{flag: flag in words for flag in flags})


_FULL = "the full problem (f.problem) by a QP backend, refined and certified"

#: Every solve method, by name. A formulation supports the names in its ``methods``.
METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        _method(
            "qp", "qpsvm.solvers.qp:solve_qp", "certified optimal backend kernels path solve", _FULL
        ),
        _method(
            "full",
            "qpsvm.solvers.qp:solve_qp",
            "certified optimal backend kernels path solve",
            _FULL,
        ),
        _method(
            "working_set",
            "qpsvm.solvers.working_set:solve_working_set",
            "certified optimal backend kernels path solve",
            "QPs over a working set grown by full-data checks, certified",
        ),
        _method(
            "dcd",
            "qpsvm.solvers.coordinate:solve_dcd",
            "certified optimal solve",
            "dual coordinate descent over the rows' nonzeros (liblinear's), run until certified",
        ),
        _method(
            "newton",
            "qpsvm.solvers.newton:solve_newton",
            "certified optimal solve",
            "finite Newton steps on the primal of the squared hinge with the L2 penalty and no "
            "intercept (L2-SVM-MFN), exact on its final rows, certified",
        ),
        _method(
            "cutting_plane",
            "qpsvm.solvers.cutting_plane:solve_cutting_plane",
            "certified optimal backend solve",
            "cutting planes from loss-augmented inference, stopped on a certified gap",
        ),
        _method(
            "one_slack",
            "qpsvm.solvers.one_slack:solve_one_slack",
            "certified optimal solve",
            "1-slack cutting planes from the sorting oracle over query pairs (never formed), "
            "finished on the exact KKT sets, certified",
        ),
        _method(
            "frank_wolfe",
            "qpsvm.solvers.frank_wolfe:solve_frank_wolfe",
            "certified optimal solve",
            "block-coordinate Frank-Wolfe on the structural dual, stopped on a certified gap",
        ),
        _method(
            "homotopy",
            "qpsvm.solvers.path:solve_path",
            "certified optimal backend kernels path",
            "support sets followed from one C to the next by event tracking",
        ),
        _method(
            "exact",
            "qpsvm.solvers.exact:solve_exact",
            "optimal backend solve",
            "the exact rational optimum: support sets from a float solve, the KKT equations "
            "solved and verified in fractions",
        ),
        _method(
            "subgradient",
            "qpsvm.solvers.subgradient:solve_subgradient",
            "solve",
            "stochastic subgradient descent (Pegasos and variants), approximate",
        ),
        _method(
            "smo",
            "qpsvm.solvers.smo:solve_smo",
            "kernels solve",
            "sequential minimal optimisation of the dual, approximate",
        ),
    )
}


def method_names(words: str) -> tuple[str, ...]:
    """The methods named by the words of ``words``, each checked to be registered (the value of
    a formulation's ``methods``)."""
    names = tuple(words.split())
    unknown = [name for name in names if name not in METHODS]
    if unknown:
        raise InvalidInputError(f"unknown methods {unknown}; register them first.")
    return names


def register(method: Method) -> Method:
    """Add ``method`` to :data:`METHODS` (a formulation then supports it by listing its name in
    ``methods``); registering the same definition again is a no-op.

    Raises
    ------
    InvalidInputError
        Another method is registered under that name.
    """
    known = METHODS.get(method.name)
    if known is not None and known != method:
        raise InvalidInputError(
            f"a method named {method.name!r} is registered already ({known.run}); pick "
            "another name."
        )
    METHODS[method.name] = method
    return method


def load(path: str) -> Any:
    """The object named by ``"module:name"``, imported on use (an imported module is read off
    ``sys.modules``: ``importlib.import_module`` costs a few microseconds a call, a sizeable
    share of a small problem's certificate)."""
    module, _, name = path.partition(":")
    loaded = sys.modules.get(module)
    return getattr(loaded if loaded is not None else importlib.import_module(module), name)


@functools.cache
def signature_of(fn: Callable[..., Any]) -> inspect.Signature:
    """``inspect.signature(fn)``, computed once per function: the entry points read the
    parameters of the solver or certifier they call on every call, and the inspection costs
    more than a small problem's solve (0.1-3 ms, measured)."""
    return inspect.signature(fn)


@functools.cache
def option_names(fn: Callable[..., Any]) -> frozenset[str] | None:
    """The names of ``fn``'s parameters, ``None`` if it takes any keyword (``**options``);
    computed once per function (:func:`signature_of`)."""
    parameters = signature_of(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return None
    return frozenset(parameters)


def check_method(f: Any, name: str, *, path: bool = False) -> Method:
    """The registered :class:`Method` ``name`` if formulation ``f`` supports it.

    Parameters
    ----------
    f : Problem
    name : str
    path : bool, default=False
        Check it as a path method (:meth:`~qpsvm.formulations.Formulation.path`) rather than a
        solve method.

    Raises
    ------
    InvalidInputError
        ``name`` is not a method of :data:`METHODS`, or ``f`` does not support it (the message
        lists the methods it supports).
    """
    method = METHODS.get(name)
    if method is not None and name in f.methods and (method.path if path else method.solve):
        return method
    choices = supported(f, path=path)
    if name not in METHODS:
        raise InvalidInputError(
            f"unknown method {name!r} for {type(f).__name__}; choose one of {choices}."
        )
    if name not in choices:
        why = f.refusals.get(name)
        because = f" ({why})" if why else ""
        if path:
            raise InvalidInputError(
                f"a path of {type(f).__name__} is solved by method {choices}; got {name!r}"
                f"{because}."
            )
        raise InvalidInputError(
            f"method={name!r} ({METHODS[name].summary}) is not supported by "
            f"{type(f).__name__}{because}; it supports {choices}."
        )
    return METHODS[name]


def supported(f: Any, *, path: bool = False) -> list[str]:
    """The methods formulation ``f`` supports for a solve (or, ``path=True``, a path)."""
    return [m for m in f.methods if (METHODS[m].path if path else METHODS[m].solve)]


def part(f: Any, attribute: str, method: str) -> Any:
    """The solver piece formulation ``f`` names in ``attribute`` (a ``"module:function"``
    class attribute such as ``working_set``), loaded; a typed error naming ``method`` if ``f``
    has none."""
    where = getattr(f, attribute, "")
    if not where:
        raise InvalidTypeError(
            f"method={method!r} does not support {type(f).__name__}; it supports {supported(f)}."
        )
    return load(where)

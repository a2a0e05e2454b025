"""The records solvers, formulations and the verifier exchange: a :class:`Solution` (with its
optional :class:`History`) returned by every solver, and the points on the way to one: a
:class:`Candidate` to certify, the :class:`CuttingPlane` working-set constraints of the structural
SVM and its :class:`StructuralCandidate`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from qpsvm.verify.certificate import Certificate

__all__ = [
    "Candidate",
    "CuttingPlane",
    "FormedOnRead",
    "History",
    "Solution",
    "StructuralCandidate",
]


class FormedOnRead:
    """A per-sample array of a :class:`Solution` (``xi``, ``alpha``) that a solver hands over
    unformed: ``form()`` forms it, once, when the field is first read (the 1-slack ranking
    solver's multipliers and slacks, one per pair, which its solve never lists).

    Parameters
    ----------
    form : callable
        Returns the array; called at most once, on the field's first read.
    """

    __slots__ = ("form",)

    def __init__(self, form: Callable[[], np.ndarray]) -> None:
        self.form = form


class _Formed:
    """The descriptor of a :class:`Solution` field that may hold a :class:`FormedOnRead`: the
    first read forms the array and keeps it in its place; a field without a default."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.key = "_" + name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:  # the class's attribute: no default (dataclasses reads this)
            raise AttributeError(self.name)
        value = obj.__dict__[self.key]
        if isinstance(value, FormedOnRead):
            value = obj.__dict__[self.key] = value.form()
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.key] = value


@dataclass
class History:
    """Progress of an iterative solver, one entry per recorded step (epoch, cutting-plane round).

    Attributes
    ----------
    iteration : ndarray of int
        Number of updates (or rounds) done when the entry was recorded.
    objective : ndarray of float
        Primal objective ``P(w, b)`` of the iterate returned at that point (the average when
        averaging).
    time : ndarray of float
        Wall-clock seconds since the solver started.
    gap : ndarray of float or None
        Certified duality gap ``P - D`` of that iterate, when it was asked for.
    """

    iteration: np.ndarray
    objective: np.ndarray
    time: np.ndarray
    gap: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.iteration)


@dataclass
class Solution:
    """A point returned by a solver, with how it was obtained.

    Attributes
    ----------
    w : ndarray or None
        Primal weights: shape ``(n_features,)`` for binary and ranking problems,
        ``(n_classes, n_features)`` for multiclass, ``(n_joint_features,)`` for structural. ``None``
        for a nonlinear kernel, where only ``alpha`` defines the decision function.
    b : float or ndarray
        Intercept (``0.0`` without one; one per class for multiclass with an intercept).
    xi : ndarray or None
        Slack variables at ``w, b``, recomputed from the data: ``max(0, m_i - y_i f(x_i))``.
        A solver may give it as a :class:`FormedOnRead`, formed on the first read (then
        kept): it reads as an ndarray either way.
    alpha : ndarray or None
        Dual variables, in the sign convention of :mod:`qpsvm.verify.conventions` (formed on
        the first read where given as a :class:`FormedOnRead`, as ``xi``).
    objective : float
        Primal objective ``1/2 ||w||^2 + C sum_i s_i xi_i`` at the returned point (for the dual
        formulation with a kernel: the dual objective, which equals it at the optimum).
    status : str
        ``"optimal"`` for an exact optimum that passed its certificate, otherwise the solver's
        status (``"max_epochs"`` for online methods, ``"tolerance"`` for SMO...).
    solver : str
        Which backend produced the point, e.g. ``"CLARABEL"``, ``"OSQP"``, ``"subgradient"``.
    solve_time : float
        Wall-clock seconds spent in :meth:`~qpsvm.formulations.Formulation.solve`.
    n_iter : int
        Iterations of the backend (interior-point iterations, epochs, SMO steps, rounds).
    method : str
        The solve method (``"qp"``, ``"working_set"``, ``"subgradient"``, ``"smo"``, ...).
    history : History or None
        Per-epoch / per-round progress of iterative methods.
    certificate : Certificate or None
        The certificate computed when the solver checked its own answer.
    info : dict
        Backend-specific extras (working-set sizes, refinement details...).
    """

    w: np.ndarray | None
    b: float | np.ndarray
    xi: np.ndarray | None = _Formed()  # type: ignore[assignment]
    alpha: np.ndarray | None = _Formed()  # type: ignore[assignment]
    objective: float
    status: str
    solver: str
    solve_time: float
    n_iter: int
    method: str = "qp"
    history: History | None = None
    certificate: Certificate | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        shape = None if self.w is None else self.w.shape
        return (
            f"Solution(objective={self.objective:.12g}, status={self.status!r}, "
            f"solver={self.solver!r}, method={self.method!r}, w.shape={shape}, "
            f"n_iter={self.n_iter}, solve_time={self.solve_time:.3g}s)"
        )

    def given(self, name: str) -> Any:
        """The field ``name`` (``"xi"`` or ``"alpha"``) as the solver gave it: ``None`` where it
        is still a :class:`FormedOnRead` (not formed by this call)."""
        value = self.__dict__["_" + name]
        return None if isinstance(value, FormedOnRead) else value

    def __getstate__(self) -> dict[str, Any]:
        """The fields for pickling and copying, ``xi`` and ``alpha`` formed."""
        return {**self.__dict__, "_xi": self.xi, "_alpha": self.alpha}


@dataclass
class Candidate:
    """A point to certify: primal ``w, b`` (and slacks), dual ``alpha``, any of them missing."""

    w: np.ndarray | None = None
    b: float | np.ndarray | None = None
    alpha: np.ndarray | None = None
    xi: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class CuttingPlane:
    r"""One working-set constraint: :math:`\sum_{i\in S}\xi_i \ge \sum_{i\in S} H_i(\hat y_i; w)`.

    Attributes
    ----------
    examples : ndarray of int, shape (k,)
        The examples ``S`` the plane sums over, distinct.
    outputs : tuple
        One output :math:`\hat y_i` per example of ``examples``, in the same order.
    """

    examples: np.ndarray
    outputs: tuple[Any, ...]

    @classmethod
    def single(cls, i: int, y: Any) -> CuttingPlane:
        """The n-slack constraint of example ``i`` and output ``y``."""
        return cls(np.array([i], dtype=np.intp), (y,))

    @classmethod
    def joint(cls, outputs: Sequence[Any]) -> CuttingPlane:
        """The 1-slack constraint: every example ``i`` with output ``outputs[i]``."""
        return cls(np.arange(len(outputs), dtype=np.intp), tuple(outputs))

    def __len__(self) -> int:
        return int(self.examples.shape[0])


@dataclass
class StructuralCandidate(Candidate):
    """A structural-SVM candidate: ``w`` and/or multipliers ``alpha`` of the ``planes``
    (``b`` is always 0: the structural SVM has no intercept)."""

    b: float | np.ndarray | None = 0.0
    planes: list[CuttingPlane] | None = None

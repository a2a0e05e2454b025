r"""Convergence of online solvers against the exact optimum, with the theory's rate.

For each run, the suboptimality ``P(w_t, b_t) - P*`` after every epoch is drawn against the
number of steps ``t`` on log-log axes, next to the lectures' bound for Pegasos steps,
``G^2 (1 + log T) / (lambda T)`` in qpsvm's objective scale
(:func:`qpsvm.solvers.subgradient.pegasos_bound`), whose slope is about ``-1``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from qpsvm.exceptions import InvalidInputError, SolverNotInstalledError
from qpsvm.solution import Solution

if TYPE_CHECKING:
    from qpsvm.solvers.subgradient import StepRule

__all__ = ["plot_convergence"]


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise SolverNotInstalledError(
            "plotting needs matplotlib, an optional dependency: pip install qpsvm[plot]"
        ) from None
    return plt


def _label(step: Any) -> str:
    return step if isinstance(step, str) else getattr(step, "__name__", "callable")


def plot_convergence(
    f: Any,
    steps: Sequence[StepRule] | Mapping[str, StepRule] = ("pegasos", "sqrt"),
    *,
    reference: Any = None,
    solutions: Mapping[str, Solution] | None = None,
    epochs: int = 20,
    theory: bool = True,
    ax: Any = None,
    **options: Any,
) -> Any:
    r"""Suboptimality versus iterations, log-log, for several step schedules.

    Each curve is ``history.objective - P*`` of a subgradient run, against ``history.iteration``
    (the number of steps ``T``); values at or below 0 (the run reached the optimum to round-off)
    are left out of the logarithmic axis. The dashed theory line is
    ``G^2 (1 + log T) / (lambda T)`` (:func:`~qpsvm.solvers.subgradient.pegasos_bound`) with the
    ``G`` and ``lambda`` of the first Pegasos run that reports one (it holds without an
    intercept, where the objective is strongly convex).

    Parameters
    ----------
    f : Formulation
        A formulation with ``method="subgradient"``.
    steps : sequence of str or callable, or mapping of label to step, default=("pegasos", "sqrt")
        Step schedules to run (see :func:`~qpsvm.solvers.subgradient.solve_subgradient`), labelled
        by name (or by the mapping's keys); ignored when ``solutions`` is given.
    reference : Solution, optional
        The optimum ``P*`` is its objective; default: ``f.solve()`` (exact, certified).
    solutions : mapping of str to Solution, optional
        Runs already made (each with a ``history``), drawn instead of running ``steps``.
    epochs : int, default=20
        Epochs of each run.
    theory : bool, default=True
        Draw the theory line.
    ax : matplotlib Axes, optional
        Axes to draw in (default: a new figure).
    **options
        Passed to every run (``random_state``, ``average``, ``batch_size``, ...).

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    SolverNotInstalledError
        matplotlib is not installed (``pip install qpsvm[plot]``).
    """
    plt = _pyplot()
    from qpsvm.solvers.subgradient import pegasos_bound

    if solutions is None:
        if not steps:
            raise InvalidInputError("give at least one step schedule, or solutions=...")
        labelled = steps.items() if isinstance(steps, Mapping) else [(_label(s), s) for s in steps]
        solutions = {
            name: f.solve(method="subgradient", step=step, epochs=epochs, **options)
            for name, step in labelled
        }
    missing = [name for name, sol in solutions.items() if sol.history is None]
    if missing:
        raise InvalidInputError(f"the solutions {missing} have no history to plot.")
    p_star = (f.solve() if reference is None else reference).objective
    if ax is None:
        ax = plt.figure().add_subplot()
    for name, sol in solutions.items():
        T = sol.history.iteration
        sub = sol.history.objective - p_star
        keep = sub > 0
        ax.loglog(T[keep], sub[keep], marker="o", markersize=3, label=name)
    bound = next((s for s in solutions.values() if s.info.get("theory_bound") is not None), None)
    if theory and bound is not None:
        T = bound.history.iteration
        line = pegasos_bound(bound.info["lambda"], bound.info["G"], T)
        ax.loglog(T, line, "k--", label="theory (Pegasos)")
    ax.set_xlabel("iterations T (steps)")
    ax.set_ylabel("P(w_T) - P*")
    ax.set_title(f"{type(f).__name__}: suboptimality of online subgradient")
    ax.legend()
    return ax

r"""Reports of suite runs: markdown and JSON tables, performance profiles, accuracy vs time.

The Dolan-Moré performance profile of solver ``s`` is

.. math::

    \rho_s(\tau) = \frac{1}{n}\,\#\{p : r_{p,s} \le \tau\},\qquad
    r_{p,s} = \frac{t_{p,s}}{\min_{s'} t_{p,s'}},

over the instances ``p`` each solver solves *successfully at a tolerance* (certified relative
suboptimality within ``tol``); an instance a solver fails has ``r = inf``. ``rho_s(1)`` is the
share of instances where ``s`` is fastest, ``rho_s(inf)`` its success rate.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from qpsvm.suite.score import TOLERANCES, Result, summarize

__all__ = [
    "accuracy_time_plot",
    "markdown_table",
    "performance_profile",
    "performance_profile_plot",
    "profile_plot",
    "time_profile",
    "to_json",
]


def _by_solver(results: Sequence[Result]) -> dict[str, list[Result]]:
    out: dict[str, list[Result]] = {}
    for r in results:
        out.setdefault(r.solver, []).append(r)
    return out


def markdown_table(results: Sequence[Result], time_limit: float = 100.0) -> str:
    """One row per solver: instances scored (and unsupported), success rates at each
    tolerance, failures, the share of its answers wrong in the 4th digit, and the shifted
    geometric means of time and suboptimality."""
    head = (
        "| solver | instances (unsupported) | "
        + " | ".join(f"certified ≤ {tol:g}" for tol in TOLERANCES)
        + " | failures | answers wrong in 4th digit | time SGM (s) | suboptimality SGM |"
    )
    rule = "|" + "---|" * (6 + len(TOLERANCES))
    rows = [head, rule]
    for name, group in _by_solver(results).items():
        s = summarize(group, time_limit)
        rates = " | ".join(f"{100 * s.success_rate[f'{tol:g}']:.0f}%" for tol in TOLERANCES)
        rows.append(
            f"| {name} | {s.n} ({s.unsupported}) | {rates} | {s.failures} | "
            f"{100 * s.wrong_4th_digit:.0f}% | {s.time_sgm:.4f} | {s.suboptimality_sgm:.1e} |"
        )
    return "\n".join(rows) + "\n"


def to_json(results: Sequence[Result], time_limit: float = 100.0) -> dict[str, Any]:
    """Per-instance results and per-solver summaries, JSON-ready."""
    summaries = [asdict(summarize(g, time_limit)) for g in _by_solver(results).values()]
    return {"results": [r.to_json() for r in results], "summaries": summaries}


def write_json(results: Sequence[Result], path: str | Path, time_limit: float = 100.0) -> None:
    """Write :func:`to_json` to ``path``."""
    Path(path).write_text(json.dumps(to_json(results, time_limit), indent=1) + "\n")


def time_profile(
    times: np.ndarray, names: Sequence[str]
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``name -> (tau, rho(tau))``, the Dolan-Moré profile of a table of times.

    Parameters
    ----------
    times : ndarray of shape (n_problems, n_solvers)
        Seconds per problem and solver; ``inf`` where the solver failed.
    names : sequence of str
        The solvers' names, one per column.
    """
    T = np.asarray(times, dtype=float)
    best = T.min(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        ratios = np.where(np.isfinite(best), T / best, math.inf)
    out = {}
    for j, name in enumerate(names):
        finite = np.sort(ratios[:, j])
        finite = finite[np.isfinite(finite)]
        out[name] = (finite, np.arange(1, finite.size + 1) / max(T.shape[0], 1))
    return out


def performance_profile(
    results: Sequence[Result], tol: float = 1e-6
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``solver -> (tau, rho(tau))``, the step function of the Dolan-Moré profile at ``tol``."""
    groups = _by_solver(results)
    names = list(groups)
    instances = sorted({r.instance for r in results})
    T = np.full((len(instances), len(names)), math.inf)
    for j, name in enumerate(names):
        for r in groups[name]:
            if r.success[f"{tol:g}"]:
                T[instances.index(r.instance), j] = max(r.time, 1e-9)
    return time_profile(T, names)


def profile_plot(
    profile: dict[str, tuple[np.ndarray, np.ndarray]], ylabel: str, ax: Any = None
) -> Any:
    """Plot a Dolan-Moré profile (:func:`time_profile`) with a log-scaled ``tau``; returns the
    axes."""
    import matplotlib.pyplot as plt

    ax = ax if ax is not None else plt.subplots(figsize=(6, 4))[1]
    for name, (tau, rho) in profile.items():
        if tau.size:
            ax.step(
                np.concatenate([[1.0], tau]), np.concatenate([[0.0], rho]), where="post", label=name
            )
        else:
            ax.plot([], [], label=f"{name} (none)")
    ax.set_xscale("log")
    ax.set_xlabel("time ratio to the fastest, τ")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("Dolan-Moré performance profile")
    return ax


def performance_profile_plot(results: Sequence[Result], tol: float = 1e-6, ax: Any = None) -> Any:
    """Plot :func:`performance_profile` (log-scaled ``tau``) with matplotlib; returns the axes."""
    return profile_plot(
        performance_profile(results, tol), f"share certified ≤ {tol:g} within τ", ax
    )


def accuracy_time_plot(results: Sequence[Result], ax: Any = None) -> Any:
    """Certified relative suboptimality against time, one marker per answer (failures at the
    top, unsupported instances left out); returns the axes."""
    import matplotlib.pyplot as plt

    ax = ax if ax is not None else plt.subplots(figsize=(6, 4))[1]
    markers = "os^vD<>"
    for k, (name, group) in enumerate(_by_solver(results).items()):
        group = [r for r in group if r.failure != "unsupported"]
        t = [max(r.time, 1e-6) for r in group]
        s = [min(max(r.suboptimality, 1e-17), 1.0) for r in group]
        ax.scatter(t, s, s=12, label=name, alpha=0.7, marker=markers[(k // 10) % len(markers)])
    for tol in TOLERANCES:
        ax.axhline(tol, color="grey", lw=0.5, ls="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("certified relative suboptimality")
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("accuracy vs time")
    return ax

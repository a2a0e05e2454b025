r"""Pictures of a binary SVM: its decision boundary, its slacks and duals, and its certificate.

A decision function :math:`f(x) = w\cdot\phi(x) + b` predicts ``classes_[1]`` where
:math:`f > 0`; its margins are the level sets :math:`f = \pm 1`. At the optimum the KKT
conditions tie each point's dual variable to its functional margin :math:`y_i f(x_i)`:
:math:`\alpha_i = 0` beyond the margin, :math:`0 \le \alpha_i \le C s_i` on it,
:math:`\alpha_i = C s_i` inside it, where the slack is :math:`\xi_i = m_i - y_i f(x_i) > 0`.
These functions draw those facts and return the :class:`~matplotlib.axes.Axes` they drew on.
matplotlib is an optional extra: ``pip install qpsvm[plot]``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

try:
    import matplotlib.pyplot as plt
except ImportError as exc:  # pragma: no cover - matplotlib comes with the plot and test extras
    raise ImportError("qpsvm.plotting needs matplotlib: pip install qpsvm[plot]") from exc

from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.verify.certificate import Certificate

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "plot_certificate",
    "plot_certificates",
    "plot_decision_boundary",
    "plot_dual",
    "plot_slack",
]

#: Colours of the negative and positive class (``classes_[0]``, ``classes_[1]``).
CLASS_COLORS = ("#1f77b4", "#d62728")
#: Colours of a certificate that passed and one that did not.
VERDICT_COLORS = {True: "#1a7f37", False: "#cf222e"}
#: Smallest value drawn on a log axis (exact zeros are drawn there and labelled "0").
LOG_FLOOR = 1e-17
#: A slack counts as positive above this fraction of ``max(1, max m_i)`` (round-off below).
ROUND_OFF = 1e-9
#: ``alpha_i`` counts as a support vector above this fraction of ``max(1, max C s_i)``.
SUPPORT_TOL = 1e-10


def _axes(ax: Axes | None) -> Axes:
    return plt.gca() if ax is None else ax


def _check_binary_formulation(f: Any, solution: Any) -> None:
    from qpsvm.formulations.binary import BinaryFormulation

    if not isinstance(f, BinaryFormulation):
        raise InvalidTypeError(
            f"expected a binary formulation (HardMargin, SoftMarginPrimal, SoftMarginDual); got "
            f"{type(f).__name__}. For a fitted estimator use clf.build_formulation(X, y)."
        )
    if solution is None:
        raise InvalidInputError("pass the solution to draw, e.g. solution=f.solve().")


def functional_margins(f: Any, solution: Any) -> np.ndarray:
    """``y_i f(x_i)`` of ``solution`` on the training data of binary formulation ``f``."""
    _check_binary_formulation(f, solution)
    if solution.w is not None:
        scores = f.scores(w=np.asarray(solution.w, dtype=np.float64))
    else:
        scores = f.scores(alpha=np.asarray(solution.alpha, dtype=np.float64))
    return f.y * (scores + float(solution.b))


def _grid(X: np.ndarray, resolution: int, pad: float) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    xs = np.linspace(lo[0] - pad * span[0], hi[0] + pad * span[0], resolution)
    ys = np.linspace(lo[1] - pad * span[1], hi[1] + pad * span[1], resolution)
    return np.meshgrid(xs, ys)


def _decision_source(
    model: Any, solution: Any, X: Any, y: Any
) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """``(decision, X, labels, classes, support)`` from a formulation or a fitted classifier."""
    from qpsvm.formulations.binary import BinaryFormulation

    if isinstance(model, BinaryFormulation):
        _check_binary_formulation(model, solution)
        if model.kernel.name == "precomputed":
            raise InvalidInputError("a precomputed kernel has no input space to draw.")
        Xd = model.X.toarray() if sp.issparse(model.X) else np.asarray(model.X)
        labels = np.where(model.y > 0, model.classes_[1], model.classes_[0])
        alpha = solution.alpha
        support = (
            None
            if alpha is None
            else np.flatnonzero(
                np.asarray(alpha) > SUPPORT_TOL * max(1.0, float(np.max(model.upper)))
            )
        )
        return (
            lambda Z: model.decision_function(Z, solution),
            Xd,
            labels,
            model.classes_,
            support,
        )
    if solution is not None:
        raise InvalidInputError(
            "solution= goes with a formulation; a fitted estimator carries its own."
        )
    if not callable(getattr(model, "decision_function", None)):
        raise InvalidTypeError(
            f"cannot draw a {type(model).__name__}: pass a binary formulation and its solution, "
            "or a fitted classifier with decision_function (SVMClassifier, SVC, LinearSVC...)."
        )
    if X is None or y is None:
        raise InvalidInputError("pass the data X and y to draw with a fitted estimator.")
    support = getattr(model, "support_", None)
    return (
        model.decision_function,
        np.asarray(X, dtype=np.float64),
        np.asarray(y),
        np.asarray(model.classes_),
        None if support is None else np.asarray(support),
    )


def plot_decision_boundary(
    model: Any,
    solution: Any = None,
    X: Any = None,
    y: Any = None,
    *,
    ax: Axes | None = None,
    resolution: int = 200,
    margins: bool = True,
    support_vectors: bool = True,
    pad: float = 0.1,
) -> Axes:
    r"""Draw a 2-D decision boundary :math:`f(x) = 0`, its margins :math:`f(x) = \pm 1` and the
    support vectors.

    Parameters
    ----------
    model : BinaryFormulation or fitted classifier
        A binary formulation (drawn with ``solution``, on its own training data), or any fitted
        classifier with ``decision_function`` (drawn on ``X, y``). With more than two classes
        the regions of the argmax are drawn, without margins.
    solution : Solution, optional
        The solution of ``model`` when it is a formulation.
    X, y : array-like, optional
        Data (two features) and labels, for a fitted classifier.
    ax : Axes, optional
        Where to draw (default: the current axes).
    resolution : int, default=200
        Grid points per axis.
    margins : bool, default=True
        Draw the margins ``f = -1`` and ``f = +1`` (dashed).
    support_vectors : bool, default=True
        Circle the support vectors (``alpha_i > 0``; ``support_`` of an estimator, else the
        points with ``y_i f(x_i) <= 1``).
    pad : float, default=0.1
        Margin around the data, as a fraction of its range.

    Returns
    -------
    Axes
        With a filled contour of the predicted class, a contour set of the boundary (and
        margins), one scatter per class and one of the support vectors.
    """
    ax = _axes(ax)
    decision, Xd, labels, classes, support = _decision_source(model, solution, X, y)
    if Xd.ndim != 2 or Xd.shape[1] != 2:
        raise InvalidInputError(
            f"plot_decision_boundary draws two features; the data have shape {Xd.shape}. "
            "Project to 2-D first (e.g. PCA) or pick two columns."
        )
    if labels.shape[0] != Xd.shape[0]:
        raise InvalidInputError(
            f"X has {Xd.shape[0]} rows but y has {labels.shape[0]} labels; they must match."
        )
    gx, gy = _grid(Xd, int(resolution), pad)
    scores = np.asarray(decision(np.column_stack([gx.ravel(), gy.ravel()])))
    binary = scores.ndim == 1
    palette = list(CLASS_COLORS) if binary else [f"C{k}" for k in range(classes.shape[0])]
    region = (scores > 0).astype(int) if binary else np.argmax(scores, axis=1)
    ax.contourf(
        gx,
        gy,
        region.reshape(gx.shape),
        levels=np.arange(len(palette) + 1) - 0.5,
        colors=palette,
        alpha=0.12,
    )
    if binary:
        levels, styles = ([-1.0, 0.0, 1.0], ["--", "-", "--"]) if margins else ([0.0], ["-"])
        ax.contour(gx, gy, scores.reshape(gx.shape), levels=levels, colors="k", linestyles=styles)
    for k, label in enumerate(classes):
        mask = labels == label
        ax.scatter(
            Xd[mask, 0],
            Xd[mask, 1],
            color=palette[k],
            s=25,
            edgecolors="k",
            linewidths=0.4,
            label=str(label),
        )
    if support_vectors and binary:
        if support is None:
            pos = labels == classes[1]
            yf = np.where(pos, 1.0, -1.0) * np.asarray(decision(Xd))
            support = np.flatnonzero(yf <= 1.0 + 1e-9)
        ax.scatter(
            Xd[support, 0],
            Xd[support, 1],
            s=110,
            facecolors="none",
            edgecolors="k",
            linewidths=1.2,
            label=f"support vectors ({support.shape[0]})",
        )
    ax.set_xlim(gx.min(), gx.max())
    ax.set_ylim(gy.min(), gy.max())
    ax.legend(loc="best", fontsize="small")
    return ax


def plot_slack(f: Any, solution: Any, *, ax: Axes | None = None, max_ticks: int = 30) -> Axes:
    r"""Draw the slack :math:`\xi_i = \max(0, m_i - y_i f(x_i))` of the points that have one.

    One bar per margin violation (:math:`\xi_i > 0`, up to round-off), sorted from the largest
    and coloured by class, labelled with the point's index; the dashed line :math:`\xi = m`
    separates violations still classified correctly (:math:`0 < \xi_i \le m_i`) from
    misclassified points (:math:`\xi_i > m_i`). Points with zero slack are counted in the
    title, not drawn.

    Parameters
    ----------
    f : BinaryFormulation
    solution : Solution
        A solution of ``f`` (its slacks are recomputed from the data).
    ax : Axes, optional
    max_ticks : int, default=30
        Label the bars with the points' indices when there are at most this many.

    Returns
    -------
    Axes
        With one bar container per class (the violations of that class) and the horizontal
        line at the margin.
    """
    margins = functional_margins(f, solution)
    ax = _axes(ax)
    xi = np.maximum(0.0, f.margin - margins)
    level = float(np.max(f.margin))
    violated = np.flatnonzero(xi > ROUND_OFF * max(1.0, level))
    order = violated[np.argsort(-xi[violated], kind="stable")]
    position = np.arange(order.shape[0])
    for k, sign in enumerate((-1.0, 1.0)):
        mask = f.y[order] == sign
        ax.bar(
            position[mask],
            xi[order][mask],
            width=0.8,
            color=CLASS_COLORS[k],
            label=str(f.classes_[k]),
        )
    ax.axhline(level, color="k", linestyle="--", linewidth=1)
    if 0 < order.shape[0] <= max_ticks:
        ax.set_xticks(position, [str(i) for i in order], rotation=90, fontsize="small")
    wrong = int(np.count_nonzero(xi[order] > f.margin[order]))
    ax.set_xlabel("margin violations, by decreasing slack (point index)")
    ax.set_ylabel(r"slack $\xi_i$")
    ax.set_title(
        f"{order.shape[0]} margin violations, {wrong} misclassified ($\\xi_i > m_i$); "
        f"{f.n_samples - order.shape[0]} points with zero slack",
        fontsize="medium",
    )
    ax.legend(loc="upper right", fontsize="small")
    return ax


def plot_dual(f: Any, solution: Any, *, ax: Axes | None = None) -> Axes:
    r"""Draw the dual variables against the margins: the KKT conditions made visible.

    Each point is :math:`(y_i f(x_i) - m_i,\ \alpha_i / (C s_i))`. At an optimum every point
    lies on one of three segments: :math:`\alpha_i = 0` to the right of 0 (beyond the margin),
    :math:`\alpha_i = C s_i` to the left (inside it, slack > 0), any value on the vertical line
    0 (on the margin). For the hard margin (:math:`C = \infty`) the raw :math:`\alpha_i` is drawn.

    Parameters
    ----------
    f : BinaryFormulation
    solution : Solution
        A solution of ``f`` with dual variables ``alpha``.
    ax : Axes, optional

    Returns
    -------
    Axes
        With one scatter per class and the lines ``alpha = 0``, ``alpha = C s`` and margin 0.
    """
    residual = functional_margins(f, solution) - f.margin
    if solution.alpha is None:
        raise InvalidInputError("the solution has no dual variables alpha to draw.")
    ax = _axes(ax)
    alpha = np.asarray(solution.alpha, dtype=np.float64)
    hard = not math.isfinite(f.C)
    upper = f.upper
    scaled = alpha if hard else np.divide(alpha, upper, out=np.zeros_like(alpha), where=upper > 0)
    for k, sign in enumerate((-1.0, 1.0)):
        mask = f.y == sign
        ax.scatter(
            residual[mask], scaled[mask], s=18, color=CLASS_COLORS[k], label=str(f.classes_[k])
        )
    ax.axhline(0.0, color="0.5", linewidth=0.8)
    if not hard:
        ax.axhline(1.0, color="0.5", linewidth=0.8, linestyle="--")
    ax.axvline(0.0, color="k", linewidth=0.8, linestyle=":")
    ax.set_xlabel(r"$y_i f(x_i) - m_i$  (0: on the margin)")
    ax.set_ylabel(r"$\alpha_i$" if hard else r"$\alpha_i / (C s_i)$")
    ax.set_title("KKT: dual variables against margins")
    ax.legend(loc="best", fontsize="small")
    return ax


def _log_value(v: float) -> float:
    return max(abs(v), LOG_FLOOR) if math.isfinite(v) else math.inf


def plot_certificate(certificate: Certificate, *, ax: Axes | None = None) -> Axes:
    r"""Draw one certificate: its relative gap and KKT residuals on a log scale.

    Bars: relative gap :math:`(P - D)/\max(1, |P|)`, primal and dual infeasibility,
    complementarity and stationarity; the vertical line is the tolerance the certificate was
    tested at. The title gives :math:`P`, :math:`D` and the verdict.

    Returns
    -------
    Axes
        With one bar container (five bars) and the tolerance line.
    """
    if not isinstance(certificate, Certificate):
        raise InvalidTypeError(
            f"expected a Certificate (f.certify(...)); got {type(certificate).__name__}."
        )
    ax = _axes(ax)
    rows = {
        "relative gap": certificate.relative_gap,
        "primal infeasibility": certificate.primal_infeasibility,
        "dual infeasibility": certificate.dual_infeasibility,
        "complementarity": certificate.complementarity,
        "stationarity": certificate.stationarity,
    }
    values = [_log_value(v) for v in rows.values()]
    color = VERDICT_COLORS[certificate.passed]
    ax.barh(list(rows), values, color=[color] + ["0.6"] * (len(rows) - 1))
    ax.axvline(certificate.tol, color="k", linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ax.invert_yaxis()
    verdict = "certified optimal" if certificate.passed else "NOT certified"
    name = f"{certificate.formulation}: " if certificate.formulation else ""
    ax.set_title(
        f"{name}{verdict}\nP = {certificate.primal_objective:.10g}, "
        f"D = {certificate.dual_objective:.10g}",
        fontsize="medium",
    )
    ax.set_xlabel(f"value (log scale; dashed: tol {certificate.tol:.0e})")
    return ax


def plot_certificates(
    certificates: Mapping[str, Certificate] | Sequence[Certificate],
    *,
    ax: Axes | None = None,
) -> Axes:
    r"""Compare candidates by their certified relative gaps (log scale).

    Each bar is one candidate's :math:`(P - D)/\max(1, |P|)`, green if it passed at its
    tolerance and red otherwise, labelled with the gap and the distance bound
    :math:`\|w - w^*\| \le \sqrt{2\,\mathrm{gap}}`.

    Parameters
    ----------
    certificates : mapping of name to Certificate, or sequence of Certificate
        E.g. ``{"qpsvm": f.certify(sol), "SVC": f.certify(svc), ...}``.
    ax : Axes, optional

    Returns
    -------
    Axes
        With one bar container (one bar per candidate), the tolerance line and one text label
        per bar.
    """
    if isinstance(certificates, Mapping):
        names, certs = list(certificates), list(certificates.values())
    else:
        certs = list(certificates)
        names = [c.formulation or f"candidate {k}" for k, c in enumerate(certs)]
    if not certs:
        raise InvalidInputError("no certificates to draw.")
    for c in certs:
        if not isinstance(c, Certificate):
            raise InvalidTypeError(
                f"expected Certificates (f.certify(...)); got {type(c).__name__}."
            )
    ax = _axes(ax)
    gaps = [_log_value(c.relative_gap) for c in certs]
    ax.barh(names, gaps, color=[VERDICT_COLORS[c.passed] for c in certs])
    for k, c in enumerate(certs):
        ax.text(
            gaps[k],
            k,
            f"  {c.relative_gap:.1e}  (||w-w*|| <= {c.distance_bound:.1e})",
            va="center",
            fontsize="small",
        )
    tol = certs[0].tol
    ax.axvline(tol, color="k", linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlim(min(min(gaps), tol) / 10, max(max(gaps), tol) * 1e4)
    ax.invert_yaxis()
    ax.set_xlabel(f"certified relative gap (log scale; dashed: tol {tol:.0e})")
    ax.set_title("Certificates: green passed, red not", fontsize="medium")
    return ax

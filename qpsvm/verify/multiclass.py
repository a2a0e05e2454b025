r"""Certificates for the multiclass SVMs (Crammer-Singer and Weston-Watkins).

Sign conventions, written down once here for :class:`~qpsvm.MulticlassSVM`. The constraint
``(i, c)``, ``c != y_i``, reads :math:`m_{ic} = (w_{y_i} - w_c)\cdot x_i \ge 1 - \xi` with
:math:`\xi = \xi_i` (Crammer-Singer) or :math:`\xi_{ic}` (Weston-Watkins); its multiplier
:math:`\alpha_{ic} \ge 0` is the CVXPY dual value of the ``margin`` constraint, stored at
``alpha[i, c]`` of an ``(n_samples, n_classes)`` array whose entries ``alpha[i, y_i]`` are 0.
Minimising the Lagrangian over ``W`` gives stationarity :math:`W = A^T X` with
:math:`A_{ic} = [c = y_i]\sum_{c'}\alpha_{ic'} - \alpha_{ic}`, and the dual

.. math::

    D(\alpha) = \sum_{i,c \ne y_i} \alpha_{ic} - \tfrac12 \|A^T X\|_F^2,

over :math:`\{\alpha_i \ge 0,\ \sum_c \alpha_{ic} \le C s_i\}` (Crammer-Singer: minimising over
:math:`\xi_i \ge 0` leaves the multiplier :math:`C s_i - \sum_c \alpha_{ic} \ge 0` of
:math:`\xi_i \ge 0`) or :math:`\{0 \le \alpha_{ic} \le C s_i\}` (Weston-Watkins, multiplier
:math:`C s_i - \alpha_{ic}` of :math:`\xi_{ic} \ge 0`). Weak duality gives
:math:`D(\alpha) \le P^* \le P(W)` for every feasible ``alpha``; ``P`` is 1-strongly convex in
``W``, so :math:`\|W - W^*\|_F \le \sqrt{2\,\mathrm{gap}}`.

The dual point of a certificate is the best of the candidate's own ``alpha`` projected onto the
feasible set and of points built from a bare ``W``: at several thresholds ``t``, the constraints
with residual :math:`m_{ic} - 1 + \xi \le t` are tight; a violated constraint (slack above ``t``)
that is the example's only tight one gets :math:`\alpha_{ic} = C s_i`; the other tight ones are
fitted by bounded least squares to :math:`W = A^T X` (for Crammer-Singer examples with several
tight violated classes, with the budget :math:`\sum_c \alpha_{ic} = C s_i` as an extra equation),
then projected. This makes the gap tight for any candidate near the optimum, e.g. scikit-learn's
``LinearSVC(multi_class="crammer_singer", fit_intercept=False)``. The search stops as soon as the
relative gap is below :data:`~qpsvm.verify.certificate.PROVEN` times the tolerance (the
candidate passes: a better point would only shrink a gap already proven), and goes on when
the rigorous enclosure of that point does not pass after all.

Free per-class intercepts (the problem on ``[X, 1]`` whose last column of ``W``, the ``b_c``, is
not penalised) add the balance :math:`\sum_i A_{ic} = 0` per class: the fit above targets 0 on
that column (:meth:`~qpsvm.MulticlassSVM.stationary`), the norm runs over the penalised
columns, and the balance residual that rounding and projection leave is paid for rigorously,
:math:`P^* \ge D(\alpha) - \tfrac12\,\mathrm{spread}\,\|r\|_1` with a proven bound on the
optimal intercepts' range (:func:`~qpsvm.verify.rigorous.multiclass_intercept_spread`,
:func:`~qpsvm.verify.rigorous.balanced_lower`). The certificate does not depend on the
intercepts' common shift.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

from qpsvm._threads import one_blas_thread
from qpsvm._validation import check_tol
from qpsvm.contract import MulticlassProblem
from qpsvm.exceptions import InvalidInputError
from qpsvm.solution import Candidate
from qpsvm.verify.binary import MARGIN_TAUS, MAX_MARGIN_SET
from qpsvm.verify.certificate import (
    DEFAULT_TOL,
    PROVEN,
    Certificate,
    best_dual_point,
    evaluation_allowance,
    relative,
)
from qpsvm.verify.projection import bounded_fit
from qpsvm.verify.rigorous import (
    multiclass_dual_lower,
    multiclass_intercept_spread,
    multiclass_primal_upper,
    squared_multiclass_dual_lower,
    squared_multiclass_primal_upper,
)

__all__ = ["certify_multiclass", "dual_points", "tight_sets", "tightness"]


def _slack_matrix(f: MulticlassProblem, xi: np.ndarray) -> np.ndarray:
    """Slacks broadcast to ``(n, k)``: ``xi_i`` per row (Crammer-Singer) or ``xi_ic``."""
    return xi[:, None] if xi.ndim == 1 else xi


def _fit_tight(
    f: MulticlassProblem,
    alpha: np.ndarray,
    free: np.ndarray,
    budget: np.ndarray,
    W: np.ndarray,
    total: np.ndarray,
) -> None:
    """Fit ``alpha[free]`` in ``[0, total_ic]`` to ``W = A^T X`` by bounded least squares, in
    place (one unconstrained solve when its answer is in the box, as it is near an optimum).

    ``budget`` marks (Crammer-Singer) examples whose free entries must sum to ``total_i``
    (``C s_i``; ``2 C s_i xi_i`` for the squared hinge); each adds one weighted equation.
    """
    fi, fc = np.nonzero(free)
    k, d = f.n_classes, f.n_features
    XF = f.X[fi]
    XF = XF.toarray() if sp.issparse(XF) else np.asarray(XF)
    cols = np.arange(fi.size)
    A = np.zeros((k, d, fi.size))
    A[f.y[fi], :, cols] = XF
    A[fc, :, cols] = -XF
    goal, known = f.stationary(W)
    known = known.ravel()
    A = A.reshape(k * d, fi.size)[known]
    target = (goal - f.expansion(alpha)).ravel()[known]
    ex = np.flatnonzero(budget)
    if ex.size:
        weight = max(1.0, float(np.sqrt(np.max(np.sum(A * A, axis=0)))))
        member = (fi[None, :] == ex[:, None]).astype(np.float64)
        A = np.vstack([A, weight * member])
        target = np.append(target, weight * total[ex, 0])
    upper = total[fi, fc]
    # one BLAS thread: threaded LAPACK stalls on busy cores (measured on 2 shared cores, digits:
    # 0.67 s a solve threaded, 0.2 s on one thread)
    with one_blas_thread():
        x = np.linalg.lstsq(A, target, rcond=None)[0]
        if np.any(x < 0) or np.any(x > upper):
            # the unconstrained fit leaves the box: solve the bounded problem
            x = bounded_fit(A, target, np.zeros(fi.size), upper)
    alpha[fi, fc] = x


def _certifies_alone(
    f: MulticlassProblem, alpha: np.ndarray, value: Callable[[np.ndarray], float], tol: float
) -> bool:
    r"""Whether the feasible ``alpha`` certifies its own expansion ``W = A^T X`` in floating
    point: relative gap :math:`P(W) - D(\alpha)` (``value``) below
    :data:`~qpsvm.verify.certificate.PROVEN` times ``tol``. A screen (a product with ``X``,
    no fit); the certificate decides."""
    W = f.expansion(alpha)
    primal = f.primal_value(f.penalty_value(W), f.scores(W))
    return relative(primal - value(alpha), primal) <= PROVEN * tol


def dual_points(
    f: MulticlassProblem, margins: np.ndarray, xi: np.ndarray, W: np.ndarray
) -> Iterator[np.ndarray]:
    """Dual-feasible points built from the margins ``m_ic`` and exact slacks of a candidate ``W``.

    See the module docstring; one point per distinct set of tight constraints over
    :data:`~qpsvm.verify.binary.MARGIN_TAUS`, generated lazily (smallest threshold first) so that
    the certificate can stop once a point is good enough.
    """
    residual, slack = tightness(f, margins, xi)
    # the value a violated constraint's multiplier (or an example's budget) takes at the
    # optimum: C s_i for the hinge, 2 C s_i xi for the squared hinge (stationarity in xi)
    total = np.broadcast_to(
        2.0 * f.upper[:, None] * slack if f.squared else f.upper[:, None], residual.shape
    )
    seen: set[bytes] = set()
    for tau in MARGIN_TAUS:
        tight, fixed, budget = tight_sets(f, residual, slack, tau)
        free = tight & ~fixed & (total > 0)  # a box [0, 0] leaves nothing to fit
        # the budgets too: an example with a slack of 1e-10 and two tight classes has the same
        # tight and fixed sets at tau = 1e-10 (a budget row) and 1e-8 (free, as it should be)
        key = tight.tobytes() + fixed.tobytes() + budget.tobytes()
        if key in seen:
            continue
        seen.add(key)
        alpha = np.where(fixed, total, 0.0)
        if 0 < np.count_nonzero(free) <= MAX_MARGIN_SET:
            _fit_tight(f, alpha, free, budget, W, total)
        yield f.project_dual(alpha)


def tightness(
    f: MulticlassProblem, margins: np.ndarray, xi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""Residuals :math:`m_{ic} - 1 + \xi` of every constraint (``inf`` off the constraints,
    at ``c = y_i``) and the slacks broadcast to ``(n, k)``."""
    slack = _slack_matrix(f, xi)
    residual = np.where(f.mask, margins - 1.0 + slack, np.inf)
    return residual, np.broadcast_to(slack, residual.shape)


def tight_sets(
    f: MulticlassProblem, residual: np.ndarray, slack: np.ndarray, tau: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The constraints a point makes tight at threshold ``tau`` and what their multipliers are.

    ``residual`` is :math:`m_{ic} - 1 + \xi` (``inf`` off the constraints), ``slack`` the
    exact slacks broadcast to ``(n, k)``. Returns ``tight`` (residual at most ``tau``),
    ``fixed`` (tight and violated, slack above ``tau``, with the whole budget ``C s_i`` on it:
    every such constraint for Weston-Watkins, an example's only tight one for Crammer-Singer)
    and ``budget`` (Crammer-Singer examples with a violated slack shared by several tight
    classes, whose multipliers sum to ``C s_i``).
    """
    tight = residual <= tau
    over = tight & (slack > tau)
    if f.crammer_singer:
        n_tight = tight.sum(axis=1)
        return tight, over & (n_tight == 1)[:, None], over.any(axis=1) & (n_tight > 1)
    return tight, over, np.zeros(f.n_samples, dtype=bool)


def certify_multiclass(
    f: MulticlassProblem,
    cand: Candidate,
    tol: float = DEFAULT_TOL,
    hints: Sequence[np.ndarray] = (),
    ceiling: float = math.inf,
) -> Certificate:
    """Certify a candidate ``W`` and/or duals ``alpha`` of a :class:`~qpsvm.MulticlassSVM`.

    Parameters
    ----------
    f : MulticlassSVM
    cand : Candidate
        ``w`` of shape ``(n_classes, n_features)`` and/or ``alpha`` of shape
        ``(n_samples, n_classes)``; ``b`` must be 0 or ``None``; ``xi``, when given, is checked
        for feasibility (shape ``(n,)`` for Crammer-Singer, ``(n, n_classes)`` for
        Weston-Watkins).
    tol : float
        Relative tolerance of the test.
    hints : sequence of ndarray, optional
        More dual points to try, first (see :func:`~qpsvm.verify.binary.certify_binary`).
    ceiling : float, optional
        An upper bound on the optimum (the rigorous primal of the problem's own solution,
        whose multipliers are a hint): the search stops once the candidate fails whatever the
        dual point and the points left could close at most :data:`~qpsvm.verify.certificate.TIGHT`
        of its gap (:func:`~qpsvm.verify.certificate.best_dual_point`), so a failing candidate
        costs no least-squares fits once a hint is near the optimum.
    """
    tol = check_tol(tol)
    if cand.w is None and cand.alpha is None:
        raise InvalidInputError("nothing to certify: pass a solution, w, or alpha.")
    alpha_in = f.check_alpha(cand.alpha) if cand.alpha is not None else None
    if cand.w is not None:
        W = f.joint_weights(cand.w, cand.b)
    else:
        W = f.expansion(alpha_in)
        if cand.b is not None and not np.array_equal(np.ravel(cand.b), np.ravel(f.intercepts(W))):
            f.check_b(cand.b)
    S = f.scores(W)
    margins = f.margins(S)
    xi = f.slacks_from_scores(S)
    primal = f.primal_value(f.penalty_value(W), S)
    primal_inf = 0.0
    if cand.xi is not None:
        given = np.asarray(cand.xi, dtype=np.float64)
        if given.shape != xi.shape:
            raise InvalidInputError(f"xi must have shape {xi.shape}; got {given.shape}.")
        need = np.where(f.mask, 1.0 - margins, -np.inf)
        short = need - _slack_matrix(f, given)
        primal_inf = max(0.0, float(np.max(short)), float(np.max(-given)))

    free = bool(f.intercept.coupled)
    value = f.dual_objective
    if free:  # points are chosen by the bound they give: D less the balance residual's cost
        half = 0.5 * multiclass_intercept_spread(f, primal, f.penalty)

        def value(a: np.ndarray) -> float:
            return f.dual_objective(a) - half * float(np.sum(np.abs(f.balance(a))))

    candidates = itertools.chain(
        [f.project_dual(f.check_alpha(h)) for h in hints], dual_points(f, margins, xi, W)
    )
    if alpha_in is not None:
        # with a W, the candidate's own point comes first only where it certifies on its own
        # (the certificate's alpha is a solution's, which certify(alpha=...) must pass); else
        # the points fitted to W do, whose A^T X is close to W (a solver's raw duals carry
        # 1e-10 residues on inactive constraints, which move A^T X)
        own = [f.project_dual(alpha_in)]
        first = cand.w is None or _certifies_alone(f, own[0], value, tol)
        candidates = itertools.chain(own, candidates) if first else itertools.chain(candidates, own)
    points = iter(candidates)
    start = np.zeros_like(margins)
    alpha, found, early = best_dual_point(
        value, points, start, primal, tol, enough=PROVEN, ceiling=ceiling
    )

    # the rigorous enclosure (qpsvm.verify.rigorous)
    upper, lower = (
        (squared_multiclass_primal_upper, squared_multiclass_dual_lower)
        if f.squared
        else (multiclass_primal_upper, multiclass_dual_lower)
    )
    estimate = primal
    primal, primal_estimate = upper(f, W, free, f.penalty)
    spread = multiclass_intercept_spread(f, primal, f.penalty) if free else None
    dual, proven, dual_estimate = lower(f, alpha, spread, f.penalty)
    if early and relative(primal - dual, primal) > tol:
        # the rounding allowance took the margin: the points left may still pass
        alpha, _, _ = best_dual_point(value, points, alpha, estimate, tol, dual=found)
        dual, proven, dual_estimate = lower(f, alpha, spread, f.penalty)
    alpha = proven
    slack = _slack_matrix(f, xi)
    goal, known = f.stationary(W)
    comp = np.where(f.mask, np.abs(alpha * (margins - 1.0 + slack)), 0.0)
    if f.squared and f.crammer_singer:  # stationarity in xi: sum_c alpha_ic = 2 C s_i xi_i
        unused = np.abs(alpha.sum(axis=1) - 2.0 * f.upper * xi)
    elif f.squared:  # per entry: alpha_ic = 2 C s_i xi_ic
        unused = np.where(f.mask, np.abs(alpha - 2.0 * f.upper[:, None] * xi), 0.0)
    elif f.crammer_singer:
        unused = np.abs((f.upper - alpha.sum(axis=1)) * xi)
    else:
        unused = np.where(f.mask, np.abs((f.upper[:, None] - alpha) * xi), 0.0)
    return Certificate(
        primal_objective=float(primal),
        dual_objective=float(dual),
        primal_infeasibility=primal_inf,
        dual_infeasibility=f.dual_infeasibility(alpha_in) if alpha_in is not None else 0.0,
        complementarity=max(float(np.max(comp, initial=0.0)), float(np.max(unused, initial=0.0))),
        stationarity=float(np.linalg.norm((goal - f.expansion(alpha))[known])),
        tol=tol,
        formulation=f"{type(f).__name__}({f.variant}{', squared hinge' if f.squared else ''}"
        f"{', free intercept' if free else ''}"
        f"{'' if f.penalty.name == 'l2' else ', ' + f.penalty.name + ' penalty'})",
        strong_convexity=f.penalty.strong_convexity,
        alpha=alpha,
        rigorous=True,
        rounding_floor=evaluation_allowance(primal, dual, primal_estimate, dual_estimate),
    )

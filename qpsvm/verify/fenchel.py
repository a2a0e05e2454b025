r"""Certificates of composed problems, from Fenchel duality of their pieces.

A composed problem (:mod:`qpsvm.formulations.composed`) minimises

.. math::

    P(w, b) = R(w, b/B) + \sum_i L_i(z_i),\qquad z_i = \sigma_i (w\cdot x_i + b),
    \quad L_i = C c_i \ell_i,

with ``sigma_i = y_i`` for classification (``z`` is the functional margin) and ``1`` for
regression (``z`` is the prediction), weights ``c_i`` (sample times class weight), a penalty
``R`` on ``w`` and, for the regularised intercept, on the extra coordinate ``b' = b / B``.
With one multiplier ``u_i`` per sample for ``z_i = sigma_i x_i . w + sigma_i b``, Fenchel duality
gives

.. math::

    D(u) = \sum_i \varphi_i(u_i) - R^*(v) ,\qquad v = \sum_i u_i \sigma_i x_i
    \ \big(\text{and } v_{d+1} = B \textstyle\sum_i \sigma_i u_i \text{ for a regularised
    intercept}\big),

where ``phi_i(u) = -L_i^*(-u) = p_i u - eps_i |u| - d_i u^2 / 2`` on ``lo_i <= u <= hi_i``
(:class:`LossConjugate`: each loss gives its ``p, eps, d, lo, hi``), ``R^*`` is the penalty's
conjugate, and a free intercept adds the coupling constraint ``sum_i sigma_i u_i = 0`` (its
conjugate is the indicator of ``{0}``); without an intercept nothing is added. Weak duality
``D(u) <= P* <= P(w, b)`` holds for every ``u`` in the domain, so the gap ``P - D`` bounds the
suboptimality.

The dual point is built from the pieces: the candidate's own multipliers and the loss
derivatives at its margins (``u_i = -L_i'(z_i)``, the optimal multipliers when ``w`` is
optimal), each made feasible (clipped to the box; projected onto the coupling constraint;
scaled into the penalty conjugate's domain, e.g. ``||v||_inf <= 1`` for the L1 penalty), then
chosen on the loss's kinks by bounded least squares on stationarity (dense data), then
improved by exact dual coordinate ascent where the penalty is L2 (:mod:`qpsvm.verify.ascent`,
liblinear's dual coordinate descent over the nonzeros of ``X``; with a free intercept, an outer
search on ``b`` whose multipliers are balanced at the end). The points are tried cheapest first
and the search stops once the gap is far below the tolerance. The bound's validity rests only
on feasibility and the evaluation, never on how the point was found.

With a nonlinear kernel (L2 penalty) the candidate's own multipliers are tried first (at an
exact answer their gap is round-off); where they fail, the dual point is searched on the same
problem over the features of a factor ``K = L L^T`` (:meth:`factor_problem`). Both objectives
are evaluated with the Gram matrix itself, the bound on the kernel values' rounding
(:func:`qpsvm.verify.binary.kernel_scores`) added to ``P`` and subtracted from ``D``.

The gap splits into Fenchel-Young gaps, each ``>= 0`` and zero exactly at a primal-dual optimal
pair: ``R(w) + R^*(v) - w.v`` (reported as ``stationarity``) and, per sample,
``L_i(z_i) + L_i^*(-u_i) + u_i z_i`` (the largest reported as ``complementarity``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from qpsvm._jit import CALLEE, ENTRY
from qpsvm._numerics import fsum, fsum_dot, tdot
from qpsvm._validation import check_tol
from qpsvm.contract import CompositeProblem
from qpsvm.exceptions import InvalidInputError
from qpsvm.solution import Candidate
from qpsvm.verify.ascent import CERTIFY_EPOCHS, CoordinateData, ascend, balanced_ascent
from qpsvm.verify.binary import kernel_proven, kernel_scores, kernel_ulps
from qpsvm.verify.certificate import (
    DEFAULT_TOL,
    GOOD_ENOUGH,
    Certificate,
    best_dual_point,
    beyond_ceiling,
    evaluation_allowance,
)
from qpsvm.verify.projection import bounded_fit
from qpsvm.verify.psd import ExactGram
from qpsvm.verify.rigorous import TouchedEnclosure, binary_expansion, touched_expansion
from qpsvm.verify.rigorous_composed import (
    RIGOROUS_PENALTIES,
    composed_box,
    composed_dual_lower,
    composed_kernel_dual_lower,
    composed_kernel_primal_upper,
    composed_primal_upper,
)
from qpsvm.verify.rigorous_poly import PolyBound

__all__ = [
    "LossConjugate",
    "certify_composed",
    "composed_kernel_scores",
    "coordinate_minimiser",
    "project_coupled",
]

#: Sweeps of dual coordinate ascent (single coordinates) when improving a dual point.
ASCENT_SWEEPS = 2000
#: Largest dense copy (entries) of the data made for the ascent.
MAX_DENSE = 50_000_000
#: Thresholds on the distance to a loss's kink (relative to ``max(1, max |target|)``) for
#: "the multiplier is undetermined there".
KINK_TAUS = (1e-10, 1e-8, 1e-6, 1e-4)
#: Largest kink set matched by bounded least squares.
MAX_KINK_SET = 3000


@dataclass(frozen=True)
class LossConjugate:
    r"""The dual side of a loss: ``phi_i(u) = -L_i^*(-u) = p_i u - eps_i |u| - d_i u^2/2``
    on ``lo_i <= u <= hi_i``.

    Hinge (margin ``m``, weight ``w_i = C c_i``): ``p = m, eps = 0, d = 0``, ``0 <= u <= w_i``.
    Squared hinge: ``d = 1 / (2 w_i)``, ``0 <= u``. Epsilon-insensitive (target ``y``):
    ``p = y``, ``eps``, ``-w_i <= u <= w_i``. Squared epsilon-insensitive: ``d = 1/(2 w_i)``,
    ``u`` free. A zero weight forces ``u_i = 0``.
    """

    p: np.ndarray
    eps: np.ndarray
    d: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    def value(self, u: np.ndarray) -> float:
        """``sum_i phi_i(u_i)`` (``-inf`` outside the box), with compensated sums."""
        if np.any(u < self.lo) or np.any(u > self.hi):
            return -math.inf
        return fsum_dot(self.p, u) - fsum_dot(self.eps, np.abs(u)) - 0.5 * fsum_dot(self.d, u * u)

    def clip(self, u: np.ndarray) -> np.ndarray:
        """``u`` clipped to the box."""
        return np.clip(u, self.lo, self.hi)


def project_coupled(u: np.ndarray, lo: np.ndarray, hi: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """Euclidean projection onto ``{lo <= u <= hi, sum_i sigma_i u_i = 0}`` (``sigma_i = +-1``).

    The projection is ``clip(u - nu sigma)`` for the ``nu`` that zeroes the (non-increasing,
    piecewise linear) coupling sum, of slope minus the number of free coordinates: bracketed,
    then Newton's steps on it (each the root of the current piece), bisection where a step
    leaves the bracket or no coordinate is free, until a step stays on its piece; then
    computed exactly on that piece. A bisection to the last bit took about 100 compensated
    sums over every multiplier (10 ms a projection at 20000 rows, a third of the squared
    hinge's solve with a free intercept there).
    """

    def at(nu: float) -> np.ndarray:
        return np.clip(u - nu * sigma, lo, hi)

    def coupling(nu: float) -> float:
        return fsum_dot(sigma, at(nu))

    a, b = -1.0, 1.0
    while coupling(a) < 0 and a > -1e300:
        a *= 2.0
    while coupling(b) > 0 and b < 1e300:
        b *= 2.0
    nu = 0.5 * (a + b)
    point = at(nu)
    free = (point > lo) & (point < hi)
    for _ in range(200):
        total = fsum_dot(sigma, point)
        if total > 0:
            a = nu
        elif total < 0:
            b = nu
        else:
            break
        m = np.count_nonzero(free)
        step = nu + total / m if m else b
        following = step if a < step < b else 0.5 * (a + b)
        if following in (a, b, nu):
            break
        point = at(following)
        moved = (point > lo) & (point < hi)
        if m and step == following and np.array_equal(moved, free):
            nu = following
            break  # the root of this piece, on it
        nu, free = following, moved
    if np.any(free):
        fixed = fsum_dot(sigma[~free], point[~free])
        nu = (fsum_dot(sigma[free], u[free]) + fixed) / np.count_nonzero(free)
        trial = at(nu)
        if abs(fsum_dot(sigma, trial)) <= abs(fsum_dot(sigma, point)):
            point = trial
    return point


@numba.njit(**CALLEE)
def coordinate_minimiser(a, eps, c, denom, lo, hi):  # pragma: no cover - compiled
    """The maximiser over ``t`` in ``[lo, hi]`` of ``(a + c) t - eps |t| - denom t^2 / 2``: one
    exact step of dual coordinate ascent (``c = q u_k - g_k``, ``denom = q + d``)."""
    new = (a - eps + c) / denom
    if new <= 0.0:
        new = (a + eps + c) / denom
        if new >= 0.0:
            new = 0.0
    return min(max(new, lo), hi)


@numba.njit(**ENTRY)
def _coordinate_ascent(A, u, v, p, eps, d, lo, hi, sweeps, tol):  # pragma: no cover - compiled
    """Exact maximisation of ``D`` (L2 penalty, no coupling) over one ``u_k`` at a time, for
    rows ``a_k`` of ``A`` with ``v = A^T u``; returns the sweeps done."""
    n, m = A.shape
    q = np.zeros(n)
    for k in range(n):
        for j in range(m):
            q[k] += A[k, j] * A[k, j]
    done = 0
    for _ in range(sweeps):
        done += 1
        largest = 0.0
        for k in range(n):
            denom = q[k] + d[k]
            if denom <= 0.0 or lo[k] == hi[k]:
                continue
            g = 0.0
            for j in range(m):
                g += A[k, j] * v[j]
            new = coordinate_minimiser(p[k], eps[k], q[k] * u[k] - g, denom, lo[k], hi[k])
            delta = new - u[k]
            if delta != 0.0:
                for j in range(m):
                    v[j] += delta * A[k, j]
                u[k] = new
                largest = max(largest, abs(delta) * math.sqrt(denom))
        if largest <= tol:
            break
    return done


def _dense(X: Any) -> np.ndarray | None:
    if X.shape[0] * X.shape[1] > MAX_DENSE:
        return None
    return np.ascontiguousarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)


class _Dual:
    """Evaluation of ``D`` for a composed problem ``f`` (see the module docstring)."""

    def __init__(self, f: CompositeProblem) -> None:
        self.f = f
        self.conj: LossConjugate = f.loss_conjugate()
        self.sigma = f.sigma
        self.scaling = f.intercept.scaling if f.intercept.regularized else None
        self._last: tuple[bytes, np.ndarray] | None = None
        self._enclosed: tuple[bytes, tuple] | None = None
        self._conjugate: tuple[bytes, float] | None = None

    def v(self, u: np.ndarray) -> np.ndarray:
        """``v = sum_i u_i sigma_i x_i`` (twice the working precision), with the intercept's
        coordinate ``B sum_i sigma_i u_i`` when it is regularised; read-only, and kept for the
        last ``u``: a point is made feasible, valued and its Fenchel-Young gaps taken, each
        needing its ``v`` (three expansions of the same multipliers, 36 of a certificate's
        107 ms at 10000 x 1e6, 100 nonzeros a row, the squared hinge). Without pair
        differences it is the rounded sum of :meth:`enclosure`'s Dot2 parts (the floats of
        :func:`~qpsvm._numerics.tdot`), so the rigorous bound of the point kept
        (:func:`~qpsvm.verify.rigorous_composed.composed_dual_lower`) takes no pass of its
        own."""
        key = np.asarray(u, dtype=np.float64).tobytes()
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        su = u * self.sigma
        # the intercept's coordinate in its own entry at the end, filled in place: no copy
        # appending it (2-4 ms at 1e6 features)
        extra = 0 if self.scaling is None else 1
        if self.f.item_pairs is None:
            enclosed = self.enclosure(su)
            if isinstance(enclosed, TouchedEnclosure):
                v = enclosed.estimate(extra)
            else:
                d = enclosed[0].size
                v = np.empty(d + extra)
                np.add(np.ravel(enclosed[0]), np.ravel(enclosed[1]), out=v[:d])
        else:
            v = tdot(self.f.X, su)
            if extra:
                v = np.append(v, 0.0)
        if self.scaling is not None:
            v[-1] = self.scaling * fsum(su)
        v.flags.writeable = False
        self._last = (key, v)
        return v

    def enclosure(self, su: np.ndarray) -> tuple:
        """``sum_i su_i x_i`` enclosed (:func:`~qpsvm.verify.rigorous.binary_expansion`: Dot2's
        ``hi, lo`` and the bound ``err``), kept for the last ``su``; read-only. Over the
        columns the rows touch where the formulation has them, with the solver's expansion of
        the same ``su`` where it kept one, kept restricted to them
        (:func:`~qpsvm.verify.rigorous.touched_expansion`: the same floats, spread over every
        column only where a consumer needs them, not for the L2 conjugate's norm)."""
        key = np.asarray(su, dtype=np.float64).tobytes()
        if self._enclosed is None or self._enclosed[0] != key:
            parts = None if self.f.item_pairs is not None else touched_expansion(self.f, su)
            if parts is None:
                parts = binary_expansion(self.f, su, self.f.item_pairs)
            for part in parts[:3]:
                part.flags.writeable = False
            self._enclosed = (key, parts)
        return self._enclosed[1]

    def coupled(self, u: np.ndarray) -> np.ndarray:
        """``u`` clipped to the box and, for a free intercept, projected onto the coupling."""
        c = self.conj
        u = c.clip(u)
        if self.f.intercept.coupled:
            u = project_coupled(u, c.lo, c.hi, self.sigma)
        return u

    def feasible(self, u: np.ndarray) -> np.ndarray:
        """``u`` moved into the dual domain: the box, the coupling (:meth:`coupled`), the
        penalty's domain."""
        u = self.coupled(u)
        # the scaled point's v is recomputed (rounded): shrink until the conjugate is finite
        for _ in range(8):
            t = self.f.penalty.feasible_scale(self.v(u))
            if t == 1.0:
                break
            u = u * (t * (1.0 - 8.0 * np.finfo(float).eps))
        return u

    def matched(self, u: np.ndarray, z: np.ndarray, w_aug: np.ndarray) -> Iterator[np.ndarray]:
        """Points that keep ``u`` off the kinks and choose it on the kink set ``K`` (where
        ``z_i`` sits on a kink of its loss, so ``u_i`` is any point of an interval) by bounded
        least squares on stationarity, ``sum_i u_i sigma_i x_i = grad R(w)`` on the coordinates
        where the gradient is unique (and the coupling, weighted, for a free intercept)."""
        f, c = self.f, self.conj
        g, known = f.penalty.gradient(w_aug)
        distance = f.loss.kink_distance(z, f.target, f.epsilon)
        scale = max(1.0, float(np.max(np.abs(f.target), initial=0.0)))
        seen = set()
        for tau in KINK_TAUS:
            K = np.flatnonzero((distance <= tau * scale) & (c.lo < c.hi))
            if not 0 < K.size <= MAX_KINK_SET or K.tobytes() in seen:
                continue
            seen.add(K.tobytes())
            rest = u.copy()
            rest[K] = 0.0
            XK = f.X[K]
            A = (XK.toarray() if sp.issparse(XK) else np.asarray(XK)) * self.sigma[K][:, None]
            if self.scaling is not None:
                A = np.hstack([A, self.scaling * self.sigma[K][:, None]])
            A = A.T[known]
            target = (g - self.v(rest))[known]
            if f.intercept.coupled:
                weight = max(1.0, float(np.sqrt(np.max(np.sum(A * A, axis=0), initial=0.0))))
                A = np.vstack([A, weight * self.sigma[K]])
                target = np.append(target, -weight * fsum_dot(self.sigma, rest))
            lo = np.maximum(c.lo[K], -1e300)
            hi = np.minimum(c.hi[K], 1e300)
            rest[K] = bounded_fit(A, target, lo, hi)
            yield self.feasible(rest)

    def conjugate(self, u: np.ndarray) -> float:
        """``R^*(v)`` at the expansion ``v`` of ``u`` (:meth:`v`), kept for the last ``u``."""
        key = np.asarray(u, dtype=np.float64).tobytes()
        if self._conjugate is None or self._conjugate[0] != key:
            self._conjugate = (key, self.f.penalty.conjugate(self.v(u)))
        return self._conjugate[1]

    def value(self, u: np.ndarray) -> float:
        """``D(u)`` (``-inf`` outside the domain)."""
        return self.conj.value(u) - self.conjugate(u)

    def ascend(self, u: np.ndarray, b: float, primal: float, tol: float) -> np.ndarray:
        """``u`` improved by exact coordinate (or pair) ascent where the penalty is L2.

        Classification (multipliers ``u >= 0``, no ``eps``) runs the sparse dual coordinate
        ascent of :mod:`qpsvm.verify.ascent`, whose cost follows the nonzeros of ``X``; with a
        free intercept it searches the intercept from the candidate's ``b``
        (:func:`~qpsvm.verify.ascent.balanced_ascent`). Regression runs the dense ascents here.
        """
        if self.f.penalty.name != "l2" or primal - self.value(u) <= 0:
            return u
        c = self.conj
        stop = GOOD_ENOUGH * tol
        if np.all(c.lo == 0.0) and not np.any(c.eps > 0):
            data = CoordinateData(self.f.X, self.sigma, c.p, c.d, c.hi, self.scaling or 0.0)
            if self.f.intercept.coupled:
                return balanced_ascent(
                    data, self.feasible, stop, u=u, b=b, max_epochs=CERTIFY_EPOCHS
                )[0]
            found = ascend(data, u, stop, max_epochs=CERTIFY_EPOCHS, exact=False)
            return c.clip(found.u)
        X = _dense(self.f.X)
        if X is None:
            return u
        u = u.copy()
        stop = 1e-15 * max(1.0, abs(primal))
        if self.f.intercept.coupled:
            return u
        A = X * self.sigma[:, None]
        if self.scaling is not None:
            A = np.hstack([A, self.scaling * self.sigma[:, None]])
        v = self.v(u).copy()  # the ascent updates it
        _coordinate_ascent(A, u, v, c.p, c.eps, c.d, c.lo, c.hi, ASCENT_SWEEPS, stop)
        return c.clip(u)


def certify_composed(
    f: CompositeProblem,
    cand: Candidate,
    tol: float = DEFAULT_TOL,
    hints: Sequence[np.ndarray] = (),
    ceiling: float = math.inf,
) -> Certificate:
    """Certify a candidate ``(w, b)`` and/or multipliers ``u`` of a composed problem.

    Parameters
    ----------
    f : ComposedProblem
    cand : Candidate
        ``w`` (or ``alpha``: the multipliers ``u``, from which ``w`` follows for the penalties
        whose conjugate is differentiable); ``b=None`` takes the best intercept for ``w``.
    tol : float
        Relative tolerance of the test.
    hints : sequence of ndarray, optional
        More multipliers to try as dual points (made feasible first), e.g. those of the
        problem's own solution: with them the gap bounds the suboptimality of a candidate of
        any quality tightly, where the candidate's own multipliers (scaled into the penalty
        conjugate's domain, which costs a gap linear in the candidate's error) do not.
    ceiling : float, optional
        An upper bound on the optimum (the problem's own solution's rigorous primal, whose
        multipliers are a hint): the search stops once no point could change the verdict
        (:func:`~qpsvm.verify.certificate.beyond_ceiling`), so that a failing candidate costs
        no ascent (nor, with a kernel, factor problem) once a hint is near the optimum.
    """
    tol = check_tol(tol)
    if not f.linear:
        return _certify_kernel(f, cand, tol, hints, ceiling)
    found = _search(f, cand, tol, hints, ceiling)
    best, best_value, primal = found.u, found.value, found.primal
    rigorous = f.penalty.name in RIGOROUS_PENALTIES
    floor = 0.0
    if rigorous:
        estimates = (primal, best_value)
        primal = composed_primal_upper(f, found.w, found.b)
        best_value, best = composed_dual_lower(f, best, primal, found.dual.enclosure)
        floor = evaluation_allowance(primal, best_value, *estimates)
    complementarity, stationarity = _young(f, found, best)
    return Certificate(
        primal_objective=float(primal),
        dual_objective=float(best_value),
        primal_infeasibility=found.primal_infeasibility,
        dual_infeasibility=0.0 if found.u_in is None else f.dual_infeasibility(found.u_in),
        complementarity=complementarity,
        stationarity=stationarity,
        tol=tol,
        formulation=f.describe(),
        alpha=best,
        strong_convexity=f.penalty.strong_convexity,
        rigorous=rigorous,
        rounding_floor=floor,
    )


@dataclass
class _Found:
    """What the dual search of :func:`_search` found, in working precision: the best dual
    point ``u`` and its value, with the candidate's ``w``, ``b``, margins ``z``, primal value,
    slacks' violation and own multipliers ``u_in``, and the evaluator ``dual`` (with its last
    expansion)."""

    u: np.ndarray
    value: float
    w: np.ndarray
    b: float
    z: np.ndarray
    primal: float
    primal_infeasibility: float
    u_in: np.ndarray | None
    dual: _Dual


def _search(
    f: CompositeProblem,
    cand: Candidate,
    tol: float,
    hints: Sequence[np.ndarray],
    ceiling: float = math.inf,
) -> _Found:
    """The candidate's values and the best dual point found for it (linear kernel), in working
    precision only: the rigorous bounds are the caller's, computed once for the point kept."""
    dual = _Dual(f)
    u_in = None if cand.alpha is None else f.check_alpha(cand.alpha)
    if cand.w is not None:
        w = f.check_w(cand.w)
    elif u_in is not None:
        w = f.primal_from_dual(u_in)
    else:
        raise InvalidInputError("nothing to certify: pass a solution, w (and b), or alpha.")
    scores = f.scores(w)
    b = f.optimal_intercept(scores) if cand.b is None else f.check_b(cand.b)
    z = f.sigma * (scores + b)
    primal = f.objective(w, b, scores=scores)
    primal_inf = 0.0
    if cand.xi is not None:
        primal_inf = f.slack_violation(z, cand.xi)

    def pool() -> Iterator[np.ndarray]:
        # lazily, cheapest first: the search stops once the gap is far below tol
        for h in hints:
            yield dual.feasible(f.check_alpha(h))
        if u_in is not None:
            yield dual.feasible(u_in)
        gradient = f.loss.gradient_dual(z, f.target, f.epsilon, f.loss_weights())
        yield dual.feasible(gradient)
        if not sp.issparse(f.X):
            # dense least squares on the kink set; on sparse data the ascent below does it
            yield from dual.matched(gradient, z, f.intercept.augment(w, b))

    best, best_value, early = best_dual_point(
        dual.value, pool(), np.zeros(f.n_samples), primal, tol, ceiling=ceiling
    )
    if not early and not beyond_ceiling(primal, best_value, ceiling, tol):
        improved = dual.ascend(best, b, primal, tol)
        value = dual.value(improved)
        if value > best_value:
            best, best_value = improved, value
    return _Found(best, best_value, w, b, z, primal, primal_inf, u_in, dual)


def _young(f: CompositeProblem, found: _Found, u: np.ndarray) -> tuple[float, float]:
    """The largest per-sample Fenchel-Young gap of the losses (``complementarity``) and the
    penalty's (``stationarity``) at the candidate of ``found`` and the dual point ``u``."""
    v = found.dual.v(u)
    # w and a regularised intercept's coordinate apart (no copy appending it): the floats of
    # R((w, b / B)) and (w, b / B) . v
    tail = f.intercept.tail(found.b)
    d = v.size - len(tail)
    product = fsum_dot(found.w, v[:d], [t * float(x) for t, x in zip(tail, v[d:], strict=True)])
    young_penalty = f.penalty.value(found.w, tail) + found.dual.conjugate(u) - product
    young_loss = f.loss_young_gaps(found.z, u)
    return float(np.max(young_loss, initial=0.0)), float(max(0.0, young_penalty))


class _KernelView:
    """A composed problem seen as :func:`~qpsvm.verify.binary.kernel_scores` expects it:
    labels ``y`` are the signs ``sigma``."""

    def __init__(self, f: CompositeProblem) -> None:
        self.kernel, self.X, self.y = f.kernel, f.X, f.sigma
        self.n_samples, self.n_features = f.n_samples, f.n_features
        self.gram_rows = f.gram_rows
        self._f = f

    def scores(self, alpha: np.ndarray) -> np.ndarray:
        return self._f.kernel_product(alpha)


def composed_kernel_scores(f: CompositeProblem, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The scores ``g = K (u sigma)`` of multipliers ``u`` of a kernel composed problem and the
    bounds ``e`` on their errors that its certificate uses
    (:func:`~qpsvm.verify.binary.kernel_scores`)."""
    view = _KernelView(f)
    return kernel_scores(view, [u], kernel_ulps(view))[0]


def _certify_kernel(
    f: CompositeProblem,
    cand: Candidate,
    tol: float,
    hints: Sequence[np.ndarray],
    ceiling: float = math.inf,
) -> Certificate:
    """:func:`certify_composed` for a nonlinear kernel: multipliers ``u`` (and ``b``).

    The candidate's own multipliers, moved into the exact box (and, where the certificate is
    not rigorous, onto the coupling), are the first dual point: at an exact answer (the kernel
    start's, :mod:`qpsvm.solvers.kernel_start`) their gap is round-off, and their scores are
    the candidate's own, so no factor of ``K`` is needed; the points of ``hints`` (the
    problem's own solution's) are tried the same way. The certificate is returned when it
    passes: a better dual point would only shrink a gap already below what was asked (at
    large ``C`` mostly the evaluation's rounding floor, which it would not remove: measured at
    n = 1000, SVR rbf, ``C = 100``, the same gap after a 1.2 s search); and when no point
    could change its verdict given the ``ceiling`` on ``P*``
    (:func:`~qpsvm.verify.certificate.beyond_ceiling`). Otherwise a
    dual point is searched on the factor problem (:meth:`factor_problem`) in working precision
    (:func:`_search`: no rigorous bound is computed there), and the better of the two kept.
    Either point's objectives are evaluated, and bounded once, with the Gram matrix, through
    scores ``g = K (u sigma)`` within a bound ``e`` of the exact ones
    (:func:`~qpsvm.verify.binary.kernel_scores`). Where every value's rounding is bounded and
    the Gram matrix on the data is positive semidefinite
    (:func:`~qpsvm.verify.binary.kernel_proven`: rbf, poly with ``coef0 >= 0``, poly with
    ``coef0 < 0`` and a precomputed Gram matrix proven on the data) the ends are rigorous
    (:func:`~qpsvm.verify.rigorous_composed.composed_kernel_primal_upper`,
    :func:`~qpsvm.verify.rigorous_composed.composed_kernel_dual_lower`): weak duality holds for
    the linear problem on the rows of a real factor ``K = L L^T`` of the exact Gram matrix,
    whose objectives these are, for any point in the exact box, however it was found. Otherwise
    (callable kernels, a precomputed or poly Gram matrix left undecided) ``e`` is added to
    ``P`` and subtracted from ``D`` in working precision, and ``rigorous=False``.

    Raises
    ------
    NonConvexProblemError
        When the poly Gram matrix on the data is proven not positive semidefinite.
    """
    if cand.alpha is None:
        raise InvalidInputError(
            f"the {f.kernel.name!r} kernel has no explicit w: certify alpha (the multipliers)."
        )
    u_in = f.check_alpha(cand.alpha)
    view = _KernelView(f)
    ulps = kernel_ulps(view)
    rigorous = kernel_proven(f.X, ulps)

    def feasible(u: np.ndarray) -> np.ndarray:
        return composed_box(f, u) if rigorous else _Dual(f).coupled(u)

    own = feasible(u_in)
    same = np.array_equal(own, u_in)
    scores = kernel_scores(view, [u_in] if same else [u_in, own], ulps)
    g, e = scores[0]
    b = f.kernel_intercept(u_in, g) if cand.b is None else f.check_b(cand.b)
    diagonal = ulps.diagonal if isinstance(ulps, PolyBound | ExactGram) else 1.0
    primal = _KernelPrimal(f, rigorous, diagonal, u_in, b, g, e, cand.xi)
    cert = primal.certificate(own, *scores[-1], tol)
    for h in hints:
        # e.g. the solution's point, by its scores alone: where it passes the candidate, or no
        # point could change the verdict, no factor of K is needed
        u = feasible(f.check_alpha(h))
        cert = max(cert, primal.certificate(u, *kernel_scores(view, [u], ulps)[0], tol), key=_dual)
    if cert.passed or beyond_ceiling(cert.primal_objective, cert.dual_objective, ceiling, tol):
        return cert
    shadow = f.factor_problem()
    candidate = Candidate(w=shadow.expansion(u_in), b=b, alpha=u_in)
    found = _search(shadow, candidate, tol, hints, ceiling)
    u = composed_box(f, found.u) if rigorous else found.u
    searched = primal.certificate(u, *kernel_scores(view, [u], ulps)[0], tol)
    return max(cert, searched, key=_dual)


def _dual(cert: Certificate) -> float:
    """A certificate's dual value, the key that keeps the better of two for one candidate."""
    return cert.dual_objective


class _KernelPrimal:
    """A kernel candidate ``(u, b)`` of ``f`` with its scores ``g`` within ``e`` of the exact
    ones (:func:`_certify_kernel`): its primal value, and the certificate of a dual point."""

    def __init__(
        self,
        f: CompositeProblem,
        rigorous: bool,
        diagonal: float,
        u: np.ndarray,
        b: float,
        g: np.ndarray,
        e: np.ndarray,
        xi: np.ndarray | None,
    ) -> None:
        self.f, self.rigorous, self.diagonal = f, rigorous, diagonal
        self.u, self.b, self.g = u, b, g
        self.z = f.sigma * (g + b)
        weights = f.loss_weights()
        extra = 0.0
        if f.intercept.regularized:
            extra = f.penalty.value(np.array([b / f.intercept.scaling]))
        self.loss = f.loss.value(self.z, f.target, f.epsilon)
        self.estimate = 0.5 * fsum_dot(u * f.sigma, g) + extra + fsum_dot(weights, self.loss)
        self.infeasibility = f.slack_violation(self.z, xi) if xi is not None else 0.0
        if rigorous:
            self.primal = composed_kernel_primal_upper(f, u, b, g, e)
        else:
            z, loss = self.z, self.loss
            worst = np.maximum(
                f.loss.value(z - e, f.target, f.epsilon), f.loss.value(z + e, f.target, f.epsilon)
            )
            self.primal = (
                self.estimate + 0.5 * fsum_dot(np.abs(u), e) + fsum_dot(weights, worst - loss)
            )

    def young(self, u: np.ndarray, g_dual: np.ndarray) -> tuple[float, float]:
        r"""The largest per-sample Fenchel-Young gap of the losses (``complementarity``) and the
        penalty's (``stationarity``), :math:`\tfrac12 \|w - v\|^2 = \tfrac12
        ((u_{in} - u)\sigma)^T K ((u_{in} - u)\sigma)` from the scores, with
        :math:`\tfrac12 (b/B - B \sigma\cdot u)^2` for a regularised intercept."""
        f = self.f
        stationarity = 0.5 * fsum_dot((self.u - u) * f.sigma, self.g - g_dual)
        if f.intercept.regularized:
            B = f.intercept.scaling
            stationarity += 0.5 * (self.b / B - B * fsum_dot(f.sigma, u)) ** 2
        young_loss = f.loss_young_gaps(self.z, u)
        return float(np.max(young_loss, initial=0.0)), float(max(0.0, stationarity))

    def certificate(
        self, u: np.ndarray, g_dual: np.ndarray, e_dual: np.ndarray, tol: float
    ) -> Certificate:
        """The certificate of the candidate with the dual point ``u`` (in the exact box where
        the certificate is rigorous) of scores ``g_dual`` within ``e_dual``."""
        f = self.f
        extra = 0.0
        if f.intercept.regularized:
            extra = f.penalty.conjugate(np.array([f.intercept.scaling * fsum_dot(f.sigma, u)]))
        dual = f.loss_conjugate().value(u) - 0.5 * fsum_dot(u * f.sigma, g_dual) - extra
        primal, floor = self.primal, 0.0
        if self.rigorous:
            estimates = (self.estimate, dual)
            dual = composed_kernel_dual_lower(f, u, g_dual, e_dual, primal, self.diagonal)
            floor = evaluation_allowance(primal, dual, *estimates)
        else:
            dual -= 0.5 * fsum_dot(np.abs(u), e_dual)
        complementarity, stationarity = self.young(u, g_dual)
        if not dual > 0.0:
            u, dual = np.zeros(f.n_samples), 0.0
        return Certificate(
            primal_objective=float(primal),
            dual_objective=float(dual),
            primal_infeasibility=self.infeasibility,
            dual_infeasibility=f.dual_infeasibility(self.u),
            complementarity=complementarity,
            stationarity=stationarity,
            tol=tol,
            formulation=f.describe(),
            alpha=u,
            strong_convexity=1.0,
            rigorous=self.rigorous,
            rounding_floor=floor,
        )

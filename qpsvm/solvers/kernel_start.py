r"""The exact start of the kernel composed problems: SMO on the dual's units, then the KKT
equations on its free set.

The dual of a composed problem with a nonlinear kernel (:mod:`qpsvm.formulations.composed`),
written as a minimisation,

.. math::

    \min_u\ F(u) = \tfrac12 u^T Q u - \sum_i \big(p_i u_i - \varepsilon_i |u_i|
    - \tfrac12 d_i u_i^2\big),\qquad Q_{ij} = \sigma_i \sigma_j (K_{ij} + B^2),
    \quad lo_i \le u_i \le hi_i,

(``B^2`` for a regularised intercept only; ``p``, ``eps``, ``d`` and the box from the loss,
:meth:`~qpsvm.formulations.composed.ComposedProblem.loss_conjugate`), with
``sum_i sigma_i u_i = 0`` for a free intercept, is the problem libsvm's ``Solver`` states for all
its formulations (:class:`~qpsvm.solvers.smo.SMOUnits`): one unit ``beta_k >= 0`` per sample of
a margin loss (``u = beta``, label ``sigma_i``), two per sample of a tube, one per side
(``u = alpha - alpha^*``, labels ``+-sigma_i``, linear terms ``+-p_i - eps_i``: at an optimum
one of the two is 0, so ``eps |u| = eps (alpha + alpha^*)``), the squared losses' ``d`` on the
diagonal (``d (alpha^2 + alpha^{*2}) / 2``, again ``d u^2 / 2`` at an optimum), ``B^2`` on every
kernel value, the coupling ``y . beta = 0``. The SMO loop of the soft-margin dual
(:func:`~qpsvm.solvers._online_kernels.smo_loop`: working pairs of second order, shrinking)
solves it on the Gram matrix's rows.

SMO identifies the free set ``F`` (multipliers strictly inside their box and, where the loss has
a kink at 0, nonzero) long before it converges; the KKT equations on it,

.. math::

    (Q_{FF} + D_F)\,u_F + \sigma_F\, b = p_F - \varepsilon_F \operatorname{sign}(u_F)
    - Q_{FE}\, u_E, \qquad \sigma_F \cdot u_F = -\sigma_E \cdot u_E

(the second equation and ``b`` with a free intercept only), give the optimum to round-off once
``F`` is right. The point is an exact start of the working set
(:func:`~qpsvm.solvers.working_set.composed_sets`): certified first, and returned when it passes;
where it fails by its certificate's rounding floor alone, the same equations with the free
samples aimed inside their kinks (:func:`aimed_point`) are certified next; the restricted QPs,
sorted at it, are the fallback.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np
import scipy.linalg

from qpsvm._jit import ENTRY
from qpsvm._numerics import fsum
from qpsvm.contract import CompositeProblem
from qpsvm.kernels import gram_arrays
from qpsvm.solution import Candidate
from qpsvm.solvers.smo import SMOUnits, _SMOState, smo_intercept
from qpsvm.solvers.warm_start import Start
from qpsvm.verify.fenchel import LossConjugate, composed_kernel_scores, coordinate_minimiser

__all__ = ["aimed_point", "kernel_smo_start", "kkt_polish", "smo_units"]

#: SMO's tolerances (its KKT violation, relative to the targets' scale), tried in turn (each
#: run warm from the last). The KKT equations are solved after each, and the first whose
#: solution no coordinate step improves by more than :data:`EXACT_TOL` ends the search: the
#: free set is usually right long before SMO converges.
START_TOLS = (1e-3, 1e-5, 1e-7, 1e-9)
#: A polished point whose coordinate steps move at most this fraction of its free set (at
#: least one unit) has those units moved and the KKT equations solved again, at most
#: :data:`SETTLE_ROUNDS` times: SMO at ``1e-3`` measured (n = 1000-2000, rbf) to leave 1-7
#: units off the optimum's sets of 140-1550, where SMO to the next tolerance costs a stage.
#: Moving many units at once was measured to diverge (a far point's steps are not its sets).
SETTLE_UNITS = 0.01
SETTLE_ROUNDS = 2
#: A polished point is kept as exact when its largest coordinate step, in units of
#: ``sqrt(Q_kk + d_k)`` (the square root of twice its decrease), is below this (relative to the
#: targets' scale): round-off, not a wrong free set.
EXACT_TOL = 1e-11
#: Thresholds (relative to the multipliers' scale) under which a restricted optimum's
#: multiplier counts as at its bound or 0 in :func:`kkt_polish` (an interior-point answer
#: leaves them ``1e-10``-``1e-8`` off).
SNAP_TAUS = (0.0, 1e-10, 1e-8, 1e-6)
#: The start's band for sorting the working set's units, relative to the targets' scale.
START_BAND = 1e-6
#: How many times its scores' error bound plus the KKT solve's residual a free sample is aimed
#: inside its kink (:func:`aimed_point`): above 1 since the aimed solve leaves a residual of its
#: own (SVR, rbf, n = 2000, ``C = 100``: aims of 1.25 to 3 all certified, with gaps
#: ``6.2e-10`` to ``8.6e-10`` of ``P``, since the aimed point gives up about
#: ``AIM sum_i |u_i| (e_i + rho)`` of the objective).
AIM = 1.5


@numba.njit(**ENTRY)
def _coordinate_steps(Kdiag, B2, a, eps, d, lo, hi, u, G):  # pragma: no cover - compiled
    """Each coordinate's exact minimiser of ``F`` (module docstring, linear term ``a``) at ``u``
    with ``G = Q u``, the others fixed, and the step's size in units of ``sqrt(Q_kk + d_k)``
    (the square root of twice its decrease)."""
    new = u.copy()
    size = np.zeros(u.shape[0])
    for k in range(u.shape[0]):
        q = Kdiag[k] + B2
        denom = q + d[k]
        if denom <= 0.0 or lo[k] == hi[k]:
            continue
        new[k] = coordinate_minimiser(a[k], eps[k], q * u[k] - G[k], denom, lo[k], hi[k])
        size[k] = abs(new[k] - u[k]) * math.sqrt(denom)
    return new, size


def smo_units(f: CompositeProblem, c: LossConjugate) -> SMOUnits:
    """The SMO units of the kernel dual of ``f`` (module docstring): one per sample where the
    box is ``u >= 0``, two (``alpha`` then ``alpha^*``) where it reaches below 0."""
    n = f.n_samples
    sample = np.arange(n)
    sign = np.ones(n)
    if np.any(c.lo < 0):
        sample, sign = np.concatenate([sample, sample]), np.concatenate([sign, -sign])
    sigma = np.asarray(f.sigma, dtype=np.float64)
    return SMOUnits(
        y=sigma[sample] * sign,
        m=sign * c.p[sample] - c.eps[sample],
        upper=np.where(sign > 0, c.hi[sample], -c.lo[sample]),
        sample=sample,
        shift=c.d[sample].astype(np.float64),
        B2=f.intercept.scaling**2 if f.intercept.regularized else 0.0,
        equality=f.intercept.coupled,
        mapped=True,
    )


class _Dual:
    """The kernel dual of one composed problem ``f`` (module docstring): its Gram matrix, the
    loss's conjugate, and the KKT equations on a free set."""

    def __init__(self, f: CompositeProblem) -> None:
        self.f = f
        c = f.loss_conjugate()
        self.conjugate = c
        self.p, self.eps, self.d, self.lo, self.hi = c.p, c.eps, c.d, c.lo, c.hi
        self.sigma = np.asarray(f.sigma, dtype=np.float64)
        self.B2 = f.intercept.scaling**2 if f.intercept.regularized else 0.0
        self.scale = max(1.0, float(np.max(np.abs(self.p), initial=0.0)))

    @functools.cached_property
    def K(self) -> np.ndarray:
        """The Gram matrix, formed when first used (not by an aimed point given up before its
        solve)."""
        return np.ascontiguousarray(self.f.gram(), dtype=np.float64)

    def gradient(self, u: np.ndarray) -> np.ndarray:
        """``G = Q u`` from the Gram matrix."""
        su = self.sigma * u
        return self.sigma * (self.K @ su + self.B2 * fsum(su))

    def steps(self, u: np.ndarray, b: float) -> tuple[np.ndarray, np.ndarray]:
        """Each coordinate's exact minimiser at ``u`` (intercept ``b``), its gradient recomputed
        from the Gram matrix, and the steps' sizes (:func:`_coordinate_steps`)."""
        a = self.p - b * self.sigma
        args = (self.d, self.lo, self.hi, u, self.gradient(u))
        return _coordinate_steps(np.diag(self.K), self.B2, a, self.eps, *args)

    def settle(self, u: np.ndarray, b: float) -> tuple[np.ndarray, float, bool]:
        """The KKT equations on the free set of ``u`` (:meth:`polish`), and again, up to
        :data:`SETTLE_ROUNDS` times, after the few units (at most :data:`SETTLE_UNITS` of the
        free set) that a coordinate step still moves by more than :data:`EXACT_TOL` are moved
        (into the free set, onto a bound or to 0): the point, its intercept and whether no
        coordinate step improves it by more than :data:`EXACT_TOL` (exact)."""
        point, b = self.polish(u, b)
        for rounds in range(SETTLE_ROUNDS + 1):
            new, size = self.steps(point, b)
            moving = size > EXACT_TOL * self.scale
            count = int(np.count_nonzero(moving))
            if count == 0:
                return point, b, True
            free = int(np.count_nonzero(self.free(point)))
            if rounds == SETTLE_ROUNDS or count > max(1.0, SETTLE_UNITS * free):
                break
            point, b = self.polish(np.where(moving, new, point), b)
        return point, b, False

    def free(self, u: np.ndarray) -> np.ndarray:
        """The free set of ``u``: strictly inside the box and, where the loss has a kink at 0,
        nonzero."""
        return (u > self.lo) & (u < self.hi) & ((self.eps == 0.0) | (u != 0.0))

    def polish(
        self, u: np.ndarray, b: float, inside: np.ndarray | None = None
    ) -> tuple[np.ndarray, float]:
        """The KKT equations on the free set of ``u`` (module docstring), the others fixed at
        their values, the solution clipped into the box, and its intercept (``b`` when it is
        not free). With ``inside``, each free unit's kink is moved that far into the loss's
        zero side: the margin to ``m_i + inside_i``, the tube's edge to
        ``eps - inside_i`` (:func:`aimed_point`)."""
        free = self.free(u)
        F, E = np.flatnonzero(free), np.flatnonzero(~free)
        if F.size == 0:
            return u.copy(), b
        sF, sE = self.sigma[F], self.sigma[E]
        Q = (self.K[np.ix_(F, F)] + self.B2) * np.outer(sF, sF) + np.diag(self.d[F])
        fixed = sE * u[E]
        eps = self.eps[F] if inside is None else self.eps[F] - inside[F]
        rhs = self.p[F] - eps * np.sign(u[F])
        rhs -= sF * ((self.K[np.ix_(F, E)] + self.B2) @ fixed)
        coupling = sF if self.f.intercept.coupled else None
        solved, b = _kkt_solve(Q, rhs, coupling, -fsum(fixed), b)
        if not np.all(np.isfinite(solved)):
            return u.copy(), b
        out = u.copy()
        out[F] = np.clip(solved, self.lo[F], self.hi[F])
        return out, b


def _kkt_solve(
    Q: np.ndarray, rhs: np.ndarray, coupling: np.ndarray | None, total: float, b: float
) -> tuple[np.ndarray, float]:
    r"""``Q x = rhs`` by a Cholesky factor (``Q`` is the free set's kernel block plus the
    squared losses' diagonal), and with a ``coupling`` row ``s`` the saddle point
    ``Q x + s b = rhs, s . x = total``: ``b = (s . Q^{-1} rhs - total) / (s . Q^{-1} s)``.
    Where ``Q`` is not numerically positive definite, the bordered system by LU (least squares
    if singular). Returns ``x`` and ``b`` (unchanged without a coupling)."""
    try:
        factor = scipy.linalg.cho_factor(Q, check_finite=False)
    except np.linalg.LinAlgError:
        factor = None
    if factor is not None and coupling is None:
        return scipy.linalg.cho_solve(factor, rhs, check_finite=False), b
    if factor is not None:
        both = scipy.linalg.cho_solve(factor, np.column_stack([rhs, coupling]), check_finite=False)
        curvature = float(coupling @ both[:, 1])
        if curvature > 0.0:
            b = (float(coupling @ both[:, 0]) - total) / curvature
            return both[:, 0] - b * both[:, 1], b
    if coupling is not None:
        Q = np.block([[Q, coupling[:, None]], [coupling[None, :], np.zeros((1, 1))]])
        rhs = np.append(rhs, total)
    try:
        solved = np.linalg.solve(Q, rhs)
    except np.linalg.LinAlgError:
        solved = np.linalg.lstsq(Q, rhs, rcond=None)[0]
    if coupling is None:
        return solved, b
    return solved[:-1], float(solved[-1])


def _run(smo: _SMOState, tol: float) -> tuple[int, float]:
    """SMO to ``tol``; with a regularised intercept (no equality, ``B^2`` on every kernel
    value) first by pair steps, which keep ``y . beta`` and do not see the constant ``B^2``,
    then by single coordinates, which move ``y . beta``: single coordinates alone converge
    slowly along the constant (measured at n = 1000, rbf, C = 100: 70763 steps, against 9143
    pairs and 917 single steps). Returns the steps and the violation of the last run."""
    units = smo.units
    steps = 0
    if not units.equality and units.B2 > 0.0:
        steps = smo.run(tol, pairs=True)[0]
    it, violation = smo.run(tol)
    return steps + it, violation


def kernel_smo_start(f: CompositeProblem) -> Start:
    """The exact start of a kernel composed problem (module docstring): SMO on its units to
    each of :data:`START_TOLS` in turn (warm), each followed by the KKT equations on its free
    set, until they give a point no coordinate step improves (else SMO's last point: the
    certificate decides, and the working set's restricted problems, sorted at it, finish)."""
    dual = _Dual(f)
    units = smo_units(f, dual.conjugate)
    n_units = units.y.size
    rows = (gram_arrays(dual.K), np.diag(dual.K).copy())
    smo = _SMOState.start(units, rows, max(10_000_000, 100 * n_units), True, True)
    steps = 0
    for tol in START_TOLS:
        it, violation = _run(smo, tol * dual.scale)
        steps += it
        beta = smo.alpha
        u = beta[: f.n_samples] - beta[f.n_samples :] if n_units > f.n_samples else beta.copy()
        b = smo_intercept(units.y, smo.G, beta, units.upper) if units.equality else 0.0
        polished, b, exact = dual.settle(u, b)
        if exact:
            u = polished
            break
        if violation >= tol * dual.scale:  # max_iter: the certificate decides
            break
    b = f.kernel_intercept(u, f.kernel_product(u))
    band = START_BAND * dual.scale
    return Start(Candidate(w=None, b=b, alpha=u), band, "smo", steps, exact=True)


def aimed_point(f: CompositeProblem, cand: Candidate, excess: float = 0.0) -> Candidate | None:
    r"""The KKT point of ``cand``'s free set (``cand`` itself where it solves those equations,
    as the exact start does) with the free samples of an unsquared loss aimed
    :data:`AIM` times their scores' error bound inside their kink,
    wherever that costs less than it saves (kernels).

    A sample on its margin or on an edge of the tube cannot have its loss proven zero: its
    computed score is within ``e_i`` of the exact one
    (:func:`~qpsvm.verify.fenchel.composed_kernel_scores`), so the certified primal pays
    about :math:`(W_i - \tfrac12 |u_i|)\, e_i` there
    (:func:`~qpsvm.verify.rigorous_composed.composed_kernel_primal_upper`), and the dual
    :math:`\tfrac12 |u_i| e_i`. Aimed inside by ``AIM e_i`` (the margin moved to
    :math:`m_i + AIM\, e_i`, the tube narrowed to :math:`\varepsilon - AIM\, e_i`: the KKT
    equations of that problem on the same sets, :meth:`_Dual.polish`), its loss is proven
    zero and the point is the exact optimum of a problem whose objective differs by
    :math:`AIM \sum |u_i| e_i` to first order, so the sample costs about
    :math:`(AIM + 1) |u_i| e_i` in all: it is aimed where that is below :math:`W_i e_i`, i.e.
    :math:`|u_i| < W_i / (AIM + 1)` (the free multipliers of a large ``C``; measured on the
    SVR rbf at n = 2000, ``C = 100``: median :math:`|u_i| / W_i = 0.08`), and only inside a
    tube wider than the aim. The computed point solves the equations only to their round-off:
    its free samples miss their aim by a residual that ``e_i`` need not cover (poly, whose
    ``e_i`` is Dot2's :math:`u |g_i|`, about ``5e-16`` where the residual is ``2e-13``), so
    ``e_i`` in the aim is :math:`e_i + \rho`, :math:`\rho` the largest distance of ``cand``'s
    free samples from their kinks (``cand`` solves the same equations unaimed: that distance
    is the solve's residual to within ``e_i``; its largest, since each solve draws its own
    rounding; measured on 63 small hinge problems with exact starts, poly and rbf, ``C``
    1e5-1e8: 0 of 1092 aimed samples unproven, against 3 to 66 with per-sample estimates
    (its own residual, or :math:`u \sum_j |Q_{ij} u_j|`) in its place and 141 aiming by
    ``e_i`` alone). The squared losses are smooth at their free samples and are
    not aimed. ``None`` when no sample is aimed, when ``excess`` (``cand``'s gap beyond the
    tolerance) is more than twice what its free samples pay at their kinks,
    :math:`\sum_i W_i (e_i + \max(0, -inside_i))` (the failure is not the kinks': poly at
    ``C = 1e7``, composed hinge, the start's gap 5.5e-8 was its solve's residual, not its
    floor of 5e-10), or when the solution leaves the free set (a multiplier reaching its
    bound or changing sign)."""
    if f.loss.squared or f.linear:
        return None
    u = np.asarray(cand.alpha, dtype=np.float64)
    b = float(cand.b or 0.0)
    dual = _Dual(f)
    free = dual.free(u)
    g, err = composed_kernel_scores(f, u)
    z = dual.sigma * (g + b)
    inside = f.epsilon - np.abs(z - f.target) if f.loss.regression else z - f.target
    depth = AIM * (err + float(np.max(np.abs(inside[free]), initial=0.0)))
    W = f.loss_weights()
    if excess > 2.0 * fsum(W[free] * (err[free] + np.maximum(0.0, -inside[free]))):
        return None
    aim = free & ((AIM + 1.0) * np.abs(u) < W)
    if f.loss.regression:
        aim &= depth < f.epsilon
    if not np.any(aim):
        return None
    point, b = dual.polish(u, b, np.where(aim, depth, 0.0))
    if not np.array_equal(dual.free(point), free) or np.any(np.sign(point) != np.sign(u)):
        return None
    if not f.intercept.coupled:
        b = f.kernel_intercept(point, f.kernel_product(point))
    return Candidate(w=None, b=b, alpha=point)


def kkt_polish(f: CompositeProblem, u: np.ndarray, b: float) -> list[Candidate]:
    """The KKT equations on the free set of multipliers ``u`` (an interior-point answer of the
    working set's restricted problems, accurate to about ``1e-8``), each multiplier within
    ``tau max(1, max |u|)`` of a bound or of 0 first moved there, for each ``tau`` of
    :data:`SNAP_TAUS`: exact to round-off when that free set is the optimum's, as for the
    descent's start (module docstring)."""
    state = _Dual(f)
    u = np.asarray(u, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(u), initial=0.0)))
    out = []
    for tau in SNAP_TAUS:
        near = tau * scale
        snapped = np.where(np.abs(u - state.lo) <= near, state.lo, u)
        snapped = np.where(np.abs(u - state.hi) <= near, state.hi, snapped)
        snapped = np.where(np.abs(u) <= near, 0.0, snapped)
        polished, _ = state.polish(snapped, b)
        g = f.kernel_product(polished)
        out.append(Candidate(w=None, b=f.kernel_intercept(polished, g), alpha=polished))
    return out

r"""Certificates for the structural SVM, and the cutting planes its solutions are made of.

Sign conventions, written down once here for :class:`~qpsvm.StructuralSVM`. For example ``i`` and
an output ``y`` write :math:`\delta\Psi_i(y) = \Psi(x_i, y_i) - \Psi(x_i, y)` and
:math:`\Delta_i(y) = \Delta(y_i, y)`. The constraint of ``(i, y)`` reads
:math:`\xi_i \ge H_i(y; w) = c_{iy} - a_{iy}\cdot w` with

* margin rescaling: :math:`a_{iy} = \delta\Psi_i(y)`, :math:`c_{iy} = \Delta_i(y)`;
* slack rescaling: :math:`a_{iy} = \Delta_i(y)\,\delta\Psi_i(y)`, :math:`c_{iy} = \Delta_i(y)`.

A :class:`CuttingPlane` sums such constraints over a set ``S`` of examples, one output each:
:math:`\sum_{i\in S}\xi_i \ge \sum_{i\in S} H_i(\hat y_i; w)` (``S = {i}``: the n-slack
constraint; ``S`` = every example: the 1-slack constraint of Joachims, Finley & Yu, 2009). Every
plane is a valid inequality of the full problem, so a working set of planes ``k`` with multipliers
:math:`\alpha_k \ge 0` (the CVXPY dual values of the ``planes`` constraint) has the Lagrangian dual

.. math::

    D(\alpha) = \sum_k \alpha_k c_k - \tfrac12 \Big\|\sum_k \alpha_k a_k\Big\|^2, \qquad
    \sum_{k \ni i} \alpha_k \le C \text{ for every example } i,

with :math:`w = \sum_k \alpha_k a_k` at a primal-dual pair (minimising over :math:`\xi_i \ge 0`
leaves the multiplier :math:`C - \sum_{k\ni i}\alpha_k \ge 0` of :math:`\xi_i \ge 0`). Collecting
the weight of every distinct ``(i, y)`` over the planes, :math:`\alpha_{iy} = \sum_{k \ni i,\,
\hat y_{ki} = y} \alpha_k`, turns any working-set dual point into a point of the dual of the full
problem (all outputs) with the same value: the certificate works with those pairs, so it covers
n-slack and 1-slack working sets alike. Weak duality gives :math:`D(\alpha) \le P^* \le P(w)`,
where the primal objective uses the *true* slacks
:math:`\xi_i = \max(0, \max_y H_i(y; w))` from the model's (exact) loss-augmented or
slack-rescaled inference on every example; ``P`` is 1-strongly convex in ``w``, so
:math:`\|w - w^*\| \le \sqrt{2\,\mathrm{gap}}`.

The certifier never reads a QP's objective: it recomputes the planes from the stored outputs and
the raw data (:meth:`~qpsvm.StructuralSVM.pair_rows`), projects the pairs' weights onto the
feasible set (one capped simplex per example), and evaluates both objectives in numpy. Where the
model bounds the rounding of its own evaluations (:meth:`~qpsvm.models.JointFeatureModel.rounding`),
both ends are then bounded rigorously for the exact problem the float64 data state
(:mod:`qpsvm.verify.rigorous_structural`) and the certificate says ``rigorous=True``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import numpy as np

from qpsvm._numerics import fsum
from qpsvm._validation import check_tol
from qpsvm.contract import StructuralProblem
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.solution import Candidate, CuttingPlane, Solution, StructuralCandidate
from qpsvm.verify.certificate import (
    DEFAULT_TOL,
    Certificate,
    best_dual_point,
    evaluation_allowance,
)
from qpsvm.verify.projection import project_capped_simplex
from qpsvm.verify.rigorous_structural import (
    ENUMERATED,
    proven,
    structural_dual_lower,
    structural_primal_upper,
)

__all__ = [
    "CuttingPlane",
    "DualPairs",
    "DualSide",
    "StructuralCandidate",
    "certify_structural",
    "dual_pairs",
    "output_key",
    "read_structural_candidate",
]


#: Coordinate-ascent passes for the dual point of a bare ``w``.
BARE_W_PASSES = 50
#: The passes stop once no multiplier moves by more than this times ``C`` (round-off).
BARE_W_MOVE = 1e-12


def output_key(y: Any) -> Any:
    """A hashable key identifying an output: equal outputs give equal keys.

    Arrays are keyed by dtype, shape and bytes, tuples (e.g. a latent model's ``(y, h)``)
    element by element; other outputs must be hashable themselves.
    """
    if isinstance(y, np.ndarray):
        return (y.dtype.str, y.shape, y.tobytes())
    if isinstance(y, tuple):
        return tuple(output_key(v) for v in y)
    try:
        hash(y)
    except TypeError:
        raise InvalidTypeError(
            f"an output of type {type(y).__name__} is neither a numpy array nor hashable; "
            "structured outputs must be arrays or hashable values."
        ) from None
    return y


@dataclass
class DualPairs:
    r"""A dual point of the full structural SVM: weights :math:`\alpha_{iy}` of distinct pairs.

    Attributes
    ----------
    example : ndarray of int, shape (p,)
    outputs : list
        The output of each pair.
    weight : ndarray of shape (p,)
        :math:`\alpha_{iy}`, summed over the planes that contain the pair.
    plane : ndarray of int, shape (q,)
        For each (plane, member) incidence, the plane's index ...
    pair : ndarray of int, shape (q,)
        ... and the pair it refers to (so plane values are sums over pairs).
    """

    example: np.ndarray
    outputs: list[Any]
    weight: np.ndarray
    plane: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    pair: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))


def dual_pairs(planes: Sequence[CuttingPlane], alpha: np.ndarray, n_samples: int) -> DualPairs:
    r"""Collect plane multipliers into weights of distinct pairs ``(i, y)``.

    :math:`\alpha_{iy} = \sum_k \alpha_k [i \in S_k,\ \hat y_{ki} = y]`. Pairs are kept even with
    weight 0 (their planes' values are needed for the maximum violation).

    Raises
    ------
    InvalidInputError
        If ``alpha`` does not have one entry per plane, or a plane is malformed.
    """
    alpha = np.asarray(alpha, dtype=np.float64).ravel()
    if alpha.shape[0] != len(planes):
        raise InvalidInputError(
            f"alpha has {alpha.shape[0]} entries but there are {len(planes)} cutting planes; "
            "pass one multiplier per plane (the solution's alpha with its info['constraints'])."
        )
    if not np.all(np.isfinite(alpha)):
        raise InvalidInputError("alpha contains NaN or inf.")
    index: dict[tuple[int, Any], int] = {}
    example: list[int] = []
    outputs: list[Any] = []
    weight: list[float] = []
    plane_of: list[int] = []
    pair_of: list[int] = []
    for k, plane in enumerate(planes):
        if not isinstance(plane, CuttingPlane):
            raise InvalidTypeError(
                f"constraint {k} is a {type(plane).__name__}, not a CuttingPlane."
            )
        members = np.asarray(plane.examples)
        if members.shape != (len(plane.outputs),):
            raise InvalidInputError(
                f"cutting plane {k} has {members.shape} examples but {len(plane.outputs)} outputs."
            )
        if members.size and (members.min() < 0 or members.max() >= n_samples):
            raise InvalidInputError(
                f"cutting plane {k} refers to an example outside [0, {n_samples})."
            )
        if np.unique(members).size != members.size:
            raise InvalidInputError(f"cutting plane {k} lists an example twice.")
        for i, y in zip(members.tolist(), plane.outputs, strict=True):
            key = (i, output_key(y))
            p = index.get(key)
            if p is None:
                p = index[key] = len(example)
                example.append(i)
                outputs.append(y)
                weight.append(0.0)
            weight[p] += alpha[k]
            plane_of.append(k)
            pair_of.append(p)
    return DualPairs(
        example=np.asarray(example, dtype=np.intp),
        outputs=outputs,
        weight=np.asarray(weight, dtype=np.float64),
        plane=np.asarray(plane_of, dtype=np.intp),
        pair=np.asarray(pair_of, dtype=np.intp),
    )


def _project_pairs(weight: np.ndarray, example: np.ndarray, n: int, C: float) -> np.ndarray:
    r"""Project pair weights onto :math:`\{\alpha \ge 0,\ \sum_y \alpha_{iy} \le C\ \forall i\}`.

    The set is a product of capped simplices, one per example
    (:func:`~qpsvm.verify.projection.project_capped_simplex` on the padded rows).
    """
    if weight.size == 0:
        return weight.copy()
    order = np.argsort(example, kind="stable")
    counts = np.bincount(example, minlength=n)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.arange(weight.size) - np.repeat(starts, counts)
    V = np.zeros((n, int(counts.max())))
    mask = np.zeros(V.shape, dtype=bool)
    V[example[order], slot] = weight[order]
    mask[example[order], slot] = True
    projected = project_capped_simplex(V, np.full(n, C), mask)
    out = np.empty_like(weight)
    out[order] = projected[example[order], slot]
    return out


def _dual_infeasibility(weight: np.ndarray, example: np.ndarray, n: int, C: float) -> float:
    """Largest violation of ``alpha >= 0`` and of the per-example budgets ``sum_y alpha <= C``."""
    if weight.size == 0:
        return 0.0
    budget = np.bincount(example, weights=np.maximum(weight, 0.0), minlength=n) - C
    return max(0.0, float(np.max(-weight)), float(np.max(budget)))


def read_structural_candidate(
    f: StructuralProblem, candidate: Any = None, *, w: Any = None, b: Any = None, alpha: Any = None
) -> StructuralCandidate:
    """Normalise what ``StructuralSVM.certify`` receives to a :class:`StructuralCandidate`.

    ``candidate`` may be a :class:`~qpsvm.Solution` (its ``alpha`` with
    ``info["constraints"]``), a :class:`StructuralCandidate`, or an array taken as ``w``;
    otherwise the keyword ``w`` (``alpha`` needs planes, so it only comes with a candidate).
    """
    if b is not None:
        f.check_b(b)
    if candidate is None:
        if alpha is not None:
            raise InvalidInputError(
                "alpha alone cannot be certified: its cutting planes are needed. Pass the "
                "Solution, or StructuralCandidate(w=..., alpha=..., planes=...)."
            )
        if w is None:
            raise InvalidInputError("nothing to certify: pass a solution or w.")
        return StructuralCandidate(w=np.asarray(w, dtype=np.float64))
    if w is not None or alpha is not None:
        raise InvalidInputError("pass either a candidate or the keyword w, not both.")
    if isinstance(candidate, StructuralCandidate):
        return candidate
    if isinstance(candidate, Solution):
        planes = candidate.info.get("constraints")
        if candidate.alpha is not None and planes is None:
            raise InvalidInputError(
                "the solution has alpha but no info['constraints']; its multipliers cannot be "
                "matched to cutting planes."
            )
        return StructuralCandidate(
            w=candidate.w,
            alpha=candidate.alpha if planes is not None else None,
            xi=candidate.xi,
            planes=planes,
        )
    if isinstance(candidate, Candidate):
        return StructuralCandidate(w=candidate.w, xi=candidate.xi)
    if isinstance(candidate, np.ndarray | list | tuple):
        return StructuralCandidate(w=np.asarray(candidate, dtype=np.float64))
    raise InvalidTypeError(
        f"cannot certify a {type(candidate).__name__} for a StructuralSVM: pass a qpsvm "
        "Solution, a StructuralCandidate, or the weight vector w."
    )


def certify_structural(
    f: StructuralProblem,
    cand: StructuralCandidate,
    tol: float = DEFAULT_TOL,
    hints: Sequence[StructuralCandidate] = (),
    ceiling: float = math.inf,
) -> Certificate:
    r"""Certify a structural-SVM candidate from the raw data (see the module docstring).

    Primal side: ``w`` (or, without one, :math:`w = \sum \alpha_{iy} a_{iy}` of the dual
    point), the true slacks from the model's inference on every example, and
    :math:`P(w) = \tfrac12\|w\|^2 + C\sum_i \xi_i`.

    Dual side: the candidate's multipliers collected into pairs ``(i, y)`` and projected onto the
    feasible set; the planes recomputed from the stored outputs by ``f.pair_rows``. The dual
    points of ``hints`` (other candidates' multipliers over their planes, e.g. the problem's own
    solution) come next, so that the gap of any ``w`` is tight however the candidate was found.
    For a bare ``w`` the last point puts multipliers :math:`\beta_i \in [0, C]` on the most
    violated output of each example at ``w``, maximised by coordinate ascent: valid, but loose
    unless the optimum needs one output per example (the optimum usually spreads over several).
    The point of highest value is kept; the search stops once the gap is far below ``tol`` or
    no point left could change the verdict given the ``ceiling`` on ``P*``
    (:func:`~qpsvm.verify.certificate.best_dual_point`). ``dual_infeasibility`` is always that
    of the candidate's own multipliers (0 for a bare ``w``).

    ``max_violation`` is the cutting-plane violation: the largest, over the groups of examples the
    planes sum over (single examples for n-slack planes, all of them for 1-slack planes, and
    every example no plane covers), of the true slack of the group minus its working-set slack
    :math:`\max(0, \max_k \sum_{i\in S_k} H_i(\hat y_{ki}; w))`. For a working-set optimum
    ``gap = C * sum`` of these violations.

    Parameters
    ----------
    f : StructuralSVM
    cand : StructuralCandidate
    tol : float
        Relative tolerance of the test.
    hints : sequence of StructuralCandidate, optional
        Further dual points (``alpha`` with its ``planes``) to try.
    ceiling : float, optional
        An upper bound on the optimum ``P*`` (the problem's own solution's primal): the search
        stops at a hint once no point could change the verdict or shrink the gap by more than
        :data:`~qpsvm.verify.certificate.TIGHT`
        (:func:`~qpsvm.verify.certificate.beyond_ceiling`), so that a failing ``w`` costs no
        coordinate ascent of its own.

    Returns
    -------
    Certificate
    """
    tol = check_tol(tol)
    n, C = f.n_samples, f.C
    have_dual = cand.alpha is not None and cand.planes is not None
    pairs, own = side_of(f, cand.planes, cand.alpha) if have_dual else (None, None)
    if cand.w is not None:
        w = f.check_w(cand.w)
    elif own is not None:
        w = own.w_alpha
    else:
        raise InvalidInputError("nothing to certify: the candidate has neither w nor alpha.")
    maxima = f.maximisers(w)
    joint_hat = f.joint_rows(np.arange(n), maxima[0])
    _, rows_hat, c_hat, xi = f.violations(w, maxima, joint_hat)
    primal = 0.5 * fsum(w * w) + C * fsum(xi)

    def sides() -> Iterator[DualSide]:
        if own is not None:
            yield own
        for hint in hints:
            yield side_of(f, hint.planes, hint.alpha)[1]
        if own is None:
            weight = _best_single_output_dual(rows_hat, c_hat, C)
            w_alpha = np.asarray(rows_hat.T @ weight).ravel()
            yield DualSide(np.arange(n), weight, joint_hat, rows_hat, c_hat, w_alpha, 0.0)

    # every search yields a point first (its own or, for a bare w, a hint or the ascent's)
    side, dual, _ = best_dual_point(
        attrgetter("value"), sides(), None, primal, tol, dual=-math.inf, ceiling=ceiling
    )
    weight = side.weight
    rounding = f.rounding(w)
    every = f.every_output(ENUMERATED) if maxima[1] is None and rounding is not None else None
    rigorous = proven(f, rounding, every)
    floor = 0.0
    if rigorous:
        # the rigorous enclosure (qpsvm.verify.rigorous_structural); its rounding floor is its
        # distance from the same points' objectives evaluated in floating point
        primal_float = primal
        primal = structural_primal_upper(f, w, joint_hat, c_hat, maxima[1], rounding, every)
        dual, weight = structural_dual_lower(f, side.example, side.joint, side.c, weight, rounding)
        w_exact = np.asarray(side.rows.T @ weight).ravel()
        dual_float = fsum(weight * side.c) - 0.5 * fsum(w_exact * w_exact)
        floor = evaluation_allowance(primal, dual, primal_float, dual_float)
    values = side.values(w)
    spent = np.bincount(side.example, weights=weight, minlength=n)
    complementarity = max(
        float(np.max(np.abs(weight * (xi[side.example] - values)), initial=0.0)),
        float(np.max(np.abs((C - spent) * xi), initial=0.0)),
    )
    violation = _max_violation(
        cand.planes if have_dual else None,
        pairs,
        None if own is None else (values if own is side else own.values(w)),
        xi,
    )
    return Certificate(
        primal_objective=float(primal),
        dual_objective=float(dual),
        primal_infeasibility=_slack_infeasibility(cand.xi, xi, n),
        dual_infeasibility=0.0 if own is None else own.infeasibility,
        complementarity=complementarity,
        stationarity=float(np.linalg.norm(w - side.w_alpha)),
        tol=tol,
        formulation=type(f).__name__,
        max_violation=violation,
        alpha=weight,
        rigorous=rigorous,
        rounding_floor=floor,
    )


@dataclass(frozen=True)
class DualSide:
    r"""A dual point of the full problem over pairs ``(i, y)``: the weights
    :math:`\alpha_{iy}` (feasible: one capped simplex per example), their examples, joint
    features, plane rows :math:`a_{iy}` and offsets :math:`c_{iy}`, and
    :math:`w_\alpha = \sum \alpha_{iy} a_{iy}`; ``infeasibility`` is how far the weights
    it was projected from were outside the feasible set."""

    example: np.ndarray
    weight: np.ndarray
    joint: Any
    rows: Any
    c: np.ndarray
    w_alpha: np.ndarray
    infeasibility: float

    @classmethod
    def of(
        cls, f: StructuralProblem, pairs: DualPairs, joint: Any, rows: Any, c: np.ndarray
    ) -> DualSide:
        """The pairs' weights projected onto the feasible set, with their planes (``joint``,
        ``rows`` and ``c`` of :func:`side_of`)."""
        n, C = f.n_samples, f.C
        weight = _project_pairs(pairs.weight, pairs.example, n, C)
        w_alpha = np.asarray(rows.T @ weight).ravel()
        infeasibility = _dual_infeasibility(pairs.weight, pairs.example, n, C)
        return cls(pairs.example, weight, joint, rows, c, w_alpha, infeasibility)

    @property
    def value(self) -> float:
        r""":math:`D = \sum \alpha_{iy} c_{iy} - \tfrac12 \|w_\alpha\|^2` in floating
        point."""
        return fsum(self.weight * self.c) - 0.5 * fsum(self.w_alpha * self.w_alpha)

    def values(self, w: np.ndarray) -> np.ndarray:
        r""":math:`H_i(y; w) = c_{iy} - a_{iy} \cdot w` of every pair."""
        return self.c - np.asarray(self.rows @ w).ravel()


#: How many dual points' pairs :func:`side_of` keeps per problem (a solution's and a hint's).
PAIR_CACHE_SIZE = 4


def side_of(
    f: StructuralProblem, planes: Sequence[CuttingPlane], alpha: Any
) -> tuple[DualPairs, DualSide]:
    r"""The pairs of multipliers ``alpha`` over ``planes`` (:func:`dual_pairs`) and their dual
    point (:meth:`DualSide.of`), with the pairs, joint features, rows :math:`a_{iy}` and
    offsets :math:`c_{iy}` kept on ``f`` (``f._pair_cache``) for the same ``planes`` (the same
    list of the same plane objects) and the same ``alpha`` (bitwise). None of them depends on
    ``C``, so the problem's copies share them; the projection onto the feasible set (which
    does) is recomputed. A second certificate of a solution, or one more with the problem's
    own solution as hint, then costs no joint features (chains of 700 x 128 x 26: 0.7 of
    1.3 s)."""
    alpha_array = np.asarray(alpha, dtype=np.float64)
    key = (id(planes), alpha_array.tobytes())
    cache = f._pair_cache
    hit = cache.get(key)
    if hit is not None and hit[0] is planes and len(hit[1]) == len(planes):
        if all(a is b for a, b in zip(hit[1], planes, strict=True)):
            pairs, joint, rows, c = hit[2]
            return pairs, DualSide.of(f, pairs, joint, rows, c)
    pairs = dual_pairs(planes, alpha_array, f.n_samples)
    joint = f.joint_rows(pairs.example, pairs.outputs)
    rows, c = f.pair_rows(pairs.example, pairs.outputs, joint)
    if len(cache) >= PAIR_CACHE_SIZE:
        del cache[next(iter(cache))]
    cache[key] = (planes, tuple(planes), (pairs, joint, rows, c))
    return pairs, DualSide.of(f, pairs, joint, rows, c)


def _best_single_output_dual(
    rows: Any, c: np.ndarray, C: float, passes: int = BARE_W_PASSES
) -> np.ndarray:
    r"""Multipliers :math:`\beta_i \in [0, C]` of the most violated outputs at a bare ``w``.

    Coordinate ascent on :math:`\sum_i \beta_i c_i - \tfrac12\|\sum_i \beta_i a_i\|^2`
    (the dual restricted to one output per example; every iterate is feasible), with exact
    steps :math:`\beta_i \leftarrow \mathrm{clip}_{[0, C]}(\beta_i + (c_i - a_i\cdot v) /
    \|a_i\|^2)`, :math:`v = \sum_i \beta_i a_i`, until a pass changes nothing.
    """
    rows = rows.tocsr()
    sq = np.asarray(rows.multiply(rows).sum(axis=1)).ravel()
    beta = np.zeros(c.shape[0])
    v = np.zeros(rows.shape[1])
    active = np.flatnonzero(sq > 0).tolist()
    for _ in range(passes):
        moved = 0.0
        for i in active:
            cols = rows.indices[rows.indptr[i] : rows.indptr[i + 1]]
            vals = rows.data[rows.indptr[i] : rows.indptr[i + 1]]
            new = min(C, max(0.0, beta[i] + (c[i] - vals @ v[cols]) / sq[i]))
            if new != beta[i]:
                v[cols] += (new - beta[i]) * vals
                moved = max(moved, abs(new - beta[i]))
                beta[i] = new
        if moved <= BARE_W_MOVE * C:
            break
    return beta


def _slack_infeasibility(claimed: Any, true: np.ndarray, n: int) -> float:
    """How far the candidate's own slacks (if any) fall short of the true slacks."""
    if claimed is None:
        return 0.0
    claimed = np.asarray(claimed, dtype=np.float64).ravel()
    if claimed.shape != (n,):
        raise InvalidInputError(f"xi must have shape ({n},); got {claimed.shape}.")
    return max(0.0, float(np.max(true - claimed)), float(np.max(-claimed)))


def _max_violation(
    planes: Sequence[CuttingPlane] | None,
    pairs: DualPairs | None,
    values: np.ndarray | None,
    xi: np.ndarray,
) -> float:
    """The largest cutting-plane violation over the groups of examples (see
    :func:`certify_structural`)."""
    covered = np.zeros(xi.shape[0], dtype=bool)
    worst = 0.0
    if planes:
        plane_value = np.bincount(pairs.plane, weights=values[pairs.pair], minlength=len(planes))
        groups: dict[bytes, list[int]] = {}
        for k, plane in enumerate(planes):
            groups.setdefault(np.sort(plane.examples).tobytes(), []).append(k)
        for ks in groups.values():
            members = planes[ks[0]].examples
            covered[members] = True
            slack = max(0.0, float(np.max(plane_value[ks])))
            worst = max(worst, fsum(xi[members]) - slack)
    return max(worst, float(np.max(xi[~covered], initial=0.0)))

r"""The polynomial kernel's explicit feature map: its dual solved as a linear SVM.

For ``coef0 >= 0`` the kernel ``k(x, x') = (gamma x.x' + coef0)^p`` is the inner product of

.. math::

    \Phi_m(x) = \sqrt{\tbinom{p}{m_0, m_1, \dots, m_d}\, coef0^{m_0}\, gamma^{p - m_0}}
    \; \prod_{k=1}^d x_k^{m_k}, \qquad m_0 + m_1 + \dots + m_d = p,

by the multinomial theorem applied to ``z = (sqrt(coef0), sqrt(gamma) x)``: ``z.z' = gamma x.x'
+ coef0`` and ``(z.z')^p = sum_m multinomial(p; m) prod_k (z_k z'_k)^{m_k}``. The map has
``D = C(d + p, p)`` coordinates (1771 for ``d = 20``, ``p = 3``). The soft-margin dual with this
kernel is then the dual of the linear SVM on the ``n x D`` rows ``Phi(x_i)``: the same
multipliers, the same intercept. Where ``n`` is large against ``D`` the linear problem's dual
coordinate descent (``method="dcd"``, with its exact finish on the free set) converges in a few
hundred passes, where SMO on the kernel's free block converges at a slow linear rate (measured:
1.86e6 steps at ``n = 4000``, ``C = 100``). Its multipliers are only a start: the kernel
problem's own certificate, on rigorous kernel values, decides (so the map's rounding cannot make
a wrong answer pass).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import scipy.sparse as sp

from qpsvm.contract import BinaryProblem
from qpsvm.solution import Candidate

__all__ = ["feature_dimension", "feature_map_pays", "feature_map_point", "poly_features"]

#: The map is used where ``n >= MIN_ASPECT * D`` (measured in docs/performance.md: at
#: ``n = 2000``, ``D = 1771`` the linear solve costs more than SMO; at ``n = 8000`` it pays).
MIN_ASPECT = 4.0

#: At most this many entries in ``Phi`` (8e7: 640 MB of float64).
MAX_ENTRIES = 80_000_000


def feature_dimension(d: int, p: int) -> int:
    """``C(d + p, p)``: the number of monomials of degree at most ``p`` in ``d`` variables."""
    return math.comb(d + p, p)


def poly_features(X: np.ndarray, gamma: float, coef0: float, p: int) -> np.ndarray:
    """The rows ``Phi(x_i)`` of the module docstring (``coef0 >= 0``): ``Phi(X) Phi(X')^T =
    (gamma X X'^T + coef0)^p`` up to rounding."""
    n, d = X.shape
    z = np.empty((n, d + 1))
    z[:, 0] = math.sqrt(coef0)
    z[:, 1:] = math.sqrt(gamma) * X
    combos = list(itertools.combinations_with_replacement(range(d + 1), p))
    Phi = np.empty((n, len(combos)))
    for j, combo in enumerate(combos):
        coefficient = math.factorial(p)
        for count in np.bincount(combo, minlength=d + 1):
            coefficient //= math.factorial(int(count))
        column = Phi[:, j]
        column[:] = math.sqrt(coefficient)
        for k in combo:
            column *= z[:, k]
    return Phi


def feature_map_pays(f: BinaryProblem) -> bool:
    """Whether ``f`` (a kernel dual) is solved on the explicit map: a poly kernel with
    ``coef0 >= 0`` on dense data, ``n >= MIN_ASPECT * D`` and ``n D <= MAX_ENTRIES``."""
    kernel = f.kernel
    if kernel.name != "poly" or kernel.coef0 < 0.0 or sp.issparse(f.X):
        return False
    D = feature_dimension(f.n_features, kernel.degree)
    n = f.n_samples
    return n >= MIN_ASPECT * D and n * D <= MAX_ENTRIES


def feature_map_point(f: BinaryProblem) -> Candidate:
    """The multipliers and intercept of the linear SVM on ``Phi(X)`` (same ``C``, weights,
    margins and intercept) by dual coordinate descent with its exact finish on the free set
    (:func:`~qpsvm.solvers.coordinate.ascent_point`, the intercept the best for ``w``): a point
    of the kernel dual ``f`` to be certified by ``f``'s own certificate. The linear problem's
    certificate is not run: it would prove the same gap on rounded map values, before the
    kernel certificate proves it again on rigorous kernel values (measured: 1.3-1.5 s of a
    28-37 s solve at ``n = 8000``, ``C = 1``, docs/performance.md).

    The ascent solves the linear problem on the rounded map, whose Gram matrix differs from
    the kernel's by about ``u |K|``: at large ``C`` the free multipliers' error this makes
    weighs ``C`` per free sample in the kernel's gap (``n = 8000``, ``C = 100``: relative gap
    7.9e-9 at a linear gap of 1.6e-12). The map's free and upper sets are kept and the free
    multipliers solved from the kernel's KKT equations
    (:func:`~qpsvm.support_sets.kkt_on_sets`; there 0.09 s, relative gap 6.0e-11)."""
    from qpsvm.formulations.binary import SoftMarginDual
    from qpsvm.solvers.coordinate import ascent_point, binary_problem
    from qpsvm.support_sets import kkt_on_sets

    kernel = f.kernel
    Phi = poly_features(
        np.asarray(f.X, dtype=np.float64), kernel.gamma, kernel.coef0, kernel.degree
    )
    linear = SoftMarginDual(
        Phi,
        f.y,
        C=f.C,
        sample_weight=f.sample_weight,
        margin=f.margin,
        fit_intercept=f.fit_intercept,
    )
    cand, _ = ascent_point(binary_problem(linear))
    alpha = np.clip(cand.alpha, 0.0, f.upper)
    free = np.flatnonzero((alpha > 0.0) & (alpha < f.upper))
    if free.size == 0:
        b = cand.b if cand.b is not None else linear.optimal_intercept(linear.scores(w=cand.w))
        return Candidate(w=None, b=float(b), alpha=alpha)
    # the map's sets, the free multipliers from the kernel's own KKT equations
    alpha, b = kkt_on_sets(f, free, alpha >= f.upper)
    return Candidate(w=None, b=float(b), alpha=alpha)

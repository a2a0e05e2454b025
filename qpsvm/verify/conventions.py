"""Sign conventions of every dual variable in qpsvm — written down once, here.

Binary soft margin
    (:class:`~qpsvm.SoftMarginPrimal`, :class:`~qpsvm.SoftMarginDual`,
    :class:`~qpsvm.HardMargin`.) Primal ``P(w, b) = 1/2 ||w||^2 + C sum_i s_i xi_i`` subject to
    ``y_i (w.x_i + b) >= m_i - xi_i`` and ``xi_i >= 0``. The multiplier of the margin constraint is
    ``alpha_i >= 0`` (the CVXPY dual value of the ``>=`` constraint, which is non-negative), the
    multiplier of ``xi_i >= 0`` is ``C s_i - alpha_i >= 0``. The Lagrangian dual is::

        D(alpha) = sum_i m_i alpha_i - 1/2 || sum_i alpha_i y_i x_i ||^2,
        0 <= alpha_i <= C s_i,  sum_i alpha_i y_i = 0  (the last only with an intercept),

    with ``w = sum_i alpha_i y_i x_i`` at any primal-dual pair (stationarity). Weak duality
    ``D(alpha) <= P* <= P(w, b)`` holds for every feasible pair, so ``gap = P - D >= P - P*``.
    The hard margin is the same with ``C s_i = +inf``. scikit-learn's ``SVC.dual_coef_`` stores
    ``alpha_i y_i`` with ``y_i = +1`` for ``classes_[1]``.

Distance bound
    ``P`` is 1-strongly convex in ``w``, so ``1/2 ||w - w*||^2 <= P(w, b) - P* <= gap`` and
    ``||w - w*|| <= sqrt(2 gap)``.

Relative gap
    ``gap / max(1, |P|)``. A point is *exact* when it passes at ``1e-9``.

Ranking and multiclass
    :class:`~qpsvm.RankingSVM` is the binary case on pair differences (``y_p = +1``, no
    intercept): one ``alpha_p in [0, C s_p]`` per pair, ``w = sum_p alpha_p (x_i - x_j)``; see
    :mod:`qpsvm.verify.ranking`. :class:`~qpsvm.MulticlassSVM` has one ``alpha_ic >= 0`` per
    example and wrong class (``sum_c alpha_ic <= C s_i`` for Crammer-Singer, ``alpha_ic <= C s_i``
    for Weston-Watkins) and ``w_c = sum_i (delta_{c y_i} sum_k alpha_ik - alpha_ic) x_i``; see
    :mod:`qpsvm.verify.multiclass`.
"""

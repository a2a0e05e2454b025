r"""Certificates for the ranking SVM — the binary certificate on pair differences.

The ranking SVM (:class:`~qpsvm.RankingSVM`) is the binary soft-margin SVM without intercept on
the differences :math:`z_p = x_i - x_j`, all labelled ``+1``. Its dual, in the sign convention of
the binary case (:mod:`qpsvm.verify.conventions`), has one variable per pair:

.. math::

    D(\alpha) = \sum_p \alpha_p - \tfrac12 \Big\|\sum_p \alpha_p (x_i - x_j)\Big\|^2,
    \qquad 0 \le \alpha_p \le C s_p,

with no balance constraint (no intercept) and stationarity :math:`w = X^T D^T \alpha`. The
multiplier :math:`\alpha_p` is the CVXPY dual value of the pair's ``margin`` constraint
``score_i - score_j >= 1 - xi_p``; the dual of ``slack`` is :math:`C s_p - \alpha_p`.

The formulation's data matrix is the pair-difference operator, so the binary certifier applies
unchanged: products with it never form the differences, and the dual point built from a bare
``w`` forms only the rows of the pairs on the margin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qpsvm.solution import Candidate
from qpsvm.verify.binary import certify_binary
from qpsvm.verify.certificate import DEFAULT_TOL, Certificate

__all__ = ["certify_ranking"]


def certify_ranking(
    f: Any, cand: Candidate, tol: float = DEFAULT_TOL, hints: Sequence[np.ndarray] = ()
) -> Certificate:
    """Certify a candidate ``w`` (intercept 0) and/or pair duals ``alpha`` of a ranking SVM.

    Parameters
    ----------
    f : RankingSVM
    cand : Candidate
        ``w`` of shape ``(n_features,)`` and/or ``alpha`` of shape ``(n_pairs,)``.
    tol : float
        Relative tolerance of the test.
    hints : sequence of ndarray, optional
        More dual points to try (see :func:`~qpsvm.verify.binary.certify_binary`).
    """
    return certify_binary(f, cand, tol, pairs=(f.items, f.pairs), hints=hints)

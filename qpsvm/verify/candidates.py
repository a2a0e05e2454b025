"""Reading what users pass to ``certify``: solutions, candidates, or arrays.

Fitted estimators of other tools are read at the edge (:mod:`qpsvm.interop.candidates`) before
they reach the verifier, which sees only arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qpsvm.contract import Problem
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.solution import Candidate, Solution

__all__ = ["Candidate", "read_candidate"]


def read_candidate(
    f: Problem, candidate: Any = None, *, w: Any = None, b: Any = None, alpha: Any = None
) -> Candidate:
    """Normalise a candidate to a :class:`Candidate`.

    ``candidate`` may be a :class:`~qpsvm.Solution` (its ``alpha`` and ``xi`` as given, not
    formed where they are :class:`~qpsvm.solution.FormedOnRead`), a :class:`Candidate` or an
    array taken as ``w``. Keyword arrays ``w``, ``b``, ``alpha`` are used when
    no ``candidate`` is given.
    """
    if candidate is None:
        if w is None and alpha is None:
            raise InvalidInputError("nothing to certify: pass a solution, w (and b), or alpha.")
        return Candidate(
            w=None if w is None else np.asarray(w, dtype=np.float64),
            b=b,
            alpha=None if alpha is None else np.asarray(alpha, dtype=np.float64),
        )
    if w is not None or alpha is not None:
        raise InvalidInputError("pass either a candidate or w/b/alpha keywords, not both.")
    if isinstance(candidate, Candidate):
        return candidate
    if isinstance(candidate, Solution):
        # a field still to be formed on read is not formed for the certificate: the certifier's
        # own dual points settle w (the 1-slack ranking solution's by the sweeps, no pair listed)
        alpha, xi = candidate.given("alpha"), candidate.given("xi")
        return Candidate(w=candidate.w, b=candidate.b, alpha=alpha, xi=xi)
    if isinstance(candidate, np.ndarray | list | tuple):
        return Candidate(w=np.asarray(candidate, dtype=np.float64), b=b)
    raise InvalidTypeError(
        f"cannot certify a {type(candidate).__name__}: pass a qpsvm Solution, a fitted "
        "scikit-learn SVC / LinearSVC / SGDClassifier, or arrays w, b or alpha."
    )

"""The certified end of an exact solve (:mod:`qpsvm.solvers.finish`)."""

from __future__ import annotations

import numpy as np
import pytest

import qpsvm
from qpsvm.exceptions import UncertifiedSolutionError
from qpsvm.solution import Candidate
from qpsvm.solvers.finish import finish
from qpsvm.verify import binary as binary_verify


def test_a_failing_point_is_certified_once(monkeypatch):
    # finish(eager=False) certifies the point, and where it fails hands that certificate to
    # best_certified with the refinements: the point is not certified a second time (here
    # with no refinement to try, the failing point is the best and the error reports it)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=30) > 0, 1, -1)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    sol = f.solve()
    calls = []
    certify = binary_verify.certify_binary
    monkeypatch.setattr(
        binary_verify, "certify_binary", lambda *a, **k: calls.append(1) or certify(*a, **k)
    )
    f.refinement = ""
    cand = Candidate(w=sol.w + 0.1, b=sol.b)
    with pytest.raises(UncertifiedSolutionError, match="certified only to a relative gap"):
        finish(f, cand, 1e-9, what="the point", advice="", eager=False)
    assert len(calls) == 1

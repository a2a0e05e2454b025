"""CVXPY is imported on first use: ``import qpsvm`` and the solves that state their problem as
matrices never execute it (it was about half of ``import qpsvm``), and the CVXPY path still works
when it is needed. So is scipy.optimize (a tenth of a second of ``import qpsvm``), which only
some certificates' dual points and a few models use."""

from __future__ import annotations

import subprocess
import sys

import cvxpy as cp

from qpsvm.solvers import backends

SCRIPT = """
import sys
import numpy as np
import qpsvm

def executed():
    return "cvxpy.atoms" in sys.modules  # cvxpy's package body imports its atoms

def optimize():
    return "scipy.optimize._minimize" in sys.modules  # scipy.optimize's body imports it

rng = np.random.default_rng(0)
X = rng.normal(size=(60, 3))
y = np.where(X[:, 0] + 0.3 * rng.normal(size=60) > 0, 1, -1)
print(executed(), optimize())
print(qpsvm.SoftMarginPrimal(X, y).solve().certificate.passed, executed())
print(qpsvm.SoftMarginDual(X, y, kernel="rbf").solve().certificate.passed, executed())
relevance = np.clip(np.round(X @ [1.0, -0.5, 0.3] + rng.normal(size=60)), -1, 1)
for f in (
    qpsvm.SoftMarginPrimal(X, y),
    qpsvm.RankingSVM(X, y=relevance, groups=np.repeat(np.arange(6), 10), C=0.5),
):
    sol = f.solve(method="working_set")
    print(sol.certificate.passed and sol.info["rounds"] > 0, executed())
classes = np.argmax(X + 0.5 * rng.normal(size=(60, 3)), axis=1)
for variant in ("crammer_singer", "weston_watkins"):
    f = qpsvm.MulticlassSVM(X, classes, C=0.5, variant=variant, intercept="free")
    sol = f.solve(method="working_set")
    print(sol.certificate.passed and sol.info["rounds"] > 0, executed())
print(qpsvm.HardMargin(X + 5.0 * y[:, None], y).solve().certificate.passed, executed())
"""


def test_cvxpy_runs_only_when_a_cvxpy_problem_is_built():
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[0] == "False False"  # import qpsvm
    assert out[1] == "True False"  # the primal's direct Clarabel solve
    assert out[2] == "True False"  # the kernel working set's certified SMO start
    # the restricted QPs of the primal's and the ranking SVM's working sets, as matrices
    assert out[3] == out[4] == "True False"
    # the multiclass working sets' restricted QPs (Crammer-Singer, Weston-Watkins), as matrices
    assert out[5] == out[6] == "True False"
    assert out[7] == "True True"  # the hard margin's CVXPY problem


def test_status_values_are_cvxpys():
    assert backends.INACCURATE == {cp.OPTIMAL_INACCURATE, cp.USER_LIMIT}
    assert backends.INFEASIBLE == {
        cp.INFEASIBLE,
        cp.INFEASIBLE_INACCURATE,
        cp.UNBOUNDED,
        cp.UNBOUNDED_INACCURATE,
    }

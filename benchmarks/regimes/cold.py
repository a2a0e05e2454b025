"""The cold start: a fresh process with an empty compile cache, import to certified answer.

Each call runs a new Python process with ``QPSVM_CACHE_DIR`` pointing at a new empty directory
(so every numba kernel the call needs is compiled, as after an install), imports qpsvm, solves
an RBF problem (n=500) and a linear one and certifies them. The anchor is the same in a fresh
process with scikit-learn (import, ``SVC`` and ``LinearSVC`` fits). The issue's target: the cold
call costs at most ~2 s beyond the warm one.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass

from regimes._grid import Point

DATA = """
import numpy as np
rng = np.random.default_rng(0)
X = rng.normal(size=(500, 20)); y = np.where(X[:, 0] + 0.3 * rng.normal(size=500) > 0, 1, -1)
"""

OURS = (
    DATA
    + """
import qpsvm
f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf", gamma=0.05)
g = qpsvm.SoftMarginPrimal(X, y, C=1.0)
assert f.solve().certificate.passed and g.solve().certificate.passed
"""
)

ANCHOR = (
    DATA
    + """
from sklearn.svm import SVC, LinearSVC
SVC(C=1.0, gamma=0.05).fit(X, y)
LinearSVC(C=1.0, loss="hinge", dual=True, max_iter=100000).fit(X, y)
"""
)


@dataclass(frozen=True)
class Passed:
    """The certificate stand-in of a subprocess that exited 0 (its script asserts it)."""

    passed: bool


def run_cold(script: str) -> Passed:
    """Run ``script`` in a fresh interpreter with an empty qpsvm compile cache."""
    with tempfile.TemporaryDirectory(prefix="qpsvm-cold-") as cache:
        env = {"QPSVM_CACHE_DIR": cache, "PATH": "/usr/bin:/bin", "HOME": cache}
        subprocess.run([sys.executable, "-c", script], check=True, env=env)
    return Passed(True)


def points(scale: str) -> list[Point]:
    return [
        Point(
            "cold",
            "import + compile + RBF n=500 + linear n=500, certified",
            "sklearn",
            lambda: run_cold(OURS),
            lambda: run_cold(ANCHOR),
            repeat=1 if scale == "quick" else 3,
        )
    ]

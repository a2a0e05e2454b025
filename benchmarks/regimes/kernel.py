"""Kernel SVMs (the dual with rbf, poly and linear kernels) against libsvm (scikit-learn's SVC).

Synthetic two-class data (20 features, 10 informative, 10% of the labels flipped), SVC at its
defaults (``tol=1e-3``, 200 MB cache, shrinking) with the same ``C``, kernel and ``gamma``.
qpsvm solves ``SoftMarginDual`` by its default method to a certificate passed at ``1e-9``; each
call builds the formulation afresh, so no kernel row computed by an earlier call is reused.
The grid varies ``n`` (500 to 20000), ``gamma`` and ``C`` over two decades each (few to most
points free support vectors) and the kernel.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.datasets import make_classification
from sklearn.svm import SVC

import qpsvm
from regimes._grid import Point, Tightened, certifies, libsvm_at


def data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two noisy classes in 20 dimensions."""
    return make_classification(
        n_samples=n, n_features=20, n_informative=10, flip_y=0.1, random_state=seed
    )


def point(n: int, kernel: str, C: float, gamma: float = 0.05, degree: int = 3) -> Point:
    """One problem: qpsvm's certified dual against SVC with the same parameters."""
    X, y = data(n)
    params: dict[str, Any] = {"kernel": kernel, "C": C}
    name = f"{kernel} n={n} C={C:g}"
    if kernel != "linear":
        params["gamma"] = gamma
        name += f" gamma={gamma:g}"
    if kernel == "poly":
        params.update(degree=degree, coef0=1.0)
        name += f" degree={degree}"

    def build() -> qpsvm.SoftMarginDual:
        return qpsvm.SoftMarginDual(X, y, **params)

    def ours() -> Any:
        return build().solve()

    def anchor() -> Any:
        return SVC(**params).fit(X, y)

    repeat = 3 if n <= 2000 else 1
    tightened = Tightened(libsvm_at(X, y, **params), certifies(build))
    return Point("kernel", name, "libsvm", ours, anchor, repeat, build, tightened)


def points(scale: str) -> list[Point]:
    """The quick grid (a few seconds a point) or the full one (up to n = 20000)."""
    if scale == "quick":
        return [
            point(500, "rbf", 1.0),
            point(2000, "rbf", 1.0),
            point(2000, "rbf", 1.0, gamma=0.5),
            point(2000, "rbf", 100.0),
            point(2000, "poly", 1.0),
            point(2000, "linear", 1.0),
        ]
    grid = [point(n, "rbf", 1.0) for n in (500, 2000, 8000, 20000)]
    grid += [
        point(2000, "rbf", C, gamma=gamma)
        for gamma in (0.005, 0.05, 0.5)
        for C in (1.0, 10.0, 100.0)
        if (gamma, C) != (0.05, 1.0)
    ]
    grid += [point(8000, "rbf", C, gamma=gamma) for gamma in (0.005, 0.5) for C in (1.0, 100.0)]
    grid += [point(n, "poly", C) for n in (2000, 8000) for C in (1.0, 100.0)]
    grid += [point(n, "linear", C) for n in (2000, 8000) for C in (1.0, 100.0)]
    return grid

"""Multiclass SVMs (Crammer-Singer and Weston-Watkins) against liblinear's Crammer-Singer.

liblinear's ``-s 4`` (scikit-learn's ``LinearSVC(multi_class="crammer_singer")``, at its
defaults, ``fit_intercept=False``) minimises the same ``1/2 ||W||_F^2 + C sum_i xi_i`` as
qpsvm's ``MulticlassSVM(variant="crammer_singer")``; it is the specialised solver for both
variants (liblinear has no Weston-Watkins solver, so that point times the nearest problem it
solves). qpsvm solves by its default method to a certificate passed at ``1e-9``. Data: the
digits (1797 x 64, 10 classes, pixels scaled to ``[0, 1]``) and overlapping Gaussian classes
(``d = 50``, 10 classes) from ``n = 1e3`` to ``1e5``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

import qpsvm
from regimes._grid import Point, Tightened, certifies, liblinear_at

#: Sizes of the generated data at each scale.
SIZES = {"quick": [10_000], "full": [1_000, 10_000, 100_000]}
#: Variants at each scale.
VARIANTS = ("crammer_singer", "weston_watkins")


def gaussian(n: int, d: int = 50, k: int = 10, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Overlapping Gaussian classes around random centres (``k`` classes in ``d`` dimensions)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = rng.normal(size=(n, d)) + 0.6 * rng.normal(size=(k, d))[y]
    return X, y


def digits() -> tuple[np.ndarray, np.ndarray]:
    """The digits, pixels scaled to ``[0, 1]``."""
    X, y = load_digits(return_X_y=True)
    return X / 16.0, y


def point(name: str, X: np.ndarray, y: np.ndarray, variant: str, C: float = 1.0) -> Point:
    """qpsvm's certified multiclass SVM against liblinear's Crammer-Singer on the same data."""

    def build() -> qpsvm.MulticlassSVM:
        return qpsvm.MulticlassSVM(X, y, C=C, variant=variant)

    def ours() -> Any:
        return build().solve()

    def anchor() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = LinearSVC(multi_class="crammer_singer", fit_intercept=False, C=C)
            return model.fit(X, y)

    short = "cs" if variant == "crammer_singer" else "ww"
    repeat = 3 if len(y) <= 10_000 else 1
    name = f"{short} {name} C={C:g}"
    # liblinear's Crammer-Singer solves qpsvm's problem only for that variant
    tightened = (
        Tightened(
            liblinear_at(X, y, multi_class="crammer_singer", fit_intercept=False, C=C),
            certifies(build),
        )
        if variant == "crammer_singer"
        else None
    )
    return Point("multiclass", name, "liblinear", ours, anchor, repeat, build, tightened)


def points(scale: str) -> list[Point]:
    """Digits and the generated classes at each size, both variants."""
    data = [("digits", *digits())]
    data += [(f"n={n} d=50 k=10", *gaussian(n)) for n in SIZES[scale]]
    return [point(name, X, y, variant) for name, X, y in data for variant in VARIANTS]

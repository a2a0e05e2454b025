"""Shared fixtures: small real and synthetic data sets."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

matplotlib.use("Agg")


@pytest.fixture(scope="session")
def cancer() -> tuple[np.ndarray, np.ndarray]:
    """Breast cancer (569 x 30), standardised: a real, non-separable binary problem."""
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="session")
def blobs() -> tuple[np.ndarray, np.ndarray]:
    """Two separable Gaussian blobs in 2-D (60 points), labels 'a' / 'b'."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-2.0, 0.6, (30, 2)), rng.normal(2.0, 0.6, (30, 2))])
    y = np.array(["a"] * 30 + ["b"] * 30)
    return X, y


def random_problem(seed: int, n: int = 40, d: int = 5, shift: float = 0.5):
    """Overlapping Gaussian classes: a generic non-separable problem."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1, 1)
    X = rng.normal(size=(n, d)) + shift * y[:, None]
    return X, y

"""Data sets bundled with scikit-learn, prepared for qpsvm's examples, demo and tests."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qpsvm.datasets.chains import ChainDataset, make_chains

__all__ = ["ChainDataset", "Dataset", "load_cancer", "load_iris_binary", "make_chains"]


@dataclass
class Dataset:
    """Features, labels and a description."""

    X: np.ndarray
    y: np.ndarray
    description: str


def _standardize(X: np.ndarray) -> np.ndarray:
    std = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)


def load_cancer(standardize: bool = True) -> Dataset:
    """Wisconsin breast cancer (569 x 30): malignant (0) vs benign (1), not separable at C=1."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return Dataset(
        _standardize(X) if standardize else X,
        y,
        "breast cancer, 569 samples x 30 features, standardised",
    )


def load_iris_binary() -> Dataset:
    """Iris setosa vs versicolor on sepal length and width (100 x 2): linearly separable."""
    from sklearn.datasets import load_iris

    data = load_iris()
    keep = data.target < 2
    names = np.asarray(data.target_names)[data.target[keep]]
    return Dataset(
        data.data[keep][:, :2],
        names,
        "iris setosa vs versicolor, 100 samples x 2 sepal features (separable)",
    )

r"""Data recipes: every suite instance regenerated, bit for bit, from a small JSON dict.

A recipe names its data (``data``: a data set bundled with scikit-learn or a generator with its
seed), how the data are prepared and which formulation is built on them (``family``, ``C`` and
the family's options). Prepared data are exact on a dyadic grid: features are standardised and
rounded to multiples of :data:`GRID` (``2**-16``), so every number is a short binary fraction,
the exact rational oracle stays fast, and a last-bit difference of a platform's mean or standard
deviation almost never changes the data (the stored ``data_sha256`` of each instance detects it
when it does). Badly scaled data multiply columns by powers of two, which is exact.

Data sources (``data["source"]``):

``breast_cancer``, ``iris``, ``wine``, ``digits``, ``diabetes``
    scikit-learn's bundled sets (``diabetes``: a regression target, standardised); ``rows``
    samples drawn without replacement with ``seed``,
    the first ``features`` columns (all by default); ``classes`` keeps and orders labels
    (two for the binary families).
``blobs``
    two (or ``classes``) Gaussian clouds ``separation`` apart in ``features`` dimensions, unit
    noise: ``separation = 8`` separates 300 rows in 12 dimensions, 2000 rows in 30 need 12
    (measured: 8 overlap there, 10 separate barely); small values overlap.
``duplicates``
    ``blobs`` where a fraction ``duplicates`` of the points reappear with the opposite label.
``ranking``
    ``queries`` groups of ``rows`` items each, relevance ``0..levels-1`` from a hidden linear
    score plus noise ``noise``.
``chains``
    :func:`qpsvm.datasets.make_chains` with ``rows`` sequences.

Preparations (``data["scale"]``): ``"standard"`` (default: zero mean, unit variance, on the
grid) or ``"bad"`` (standardised, then column ``j`` multiplied by ``2**e_j`` with ``e_j``
spread evenly over ``[-10, 10]``).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from qpsvm.exceptions import InvalidInputError

__all__ = ["FAMILIES", "GRID", "build", "data_hash", "make_data"]

#: Prepared features are multiples of this power of two.
GRID = 2.0**-16

#: family -> what it builds (the formulation class and its fixed options).
FAMILIES: dict[str, str] = {
    "binary": "SoftMarginPrimal, free intercept",
    "binary_no_intercept": "SoftMarginPrimal without intercept",
    "weighted": "SoftMarginPrimal with slack weights s_i",
    "hard_margin": "HardMargin",
    "kernel_linear": "SoftMarginDual, linear kernel",
    "kernel_poly": "SoftMarginDual, polynomial kernel",
    "kernel_rbf": "SoftMarginDual, RBF kernel",
    "ranking": "RankingSVM",
    "crammer_singer": "MulticlassSVM(variant='crammer_singer')",
    "weston_watkins": "MulticlassSVM(variant='weston_watkins')",
    "chain": "StructuralSVM over a ChainModel (margin rescaling)",
    "squared_hinge": "SoftMarginPrimal(loss='squared_hinge'), free intercept",
    "regularized_intercept": "SoftMarginPrimal(intercept='regularized'): LIBLINEAR -s 3 -B 1",
    "squared_hinge_regularized": (
        "SoftMarginPrimal(loss='squared_hinge', intercept='regularized'): LinearSVC()"
    ),
    "l1_squared_hinge": (
        "SoftMarginPrimal(penalty='l1', loss='squared_hinge', intercept='regularized'): "
        "LinearSVC(penalty='l1', dual=False)"
    ),
    "svr": "SupportVectorRegression(epsilon), free intercept",
}

#: composed families: (loss, penalty, intercept) of SoftMarginPrimal
_COMPOSED = {
    "squared_hinge": ("squared_hinge", "l2", "free"),
    "regularized_intercept": ("hinge", "l2", "regularized"),
    "squared_hinge_regularized": ("squared_hinge", "l2", "regularized"),
    "l1_squared_hinge": ("squared_hinge", "l1", "regularized"),
}

_SKLEARN = {
    "breast_cancer": "load_breast_cancer",
    "iris": "load_iris",
    "wine": "load_wine",
    "digits": "load_digits",
    "diabetes": "load_diabetes",
}

#: sources whose ``y`` is a regression target (standardised onto the grid like the features)
_REGRESSION = ("diabetes",)


_GENERATED = ("blobs", "duplicates", "ranking", "chains")


def _on_grid(X: np.ndarray) -> np.ndarray:
    return np.round(X / GRID) * GRID


def _standardize(X: np.ndarray) -> np.ndarray:
    std = X.std(axis=0)
    return _on_grid((X - X.mean(axis=0)) / np.where(std > 0, std, 1.0))


def _prepare(X: np.ndarray, scale: str) -> np.ndarray:
    X = _standardize(np.asarray(X, dtype=np.float64))
    if scale == "bad":
        exponents = np.round(np.linspace(-10, 10, X.shape[1])).astype(int)
        X = X * np.ldexp(1.0, exponents)
    elif scale != "standard":
        raise InvalidInputError(f"unknown scale {scale!r}; use 'standard' or 'bad'.")
    return X


def _sklearn(data: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    import sklearn.datasets

    X, y = getattr(sklearn.datasets, _SKLEARN[data["source"]])(return_X_y=True)
    classes = data.get("classes")
    if classes is not None:
        keep = np.isin(y, classes)
        X, y = X[keep], y[keep]
    rng = np.random.default_rng(data.get("seed", 0))
    rows = data.get("rows")
    if rows is not None and rows < len(y):
        pick = np.sort(rng.choice(len(y), size=rows, replace=False))
        X, y = X[pick], y[pick]
    features = data.get("features")
    if features is not None:
        X = X[:, :features]
    return X, y


def _blobs(data: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(data.get("seed", 0))
    n, d, k = data["rows"], data["features"], data.get("classes", 2)
    y = np.arange(n) % k
    centers = rng.standard_normal((k, d))
    centers *= data["separation"] / 2.0 / np.linalg.norm(centers, axis=1, keepdims=True)
    X = centers[y] + rng.standard_normal((n, d))
    share = data.get("duplicates", 0.0)
    if share:
        twins = rng.choice(n, size=max(1, round(share * n)), replace=False)
        X = np.vstack([X, X[twins]])
        y = np.concatenate([y, (y[twins] + 1) % k])
    return X, y


def _ranking(data: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(data.get("seed", 0))
    q, m, d = data["queries"], data["rows"], data["features"]
    X = rng.standard_normal((q * m, d))
    score = X @ rng.standard_normal(d) + data.get("noise", 0.5) * rng.standard_normal(q * m)
    levels = data.get("levels", 3)
    relevance = np.zeros(q * m, dtype=np.int64)
    groups = np.repeat(np.arange(q), m)
    for g in range(q):
        block = slice(g * m, (g + 1) * m)
        cuts = np.quantile(score[block], np.linspace(0, 1, levels + 1)[1:-1])
        relevance[block] = np.searchsorted(cuts, score[block])
    return X, relevance, groups


def make_data(data: dict[str, Any]) -> dict[str, Any]:
    """The prepared arrays of a data recipe: ``X``, ``y`` and, for ranking, ``groups``; for
    chains the lists ``X`` and ``Y`` of sequences."""
    source = data.get("source")
    if source == "chains":
        from qpsvm.datasets import make_chains

        chains = make_chains(
            n_sequences=data["rows"],
            mean_length=data.get("length", 4),
            n_features=data["features"],
            n_states=data["classes"],
            random_state=data.get("seed", 0),
        )
        return {"X": chains.X, "Y": chains.Y}
    if source in _SKLEARN:
        X, y = _sklearn(data)
        extra: dict[str, Any] = {}
    elif source in ("blobs", "duplicates"):
        X, y = _blobs(data)
        extra = {}
    elif source == "ranking":
        X, y, groups = _ranking(data)
        extra = {"groups": groups}
    else:
        raise InvalidInputError(
            f"unknown data source {source!r}; use one of {[*_SKLEARN, *_GENERATED]}."
        )
    if source in _REGRESSION:
        y = _standardize(np.asarray(y, dtype=np.float64)[:, None]).ravel()
    return {"X": _prepare(X, data.get("scale", "standard")), "y": np.asarray(y), **extra}


def data_hash(arrays: dict[str, Any]) -> str:
    """SHA-256 of the prepared arrays (their float64 / int64 bytes, in key order): equal hashes
    mean bit-identical data."""
    digest = hashlib.sha256()
    for key in sorted(arrays):
        parts = arrays[key] if isinstance(arrays[key], list) else [arrays[key]]
        for part in parts:
            arr = np.ascontiguousarray(part)
            arr = arr.astype(np.float64 if arr.dtype.kind == "f" else np.int64)
            digest.update(key.encode() + str(arr.shape).encode() + arr.tobytes())
    return digest.hexdigest()


def _sample_weight(recipe: dict[str, Any], n: int) -> np.ndarray | None:
    weights = recipe.get("weights")
    if weights is None:
        return None
    rng = np.random.default_rng(weights["seed"])
    # small dyadic weights in {1/4, 1/2, ..., 4}: exact, and spread over a factor 16
    return np.ldexp(1.0, rng.integers(-2, 3, size=n))


def build(recipe: dict[str, Any], arrays: dict[str, Any] | None = None) -> Any:
    """The formulation a recipe states (from ``arrays`` when they are already prepared)."""
    import qpsvm

    arrays = make_data(recipe["data"]) if arrays is None else arrays
    family, C = recipe["family"], recipe.get("C", 1.0)
    if family == "chain":
        X, Y = arrays["X"], arrays["Y"]
        model = qpsvm.ChainModel(n_features=X[0].shape[1], n_states=recipe["data"]["classes"])
        return qpsvm.StructuralSVM(model, X, Y, C=C)
    X, y = arrays["X"], arrays["y"]
    if family in ("binary", "binary_no_intercept", "weighted"):
        return qpsvm.SoftMarginPrimal(
            X,
            y,
            C=C,
            fit_intercept=family != "binary_no_intercept",
            sample_weight=_sample_weight(recipe, len(y)),
        )
    if family in _COMPOSED:
        loss, penalty, intercept = _COMPOSED[family]
        return qpsvm.SoftMarginPrimal(X, y, C=C, loss=loss, penalty=penalty, intercept=intercept)
    if family == "svr":
        return qpsvm.SupportVectorRegression(X, y, C=C, epsilon=recipe.get("epsilon", 0.0))
    if family == "hard_margin":
        return qpsvm.HardMargin(X, y)
    if family.startswith("kernel_"):
        kernel = family.removeprefix("kernel_")
        options = {key: recipe[key] for key in ("gamma", "degree", "coef0") if key in recipe}
        return qpsvm.SoftMarginDual(X, y, C=C, kernel=kernel, **options)
    if family == "ranking":
        return qpsvm.RankingSVM(X, y=y, groups=arrays["groups"], C=C)
    if family in ("crammer_singer", "weston_watkins"):
        return qpsvm.MulticlassSVM(X, y, C=C, variant=family)
    raise InvalidInputError(f"unknown family {family!r}; use one of {sorted(FAMILIES)}.")

"""The recipes of every tier: which data, which family, which ``C``.

``small`` runs in CI time (the exact oracle takes seconds for all of it), ``medium`` in minutes
on a laptop, ``large`` on a workstation. Every family of qpsvm appears in every tier, over
scikit-learn's bundled sets and generated data of chosen difficulty: separable, noisy
(overlapping clouds), duplicated points with opposite labels, badly scaled columns, ``n << d``,
and many free support vectors (large ``C`` on overlapping data), on a ``C`` grid from ``1e-3``
to ``1e3``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TIERS", "recipes"]

TIERS = ("small", "medium", "large")

#: rows, features and the C grid per tier
_SIZE = {
    "small": {
        "rows": 60,
        "features": 5,
        "C": (1e-3, 1.0, 1e3),
        "queries": 4,
        "seqs": 6,
        "separable": 8.0,
    },
    "medium": {
        "rows": 300,
        "features": 12,
        "C": (1e-3, 1e-1, 1.0, 10.0, 1e3),
        "queries": 10,
        "seqs": 30,
        "separable": 8.0,
    },
    "large": {
        "rows": 2000,
        "features": 30,
        "C": (1e-3, 1e-1, 1.0, 10.0, 1e3),
        "queries": 40,
        "seqs": 150,
        # two clouds 8 apart overlap at 2000 rows in 30 dimensions (the hard margin is
        # infeasible); 12 apart they separate
        "separable": 12.0,
    },
}


def _name(family: str, data: dict[str, Any], C: float | None) -> str:
    keys = ("rows", "features", "classes", "queries", "separation", "duplicates", "scale", "seed")
    tags = [data["source"]] + [
        f"{k}={data[k]}"
        for k in keys
        if k in data and not (k == "classes" and data["source"] in ("iris", "wine", "digits"))
    ]
    return f"{family}/{'/'.join(str(t) for t in tags)}" + ("" if C is None else f"/C={C:g}")


def _recipe(family: str, data: dict[str, Any], C: float | None = None, **extra: Any) -> dict:
    recipe = {"name": _name(family, data, C), "family": family, "data": data, **extra}
    if C is not None:
        recipe["C"] = C
    if "weights" in extra:
        recipe["name"] += "/weighted"
    return recipe


def recipes(tier: str) -> list[dict[str, Any]]:
    """Every recipe of ``tier`` (``"small"``, ``"medium"`` or ``"large"``), named uniquely."""
    size = _SIZE[tier]
    n, d, grid = size["rows"], size["features"], size["C"]
    out: list[dict[str, Any]] = []
    cancer = {"source": "breast_cancer", "rows": n, "features": d, "seed": 0}
    noisy = {"source": "blobs", "rows": n, "features": d, "separation": 1.5, "seed": 1}
    separable = {
        "source": "blobs",
        "rows": n,
        "features": d,
        "separation": size["separable"],
        "seed": 2,
    }
    duplicates = {
        "source": "duplicates",
        "rows": n,
        "features": d,
        "separation": 2.0,
        "duplicates": 0.1,
        "seed": 3,
    }
    bad = {
        "source": "blobs",
        "rows": n,
        "features": d,
        "separation": 2.0,
        "scale": "bad",
        "seed": 4,
    }
    wide = {
        "source": "blobs",
        "rows": max(10, n // 6),
        "features": 4 * n,
        "separation": 2.0,
        "seed": 5,
    }
    out += [_recipe("binary", cancer, C) for C in grid]
    out += [_recipe("binary", data, 1.0) for data in (noisy, duplicates, bad, wide)]
    out.append(_recipe("binary", noisy, grid[-1]))  # many free support vectors
    out += [_recipe("binary_no_intercept", data, 1.0) for data in (cancer, noisy)]
    out += [_recipe("weighted", data, 1.0, weights={"seed": 7}) for data in (cancer, noisy)]
    iris = {"source": "iris", "classes": [0, 1], "features": 2}
    out += [_recipe("hard_margin", data) for data in (iris, separable)]
    out.append(_recipe("kernel_linear", noisy, 1.0))
    out += [_recipe("kernel_poly", cancer, C, degree=2, gamma=0.125, coef0=1.0) for C in grid[1:2]]
    out += [_recipe("kernel_rbf", data, 1.0, gamma=0.25) for data in (cancer, noisy)]
    rank = {
        "source": "ranking",
        "queries": size["queries"],
        "rows": n // size["queries"] + 5,
        "features": d,
        "seed": 8,
    }
    out += [_recipe("ranking", rank, C) for C in (grid[0], 1.0, grid[-1])]
    wine = {"source": "wine", "rows": n, "features": d, "seed": 0}
    iris3 = {"source": "iris", "rows": min(n, 150), "seed": 0}
    clouds = {
        "source": "blobs",
        "rows": n,
        "features": d,
        "classes": 4,
        "separation": 2.0,
        "seed": 9,
    }
    for variant in ("crammer_singer", "weston_watkins"):
        out += [_recipe(variant, data, 1.0) for data in (wine, iris3, clouds)]
        out += [_recipe(variant, data, C) for data in (wine, clouds) for C in (grid[0], grid[-1])]
    if tier != "small":
        digits = {"source": "digits", "rows": n, "seed": 0}
        out += [_recipe(variant, digits, 1.0) for variant in ("crammer_singer", "weston_watkins")]
    # the composed problems other tools solve (LinearSVC's default, LIBLINEAR's -B, the L1
    # penalty) and regression, on the C grid's middle and ends
    for family in (
        "squared_hinge",
        "regularized_intercept",
        "squared_hinge_regularized",
        "l1_squared_hinge",
    ):
        out += [_recipe(family, cancer, C) for C in (grid[0], 1.0, grid[-1])]
    out.append(_recipe("squared_hinge_regularized", noisy, 1.0))
    diabetes = {"source": "diabetes", "rows": n, "features": min(d, 10), "seed": 0}
    out += [_recipe("svr", diabetes, C, epsilon=0.125) for C in (grid[0], 1.0, grid[-1])]
    chains = {"source": "chains", "rows": size["seqs"], "features": d, "classes": 3, "seed": 10}
    out += [_recipe("chain", chains, C) for C in (0.1, 1.0)]
    return out

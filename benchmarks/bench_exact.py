"""Time the exact rational oracle (``method="exact"``) against the float certified solve of the
same problem, in the same run: a binary problem with ``n = 2000, d = 20``, Crammer-Singer on
digits (1797 x 64, 10 classes), and the poly kernel ``(0.2 x.x' + 1)^3`` on ``n = 200, 400, 800``
points in 5 dimensions (the exact Gram matrix and Lemke's pivots on the free multipliers). Prints
seconds and the ratio exact / float.

Run from the repository root: ``python benchmarks/bench_exact.py [--repeat K]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.datasets import load_digits

import qpsvm


def problems() -> dict[str, qpsvm.Formulation]:
    rng = np.random.default_rng(0)
    n, d = 2000, 20
    X = rng.normal(size=(n, d))
    y = np.where(X @ rng.normal(size=d) + 0.5 * rng.normal(size=n) > 0, 1, -1)
    digits, labels = load_digits(return_X_y=True)
    out = {
        "binary n=2000 d=20": qpsvm.SoftMarginPrimal(X, y, C=1.0),
        "crammer_singer digits": qpsvm.MulticlassSVM(digits / 16.0, labels, C=1.0),
    }
    for n in (200, 400, 800):
        Z = rng.normal(size=(n, 5))
        labels_z = np.where(Z[:, 0] * Z[:, 1] + 0.3 * rng.normal(size=n) > 0, 1, -1)
        out[f"poly n={n} d=5"] = qpsvm.SoftMarginDual(
            Z, labels_z, C=1.0, kernel="poly", gamma=0.2, degree=3, coef0=1.0
        )
    return out


def best_time(run, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        tic = time.perf_counter()
        run()
        times.append(time.perf_counter() - tic)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    print(f"{'problem':<24}{'float s':>10}{'exact s':>10}{'ratio':>8}")
    for name, f in problems().items():
        t_float = best_time(lambda f=f: f.fresh_copy().solve(), args.repeat)
        t_exact = best_time(lambda f=f: f.fresh_copy().solve(method="exact"), args.repeat)
        print(f"{name:<24}{t_float:>10.2f}{t_exact:>10.2f}{t_exact / t_float:>8.2f}")


if __name__ == "__main__":
    main()

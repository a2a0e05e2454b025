"""Online solvers against their anchors: Pegasos vs SGDClassifier, SMO vs libsvm (SVC).

Run ``python benchmarks/bench_online.py`` (``--quick`` for a small smoke run). Times are the
minimum over repeats (the machine is shared), with one BLAS thread; numba's first call
(compilation, or loading the on-disk cache) is timed separately and excluded.

1. One epoch over ``n x d`` (default 1e5 x 50, dense and CSR) of hinge-loss SGD:
   scikit-learn's ``SGDClassifier(loss="hinge", max_iter=1, tol=None)`` against qpsvm's
   ``solve(method="subgradient", epochs=1)`` (whole call: shuffling, kernel, exact objective of
   the history, solution), per further epoch (``(t(10 epochs) - t(1 epoch)) / 9`` for both) and
   against the numba kernel alone. The same ``lambda = alpha``
   (``C = 1/(alpha n)``) and Pegasos-like steps (scikit-learn's "optimal" schedule).
2. SMO on the RBF dual (default n = 3000) against ``SVC`` at the same ``tol`` (the Gram matrix
   fits in SMO's cache and is computed beforehand; libsvm computes rows lazily and shrinks),
   the SMO loop alone and the whole certified solve (one run: the certificate of a kernel
   solution solves dense least-squares systems on the support vectors and dominates), with the
   certified gap of both answers.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

import qpsvm
from qpsvm._rows import data_arrays, row_sq_norms
from qpsvm.conventions import C_from_pegasos
from qpsvm.solvers import _online_kernels as kernels


def best_of(fn, repeats):
    """Minimum wall-clock time of ``repeats`` calls of ``fn``, and its last result."""
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def kernel_epoch(f, seed=0):
    """One bare numba epoch (no history, no solution), as solve_subgradient runs it."""
    n = f.n_samples
    lam = 1.0 / (f.C * n)
    M = data_arrays(f.X)
    sqnorm = row_sq_norms(f.X)
    order = np.random.default_rng(seed).permutation(n)
    etas = 1.0 / (lam * np.arange(1, n + 1))
    v, avg, state = np.zeros(f.n_features), np.zeros(1), np.array([1.0, 0, 0, 0, 0])
    args = (f.y, f.sample_weight, f.margin, sqnorm, True, order, etas, lam, 1, 0.0)
    return lambda: kernels.binary_epoch(M, *args, v, avg, state, False)


def bench_sgd(n, d, repeats, density=None):
    X, y = make_classification(n, d, n_informative=d // 2, random_state=0)
    if density is not None:
        rng = np.random.default_rng(0)
        X = sp.csr_matrix(X * (rng.random(X.shape) < density))
    alpha, more = 1e-4, 10
    f = qpsvm.SoftMarginPrimal(X, y, C=C_from_pegasos(alpha, n))
    run = kernel_epoch(f)
    start = time.perf_counter()
    run()
    first = time.perf_counter() - start
    t_kernel, _ = best_of(run, repeats)

    def ours(epochs):
        return lambda: f.solve(method="subgradient", epochs=epochs, random_state=0)

    def sklearn(epochs):
        def fit():
            clf = SGDClassifier(
                loss="hinge", alpha=alpha, max_iter=epochs, tol=None, random_state=0
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                return clf.fit(X, y)

        return fit

    t_one, sol = best_of(ours(1), repeats)
    t_more, _ = best_of(ours(more), repeats)
    s_one, clf = best_of(sklearn(1), repeats)
    s_more, _ = best_of(sklearn(more), repeats)
    epoch, s_epoch = (t_more - t_one) / (more - 1), (s_more - s_one) / (more - 1)
    kind = "dense" if density is None else f"CSR {density:.0%}"
    print(f"\n[subgradient] one epoch, {n} x {d} {kind}, lambda = {alpha:g}")
    print(f"  numba first call (compile or cache load): {first:.3f} s (excluded)")
    print(f"  sklearn SGDClassifier.fit(max_iter=1)        {s_one * 1e3:8.1f} ms")
    print(
        f"  qpsvm solve(epochs=1)                        {t_one * 1e3:8.1f} ms"
        f"   ratio {t_one / s_one:5.2f}x"
    )
    print(f"  sklearn, each further epoch                  {s_epoch * 1e3:8.1f} ms")
    print(
        f"  qpsvm numba epoch alone                      {t_kernel * 1e3:8.1f} ms"
        f"   ratio {t_kernel / s_epoch:5.2f}x"
    )
    print(
        f"  qpsvm, each further epoch (+ exact history)  {epoch * 1e3:8.1f} ms"
        f"   ratio {epoch / s_epoch:5.2f}x"
    )
    p_sk = f.objective(clf.coef_, clf.intercept_)
    print(f"  objective after 1 epoch: qpsvm {sol.objective:.6g}, sklearn {p_sk:.6g}")


def bench_smo(n, d, repeats):
    X, y = make_classification(n, d, n_informative=d // 2, flip_y=0.05, random_state=1)
    C, gamma, tol = 1.0, 1.0 / d, 1e-3
    f = qpsvm.SoftMarginDual(X, y, C=C, kernel="rbf", gamma=gamma)
    f.gram()  # the Gram matrix is shared by SMO and the certificate; not timed
    start = time.perf_counter()
    qpsvm.SoftMarginDual(X[:50], y[:50], kernel="rbf").solve(method="smo")
    first = time.perf_counter() - start
    t_smo, sol = best_of(lambda: f.solve(method="smo", tol=tol), repeats)
    t_svc, svc = best_of(lambda: SVC(C=C, gamma=gamma, tol=tol).fit(X, y), repeats)
    loop = sol.info["backend_time"]
    cert_svc = f.certify(svc)
    print(f"\n[smo] RBF dual, n = {n}, d = {d}, C = {C}, tol = {tol}")
    print(f"  numba first call (compile or cache load): {first:.3f} s (excluded)")
    print(f"  sklearn SVC.fit                      {t_svc * 1e3:8.1f} ms")
    print(
        f"  qpsvm SMO loop ({sol.n_iter} steps)       {loop * 1e3:8.1f} ms"
        f"   ratio {loop / t_svc:5.2f}x"
    )
    print(
        f"  qpsvm solve(method='smo'), certified {t_smo * 1e3:8.1f} ms"
        f"   ratio {t_smo / t_svc:5.2f}x"
    )
    print(
        f"  certified relative gap: qpsvm {sol.certificate.relative_gap:.2e}, "
        f"SVC {cert_svc.relative_gap:.2e}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run")
    args = parser.parse_args()
    n, d, n_smo, repeats = (20_000, 50, 500, 3) if args.quick else (100_000, 50, 3000, 5)
    # both SGDs are single-threaded; one BLAS thread keeps the exact objective's X @ w from
    # spinning threads against the kernel on a shared machine
    with threadpool_limits(limits=1):
        bench_sgd(n, d, repeats)
        bench_sgd(n, d, repeats, density=0.1)
        bench_smo(n_smo, 20, 1)


if __name__ == "__main__":
    main()

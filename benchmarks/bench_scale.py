"""Exact at scale: qpsvm's working-set engine against the specialised solvers (issue 6 targets).

Every case times qpsvm's ``f.solve()`` (exact, certified at 1e-9; the working-set method, the
default for large binary and ranking problems, named explicitly for the multiclass SVM) and the
anchor in the same run, and prints the ratio qpsvm / anchor with qpsvm's certified relative gap.
Times are medians of ``--repeat`` runs where one run is cheap (under ``--cheap`` seconds), else
one run.

Cases (``--only`` picks some):

* ``primal``: soft-margin primal, n = 1e5, d = 50, vs ``LinearSVC(loss="hinge")`` (liblinear's
  dual coordinate descent, default tolerance; it regularises the intercept);
* ``rbf``: soft-margin dual, RBF kernel, n = 5000, d = 10, vs ``SVC(kernel="rbf")`` (libsvm);
* ``multiclass``: Crammer-Singer, n = 2e4, d = 50, 10 classes, vs
  ``LinearSVC(multi_class="crammer_singer", fit_intercept=False)`` (liblinear's sequential dual
  method; the same problem);
* ``ranking``: 200 queries x 40 items, vs ``LinearSVC(loss="hinge", fit_intercept=False)`` on the
  mirrored pair differences (``C_binary = C / 2``; building the differences is not timed);
* ``memory``: peak memory of ``SoftMarginPrimal(X, y).solve()`` at n = 1e5, d = 50 in a fresh
  process (after a small warm-up solve), as a multiple of ``X.nbytes`` (tracemalloc: Python and
  numpy allocations; peak RSS growth over the RSS before the solve, with the kernel's peak
  counter reset: everything, the backends' included);
* ``path``: a 20-value regularisation path (``f.path``: the first value by the working set, the
  others by event tracking) against one solve (at ``C = 1``) and against 20 cold solves;
* ``curve``: time vs n from 1e3 to 1e6 for the primal with the empirical exponent (least-squares
  slope of log time on log n), next to LinearSVC's (up to ``--anchor-max-n``);
* ``crossover``: the full QP against the working set for small n (the measured threshold of
  ``default_method``).

qpsvm's time is broken down into the approximate start, the restricted QPs (backend time and
rounds) and the final certificate (``f.certify`` on the full data).

Usage: ``python benchmarks/bench_scale.py [--quick] [--only primal,rbf,...] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import statistics
import time
import tracemalloc
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC

import qpsvm

CASES = ("primal", "rbf", "multiclass", "ranking", "memory", "path", "curve", "crossover")


# ------------------------------------------------------------------------------------ data
def primal_data(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two overlapping Gaussian classes (about 10% of points inside the margin), as in
    bench_binary.py."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1, 1)
    X = rng.normal(size=(n, d)) + 0.35 * y[:, None] * (np.arange(d) < 5)
    return X, y


def rbf_data(n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """A standardised nonlinear problem with 5% flipped labels."""
    X, y = make_classification(
        n_samples=n, n_features=d, n_informative=6, flip_y=0.05, random_state=0
    )
    return StandardScaler().fit_transform(X), y


def ranking_data(
    n_queries: int, n_items: int, d: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Graded relevance 0..4 from a noisy linear score, ``n_items`` per query."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * n_items, d))
    score = X @ rng.normal(size=d) / math.sqrt(d) + 0.5 * rng.normal(size=len(X))
    relevance = np.clip(np.round(score + 2.0), 0, 4)
    return X, relevance, np.repeat(np.arange(n_queries), n_items)


# --------------------------------------------------------------------------------- timing
def timed(fn: Callable[[], Any], repeat: int, cheap: float) -> tuple[float, Any]:
    """Median wall time over up to ``repeat`` runs (one run if it took over ``cheap`` s)."""
    times: list[float] = []
    out = None
    for _ in range(repeat):
        begun = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - begun)
        if times[0] > cheap:
            break
    return statistics.median(times), out


def quiet_fit(est: Any, *data: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(*data)


def breakdown(sol: qpsvm.Solution) -> str:
    info = sol.info
    if sol.method != "working_set":
        return f"method {sol.method}, QP {info.get('backend_time', 0.0):.2f}s"
    return (
        f"start {info.get('start', '?')} {info.get('start_time', 0.0):.2f}s, "
        f"{info.get('rounds', 0)} round(s) W={info.get('working', '?')} "
        f"QP {info.get('backend_time', 0.0):.2f}s, certify {info.get('certify_time', 0.0):.2f}s"
    )


def report(name: str, ours: float, sol: qpsvm.Solution, anchor_name: str, anchor: float) -> None:
    print(
        f"{name:<10} qpsvm {ours:8.3f}s  {anchor_name:<34} {anchor:8.3f}s  "
        f"ratio {ours / anchor:6.2f}  rel. gap {sol.certificate.relative_gap:.1e}  "
        f"[{breakdown(sol)}]",
        flush=True,
    )


# ---------------------------------------------------------------------------------- cases
def case_primal(args: argparse.Namespace) -> None:
    n = 10_000 if args.quick else 100_000
    X, y = primal_data(n, 50)
    for C in args.C:
        t_ours, sol = timed(
            lambda C=C: qpsvm.SoftMarginPrimal(X, y, C=C).solve(), args.repeat, args.cheap
        )
        t_svc, svc = timed(
            lambda C=C: quiet_fit(LinearSVC(loss="hinge", C=C), X, y), args.repeat, args.cheap
        )
        report(f"primal C={C:g}", t_ours, sol, f"LinearSVC hinge (n_iter {svc.n_iter_})", t_svc)


def case_rbf(args: argparse.Namespace) -> None:
    n = 1000 if args.quick else 5000
    X, y = rbf_data(n, 10)
    # load the compiled kernels (SMO, kernel rows) once, as any session would have
    qpsvm.SoftMarginDual(X[:300], y[:300], C=1.0, kernel="rbf").solve(method="working_set")
    t_ours, sol = timed(
        lambda: qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf").solve(), args.repeat, args.cheap
    )
    t_svc, _ = timed(lambda: SVC(kernel="rbf", C=1.0).fit(X, y), args.repeat, args.cheap)
    report(f"rbf n={n}", t_ours, sol, "SVC rbf", t_svc)


def multiclass_data(n: int, d: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``k`` standardised Gaussian clusters, one per class, 20 informative features."""
    X, y = make_classification(
        n_samples=n,
        n_features=d,
        n_informative=20,
        n_classes=k,
        n_clusters_per_class=1,
        random_state=0,
    )
    return StandardScaler().fit_transform(X), y


def case_multiclass(args: argparse.Namespace) -> None:
    n = 2000 if args.quick else 20_000
    X, y = multiclass_data(n, 50, 10)
    C = 0.1
    t_ours, sol = timed(
        lambda: qpsvm.MulticlassSVM(X, y, C=C).solve(method="working_set"),
        args.repeat,
        args.cheap,
    )
    t_svc, svc = timed(
        lambda: quiet_fit(LinearSVC(multi_class="crammer_singer", C=C, fit_intercept=False), X, y),
        args.repeat,
        args.cheap,
    )
    report(f"CS n={n}", t_ours, sol, f"LinearSVC crammer_singer (n_iter {svc.n_iter_})", t_svc)


def case_ranking(args: argparse.Namespace) -> None:
    n_queries, n_items = (30, 20) if args.quick else (200, 40)
    X, relevance, groups = ranking_data(n_queries, n_items, 20)
    C = 1.0
    t_ours, sol = timed(
        lambda: qpsvm.RankingSVM(X, y=relevance, groups=groups, C=C).solve(),
        args.repeat,
        args.cheap,
    )
    Z = qpsvm.RankingSVM(X, y=relevance, groups=groups).X.materialize()
    mirrored = np.vstack([Z, -Z])
    signs = np.concatenate([np.ones(len(Z)), -np.ones(len(Z))])
    t_svc, _ = timed(
        lambda: quiet_fit(LinearSVC(loss="hinge", C=C / 2, fit_intercept=False), mirrored, signs),
        args.repeat,
        args.cheap,
    )
    report(f"ranking {len(Z)}p", t_ours, sol, "LinearSVC hinge on pair differences", t_svc)


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(field))


def _memory_child(n: int, d: int, queue: Any) -> None:
    qpsvm.SoftMarginPrimal(*primal_data(3000, d)).solve()  # lazy imports, compiled kernels
    X, y = primal_data(n, d)
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # reset the peak RSS (VmHWM) to the current RSS
    before = _status_kb("VmRSS:") * 1024
    tracemalloc.start()
    sol = qpsvm.SoftMarginPrimal(X, y).solve()
    traced = tracemalloc.get_traced_memory()[1]
    peak_rss = _status_kb("VmHWM:") * 1024
    queue.put((X.nbytes, traced, peak_rss - before, sol.certificate.relative_gap))


def case_memory(args: argparse.Namespace) -> None:
    n = 10_000 if args.quick else 100_000
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_memory_child, args=(n, 50, queue))
    child.start()
    data, traced, rss, gap = queue.get()
    child.join()
    print(
        f"memory     n={n}, d=50: X is {data / 2**20:.0f} MB; peak tracemalloc "
        f"{traced / 2**20:.0f} MB = {traced / data:.2f}x, peak RSS growth {rss / 2**20:.0f} MB = "
        f"{rss / data:.2f}x (the formulation's float64 copy of X is 1x); rel. gap {gap:.1e}",
        flush=True,
    )


def case_path(args: argparse.Namespace) -> None:
    sizes = (2000,) if args.quick else (10_000, 100_000)
    Cs = np.logspace(-2, 1, 20)
    for n in sizes:
        X, y = primal_data(n, 50)
        f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
        t_one, one = timed(lambda f=f: f.solve(), args.repeat, args.cheap)
        begun = time.perf_counter()
        path = f.path(Cs)
        t_path = time.perf_counter() - begun
        begun = time.perf_counter()
        cold = [f.with_C(C).solve() for C in Cs]
        t_cold = time.perf_counter() - begun
        worst = max(s.certificate.relative_gap for s in path)
        certify = sum(s.info["certify_time"] for s in path)
        events = sum(s.info.get("events", 0) for s in path)
        fallbacks = sum("fallback" in s.info for s in path)
        print(
            f"path       n={n}: 20 values of C in [1e-2, 10] {t_path:.2f}s, one solve (C=1) "
            f"{t_one:.2f}s: path / one solve {t_path / t_one:.1f}x, path / 20 cold solves "
            f"{t_path / t_cold:.2f}x; worst rel. gap {worst:.1e}; {events} events, "
            f"{fallbacks} values solved by the working set instead, certificates {certify:.2f}s",
            flush=True,
        )
        assert one.certificate.passed and all(s.certificate.passed for s in path + cold)


def slope(ns: list[int], ts: list[float]) -> float:
    """Least-squares slope of log t on log n: the empirical exponent of t ~ n^k."""
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


def case_curve(args: argparse.Namespace) -> None:
    top = 10_000 if args.quick else args.curve_max_n
    ns = [n for n in (1000, 3000, 10_000, 30_000, 100_000, 300_000, 1_000_000) if n <= top]
    ours, anchor = [], []
    print(f"{'n':>8} {'qpsvm':>9} {'LinearSVC':>10} {'ratio':>6}  rel. gap  breakdown")
    for n in ns:
        X, y = primal_data(n, 50)
        t, sol = timed(lambda X=X, y=y: qpsvm.SoftMarginPrimal(X, y).solve(), 1, 0.0)
        ours.append(t)
        if n <= args.anchor_max_n:
            a, _ = timed(lambda X=X, y=y: quiet_fit(LinearSVC(loss="hinge"), X, y), 1, 0.0)
            anchor.append(a)
        shown = (
            f"{anchor[-1]:10.3f} {t / anchor[-1]:6.2f}" if len(anchor) == len(ours) else " " * 17
        )
        print(
            f"{n:8d} {t:9.3f} {shown}  {sol.certificate.relative_gap:.1e}  [{breakdown(sol)}]",
            flush=True,
        )
    print(f"empirical exponent (t ~ n^k): qpsvm k = {slope(ns, ours):.2f}", end="")
    if len(anchor) > 1:
        print(f", LinearSVC k = {slope(ns[: len(anchor)], anchor):.2f}", end="")
    print(flush=True)


def case_crossover(args: argparse.Namespace) -> None:
    sizes = (50, 250, 500, 1000) if args.quick else (20, 50, 100, 250, 500, 1000, 2000, 4000)
    print(f"{'n':>6} {'case':<12} {'qp':>8} {'working_set':>12}")
    for n in sizes:
        cases = [("primal d=50", qpsvm.SoftMarginPrimal, primal_data(n, 50), {})]
        if n <= 2000:
            cases.append(("rbf d=10", qpsvm.SoftMarginDual, rbf_data(n, 10), {"kernel": "rbf"}))
        for name, cls, (X, y), kw in cases:

            def solve(method: str, cls: Any = cls, X: Any = X, y: Any = y, kw: Any = kw) -> Any:
                return cls(X, y, **kw).solve(method=method)

            t_qp, _ = timed(lambda: solve("qp"), args.repeat, args.cheap)
            t_ws, _ = timed(lambda: solve("working_set"), args.repeat, args.cheap)
            print(f"{n:6d} {name:<12} {t_qp:8.3f} {t_ws:12.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one run each")
    parser.add_argument("--only", default=",".join(CASES), help=f"comma-separated of {CASES}")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cheap", type=float, default=10.0, help="repeat runs under this (s)")
    parser.add_argument(
        "--C", type=lambda s: [float(v) for v in s.split(",")], default=[1.0], help="primal Cs"
    )
    parser.add_argument("--curve-max-n", type=int, default=1_000_000)
    parser.add_argument("--anchor-max-n", type=int, default=300_000)
    args = parser.parse_args()
    if args.quick:
        args.repeat = 1
    chosen = [c.strip() for c in args.only.split(",") if c.strip()]
    unknown = sorted(set(chosen) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {unknown}; choose from {CASES}")
    print(
        "times in s; ratio = qpsvm / anchor from the same run; rel. gap = qpsvm's certified "
        "relative duality gap",
        flush=True,
    )
    for name in chosen:
        globals()[f"case_{name}"](args)


if __name__ == "__main__":
    main()

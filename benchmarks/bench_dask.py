"""Exact SVMs on Dask data: passes, time and client memory against in-memory qpsvm and dask-ml.

The data are written to a Zarr store on disk in row blocks (float32 features, int8 labels: a
linear utility plus Gaussian noise), never held whole by this process, and read back with
``da.from_zarr`` on a ``dask.distributed.LocalCluster`` this script starts. For each ``n`` it
prints

* the read speed of one pass over the store (``X.sum()``, bytes / seconds: the floor of any pass;
  a store that fits the page cache is read from memory);
* qpsvm's Dask solve (``SoftMarginPrimal(X, y, C).solve()``, certified at 1e-9): total time,
  passes (sample start, Newton, sort, rounds), seconds per pass and their ratio to the read pass,
  the certified relative gap and the client's peak resident memory (``ru_maxrss``); with
  ``--family crammer_singer`` or ``weston_watkins``, ``MulticlassSVM(X, y, C, variant).solve()``
  on ``--classes`` classes (labels ``argmax_c x.w*_c + noise``; passes: labels, sort, rounds)
  instead, without the SGD comparison; with ``--family ranking``,
  ``RankingSVM(X, y=relevance, groups=query, C).solve()`` on queries of 20 consecutive items
  (relevance ``0..4`` from a noisy linear utility, blocks of 25000 items so that each block's
  window stays within the sort's limit; passes: queries, sort, rounds);
* the in-memory solve of the same problem (``X.compute()`` in float64, up to
  ``--memory-max-n`` rows): time ratio Dask / in memory and ``|P_dask - P_mem| / P``;
* dask-ml's SGD (``Incremental(SGDClassifier(loss="hinge", alpha=1/(C n)))``, one
  ``partial_fit`` per pass, the same objective: scikit-learn's ``alpha`` is ``1/(C n)``) for
  ``--sgd-epochs`` passes, after each the relative suboptimality ``P(w_sgd)/P* - 1`` (a pass of
  ``f.objective``, not counted) and the held-out accuracy next to the exact optimum's.

Usage::

    python benchmarks/bench_dask.py --n 1e6 [--d 20] [--dir /tmp/qpsvm-dask] [--workers 2]
    python benchmarks/bench_dask.py --n 1e6,3e6,1e7 --sgd-epochs 0      # a scaling curve
    python benchmarks/bench_dask.py --n 2e5 --family crammer_singer --classes 5
    python benchmarks/bench_dask.py --n 4e5 --family ranking --C 0.01 [--band 0.02]

The store is deleted at the end unless ``--keep``; ``--write-only --keep`` writes it and
``--reuse`` reads a kept one.
"""

from __future__ import annotations

import argparse
import logging
import math
import resource
import shutil
import time
from pathlib import Path

import dask.array as da
import numpy as np
from distributed import Client, LocalCluster

import qpsvm

BLOCK_ROWS = 250_000
#: Items per block and per query of the ranking stores.
RANK_BLOCK_ROWS, QUERY_ITEMS = 25_000, 20


def write_store(path: Path, n: int, d: int, seed: int, classes: int = 2) -> None:
    """Features ``N(0, 1)`` (float32) and labels ``[x.w* + 0.5 N(0, 1) > 0]`` (int8), or with
    more than two ``classes`` ``argmax_c x.w*_c + 0.5 N(0, 1)``, written block by block by the
    workers."""
    rows = min(RANK_BLOCK_ROWS if classes == 0 else BLOCK_ROWS, n)
    rng = da.random.default_rng(seed)
    X = rng.normal(size=(n, d), chunks=(rows, d)).astype(np.float32)
    if classes == 0:  # ranking: relevance 0..4 and query identifiers
        w_true = np.random.default_rng(seed).normal(size=d)
        noise = rng.normal(size=n, chunks=rows)
        y = (da.clip(da.round(X @ w_true / math.sqrt(d) * 2 + noise), -2, 2) + 2).astype(np.int8)
        queries = da.arange(n, chunks=rows) // QUERY_ITEMS
        da.to_zarr(queries, str(path / "groups.zarr"), overwrite=True)
    elif classes > 2:
        W_true = np.random.default_rng(seed).normal(size=(classes, d))
        noise = rng.normal(size=(n, classes), chunks=(rows, classes))
        scores = X @ W_true.T + 0.5 * W_true.std() * math.sqrt(d) * noise
        y = scores.argmax(axis=1).astype(np.int8)
    else:
        w_true = np.random.default_rng(seed).normal(size=d)
        noise = rng.normal(size=n, chunks=rows)
        y = ((X @ w_true + 0.5 * w_true.std() * math.sqrt(d) * noise) > 0).astype(np.int8)
    da.to_zarr(X, str(path / "X.zarr"), overwrite=True)
    da.to_zarr(y, str(path / "y.zarr"), overwrite=True)


def held_out(d: int, seed: int, n: int = 200_000) -> tuple[np.ndarray, np.ndarray]:
    """A test set from the same distribution as the store (not read from it)."""
    X = da.random.default_rng(seed + 1).normal(size=(n, d)).astype(np.float32).compute()
    w_true = np.random.default_rng(seed).normal(size=d)
    noise = np.random.default_rng(seed + 2).normal(size=n)
    return X, ((X @ w_true + 0.5 * w_true.std() * math.sqrt(d) * noise) > 0).astype(np.int8)


def peak_client_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run(n: int, args: argparse.Namespace) -> dict:
    multiclass = args.family in ("crammer_singer", "weston_watkins")
    ranking = args.family == "ranking"
    classes = args.classes if multiclass else 0 if ranking else 2
    tag = f"_k{classes}" if multiclass else "_rank" if ranking else ""
    path = Path(args.dir) / f"n{n}_d{args.d}_seed{args.seed}{tag}"
    path.mkdir(parents=True, exist_ok=True)
    if args.write_only:
        write_store(path, n, args.d, args.seed, classes)
        return {"n": n}
    began = time.perf_counter()
    if not (args.reuse and (path / "y.zarr").exists()):
        write_store(path, n, args.d, args.seed, classes)
    print(f"\nn = {n:.0e}, d = {args.d}: store ready in {time.perf_counter() - began:.1f}s")
    X = da.from_zarr(str(path / "X.zarr"))
    y = da.from_zarr(str(path / "y.zarr"))
    began = time.perf_counter()
    X.sum().compute()
    read = time.perf_counter() - began
    speed = X.nbytes / read / 2**20
    print(f"  read pass: {X.nbytes / 2**30:.2f} GiB in {read:.1f}s ({speed:.0f} MiB/s)")

    groups = da.from_zarr(str(path / "groups.zarr")) if ranking else None

    def formulation(X, y, groups=None):
        if multiclass:
            return qpsvm.MulticlassSVM(X, y, C=args.C, variant=args.family)
        if ranking:
            return qpsvm.RankingSVM(X, y=y, groups=groups, C=args.C)
        return qpsvm.SoftMarginPrimal(X, y, C=args.C)

    f = formulation(X, y, groups)
    began = time.perf_counter()
    sol = f.solve(band=args.band) if ranking else f.solve()
    total = time.perf_counter() - began
    info, cert = sol.info, sol.certificate
    per_pass = float(np.mean(info["pass_seconds"]))
    out = {"n": n, "time": total, "passes": info["passes"], "per_pass": per_pass, "read": read}
    print(
        f"  qpsvm dask: {total:.1f}s, {info['passes']} passes ({', '.join(info['pass_kinds'])}), "
        f"{per_pass:.1f}s per pass = {per_pass / read:.1f}x the read pass; |W| {info['working']}, "
        f"rounds {info['rounds']}; relative gap {cert.relative_gap:.1e} ({cert.passed}); "
        f"client peak {peak_client_mib():.0f} MiB"
    )
    if n <= args.memory_max_n:
        Xm, ym = X.compute().astype(np.float64), y.compute()
        gm = groups.compute() if ranking else None
        began = time.perf_counter()
        ref = formulation(Xm, ym, gm).solve()
        mem = time.perf_counter() - began
        out["memory_time"] = mem
        print(
            f"  in memory: {mem:.1f}s; ratio dask / memory {total / mem:.1f}; "
            f"|P_dask - P_mem| / P = {abs(sol.objective - ref.objective) / ref.objective:.1e}"
        )
        del Xm, ym
    if args.sgd_epochs and args.family == "binary":
        sgd(f, X, y, sol, n, args)
    if not args.keep:
        shutil.rmtree(path)
    return out


def sgd(f, X, y, sol, n: int, args: argparse.Namespace) -> None:
    """dask-ml's Incremental SGD, one pass per epoch, against the exact optimum."""
    from dask_ml.wrappers import Incremental
    from sklearn.linear_model import SGDClassifier

    Xt, yt = held_out(args.d, args.seed)
    exact = np.mean((Xt @ sol.w + sol.b > 0) == (yt == 1))
    P = sol.objective
    print(f"  dask-ml SGD (exact optimum: P* = {P:.10g}, held-out accuracy {exact:.5f}):")
    for average in (False, True):
        # scikit-learn's alpha is the lectures' lambda: C = 1 / (alpha n) (C_from_pegasos)
        est = Incremental(
            SGDClassifier(loss="hinge", alpha=1.0 / (args.C * n), average=average, random_state=0)
        )
        spent = 0.0
        for epoch in range(1, args.sgd_epochs + 1):
            began = time.perf_counter()
            est.partial_fit(X, y, classes=[0, 1])
            spent += time.perf_counter() - began
            w, b = est.estimator_.coef_.ravel(), float(est.estimator_.intercept_[0])
            value = f.objective(w, b)
            acc = np.mean((Xt @ w + b > 0) == (yt == 1))
            print(
                f"    {'averaged' if average else 'plain'} SGD pass {epoch}: {spent:.1f}s, "
                f"P/P* - 1 = {value / P - 1:.2e}, accuracy {acc:.5f} ({acc - exact:+.5f})"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", default="1e6", help="rows, comma-separated for a curve")
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument(
        "--family",
        choices=("binary", "crammer_singer", "weston_watkins", "ranking"),
        default="binary",
    )
    parser.add_argument("--band", type=float, default=0.1, help="the ranking sort's band")
    parser.add_argument("--classes", type=int, default=5, help="classes of a multiclass family")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", default="/tmp/qpsvm-dask")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-max-n", type=float, default=2e6)
    parser.add_argument("--sgd-epochs", type=int, default=5)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="read a store kept by --keep")
    parser.add_argument("--write-only", action="store_true", help="write the stores and stop")
    args = parser.parse_args()
    logging.basicConfig(format="%(asctime)s %(message)s")
    logging.getLogger("qpsvm").setLevel(logging.INFO)
    sizes = [int(float(v)) for v in args.n.split(",")]
    with (
        LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster),
    ):
        rows = [run(n, args) for n in sizes]
    if len(rows) > 1 and not args.write_only:
        logn = np.log([r["n"] for r in rows])
        slope = np.polyfit(logn, np.log([r["time"] for r in rows]), 1)[0]
        print("\nscaling curve (n, seconds, passes, seconds per pass, read pass):")
        for r in rows:
            print(
                f"  {r['n']:>10.0e} {r['time']:8.1f} {r['passes']:4d} {r['per_pass']:8.2f} "
                f"{r['read']:8.2f}"
            )
        print(f"  time ~ n^{slope:.2f}")
    print(f"client peak resident memory: {peak_client_mib():.0f} MiB")


if __name__ == "__main__":
    main()

"""Audit certificates against the exact rational oracle (``method="exact"``).

For random and adversarial small problems of every linear family (shifted, scaled, large and
small C, duplicates with opposite labels, zero weights), the exact optimum ``P*`` and ``w*`` are
computed in rational arithmetic; candidates (the float solve's answer, and the exact optimum
perturbed by ``1e-6 .. 1e-1``, as a bare ``w`` and as ``alpha`` alone) are certified, and the
script counts:

- misses: certificates whose ``[lower, upper]`` does not contain ``P*``;
- false accepts: ``passed`` while the candidate's exact relative suboptimality exceeds ``tol``;
- distance violations: ``||w - w*|| > distance_bound`` (exact);
- crashes: raw (non-qpsvm) exceptions from ``certify``;
- the ratio ``gap / (P(w) - P*)`` (exact) for candidates well above round-off;
- how far the dual objective of ``solve()``'s reported ``alpha`` (in floating point) falls
  short of ``P*``, relative: the solution's multipliers should be the dual optimum's;
- skips: draws the oracle itself failed on (a typed error), and its slowest solve.

Run from the repository root: ``python benchmarks/oracle_audit.py [--problems N]``.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from fractions import Fraction

import numpy as np

import qpsvm
from qpsvm.solvers.exact import binary_qp, multiclass_qp, ranking_qp

TOL = 1e-9


def problems(seed: int):
    """One adversarial problem per family, drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(6, 20)), int(rng.integers(1, 4))
    X = rng.normal(size=(n, d)) * 10.0 ** rng.uniform(-4, 4) + rng.choice([0.0, 1e3, 1e4])
    if seed % 3 == 0:
        X[1] = X[0]  # a duplicate with the opposite label
    y = np.where(rng.random(n) < 0.5, -1, 1)
    y[:2] = [1, -1]
    C = 10.0 ** rng.uniform(-4, 5)
    sw = np.where(rng.random(n) < 0.2, 0.0, rng.uniform(0.5, 2, n))
    labels = rng.integers(0, 3, n)
    sep = X + 3.0 * np.std(X, axis=0) * y[:, None]
    return {
        "binary": qpsvm.SoftMarginPrimal(X, y, C=C),
        "weighted": qpsvm.SoftMarginPrimal(X, y, C=C, sample_weight=sw),
        "no intercept": qpsvm.SoftMarginPrimal(X, y, C=C, fit_intercept=False),
        "dual linear": qpsvm.SoftMarginDual(X, y, C=C),
        "hard margin": qpsvm.HardMargin(sep, y),
        "ranking": qpsvm.RankingSVM(X, y=labels, C=C),
        "crammer_singer": qpsvm.MulticlassSVM(X, labels, C=C),
        "weston_watkins": qpsvm.MulticlassSVM(X, labels, C=C, variant="weston_watkins"),
    }


def exact_qp(name, f):
    if name in ("crammer_singer", "weston_watkins"):
        return multiclass_qp(f)
    return ranking_qp(f) if name == "ranking" else binary_qp(f)


def audit(n_problems: int) -> dict:
    stats: dict = {}
    for seed in range(n_problems):
        for name, f in problems(seed).items():
            s = stats.setdefault(
                name,
                {
                    "certs": 0,
                    "crash": 0,
                    "miss": 0,
                    "false": 0,
                    "dist": 0,
                    "ratios": [],
                    "skip": 0,
                    "oracle": [],
                    "alpha": [],
                },
            )
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    tic = time.perf_counter()
                    exact = f.solve(method="exact")
                    s["oracle"].append(time.perf_counter() - tic)
            except qpsvm.exceptions.QPSVMError:
                s["skip"] += 1
                continue
            opt = exact.info["exact"]
            qp = exact_qp(name, f)
            pstar = opt.objective
            rng = np.random.default_rng(seed)
            cands = []
            try:
                sol = f.solve()
                cands.append(("solve", sol, None))
                short = float(pstar) - f.dual_objective(sol.alpha)
                s["alpha"].append(short / max(1.0, abs(float(pstar))))
            except qpsvm.exceptions.QPSVMError:
                pass
            except Exception:  # solve() certifies its answer: a raw exception is a finding
                s["crash"] += 1
            wstar = np.asarray(exact.w, dtype=np.float64)
            for eps in (1e-6, 1e-4, 1e-2, 1e-1):
                noise = rng.normal(size=wstar.shape) * eps * max(1.0, np.abs(wstar).max())
                cands.append(("w", {"w": wstar + noise}, None))
            cands.append(("alpha", {"alpha": exact.alpha}, None))
            for kind, cand, _ in cands:
                s["certs"] += 1
                try:
                    cert = f.certify(**cand) if isinstance(cand, dict) else f.certify(cand)
                except Exception:  # a raw exception is a finding, counted
                    s["crash"] += 1
                    continue
                w = np.asarray(cert_w(f, kind, cand), dtype=np.float64)
                b = cert_b(f, cand, w)
                p = qp.objective(w.ravel(), Fraction(b)) if w is not None else None
                lower, upper = cert.dual_objective, cert.primal_objective
                below = lower == -math.inf or Fraction(lower) <= pstar
                above = upper == math.inf or pstar <= Fraction(upper)
                if not (below and above):
                    s["miss"] += 1
                if p is not None and p != math.inf:
                    sub = float((p - pstar) / max(1, abs(pstar)))
                    if cert.passed and sub > TOL:
                        s["false"] += 1
                    dist2 = sum(
                        (Fraction(a) - c) ** 2 for a, c in zip(w.ravel(), opt.w, strict=True)
                    )
                    if (
                        math.isfinite(cert.distance_bound)
                        and dist2 > Fraction(cert.distance_bound) ** 2
                    ):
                        s["dist"] += 1
                    true_gap = float(p - pstar)
                    if true_gap > 1e-6 * max(1.0, float(pstar)) and math.isfinite(cert.gap):
                        s["ratios"].append(cert.gap / true_gap)
    return stats


def cert_w(f, kind, cand):
    if kind == "solve":
        return cand.w
    if kind == "w":
        return cand["w"]
    return f.expansion(cand["alpha"])


def cert_b(f, cand, w):
    if not getattr(f, "fit_intercept", False):
        return 0.0
    if hasattr(cand, "b"):
        return float(cand.b)
    return float(f.optimal_intercept(f.scores(w=w)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=20)
    args = parser.parse_args()
    start = time.perf_counter()
    stats = audit(args.problems)
    print(
        f"{'family':<16}{'certs':>7}{'skip':>6}{'crash':>6}{'miss':>6}{'false':>7}{'dist':>6}"
        f"{'ratio med':>11}{'ratio max':>11}{'>2x':>6}{'alpha short':>12}{'oracle max s':>14}"
    )
    for name, s in stats.items():
        r = np.array(s["ratios"])
        med = f"{np.median(r):.3f}" if r.size else "-"
        mx = f"{np.max(r):.3g}" if r.size else "-"
        over = int(np.sum(r > 2.0)) if r.size else 0
        print(
            f"{name:<16}{s['certs']:>7}{s['skip']:>6}{s['crash']:>6}{s['miss']:>6}{s['false']:>7}"
            f"{s['dist']:>6}{med:>11}{mx:>11}{over:>6}{max(s['alpha'], default=0.0):>12.1e}"
            f"{max(s['oracle'], default=0.0):>14.2f}"
        )
    print(f"{time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()

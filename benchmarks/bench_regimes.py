"""Every regime against its specialised solver: the grid of ratios qpsvm / anchor.

Run from the repository root::

    python benchmarks/bench_regimes.py                 # the quick grid
    python benchmarks/bench_regimes.py --scale full    # the whole grid (tens of minutes)
    python benchmarks/bench_regimes.py --family sparse --json regimes.json
    python benchmarks/bench_regimes.py --equal-accuracy  # the anchors at qpsvm's accuracy too

Each point is solved by qpsvm to a passing certificate (the point fails otherwise) and by the
anchor at its defaults, in the same process; times are medians after one untimed warm call,
of the calls each side makes back to back: the point's repeat (three, one at the largest
sizes), and more while they fill less than 0.4 s (at most 1000), the same rule for qpsvm's
solve, the anchor's fit and the certificate. Every call is read in the process's CPU time
(each side single-threaded at ``OMP_NUM_THREADS=1``): three wall-time calls a side read a
ms-scale point 1.2x in one run and 2.5x in the next, the load's time slices falling on the
longer call more often. The ``cold`` family's calls run in other processes and are read in wall
time.
The grid measures the steady state: every compiled kernel is compiled (or loaded) in the warm
call, and a kernel problem takes the SMO loop from its first call. A process's first calls
otherwise take uncompiled paths (small kernel problems as the full QP, the certificate's sums
in numpy) depending on what this machine's compile cache holds for this checkout's path; the
``cold`` family measures those first calls in fresh processes with an empty cache: against
scikit-learn's first calls, and for each kind of call against the same process once its kernels
are compiled (anchor ``warm``), reported as seconds beyond warm, outside the ratios' summary:
the import and first call of the cold process beyond the best warm call (the issue's measure),
CPU and wall, and the whole cold process of three calls beyond the warm one (wall; it also
counts the compiles a first call defers to the second and third, by rent-or-buy).
The summary gives the geometric mean of the ratios and the worst point. At ``--scale full``
the anchor's calls are stopped after ``--anchor-limit`` seconds each (600 by default; libsvm's
poly kernel at n = 8000, C = 100 ran for over an hour): such a point prints its ratio as an
upper bound (``<0.30``), is listed after the summary and is left out of its geometric mean
and worst point, which therefore lean against qpsvm. A point where qpsvm
gives no certified answer is printed as ``FAILED`` with the reason and listed after the
summary, never averaged into it; the grid goes on to the next point and exits with status 1.
The JSON output (failed points as rows with a ``failed`` reason and no times) feeds the
performance profile of notebook 08.

With ``--equal-accuracy`` three more columns time each anchor at the accuracy of qpsvm's answer,
where the anchor solves qpsvm's problem itself (not a nearest one: ``-``): its stopping tolerance
is divided by ten at a time, from its default down to 1e-8 times it (iteration limits raised),
until qpsvm certifies its answer at 1e-9 (``tol x``, the factor on the default tolerance); that
fit's median time (``anchor= s``) and qpsvm's solve over it (``ratio=``). An anchor whose answer
no rung makes certifiable prints ``>1e-08``, its last rung's time and the ratio as an upper
bound (libsvm's kernel values are rounded to single precision in its cache, so its answers stop
near a relative gap of 1e-8 whatever its tolerance).

The last three columns are the certificate's cost: ``cert s`` re-certifies qpsvm's answer as a
user would, ``f.certify(solution)`` on a formulation built afresh (its construction untimed, no
cache of the solve reused); ``in-solve s`` is the time ``solve()`` spent inside the certifier;
``cert/fit`` is ``cert s`` over the anchor's fit (the target: at most 1 at every point). The
cold start has no separate certificate (``-``).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import math
import pkgutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from regimes._grid import (
    LADDER,
    SCALES,
    PointFailure,
    Timing,
    equal_accuracy,
    geometric_mean,
    time_point,
)
from regimes.cold import WARM, first_call


def families() -> list[str]:
    """Names of the family modules in benchmarks/regimes/."""
    import regimes

    modules = pkgutil.iter_modules(regimes.__path__)
    return sorted(m.name for m in modules if not m.name.startswith("_"))


#: The anchor's time limit per call of each scale (seconds; ``None``: no limit).
LIMITS = {"quick": None, "full": 600.0}

#: The certificate's columns, after the solve's.
CERT_COLUMNS = ("cert s", "in-solve s", "cert/fit")


def certificate_columns(t: Timing) -> str:
    """``cert s``, ``in-solve s`` and ``cert/fit`` of one point (``-`` where it has none)."""
    if math.isnan(t.certify):
        return f"{'-':>8} {'-':>10} {'-':>8}"
    return f"{t.certify:>8.3f} {t.in_solve:>10.3f} {t.certify_ratio:>8.2f}"


#: The equal-accuracy columns (``--equal-accuracy``).
EQUAL_COLUMNS = ("tol x", "anchor= s", "ratio=")


def equal_columns(t: Timing) -> str:
    """``tol x`` (the anchor's tolerance over its default where qpsvm certifies its answer),
    ``anchor= s`` (its fit there) and ``ratio=`` (qpsvm's solve over it); ``-`` where the
    anchor solves another problem, ``>`` where no rung was certified (the last rung's time, a
    lower bound: the ratio is an upper bound)."""
    if t.equal is None:
        return f"{'-':>8} {'-':>9} {'-':>7}"
    if not t.equal.reached:
        ratio = f"<{t.qpsvm / t.equal.seconds:.2f}"
        return f"{'>' + format(LADDER[-1], 'g'):>8} {t.equal.seconds:>9.3f} {ratio:>7}"
    return f"{t.equal.scale:>8g} {t.equal.seconds:>9.3f} {t.equal_ratio:>7.2f}"


def ratio_column(t: Timing) -> str:
    """The ratio, prefixed ``<`` where the anchor was stopped at its limit (an upper bound)."""
    return f"<{t.ratio:.2f}" if t.anchor_limited else f"{t.ratio:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=SCALES, default="quick")
    parser.add_argument("--family", action="append", help="run only these families (repeatable)")
    parser.add_argument("--json", type=Path, help="write the timings to this file")
    parser.add_argument(
        "--point", action="append", help="run only points whose name contains this (repeatable)"
    )
    parser.add_argument(
        "--equal-accuracy",
        action="store_true",
        help="also time each anchor at the loosest tolerance whose answer qpsvm certifies",
    )
    parser.add_argument(
        "--anchor-limit",
        type=float,
        help="stop an anchor's call after this many seconds (default: 600 at full scale, "
        "none at quick scale; 0 for none)",
    )
    args = parser.parse_args()
    limit = args.anchor_limit if args.anchor_limit is not None else LIMITS[args.scale]

    from qpsvm import _numerics
    from qpsvm.solvers import smo

    # the steady state, whatever the compile cache holds: compiled kernels from the warm call on
    smo.FULL_QP_FIRST_CALLS = 0
    _numerics.compiled = lambda dispatcher: True
    timings: list[Timing] = []
    failures: list[tuple[str, str, str]] = []
    header = ("family", "point", "anchor", "qpsvm s", "anchor s", "ratio", *CERT_COLUMNS)
    line = "{:<11} {:<44} {:<10} {:>9} {:>9} {:>7} {:>8} {:>10} {:>8}"
    if args.equal_accuracy:
        header += EQUAL_COLUMNS
        line += " {:>8} {:>9} {:>7}"
    print(line.format(*header))
    for family in args.family or families():
        module = importlib.import_module(f"regimes.{family}")
        for point in module.points(args.scale):
            if args.point and not any(part in point.name for part in args.point):
                continue
            try:
                # a cold call's anchor is its own process's warm call: never forked
                t = time_point(point, None if point.anchor == WARM else limit or None)
            except PointFailure as failure:
                failures.append((point.family, point.name, str(failure)))
                print(f"{point.family:<11} {point.name:<44} FAILED: {failure}", flush=True)
                continue
            if args.equal_accuracy:
                t = dataclasses.replace(t, equal=equal_accuracy(point, limit or None))
            timings.append(t)
            print(
                f"{point.family:<11} {point.name:<44} {point.anchor:<10} "
                f"{t.qpsvm:>9.3f} {t.anchor:>9.3f} {ratio_column(t):>7} {certificate_columns(t)}"
                + (f" {equal_columns(t)}" if args.equal_accuracy else ""),
                flush=True,
            )
    # a cold call against its own warm call is a cost in seconds, not a ratio to an anchor
    beyond = [t for t in timings if t.point.anchor == WARM]
    for t in beyond:
        cpu, wall = first_call(t.point.name)
        print(
            f"cold {t.point.name}: first call {cpu:.2f} s CPU, {wall:.2f} s wall beyond warm; "
            f"the process's three calls {t.qpsvm - t.anchor:.2f} s beyond warm (wall)"
        )
    timings = [t for t in timings if t.point.anchor != WARM]
    report(timings, failures, args.json)
    if failures:
        sys.exit(1)


def report(timings: list[Timing], failures: list[tuple[str, str, str]], path: Path | None) -> None:
    """The summary (geometric mean, worst point, the certificate's cost), the failed points,
    and the JSON file when ``path`` is given."""
    for family, name, reason in failures:
        print(f"FAILED {family} {name}: {reason}")
    if timings:
        summary(timings)
    if path:
        rows: list[dict[str, object]] = [
            {
                "family": t.point.family,
                "point": t.point.name,
                "anchor": t.point.anchor,
                "qpsvm_seconds": t.qpsvm,
                "anchor_seconds": t.anchor,
                "ratio": t.ratio,
                "certify_seconds": None if math.isnan(t.certify) else t.certify,
                "in_solve_certify_seconds": None if math.isnan(t.in_solve) else t.in_solve,
                "anchor_limited": t.anchor_limited,
                **equal_fields(t),
            }
            for t in timings
        ]
        rows += [{"family": f, "point": n, "failed": reason} for f, n, reason in failures]
        path.write_text(json.dumps(rows, indent=2))


def equal_fields(t: Timing) -> dict[str, object]:
    """The JSON fields of the equal-accuracy timing (none where it was not measured)."""
    if t.equal is None:
        return {}
    return {
        "equal_accuracy_tol_factor": t.equal.scale if t.equal.reached else None,
        "equal_accuracy_anchor_seconds": t.equal.seconds,
    }


def summary(timings: list[Timing]) -> None:
    """The geometric mean of the ratios, the worst point and the certificate's cost; points
    whose anchor was stopped at its limit are listed apart (their ratios are upper bounds)."""
    for t in timings:
        if t.anchor_limited:
            print(
                f"anchor over its limit: {t.point.family} {t.point.name} "
                f"({t.point.anchor} > {t.anchor:g} s, qpsvm {t.qpsvm:.3f} s)"
            )
    timings = [t for t in timings if not t.anchor_limited]
    if not timings:
        return
    worst = max(timings, key=lambda t: t.ratio)
    print(f"\ngeometric mean of ratios: {geometric_mean([t.ratio for t in timings]):.2f}")
    where = f"{worst.point.family} {worst.point.name}"
    print(f"worst point: {where} ({worst.ratio:.2f}x {worst.point.anchor})")
    certified = [t for t in timings if not math.isnan(t.certify)]
    if certified:
        held = sum(t.certify <= t.anchor for t in certified)
        worst = max(certified, key=lambda t: t.certify_ratio)
        print(
            f"certificate <= anchor fit: {held} of {len(certified)} points; worst "
            f"{worst.point.family} {worst.point.name} ({worst.certify_ratio:.2f}x "
            f"{worst.point.anchor}'s fit)"
        )
    equal = [t for t in timings if not math.isnan(t.equal_ratio)]
    if equal:
        worst = max(equal, key=lambda t: t.equal_ratio)
        within = sum(t.equal_ratio <= 2 for t in equal)
        mean = geometric_mean([t.equal_ratio for t in equal])
        print(
            f"at equal accuracy: geometric mean {mean:.2f}"
            f" over {len(equal)} points, {within} within 2x; worst {worst.point.family} "
            f"{worst.point.name} ({worst.equal_ratio:.2f}x)"
        )
    for t in timings:
        if t.equal is not None and not t.equal.reached:
            print(
                f"not certified at any tolerance down to {LADDER[-1]:g}x the default: "
                f"{t.point.family} {t.point.name} ({t.point.anchor})"
            )


if __name__ == "__main__":
    main()

"""The cold start: a fresh process with an empty compile cache, import to certified answer.

Each call runs a new Python process with ``QPSVM_CACHE_DIR`` pointing at a new empty directory
(so every numba kernel the call needs is compiled, as after an install), imports qpsvm, solves
an RBF problem (n=500) and a linear one and certifies them. The anchor is the same in a fresh
process with scikit-learn (import, ``SVC`` and ``LinearSVC`` fits). The issue's target: the cold
call costs at most ~2 s beyond the warm one.

Run as a module (``cd benchmarks && python -m regimes.cold``) it says where the cold time goes: the
same call in a fresh process, once with an empty cache, once with the cache it filled, and once
more after a process compiled the SMO loop (``method="working_set"``: the warm call; a small
kernel problem is solved as the full QP until its kernels are compiled), with the import time,
each solve's first and second call, and every function numba compiled (its signatures, and its
compile time with and without the callees compiled inside it), from numba's ``numba:compile``
events. Times are CPU seconds of the process (less sensitive than wall time to other work on
shared cores).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from regimes._grid import Point

DATA = """
import numpy as np
rng = np.random.default_rng(0)
X = rng.normal(size=(500, 20)); y = np.where(X[:, 0] + 0.3 * rng.normal(size=500) > 0, 1, -1)
"""

OURS = (
    DATA
    + """
import qpsvm
f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf", gamma=0.05)
g = qpsvm.SoftMarginPrimal(X, y, C=1.0)
assert f.solve().certificate.passed and g.solve().certificate.passed
"""
)

ANCHOR = (
    DATA
    + """
from sklearn.svm import SVC, LinearSVC
SVC(C=1.0, gamma=0.05).fit(X, y)
LinearSVC(C=1.0, loss="hinge", dual=True, max_iter=100000).fit(X, y)
"""
)


@dataclass(frozen=True)
class Passed:
    """The certificate stand-in of a subprocess that exited 0 (its script asserts it)."""

    passed: bool


def _environment(cache: str) -> dict[str, str]:
    """A bare environment with ``QPSVM_CACHE_DIR=cache`` that imports qpsvm from this checkout
    (not whichever copy the interpreter has installed)."""
    root = str(Path(__file__).resolve().parents[2])
    return {"QPSVM_CACHE_DIR": cache, "PATH": "/usr/bin:/bin", "HOME": cache, "PYTHONPATH": root}


def run_cold(script: str) -> Passed:
    """Run ``script`` in a fresh interpreter with an empty qpsvm compile cache."""
    with tempfile.TemporaryDirectory(prefix="qpsvm-cold-") as cache:
        subprocess.run([sys.executable, "-c", script], check=True, env=_environment(cache))
    return Passed(True)


PROFILE = (
    """
import json, time
from numba.core import event

clock = time.process_time
compiled, stack = {}, []


class Compiles(event.Listener):
    def on_start(self, ev):
        stack.append([clock(), 0.0])

    def on_end(self, ev):
        start, inner = stack.pop()
        spent = clock() - start
        if stack:
            stack[-1][1] += spent
        f = ev.data["dispatcher"].py_func
        row = compiled.setdefault(f.__module__ + "." + f.__qualname__, [0, 0.0, 0.0, len(stack)])
        row[0] += 1
        row[1] += spent
        row[2] += spent - inner


event.register("numba:compile", Compiles())
t0 = clock()
"""
    + DATA
    + """
import qpsvm
times = {"import": clock() - t0}
for name, build in [
    ("rbf", lambda: qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf", gamma=0.05)),
    ("linear", lambda: qpsvm.SoftMarginPrimal(X, y, C=1.0)),
]:
    for call in ("first", "second"):
        t = clock()
        assert build().solve().certificate.passed
        times[name + " " + call] = clock() - t
times["total"] = clock() - t0
print(json.dumps({"times": times, "compiled": compiled}))
"""
)


def profile(cache: str) -> dict:
    """The profile (:data:`PROFILE`) of one fresh process with ``QPSVM_CACHE_DIR=cache``."""
    out = subprocess.run(
        [sys.executable, "-c", PROFILE],
        check=True,
        env=_environment(cache),
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.splitlines()[-1])


#: A process that compiles the SMO loop (and what the rbf solve's working set calls) into the cache.
COMPILE_SMO = (
    DATA
    + """
import qpsvm
qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf", gamma=0.05).solve(method="working_set")
"""
)


def main() -> None:
    """Print the cold, the cached and the compiled (warm) profile of the cold point's call."""
    with tempfile.TemporaryDirectory(prefix="qpsvm-cold-") as cache:
        cold, cached = profile(cache), profile(cache)
        subprocess.run([sys.executable, "-c", COMPILE_SMO], check=True, env=_environment(cache))
        warm = profile(cache)
    print(f"{'CPU seconds':<16}{'empty cache':>12}{'filled cache':>13}{'SMO compiled':>13}")
    for key in cold["times"]:
        times = (cold["times"][key], cached["times"][key], warm["times"][key])
        print(f"{key:<16}{times[0]:>12.2f}{times[1]:>13.2f}{times[2]:>13.2f}")
    rows = cold["compiled"]
    print(f"\ncompiled with an empty cache ({len(rows)} functions; self = without callees)")
    print(f"{'signatures':>10}{'total':>8}{'self':>7}  function (depth)")
    for name, (n, total, own, depth) in sorted(rows.items(), key=lambda r: -r[1][2]):
        print(f"{n:>10}{total:>8.2f}{own:>7.2f}  {name} ({depth})")
    top = sum(r[1] for r in rows.values() if r[3] == 0)
    print(f"compile time {top:.2f} s; with a filled cache {len(cached['compiled'])} compiled")
    print(f"warm (SMO compiled): {len(warm['compiled'])} compiled")


def points(scale: str) -> list[Point]:
    return [
        Point(
            "cold",
            "import + compile + RBF n=500 + linear n=500, certified",
            "sklearn",
            lambda: run_cold(OURS),
            lambda: run_cold(ANCHOR),
            repeat=1 if scale == "quick" else 3,
        )
    ]


if __name__ == "__main__":
    main()

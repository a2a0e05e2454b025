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

``python -m regimes.cold --kinds`` measures the cold first call of each kind of call in the grid
(:data:`KINDS`): a fresh process with an empty cache (import, then the call), against the same
call once every kernel it takes is compiled (a process whose cache a compiled-paths process
filled, its best of three calls), and prints the seconds beyond warm, CPU and wall. The grid's
``cold`` family has one point per kind (anchor ``warm``: the same script in a fresh process
with the filled cache), which the grid's summary reports as seconds beyond warm rather than
among the ratios: the first call's (:func:`first_call`, from the times each process printed)
and the whole process's.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
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


#: Variables passed on to the fresh processes: on shared cores, BLAS threads left to spin
#: cost CPU time that is not the call's (OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 as for every
#: benchmark).
THREAD_LIMITS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _environment(cache: str) -> dict[str, str]:
    """A bare environment with ``QPSVM_CACHE_DIR=cache`` that imports qpsvm from this checkout
    (not whichever copy the interpreter has installed), with this process's thread limits."""
    root = str(Path(__file__).resolve().parents[2])
    env = {"QPSVM_CACHE_DIR": cache, "PATH": "/usr/bin:/bin", "HOME": cache, "PYTHONPATH": root}
    return env | {k: os.environ[k] for k in THREAD_LIMITS if k in os.environ}


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


#: A process that compiles the SMO loop (and what the rbf solve's working set calls) into the
#: cache (with no problem small enough for numpy's SMO steps, which a cold call would take).
COMPILE_SMO = (
    DATA
    + """
import qpsvm
from qpsvm.solvers import smo
smo.NUMPY_SMO_SAMPLES = 0
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


#: Each kind of call of the grid's families, as a script that defines ``build`` (the
#: formulation) and, where the call is not the default ``solve()``, ``solve``.
KINDS = {
    "binary dense n=2000 d=20": """
rng = np.random.default_rng(0); X = rng.normal(size=(2000, 20))
y = np.where(X[:, 0] + 0.3 * rng.normal(size=2000) > 0, 1, -1)
build = lambda: qpsvm.SoftMarginPrimal(X, y, C=1.0)""",
    "sparse n<d n=1000 d=5000": """
import scipy.sparse as sp
rng = np.random.default_rng(0)
X = sp.random(1000, 5000, density=0.004, format="csr", random_state=0)
y = np.where(X @ rng.normal(size=5000) > 0, 1, -1)
build = lambda: qpsvm.SoftMarginPrimal(X, y, C=1.0)""",
    "sparse n>d n=5000 d=500": """
import scipy.sparse as sp
rng = np.random.default_rng(0)
X = sp.random(5000, 500, density=0.02, format="csr", random_state=0)
y = np.where(X @ rng.normal(size=500) + 0.1 * rng.normal(size=5000) > 0, 1, -1)
build = lambda: qpsvm.SoftMarginPrimal(X, y, C=1.0)""",
    "kernel rbf n=500": """
rng = np.random.default_rng(0); X = rng.normal(size=(500, 20))
y = np.where(X[:, 0] + 0.3 * rng.normal(size=500) > 0, 1, -1)
build = lambda: qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf", gamma=0.05)""",
    "kernel rbf n=2000": """
rng = np.random.default_rng(0); X = rng.normal(size=(2000, 20))
y = np.where(X[:, 0] + 0.3 * rng.normal(size=2000) > 0, 1, -1)
build = lambda: qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf", gamma=0.05)""",
    "multiclass CS n=1000 k=5": """
rng = np.random.default_rng(0); X = rng.normal(size=(1000, 20))
y = np.argmax(X[:, :5] + 0.5 * rng.normal(size=(1000, 5)), axis=1)
build = lambda: qpsvm.MulticlassSVM(X, y, C=1.0, variant="crammer_singer")""",
    "multiclass WW n=1000 k=5": """
rng = np.random.default_rng(0); X = rng.normal(size=(1000, 20))
y = np.argmax(X[:, :5] + 0.5 * rng.normal(size=(1000, 5)), axis=1)
build = lambda: qpsvm.MulticlassSVM(X, y, C=1.0, variant="weston_watkins")""",
    "ranking binary 200x40 d=40": """
from regimes.ranking import ranking_data
X, y, g = ranking_data(200, 40, 40, False)
build = lambda: qpsvm.RankingSVM(X, y=y, groups=g, C=0.01)
solve = lambda f: f.solve(method="one_slack")""",
    "ranking graded 200x40 d=40": """
from regimes.ranking import ranking_data
X, y, g = ranking_data(200, 40, 40, True)
build = lambda: qpsvm.RankingSVM(X, y=y, groups=g, C=0.01)
solve = lambda f: f.solve(method="one_slack")""",
    "structural chain n=120": """
from qpsvm.datasets import make_chains
from qpsvm.models import ChainModel
data = make_chains(n_sequences=120, n_features=32, n_states=8, random_state=0)
model = ChainModel(data.n_features, data.n_states)
build = lambda: qpsvm.StructuralSVM(model, data.X, data.Y, C=0.1)""",
    "small binary n=100": """
rng = np.random.default_rng(0); X = rng.normal(size=(100, 10))
y = np.where(X[:, 0] + 0.3 * rng.normal(size=100) > 0, 1, -1)
build = lambda: qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False)""",
}

#: Before a kind's script: the clocks started before the import.
KIND_HEAD = """
import json, sys, time
sys.path.insert(0, {benchmarks!r})
cpu, wall = time.process_time, time.perf_counter
c0, w0 = cpu(), wall()
import numpy as np
import qpsvm
out = {{"import": (cpu() - c0, wall() - w0)}}
solve = lambda f: f.solve()
"""

#: After it: with ``compiled``, every compiled path taken (as the grid and the tests take them);
#: then three calls, each certified, timed.
KIND_TAIL = """
if {compiled}:
    from qpsvm import _numerics
    from qpsvm.solvers import smo
    smo.FULL_QP_FIRST_CALLS = 0
    _numerics.compiled = lambda dispatcher: True
for call in ("first", "second", "third"):
    c, w = cpu(), wall()
    assert solve(build()).certificate.passed
    out[call] = (cpu() - c, wall() - w)
print(json.dumps(out))
"""


def kind_script(kind: str, compiled: bool) -> str:
    """The script of one kind of call (:data:`KINDS`), taking every compiled path or not."""
    benchmarks = str(Path(__file__).resolve().parents[1])
    head = KIND_HEAD.format(benchmarks=benchmarks)
    return head + KINDS[kind] + KIND_TAIL.format(compiled=compiled)


def run_kind(kind: str, cache: str, compiled: bool = False) -> dict:
    """The times (CPU, wall) of the import and three calls of ``kind`` in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", kind_script(kind, compiled)],
        check=True,
        env=_environment(cache),
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.splitlines()[-1])


#: The calls each kind's script times, after its import.
CALLS = ("first", "second", "third")


def first_call_beyond_warm(cold: list[dict], warm: list[dict]) -> tuple[float, float]:
    """Seconds (CPU, wall) of the import and first call of the median ``cold`` process (empty
    cache) beyond the best call of the ``warm`` ones (their kernels compiled): the issue's
    measure, "a cold first call costs at most ~2 s beyond the warm one"."""
    return tuple(
        statistics.median(run["import"][i] + run["first"][i] for run in cold)
        - min(run[call][i] for run in warm for call in CALLS)
        for i in (0, 1)
    )


def beyond_warm(kind: str) -> tuple[float, float]:
    """:func:`first_call_beyond_warm` of ``kind`` in a fresh process with an empty cache,
    against a process whose cache a compiled-paths process filled."""
    with tempfile.TemporaryDirectory(prefix="qpsvm-cold-") as empty:
        cold = run_kind(kind, empty)
    with tempfile.TemporaryDirectory(prefix="qpsvm-warm-") as filled:
        run_kind(kind, filled, compiled=True)
        warm = run_kind(kind, filled, compiled=True)
    return first_call_beyond_warm([cold], [warm])


def kinds_table() -> None:
    """Print each kind's cold cost beyond warm (:func:`beyond_warm`)."""
    print(f"{'kind of call':<30}{'CPU s':>8}{'wall s':>8}  beyond warm, load")
    for kind in KINDS:
        cpu, wall = beyond_warm(kind)
        print(f"{kind:<30}{cpu:>8.2f}{wall:>8.2f}  {os.getloadavg()[0]:.1f}", flush=True)


#: The times (:func:`run_kind`) of every process the grid's cold points ran, by kind and
#: whether its kernels were compiled: each point's first call beyond warm is read off them.
RUNS: dict[tuple[str, bool], list[dict]] = defaultdict(list)


def cold_kind(kind: str) -> Passed:
    """``kind``'s script in a fresh interpreter with an empty compile cache (its times kept in
    :data:`RUNS`)."""
    with tempfile.TemporaryDirectory(prefix="qpsvm-cold-") as empty:
        RUNS[kind, False].append(run_kind(kind, empty))
    return Passed(True)


def warm_kind(kind: str, cache: str) -> Passed:
    """``kind``'s script in a fresh interpreter with the compile cache ``cache`` (filled by the
    grid's untimed first call; its times kept in :data:`RUNS`)."""
    RUNS[kind, True].append(run_kind(kind, cache, compiled=True))
    return Passed(True)


def first_call(kind: str) -> tuple[float, float]:
    """The first call of ``kind`` beyond warm (:func:`first_call_beyond_warm`) over the
    processes its grid point ran."""
    return first_call_beyond_warm(RUNS[kind, False], RUNS[kind, True])


#: The anchor of the cold points per kind: the same process with a filled compile cache.
WARM = "warm"


def points(scale: str) -> list[Point]:
    repeat = 1 if scale == "quick" else 3
    out = [
        Point(
            "cold",
            "import + compile + RBF n=500 + linear n=500, certified",
            "sklearn",
            lambda: run_cold(OURS),
            lambda: run_cold(ANCHOR),
            repeat=repeat,
            clock=time.perf_counter,  # the calls run in other processes
        )
    ]
    warm = tempfile.mkdtemp(prefix="qpsvm-warm-")
    for kind in KINDS:
        cache = os.path.join(warm, str(len(out)))
        out.append(
            Point(
                "cold",
                kind,
                WARM,
                lambda kind=kind: cold_kind(kind),
                lambda kind=kind, cache=cache: warm_kind(kind, cache),
                repeat=repeat,
                clock=time.perf_counter,
            )
        )
    return out


if __name__ == "__main__":
    if "--kinds" in sys.argv:
        kinds_table()
    else:
        main()

"""The regime grid's rules (``benchmarks/regimes/_grid.py``): qpsvm's timed calls run as the
anchor's do, back to back, with the time spent inside the certifiers read per call, as many
calls on each side as fill the grid's budget; and the equal-accuracy ladder, the anchor timed
at the loosest of its tolerances whose answer qpsvm certifies."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qpsvm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from regimes import _grid
from regimes._grid import LADDER, Point, Tightened, equal_accuracy, liblinear_at


def _point(calls: list[bool]) -> _grid.Point:
    """A small certified binary solve, recording at each call whether the certifiers are
    rebound to the clock's timed wrappers; its anchor a no-op."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)

    def ours() -> qpsvm.Solution:
        import qpsvm.verify.binary as binary

        calls.append(hasattr(binary.certify_binary, "__wrapped__"))
        return f.solve()

    return _grid.Point("small", "test", "none", ours, lambda: None, 3, lambda: f)


class FakeClock:
    """A clock that only the calls under test move, each by its own duration."""

    def __init__(self) -> None:
        self.now = 0.0
        self.calls = 0

    def __call__(self) -> float:
        return self.now

    def call(self, seconds: Callable[[int], float]) -> Callable[[], None]:
        """A callable whose ``k``-th call (from 0) lasts ``seconds(k)`` on this clock."""

        def run() -> None:
            self.now += seconds(self.calls)
            self.calls += 1

        return run


@pytest.mark.parametrize(
    ("seconds", "repeat", "calls"),
    [
        (1 / 64, 3, 32),  # short calls: until they fill the budget of 0.5 s
        (1.0, 3, 3),  # long calls: the point's repeat, as before the budget
        (1.0, 1, 1),
        (1 / 4, 1, 2),
        (2.0**-30, 3, 50),  # the shortest: the most calls a side makes
    ],
)
def test_a_side_is_timed_until_its_calls_fill_the_budget(monkeypatch, seconds, repeat, calls):
    monkeypatch.setattr(_grid, "BUDGET", 0.5)
    monkeypatch.setattr(_grid, "MOST_CALLS", 50)
    clock = FakeClock()
    assert _grid.median_time(clock.call(lambda k: seconds), repeat, clock) == seconds
    assert clock.calls == calls


def test_the_anchors_forked_child_stops_where_its_parent_does(monkeypatch):
    # the k-th call lasts k / 1024 s: 32 timed calls fill 0.5 s (528 / 1024), median
    # 16.5 / 1024, only if the parent stops receiving where the child stops calling; the
    # child's first call is its untimed warm one, of 0 s
    monkeypatch.setattr(_grid, "BUDGET", 0.5)
    clock = FakeClock()
    limited = _grid.limited_median_time(clock.call(lambda k: k / 1024), 3, 60.0, clock)
    assert clock.calls == 0  # the calls ran in the child
    warm = clock.call(lambda k: k / 1024)
    warm()
    assert _grid.median_time(warm, 3, clock) == limited == 16.5 / 1024
    assert clock.calls == 33


@pytest.mark.parametrize("anchor_limit", [None, 60.0])
def test_every_side_of_a_point_is_timed_by_the_same_rule(monkeypatch, anchor_limit):
    monkeypatch.setattr(_grid, "BUDGET", 0.5)
    solve, anchor, certify = FakeClock(), FakeClock(), FakeClock()
    clock = FakeClock()
    point = _point([])
    ours = clock.call(lambda k: 1 / 64)
    reference = clock.call(lambda k: 1 / 8)
    check = clock.call(lambda k: 1 / 4)

    def solved() -> Any:
        solve.calls += 1
        answer = point.qpsvm()
        ours()
        return answer

    def fitted() -> None:
        anchor.calls += 1
        reference()

    class Formulation:
        def __init__(self) -> None:
            self.f = point.formulation()

        def certify(self, answer: Any) -> Any:
            certify.calls += 1
            check()
            return self.f.certify(answer)

    timed = dataclasses.replace(
        point, qpsvm=solved, reference=fitted, formulation=Formulation, clock=clock
    )
    timing = _grid.time_point(timed, anchor_limit)
    assert (timing.qpsvm, timing.anchor, timing.certify) == (1 / 64, 1 / 8, 1 / 4)
    # after the untimed first call of each: 32 x 1/64 s, 4 x 1/8 s, the point's 3 x 1/4 s
    assert solve.calls == 1 + 32
    assert certify.calls == 1 + 3
    # the anchor's calls run in the forked child when limited
    assert anchor.calls == (0 if anchor_limit else 1 + 4)


def test_timed_calls_share_one_clock(monkeypatch):
    # the clock's setup walks sys.modules and rebinds the certifiers: run between the timed
    # calls it left each with cold caches (20 x 10 ranking: 100 -> 230 us), which the
    # anchor's back-to-back calls never pay; it now runs once, before them
    entered = []
    running = _grid.CertifierClock.running

    @contextlib.contextmanager
    def counted(self):
        entered.append(True)
        with running(self) as clock:
            yield clock

    monkeypatch.setattr(_grid.CertifierClock, "running", counted)
    monkeypatch.setattr(_grid, "BUDGET", 0.0)  # the point's three calls a side
    calls: list[bool] = []
    timing = _grid.time_point(_point(calls))
    assert len(entered) == 1
    # the untimed warm call outside the clock, the three timed calls inside it
    assert calls == [False, True, True, True]
    # each call's share inside the certifiers is its own, never the running total
    assert 0.0 < timing.in_solve <= timing.qpsvm


def test_certifiers_restored_after_timing():
    import qpsvm.verify.binary as binary

    fn = binary.certify_binary
    _grid.time_point(_point([]))
    assert binary.certify_binary is fn


def test_clock_passes_over_nameless_entries_of_sys_modules(monkeypatch):
    # Cython puts its shadow ``cython.parallel`` (an object without ``__name__``) into
    # sys.modules when scikit-learn or dlib import it: the clock's walk over the loaded
    # modules raised AttributeError on it, and the ranking and small families never ran
    import qpsvm.verify.binary as binary

    monkeypatch.setitem(sys.modules, "nameless_stand_in", object())
    monkeypatch.setattr(_grid, "BUDGET", 0.0)
    calls: list[bool] = []
    _grid.time_point(_point(calls))
    assert calls == [False, True, True, True]
    assert not hasattr(binary.certify_binary, "__wrapped__")


def _ladder_point(
    tightened: Tightened | None, clock: Callable[[], float] = time.process_time
) -> Point:
    return Point(
        "small", "stand-in", "anchor", lambda: None, lambda: None, 1, None, tightened, clock
    )


def test_the_ladder_stops_at_the_first_certified_tolerance(monkeypatch):
    monkeypatch.setattr(_grid, "BUDGET", 0.5)
    clock = FakeClock()
    fits = []
    last = clock.call(lambda k: 1 / 4)

    def fit(factor: float) -> float:
        fits.append(factor)
        last()
        return factor

    point = _ladder_point(Tightened(fit, lambda factor: factor <= 1e-3), clock)
    result = equal_accuracy(point)
    assert result is not None and result.reached
    assert (result.scale, result.seconds) == (1e-3, 1 / 4)
    # one untimed call per rung up to the certified one, then the timed ones, as the
    # anchor's: two of 1/4 s fill the budget of 0.5 s
    assert fits == [*LADDER[:4], 1e-3, 1e-3]


def test_an_anchor_never_certified_is_reported_as_not_reached():
    result = equal_accuracy(_ladder_point(Tightened(lambda factor: factor, lambda model: False)))
    assert result is not None and not result.reached and math.isnan(result.scale)


def test_a_limit_ends_the_ladder_at_the_rung_that_ran_over_it():
    fits = []
    stopped = _ladder_point(Tightened(lambda factor: fits.append(factor), lambda model: False))
    result = equal_accuracy(stopped, limit=0.0)
    assert fits == [LADDER[0]] and not result.reached


def test_a_point_whose_anchor_solves_another_problem_has_no_ladder():
    assert equal_accuracy(_ladder_point(None)) is None


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_liblinear_is_certified_at_the_rung_found_and_not_at_the_one_before():
    # the hinge without intercept: liblinear's default tolerance leaves a relative gap far
    # above 1e-9 on this problem, a tighter one reaches it; the seeded order of coordinates
    # makes each rung's fit the same every time
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 8))
    y = np.where(X @ rng.normal(size=8) + 0.8 * rng.normal(size=300) > 0, 1, -1)
    f = qpsvm.SoftMarginPrimal(X, y, C=10.0, loss="hinge", intercept="none")
    fit = liblinear_at(X, y, C=10.0, loss="hinge", fit_intercept=False)
    result = equal_accuracy(_ladder_point(Tightened(fit, lambda m: f.certify(m).passed)))
    assert result.reached and result.scale < 1.0
    assert f.certify(fit(result.scale)).passed
    assert not f.certify(fit(result.scale * 10)).passed


def test_cold_first_call_is_the_median_cold_import_and_first_call_beyond_the_best_warm_call():
    # the measure: a cold first call (import included) against the warm one; the
    # second and third calls of the cold process (compiles deferred to them) are not in it
    from regimes.cold import first_call_beyond_warm

    def run(first: float, rest: float) -> dict:
        return {"import": (0.5, 0.6), "first": (first, first + 0.1)} | {
            call: (rest, rest + 0.1) for call in ("second", "third")
        }

    cold = [run(2.0, 9.0), run(1.0, 9.0), run(3.0, 9.0)]
    warm = [run(0.4, 0.3), run(0.2, 0.25)]
    cpu, wall = first_call_beyond_warm(cold, warm)
    assert cpu == pytest.approx(0.5 + 2.0 - 0.2)  # median of 2.5, 1.5, 3.5 less the best 0.2
    assert wall == pytest.approx(0.6 + 2.1 - 0.3)


@settings(max_examples=60, deadline=None)
@given(
    labels=st.lists(st.integers(0, 4), min_size=1, max_size=30),
    n_queries=st.integers(1, 4),
)
def test_dlib_pairs_are_the_problems_pairs_one_each(labels, n_queries):
    # dlib averages its hinge over every relevant-nonrelevant combination of its ranking_pairs;
    # the ranking_pairs of a query's levels (binary or graded) list each pair y_i > y_j of a
    # query exactly once, so dlib's c and qpsvm's C = c / n_pairs state the same problem
    pytest.importorskip("dlib")
    from regimes.ranking import dlib_pairs

    y = np.array(labels)
    groups = np.arange(y.size) % n_queries
    X = np.arange(y.size, dtype=float)[:, None]  # each item's one feature names it
    data = dlib_pairs(X, y, groups)
    assert all(len(p.relevant) and len(p.nonrelevant) for p in data)  # dlib refuses empty sides
    listed = sorted((int(a[0]), int(b[0])) for p in data for a in p.relevant for b in p.nonrelevant)
    n = y.size
    pairs = [(i, j) for i in range(n) for j in range(n) if groups[i] == groups[j] and y[i] > y[j]]
    assert listed == sorted(pairs)
    if pairs:
        assert len(listed) == qpsvm.RankingSVM(X, y=y, groups=groups).n_pairs

"""The regime grid's rules (``benchmarks/regimes/_grid.py``): qpsvm's timed calls run as the
anchor's do, back to back, with the time spent inside the certifiers read per call; and the
equal-accuracy ladder, the anchor timed at the loosest of its tolerances whose answer qpsvm
certifies."""

from __future__ import annotations

import contextlib
import math
import sys
from pathlib import Path

import numpy as np
import pytest

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
    calls: list[bool] = []
    _grid.time_point(_point(calls))
    assert calls == [False, True, True, True]
    assert not hasattr(binary.certify_binary, "__wrapped__")


def _ladder_point(tightened: Tightened | None) -> Point:
    return Point("small", "stand-in", "anchor", lambda: None, lambda: None, 1, None, tightened)


def test_the_ladder_stops_at_the_first_certified_tolerance():
    fits = []

    def fit(factor: float) -> float:
        fits.append(factor)
        return factor

    result = equal_accuracy(_ladder_point(Tightened(fit, lambda factor: factor <= 1e-3)))
    assert result is not None and result.reached
    assert result.scale == 1e-3
    # one untimed call per rung up to the certified one, then the timed one
    assert fits == [*LADDER[:4], 1e-3]


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

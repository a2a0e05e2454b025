"""``qpsvm demo``, the README's main job: every formulation certified, the online solvers checked
against the exact optima, scikit-learn's answers informational."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import qpsvm
import qpsvm.demo
from qpsvm.cli import EXIT_CERTIFIED, EXIT_NOT_CERTIFIED, _status_line, main
from qpsvm.datasets import load_iris_binary
from qpsvm.demo import Case, Report
from qpsvm.exceptions import UncertifiedSolutionError


@dataclass
class DemoRun:
    """One in-process run of ``qpsvm demo``."""

    code: int
    out: str
    report: Report


@pytest.fixture(scope="module")
def demo() -> DemoRun:
    """``main(["demo"])`` run once for the module, with the report its ``run`` returned."""
    reports: list[Report] = []
    run = qpsvm.demo.run

    def recording(*args: Any, **kwargs: Any) -> Report:
        reports.append(run(*args, **kwargs))
        return reports[-1]

    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out):
        patch.setattr(qpsvm.demo, "run", recording)
        code = main(["demo"])
    (report,) = reports
    return DemoRun(code, out.getvalue(), report)


def rows(out: str, case: Case) -> list[str]:
    """The output lines of a case: its name, then its data set."""
    return [
        line for line in out.splitlines() if line.startswith(f"{case.name} ") and case.data in line
    ]


def test_exit_code_is_zero_and_every_qpsvm_answer_is_certified(demo):
    assert demo.code == EXIT_CERTIFIED
    assert demo.report.certified and demo.report.failures == []
    assert "all qpsvm answers certified" in demo.out
    for r in demo.report.exact:
        # the default certificate: the answer is exact to 1e-9 relative, from the data alone
        assert r.passed and r.certificate.relative_gap <= 1e-9, r.case.name
        (line,) = [line for line in rows(demo.out, r.case) if r.solution.method in line]
        assert line.split()[-2] == "yes", line


def test_every_formulation_has_a_row(demo):
    families = {
        (type(r.case.formulation).__name__, getattr(r.case.formulation, "variant", None))
        for r in demo.report.exact
    }
    assert families == {
        ("HardMargin", None),
        ("SoftMarginPrimal", None),
        ("SoftMarginDual", None),
        ("RankingSVM", None),
        ("MulticlassSVM", "crammer_singer"),
        ("MulticlassSVM", "weston_watkins"),
        ("StructuralSVM", None),
    }
    by_name = {r.case.name.strip(): r.case.formulation for r in demo.report.exact}
    duals = [f for f in by_name.values() if isinstance(f, qpsvm.SoftMarginDual)]
    assert {f.kernel.name for f in duals} == {"linear", "rbf"}
    # weighted slack and weighted margins differ from the defaults (s_i = m_i = 1)
    assert np.ptp(by_name["weighted slack"].sample_weight) > 0
    assert np.ptp(by_name["weighted margins"].margin) > 0
    assert {r.solution.method for r in demo.report.exact} >= {"qp", "working_set", "cutting_plane"}
    for r in demo.report.exact:
        assert rows(demo.out, r.case), f"no row for {r.case.name} on {r.case.data}"


def test_every_online_solver_is_compared(demo):
    # subgradient descent for every family that has it (the hard margin lists it with the binary
    # formulations but refuses it: no finite lambda), SMO for the dual with both kernels
    with_subgradient = {
        type(r.case.formulation).__name__
        for r in demo.report.exact
        if "subgradient" in r.case.formulation.methods
    } - {"HardMargin", "SoftMarginDual"}
    compared = {(type(r.case.formulation).__name__, r.solution.method) for r in demo.report.online}
    assert compared == {(name, "subgradient") for name in with_subgradient} | {
        ("SoftMarginDual", "smo")
    }
    kernels = {
        r.case.formulation.kernel.name
        for r in demo.report.online
        if isinstance(r.case.formulation, qpsvm.SoftMarginDual)
    }
    assert kernels == {"linear", "rbf"}


def test_online_rows_obey_the_certificates(demo):
    assert demo.report.online
    for r in demo.report.online:
        c = r.comparison
        cand, ref = c.certificate, c.reference_certificate
        # the reference is the exact optimum: its own gap is within the 1e-9 certificate
        assert c.reference_gap <= 1e-9 * max(1.0, abs(r.reference_objective))
        # weak duality, no allowance: P* >= the reference's lower end, P(w) <= the candidate's
        # upper end, and both enclosures contain P*
        assert ref.lower <= cand.upper and cand.lower <= ref.upper, r.case.name
        # strong convexity: ||w - w*|| <= sqrt(2 gap) + sqrt(2 gap*), checked (by bounds_hold)
        # on a proven lower bound of the distance
        assert 0.0 <= c.distance_lower <= c.distance
        assert r.bounds_hold
        (line,) = [line for line in rows(demo.out, r.case) if f" {r.solution.method} " in line]
        assert line.split()[-2] == "yes", line


def test_sklearn_rows_are_informational(demo):
    names = [r.name for r in demo.report.sklearn]
    assert names == ["SVC(kernel='linear')", "LinearSVC(loss='hinge')", "SVC(kernel='rbf')"]
    for name in names:
        assert name in demo.out
    # libsvm and liblinear stop at tolerances far looser than 1e-9: not certified, yet exit 0
    assert not any(r.certificate.passed for r in demo.report.sklearn)
    assert demo.code == EXIT_CERTIFIED


def test_output_fits_a_100_column_terminal(demo):
    assert max(len(line) for line in demo.out.splitlines()) <= 100


def test_an_uncertified_answer_fails_the_demo(monkeypatch, capsys):
    iris = load_iris_binary()
    f = qpsvm.HardMargin(iris.X, iris.y)

    def fail(*args: Any, **kwargs: Any) -> None:
        raise UncertifiedSolutionError("the backend stopped early")

    monkeypatch.setattr(f, "solve", fail)
    monkeypatch.setattr(qpsvm.demo, "cases", lambda C: [Case("HardMargin", "iris-2", f)])
    assert main(["demo"]) == EXIT_NOT_CERTIFIED
    out = capsys.readouterr().out
    assert "the backend stopped early" in out
    assert "NOT certified (1): HardMargin on iris-2" in out


def test_status_announces_each_step_then_clears(monkeypatch):
    iris = load_iris_binary()
    case = Case("HardMargin", "iris-2", qpsvm.HardMargin(iris.X, iris.y))
    monkeypatch.setattr(qpsvm.demo, "cases", lambda C: [case])
    calls: list[str] = []
    report = qpsvm.demo.run(io.StringIO(), status=calls.append)
    assert report.certified
    assert calls == [
        "loading and generating the data sets ...",
        "[1/1] HardMargin on iris-2 100x2: solving exactly and certifying ...",
        "",
    ]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_status_line_only_on_a_terminal():
    terminal, pipe = _Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        show = _status_line(stream)
        show("[1/2] solving ...")
        show("")
    assert terminal.getvalue() == "\r\x1b[K[1/2] solving ...\r\x1b[K"
    assert pipe.getvalue() == ""

"""The solver-validation suite: stored instances regenerate and recertify; export and scoring."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

import qpsvm
import qpsvm.suite
from qpsvm.suite.catalogue import recipes
from qpsvm.suite.generate import EXACT_FAMILIES, certified_optimum, main, merge
from qpsvm.suite.instances import outward, w_hash
from qpsvm.suite.recipes import FAMILIES, data_hash, make_data


def _recertify(inst: qpsvm.suite.Instance) -> None:
    """The stored enclosure contains the fresh optimum: the exact rational ``P*`` for the
    oracle's families, the fresh certificate's enclosure (they must overlap) for the others."""
    f = inst.build()
    opt = inst.optimum
    if inst.family in EXACT_FAMILIES:
        exact = f.solve(method="exact").info["exact"]
        assert Fraction(opt.lower) <= exact.objective <= Fraction(opt.upper)
        assert w_hash(exact.w_float) == opt.w_sha256
    else:
        cert = f.certify(f.solve())
        assert cert.passed
        assert cert.lower <= opt.upper and opt.lower <= cert.upper


def test_outward_encloses_the_rational() -> None:
    third = Fraction(1, 3)
    lower, upper = outward(third)
    assert Fraction(lower) < third < Fraction(upper)
    assert np.nextafter(lower, 1.0) == upper  # the two neighbouring floats
    assert outward(Fraction(0.5)) == (0.5, 0.5)  # a float encloses itself


def test_small_tier_covers_every_family() -> None:
    instances = qpsvm.suite.load("small")
    assert {inst.family for inst in instances} == set(FAMILIES)
    assert len({inst.name for inst in instances}) == len(instances)
    Cs = {inst.recipe["C"] for inst in instances if "C" in inst.recipe}
    assert min(Cs) == 1e-3 and max(Cs) == 1e3
    for inst in instances:
        opt = inst.optimum
        assert opt.lower <= opt.upper
        if opt.source == "exact":
            assert opt.rigorous and np.nextafter(opt.lower, np.inf) >= opt.upper


def test_data_regenerate_bit_for_bit() -> None:
    for inst in qpsvm.suite.load("small"):
        assert data_hash(make_data(inst.recipe["data"])) == inst.data_sha256, inst.name


@pytest.mark.parametrize(
    "name",
    [
        "binary/breast_cancer/rows=60/features=5/seed=0/C=1",
        "binary/blobs/rows=60/features=5/separation=2.0/scale=bad/seed=4/C=1",
        "hard_margin/iris/features=2",
        "weighted/blobs/rows=60/features=5/separation=1.5/seed=1/C=1/weighted",
        "ranking/ranking/rows=20/features=5/queries=4/seed=8/C=1",
        "weston_watkins/wine/rows=60/features=5/seed=0/C=1",
        "kernel_rbf/blobs/rows=60/features=5/separation=1.5/seed=1/C=1",
    ],
)
def test_stored_optimum_recertifies(name: str) -> None:
    (inst,) = [i for i in qpsvm.suite.load("small") if i.name == name]
    _recertify(inst)


@pytest.mark.parametrize(
    ("tier", "name"),
    [
        ("medium", "binary/breast_cancer/rows=300/features=12/seed=0/C=1000"),
        ("medium", "crammer_singer/blobs/rows=300/features=12/classes=4/separation=2.0/seed=9/C=1"),
        ("medium", "squared_hinge_regularized/breast_cancer/rows=300/features=12/seed=0/C=1"),
        ("large", "binary/breast_cancer/rows=2000/features=30/seed=0/C=1"),
        ("large", "kernel_rbf/blobs/rows=2000/features=30/separation=1.5/seed=1/C=1"),
        ("large", "svr/diabetes/rows=2000/features=10/seed=0/C=1"),
    ],
)
def test_sample_recertifies(tier: str, name: str) -> None:
    (inst,) = [i for i in qpsvm.suite.load(tier) if i.name == name]
    assert data_hash(make_data(inst.recipe["data"])) == inst.data_sha256
    _recertify(inst)


def test_medium_tier_covers_every_family() -> None:
    instances = qpsvm.suite.load("medium")
    assert {inst.family for inst in instances} == set(FAMILIES)
    assert all(inst.optimum.rigorous for inst in instances if inst.family in EXACT_FAMILIES)


def test_large_tier_stores_every_recipe_and_covers_every_family() -> None:
    instances = qpsvm.suite.load("large")
    assert [inst.name for inst in instances] == [r["name"] for r in recipes("large")]
    assert {inst.family for inst in instances} == set(FAMILIES)
    assert all(inst.optimum.rigorous for inst in instances if inst.family in EXACT_FAMILIES)
    assert all(inst.optimum.lower <= inst.optimum.upper for inst in instances)


@pytest.mark.parametrize("tier", ["small", "medium", "large"])
def test_rbf_optima_are_rigorous(tier: str) -> None:
    # the rbf certificate proves its kernel values' rounding (verify/rigorous.py)
    instances = qpsvm.suite.load(tier, family="kernel_rbf")
    assert instances and all(inst.optimum.rigorous for inst in instances)


def test_merge_replaces_the_named_records_in_place() -> None:
    stored = [
        {"tier": "small", "name": "a", "v": 0},
        {"tier": "medium", "name": "a", "v": 1},
        {"tier": "small", "name": "b", "v": 2},
    ]
    fresh = [{"tier": "small", "name": "a", "v": 3}, {"tier": "small", "name": "c", "v": 4}]
    assert [r["v"] for r in merge(stored, fresh, None)] == [3, 2, 4, 1]
    assert [r["v"] for r in merge(stored, fresh, ["small"])] == [3, 4, 1]


@pytest.mark.slow
def test_every_small_instance_recertifies() -> None:
    for inst in qpsvm.suite.load("small"):
        _recertify(inst)


def test_certified_optimum_matches_the_stored_record() -> None:
    (inst,) = qpsvm.suite.load("small", family="kernel_linear")
    fresh = certified_optimum(inst.build(), inst.family)
    assert (fresh.lower, fresh.upper) == (inst.optimum.lower, inst.optimum.upper)
    assert np.array_equal(fresh.w, inst.optimum.w)


def test_unknown_tier_and_changed_data_raise() -> None:
    with pytest.raises(qpsvm.InvalidInputError, match="unknown tier"):
        qpsvm.suite.load("huge")
    inst = qpsvm.suite.load("small", family="hard_margin")[0]
    inst.data_sha256 = "0" * 64
    with pytest.raises(qpsvm.InvalidInputError, match="regenerate differently"):
        inst.build()


# ------------------------------------------------------------------ standard form and to_qp


def test_to_qp_reaches_the_certified_optimum() -> None:
    """A high-accuracy QP solve of the exported problem lands in the enclosure, to the
    solver's accuracy, for a primal (min) and a dual (max, sign -1) family."""
    import qpsolvers

    for family in ("binary", "weston_watkins", "kernel_rbf", "ranking"):
        inst = qpsvm.suite.load("small", family=family)[0]
        qp = qpsvm.suite.to_qp(inst)
        x = qpsolvers.solve_problem(
            qp.problem, solver="clarabel", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
        ).x
        opt = inst.optimum
        assert abs(qp.value(x) - opt.value) <= 1e-9 * max(1.0, abs(opt.value)) + (
            opt.upper - opt.lower
        )


def test_standard_form_identity_on_a_known_problem() -> None:
    """min 1/2 x^2 - x + 3.5 s.t. x <= 0.5, x >= -2: P = 1, q = -1, offset 3.5, bounds read
    off the rows, optimum 0.5 (value 3.125)."""
    import cvxpy as cp

    from qpsvm.standard_form import standard_form

    x = cp.Variable(name="x")
    problem = cp.Problem(cp.Minimize(0.5 * cp.square(x) - x + 3.5), [x <= 0.5, x >= -2])
    form = standard_form(problem)
    assert form.P.toarray().tolist() == [[1.0]] and form.q.tolist() == [-1.0]
    assert form.offset == 3.5 and form.sign == 1.0
    assert form.G is None and form.lb.tolist() == [-2.0] and form.ub.tolist() == [0.5]
    assert form.value(np.array([0.5])) == 3.125
    assert form.variables(np.array([0.5])) == {"x": 0.5}
    maximised = standard_form(cp.Problem(cp.Maximize(-cp.square(x)), [x >= 1]))
    assert maximised.sign == -1.0 and maximised.value(np.array([1.0])) == -1.0


def test_standard_form_refuses_a_cone_program() -> None:
    import cvxpy as cp

    from qpsvm.standard_form import standard_form

    x = cp.Variable(2)
    with pytest.raises(qpsvm.UnsupportedProblemError, match="not a quadratic program"):
        standard_form(cp.Problem(cp.Minimize(cp.norm(x, 2)), [x >= 1]))


def test_structural_instances_have_no_finite_qp() -> None:
    (inst, *_) = qpsvm.suite.load("small", family="chain")
    with pytest.raises(qpsvm.UnsupportedProblemError, match="no finite"):
        qpsvm.suite.to_qp(inst)


def test_export_writes_documented_files(tmp_path) -> None:
    import json

    import scipy.sparse as sp

    instances = qpsvm.suite.load("small", family="hard_margin") + qpsvm.suite.load(
        "small", family="chain"
    )
    index = json.loads(qpsvm.suite.export(instances, tmp_path).read_text())
    assert index["format"] == "qpsvm-suite-qp/1"
    assert [e["family"] for e in index["instances"]] == ["hard_margin", "hard_margin"]
    entry, inst = index["instances"][0], instances[0]
    data = np.load(tmp_path / entry["file"])
    P = sp.coo_matrix((data["P_data"], (data["P_row"], data["P_col"])), shape=data["P_shape"])
    form = qpsvm.suite.to_qp(inst).form
    assert (P.tocsc() != form.P).nnz == 0
    assert float(data["lower"]) == inst.optimum.lower == entry["lower"]
    # the exact (w*, b*) gives the stored value
    exact = inst.build().solve(method="exact")
    x = np.concatenate([exact.w, [exact.b]])  # variables in CVXPY's order: w, then b
    assert list(form.variables(x)) == ["w", "b"]
    assert abs(form.value(x) - inst.optimum.value) <= 1e-12 * inst.optimum.value


# ------------------------------------------------------------------ scoring


def _exact_answer(inst: qpsvm.suite.Instance):
    sol = inst.build().solve(method="exact")
    return sol.w, sol.b


def test_score_a_callable_and_a_solver_name() -> None:
    """The exact oracle's answers succeed at 1e-9 with distance ~0 to w*; a wrong answer
    (w = 0) fails every tolerance; an exception is a recorded failure."""
    from qpsvm.suite.score import summarize

    instances = qpsvm.suite.load("small", family="binary")[:3]
    exact = qpsvm.suite.score(qpsvm.suite.Callable(_exact_answer), instances)
    assert all(r.success["1e-09"] for r in exact)
    assert all(r.distance is not None and r.distance < 1e-12 for r in exact)

    def zero(inst):
        return np.zeros(inst.build().n_features), 0.0

    wrong = qpsvm.suite.score(qpsvm.suite.Callable(zero), instances[1:2])
    assert not any(wrong[0].success.values()) and wrong[0].suboptimality > 1e-3

    def boom(inst):
        raise RuntimeError("diverged")

    failed = qpsvm.suite.score(qpsvm.suite.Callable(boom), instances[:1])
    assert failed[0].failure == "exception" and "diverged" in failed[0].message
    summary = summarize(exact + failed)
    assert summary.failures == 1 and summary.success_rate["1e-09"] == 3 / 4

    by_name = qpsvm.suite.score("qpsolvers:clarabel:high", instances[:1])
    assert by_name[0].solver == "qpsolvers:clarabel:high" and by_name[0].success["1e-06"]


def test_tools_are_scored_on_the_problem_they_solved() -> None:
    """SVC solves the binary problem (scored); LIBLINEAR without -B solves the problem without
    intercept, so on a free-intercept instance it is a different problem."""
    from sklearn.svm import SVC

    (inst,) = [i for i in qpsvm.suite.load("small", family="binary") if i.recipe["C"] == 1.0][:1]
    svc = qpsvm.suite.score(qpsvm.suite.Estimator(SVC, {"kernel": "linear", "tol": 1e-8}), [inst])
    assert svc[0].failure is None and svc[0].success["1e-06"]
    lib = qpsvm.suite.score(qpsvm.suite.Liblinear("-s 3"), [inst])
    assert lib[0].failure == "different problem" and "no intercept" in lib[0].message
    (no_b,) = [
        i for i in qpsvm.suite.load("small", family="binary_no_intercept") if "cancer" in i.name
    ]
    lib = qpsvm.suite.score(qpsvm.suite.Liblinear("-s 3 -e 1e-10"), [no_b])
    assert lib[0].failure is None and lib[0].success["1e-06"]


def test_regularized_intercept_tools_are_scored() -> None:
    """LIBLINEAR -B 1 and LinearSVC() state the composed problems with a regularised intercept
    (the data with a constant column appended): scored on those families (the official
    LIBLINEAR's accuracy depends on its random coordinate order, which a seed fixed only through
    the C library's rand(); LinearSVC with random_state=0 reaches 1e-6), and still a different
    problem on the free-intercept binary family."""
    from sklearn.svm import LinearSVC

    (reg,) = [
        i for i in qpsvm.suite.load("small", family="regularized_intercept") if i.recipe["C"] == 1
    ]
    lib = qpsvm.suite.score(qpsvm.suite.Liblinear("-s 3 -B 1 -e 1e-10"), [reg])
    assert lib[0].failure is None and lib[0].suboptimality is not None, lib[0].message
    (sq,) = [
        i
        for i in qpsvm.suite.load("small", family="squared_hinge_regularized")
        if i.recipe["C"] == 1 and "cancer" in i.name
    ]
    est = qpsvm.suite.Estimator(LinearSVC, {"tol": 1e-10, "max_iter": 100_000, "random_state": 0})
    svc = qpsvm.suite.score(est, [sq])
    assert svc[0].failure is None and svc[0].success["1e-06"], svc[0].message
    (binary,) = [i for i in qpsvm.suite.load("small", family="binary") if i.recipe["C"] == 1][:1]
    assert qpsvm.suite.score(est, [binary])[0].failure == "different problem"


def test_parse_solver_names() -> None:
    from qpsvm.suite import parse_solver

    assert parse_solver("cvxpy:osqp:high").name == "cvxpy:OSQP:high"
    est = parse_solver("sklearn:LinearSVC(loss='hinge', dual=True)")
    assert est.cls.__name__ == "LinearSVC" and est.params == {"loss": "hinge", "dual": True}
    with pytest.raises(qpsvm.InvalidInputError, match="unknown solver"):
        parse_solver("matlab:quadprog")


def test_cli_suite_run_and_export(tmp_path, capsys) -> None:
    import json

    from qpsvm.cli import main

    out = tmp_path / "r.json"
    code = main(
        [
            "suite",
            "run",
            "--solver",
            "cvxpy:CLARABEL",
            "--tier",
            "small",
            "--family",
            "hard_margin",
            "--json",
            str(out),
            "--quiet",
            "--plot",
            str(tmp_path / "p.png"),
        ]
    )
    assert code == 0
    table = capsys.readouterr().out
    assert "| cvxpy:CLARABEL | 2 (0) |" in table
    data = json.loads(out.read_text())
    assert len(data["results"]) == 2 and data["summaries"][0]["n"] == 2
    assert (tmp_path / "p.png").stat().st_size > 0
    assert main(["suite", "export", str(tmp_path / "qp"), "--family", "hard_margin"]) == 0
    assert (tmp_path / "qp" / "index.json").is_file()


def test_score_a_command_line() -> None:
    """qpsvm's own command line as an external program: it trains on the svmlight file the
    suite writes and writes a JSON model, read back by qpsvm.validate; a failing command is a
    recorded status failure."""
    inst = qpsvm.suite.load("small", family="binary")[1]
    (good,) = qpsvm.suite.score(
        qpsvm.suite.Command("qpsvm fit {train} --C {C} --output {model}"), [inst]
    )
    assert good.failure is None and good.success["1e-09"], (good.failure, good.message)
    (bad,) = qpsvm.suite.score(qpsvm.suite.Command("qpsvm fit {train} --C -1"), [inst])
    assert bad.failure == "status" and "exit 2" in bad.message


def test_generate_resumes_the_missing_recipes(tmp_path) -> None:
    out = tmp_path / "suite.json"
    args = ["--tier", "small", "--family", "hard_margin", "--out", str(out)]
    assert main(args) == 0
    records = json.loads(out.read_text())["instances"]
    stored = {
        (r.name, r.optimum.lower, r.optimum.upper)
        for r in qpsvm.suite.load("small", family="hard_margin")
    }
    assert {(r["name"], r["optimum"]["lower"], r["optimum"]["upper"]) for r in records} == stored
    # a run cut after its first instance resumes with --missing, computing only the other
    out.write_text(json.dumps({"version": "v1", "instances": records[:1]}))
    assert main(["--tier", "small", "--family", "hard_margin", "--missing", "--out", str(out)]) == 0
    again = json.loads(out.read_text())["instances"]
    assert again[0] == records[0] and again == records


def test_time_profile_counts_ratios_to_the_fastest():
    """Dolan-Moré by hand: ratios to each row's fastest, failures (inf) never counted."""
    from qpsvm.suite.report import time_profile

    inf = math.inf
    T = np.array([[1.0, 2.0], [3.0, 3.0], [inf, 1.0], [2.0, inf], [inf, inf]])
    profile = time_profile(T, ["a", "b"])
    np.testing.assert_array_equal(profile["a"][0], [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(profile["b"][0], [1.0, 1.0, 2.0])
    for name in "ab":  # three of the five problems each; the fifth nobody solves
        np.testing.assert_array_equal(profile[name][1], [0.2, 0.4, 0.6])

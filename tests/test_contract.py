"""The formulation contract (qpsvm.contract): every (formulation, method) pair of the registry
either solves (certified for a certified method, the optimum for the rational oracle, its own
status for an approximate one) or is refused up front with a typed error; the objectives of the
optimal answers agree across methods (the optimum of a strongly convex problem is unique)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_problem, ranking_problem

import qpsvm
from qpsvm.contract import METHODS, check_method, load, method_names
from qpsvm.datasets import make_chains
from qpsvm.models import ChainModel

EXACT = 1e-9
#: Options that keep the approximate methods short (their answers are only compared, not exact).
SHORT = {"subgradient": {"epochs": 2, "random_state": 0}, "smo": {}}


def _binary():
    return random_problem(3, n=30, d=3)


def _separable():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-2.0, 0.5, (15, 2)), rng.normal(2.0, 0.5, (15, 2))])
    return X, np.repeat([0, 1], 15)


def _ranking(**pieces):
    X, y, groups = ranking_problem(0, n_queries=3)
    return qpsvm.RankingSVM(X, y=y, groups=groups, C=1.0, **pieces)


def _multiclass():
    rng = np.random.default_rng(1)
    y = np.repeat([0, 1, 2], 10)
    return rng.normal(size=(30, 3)) + 1.5 * np.eye(3)[y], y


def _chains():
    data = make_chains(
        n_sequences=4, mean_length=3, n_features=3, n_states=2, noise=0.3, random_state=0
    )
    return ChainModel(3, 2), data.X, data.Y


FORMULATIONS = {
    "HardMargin": lambda: qpsvm.HardMargin(*_separable()),
    "SoftMarginPrimal": lambda: qpsvm.SoftMarginPrimal(*_binary(), C=2.0),
    "SoftMarginDual": lambda: qpsvm.SoftMarginDual(*_binary(), C=2.0),
    "SoftMarginDual-rbf": lambda: qpsvm.SoftMarginDual(*_binary(), C=2.0, kernel="rbf"),
    "RankingSVM": lambda: _ranking(),
    "ComposedRanking": lambda: _ranking(loss="squared_hinge"),
    "crammer_singer": lambda: qpsvm.MulticlassSVM(*_multiclass(), C=1.0),
    "weston_watkins": lambda: qpsvm.MulticlassSVM(*_multiclass(), C=1.0, variant="weston_watkins"),
    "crammer_singer-squared": lambda: qpsvm.MulticlassSVM(
        *_multiclass(), C=1.0, loss="squared_hinge", intercept="regularized"
    ),
    "StructuralSVM": lambda: qpsvm.StructuralSVM(*_chains(), C=1.0),
}


@pytest.fixture(scope="module")
def optima() -> dict[str, float]:
    """The optimum of each formulation by its default method."""
    return {name: make().solve().objective for name, make in FORMULATIONS.items()}


@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize("name", sorted(FORMULATIONS))
def test_every_pair_solves_or_is_refused(name, method, optima):
    f = FORMULATIONS[name]()
    spec = METHODS[method]
    kernel = getattr(f, "kernel", None)
    if method not in f.methods or not spec.solve:
        with pytest.raises(qpsvm.InvalidInputError, match="not supported by"):
            f.solve(method=method)
        return
    if kernel is not None and kernel.name != "linear" and not spec.kernels:
        with pytest.raises(qpsvm.InvalidInputError, match="kernel"):
            f.solve(method=method, **SHORT.get(method, {}))
        return
    if not spec.backend:
        with pytest.raises(qpsvm.InvalidInputError, match="uses no CVXPY solver"):
            f.solve(method=method, solver="CLARABEL")
    sol = f.solve(method=method, **SHORT.get(method, {}))
    assert sol.method == method
    if spec.certified:
        # certified at 1e-9 before it is returned
        assert sol.certificate.passed and sol.certificate.tol == EXACT
    if spec.optimal:
        # the unique optimum P* (the rational oracle's too, rounded to float)
        assert sol.status == "optimal"
        assert sol.objective == pytest.approx(optima[name], rel=1e-7)
    else:
        # approximate: its own status, and never below the optimum (weak duality)
        assert sol.status != "optimal"
        assert sol.objective >= optima[name] * (1 - 1e-9)


@pytest.mark.parametrize("name", sorted(FORMULATIONS))
def test_every_path_method_is_certified(name, optima):
    f = FORMULATIONS[name]()
    for method in (m for m in f.methods if METHODS[m].path):
        if name == "HardMargin":
            with pytest.raises(qpsvm.InvalidInputError, match="no C"):
                f.path([1.0], method=method)
            continue
        (sol,) = f.path([f.C], method=method)
        assert sol.certificate.passed
        assert sol.objective == pytest.approx(optima[name], rel=1e-7)
    unsupported = sorted(m for m in METHODS if m not in f.methods or not METHODS[m].path)
    for method in unsupported:
        with pytest.raises(qpsvm.InvalidInputError, match="a path of"):
            f.path([1.0], method=method)


def test_registry_names_importable_solvers_and_formulations_only_registered_methods():
    for spec in METHODS.values():
        assert callable(load(spec.run))
    for make in FORMULATIONS.values():
        f = make()
        assert set(f.methods) <= set(METHODS)
        assert f.default_method() in f.methods
        for attribute in ("working_set", "online_problem", "refinement", "certifier"):
            if getattr(f, attribute):
                assert callable(load(getattr(f, attribute)))
        # a method a formulation lists needs the piece it names
        assert bool(f.working_set) == ("working_set" in f.methods)
        assert bool(f.online_problem) == ("subgradient" in f.methods)


def test_unknown_method_names_the_supported_ones():
    f = FORMULATIONS["HardMargin"]()
    with pytest.raises(qpsvm.InvalidInputError, match=r"\['qp', 'full', 'working_set', 'exact'\]"):
        check_method(f, "bundle")


def test_a_formulation_lists_only_registered_methods():
    assert method_names("qp working_set") == ("qp", "working_set")
    with pytest.raises(qpsvm.InvalidInputError, match="register them first"):
        method_names("qp bundle")

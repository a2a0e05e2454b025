"""The solver-validation suite: stored instances regenerate and recertify; export and scoring."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import qpsvm
import qpsvm.suite
from qpsvm.suite.generate import EXACT_FAMILIES, certified_optimum
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

"""Any malformed input to a public constructor or solve method raises a qpsvm error.

The catalogue tests name each bad input; this property test throws arbitrary malformed values at
every argument and checks that nothing escapes as an AttributeError, IndexError or a CVXPY
exception from deep inside: either the call succeeds or it raises a ``QPSVMError`` that is also a
``ValueError`` or ``TypeError``, with a message.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qpsvm

X = np.array([[0.0, 1.0], [1.0, 0.0], [3.0, 1.0], [4.0, 2.0], [2.0, 2.0], [0.5, 3.0]])
Y = np.array([0, 0, 1, 1, 2, 2])

BAD = st.one_of(
    st.none(),
    st.just(np.nan),
    st.just(-1.0),
    st.just(0),
    st.just("text"),
    st.just([]),
    st.just([[1, 2], [3]]),
    st.just(np.zeros((2, 2, 2))),
    st.just(np.array([np.inf] * 6)),
    st.just(np.arange(5)),
    st.just({"a": 1}),
    st.just(np.ones(6) * -2),
    st.just(np.array([[0, 0], [0, 7], [9, 1]])),
)

BUILDERS = {
    "SoftMarginPrimal": (
        lambda **kw: qpsvm.SoftMarginPrimal(**kw),
        {"X": X, "y": Y % 2, "C": 1.0, "sample_weight": None, "margin": None},
    ),
    "SoftMarginDual": (
        lambda **kw: qpsvm.SoftMarginDual(**kw),
        {"X": X, "y": Y % 2, "C": 1.0, "kernel": "rbf", "gamma": None},
    ),
    "HardMargin": (lambda **kw: qpsvm.HardMargin(**kw), {"X": X, "y": Y % 2, "margin": None}),
    "RankingSVM": (
        lambda **kw: qpsvm.RankingSVM(**kw),
        {"X": X, "pairs": [[0, 1], [2, 3]], "C": 1.0, "pair_weight": None},
    ),
    "MulticlassSVM": (
        lambda **kw: qpsvm.MulticlassSVM(**kw),
        {"X": X, "y": Y, "C": 1.0, "sample_weight": None},
    ),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_malformed_arguments_raise_qpsvm_errors(name, data):
    build, args = BUILDERS[name]
    key = data.draw(st.sampled_from(sorted(args)))
    kwargs = {**args, key: data.draw(BAD)}
    try:
        f = build(**kwargs)
        f.solve()
    except qpsvm.QPSVMError as exc:
        assert isinstance(exc, ValueError | TypeError | RuntimeError) and str(exc)


@pytest.mark.parametrize("method", ["qp", "subgradient", "working_set"])
@settings(max_examples=30, deadline=None)
@given(
    option=st.sampled_from(["epochs", "step", "batch_size", "tol", "random_state", "eta0"]),
    value=BAD,
)
def test_malformed_solve_options_raise_qpsvm_errors(method, option, value):
    f = qpsvm.SoftMarginPrimal(X, Y % 2)
    try:
        f.solve(method=method, **{option: value})
    except qpsvm.QPSVMError as exc:
        assert str(exc)

"""Tests of qpsvm.models: every exact oracle against brute-force enumeration of all outputs.

The reference values come from enumerating every output ``y'`` and evaluating the defining
objective with ``w @ joint_feature(x, y')`` and a Hamming / 0-1 count written here, so they do not
share code with the dynamic programs. Objective values are compared (not argmaxes), because ties
are possible, most of all with the integer weights drawn on purpose.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.models import ChainModel, JointFeatureModel, MulticlassModel

TOL = 1e-9
FAST = settings(max_examples=100, deadline=None)


def _random_problem(seed: int, shape: tuple[int, ...], n_w: int, integer: bool):
    """Random ``x`` and ``w``; small integers make ties and exact zeros of the slack objective."""
    rng = np.random.default_rng(seed)
    if integer:
        return rng.integers(-2, 3, size=shape).astype(float), rng.integers(-1, 2, n_w).astype(float)
    return rng.standard_normal(shape), rng.standard_normal(n_w)


def _brute_force(model, x, y, w, outputs, loss):
    """Maxima over ``outputs`` of the three oracle objectives, with the loss given here."""
    score_true = w @ model.joint_feature(x, y)
    scores = np.array([w @ model.joint_feature(x, o) for o in outputs])
    losses = np.array([loss(y, o) for o in outputs])
    return {
        "inference": scores.max(),
        "margin": (losses + scores).max(),
        # y' = y has value 0, so the maximum over all outputs is >= 0
        "slack": max(0.0, (losses * (1.0 + scores - score_true)).max()),
        "slack_wrong_only": (losses * (1.0 + scores - score_true))[losses > 0].max(),
    }


def _hamming(a, b) -> float:
    return float(sum(int(i) != int(j) for i, j in zip(a, b, strict=True)))


def _check_oracles(model, x, y, w, ref, loss):
    """Compare the values attained by the model's outputs with the brute-force maxima."""
    score_true = w @ model.joint_feature(x, y)

    y_pred = model.inference(x, w)
    assert w @ model.joint_feature(x, y_pred) == pytest.approx(ref["inference"], abs=TOL), (
        "Viterbi/argmax must attain the largest score over every output"
    )

    y_lai = model.loss_augmented_inference(x, y, w)
    value = loss(y, y_lai) + w @ model.joint_feature(x, y_lai)
    assert value == pytest.approx(ref["margin"], abs=TOL), (
        "loss-augmented inference must attain max Delta(y, y') + w.Psi(x, y') over every output"
    )
    assert model.margin_violation(x, y, y_lai, w) == pytest.approx(ref["margin"] - score_true), (
        "margin_violation is the margin-rescaled objective minus w.Psi(x, y)"
    )

    y_slack = model.slack_rescaled_inference(x, y, w)
    delta = loss(y, y_slack)
    value = delta * (1.0 + w @ model.joint_feature(x, y_slack) - score_true)
    assert value == pytest.approx(ref["slack"], abs=TOL), (
        "slack-rescaled inference must attain max Delta(y, y')(1 + w.Psi(x, y') - w.Psi(x, y))"
    )
    assert model.slack_violation(x, y, y_slack, w) == pytest.approx(ref["slack"], abs=TOL), (
        "slack_violation evaluates the same objective"
    )
    if ref["slack_wrong_only"] > TOL:
        assert delta > 0, "a strictly positive violation must be reported with an output y' != y"
    if ref["slack_wrong_only"] <= 0.0:
        assert delta == 0.0, "documented convention: with no positive value, return y itself"
        assert np.array_equal(np.asarray(y_slack), np.asarray(y)), "the output is y itself"


# --------------------------------------------------------------------------- ChainModel
def test_chain_joint_feature_layout_by_hand():
    model = ChainModel(n_features=2, n_states=2)
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    y = np.array([0, 1, 1])
    psi = model.joint_feature(x, y)
    # unary block (2 states x 2 features): row 0 = x_0, row 1 = x_1 + x_2;
    # pairwise block (2 x 2) counts transitions: 0->1 once, 1->1 once
    expected = np.array([1.0, 2.0, 8.0, 10.0, 0.0, 1.0, 0.0, 1.0])
    assert model.n_joint_features == 8, "n_states * n_features + n_states**2 = 4 + 4"
    np.testing.assert_array_equal(psi, expected, err_msg="layout stated in the docstring")
    assert psi.dtype == np.float64, "joint features are float64"

    # T = 1: no transitions, so the pairwise block is zero
    np.testing.assert_array_equal(
        model.joint_feature(x[:1], np.array([1])),
        [0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0],
        err_msg="a single position contributes its unary term only",
    )


def test_chain_score_is_unary_plus_transition_sum():
    model = ChainModel(n_features=2, n_states=2)
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    y = np.array([0, 1, 1])
    w = np.arange(1.0, 9.0)  # W_u = [[1, 2], [3, 4]], P = [[5, 6], [7, 8]]
    # U[t, y_t] = W_u[y_t] . x_t: 1*1+2*2=5, 3*3+4*4=25, 3*5+4*6=39; P[0,1]+P[1,1] = 6+8
    assert model.score(x, y, w) == 5 + 25 + 39 + 6 + 8, "w.Psi = sum_t U[t,y_t] + sum_t P"


def test_chain_loss_is_hamming():
    model = ChainModel(n_features=1, n_states=3)
    assert model.loss([0, 1, 2], [0, 2, 2]) == 1.0, "one position differs"
    assert model.loss([0, 1, 2], [0, 1, 2]) == 0.0, "Delta is zero on equal outputs"
    assert isinstance(model.loss([0], [1]), float), "the loss is a float"


@FAST
@given(
    seed=st.integers(0, 2**32 - 1),
    length=st.integers(1, 4),
    n_states=st.integers(2, 3),
    n_features=st.integers(1, 3),
    integer=st.booleans(),
)
def test_chain_oracles_match_brute_force(seed, length, n_states, n_features, integer):
    model = ChainModel(n_features, n_states)
    x, w = _random_problem(seed, (length, n_features), model.n_joint_features, integer)
    y = np.random.default_rng(seed + 1).integers(0, n_states, length)
    outputs = [np.array(o) for o in itertools.product(range(n_states), repeat=length)]
    ref = _brute_force(model, x, y, w, outputs, _hamming)
    _check_oracles(model, x, y, w, ref, _hamming)
    exhaustive = JointFeatureModel.slack_rescaled_inference(model, x, y, w)
    assert model.slack_violation(x, y, exhaustive, w) == pytest.approx(ref["slack"], abs=TOL), (
        "the base class's exhaustive default over enumerate_outputs reaches the same maximum"
    )


def test_chain_slack_returns_truth_when_nothing_is_violated():
    model = ChainModel(n_features=1, n_states=2)
    x = np.array([[1.0], [-1.0], [1.0]])
    y = np.array([1, 0, 1])
    # unary weights favour y by a margin of 10 per position: every other output scores <= -20
    w = np.array([-10.0, 10.0, 0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(
        model.slack_rescaled_inference(x, y, w), y, err_msg="no constraint is violated"
    )
    assert model.slack_violation(x, y, y, w) == 0.0, "the truth has value 0"


def test_slack_returns_truth_when_the_best_value_is_exactly_zero():
    # Two outputs: y = [0] scores 1, y' = [1] scores 0, so y' has value 1 * (1 + 0 - 1) = 0,
    # a tie with y itself; the documented convention returns y (no violated constraint).
    chain = ChainModel(n_features=1, n_states=2)
    w = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    y = np.array([0])
    np.testing.assert_array_equal(chain.slack_rescaled_inference([[1.0]], y, w), y)
    np.testing.assert_array_equal(chain.slack_rescaled_inference_batch([[[1.0]]], [y], w)[0], y)
    multiclass = MulticlassModel(n_features=1, n_classes=2)
    assert multiclass.slack_rescaled_inference([1.0], 0, [1.0, 0.0]) == 0, "tie at 0 returns y"
    assert multiclass.slack_rescaled_inference_batch([[1.0]], [0], [1.0, 0.0]) == [0], "same"
    # a slightly better wrong output has a positive value and must be returned
    w[1] = 1e-6  # unary weight of state 1
    assert chain.slack_rescaled_inference([[1.0]], y, w)[0] == 1, "value 1e-6 > 0 is violated"


def test_chain_batches_equal_single_calls():
    rng = np.random.default_rng(0)
    model = ChainModel(n_features=4, n_states=3)
    X = [rng.standard_normal((t, 4)) for t in (1, 2, 5, 1, 3)]
    Y = [rng.integers(0, 3, x.shape[0]) for x in X]
    w = rng.standard_normal(model.n_joint_features)
    pairs = [
        (model.inference_batch(X, w), [model.inference(x, w) for x in X]),
        (
            model.loss_augmented_inference_batch(X, Y, w),
            [model.loss_augmented_inference(x, y, w) for x, y in zip(X, Y, strict=True)],
        ),
        (
            model.slack_rescaled_inference_batch(X, Y, w),
            [model.slack_rescaled_inference(x, y, w) for x, y in zip(X, Y, strict=True)],
        ),
    ]
    for batch, single in pairs:
        for a, b in zip(batch, single, strict=True):
            np.testing.assert_array_equal(a, b, err_msg="the batch runs the same exact oracle")
    stacked = np.array([model.joint_feature(x, y) for x, y in zip(X, Y, strict=True)])
    np.testing.assert_allclose(
        model.batch_joint_feature(X, Y),
        stacked.sum(axis=0),
        atol=1e-12,
        err_msg="sum over examples, with no transition across sequence boundaries",
    )
    np.testing.assert_array_equal(model.batch_joint_feature(X, Y, reduce="stack"), stacked)
    np.testing.assert_array_equal(
        model.batch_loss(Y, model.inference_batch(X, w)),
        [model.loss(y, p) for y, p in zip(Y, model.inference_batch(X, w), strict=True)],
        err_msg="batch_loss is the loss per example",
    )
    U = model.unary_scores(X, w)
    assert all(u.shape == (x.shape[0], 3) for u, x in zip(U, X, strict=True)), "(T_i, n_states)"


def test_chain_oracles_consistent_at_real_size():
    # 26 states, length 8, 128 features (the OCR letters setting): too large to enumerate, but
    # the exact oracles must dominate each other's outputs on their own objectives
    rng = np.random.default_rng(1)
    model = ChainModel(n_features=128, n_states=26)
    X = [rng.standard_normal((int(t), 128)) for t in rng.integers(3, 12, 40)]
    Y = [rng.integers(0, 26, x.shape[0]) for x in X]
    w = 0.05 * rng.standard_normal(model.n_joint_features)
    pred = model.inference_batch(X, w)
    lai = model.loss_augmented_inference_batch(X, Y, w)
    slack = model.slack_rescaled_inference_batch(X, Y, w)
    for x, y, p, a, s in zip(X, Y, pred, lai, slack, strict=True):
        assert model.score(x, p, w) >= max(model.score(x, c, w) for c in (y, a, s)) - TOL, (
            "Viterbi's score is the maximum"
        )
        assert (
            model.margin_violation(x, y, a, w)
            >= max(model.margin_violation(x, y, c, w) for c in (y, p, s)) - TOL
        ), "loss-augmented Viterbi maximises Delta + score"
        assert (
            model.slack_violation(x, y, s, w)
            >= max(model.slack_violation(x, y, c, w) for c in (y, p, a)) - TOL
        ), "the error-count DP maximises the slack-rescaled objective"
        assert model.checked_slack_rescaled_inference(x, y, w) is not None, "checks pass"


# ---------------------------------------------------------------------- MulticlassModel
def test_multiclass_joint_feature_layout_by_hand():
    model = MulticlassModel(n_features=2, n_classes=3)
    psi = model.joint_feature(np.array([5.0, -1.0]), 1)
    # block y = 1 of w.reshape(3, 2) is entries 2..3
    np.testing.assert_array_equal(psi, [0.0, 0.0, 5.0, -1.0, 0.0, 0.0], err_msg="e_y (x) x")
    w = np.arange(6.0)
    assert model.score([5.0, -1.0], 1, w) == 2 * 5 - 3, "w.Psi(x, y) = row y of W dotted with x"
    assert model.loss(1, 2) == 1.0 and model.loss(2, 2) == 0.0, "0/1 loss"


@FAST
@given(
    seed=st.integers(0, 2**32 - 1),
    n_classes=st.integers(2, 5),
    n_features=st.integers(1, 3),
    integer=st.booleans(),
)
def test_multiclass_oracles_match_brute_force(seed, n_classes, n_features, integer):
    model = MulticlassModel(n_features, n_classes)
    x, w = _random_problem(seed, (n_features,), model.n_joint_features, integer)
    y = int(np.random.default_rng(seed + 1).integers(n_classes))
    ref = _brute_force(model, x, y, w, range(n_classes), lambda a, b: float(a != b))
    _check_oracles(model, x, y, w, ref, lambda a, b: float(a != b))
    assert model.slack_rescaled_inference(x, y, w) == JointFeatureModel.slack_rescaled_inference(
        model, x, y, w
    ), "the closed form equals the exhaustive default (both keep the first maximiser)"


def test_multiclass_batches_equal_single_calls():
    rng = np.random.default_rng(2)
    model = MulticlassModel(n_features=3, n_classes=4)
    X = rng.standard_normal((20, 3))
    Y = rng.integers(0, 4, 20)
    w = rng.standard_normal((4, 3))  # the (n_classes, n_features) layout is accepted too
    assert model.inference_batch(X, w) == [model.inference(x, w) for x in X], "same argmax"
    assert model.loss_augmented_inference_batch(X, Y, w) == [
        model.loss_augmented_inference(x, y, w) for x, y in zip(X, Y, strict=True)
    ], "same loss-augmented argmax"
    assert model.slack_rescaled_inference_batch(X, Y, w) == [
        model.slack_rescaled_inference(x, y, w) for x, y in zip(X, Y, strict=True)
    ], "same slack-rescaled argmax"
    stacked = np.array([model.joint_feature(x, y) for x, y in zip(X, Y, strict=True)])
    np.testing.assert_allclose(model.batch_joint_feature(X, Y), stacked.sum(axis=0), atol=1e-12)
    np.testing.assert_array_equal(model.batch_joint_feature(X, Y, reduce="stack"), stacked)
    Xv, Yv = model.validate_inputs(X, Y)
    assert len(Xv) == 20 and Yv == Y.tolist(), "validated rows and int labels"


# ------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda m: m.check_input(np.zeros(3)), InvalidInputError, "shape \\(T, n_features=3\\)"),
        (lambda m: m.check_input(np.zeros((4, 2))), InvalidInputError, "n_features=3"),
        (lambda m: m.check_input(np.zeros((0, 3))), InvalidInputError, "empty sequence"),
        (lambda m: m.check_input([["a", "b", "c"]]), InvalidTypeError, "numeric"),
        (lambda m: m.check_input(np.full((2, 3), np.nan)), InvalidInputError, "NaN"),
        (lambda m: m.check_output([0, 2]), InvalidInputError, "y\\[1\\] = 2 is outside"),
        (lambda m: m.check_output([-1]), InvalidInputError, "outside \\[0, 2\\)"),
        (lambda m: m.check_output([]), InvalidInputError, "empty label sequence"),
        (lambda m: m.check_output([0.0, 1.0]), InvalidTypeError, "integer state indices"),
        (lambda m: m.check_output([0, 1], np.zeros((3, 3))), InvalidInputError, "3 positions"),
        (lambda m: m.inference(np.zeros((0, 3)), np.zeros(10)), InvalidInputError, "T = 0"),
        (lambda m: m.inference(np.zeros((2, 3)), np.zeros(9)), InvalidInputError, "\\(10,\\)"),
        (
            lambda m: m.loss_augmented_inference_batch(
                [np.zeros((2, 3))] * 2, [[0, 1]], np.zeros(10)
            ),
            InvalidInputError,
            "2 sequences but Y has 1",
        ),
        (
            lambda m: m.slack_rescaled_inference_batch(
                [np.zeros((2, 3)), np.zeros((1, 3))], [[0, 1], [5]], np.zeros(10)
            ),
            InvalidInputError,
            "Y\\[1\\]\\[0\\] = 5",
        ),
        (
            lambda m: m.validate_inputs([np.zeros((2, 3)), np.zeros((2, 4))], [[0, 1], [0, 1]]),
            InvalidInputError,
            "sequence 1",
        ),
        (lambda m: m.validate_inputs([], []), InvalidInputError, "empty"),
        (lambda m: m.inference_batch(np.zeros((2, 3)), np.zeros(10)), InvalidInputError, "\\[x\\]"),
    ],
)
def test_chain_bad_inputs_raise_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(ChainModel(n_features=3, n_states=2))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda m: m.check_output(3), InvalidInputError, "outside \\[0, 3\\)"),
        (lambda m: m.check_output(1.0), InvalidTypeError, "np.unique"),
        (lambda m: m.check_output(True), InvalidTypeError, "integer index"),
        (lambda m: m.check_input([1.0, 2.0, 3.0]), InvalidInputError, "\\(n_features,\\)"),
        (
            lambda m: m.validate_inputs(np.zeros((3, 2)), [0, 1]),
            InvalidInputError,
            "X has 3 entries but Y has 2",
        ),
        (lambda m: m.inference_batch(np.zeros((3, 2)), np.zeros(5)), InvalidInputError, "w must"),
    ],
)
def test_multiclass_bad_inputs_raise_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(MulticlassModel(n_features=2, n_classes=3))


@pytest.mark.parametrize(
    ("args", "error"),
    [((3, 1), InvalidInputError), ((0, 2), InvalidInputError), ((2.5, 2), InvalidTypeError)],
)
def test_constructors_validate_sizes(args, error):
    for cls in (ChainModel, MulticlassModel):
        with pytest.raises(error, match=cls.__name__):
            cls(*args)


# ------------------------------------------------------------- user subclasses checked
class ShortFeatures(MulticlassModel):
    def joint_feature(self, x, y):
        return super().joint_feature(x, y)[:-1]


class NanFeatures(MulticlassModel):
    def joint_feature(self, x, y):
        return np.full(self.n_joint_features, np.nan)


class StringFeatures(MulticlassModel):
    def joint_feature(self, x, y):
        return ["a"] * self.n_joint_features


class StringPrediction(MulticlassModel):
    def inference(self, x, w):
        return "cat"


class OutOfRangePrediction(ChainModel):
    def inference(self, x, w):
        return np.full(np.shape(x)[0], self.n_states)


class ArgminLossAugmented(MulticlassModel):
    def loss_augmented_inference(self, x, y, w):
        scores = self._weight_matrix(w) @ self.check_input(x) + 1.0
        scores[y] -= 1.0
        return int(np.argmin(scores))


class NonzeroSelfLoss(MulticlassModel):
    def loss(self, y_true, y_pred):
        return 1.0


class Bare(JointFeatureModel):
    """Implements the abstract methods but forgets n_joint_features and enumerate_outputs."""

    def joint_feature(self, x, y):
        return np.zeros(2)

    def loss(self, y_true, y_pred):
        return float(y_true != y_pred)

    def inference(self, x, w):
        return 0

    def loss_augmented_inference(self, x, y, w):
        return 0


X1, Y1 = np.array([1.0, -2.0]), 1


@pytest.mark.parametrize(
    ("model", "call", "error", "match"),
    [
        (ShortFeatures(2, 3), "checked_joint_feature", InvalidInputError, "ShortFeatures.*shape"),
        (NanFeatures(2, 3), "checked_joint_feature", InvalidInputError, "NanFeatures.*NaN"),
        (StringFeatures(2, 3), "checked_joint_feature", InvalidTypeError, "not numeric"),
        (StringPrediction(2, 3), "checked_inference", InvalidTypeError, "StringPrediction.inf"),
        (ArgminLossAugmented(2, 3), "checked_lai", InvalidInputError, "not a maximiser"),
        (NonzeroSelfLoss(2, 3), "check_model", InvalidInputError, "must be 0"),
        (Bare(), "check_model", InvalidTypeError, "Bare.n_joint_features"),
    ],
)
def test_checked_wrappers_catch_broken_subclasses(model, call, error, match):
    w = np.random.default_rng(3).standard_normal(6)
    calls = {
        "checked_joint_feature": lambda: model.checked_joint_feature(X1, Y1),
        "checked_inference": lambda: model.checked_inference(X1, w),
        "checked_lai": lambda: model.checked_loss_augmented_inference(X1, Y1, w),
        "check_model": lambda: model.check_model(X1, Y1),
    }
    with pytest.raises(error, match=match):
        calls[call]()


def test_checked_wrappers_catch_invalid_chain_prediction():
    model = OutOfRangePrediction(n_features=1, n_states=2)
    with pytest.raises(InvalidInputError, match=r"OutOfRangePrediction.inference.*outside"):
        model.checked_inference(np.zeros((3, 1)), np.zeros(model.n_joint_features))


def test_check_model_passes_on_the_shipped_models():
    rng = np.random.default_rng(4)
    ChainModel(3, 4).check_model(rng.standard_normal((5, 3)), [0, 3, 1, 1, 2])
    MulticlassModel(3, 4).check_model(rng.standard_normal(3), 2)
    assert ChainModel(3, 4).validate_inputs([np.zeros((2, 3))], [[0, 3]])[1][0].dtype == np.int64


def test_default_slack_inference_needs_enumeration():
    bare = Bare()
    bare.n_joint_features = 2
    with pytest.raises(NotImplementedError, match="rescaling='margin'"):
        bare.slack_rescaled_inference(None, 0, np.zeros(2))
    bare.check_model(None, 0)  # check_model skips the slack oracle a model does not have


class BrokenSlackRescaled(ChainModel):
    """A chain whose slack-rescaled oracle returns states out of range."""

    def slack_rescaled_inference(self, x, y, w):
        return np.full(np.shape(x)[0], self.n_states)


def test_structural_problem_checks_only_the_oracles_its_rescaling_calls():
    # margin rescaling never calls the slack-rescaled oracle, so constructing the problem
    # neither checks it nor compiles its kernel (a chain's cold first call); slack rescaling
    # checks it and finds the broken one
    import qpsvm

    rng = np.random.default_rng(5)
    X = [rng.standard_normal((4, 3)) for _ in range(3)]
    Y = [np.array([0, 1, 1, 0]), np.array([1, 1, 0, 0]), np.array([0, 0, 1, 1])]
    qpsvm.StructuralSVM(BrokenSlackRescaled(3, 2), X, Y, C=1.0)
    with pytest.raises(InvalidInputError, match="slack_rescaled_inference"):
        qpsvm.StructuralSVM(BrokenSlackRescaled(3, 2), X, Y, C=1.0, rescaling="slack")
    with pytest.raises(InvalidInputError, match="slack_rescaled_inference"):
        BrokenSlackRescaled(3, 2).check_model(X[0], Y[0])
    BrokenSlackRescaled(3, 2).check_model(X[0], Y[0], slack_rescaling=False)

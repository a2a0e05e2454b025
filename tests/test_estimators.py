"""scikit-learn estimators: each fit is the formulation's certified optimum, and the estimators
follow scikit-learn's conventions (check_estimator, pipelines, cross-validation, grid search)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.exceptions import NotFittedError
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

import qpsvm
from qpsvm.datasets.chains import make_chains
from qpsvm.estimators import RankSVM, StructuredSVM, SVMClassifier
from qpsvm.metrics import ndcg_at_k, pairwise_accuracy
from qpsvm.models import ChainModel, MulticlassModel
from qpsvm.verify.rigorous import distance_lower

EXACT = 1e-9


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


# ------------------------------------------------------------------------ binary and kernels
def test_linear_fit_is_the_certified_primal_optimum(cancer):
    # the estimator only validates and dispatches: its coef_ / intercept_ are the optimum of
    # SoftMarginPrimal on the same data, to the certificate's precision
    X, y = cancer
    clf = SVMClassifier(C=0.5).fit(X, y)
    ref = qpsvm.SoftMarginPrimal(X, y, C=0.5).solve()
    assert clf.formulation_ == "SoftMarginPrimal" and clf.certificate_.passed
    assert clf.certificate_.relative_gap <= EXACT
    assert clf.coef_.shape == (1, 30) and clf.intercept_.shape == (1,)
    np.testing.assert_allclose(clf.coef_[0], ref.w, atol=1e-8)
    assert clf.intercept_[0] == pytest.approx(ref.b, abs=1e-8)
    # binary decision_function is 1-D and > 0 predicts classes_[1] (scikit-learn's convention)
    scores = clf.decision_function(X)
    assert scores.shape == (569,)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[(scores > 0).astype(int)])
    # w = sum_i alpha_i y_i x_i over the support vectors (stationarity of the Lagrangian)
    np.testing.assert_allclose(clf.dual_coef_[0] @ clf.support_vectors_, clf.coef_[0], atol=1e-8)
    assert clf.n_iter_ == ref.n_iter and clf.solution_.objective == pytest.approx(ref.objective)


def test_kernel_fit_is_the_certified_dual_optimum(cancer):
    X, y = cancer[0][:200], cancer[1][:200]
    clf = SVMClassifier(C=1.0, kernel="rbf", gamma=0.05).fit(X, y)
    f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf", gamma=0.05)
    ref = f.solve()
    assert clf.formulation_ == "SoftMarginDual" and clf.certificate_.passed
    np.testing.assert_allclose(clf.decision_function(X), f.decision_function(X, ref), atol=1e-7)
    # support vectors are the points with alpha_i > 0, dual_coef_ holds alpha_i y_i (libsvm)
    np.testing.assert_array_equal(clf.support_, np.flatnonzero(ref.alpha > 1e-10))
    np.testing.assert_allclose(clf.dual_coef_[0], (ref.alpha * f.y)[clf.support_], atol=1e-9)
    with pytest.raises(AttributeError, match="kernel='linear'"):
        _ = clf.coef_


def test_precomputed_kernel_equals_named_kernel(cancer):
    # identity: the dual only sees the Gram matrix, so precomputing it changes nothing
    X, y = cancer[0][:200], cancer[1][:200]
    named = SVMClassifier(kernel="rbf", gamma=0.05).fit(X, y)
    K = rbf_kernel(X, X, gamma=0.05)
    pre = SVMClassifier(kernel="precomputed").fit(K, y)
    np.testing.assert_allclose(pre.decision_function(K), named.decision_function(X), atol=1e-7)
    np.testing.assert_array_equal(pre.support_, named.support_)


def test_agrees_with_svc_on_a_separated_problem(blobs):
    # well separated blobs: the optimum is unique and libsvm finds it to its tolerance, so both
    # libraries predict alike and the decision functions agree closely
    X, y = blobs
    ours = SVMClassifier(kernel="rbf", gamma=0.5).fit(X, y)
    svc = SVC(kernel="rbf", gamma=0.5, tol=1e-10).fit(X, y)
    np.testing.assert_array_equal(ours.classes_, svc.classes_)
    np.testing.assert_array_equal(ours.predict(X), svc.predict(X))
    np.testing.assert_allclose(ours.decision_function(X), svc.decision_function(X), atol=1e-5)


def test_class_weight_multiplies_sample_weight(cancer):
    # scikit-learn's convention: class_weight[c] multiplies the weight of every sample of class c
    X, y = cancer
    weighted = SVMClassifier(class_weight={0: 3.0, 1: 1.0}).fit(X, y)
    explicit = SVMClassifier().fit(X, y, sample_weight=np.where(y == 0, 3.0, 1.0))
    np.testing.assert_allclose(weighted.coef_, explicit.coef_, atol=1e-8)
    balanced = SVMClassifier(class_weight="balanced").fit(X, y)
    counts = np.bincount(y)
    s = (len(y) / (2 * counts))[y]
    np.testing.assert_allclose(
        balanced.coef_, SVMClassifier().fit(X, y, sample_weight=s).coef_, atol=1e-8
    )


def test_integer_sample_weight_equals_repetition():
    # the lecture's weighted data points: weight k is k copies of the point
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 3)) + np.repeat([[1.0, 0, 0], [-1.0, 0, 0]], 15, axis=0)
    y = np.repeat([0, 1], 15)
    k = rng.integers(0, 4, size=30)
    k[[0, 15]] = 1  # keep both classes
    weighted = SVMClassifier().fit(X, y, sample_weight=k)
    repeated = SVMClassifier().fit(np.repeat(X, k, axis=0), np.repeat(y, k))
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-8)
    assert weighted.intercept_[0] == pytest.approx(repeated.intercept_[0], abs=1e-8)


# ------------------------------------------------------------------------------ multiclass
@pytest.mark.parametrize("variant", ["crammer_singer", "weston_watkins"])
def test_multiclass_is_the_certified_multiclass_optimum(iris, variant):
    X, y = iris
    clf = SVMClassifier(variant=variant, fit_intercept=False).fit(X, y)
    ref = qpsvm.MulticlassSVM(X, y, C=1.0, variant=variant).solve()
    assert clf.formulation_ == "MulticlassSVM" and clf.certificate_.passed
    np.testing.assert_allclose(clf.coef_, ref.w, atol=1e-8)
    np.testing.assert_array_equal(clf.intercept_, np.zeros(3))
    assert clf.decision_function(X).shape == (150, 3)
    np.testing.assert_array_equal(clf.predict(X), np.argmax(X @ ref.w.T, axis=1))


def test_multiclass_intercept_is_a_constant_column(iris):
    # the multiclass SVM has no free intercept; fit_intercept appends the column
    # intercept_scaling (liblinear's regularised intercept): W = [coef_, intercept_ / scaling]
    X, y = iris
    clf = SVMClassifier(intercept_scaling=2.0).fit(X, y)
    ref = qpsvm.MulticlassSVM(np.column_stack([X, np.full(150, 2.0)]), y).solve()
    np.testing.assert_allclose(clf.coef_, ref.w[:, :-1], atol=1e-8)
    np.testing.assert_allclose(clf.intercept_, 2.0 * ref.w[:, -1], atol=1e-8)
    np.testing.assert_allclose(
        clf.decision_function(X), X @ clf.coef_.T + clf.intercept_, atol=1e-12
    )


def test_build_formulation_certifies_other_estimators(cancer):
    # the formulation behind the estimator certifies anyone's answer on the same problem;
    # our own fit passes at 1e-9, libsvm's float32 kernel cache keeps it above that
    X, y = cancer
    clf = SVMClassifier(C=1.0)
    f = clf.build_formulation(X, y)
    assert isinstance(f, qpsvm.SoftMarginPrimal)
    assert f.certify(clf.fit(X, y).solution_).passed
    svc_cert = f.certify(SVC(kernel="linear", C=1.0).fit(X, y))
    assert svc_cert.primal_objective >= clf.certificate_.dual_objective  # weak duality


def test_approximate_method_is_certified_honestly(cancer):
    # an online method stops short of the optimum: the certificate says so, and its objective
    # cannot beat the certified lower bound of the exact fit (weak duality)
    X, y = cancer
    exact = SVMClassifier().fit(X, y)
    approx = SVMClassifier(
        method="subgradient", solver_options={"epochs": 3, "random_state": 0}
    ).fit(X, y)
    assert not approx.certificate_.passed and approx.certificate_.relative_gap > EXACT
    assert approx.certificate_.primal_objective >= exact.certificate_.dual_objective
    assert approx.n_iter_ == 3


# ---------------------------------------------------------------------- scikit-learn protocol
def _expected_failures(estimator):
    if estimator.kernel != "precomputed":
        return {}
    reason = (
        "the check passes a random non-symmetric matrix as a precomputed Gram matrix; qpsvm "
        "rejects kernels that are not symmetric positive semidefinite (the dual would not be "
        "convex, so no certificate exists)"
    )
    return {"check_estimators_dtypes": reason, "check_positive_only_tag_during_fit": reason}


@parametrize_with_checks(
    [
        SVMClassifier(),
        SVMClassifier(kernel="rbf", gamma=0.1),
        SVMClassifier(kernel="precomputed"),
    ],
    expected_failed_checks=_expected_failures,
)
def test_check_estimator(estimator, check):
    # gamma="scale" depends on the variance of X, which repeating samples changes, so the
    # sample-weight equivalence check needs a fixed gamma (libsvm's SVC is exempted likewise)
    check(estimator)


def test_pipeline_cross_validation_and_grid_search():
    # on raw (unscaled) cancer features the pipeline standardises inside each fold; both
    # libraries solve the same problem per fold, so their fold accuracies agree up to a point
    # or two lying on the boundary
    X, y = load_breast_cancer(return_X_y=True)
    ours = cross_val_score(make_pipeline(StandardScaler(), SVMClassifier(C=0.1)), X, y, cv=3)
    ref = cross_val_score(
        make_pipeline(StandardScaler(), SVC(kernel="linear", C=0.1, tol=1e-8)), X, y, cv=3
    )
    np.testing.assert_allclose(ours, ref, atol=2 / 189)
    search = GridSearchCV(
        make_pipeline(StandardScaler(), SVMClassifier()), {"svmclassifier__C": [0.01, 1.0]}, cv=3
    ).fit(X, y)
    best = search.best_estimator_[-1]
    assert best.certificate_.passed and best.C in (0.01, 1.0)


def test_fit_errors_are_typed(cancer):
    X, y = cancer
    with pytest.raises(qpsvm.InvalidInputError, match="formulation must be one of"):
        SVMClassifier(formulation="hard").fit(X, y)
    with pytest.raises(qpsvm.InvalidInputError, match="primal formulation needs kernel='linear'"):
        SVMClassifier(formulation="primal", kernel="rbf").fit(X, y)
    with pytest.raises(qpsvm.InvalidInputError, match="Only binary classification"):
        SVMClassifier(kernel="rbf").fit(X[:150], np.arange(150) % 3)
    with pytest.raises(qpsvm.InvalidInputError, match="NaN"):
        SVMClassifier().fit(np.where(np.eye(569, 30) > 0, np.nan, X), y)
    with pytest.raises(qpsvm.InvalidInputError, match="only one class"):
        SVMClassifier().fit(X, y, sample_weight=(y == 1).astype(float))
    with pytest.raises(qpsvm.InvalidInputError, match="unknown method"):
        SVMClassifier(method="bundle").fit(X, y)
    with pytest.raises(qpsvm.InvalidInputError, match="C must be finite and > 0"):
        SVMClassifier(C=-1.0).fit(X, y)
    with pytest.raises(NotFittedError):
        SVMClassifier().predict(X)
    clf = SVMClassifier().fit(X, y)
    with pytest.raises(qpsvm.InvalidInputError, match="features"):
        clf.predict(X[:, :5])


# --------------------------------------------------------------------------------- ranking
@pytest.fixture(scope="module")
def queries():
    # 8 queries of 12 items whose relevance (0..3) follows a hidden linear score plus noise
    rng = np.random.default_rng(7)
    X = rng.normal(size=(96, 5))
    relevance = np.digitize(
        X @ np.array([2.0, -1.0, 0.5, 0.0, 0.0]) + 0.3 * rng.normal(size=96), [-1.5, 0.0, 1.5]
    )
    return X, relevance, np.repeat(np.arange(8), 12)


def test_rank_svm_is_the_certified_ranking_optimum(queries):
    X, y, groups = queries
    ranker = RankSVM(C=2.0).fit(X, y, groups=groups)
    ref = qpsvm.RankingSVM(X, y=y, groups=groups, C=2.0).solve()
    assert ranker.certificate_.passed and ranker.formulation_ == "RankingSVM"
    np.testing.assert_allclose(ranker.coef_, ref.w, atol=1e-8)
    np.testing.assert_allclose(ranker.predict(X), X @ ref.w, atol=1e-8)
    # score is the pairwise accuracy of the metric module on the same pairs
    assert ranker.score(X, y, groups) == pytest.approx(
        pairwise_accuracy(y, X @ ref.w, groups), abs=1e-12
    )
    assert 0.0 <= ndcg_at_k(y, ranker.predict(X), groups, k=5) <= 1.0


def test_rank_svm_from_game_outcomes():
    # three teams, outcomes (winner, loser) consistent with the order 0 > 2 > 1: the learned
    # scores reproduce that order, every game is predicted correctly
    teams = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    games = np.array([[0, 2], [2, 1], [0, 1]])
    ranker = RankSVM(C=10.0).fit(teams, pairs=games)
    assert np.argsort(-ranker.predict(teams)).tolist() == [0, 2, 1]
    assert ranker.score(teams, pairs=games) == 1.0
    np.testing.assert_array_equal(ranker.pairs_, games)


def test_rank_svm_grid_search(queries):
    X, y, _ = queries
    search = GridSearchCV(RankSVM(), {"C": [0.1, 10.0]}, cv=3).fit(X, y)
    assert search.best_estimator_.certificate_.passed
    assert 0.5 < search.best_score_ <= 1.0  # better than a constant score (0.5)


def test_rank_svm_errors(queries):
    X = queries[0]
    with pytest.raises(qpsvm.InvalidInputError, match="no preferences"):
        RankSVM().fit(X)
    with pytest.raises(qpsvm.InvalidInputError, match="itself"):
        RankSVM().fit(X, pairs=[[0, 0]])
    with pytest.raises(NotFittedError):
        RankSVM().predict(X)


# ------------------------------------------------------------------------------ structured
@pytest.fixture(scope="module")
def chains():
    data = make_chains(n_sequences=60, mean_length=5, n_features=12, n_states=4, random_state=1)
    return data.X[:40], data.Y[:40], data.X[40:], data.Y[40:], ChainModel(12, 4)


def test_structured_svm_is_the_certified_structural_optimum(chains):
    X, Y, X_test, Y_test, model = chains
    svm = StructuredSVM(model, C=0.5).fit(X, Y)
    f = qpsvm.StructuralSVM(model, X, Y, C=0.5)
    ref = f.solve()
    assert svm.certificate_.passed and svm.formulation_ == "StructuralSVM"
    # the optimum is unique (strongly convex), both are certified at 1e-9 relative:
    # ||w - w*|| <= sqrt(2 gap) for each
    bound = np.nextafter(svm.certificate_.distance_bound + ref.certificate.distance_bound, np.inf)
    assert distance_lower(svm.coef_, ref.w) <= bound
    predictions = svm.predict(X_test)
    expected = f.predict(X_test, svm.solution_)
    assert all(np.array_equal(a, b) for a, b in zip(predictions, expected, strict=True))
    # score is minus the mean Hamming loss
    hamming = np.mean([np.sum(a != b) for a, b in zip(predictions, Y_test, strict=True)])
    assert svm.score(X_test, Y_test) == pytest.approx(-hamming)
    assert svm.n_iter_ == svm.solution_.n_iter and len(svm.solution_.history) == svm.n_iter_ + 1


def test_structured_svm_with_multiclass_model_is_crammer_singer(iris):
    # Psi(x, y) = e_y (x) x with the 0/1 loss makes the structural SVM the Crammer-Singer SVM
    X, y = iris
    svm = StructuredSVM(MulticlassModel(4, 3), C=1.0).fit(X, y)
    cs = SVMClassifier(C=1.0, fit_intercept=False).fit(X, y)
    assert svm.certificate_.passed and cs.certificate_.passed
    bound = np.nextafter(svm.certificate_.distance_bound + cs.certificate_.distance_bound, np.inf)
    assert distance_lower(svm.coef_.reshape(3, 4), cs.coef_) <= bound
    np.testing.assert_array_equal(svm.predict(X), cs.predict(X))
    assert svm.score(X, y) == pytest.approx(cs.score(X, y) - 1.0)


def test_structured_svm_grid_search(iris):
    X, y = iris
    # not a classifier, so no stratified folds: shuffle (iris is sorted by class)
    folds = KFold(3, shuffle=True, random_state=0)
    search = GridSearchCV(StructuredSVM(MulticlassModel(4, 3)), {"C": [0.01, 1.0]}, cv=folds)
    search.fit(X, y)
    assert search.best_estimator_.certificate_.passed
    assert -0.2 < search.best_score_ <= 0.0  # minus the 0/1 loss: accuracy above 80%


def test_structured_svm_errors(chains):
    X, Y, _, _, model = chains
    with pytest.raises(qpsvm.InvalidTypeError, match="JointFeatureModel"):
        StructuredSVM(object()).fit(X, Y)
    with pytest.raises(qpsvm.InvalidInputError, match="rescaling"):
        StructuredSVM(model, rescaling="both").fit(X, Y)
    with pytest.raises(qpsvm.InvalidInputError):
        StructuredSVM(model).fit(X, Y[:-1])
    with pytest.raises(NotFittedError):
        StructuredSVM(model).predict(X)

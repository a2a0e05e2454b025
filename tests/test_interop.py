"""Other solvers' answers validated on the problems they solved (qpsvm.interop, `qpsvm validate`).

The references are the real tools: scikit-learn's estimators and the official LIBLINEAR / LIBSVM
bindings (test extra), their model objects and the model files they write. Each answer near the
optimum is certified on the problem its tool states (loss, intercept mode, label order, kernel
and gamma, class weights, one-vs-rest / one-vs-one); the certificate's gap bounds its exact
suboptimality; problems qpsvm cannot state are refused by name.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_iris, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, SVR, LinearSVC, LinearSVR, NuSVC

import qpsvm
from qpsvm.cli import EXIT_CANNOT_CHECK, EXIT_NOT_CERTIFIED, main
from qpsvm.exceptions import InvalidInputError, InvalidTypeError, UnsupportedProblemError
from qpsvm.interop import detect_format, validate

liblinear = pytest.importorskip("liblinear.liblinearutil", reason="liblinear-official")
libsvm = pytest.importorskip("libsvm.svmutil", reason="libsvm-official")


@pytest.fixture(scope="module")
def blobs():
    """Two well-separated noisy classes, labels 0/1 with a 0 first (LIBLINEAR's first label)."""
    X, y = make_classification(
        n_samples=200, n_features=5, n_informative=4, n_redundant=0, flip_y=0.05, random_state=3
    )
    X = StandardScaler().fit_transform(X)
    order = np.argsort(y, kind="stable")  # all 0s first: LIBLINEAR / LIBSVM take 0 as positive
    return X[order], y[order]


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _sound(v):
    """Every part: the certified gap bounds the exact suboptimality, the distance bound the
    distance to w* (weak duality and strong convexity; ``exact=True`` gave the optimum)."""
    for part in v.parts:
        cert, cmp = part.certificate, part.comparison
        assert cmp.suboptimality <= cert.gap * (1 + 1e-6) + 1e-12 * max(1.0, cert.primal_objective)
        if cert.distance_bound is not None:  # None: a penalty that is not strongly convex (L1)
            assert cmp.distance <= cert.distance_bound * (1 + 1e-6) + 1e-9


def test_linearsvc_hinge_regularized_bias_is_certified(blobs):
    X, y = blobs
    est = LinearSVC(loss="hinge", C=0.5, tol=1e-10, max_iter=1_000_000).fit(X, y)
    v = validate(est, X, y, exact=True)
    assert v.spec.intercept == "regularized" and v.spec.intercept_scaling == 1.0
    assert v.passed, v
    _sound(v)


def test_liblinear_object_and_file_agree_and_take_the_first_label_as_positive(blobs, tmp_path):
    X, y = blobs
    model = liblinear.train(y, X, "-s 3 -c 0.05 -e 1e-10 -B 1 -q")
    path = tmp_path / "model.txt"
    liblinear.save_model(str(path), model)
    assert detect_format(path.read_text()) == "liblinear"
    # at C = 0.05 LIBLINEAR converges (gap ~1e-13) whatever the state of the C library's rand(),
    # which orders its coordinates and which earlier tests advance; at C = 0.5 it stops at its
    # iteration cap, 2e-6 to 6e-5 relative depending on that state
    from_object = validate(model, X, y, exact=True)
    from_file = validate(str(path), X, y, C=0.05)
    assert from_object.spec.conversions[-1].startswith("labels: LIBLINEAR predicts its first")
    assert from_object.passed and from_file.passed, (from_object, from_file)
    _sound(from_object)
    a, b = from_object.parts[0].certificate, from_file.parts[0].certificate
    assert a.primal_objective == b.primal_objective  # %.17g in the file: the same numbers
    with pytest.raises(InvalidInputError, match="does not record its C"):
        validate(str(path), X, y)
    with pytest.raises(InvalidInputError, match=r"records C=0\.05"):
        validate(model, X, y, C=2.0)


def test_liblinear_class_weights_come_from_the_object_or_the_caller(blobs, tmp_path):
    X, y = blobs
    model = liblinear.train(y, X, "-s 3 -c 0.5 -e 1e-10 -w1 3 -q")
    v = validate(model, X, y, exact=True)
    assert v.spec.class_weight == {1: 3.0}
    _sound(v)
    path = tmp_path / "weighted.txt"
    liblinear.save_model(str(path), model)
    by_hand = validate(str(path), X, y, C=0.5, class_weight={1: 3.0})
    assert by_hand.parts[0].certificate.gap == v.parts[0].certificate.gap
    with pytest.raises(InvalidInputError, match="records class weights"):
        validate(model, X, y, class_weight={1: 2.0})


def test_libsvm_rbf_object_file_and_svc_agree(blobs, tmp_path):
    X, y = blobs
    model = libsvm.svm_train(y, X, "-s 0 -t 2 -g 0.2 -c 1 -e 1e-12 -q")
    path = tmp_path / "svm.txt"
    libsvm.svm_save_model(str(path), model)
    from_object = validate(model, X, y, exact=True)
    from_file = validate(str(path), X, y, C=1.0)  # support vectors matched to the data's rows
    svc = validate(SVC(kernel="rbf", gamma=0.2, C=1.0, tol=1e-12).fit(X, y), X, y)
    assert from_object.spec.gamma == 0.2 and from_object.spec.kernel == "rbf"
    _sound(from_object)
    objectives = [v.parts[0].certificate.primal_objective for v in (from_object, from_file, svc)]
    np.testing.assert_allclose(objectives, objectives[0], rtol=1e-9)
    for v in (from_object, from_file, svc):
        assert v.parts[0].certificate.relative_gap <= 1e-6, v


def test_one_vs_one_kernel_models_are_certified_per_pair(iris, tmp_path):
    X, y = iris
    svc = SVC(kernel="rbf", gamma=0.5, C=2.0, tol=1e-12).fit(X, y)
    v = validate(svc, X, y, exact=True)
    assert [p.name for p in v.parts] == ["0 vs 1", "0 vs 2", "1 vs 2"]
    _sound(v)
    assert all(p.certificate.relative_gap <= 1e-6 for p in v.parts), v
    model = libsvm.svm_train(y, X, "-s 0 -t 2 -g 0.5 -c 2 -e 1e-12 -q")
    path = tmp_path / "iris.svm"
    libsvm.svm_save_model(str(path), model)
    from_file = validate(str(path), X, y, C=2.0)
    np.testing.assert_allclose(
        [p.certificate.primal_objective for p in from_file.parts],
        [p.certificate.primal_objective for p in v.parts],
        rtol=1e-8,
    )


def test_linear_multiclass_one_vs_rest_and_crammer_singer(iris):
    X, y = iris
    ovr = LinearSVC(loss="hinge", C=0.3, tol=1e-10, max_iter=1_000_000).fit(X, y)
    v = validate(ovr, X, y, exact=True)
    assert v.spec.multi_class == "ovr" and len(v.parts) == 3
    _sound(v)
    cs = LinearSVC(multi_class="crammer_singer", C=0.3, tol=1e-10, max_iter=1_000_000).fit(X, y)
    v = validate(cs, X, y, exact=True)
    assert v.spec.multi_class == "crammer_singer" and v.passed, v


@pytest.mark.parametrize("fit_intercept, scaling", [(True, 1.0), (True, 3.0), (False, 1.0)])
def test_crammer_singer_intercept_is_liblinears_regularised_bias(iris, fit_intercept, scaling):
    """LinearSVC(multi_class="crammer_singer") is liblinear -s 4 on [X, B]: the intercepts are
    B times the last column of a W penalised whole (intercept_ = B w_B), or absent. Its answer
    at tol 1e-12 certifies on that problem, and an intercept moved by 1e-3 does not (the
    intercept enters the problem judged, it is neither dropped nor free)."""
    X, y = iris
    est = LinearSVC(
        multi_class="crammer_singer",
        fit_intercept=fit_intercept,
        intercept_scaling=scaling,
        C=0.5,
        tol=1e-12,
        max_iter=1_000_000,
    ).fit(X, y)
    v = validate(est, X, y)
    expected = "regularized" if fit_intercept else "none"
    assert v.spec.intercept == expected and v.spec.intercept_scaling == scaling
    assert v.passed, v
    f = v.parts[0].formulation
    assert f.n_features == X.shape[1] + fit_intercept and f.intercept.mode == expected
    if fit_intercept:
        est.intercept_ = est.intercept_ + np.array([1e-3, 0.0, -1e-3])
        assert not validate(est, X, y).passed


@pytest.mark.parametrize("mode", ["free", "regularized"])
def test_json_multiclass_model_is_judged_with_its_intercepts(iris, tmp_path, mode):
    """A multiclass JSON model's intercepts enter the problem judged: its "intercept" mode is
    the formulation's, and intercepts without a mode are refused (they were dropped, and the
    model certified as if it had none)."""
    X, y = iris
    f = qpsvm.MulticlassSVM(X, y, C=0.5, intercept=mode, intercept_scaling=2.0)
    sol = f.solve()
    B = f.intercept.scaling
    model = {
        "formulation": "crammer_singer",
        "w": sol.w[:, :-1].tolist(),
        "b": (B * sol.w[:, -1]).tolist(),
        "C": 0.5,
        "classes": [0, 1, 2],
        "intercept": mode,
        "intercept_scaling": 2.0,
    }
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))
    v = validate(str(path), X, y)
    assert v.spec.intercept == mode and v.passed, v
    model["b"][0] += 1e-3
    path.write_text(json.dumps(model))
    assert not validate(str(path), X, y).passed
    del model["intercept"]
    path.write_text(json.dumps(model))
    with pytest.raises(InvalidInputError, match="nonzero intercepts"):
        validate(str(path), X, y)


def test_linear_l1_multiclass_is_one_binary_l1_problem_per_class(iris):
    """LinearSVC(penalty="l1", dual=False) with three classes (liblinear -s 5) is one-vs-rest:
    validate builds one binary squared-hinge L1 problem per class, not the multiclass L1
    problem (MulticlassSVM(penalty="l1"), which no liblinear solver states)."""
    X, y = iris
    est = LinearSVC(penalty="l1", dual=False, C=0.3, tol=1e-12, max_iter=1_000_000)
    with warnings.catch_warnings():  # liblinear -s 5 may stop at its iteration cap: the
        warnings.simplefilter("ignore", ConvergenceWarning)  # parts' gaps then say how far
        est.fit(X, y)
    v = validate(est, X, y, exact=True)
    assert v.spec.family == "multiclass" and v.spec.multi_class == "ovr"
    assert v.spec.penalty == "l1" and v.spec.loss == "squared_hinge"
    assert len(v.parts) == 3
    assert all(p.formulation.penalty.name == "l1" for p in v.parts)
    _sound(v)


def test_sgd_converts_alpha_to_C(blobs):
    X, y = blobs
    est = SGDClassifier(alpha=0.01, max_iter=2000, tol=None, random_state=0).fit(X, y)
    v = validate(est, X, y, exact=True)
    assert v.spec.C == pytest.approx(1.0 / (0.01 * len(y)), rel=1e-15)
    assert v.spec.intercept == "free"
    _sound(v)


@pytest.mark.parametrize(
    "params",
    [{}, {"penalty": "l1", "dual": False}, {"fit_intercept": False}, {"intercept_scaling": 10.0}],
)
def test_linearsvc_default_squared_hinge_and_l1_are_certified(blobs, params):
    # LinearSVC's default problem: squared hinge, regularised bias; penalty="l1" is -s 5
    X, y = blobs
    est = LinearSVC(C=0.5, tol=1e-10, max_iter=1_000_000, **params).fit(X, y)
    v = validate(est, X, y, exact=True)
    assert v.spec.loss == "squared_hinge" and v.passed, v
    assert v.spec.penalty == params.get("penalty", "l2")
    _sound(v)


def test_regression_models_are_certified(tmp_path):
    X, y = load_diabetes(return_X_y=True)
    X, y = StandardScaler().fit_transform(X), (y - y.mean()) / y.std()
    for est in (
        LinearSVR(C=1.0, epsilon=0.1, tol=1e-10, max_iter=1_000_000),
        LinearSVR(C=1.0, epsilon=0.1, loss="squared_epsilon_insensitive", tol=1e-10),
        SVR(C=1.0, epsilon=0.1, tol=1e-10),
    ):
        v = validate(est.fit(X, y), X, y, exact=True)
        assert v.spec.family == "regression" and v.spec.epsilon == 0.1
        assert v.parts[0].certificate.relative_gap <= 1e-7, v
        _sound(v)
    model = libsvm.svm_train(y, X, "-s 3 -t 2 -g 0.1 -c 1 -p 0.1 -e 1e-10 -q")
    path = tmp_path / "svr.txt"
    libsvm.svm_save_model(str(path), model)
    from_object = validate(model, X, y)
    from_file = validate(str(path), X, y, C=1.0, epsilon=0.1)
    assert from_object.spec.epsilon == 0.1
    assert from_object.parts[0].certificate.primal_objective == pytest.approx(
        from_file.parts[0].certificate.primal_objective, rel=1e-9
    )
    with pytest.raises(InvalidInputError, match="does not record its epsilon"):
        validate(str(path), X, y, C=1.0)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda X, y: LogisticRegression().fit(X, y), "LogisticRegression"),
        (lambda X, y: NuSVC().fit(X, y), "nu_svc"),
        (lambda X, y: SVC(kernel="sigmoid").fit(X, y), "sigmoid"),
        (lambda X, y: liblinear.train(y, X, "-s 0 -q"), "logistic"),
        (lambda X, y: libsvm.svm_train(y, X, "-s 1 -q"), "nu_svc"),
    ],
)
def test_problems_qpsvm_cannot_state_are_refused_by_name(blobs, make, message):
    X, y = blobs
    with pytest.raises(UnsupportedProblemError, match=message):
        validate(make(X, y), X, y)


def test_bad_models_get_typed_errors(blobs, iris, tmp_path):
    X, y = blobs
    with pytest.raises(InvalidTypeError, match="cannot read a"):
        validate(object(), X, y)
    with pytest.raises(InvalidInputError, match="not fitted"):
        validate(LinearSVC(), X, y)
    text = tmp_path / "binary.txt"
    text.write_text("1 2 3 4\n")
    with pytest.raises(InvalidInputError, match="binary model"):
        validate(str(text), iris[0], iris[1], C=1.0)
    short = tmp_path / "short.txt"
    short.write_text("1 2 3\n")
    with pytest.raises(InvalidInputError, match="holds 3"):
        validate(str(short), X, y, C=1.0)
    model = libsvm.svm_train(y, X, "-s 0 -t 2 -q")
    path = tmp_path / "svm.txt"
    libsvm.svm_save_model(str(path), model)
    with pytest.raises(InvalidInputError, match="not a row of the data"):
        validate(str(path), X + 1.0, y, C=1.0)


def test_a_flipped_sign_is_explained(blobs, tmp_path):
    X, y = blobs
    sol = qpsvm.SoftMarginPrimal(X, y, C=0.5).solve()
    text = tmp_path / "flipped.txt"
    text.write_text(" ".join(str(float(v)) for v in [*(-sol.w), -sol.b]))
    v = validate(str(text), X, y, C=0.5)
    assert not v.passed
    assert "sign flipped" in v.parts[0].note
    text.write_text(" ".join(str(float(v)) for v in [*sol.w, sol.b]))
    assert validate(str(text), X, y, C=0.5).passed


def test_svmrank_model_file(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    rel = np.digitize(X @ [1.0, -1.0, 0.5, 0.0] + 0.3 * rng.normal(size=60), [-1.0, 0.0, 1.0])
    qid = np.repeat(np.arange(1, 7), 10)
    c = 3.0  # SVM-rank's -c; qpsvm's C is c / 6 queries
    X32 = X.astype(np.float32).astype(np.float64)  # SVM-rank stores features as 32-bit floats
    sol = qpsvm.RankingSVM(X32, y=rel, groups=qid, C=c / 6).solve()
    header = [
        "SVM-light Version V6.20",
        "0 # kernel type",
        "3 # kernel parameter -d",
        "1 # kernel parameter -g",
        "1 # kernel parameter -s",
        "1 # kernel parameter -r",
        "empty# kernel parameter -u",
        "4 # highest feature index",
        "6 # number of training documents",
        "2 # number of support vectors plus 1",
        "0 # threshold b, each following line is a SV (starting with alpha*y)",
    ]
    line = "1 " + " ".join(f"{k + 1}:{float(v)!r}" for k, v in enumerate(sol.w)) + " #"
    path = tmp_path / "rank.model"
    path.write_text("\n".join([*header, line]) + "\n")
    v = validate(str(path), X, rel, groups=qid, C=c)
    assert v.spec.C == pytest.approx(c / 6, rel=1e-15) and v.passed, v


def test_cli_validate_many_models_and_exit_codes(blobs, tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file

    X, y = blobs
    data = tmp_path / "train.svm"
    dump_svmlight_file(X, y, str(data), zero_based=False)
    good, logistic = tmp_path / "good.txt", tmp_path / "logistic.txt"
    # C = 0.05: LIBLINEAR converges whatever the state of rand() (see the test above); at C = 0.5
    # it stops at its iteration cap, up to 1.4e-3 off depending on which tests ran before
    liblinear.save_model(str(good), liblinear.train(y, X, "-s 3 -c 0.05 -e 1e-10 -B 1 -q"))
    liblinear.save_model(str(logistic), liblinear.train(y, X, "-s 0 -q"))
    assert main(["certify", str(data), str(good), "--C", "0.05", "--tol", "1e-4"]) == 0
    assert main(["certify", str(data), str(logistic), "--C", "1"]) == EXIT_CANNOT_CHECK
    assert "cannot check" in capsys.readouterr().err
    assert main(["certify", str(data), str(good), "--C", "0.05", "--tol", "1e-30"]) == (
        EXIT_NOT_CERTIFIED
    )
    capsys.readouterr()
    code = main(
        ["validate", str(data), str(good), str(logistic), "--C", "0.05", "--tol", "1e-4", "--json"]
    )
    assert code == EXIT_CANNOT_CHECK
    reports = json.loads(capsys.readouterr().out)
    assert reports[0]["passed"] is True and "logistic" in reports[1]["error"]
    assert main(["certify", str(data), str(good), "--C", "0.05", "--weight", "x"]) == 2

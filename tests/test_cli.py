"""The ``qpsvm`` command line: fit -> JSON -> certify round trips, and exit codes for bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file, load_iris
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

import qpsvm
from qpsvm.cli import EXIT_CERTIFIED, EXIT_NOT_CERTIFIED, EXIT_USAGE, main


@pytest.fixture(scope="module")
def binary_file(tmp_path_factory, cancer):
    X, y = cancer
    path = tmp_path_factory.mktemp("data") / "cancer.svm"
    dump_svmlight_file(X, y, str(path))
    return path


def _fit(path, model, *extra):
    return main(["fit", str(path), "--C", "0.5", "--output", str(model), *extra])


def test_fit_writes_the_certified_optimum_and_certify_passes(binary_file, tmp_path, cancer, capsys):
    model = tmp_path / "model.json"
    assert _fit(binary_file, model) == EXIT_CERTIFIED
    out = capsys.readouterr().out
    assert "SoftMarginPrimal (primal), C=0.5, 569 samples x 30 features" in out
    assert "passed                     True" in out
    saved = json.loads(model.read_text())
    # the JSON holds the optimum of the same problem solved in Python (floats round-trip
    # exactly through JSON, so the certificate below sees the very same point)
    X, y = cancer
    ref = qpsvm.SoftMarginPrimal(X, y, C=0.5).solve()
    np.testing.assert_allclose(saved["w"], ref.w, atol=1e-8)
    assert saved["b"] == pytest.approx(ref.b, abs=1e-8)
    assert saved["formulation"] == "primal" and saved["class"] == "SoftMarginPrimal"
    assert saved["C"] == 0.5 and saved["fit_intercept"] is True
    assert saved["classes"] == [0.0, 1.0] and saved["n_features"] == 30
    assert saved["certificate"]["passed"] is True
    assert saved["certificate"]["relative_gap"] <= 1e-9
    assert main(["certify", str(binary_file), str(model)]) == EXIT_CERTIFIED


def test_method_choices_come_from_the_registry(binary_file, tmp_path, capsys):
    # the working set reaches the same certified optimum as the default (the unique P*); an
    # approximate method is certified afterwards, and 3 epochs of Pegasos are not the optimum
    model = tmp_path / "ws.json"
    assert _fit(binary_file, model, "--method", "working_set") == EXIT_CERTIFIED
    assert "solved by CLARABEL" in capsys.readouterr().out
    online = tmp_path / "online.json"
    assert _fit(binary_file, online, "--method", "subgradient") == EXIT_NOT_CERTIFIED
    argv = ["fit", str(binary_file), "--method", "smo", "--formulation", "crammer_singer"]
    assert main(argv) == EXIT_USAGE
    assert "method='smo' (sequential minimal" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fit", str(binary_file), "--method", "homotopy"])  # a path method only


def test_perturbed_model_is_not_certified(binary_file, tmp_path, capsys):
    model = tmp_path / "model.json"
    _fit(binary_file, model)
    saved = json.loads(model.read_text())
    saved["w"][0] += 1e-3  # ||w - w*|| = 1e-3 raises P by ~1e-6 relative, far above 1e-9
    bad = tmp_path / "perturbed.json"
    bad.write_text(json.dumps(saved))
    capsys.readouterr()
    assert main(["certify", str(binary_file), str(bad)]) == EXIT_NOT_CERTIFIED
    assert "verdict: NOT certified" in capsys.readouterr().out


def test_text_model_w_then_b(binary_file, tmp_path, capsys):
    model = tmp_path / "model.json"
    _fit(binary_file, model)
    saved = json.loads(model.read_text())
    text = tmp_path / "model.txt"
    text.write_text(" ".join(map(repr, saved["w"])) + "\n" + repr(saved["b"]) + "\n")
    assert main(["certify", str(binary_file), str(text), "--C", "0.5"]) == EXIT_CERTIFIED
    # a text file does not know its C: asking for it is a usage error
    capsys.readouterr()
    assert main(["certify", str(binary_file), str(text)]) == EXIT_USAGE
    assert "does not record its C" in capsys.readouterr().err


def test_another_solvers_model(binary_file, tmp_path, cancer):
    # liblinear stops at its tolerance 1e-4 and regularises its intercept: not exact at 1e-9,
    # but within 1e-3 of the optimum (the demo measures ~7e-6 relative on this problem)
    X, y = cancer
    svc = LinearSVC(loss="hinge", C=0.5, max_iter=100_000).fit(X, y)
    model = tmp_path / "liblinear.json"
    model.write_text(json.dumps({"w": svc.coef_[0].tolist(), "b": float(svc.intercept_[0])}))
    args = ["certify", str(binary_file), str(model), "--C", "0.5"]
    assert main(args) == EXIT_NOT_CERTIFIED
    assert main([*args, "--tol", "1e-3"]) == EXIT_CERTIFIED


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("this is not svmlight\n", "cannot read"),
        ("", "holds no samples"),
        ("0 0:1.0\n1 0:nan\n", "NaN"),
    ],
)
def test_bad_data_file_exits_2(tmp_path, capsys, content, message):
    path = tmp_path / "bad.svm"
    path.write_text(content)
    assert main(["fit", str(path)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("qpsvm fit: error:") and message in err


def test_missing_and_malformed_files_exit_2(binary_file, tmp_path, capsys):
    assert main(["fit", str(tmp_path / "nope.svm")]) == EXIT_USAGE
    assert "does not exist" in capsys.readouterr().err
    assert main(["certify", str(binary_file), str(tmp_path / "nope.json")]) == EXIT_USAGE
    assert "does not exist" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text('{"w": [1, 2')
    assert main(["certify", str(binary_file), str(broken), "--C", "1"]) == EXIT_USAGE
    assert "not valid JSON" in capsys.readouterr().err
    no_w = tmp_path / "no_w.json"
    no_w.write_text('{"b": 1.0}')
    assert main(["certify", str(binary_file), str(no_w), "--C", "1"]) == EXIT_USAGE
    assert 'no "w"' in capsys.readouterr().err
    words = tmp_path / "words.txt"
    words.write_text("w is 1 and b is 2\n")
    assert main(["certify", str(binary_file), str(words), "--C", "1"]) == EXIT_USAGE
    assert "must be numbers" in capsys.readouterr().err


def test_model_that_does_not_match_the_data_exits_2(binary_file, tmp_path, capsys):
    # 5 weights for a file with 30 features, and classes the data do not have
    short = tmp_path / "short.json"
    short.write_text(json.dumps({"w": [0.0] * 5, "b": 0.0, "C": 1.0}))
    assert main(["certify", str(binary_file), str(short)]) == EXIT_USAGE
    assert "the data have 30 features" in capsys.readouterr().err
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"w": [0.0] * 30, "b": 0.0, "C": 1.0, "classes": [-1, 1]}))
    assert main(["certify", str(binary_file), str(other)]) == EXIT_USAGE
    assert "the model does not know" in capsys.readouterr().err


def test_usage_errors_exit_2(binary_file, capsys):
    for argv in (["fit"], ["fit", str(binary_file), "--formulation", "nope"], ["nope"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == EXIT_USAGE
    assert main(["fit", str(binary_file), "--C", "-1"]) == EXIT_USAGE
    assert "C must be finite and > 0" in capsys.readouterr().err


def test_letor_file_fits_a_ranking_svm(tmp_path):
    # qid: in the file selects the ranking SVM, pairs inside each query; no intercept
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 4))
    y = np.digitize(X @ [1.0, -1.0, 0.5, 0.0] + 0.2 * rng.normal(size=40), [-1.0, 0.0, 1.0])
    qid = np.repeat(np.arange(1, 5), 10)
    path = tmp_path / "train.letor"
    dump_svmlight_file(X, y, str(path), query_id=qid, zero_based=False)
    model = tmp_path / "rank.json"
    assert _fit(path, model) == EXIT_CERTIFIED
    saved = json.loads(model.read_text())
    assert saved["formulation"] == "ranking" and saved["fit_intercept"] is False
    ref = qpsvm.RankingSVM(X, y=y, groups=qid, C=0.5).solve()
    np.testing.assert_allclose(saved["w"], ref.w, atol=1e-8)
    assert main(["certify", str(path), str(model)]) == EXIT_CERTIFIED


def test_multiclass_file_fits_crammer_singer(tmp_path):
    X, y = load_iris(return_X_y=True)
    path = tmp_path / "iris.svm"
    dump_svmlight_file(StandardScaler().fit_transform(X), y, str(path))
    model = tmp_path / "iris.json"
    assert _fit(path, model) == EXIT_CERTIFIED
    saved = json.loads(model.read_text())
    # more than two labels select Crammer-Singer, which has no intercept
    assert saved["formulation"] == "crammer_singer" and np.shape(saved["w"]) == (3, 4)
    assert saved["fit_intercept"] is False
    assert main(["certify", str(path), str(model)]) == EXIT_CERTIFIED
    wrong = tmp_path / "as_binary.json"
    wrong.write_text(json.dumps({**saved, "formulation": "primal"}))
    assert main(["certify", str(path), str(wrong)]) == EXIT_USAGE


def test_console_script_entry_point(binary_file, tmp_path):
    # the installed entry point runs the same main(): exit codes reach the shell
    model = tmp_path / "model.json"
    run = subprocess.run(
        [sys.executable, "-m", "qpsvm.cli", "fit", str(binary_file), "-o", str(model)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == EXIT_CERTIFIED, run.stderr
    run = subprocess.run(
        [sys.executable, "-m", "qpsvm.cli", "certify", str(binary_file), str(tmp_path / "x")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == EXIT_USAGE and "does not exist" in run.stderr


def test_demo_still_certifies_everything(capsys):
    # the README's main job: every qpsvm answer certified, scikit-learn's measured against them
    assert main(["demo"]) == EXIT_CERTIFIED
    out = capsys.readouterr().out
    assert "all qpsvm answers certified" in out and "LinearSVC(loss='hinge')" in out

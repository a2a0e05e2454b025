"""SVM-light's own answers validated on the problem it solved (qpsvm.interop.svmlight).

The reference is the real tool: ``svm_learn`` of SVM-light V6.02, built from the C sources that
ship in the ``svmlight`` package on PyPI (its Python wrapper does not import on Python 3, the
command-line learner compiles as it is). The data sit on a grid of sixteenths below 8 in
magnitude, so every value is exact in SVM-light's 32-bit features and every product in its
single-precision dot product is exact: the kernel it used is the kernel qpsvm states. Each model's
certificate is compared with its exact suboptimality, measured from qpsvm's certified optimum.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file, make_classification

from qpsvm.cli import EXIT_NOT_CERTIFIED, main
from qpsvm.exceptions import InvalidInputError, UnsupportedProblemError
from qpsvm.interop import validate

PIP_DOWNLOAD = [
    sys.executable,
    "-m",
    "pip",
    "download",
    "--quiet",
    "--no-deps",
    "--no-binary",
    ":all:",
]
SOURCES = ["svm_learn_main.c", "svm_learn.c", "svm_common.c", "svm_hideo.c"]


@pytest.fixture(scope="module")
def svm_learn(tmp_path_factory):
    """The path of SVM-light's ``svm_learn``, compiled from the PyPI sdist's C sources."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build SVM-light's svm_learn")
    where = tmp_path_factory.mktemp("svmlight")
    download = subprocess.run(
        [*PIP_DOWNLOAD, "--dest", str(where), "svmlight==0.4"],
        capture_output=True,
        text=True,
    )
    if download.returncode != 0:
        pytest.skip(
            f"the SVM-light sources (PyPI svmlight 0.4) could not be fetched: {download.stderr}"
        )
    with tarfile.open(where / "svmlight-0.4.tar.gz") as archive:
        archive.extractall(where, filter="data")
    lib = where / "svmlight-0.4" / "lib"
    binary = where / "svm_learn"
    subprocess.run(
        [compiler, "-O2", "-w", *(str(lib / f) for f in SOURCES), "-lm", "-o", str(binary)],
        check=True,
    )
    return binary


@pytest.fixture(scope="module")
def grid_data(tmp_path_factory):
    """Two noisy classes on a grid of sixteenths (labels +1/-1), and their svmlight file."""
    X, y = make_classification(
        n_samples=160, n_features=6, n_informative=4, n_redundant=0, flip_y=0.1, random_state=2
    )
    X = np.clip(np.round(X * 16) / 16, -7.9375, 7.9375)
    y = 2.0 * y - 1.0
    path = tmp_path_factory.mktemp("svmlight-data") / "train.dat"
    dump_svmlight_file(X, y, str(path), zero_based=False)
    return X, y, path


def train(svm_learn, data, model, options):
    subprocess.run([str(svm_learn), "-v", "0", *options.split(), str(data), str(model)], check=True)
    return model


# A kernel model is about 1e-7 from its own optimum whatever -e: SVM-light caches kernel values as
# 32-bit floats (CFLOAT) and writes its threshold with 8 significant digits (%.8g); kernel models
# are certified at 1e-6. A linear model's weights are summed from alpha*y written with 32 digits
# and reach qpsvm's default 1e-9.
CASES = [
    ("-t 0 -c 1", {}, 1e-9),
    ("-t 0 -c 0.1 -b 0", {}, 1e-9),
    ("-t 0 -c 1 -j 2", {"class_weight": {1: 2.0}}, 1e-9),
    ("-t 2 -g 0.125 -c 1", {}, 1e-6),
    ("-t 2 -g 0.5 -c 10 -b 0", {}, 1e-6),
    ("-t 1 -d 2 -s 0.125 -r 1 -c 0.5", {}, 1e-6),
]


@pytest.mark.parametrize(("options", "given", "tol"), CASES)
def test_svm_light_models_are_certified_on_their_problem(
    svm_learn, grid_data, tmp_path, options, given, tol
):
    X, y, data = grid_data
    model = train(svm_learn, data, tmp_path / "m.model", f"{options} -e 1e-10")
    C = float(options.split("-c ")[1].split()[0])
    v = validate(str(model), X, y, C=C, tol=tol, exact=True, **given)
    (part,) = v.parts
    cert, cmp = part.certificate, part.comparison
    assert v.passed, v
    assert ("no intercept" in v.spec.describe()) == ("-b 0" in options)
    # The gap bounds the exact suboptimality, and is within 2x of it (qpsvm's optimum P* is known
    # to within its own certified gap, reference_gap).
    assert cmp.suboptimality >= -cmp.reference_gap
    assert cert.gap <= 2 * (cmp.suboptimality + cmp.reference_gap)


def test_a_perturbed_model_is_rejected(svm_learn, grid_data, tmp_path):
    X, y, data = grid_data
    model = train(svm_learn, data, tmp_path / "rbf.model", "-t 2 -g 0.125 -c 1 -e 1e-10")
    head, body = model.read_text().split("(starting with alpha*y)\n")
    lines = []
    for line in body.splitlines():
        coef, rest = line.split(" ", 1)
        lines.append(f"{float(coef) * 1.01!r} {rest}")
    model.write_text(head + "(starting with alpha*y)\n" + "\n".join(lines) + "\n")
    v = validate(str(model), X, y, C=1.0, tol=1e-6, exact=True)
    cmp = v.parts[0].comparison
    assert not v.passed
    assert (
        cmp.suboptimality
        <= v.parts[0].certificate.gap
        <= 2 * (cmp.suboptimality + cmp.reference_gap)
    )


def test_cli_certifies_a_kernel_model(svm_learn, grid_data, tmp_path):
    data = grid_data[2]
    model = train(
        svm_learn, data, tmp_path / "poly.model", "-t 1 -d 3 -s 0.0625 -r 1 -c 1 -e 1e-10"
    )
    assert main(["certify", str(data), str(model), "--C", "1", "--tol", "1e-6"]) == 0
    assert main(["certify", str(data), str(model), "--C", "1", "--tol", "1e-14"]) == (
        EXIT_NOT_CERTIFIED
    )


def test_sigmoid_kernel_is_refused_by_name(svm_learn, grid_data, tmp_path):
    X, y, data = grid_data
    model = train(svm_learn, data, tmp_path / "sig.model", "-t 3 -s 0.01 -c 1")
    with pytest.raises(UnsupportedProblemError, match="sigmoid"):
        validate(str(model), X, y, C=1.0)


def test_features_are_read_as_svm_light_stored_them(svm_learn, tmp_path):
    """On data that float32 does not hold, the problem is stated on the rounded data: the
    certificate of SVM-light's linear answer is tight against that problem's exact optimum."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(120, 4)) + 1 / 3
    y = np.where(X @ [1.0, -1.0, 0.5, 0.25] + 0.5 * rng.normal(size=120) > 0.3, 1.0, -1.0)
    data = tmp_path / "train.dat"
    dump_svmlight_file(X, y, str(data), zero_based=False)
    model = train(svm_learn, data, tmp_path / "lin.model", "-t 0 -c 1 -e 1e-10")
    v = validate(str(model), X, y, C=1.0, exact=True)
    assert any("float32" in c for c in v.spec.conversions)
    cmp = v.parts[0].comparison
    assert v.parts[0].certificate.gap <= 2 * (cmp.suboptimality + cmp.reference_gap)


def test_svm_light_preference_ranking_is_the_ranking_svm(svm_learn, tmp_path):
    """``svm_learn -z p``: C per pair over the pairs of a query with different targets, graded
    relevance; its answer is certified against qpsvm's RankingSVM and its w is qpsvm's."""
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(60, 4)) * 16) / 16
    rel = np.digitize(X @ [1.0, -1.0, 0.5, 0.0] + 0.3 * rng.normal(size=60), [-1.0, 0.0, 1.0])
    qid = np.repeat(np.arange(1, 7), 10)
    data = tmp_path / "rank.dat"
    dump_svmlight_file(X, rel, str(data), query_id=qid, zero_based=False)
    model = train(svm_learn, data, tmp_path / "rank.model", "-z p -c 0.5 -e 1e-10")
    v = validate(str(model), X, rel, groups=qid, C=0.5, exact=True)
    cmp = v.parts[0].comparison
    assert v.passed and v.spec.C == 0.5, v
    assert any("-z p" in c for c in v.spec.conversions)
    assert cmp.distance <= v.parts[0].certificate.distance_bound


@pytest.mark.parametrize(
    ("line", "message"),
    [("0.5 7:1.0", "indices 1..6"), ("0.5 0:1.0", "indices 1..6"), ("x 1:1", "alpha\\*y")],
)
def test_bad_support_vector_lines_are_named(tmp_path, line, message):
    header = ["SVM-light Version V6.02", "2 # kernel type", "3 # -d", "0.5 # -g", "1 # -s"]
    header += ["1 # -r", "empty# -u", "6 # highest feature index", "10 # documents"]
    header += ["2 # number of support vectors plus 1", "0.1 # threshold b"]
    path = tmp_path / "bad.model"
    path.write_text("\n".join([*header, line]) + "\n")
    with pytest.raises(InvalidInputError, match=message):
        validate(str(path), np.eye(6), np.array([1, -1, 1, -1, 1, -1]), C=1.0)

"""numba's compile cache lives outside the package, so an install leaves nothing pip does not know.

A cache written into ``site-packages/qpsvm/**/__pycache__`` survives ``pip uninstall`` and keeps
``qpsvm`` importable as a namespace package that shadows a later editable install (issue 13).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import qpsvm

PACKAGE = Path(qpsvm.__file__).resolve().parent
SCRIPT = """
import numpy as np, qpsvm
rng = np.random.default_rng(0)
X = rng.normal(size=(40, 3)); y = np.where(X[:, 0] > 0, 1, -1)
qpsvm.SoftMarginPrimal(X, y).solve(method="subgradient", epochs=1, random_state=0)
"""


def _compiled_files(root: Path) -> set[Path]:
    return {p for pattern in ("*.nbi", "*.nbc") for p in root.rglob(pattern)}


def test_compiled_kernels_are_cached_in_the_user_cache_not_in_the_package(tmp_path):
    before = _compiled_files(PACKAGE)
    env = {**os.environ, "QPSVM_CACHE_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True, timeout=600)
    cached = _compiled_files(tmp_path)
    assert any(p.name.startswith("_online_kernels.binary_epoch") for p in cached), cached
    assert _compiled_files(PACKAGE) == before
    # a second process loads the cache instead of compiling again: the index is not rewritten
    stamps = {p: p.stat().st_mtime_ns for p in cached if p.suffix == ".nbi"}
    subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True, timeout=600)
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps


def test_cache_directory_follows_the_environment(monkeypatch, tmp_path):
    from qpsvm._compile_cache import cache_directory

    monkeypatch.setenv("QPSVM_CACHE_DIR", str(tmp_path / "a"))
    assert cache_directory() == tmp_path / "a"
    monkeypatch.delenv("QPSVM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_directory() == tmp_path / "xdg" / "qpsvm"


COMPILES = """
import json
import numpy as np
from numba.core import event
import qpsvm

signatures = {}


class Compiles(event.Listener):
    def on_start(self, ev):
        pass

    def on_end(self, ev):
        f = ev.data["dispatcher"].py_func
        name = f.__module__ + "." + f.__qualname__
        signatures.setdefault(name, []).append(str(ev.data["args"]))


event.register("numba:compile", Compiles())
# the SMO loop itself, not numpy's steps that stand in for it until they would pay its compile
from qpsvm.solvers import smo
smo.NUMPY_SMO_SAMPLES = 0
rng = np.random.default_rng(0)
X = rng.normal(size=(60, 4)); y = np.where(X[:, 0] > 0, 1, -1)
f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf", gamma=0.5)
assert f.solve(method="smo", gap=1e-9).certificate.passed
print(json.dumps(signatures))
"""


@pytest.mark.slow
def test_a_cold_smo_call_compiles_each_function_once(tmp_path):
    # every compiled function on the SMO path is compiled for one signature: a constant reaching
    # a compiled call as Literal[int] (or another argument type) would compile its chain again
    env = {**os.environ, "QPSVM_CACHE_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", COMPILES], env=env, check=True, timeout=900, capture_output=True
    )
    signatures = json.loads(out.stdout.decode().splitlines()[-1])
    ours = {name: sigs for name, sigs in signatures.items() if name.startswith("qpsvm.")}
    assert "qpsvm.solvers._online_kernels.smo_loop" in ours
    assert "qpsvm.kernels.kernel_row" in ours
    assert {name: len(sigs) for name, sigs in ours.items() if len(sigs) > 1} == {}


def test_the_source_stamp_changes_with_any_source_file(tmp_path):
    from qpsvm._compile_cache import source_stamp

    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    (tmp_path / "notes.txt").write_text("not a source file\n")
    stamps = [source_stamp(tmp_path)]
    (tmp_path / "notes.txt").write_text("still not a source file\n")
    stamps.append(source_stamp(tmp_path))
    assert stamps[1] == stamps[0]
    st = (tmp_path / "sub" / "b.py").stat()
    os.utime(tmp_path / "sub" / "b.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    stamps.append(source_stamp(tmp_path))
    (tmp_path / "a.py").write_text("x = 10\n")
    stamps.append(source_stamp(tmp_path))
    (tmp_path / "c.py").write_text("")
    stamps.append(source_stamp(tmp_path))
    assert len(set(stamps[1:])) == 4  # touched, resized, added: each a new stamp


def test_editing_a_callee_in_another_file_recompiles_its_callers(tmp_path):
    # binary_epoch (solvers/_online_kernels.py) has the row accessors of _rows.py compiled into
    # it: numba's own stamp (the caller's file alone) would keep serving the old code
    import shutil

    copy = tmp_path / "src" / "qpsvm"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    env = {
        **os.environ,
        "QPSVM_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(tmp_path / "src"),
    }
    run = [sys.executable, "-c", "import qpsvm; print(qpsvm.__file__)\n" + SCRIPT]
    out = subprocess.run(run, env=env, cwd=tmp_path, check=True, timeout=600, capture_output=True)
    assert out.stdout.decode().splitlines()[0] == str(copy / "__init__.py")
    (index,) = [
        p
        for p in _compiled_files(tmp_path / "cache")
        if p.name.startswith("_online_kernels.binary_epoch") and p.suffix == ".nbi"
    ]
    before = index.stat().st_mtime_ns
    with open(copy / "_rows.py", "a") as f:
        f.write("\n# an edit of a callee's file\n")
    subprocess.run(run, env=env, cwd=tmp_path, check=True, timeout=600, capture_output=True)
    assert index.stat().st_mtime_ns != before

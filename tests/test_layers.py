"""The architecture's one direction of imports, checked on the source (DESIGN.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "qpsvm"


def module_level_imports(path: Path) -> set[str]:
    """Modules imported at module level (imports inside functions are dispatch, allowed),
    including the ones bound there by ``lazy_module("name")`` (imported on first use)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            call = node.value
            if getattr(call.func, "id", None) == "lazy_module" and call.args:
                names.add(ast.literal_eval(call.args[0]))
    return names


def test_lazy_modules_count_as_imports(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        'import numpy as np\nfrom qpsvm._lazy import lazy_module\ncp = lazy_module("cvxpy")\n'
    )
    assert module_level_imports(source) == {"numpy", "qpsvm._lazy", "cvxpy"}


FORBIDDEN = {
    # the verifier never trusts a solver or the CVXPY model
    "verify": ("cvxpy", "qpsvm.solvers", "qpsvm.formulations", "qpsvm.estimators"),
    # the math never depends on the machinery
    "formulations": ("qpsvm.solvers", "qpsvm.estimators", "qpsvm.cli"),
    "models": ("cvxpy", "qpsvm.formulations", "qpsvm.solvers", "qpsvm.verify"),
}


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_go_one_way(layer):
    offenders = []
    for path in sorted((PACKAGE / layer).glob("*.py")):
        for name in module_level_imports(path):
            if name.startswith(FORBIDDEN[layer]):
                offenders.append(f"{path.name} imports {name}")
    assert not offenders, offenders

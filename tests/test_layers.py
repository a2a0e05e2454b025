"""The architecture's one direction of imports, checked on the source (DESIGN.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "qpsvm"


def module_level_imports(path: Path) -> set[str]:
    """Modules imported at module level (imports inside functions are dispatch, allowed)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


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

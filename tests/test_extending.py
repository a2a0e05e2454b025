"""docs/extending.md runs: its worked example (a formulation written from scratch, certified and
equal to SoftMarginPrimal without intercept, a reference solver) and its registered method."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

from qpsvm.contract import METHODS

PAGE = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def test_the_guide_runs_as_written():
    code = "\n".join(re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.DOTALL))
    module = types.ModuleType("extending_example")
    sys.modules[module.__name__] = module  # the page names its functions "module:function"
    try:
        exec(compile(code, str(PAGE), "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
        METHODS.pop("liblinear", None)  # the registry is global: leave it as it was
    assert module.sol.certificate.passed
    assert module.approximate.status == "tolerance"

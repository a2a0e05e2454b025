"""A solver-validation suite: reference SVM instances with certified optima, and a scorer.

``load(tier)`` returns the instances of a tier (``"small"``, ``"medium"``, ``"large"``), each
regenerated from its data recipe by ``build()`` and carrying its certified optimum
(``optimum.lower <= P* <= optimum.upper``, and ``w*``). See the documentation page "Solver
validation suite".
"""

from qpsvm.suite.catalogue import TIERS
from qpsvm.suite.instances import VERSION, Instance, Optimum, load
from qpsvm.suite.recipes import FAMILIES

__all__ = ["FAMILIES", "TIERS", "VERSION", "Instance", "Optimum", "load"]

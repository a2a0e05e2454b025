"""Formulations: each SVM stated once, as a CVXPY problem and its numpy math."""

from qpsvm.formulations.base import Formulation
from qpsvm.formulations.binary import HardMargin, SoftMarginDual, SoftMarginPrimal

__all__ = ["Formulation", "HardMargin", "SoftMarginDual", "SoftMarginPrimal"]

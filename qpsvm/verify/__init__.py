"""Certificates of optimality, computed from the raw data in numpy.

Nothing here imports CVXPY or a solver: a certificate never trusts the code that produced the
candidate. Dual sign conventions are written down once, in :mod:`qpsvm.verify.conventions`.
"""

from qpsvm.verify.certificate import Certificate
from qpsvm.verify.comparison import Comparison

__all__ = ["Certificate", "Comparison"]

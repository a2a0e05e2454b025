"""Exact rational optima of the linear SVMs and the poly kernel dual: the oracle certificates
are tested against.

:func:`solve_grouped` solves the grouped-slack QP every linear formulation is an instance of
(:mod:`qpsvm.exact.kkt`) by Lemke's method in exact integer arithmetic
(:mod:`qpsvm.exact.lemke`, :mod:`qpsvm.exact.rational`);
``f.solve(method="exact")`` (:mod:`qpsvm.solvers.exact`) builds it from a formulation.
"""

from qpsvm.exact.kkt import ExactOptimum, GroupedQP, solve_grouped

__all__ = ["ExactOptimum", "GroupedQP", "solve_grouped"]

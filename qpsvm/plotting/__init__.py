"""Plots of solver behaviour (matplotlib is an optional extra: ``pip install qpsvm[plot]``)."""

from qpsvm.plotting.boundary import (
    plot_certificate,
    plot_certificates,
    plot_decision_boundary,
    plot_dual,
    plot_slack,
)
from qpsvm.plotting.convergence import plot_convergence

__all__ = [
    "plot_certificate",
    "plot_certificates",
    "plot_convergence",
    "plot_decision_boundary",
    "plot_dual",
    "plot_slack",
]

"""A point of the regime grid and the timing rule shared by every family."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SCALES = ("quick", "full")


@dataclass(frozen=True)
class Point:
    """One problem of the grid, solved by qpsvm and by its anchor.

    Parameters
    ----------
    family : str
        The regime: ``"sparse"``, ``"kernel"``, ``"multiclass"``, ``"ranking"``, ``"structural"``,
        ``"small"``, ``"cold"``.
    name : str
        The point's parameters, e.g. ``"n=5000 d=20000 nnz/row=50 C=1"``.
    anchor : str
        The specialised solver timed against qpsvm (``"liblinear"``, ``"libsvm"``, ``"dlib"``, ...).
    qpsvm : callable
        Runs qpsvm's certified solve and returns its certificate; it must raise when the answer
        is not certified, so a fast wrong answer never counts.
    reference : callable
        Runs the anchor at its defaults on the same data.
    repeat : int
        Calls per side; the median time is reported.
    """

    family: str
    name: str
    anchor: str
    qpsvm: Callable[[], Any]
    reference: Callable[[], Any]
    repeat: int = 3


@dataclass(frozen=True)
class Timing:
    """Median times of one point and their ratio (qpsvm / anchor)."""

    point: Point
    qpsvm: float
    anchor: float

    @property
    def ratio(self) -> float:
        return self.qpsvm / self.anchor


def median_time(fn: Callable[[], Any], repeat: int) -> float:
    """Median wall time of ``repeat`` calls of ``fn``."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_point(point: Point) -> Timing:
    """Time one point; a first untimed call of each side pays compilation and caches."""
    certificate = point.qpsvm()
    if not getattr(certificate, "passed", False):
        raise RuntimeError(f"{point.family} {point.name}: qpsvm's answer is not certified")
    point.reference()
    ours = median_time(point.qpsvm, point.repeat)
    return Timing(point, ours, median_time(point.reference, point.repeat))


def geometric_mean(values: list[float]) -> float:
    """exp(mean(log v)): the mean of ratios that treats 2x and 0.5x symmetrically."""
    return math.exp(sum(math.log(v) for v in values) / len(values))

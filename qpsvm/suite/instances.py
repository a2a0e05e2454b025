r"""Reference instances and their certified optima, read from the versioned JSON of the package.

Each instance stores its data recipe (:mod:`qpsvm.suite.recipes`), the SHA-256 of the prepared
data and the certified enclosure ``lower <= P* <= upper`` of its optimal value:

- ``source="exact"``: the exact rational optimum ``P*`` of ``method="exact"`` (linear families),
  rounded outward to the neighbouring float64 numbers, so the enclosure is proven and at most
  two ulps wide; ``w`` is ``w*`` correctly rounded;
- ``source="certificate"`` (kernels, structural chains): the enclosure ``[D, P]`` of the
  certificate of a certified solve; ``rigorous`` says whether it holds under rounding
  (:mod:`qpsvm.verify.rigorous`), and ``distance_bound`` bounds ``||w - w*||`` of the stored
  ``w`` (absent for kernels, whose ``w`` is implicit).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import resources
from typing import Any

import numpy as np

from qpsvm.exceptions import InvalidInputError
from qpsvm.suite.catalogue import TIERS
from qpsvm.suite.recipes import build, data_hash, make_data

__all__ = ["VERSION", "Instance", "Optimum", "load", "outward", "w_hash"]

#: Version of the stored collection (the file ``qpsvm/suite/data/<VERSION>.json``).
VERSION = "v1"
#: ``w*`` is stored in full up to this many entries (its SHA-256 always).
MAX_STORED_W = 256


def outward(value: Fraction) -> tuple[float, float]:
    """The float64 numbers just below and just above the rational ``value`` (equal when it is a
    float): ``lower <= value <= upper`` exactly."""
    x = float(value)
    exact = Fraction(x)
    lower = x if exact <= value else float(np.nextafter(x, -math.inf))
    upper = x if exact >= value else float(np.nextafter(x, math.inf))
    return lower, upper


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def w_hash(w: np.ndarray) -> str:
    """SHA-256 of ``w`` as contiguous float64 (row-major for a matrix)."""
    return hashlib.sha256(np.ascontiguousarray(w, dtype=np.float64).tobytes()).hexdigest()


@dataclass
class Optimum:
    """The certified optimum of an instance.

    Attributes
    ----------
    lower, upper : float
        ``lower <= P* <= upper``.
    rigorous : bool
        Whether the enclosure holds in exact arithmetic for the problem the data state.
    source : str
        ``"exact"`` (the rational oracle) or ``"certificate"`` (a certified solve).
    w : ndarray or None
        ``w*`` (correctly rounded from the exact optimum) or the certified solution's ``w``;
        ``None`` for kernels or when it has more than :data:`MAX_STORED_W` entries.
    w_sha256 : str or None
        SHA-256 of that ``w`` (:func:`w_hash`).
    distance_bound : float or None
        Bound on ``||w - w*||`` of the stored ``w`` (0 for the exact oracle: only its rounding;
        ``None`` where the penalty is not strongly convex, L1: ``w*`` need not be unique).
    """

    lower: float
    upper: float
    rigorous: bool
    source: str
    w: np.ndarray | None = field(default=None, repr=False)
    w_sha256: str | None = None
    distance_bound: float | None = 0.0

    @property
    def value(self) -> float:
        """The midpoint of the enclosure."""
        return 0.5 * (self.lower + self.upper)

    @property
    def relative_width(self) -> float:
        """``(upper - lower) / max(1, |upper|)``: how well the optimum is known."""
        return (self.upper - self.lower) / max(1.0, abs(self.upper))

    def to_json(self) -> dict[str, Any]:
        """The JSON record of the optimum."""
        return {
            "lower": self.lower,
            "upper": self.upper,
            "rigorous": self.rigorous,
            "source": self.source,
            "w": None if self.w is None else np.asarray(self.w).tolist(),
            "w_sha256": self.w_sha256,
            "distance_bound": self.distance_bound,
        }

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> Optimum:
        """The optimum of a JSON record (:meth:`to_json`)."""
        w = record.get("w")
        return cls(
            lower=float(record["lower"]),
            upper=float(record["upper"]),
            rigorous=bool(record["rigorous"]),
            source=str(record["source"]),
            w=None if w is None else np.asarray(w, dtype=np.float64),
            w_sha256=record.get("w_sha256"),
            distance_bound=_optional_float(record.get("distance_bound", 0.0)),
        )


@dataclass
class Instance:
    """One reference problem: its recipe, its data's hash and its certified optimum.

    Attributes
    ----------
    name : str
        Unique name, ``family/data.../C=...``.
    family : str
        One of :data:`qpsvm.suite.recipes.FAMILIES`.
    tier : str
    recipe : dict
        The data recipe (:mod:`qpsvm.suite.recipes`).
    data_sha256 : str
        Hash of the prepared data (:func:`qpsvm.suite.recipes.data_hash`).
    optimum : Optimum or None
        ``None`` only while the collection is being generated.
    """

    name: str
    family: str
    tier: str
    recipe: dict[str, Any]
    data_sha256: str = ""
    optimum: Optimum | None = None

    def arrays(self) -> dict[str, Any]:
        """The prepared data of the recipe."""
        return make_data(self.recipe["data"])

    def build(self, check: bool = True) -> Any:
        """The formulation, regenerated from the recipe.

        With ``check`` the prepared data must hash to :attr:`data_sha256` (otherwise this
        platform prepares the data differently and the stored optimum does not apply):
        :class:`~qpsvm.InvalidInputError` says so.
        """
        arrays = self.arrays()
        if check and self.data_sha256 and data_hash(arrays) != self.data_sha256:
            raise InvalidInputError(
                f"the data of {self.name!r} regenerate differently on this platform (hash "
                f"{data_hash(arrays)[:12]} != stored {self.data_sha256[:12]}); its stored "
                "optimum does not apply. Regenerate with python -m qpsvm.suite.generate."
            )
        return build(self.recipe, arrays)

    def to_json(self) -> dict[str, Any]:
        """The JSON record of the instance."""
        return {
            "name": self.name,
            "family": self.family,
            "tier": self.tier,
            "recipe": self.recipe,
            "data_sha256": self.data_sha256,
            "optimum": None if self.optimum is None else self.optimum.to_json(),
        }

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> Instance:
        """The instance of a JSON record (:meth:`to_json`)."""
        optimum = record.get("optimum")
        return cls(
            name=record["name"],
            family=record["family"],
            tier=record["tier"],
            recipe=record["recipe"],
            data_sha256=record.get("data_sha256", ""),
            optimum=None if optimum is None else Optimum.from_json(optimum),
        )


def _read(version: str) -> dict[str, Any]:
    path = resources.files("qpsvm.suite").joinpath("data", f"{version}.json")
    if not path.is_file():
        raise InvalidInputError(
            f"no stored suite version {version!r}; this qpsvm ships {VERSION!r}."
        )
    return json.loads(path.read_text())


def load(
    tier: str = "small", *, family: str | None = None, version: str = VERSION
) -> list[Instance]:
    """The reference instances of a tier, with their certified optima.

    Parameters
    ----------
    tier : {"small", "medium", "large"}
        ``small`` runs in CI time, ``medium`` in minutes, ``large`` on a workstation.
    family : str, optional
        Keep one family (e.g. ``"binary"``, ``"crammer_singer"``).
    version : str
        The stored collection (default :data:`VERSION`).

    Returns
    -------
    list of Instance

    Examples
    --------
    >>> import qpsvm.suite
    >>> inst = qpsvm.suite.load("small", family="hard_margin")[0]
    >>> f = inst.build()
    >>> inst.optimum.lower <= f.solve(method="exact").objective <= inst.optimum.upper
    True
    """
    if tier not in TIERS:
        raise InvalidInputError(f"unknown tier {tier!r}; use one of {TIERS}.")
    stored = _read(version)
    out = [Instance.from_json(r) for r in stored["instances"] if r["tier"] == tier]
    if not out:
        raise InvalidInputError(
            f"suite version {version!r} holds no {tier!r} instances; generate them with "
            f"python -m qpsvm.suite.generate --tier {tier}."
        )
    if family is not None:
        out = [inst for inst in out if inst.family == family]
    return out

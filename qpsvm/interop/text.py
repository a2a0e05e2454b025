"""Reading the text of model files: a header of ``key value ...`` lines, then a body."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qpsvm.exceptions import InvalidInputError

__all__ = ["Header", "numbers"]


def numbers(path: str, text: str, what: str) -> np.ndarray:
    """The whitespace-separated finite numbers of ``text``, or a typed error naming ``what``."""
    try:
        values = np.array(text.split(), dtype=np.float64)
    except ValueError:
        raise InvalidInputError(f"{path}: {what} must be numbers.") from None
    if not np.all(np.isfinite(values)):
        raise InvalidInputError(f"{path}: {what} must be finite.")
    return values


@dataclass
class Header:
    """The ``key value ...`` lines of a model file up to the line ``end``, and what follows."""

    path: str
    fields: dict[str, list[str]]
    body: str

    @classmethod
    def parse(cls, path: str, text: str, *, end: str) -> Header:
        """Split ``text`` at the first line that is exactly ``end``."""
        fields: dict[str, list[str]] = {}
        lines = text.splitlines()
        for k, line in enumerate(lines):
            words = line.split()
            if words == [end]:
                return cls(path, fields, "\n".join(lines[k + 1 :]))
            if words:
                fields[words[0]] = words[1:]
        raise InvalidInputError(f"{path}: no line {end!r} ends the header; is it a model file?")

    def has(self, key: str) -> bool:
        """Whether the header holds ``key``."""
        return key in self.fields

    def _values(self, key: str) -> list[str]:
        if key not in self.fields:
            raise InvalidInputError(f"{self.path}: the header has no {key!r} line.")
        return self.fields[key]

    def word(self, key: str) -> str:
        """The single word after ``key``."""
        values = self._values(key)
        if len(values) != 1:
            raise InvalidInputError(f"{self.path}: {key!r} must have one value, got {values}.")
        return values[0]

    def reals(self, key: str) -> np.ndarray:
        """The numbers after ``key``."""
        return numbers(self.path, " ".join(self._values(key)), repr(key))

    def real(self, key: str) -> float:
        """The single number after ``key``."""
        values = self.reals(key)
        if values.size != 1:
            raise InvalidInputError(f"{self.path}: {key!r} must have one value.")
        return float(values[0])

    def integers(self, key: str) -> list[int]:
        """The integers after ``key``."""
        values = self.reals(key)
        if not np.all(values == np.round(values)):
            raise InvalidInputError(f"{self.path}: {key!r} must hold integers.")
        return [int(v) for v in values]

    def integer(self, key: str) -> int:
        """The single integer after ``key``."""
        values = self.integers(key)
        if len(values) != 1:
            raise InvalidInputError(f"{self.path}: {key!r} must have one value.")
        return values[0]

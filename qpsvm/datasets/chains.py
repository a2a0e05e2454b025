r"""A generated OCR-like sequence-labelling data set for :class:`~qpsvm.models.ChainModel`.

Words are drawn from a Markov chain over ``n_states`` letters and each letter is rendered as a
noisy binary "image" of ``n_features`` pixels, in the spirit of the OCR letters data set of Taskar,
Guestrin & Koller (NIPS 2003) that structural-SVM papers benchmark on (about 700 training words of
about 8 letters, 16 x 8 = 128 binary pixels, 26 letters). Nothing is downloaded: the data are
deterministic given ``random_state``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qpsvm._validation import check_int
from qpsvm.exceptions import InvalidInputError

__all__ = ["ChainDataset", "make_chains"]


@dataclass
class ChainDataset:
    """Sequences, their label sequences, and the generating parameters.

    Attributes
    ----------
    X : list of ndarray of shape (T_i, n_features)
        Binary pixel features (0.0 / 1.0), one row per position.
    Y : list of ndarray of shape (T_i,), int64
        States in ``[0, n_states)``.
    transition : ndarray of shape (n_states, n_states)
        Row-stochastic transition matrix of the Markov chain the labels follow.
    prototypes : ndarray of shape (n_states, n_styles, n_features)
        Noise-free pixel patterns of every state (several writing styles per state).
    description : str
    """

    X: list[np.ndarray]
    Y: list[np.ndarray]
    transition: np.ndarray
    prototypes: np.ndarray
    description: str

    @property
    def n_features(self) -> int:
        """Features per position."""
        return int(self.X[0].shape[1])

    @property
    def n_states(self) -> int:
        """Number of states (labels per position)."""
        return int(self.transition.shape[0])


def make_chains(
    n_sequences: int = 700,
    mean_length: int = 8,
    n_features: int = 128,
    n_states: int = 26,
    *,
    n_styles: int = 3,
    similarity: float = 0.8,
    noise: float = 0.15,
    successors: int = 4,
    random_state: int = 0,
) -> ChainDataset:
    r"""Generate noisy binary "letter images" along Markov-chain "words".

    The generative model:

    * a common base pattern ``b`` with pixels ``b_j ~ Bernoulli(1/2)``; each state ``s`` has
      ``n_styles`` prototypes that keep each pixel of ``b`` with probability ``similarity`` and
      redraw it otherwise (letters share most of their pixels, as handwritten letters do);
    * lengths ``T_i = 3 + Poisson(mean_length - 3)``, clipped to ``[3, 3 * mean_length]``;
    * labels ``y_1 ~`` uniform, ``y_{t+1} | y_t ~`` row ``y_t`` of a transition matrix that puts
      90% of its mass on ``successors`` preferred next states (a sparse Markov structure a chain
      model can exploit) and spreads 10% uniformly;
    * features ``x_t`` = a uniformly chosen style of state ``y_t`` with each pixel flipped with
      probability ``noise``.

    The defaults give about 700 sequences of about 8 positions, 128 features and 26 states, the
    size of the OCR benchmark of the structural-SVM literature.

    Parameters
    ----------
    n_sequences : int, default=700
    mean_length : int, default=8
        Mean sequence length (at least 3).
    n_features : int, default=128
    n_states : int, default=26
    n_styles : int, default=3
        Prototypes per state.
    similarity : float, default=0.8
        Probability that a prototype pixel equals the base pattern's, in ``[0, 1]``.
    noise : float, default=0.15
        Pixel flip probability of an observation, in ``[0, 1/2]``.
    successors : int, default=4
        Preferred next states per state.
    random_state : int, default=0
        Seed; equal seeds give equal data sets.

    Returns
    -------
    ChainDataset

    Examples
    --------
    >>> from qpsvm.datasets import make_chains
    >>> data = make_chains(n_sequences=5, random_state=1)
    >>> len(data.X), data.X[0].shape[1], data.n_states
    (5, 128, 26)
    """
    owner = "make_chains"
    n_sequences = check_int(n_sequences, "n_sequences", 1, owner)
    mean_length = check_int(mean_length, "mean_length", 3, owner)
    n_features = check_int(n_features, "n_features", 1, owner)
    n_states = check_int(n_states, "n_states", 2, owner)
    n_styles = check_int(n_styles, "n_styles", 1, owner)
    successors = check_int(successors, "successors", 1, owner)
    _check_probability(similarity, "similarity", 1.0)
    _check_probability(noise, "noise", 0.5)
    rng = np.random.default_rng(random_state)

    base = rng.random(n_features) < 0.5
    redraw = rng.random((n_states, n_styles, n_features)) >= similarity
    fresh = rng.random((n_states, n_styles, n_features)) < 0.5
    prototypes = np.where(redraw, fresh, base).astype(np.float64)

    transition = np.full((n_states, n_states), 0.1 / n_states)
    for s in range(n_states):
        preferred = rng.choice(n_states, size=min(successors, n_states), replace=False)
        transition[s, preferred] += 0.9 / preferred.size
    transition /= transition.sum(axis=1, keepdims=True)
    cumulative = np.cumsum(transition, axis=1)

    lengths = np.clip(3 + rng.poisson(mean_length - 3, n_sequences), 3, 3 * mean_length)
    X: list[np.ndarray] = []
    Y: list[np.ndarray] = []
    for length in lengths:
        y = np.empty(length, dtype=np.int64)
        y[0] = rng.integers(n_states)
        for t in range(1, length):
            y[t] = min(int(np.searchsorted(cumulative[y[t - 1]], rng.random())), n_states - 1)
        styles = rng.integers(n_styles, size=length)
        flips = rng.random((length, n_features)) < noise
        X.append(np.abs(prototypes[y, styles] - flips))
        Y.append(y)
    return ChainDataset(
        X=X,
        Y=Y,
        transition=transition,
        prototypes=prototypes,
        description=(
            f"generated OCR-like chains: {n_sequences} sequences of mean length "
            f"{lengths.mean():.1f}, {n_features} binary features, {n_states} states"
        ),
    )


def _check_probability(value: float, name: str, upper: float) -> None:
    """Raise unless ``0 <= value <= upper``."""
    if not (isinstance(value, int | float) and 0.0 <= value <= upper):
        raise InvalidInputError(
            f"make_chains: {name} must be a number in [0, {upper}], got {value!r}."
        )

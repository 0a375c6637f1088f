r"""A post-processed release y* = h(y, z) and its push-forward likelihood.

Curators often publish h(y, z) rather than the noisy y itself: counts clipped at zero, projected
onto a public total, rounded. Post-processing costs no privacy, but the law of y* is no longer
the noise law: an analyst who sees only y* needs

.. math::

    \pi(y^* \mid x, z) = \sum_{y \,:\, h(y, z) = y^*} \pi(y \mid x, z),

summed here over a finite box of raw releases (a discrete mechanism's y are countable; the box
must hold all but a negligible part of their law, which :meth:`PostProcessedRelease.box_mass`
measures). With it, every sampler of the package works from y* as from y.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from ..rng import SeedLike
from ..validation import integer_valued
from .base import Mechanism
from .guarantee import Guarantee

#: Distinct x whose log-likelihood is remembered for one (y*, z) before the memory starts afresh.
MEMO_LIMIT = 1_000_000
#: The samplers warn when the box misses more than this share of the raw release's law at an x they drew.
BOX_TOLERANCE = 1e-3


class BoxMassWarning(UserWarning):
    """The box of a :class:`PostProcessedRelease` misses a noticeable part of the raw release's law
    at an x a sampler drew, so the likelihood there, and the posterior, are too small there.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from ppdinfer.mechanisms import BoxMassWarning, DiscreteLaplace, PostProcessedRelease
    >>> narrow = PostProcessedRelease(DiscreteLaplace(1.0), lambda y, z: np.maximum(y, 0), box=np.arange(-2, 10))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     missed = narrow.check_box([[0], [5]])      # P(y < -2 | x = 0) for discrete Laplace noise
    >>> caught[0].category is BoxMassWarning, round(missed, 4)
    (True, 0.0364)
    """


class PostProcessedRelease(Mechanism):
    r"""The published h(y, z) of a raw release y ~ pi(. | x, z): its sampler and its push-forward likelihood.

    .. math::

        \log \pi(y^* \mid x, z) = \log \sum_{y \in B,\ h(y, z) = y^*} \pi(y \mid x, z)

    over the ``box`` B of raw releases. Outside B the sum is truncated, so the likelihood is a
    lower bound, short by at most 1 - ``box_mass(x, z)`` for each x; choose B so that this is
    negligible for every x of the prior's support. ``log_bound`` is 0 (a probability).

    Parameters
    ----------
    mechanism : Mechanism
        The noise mechanism of the raw release; a discrete one (y on the integer lattice).
    postprocess : callable
        ``postprocess(y, z)`` maps raw releases, the rows of a (N, d) array, to the published ones,
        the rows of a (N, d') array (or a (N,) array when d' = 1). Must be vectorized over rows.
    box : array_like, shape (N, d)
        The raw releases the sum runs over, whole numbers, one per row (for instance a grid
        ``np.stack(np.meshgrid(*ranges, indexing="ij"), -1).reshape(-1, d)``).

    See Also
    --------
    ppdinfer.postprocessing.postprocess : The COVID post-processing.
    ppdinfer.mechanisms.Congenial : Conditioning instead of projecting.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 4 and Theorem 15.
    .. [2] R. Gong and X.-L. Meng, "Congenial differential privacy under mandated disclosure,"
        Proceedings of the 2020 ACM-IMS Foundations of Data Science Conference (FODS), 2020.

    Examples
    --------
    A count released with discrete Laplace noise and published clipped at zero:

    >>> import numpy as np
    >>> from ppdinfer.mechanisms import DiscreteLaplace, PostProcessedRelease
    >>> noise = DiscreteLaplace(epsilon=1.0)
    >>> clipped = PostProcessedRelease(noise, lambda y, z: np.maximum(y, 0), box=np.arange(-60, 80)[:, None])
    >>> p_zero = float(np.exp(clipped.logpdf(0, [2])[0]))           # P(y <= 0 | x = 2)
    >>> a = np.exp(-1.0)                                                # P(noise <= -2) = a^2 / (1 + a)
    >>> round(p_zero, 6), round(float(a**2 / (1 + a)), 6)
    (0.098938, 0.098938)
    >>> float(np.exp(clipped.logpdf(-1, [2])[0]))                     # never published
    0.0
    """

    discrete = False  # y* need not be whole numbers; it is checked against the image of the box instead
    smooth = False  # a sum of a pmf over a box of lattice releases: no useful gradient in a continuous x

    def __init__(self, mechanism: Mechanism, postprocess: Callable, box):
        if not isinstance(mechanism, Mechanism):
            raise ValueError(f"mechanism must be a ppdinfer Mechanism, got {type(mechanism).__name__}")
        if not mechanism.discrete:
            raise ValueError(
                f"mechanism must be discrete (a pmf on the integer lattice) for the push-forward sum "
                f"over a box of raw releases; {mechanism!r} has a density"
            )
        if not callable(postprocess):
            raise ValueError(f"postprocess must be a callable postprocess(y, z), got {postprocess!r}")
        box = integer_valued(box, "box")
        if box.ndim == 1:
            box = box[:, None]
        if box.ndim != 2 or box.shape[0] == 0:
            raise ValueError(f"box must be a non-empty (N, d) array of raw releases, got shape {box.shape}")
        self.mechanism, self.postprocess, self.box = mechanism, postprocess, box
        self._images: tuple[object, np.ndarray] | None = None  # (key of z, the image of the box under z)
        self._memo: tuple[object, dict] = (None, {})  # ((key of z, y*), {x row: log pi(y* | x, z)})

    @property
    def dim(self) -> int:
        """d, the dimension of a raw release."""
        return self.box.shape[1]

    def release(self, x, z=None, random_seed: SeedLike = None) -> np.ndarray:
        """The published h(y, z) of one raw release y of ``x``, with the shape of ``x`` when h keeps the dimension."""
        raw = np.asarray(self.mechanism.release(x, z, random_seed))
        published = self._apply(raw.reshape(1, -1), z)[0]
        return published.reshape(np.shape(x)) if published.size == np.size(x) else published

    def logpdf(self, y, x, z=None) -> np.ndarray:
        """log pi(y* | x, z) for each row of ``x``: the log-sum over the raw releases of the box that h maps to y*.

        Each distinct x is computed once per (y*, z) and remembered: samplers ask again and again
        about the few values a count takes.
        """
        rows = integer_valued(x, "x").reshape(-1, self.dim)
        distinct, inverse = np.unique(rows, axis=0, return_inverse=True)
        memo = self._memo_for(y, z)
        missing = [row for row in distinct if row.tobytes() not in memo]
        if missing:
            memo.update(
                zip(
                    (row.tobytes() for row in missing),
                    self._log_total(self.preimage(y, z), np.array(missing), z),
                    strict=True,
                )
            )
        return np.array([memo[row.tobytes()] for row in distinct])[inverse.reshape(-1)]

    def preimage(self, y, z=None) -> np.ndarray:
        """The raw releases of the box that h maps to the published ``y``, one per row."""
        images = self._image_of_box(z)
        target = np.asarray(y, dtype=float).reshape(-1)
        if target.size != images.shape[1]:
            raise ValueError(f"y has {target.size} values but postprocess publishes {images.shape[1]}")
        return self.box[np.all(images == target, axis=1)]

    def box_mass(self, x, z=None) -> np.ndarray:
        """sum over the box of pi(y | x, z), for each row of ``x``: 1 minus what the likelihood misses."""
        return np.exp(self._log_total(self.box, x, z))

    def check_box(
        self, x, z=None, tolerance: float = BOX_TOLERANCE, caller: str = "PostProcessedRelease", stacklevel: int = 2
    ) -> float:
        """Warn (:class:`BoxMassWarning`) when the box misses more than ``tolerance`` of the raw
        release's law at one of the rows of ``x``; return the largest share missed.

        The samplers call it with the distinct x they drew (their posterior's x).

        Examples
        --------
        >>> import numpy as np
        >>> from ppdinfer.mechanisms import DiscreteLaplace, PostProcessedRelease
        >>> clipped = PostProcessedRelease(DiscreteLaplace(1.0), lambda y, z: np.maximum(y, 0), box=np.arange(-60, 80))
        >>> clipped.check_box([[0], [5], [20]]) < 1e-12      # the box holds the law at these x
        True
        """
        rows = integer_valued(x, "x").reshape(-1, self.dim)
        missed = 1 - self.box_mass(rows, z)
        worst = int(np.argmax(missed))
        if missed[worst] > tolerance:
            warnings.warn(
                f"{caller}: the box of raw releases misses {missed[worst]:.3g} of the raw release's law at x = "
                f"{rows[worst].tolist()} ({int(np.sum(missed > tolerance))} of the {rows.shape[0]} distinct x drawn "
                f"miss more than {tolerance:g}), so the likelihood and the posterior are wrong there: widen the box",
                BoxMassWarning,
                stacklevel=stacklevel,
            )
        return float(missed[worst])

    def impossible_release(self, y, z=None) -> str | None:
        """Why no raw release of the box is published as ``y`` (y outside the post-processing's image), else None."""
        if self.preimage(y, z).shape[0] > 0:
            return None
        return (
            f"no raw release of the box ({self.box.shape[0]} values) is published as y = "
            f"{np.asarray(y).reshape(-1).tolist()[:10]} (y lies outside the post-processing's image)"
        )

    def check_latent(self, x, z=None, caller: str = "", stacklevel: int = 2) -> None:
        """The box check (:meth:`check_box`) at the distinct rows of ``x``."""
        if np.asarray(x).size:
            self.check_box(x, z, caller=caller or "PostProcessedRelease", stacklevel=stacklevel + 1)

    def log_bound(self, z=None, size: int = 1) -> float:
        """0: pi(y* | x, z) is a probability."""
        return 0.0

    def _guarantee(self) -> Guarantee:
        return self.mechanism.guarantee()  # post-processing keeps the raw release's guarantee

    def parameters(self) -> dict[str, float]:
        """The raw mechanism's settings (prefixed ``raw_``) and the size of the box."""
        return {
            **{f"raw_{key}": value for key, value in self.mechanism.parameters().items()},
            "box_size": float(self.box.shape[0]),
        }

    def __eq__(self, other) -> bool:
        return (
            type(self) is type(other)
            and self.mechanism == other.mechanism
            and self.postprocess is other.postprocess
            and np.array_equal(self.box, other.box)
        )

    def __hash__(self) -> int:
        return hash((type(self), self.mechanism, id(self.postprocess), self.box.tobytes()))

    def _log_total(self, raws: np.ndarray, x, z) -> np.ndarray:
        """log sum over the rows of ``raws`` of pi(raw | x, z), for each row of ``x``."""
        rows = np.asarray(x).reshape(-1, self.dim)
        rows = rows[:, 0] if self.dim == 1 else rows  # as the raw mechanism takes x: (B,) for a scalar release
        total = np.full(rows.shape[0], -np.inf)
        for raw in raws:
            total = np.logaddexp(total, self.mechanism.logpdf(raw if self.dim > 1 else raw[0], rows, z))
        return total

    def _memo_for(self, y, z) -> dict:
        """The remembered log-likelihoods of this (y*, z); a new (y*, z) starts afresh."""
        key = (_z_key(z), np.asarray(y, dtype=float).tobytes())
        if self._memo[0] != key or len(self._memo[1]) > MEMO_LIMIT:
            self._memo = (key, {})
        return self._memo[1]

    def _image_of_box(self, z) -> np.ndarray:
        key = _z_key(z)
        if self._images is None or self._images[0] != key:
            self._images = (key, self._apply(self.box, z))
        return self._images[1]

    def _apply(self, raw: np.ndarray, z) -> np.ndarray:
        """h on the rows of ``raw``, as a float (N, d') array."""
        published = np.asarray(self.postprocess(raw, z), dtype=float)
        published = published.reshape(raw.shape[0], -1) if published.ndim <= 1 else published
        if published.ndim != 2 or published.shape[0] != raw.shape[0]:
            raise ValueError(
                f"postprocess returned shape {np.shape(published)} for {raw.shape[0]} raw releases; "
                "it must map each row of y to one row"
            )
        if np.isnan(published).any():
            first = int(np.flatnonzero(np.isnan(published).any(axis=1))[0])
            raise ValueError(
                f"postprocess returned NaN for the raw release {raw[first].tolist()} (and "
                f"{int(np.isnan(published).any(axis=1).sum()) - 1} others): h must publish a number for "
                "every raw release, or no y* could ever match it"
            )
        return published


def _z_key(z) -> object:
    """A hashable summary of the public information, to know when the image of the box is stale."""
    if z is None:
        return None
    return tuple((key, np.asarray(value).shape, np.asarray(value).tobytes()) for key, value in sorted(dict(z).items()))

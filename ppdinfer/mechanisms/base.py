"""The mechanism interface: every release mechanism is also a likelihood.

A mechanism releases y from confidential x (and public z), reports the log density
log pi(y | x, z) for a batch of x, and a constant log M with M >= sup_{x, y} pi(y | x, z)
for the exact rejection sampler.
"""

from __future__ import annotations

import copy

import numpy as np

from ..kernels import additive_noise_loglik
from ..rng import SeedLike, as_generator
from ..validation import finite_array, integer_valued, nonnegative_counts, positive_int
from .guarantee import AdditiveNoise, Guarantee


class Mechanism:
    r"""Base class. Subclasses set ``discrete`` and implement the four methods below.

    What a mechanism is, it declares here, once; the samplers, the PyMC layer, the posterior
    predictive and the accounting read these declarations and never test for a concrete class:

    - ``discrete``: y takes integer values;
    - ``separable``: the density is a product over coordinates of one density of y_k - x_k that
      does not depend on z (the posterior of per-unit models then factorizes over units);
    - ``smooth``: log pi(y | x, z) is differentiable in a continuous x almost everywhere with a
      gradient that guides HMC (Laplace, Gaussian, K-norm densities); False where it is piecewise
      constant or has flat pieces (Tulap, CanonicalNoise, a post-processed release), so
      :func:`ppdinfer.pymc.sample` gives such an x a gradient-free step instead of NUTS;
    - ``additive_noise``: iid noise of log density ``log_norm - rate |e| ** power`` (an
      :class:`~ppdinfer.mechanisms.guarantee.AdditiveNoise`), which the compiled kernels and the
      symbolic PyMC likelihood evaluate directly, or None;
    - ``guarantee()``: the privacy guarantee as constructed (a :class:`Guarantee`);
    - ``impossible_release(y, z)``: why y cannot be released whatever x is, when y alone decides it;
    - ``check_latent(x, z, caller)``: a warning when the density is computed approximately at x.

    A mechanism serves the curator, who calls ``release(x, z)`` to draw y ~ pi(. | x, z), and
    the analyst, who needs the likelihood ``logpdf(y, x, z)`` = log pi(y | x, z) and, for exact
    rejection sampling, a bound that holds for every x and y:

    .. math::

        \log M = \texttt{log\_bound}(z), \qquad M \ge \sup_{x, y} \pi(y \mid x, z).

    Examples
    --------
    >>> from ppdinfer.mechanisms import DiscreteLaplace, Mechanism
    >>> mechanism = DiscreteLaplace(epsilon=1.0)
    >>> isinstance(mechanism, Mechanism)
    True
    >>> y = mechanism.release([3, 5], random_seed=0)     # the curator's side
    >>> loglik = mechanism.logpdf(y, [[3, 5], [4, 4]])    # the analyst's: one value per row of x
    >>> loglik.shape, bool(loglik.max() <= mechanism.log_bound(size=2))
    ((2,), True)
    """

    #: True when y takes integer values (the density is a pmf on the integer lattice).
    discrete: bool = False
    #: True when log pi(y | x, z) = sum_k log p(y_k - x_k) for one density p that does not read z.
    separable: bool = False
    #: True when the gradient of log pi(y | x, z) in a continuous x is informative (NUTS may use it); False for
    #: densities that are piecewise constant or flat in places, whose gradient is zero or useless.
    smooth: bool = True
    #: A guarantee stated from outside (``with_guarantee``), replacing the mechanism's own.
    _stated_guarantee: Guarantee | None = None

    @property
    def additive_noise(self) -> AdditiveNoise | None:
        """The iid additive noise the compiled kernels evaluate, or None for any other release."""
        return None

    def guarantee(self) -> Guarantee:
        """The privacy guarantee of one release, as constructed (or as stated by ``with_guarantee``)."""
        if self._stated_guarantee is not None:
            return self._stated_guarantee
        return self._guarantee()

    def _guarantee(self) -> Guarantee:
        return Guarantee("unstated")

    def with_guarantee(self, guarantee: Guarantee):
        """A copy of this mechanism that states ``guarantee`` (e.g. what the library that released it said).

        The release and the likelihood are unchanged; only ``guarantee()`` and the results'
        constant data differ.

        Examples
        --------
        >>> from ppdinfer.mechanisms import DiscreteLaplace
        >>> from ppdinfer.mechanisms.guarantee import Guarantee
        >>> stated = DiscreteLaplace(1.0, 2.0).with_guarantee(Guarantee("pure", epsilon=0.5, note="per query"))
        >>> stated.guarantee().epsilon, stated == DiscreteLaplace(1.0, 2.0)
        (0.5, True)
        """
        if not isinstance(guarantee, Guarantee):
            raise ValueError(f"guarantee must be a ppdinfer Guarantee, got {guarantee!r}")
        stated = copy.copy(self)
        stated._stated_guarantee = guarantee
        return stated

    def noise_covariance(self, dim: int) -> np.ndarray | None:
        """C when a release of a vector of ``dim`` values is x + N(0, C) (Gaussian noise), else None."""
        return None

    def release_shape(self, x_shape) -> tuple[int, ...]:
        """The shape of a release of one x of shape ``x_shape``: x's own by default.

        A mechanism whose release is not x plus noise overrides it (a noisy-measurement file
        releases one value per query of its cells).

        Examples
        --------
        >>> from ppdinfer.mechanisms import Laplace
        >>> Laplace(1.0).release_shape((3, 2))
        (3, 2)
        """
        return tuple(int(n) for n in x_shape)

    def impossible_release(self, y, z=None) -> str | None:
        """Why ``y`` has probability zero whatever x is, where y alone decides it; else None.

        The default decides nothing (None); a mechanism whose releases keep a visible property
        (invariants, a post-processing's image) overrides it, and the samplers refuse such a y up front.
        """
        return None

    def check_latent(self, x, z=None, caller: str = "", stacklevel: int = 2) -> None:
        """Warn when the likelihood at the distinct values ``x`` (rows) is computed approximately.

        The default computes every value exactly and does nothing.
        """

    def auxiliary_release(self, x_shape, z, rng: np.random.Generator):
        """``(draw_w, log_ratio)`` for the exchange algorithm: an exact release w of a flat candidate x',
        and ``log q(w | x) - log q(w | x')`` from ``unnormalized_logpdf`` (the normalizer never computed).

        Both functions take and return flat arrays; the default calls ``release`` and
        ``unnormalized_logpdf``, which a mechanism with an unknown normalizer provides.
        """

        def draw_w(candidate):
            return np.asarray(self.release(candidate.reshape(x_shape), z, rng)).reshape(-1)

        def log_ratio(w, current, candidate):
            both = self.unnormalized_logpdf(w.reshape(x_shape), np.stack([current, candidate]).reshape(2, *x_shape), z)
            both = np.asarray(both, dtype=float)
            return float(both[0] - both[1])

        return draw_w, log_ratio

    def release(self, x, z=None, random_seed: SeedLike = None) -> np.ndarray:
        """The privatized release of ``x`` (same shape as ``x``)."""
        raise NotImplementedError

    def logpdf(self, y, x, z=None) -> np.ndarray:
        """log pi(y | x, z): one release ``y`` against one value or a batch of values of ``x``.

        The shape contract, which every mechanism of the package keeps (the tests check it for
        each one): ``y`` is one release, of the shape S of what
        ``release`` returns; ``x`` is one confidential value of shape S or a batch of them, shape
        ``(B, *S)``, and the result is a float array of shape (B,) ((1,) for a single x), the log density
        of the whole release (the sum over its coordinates), entry b for ``x[b]``. For scalar
        releases, S = (), a batch is a vector of shape (B,). Mechanisms of structured releases
        (tables, vectors of a fixed dimension d) also take ``y`` flattened to (d,) and a batch
        flattened to (B, d).

        An impossible release gives -inf (y off the span of the noise, a table breaking the public
        invariants, a value outside a bounded support); ``WassersteinExponential`` refuses with a
        ValueError a y outside its base measure's support, and a mechanism whose normalizer is out of
        reach refuses rather than return a biased value. ``z`` is the public information a
        mechanism reads (ignored by those that read none).

        Parameters
        ----------
        y : array_like
            One release, shape S.
        x : array_like
            One confidential value, shape S, or a batch of shape ``(B, *S)``.
        z : object, optional
            The public information.

        Returns
        -------
        numpy.ndarray
            Shape (B,), or (1,) for one x.

        Raises
        ------
        ValueError
            When a value is not of the mechanism's kind (not finite; not an integer for a discrete
            one), or ``x`` is neither of shape S nor ``(B, *S)``. Three mechanisms are lenient on the
            last point: ``PostProcessedRelease`` reads any integer ``x`` as rows of its raw dimension
            d, and ``Congenial`` and ``KNormGradient`` any ``x`` whose trailing axes hold d values.
        """
        raise NotImplementedError

    def log_bound(self, z=None, size: int = 1) -> float:
        """log M, M >= sup over x and y of the density of a release of ``size`` coordinates.

        ``size`` is the number of coordinates d of one release (``y.size``); mechanisms of a fixed
        dimension (a sensitivity space, a two-bin histogram) refuse any other with a ValueError.
        """
        raise NotImplementedError

    def parameters(self) -> dict[str, float]:
        """The mechanism's settings, recorded in a result's constant_data group."""
        raise NotImplementedError

    def noise_scale(self, x, z=None) -> float:
        """The typical size of one coordinate's noise y - x for releases of ``x``.

        MCMC on a latent x (:class:`ppdinfer.pymc.PrivacyAugmentation`) sizes its local moves by
        it. This default measures it: the root mean square of y - x over 16 releases of x
        (fixed seed), at least 1e-12. Mechanisms with a closed form override it.
        """
        x = np.asarray(x, dtype=float)
        noise = np.stack([np.asarray(self.release(x, z, random_seed=seed), dtype=float) - x for seed in range(16)])
        return max(float(np.sqrt(np.mean(noise**2))), 1e-12)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.parameters().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.parameters() == other.parameters()

    def __hash__(self) -> int:
        return hash((type(self), tuple(self.parameters().items())))


class AdditiveNoiseMechanism(Mechanism):
    r"""y = x + e with iid noise e whose log density is ``log_norm - rate * |e| ** power``.

    Subclasses provide ``log_norm``, ``rate``, ``power`` and ``_noise(shape, rng, secure)``.
    Over the d coordinates of a release

    .. math::

        \log \pi(y \mid x) = d \, \texttt{log\_norm} - \texttt{rate} \sum_{k=1}^{d} |y_k - x_k|^{\texttt{power}},

    largest at y = x whatever x is, so log M = d log_norm.

    With one scale per coordinate (a vector ``sensitivity`` or ``sigma``), ``rate`` and ``log_norm``
    are arrays of shape (d,), ``coordinates`` is d, and the density is
    sum_k (log_norm_k - rate_k |y_k - x_k| ** power) over the coordinates of the flattened release (C
    order): independent noise that is not identically distributed. Such a mechanism is neither
    ``separable`` nor declares ``additive_noise`` (None), so the compiled iid kernels and the symbolic
    PyMC likelihood, which read one scalar rate, are not used: the samplers take their general paths
    (``logpdf``), and the consumers that need iid noise refuse it.

    Examples
    --------
    >>> from ppdinfer.mechanisms import Laplace
    >>> mechanism = Laplace(epsilon=2.0)          # log_norm = log(epsilon / 2) = 0, rate = 2, power = 1
    >>> mechanism.logpdf(1.5, [1.5, 2.0, 3.5])
    array([ 0., -1., -4.])
    >>> mechanism.log_bound(size=1)
    0.0
    """

    log_norm: float | np.ndarray
    rate: float | np.ndarray
    power: int
    #: The parameter that sets the scales, named when a release has the wrong number of coordinates.
    scale_parameter = "sensitivity"

    @property
    def coordinates(self) -> int | None:
        """d, the number of coordinates of a release, when the noise has one scale per coordinate; else None.

        Examples
        --------
        >>> from ppdinfer.mechanisms import Laplace
        >>> Laplace(1.0).coordinates, Laplace(1.0, sensitivity=[1.0, 2.0, 2.0]).coordinates
        (None, 3)
        """
        return None if np.ndim(self.rate) == 0 else int(np.size(self.rate))

    @property
    def separable(self) -> bool:
        """True for one scale shared by every coordinate (one density of y_k - x_k); False per coordinate."""
        return self.coordinates is None

    @property
    def additive_noise(self) -> AdditiveNoise | None:
        """This mechanism's iid noise as the compiled kernels read it; None for one scale per coordinate."""
        if self.coordinates is not None:
            return None
        return AdditiveNoise(self.log_norm, self.rate, self.power, self.discrete)

    def check_coordinates(self, size: int, what: str) -> None:
        """A ValueError when the noise has one scale per coordinate and ``what`` has not ``size`` = d of them.

        Examples
        --------
        >>> from ppdinfer.mechanisms import Laplace
        >>> Laplace(1.0, sensitivity=[1.0, 2.0]).check_coordinates(3, "x")
        Traceback (most recent call last):
        ...
        ValueError: sensitivity has 2 values, one per released coordinate, but x has 3 coordinates
        """
        if self.coordinates is not None and size != self.coordinates:
            raise ValueError(
                f"{self.scale_parameter} has {self.coordinates} values, one per released coordinate, "
                f"but {what} has {size} coordinates"
            )

    def release(self, x, z=None, random_seed: SeedLike = None, *, secure: bool = False) -> np.ndarray:
        """The release ``x + noise``; a discrete mechanism releases counts, so x must hold integers >= 0.

        With ``secure=True`` the noise comes from the operating system's cryptographically
        secure generator (discrete mechanisms only) and ``random_seed`` is ignored.
        """
        x = nonnegative_counts(x, "x") if self.discrete else finite_array(x, "x")
        if secure and not self.discrete:
            raise ValueError("secure=True is available for the discrete (integer) mechanisms only")
        self.check_coordinates(x.size, "x")
        noise = self._noise(x.shape, as_generator(random_seed), secure)
        return x + noise

    def logpdf(self, y, x, z=None) -> np.ndarray:
        """The sum over coordinates of log_norm - rate |y_k - x_k| ** power for one x or each x of a batch.

        ``y`` of shape S, ``x`` of shape S or ``(B, *S)`` (a vector (B,) for scalar y); shape (B,), see
        :meth:`Mechanism.logpdf`.
        """
        y = self._check_values(y, "y")
        x = self._check_values(x, "x")
        x2 = as_batch(x, y)
        y1 = np.ascontiguousarray(y.reshape(-1), dtype=np.float64)
        if self.coordinates is not None:
            self.check_coordinates(y.size, "y")
            distance = np.abs(y1 - x2)
            return np.sum(self.log_norm) - (self.rate * distance**self.power).sum(axis=1)
        return additive_noise_loglik(
            y1, np.ascontiguousarray(x2, dtype=np.float64), self.log_norm, self.rate, self.power
        )

    def log_bound(self, z=None, size: int = 1) -> float:
        # The noise density is largest at zero noise, whatever x is.
        if self.coordinates is not None:
            self.check_coordinates(size, "a release of size")
            return float(np.sum(self.log_norm))
        return size * self.log_norm

    def noise_covariance(self, dim: int) -> np.ndarray | None:
        """sigma^2 I (diag(sigma_k^2) per coordinate) for continuous Gaussian noise (power 2), else None."""
        if self.discrete or self.power != 2:
            return None
        dim = positive_int(dim, "dim")
        self.check_coordinates(dim, "dim")
        return np.eye(dim) / (2 * self.rate)

    def noise_scale(self, x=None, z=None) -> float:
        """The noise's standard deviation per coordinate, from the continuous density
        exp(-rate |e| ** power): sqrt(2) / rate (Laplace), sqrt(1 / (2 rate)) (Gaussian); x and z
        are not needed (a discrete form differs by less than the step size needs). With one scale
        per coordinate, the root mean square of the coordinates' standard deviations."""
        rate = np.asarray(self.rate)
        sd = np.sqrt(2.0) / rate if self.power == 1 else np.sqrt(0.5 / rate)
        return float(sd) if sd.ndim == 0 else float(np.sqrt(np.mean(sd**2)))

    def _check_values(self, values, name: str) -> np.ndarray:
        if self.discrete:
            return integer_valued(values, name)
        return finite_array(values, name)

    def _noise(self, shape, rng: np.random.Generator, secure: bool) -> np.ndarray:
        raise NotImplementedError


def as_batch(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """View x as (B, d) where d = y.size; x may be (B,) for scalar y or (B, *y.shape)."""
    dim = y.size
    if x.ndim == y.ndim and y.ndim >= 1 and x.shape == y.shape:
        return x.reshape(1, dim)
    if x.ndim == 0 and y.ndim == 0:
        return x.reshape(1, 1)
    if x.shape[1:] != y.shape:
        raise ValueError(f"y has shape {y.shape} but x has shape {x.shape}: x must be a batch of shape (B, *y.shape)")
    return x.reshape(x.shape[0], dim)


def recorded(values: float | np.ndarray) -> float | tuple[float, ...]:
    """A scalar setting as it is, a vector of per-coordinate settings as a tuple (hashable, comparable, readable).

    Examples
    --------
    >>> recorded(2.0), recorded(np.array([1.0, 3.0]))
    (2.0, (1.0, 3.0))
    """
    return tuple(np.asarray(values).tolist()) if np.ndim(values) else values

"""The model triple: prior pi(theta | z), data model pi(x | theta, z), mechanism pi(y | x, z)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..mechanisms.base import Mechanism
from ..priors import Prior


class PPDModel:
    """A partially-private-data model: prior, data model and release mechanism.

    Parameters
    ----------
    prior
        An object with ``rvs(size, random_state)`` and ``logpdf(theta)`` (scipy.stats frozen
        distributions work), or a :class:`ppdinfer.priors.Prior`, which may also use z.
    simulate
        ``simulate(theta, z, rng) -> x`` for a batch of theta (shape (B,) or (B, k)), with
        ``x.shape[0] == B``; the classes in :mod:`ppdinfer.generators` qualify.
    mechanism
        A :class:`ppdinfer.mechanisms.Mechanism`: the likelihood pi(y | x, z).
    names
        The name of theta in results: one string (theta stored as one variable, a vector if
        theta is), or one string per component of theta.
    x_name
        The name of the confidential data in results.
    """

    def __init__(self, prior, simulate, mechanism: Mechanism, names: str | Sequence[str] = "theta",
                 x_name: str = "x"):
        if not (hasattr(prior, "rvs") and hasattr(prior, "logpdf")):
            raise ValueError("prior must have rvs(size, random_state) and logpdf(theta) methods")
        if not callable(simulate):
            raise ValueError("simulate must be callable as simulate(theta, z, rng)")
        if not isinstance(mechanism, Mechanism):
            raise ValueError(f"mechanism must be a ppdinfer.mechanisms.Mechanism, got {mechanism!r}")
        if isinstance(names, str):
            names = (names,)
        names = tuple(names)
        if not names or not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
            raise ValueError(f"names must be one or more distinct non-empty strings, got {names!r}")
        if x_name in names:
            raise ValueError(f"x_name {x_name!r} clashes with a name in names")
        self.prior = prior
        self.simulate = simulate
        self.mechanism = mechanism
        self.names = names
        self.x_name = x_name

    def __repr__(self) -> str:
        return (f"PPDModel(prior={self.prior!r}, simulate={self.simulate!r}, "
                f"mechanism={self.mechanism!r}, names={self.names!r})")

    def to_pymc(self, y, z=None):
        """The same posterior as a ``pymc.Model``; gallery models implement it (see ppdinfer.models)."""
        raise NotImplementedError(
            f"{type(self).__name__} has no PyMC twin: write a pm.Model with ppdinfer.pymc.DiscreteLaplace "
            "(or DiscreteGaussian) as the likelihood of y"
        )

    # -- the three parts, on batches -------------------------------------------------------
    def sample_prior(self, size: int, rng: np.random.Generator, z) -> np.ndarray:
        """theta draws as a 2-D array (size, k)."""
        return draw_theta(self.prior, size, rng, z)

    def prior_logpdf(self, theta: np.ndarray, z) -> np.ndarray:
        """log pi(theta | z) for theta of shape (B, k)."""
        return theta_logpdf(self.prior, theta, z)

    def simulate_x(self, theta: np.ndarray, z, rng: np.random.Generator) -> np.ndarray:
        """x draws as a 2-D array (B, d) for theta of shape (B, k)."""
        x = np.asarray(self.simulate(_natural(theta), z, rng))
        if x.shape[0] != theta.shape[0]:
            raise ValueError(
                f"simulate returned {x.shape[0]} rows of x for {theta.shape[0]} values of theta"
            )
        return x.reshape(theta.shape[0], -1)

    def loglik(self, y: np.ndarray, x: np.ndarray, z) -> np.ndarray:
        """log pi(y | x, z) for x of shape (B, d)."""
        return self.mechanism.logpdf(y.reshape(-1), x, z)

    # -- validation --------------------------------------------------------------------------
    def prepare(self, y, z, rng: np.random.Generator | None = None):
        """Validate (y, z) against the model; return y as an array, z as a dict, and the theta and x shapes.

        A tiny prior-predictive draw tells the shapes of theta and x, so a y of the wrong
        shape is caught before any sampling.
        """
        z = _as_z(z)
        check_z = getattr(self.simulate, "check_z", None)
        if check_z is not None:
            check_z(z)
        rng = np.random.default_rng(0) if rng is None else rng
        raw_theta = _raw_draws(self.prior, 1, rng, z)
        theta = raw_theta.reshape(1, -1)
        x = np.asarray(self.simulate(_natural(theta), z, rng))
        x_shape = x.shape[1:]
        y = np.asarray(y)
        if y.dtype == object or not np.issubdtype(y.dtype, np.number):
            raise ValueError(f"y must be numeric, got {y!r}")
        if y.shape != x_shape:
            raise ValueError(f"y has shape {y.shape} but the model's x has shape {x_shape}")
        if not np.all(np.isfinite(y)):
            raise ValueError("y must be finite")
        if self.mechanism.discrete and np.any(y != np.round(y)):
            raise ValueError(f"y must hold integers for the discrete mechanism {self.mechanism!r}, got {y!r}")
        if len(self.names) > 1 and len(self.names) != theta.shape[1]:
            raise ValueError(f"names has {len(self.names)} entries but theta has {theta.shape[1]} components")
        return y, z, raw_theta.shape[1:], x_shape


def _raw_draws(distribution, size: int, rng: np.random.Generator, z) -> np.ndarray:
    if isinstance(distribution, Prior):
        theta = distribution.rvs(size, rng, z=z)
    else:
        theta = distribution.rvs(size=size, random_state=rng)
    return np.asarray(theta, dtype=float)


def draw_theta(distribution, size: int, rng: np.random.Generator, z) -> np.ndarray:
    """Draws from a prior-like ``distribution`` as a 2-D array (size, k)."""
    return _raw_draws(distribution, size, rng, z).reshape(size, -1)


def theta_logpdf(distribution, theta: np.ndarray, z) -> np.ndarray:
    """log density of a prior-like ``distribution`` at theta of shape (B, k)."""
    arg = _natural(theta)
    out = distribution.logpdf(arg, z=z) if isinstance(distribution, Prior) else distribution.logpdf(arg)
    return np.asarray(out, dtype=float).reshape(theta.shape[0])


def _natural(theta: np.ndarray) -> np.ndarray:
    """theta as user code expects it: (B,) for a scalar parameter, (B, k) otherwise."""
    return theta[:, 0] if theta.shape[1] == 1 else theta


def _as_z(z) -> dict | None:
    if z is None:
        return None
    if not isinstance(z, Mapping):
        raise ValueError(f"z must be None or a mapping of names to public values, got {type(z).__name__}")
    return dict(z)

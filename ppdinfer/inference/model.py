"""The model triple: prior pi(theta | z), data model pi(x | theta, z), mechanism pi(y | x, z)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats

from ..mechanisms.base import Mechanism
from ..priors import Prior

#: The memory estimate counts each draw's theta, x and two scalars this many times (measured peaks:
#: importance_sample 3.3 times for a scalar theta and x, 2.1 for five county counts; rejection_sample 3.0).
_MEMORY_COPIES = 4
_DIRICHLET_FROZEN = type(stats.dirichlet([1.0, 1.0]))


class PPDModel:
    r"""A partially-private-data model: prior, data model and release mechanism.

    The samplers target the joint posterior of the parameter theta and the confidential data x
    given the release y and the public information z:

    .. math::

        \pi(\theta, x \mid y, z) \propto \pi(\theta \mid z) \, \pi(x \mid \theta, z) \, \pi(y \mid x, z).

    Parameters
    ----------
    prior
        An object with ``rvs(size, random_state)`` and ``logpdf(theta)`` (scipy.stats frozen
        distributions work, multivariate ones too), or a :class:`ppdinfer.priors.Prior`, which
        may also use z.
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
    dims
        Dimension names in results: a mapping from a name in ``names`` or ``x_name`` to a tuple
        of names, one per axis (y takes x's). Default: ``{name}_dim_{i}``.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> model = pp.PPDModel(pp.priors.Beta(2, 3), pp.generators.Binomial(100),
    ...                     pp.mechanisms.DiscreteLaplace(0.5), names="p")
    >>> y = model.mechanism.release(40, random_seed=1)   # the curator releases x = 40
    >>> result = pp.exact_posterior(model, y)             # the analyst's posterior
    >>> list(result["posterior"].data_vars)
    ['p', 'x']
    """

    def __init__(self, prior, simulate, mechanism: Mechanism, names: str | Sequence[str] = "theta",
                 x_name: str = "x", dims: Mapping[str, str | Sequence[str]] | None = None):
        check_distribution(prior, "prior")
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
        self.dims = _as_dims(dims, (*names, x_name))

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
        try:
            raw_theta = _raw_draws(self.prior, 2, rng, z)  # not 1: scipy squeezes a single draw
            theta = raw_theta.reshape(2, -1)
            x = np.asarray(self.simulate(_natural(theta), z, rng))
        except KeyError as err:
            key = err.args[0] if err.args else None
            if key is None or key in (z or {}):
                raise
            raise ValueError(f"z has no key {key!r}, which the model reads; z has keys {sorted(z or {})}") from err
        theta_shape, x_shape = raw_theta.shape[1:], x.shape[1:]
        y = np.asarray(y)
        if y.dtype == object or not np.issubdtype(y.dtype, np.number):
            raise ValueError(f"y must be numeric, got {y!r}")
        if y.shape != x_shape:
            like = [f"z[{key!r}]" for key, value in (z or {}).items() if x_shape and np.shape(value) == x_shape]
            raise ValueError(f"y has shape {y.shape} but the model's x has shape {x_shape}"
                             + (f", the shape of {' and '.join(like)}: y and z do not fit together" if like else ""))
        if not np.all(np.isfinite(y)):
            raise ValueError("y must be finite")
        if self.mechanism.discrete and np.any(y != np.round(y)):
            raise ValueError(f"y must hold integers for the discrete mechanism {self.mechanism!r}, got {y!r}")
        if len(self.names) > 1 and len(self.names) != theta.shape[1]:
            raise ValueError(f"names has {len(self.names)} entries but theta has {theta.shape[1]} components")
        for name, dims in self.dims.items():
            ndim = len(x_shape) if name == self.x_name else len(theta_shape) if len(self.names) == 1 else 0
            if len(dims) != ndim:
                raise ValueError(f"dims[{name!r}] = {dims} names {len(dims)} dimensions but {name} has {ndim}")
        return y, z, theta_shape, x_shape

    @staticmethod
    def check_memory(draws: int, theta_shape, x_shape) -> None:
        """Refuse (ValueError) a request whose ``draws`` draws would not fit in the available memory.

        The estimate counts each draw's theta, x and two scalars (its log likelihood and
        weight) as 8-byte values, times a small factor for temporary copies.
        """
        available = available_memory()
        values = int(np.prod(theta_shape)) + int(np.prod(x_shape)) + 2
        needed = draws * values * 8 * _MEMORY_COPIES
        if available is not None and needed > available:
            raise ValueError(
                f"draws={draws} needs about {needed / 2**20:,.0f} MiB ({draws} draws x {values} values x 8 bytes x "
                f"{_MEMORY_COPIES} copies) but only {available / 2**20:,.0f} MiB of memory is available: ask for "
                "fewer draws"
            )


def available_memory() -> int | None:
    """Bytes of memory available now (MemAvailable in /proc/meminfo, else free pages), or None if unknown."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (AttributeError, OSError, ValueError):  # no sysconf (Windows) or no such name (macOS)
        return None


def check_distribution(distribution, name: str) -> None:
    """Raise ValueError unless ``distribution`` can serve as a prior or proposal (``name`` says which)."""
    if callable(distribution) and type(distribution).__module__.startswith("scipy.stats"):
        family = getattr(distribution, "name", None) or type(distribution).__name__.removesuffix("_gen")
        raise ValueError(f"{name} is the distribution family scipy.stats.{family}, not a distribution: freeze it "
                         f"with its parameters, e.g. stats.{family}(...)")
    if not (hasattr(distribution, "rvs") and hasattr(distribution, "logpdf")):
        raise ValueError(f"{name} must have rvs(size, random_state) and logpdf(theta) methods")


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
    if isinstance(distribution, _DIRICHLET_FROZEN):
        return _scipy_dirichlet_logpdf(distribution, theta)
    arg = _natural(theta)
    out = distribution.logpdf(arg, z=z) if isinstance(distribution, Prior) else distribution.logpdf(arg)
    return np.asarray(out, dtype=float).reshape(theta.shape[0])


def _scipy_dirichlet_logpdf(distribution, theta: np.ndarray) -> np.ndarray:
    """log density of a frozen scipy Dirichlet, whose logpdf wants the components on the first
    axis and raises off the open simplex (-inf here)."""
    inside = np.all(theta > 0, axis=1) & (np.abs(theta.sum(axis=1) - 1) <= 1e-9)
    out = np.full(theta.shape[0], -np.inf)
    if inside.any():
        out[inside] = distribution.logpdf(theta[inside].T)
    return out


def _natural(theta: np.ndarray) -> np.ndarray:
    """theta as user code expects it: (B,) for a scalar parameter, (B, k) otherwise."""
    return theta[:, 0] if theta.shape[1] == 1 else theta


def _as_dims(dims, variables) -> dict[str, tuple[str, ...]]:
    if dims is None:
        return {}
    if not isinstance(dims, Mapping):
        raise ValueError(f"dims must be a mapping of variable names to dimension names, got {dims!r}")
    out = {}
    for name, value in dims.items():
        if name not in variables:
            raise ValueError(f"dims names {name!r}, which is none of the model's variables {list(variables)}")
        value = (value,) if isinstance(value, str) else tuple(value)
        if (not all(isinstance(d, str) and d for d in value) or len(set(value)) != len(value)
                or {"chain", "draw"} & set(value)):
            raise ValueError(f"dims[{name!r}] must be distinct non-empty strings other than chain and draw, "
                             f"got {value!r}")
        out[name] = value
    return out


def _as_z(z) -> dict | None:
    if z is None:
        return None
    if not isinstance(z, Mapping):
        raise ValueError(f"z must be None or a mapping of names to public values, got {type(z).__name__}")
    return dict(z)

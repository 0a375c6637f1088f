"""The model triple: prior pi(theta | z), data model pi(x | theta, z), mechanism pi(y | x, z)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats

from ..mechanisms.base import Mechanism
from ..priors import Prior
from ..validation import resolvable_release, summarize

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
        theta is), or one string per component of theta. For a prior with ``blocks`` (the
        hierarchical priors), one name per block (default: the prior's block names); each block
        is then its own variable, and ``simulate`` receives the prior's ``unit`` block alone.
        Default: ``"theta"``.
    x_name
        The name of the confidential data in results.
    dims
        Dimension names in results: a mapping from a name in ``names`` or ``x_name`` to a tuple
        of names, one per axis (y takes x's). Default: ``{name}_dim_{i}``; the per-unit
        parameters of a prior with ``units`` take x's dimension when x is a vector of that length.
    coords
        Labels of dimensions: a mapping from a dimension name to one label per position (e.g.
        ``{"hospital": names}``), attached to every result. A pandas y (or a pandas value in z of
        x's shape) labels x's dimensions with its index (and columns) too; see :meth:`labels`.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> model = pp.PPDModel(pp.priors.Beta(2, 3), pp.generators.Binomial(100),
    ...                     pp.mechanisms.DiscreteLaplace(0.5), names="p")
    >>> y = model.mechanism.release(40, random_seed=1)   # the curator releases x = 40
    >>> result = pp.exact_posterior(model, y)             # the analyst's posterior
    >>> list(result["posterior"].data_vars)
    ['p', 'x']

    A hierarchical model of per-hospital rates, labelled by hospital:

    >>> prior = pp.priors.HierarchicalGamma(shape=pp.priors.Gamma(2.0, 1.0), mean=pp.priors.Gamma(2.0, 1.0), size=3)
    >>> model = pp.PPDModel(prior, pp.generators.Poisson([10.0, 20.0, 30.0]), pp.mechanisms.Laplace(1.0),
    ...                     names=["a", "m", "rate"], coords={"hospital": ["A", "B", "C"]},
    ...                     dims={"rate": "hospital", "x": "hospital"})
    >>> model.blocks, model.unit_name
    ({'a': (), 'm': (), 'rate': (3,)}, 'rate')
    """

    def __init__(
        self,
        prior,
        simulate,
        mechanism: Mechanism,
        names: str | Sequence[str] | None = None,
        x_name: str = "x",
        dims: Mapping[str, str | Sequence[str]] | None = None,
        coords: Mapping[str, Sequence] | None = None,
    ):
        check_distribution(prior, "prior")
        if not callable(simulate):
            raise ValueError("simulate must be callable as simulate(theta, z, rng)")
        if not isinstance(mechanism, Mechanism):
            raise ValueError(f"mechanism must be a ppdinfer.mechanisms.Mechanism, got {mechanism!r}")
        prior_blocks = getattr(prior, "blocks", None)
        if names is None:
            names = tuple(prior_blocks) if prior_blocks else ("theta",)
        if isinstance(names, str):
            names = (names,)
        names = tuple(names)
        if not names or not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
            raise ValueError(f"names must be one or more distinct non-empty strings, got {names!r}")
        if x_name in names:
            raise ValueError(f"x_name {x_name!r} clashes with a name in names")
        if prior_blocks and len(names) != len(prior_blocks):
            raise ValueError(
                f"names has {len(names)} entries but the prior has {len(prior_blocks)} blocks "
                f"{list(prior_blocks)}: give one name per block"
            )
        if not prior_blocks:
            _check_prior_support(prior, simulate)
        self.prior = prior
        self.simulate = simulate
        self.mechanism = mechanism
        self.names = names
        self.x_name = x_name
        self.dims = _as_dims(dims, (*names, x_name))
        self.coords = _as_coords(coords)
        #: name -> shape of each block of theta (a prior with blocks), else None
        self.blocks = dict(zip(names, prior_blocks.values(), strict=True)) if prior_blocks else None
        #: the name of the per-unit parameters that the data model sees, or None
        self.unit_name = (
            names[list(prior_blocks).index(prior.unit)]
            if prior_blocks
            else (names[0] if getattr(prior, "units", None) is not None and len(names) == 1 else None)
        )

    def __repr__(self) -> str:
        return (
            f"PPDModel(prior={self.prior!r}, simulate={self.simulate!r}, "
            f"mechanism={self.mechanism!r}, names={self.names!r})"
        )

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

    def unit_parameters(self, theta: np.ndarray) -> np.ndarray:
        """The part of theta (B, k) that the data model sees: the prior's unit block, or all of theta."""
        if self.blocks is None:
            return theta
        return theta[:, len(self.blocks) - 1 :]

    def simulate_x(self, theta: np.ndarray, z, rng: np.random.Generator) -> np.ndarray:
        """x draws as a 2-D array (B, d) for theta of shape (B, k)."""
        x = np.asarray(self.simulate(theta_as_given(self.unit_parameters(theta)), z, rng))
        if x.shape[0] != theta.shape[0]:
            raise ValueError(f"simulate returned {x.shape[0]} rows of x for {theta.shape[0]} values of theta")
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
        self._check_units()
        try:
            raw_theta = _raw_draws(self.prior, 2, rng, z)  # not 1: scipy squeezes a single draw
            theta = raw_theta.reshape(2, -1)
            x = np.asarray(self.simulate(theta_as_given(self.unit_parameters(theta)), z, rng))
        except KeyError as err:
            key = err.args[0] if err.args else None
            if key is None or key in (z or {}):
                raise
            raise ValueError(f"z has no key {key!r}, which the model reads; z has keys {sorted(z or {})}") from err
        theta_shape, x_shape = raw_theta.shape[1:], x.shape[1:]
        y = np.asarray(y)
        if y.dtype == object or not np.issubdtype(y.dtype, np.number):
            raise ValueError(f"y must be numeric, got {summarize(y) if y.ndim else repr(y)}")
        if y.shape != x_shape:
            like = [f"z[{key!r}]" for key, value in (z or {}).items() if x_shape and np.shape(value) == x_shape]
            named = f" (dims {self.dims[self.x_name]})" if self.x_name in self.dims else ""
            raise ValueError(
                f"y has shape {y.shape} but the model's x has shape {x_shape}{named}"
                + (f", the shape of {' and '.join(like)}: y and z do not fit together" if like else "")
            )
        if not np.all(np.isfinite(y)):
            raise ValueError("y must be finite")
        if self.mechanism.discrete and np.any(y != np.round(y)):
            raise ValueError(f"y must hold integers for the discrete mechanism {self.mechanism!r}, got {y!r}")
        resolvable_release(y, self.mechanism.additive_noise)
        if self.blocks is None and len(self.names) > 1 and len(self.names) != theta.shape[1]:
            raise ValueError(f"names has {len(self.names)} entries but theta has {theta.shape[1]} components")
        for name, dims in self.dims.items():
            ndim = len(self._shape(name, theta_shape, x_shape))
            if len(dims) != ndim:
                raise ValueError(f"dims[{name!r}] = {dims} names {len(dims)} dimensions but {name} has {ndim}")
        self._check_coords(theta_shape, x_shape)
        return y, z, theta_shape, x_shape

    def _shape(self, name: str, theta_shape, x_shape) -> tuple[int, ...]:
        """The shape of the variable ``name`` in results (a block, theta, a component or x)."""
        if name == self.x_name:
            return tuple(x_shape)
        if self.blocks is not None:
            return self.blocks[name]
        return tuple(theta_shape) if len(self.names) == 1 else ()

    def _check_units(self) -> None:
        """The prior's and the data model's numbers of units agree (both fixed), naming the dims."""
        prior_units, data_units = getattr(self.prior, "units", None), getattr(self.simulate, "units", None)
        if prior_units is None or data_units is None or prior_units == data_units:
            return
        prior_dims = self.dims.get(self.unit_name or "", ())
        data_dims = self.dims.get(self.x_name, ())
        raise ValueError(
            f"the prior has {prior_units} units ({self.unit_name}{', dims ' + str(prior_dims) if prior_dims else ''}) "
            f"but the data model {type(self.simulate).__name__} has {data_units} "
            f"({self.x_name}{', dims ' + str(data_dims) if data_dims else ''}): the two sizes must agree"
        )

    def _check_coords(self, theta_shape, x_shape) -> None:
        for name, dims in self.dims.items():
            for dim, size in zip(dims, self._shape(name, theta_shape, x_shape), strict=True):
                if dim in self.coords and self.coords[dim].size != size:
                    raise ValueError(
                        f"coords[{dim!r}] has {self.coords[dim].size} labels but dimension {dim!r} "
                        f"of {name} has size {size}"
                    )

    def labels(self, y, z=None) -> tuple[dict[str, tuple[str, ...]], dict[str, np.ndarray]]:
        """The dimension names and coordinates of results for the data (y, z): ``(dims, coords)``.

        ``dims`` completes the model's ``dims``: x's axes are named by the model's ``dims``,
        else by the names of a pandas y's index (and columns), else ``{x_name}_dim_{i}``; the
        per-unit parameters take x's dimension when x is a vector of as many units. ``coords``
        adds to the model's ``coords`` the index (and columns) of a pandas y, or else of the first
        pandas value in z of y's shape, as the labels of x's dimensions.

        Examples
        --------
        >>> import pandas as pd
        >>> import ppdinfer as pp
        >>> model = pp.PPDModel(pp.priors.Gamma(2.0, 1.0, size=2), pp.generators.Poisson([10.0, 20.0]),
        ...                     pp.mechanisms.Laplace(1.0), names="rate")
        >>> y = pd.Series([3.2, 7.9], index=pd.Index(["Adams", "Bucks"], name="county"))
        >>> dims, coords = model.labels(y)
        >>> dims, coords["county"].tolist()
        ({'x': ('county',), 'rate': ('county',)}, ['Adams', 'Bucks'])
        """
        dims, coords = dict(self.dims), dict(self.coords)
        source = (
            y if _axes(y) else next((v for v in (z or {}).values() if _axes(v) and np.shape(v) == np.shape(y)), None)
        )
        axes = _axes(source) if source is not None else []
        x_ndim = np.ndim(y)
        x_dims = dims.get(self.x_name) or tuple(
            axes[i].name if i < len(axes) and isinstance(axes[i].name, str) else f"{self.x_name}_dim_{i}"
            for i in range(x_ndim)
        )
        if x_ndim:
            dims[self.x_name] = tuple(x_dims)
        for dim, axis in zip(x_dims, axes, strict=False):
            coords.setdefault(dim, np.asarray(axis))
        units = getattr(self.prior, "units", None)
        if self.unit_name is not None and self.unit_name not in dims and x_ndim == 1 and units == np.shape(y)[0]:
            dims[self.unit_name] = tuple(x_dims)
        return dims, coords

    @staticmethod
    def check_memory(draws: int, theta_shape, x_shape) -> None:
        """Refuse (ValueError) a request whose ``draws`` draws would not fit in the available memory.

        The estimate counts each draw's theta, x and two scalars (its log likelihood and
        weight) as 8-byte values, times a small factor for temporary copies.
        """
        available = available_memory()
        values = int(np.prod(theta_shape)) + int(np.prod(x_shape)) + 2
        needed = draws * values * 8 * _MEMORY_COPIES  # a Python int: exact however large draws is
        if available is not None and needed > available:
            mib = f"{needed / 2**20:,.0f}" if needed < 10**18 else _count(needed // 2**20)
            raise ValueError(
                f"draws={_count(draws)} needs about {mib} MiB ({_count(draws)} draws x {values} values x 8 bytes x "
                f"{_MEMORY_COPIES} copies) but only {available / 2**20:,.0f} MiB of memory is available: ask for "
                "fewer draws"
            )


def _count(n: int) -> str:
    """A whole number for a message: in full, or as 1.23e+300 from 10^18 on (never hundreds of digits)."""
    digits = str(n)
    return digits if n < 10**18 else f"{digits[0]}.{digits[1:3]}e+{len(digits) - 1}"


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
        raise ValueError(
            f"{name} is the distribution family scipy.stats.{family}, not a distribution: freeze it "
            f"with its parameters, e.g. stats.{family}(...)"
        )
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
    arg = theta_as_given(theta)
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


def theta_as_given(theta: np.ndarray) -> np.ndarray:
    """theta as user code expects it: (B,) for a scalar parameter, (B, k) otherwise.

    Examples
    --------
    >>> theta_as_given(np.zeros((4, 1))).shape, theta_as_given(np.zeros((4, 2))).shape
    ((4,), (4, 2))
    """
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
        if (
            not all(isinstance(d, str) and d for d in value)
            or len(set(value)) != len(value)
            or {"chain", "draw"} & set(value)
        ):
            raise ValueError(
                f"dims[{name!r}] must be distinct non-empty strings other than chain and draw, got {value!r}"
            )
        out[name] = value
    return out


def _as_coords(coords) -> dict[str, np.ndarray]:
    if coords is None:
        return {}
    if not isinstance(coords, Mapping):
        raise ValueError(f"coords must be a mapping of dimension names to labels, got {coords!r}")
    out = {}
    for dim, values in coords.items():
        labels = np.asarray(values)
        if not isinstance(dim, str) or not dim or labels.ndim != 1 or len(set(labels.tolist())) != labels.size:
            raise ValueError(
                f"coords[{dim!r}] must be one distinct label per position of a named dimension, "
                f"got {summarize(labels) if labels.ndim else repr(values)}"
            )
        out[dim] = labels
    return out


def _axes(value) -> list:
    """The pandas index (and columns) of a Series or DataFrame, else []."""
    index = getattr(value, "index", None)
    if index is None or not hasattr(value, "to_numpy"):
        return []
    columns = getattr(value, "columns", None)
    return [index] if columns is None else [index, columns]


def _as_z(z) -> dict | None:
    if z is None:
        return None
    if not isinstance(z, Mapping):
        raise ValueError(f"z must be None or a mapping of names to public values, got {type(z).__name__}")
    return dict(z)


def _check_prior_support(prior, simulate) -> None:
    """Refuse a prior whose support leaves the parameter range the data model reads (``theta_bounds``,
    e.g. a probability in [0, 1] for a Binomial), naming the prior; NumPy would fail later, mid-sampling,
    with 'p < 0, p > 1 or p contains NaNs'."""
    bounds = getattr(simulate, "theta_bounds", None)
    dist = getattr(prior, "_dist", prior)  # a ppdinfer Beta / Gamma keeps its frozen scipy law
    if bounds is None or not callable(getattr(dist, "support", None)):
        return
    try:
        low, high = dist.support()
        low, high = float(np.min(low)), float(np.max(high))
    except (TypeError, ValueError):
        return
    if low < bounds[0] or high > bounds[1]:
        frozen = getattr(prior, "dist", None)
        arguments = [*map(repr, prior.args), *(f"{k}={v!r}" for k, v in prior.kwds.items())] if frozen else []
        described = f"scipy.stats.{frozen.name}({', '.join(arguments)})" if hasattr(frozen, "name") else repr(prior)
        raise ValueError(
            f"prior {described} has support [{low:g}, {high:g}], but {simulate!r} reads theta in "
            f"[{bounds[0]:g}, {bounds[1]:g}] (a probability): use a prior on that range, such as priors.Beta"
        )

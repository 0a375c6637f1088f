"""Exact posterior by enumeration: the ground truth for tests and teaching.

x ranges over its finite support given z. theta is integrated out analytically for
conjugate pairs (Beta-Binomial, Dirichlet-Multinomial), and otherwise summed over a grid
(1-D theta): by default the midpoints of ``grid_size`` intervals of equal prior mass, so each
grid point carries prior weight 1 / grid_size.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy import special

from ..rng import SeedLike, as_generator
from ..validation import positive_int
from ._guards import check_box, check_possible, check_z_keys
from .conjugate import BetaMixture, conjugate_pair
from .model import PPDModel, theta_logpdf
from .results import assemble, dimension_names, posterior_dataset

_MAX_CELLS = 50_000_000


def exact_posterior(
    model: PPDModel,
    y,
    z=None,
    *,
    theta_grid=None,
    grid_size: int = 2000,
    draws: int = 4000,
    random_seed: SeedLike = None,
) -> xr.DataTree:
    r"""The posterior of theta and x given y and z, by enumerating x.

    Over the finite support of x given z,

    .. math::

        \pi(x \mid y, z) = \frac{p(x \mid z) \, \pi(y \mid x, z)}{p(y \mid z)}, \qquad
        p(x \mid z) = \int \pi(x \mid \theta, z) \, \pi(\theta \mid z) \, d\theta,

    with p(x | z) in closed form for a conjugate pair and summed over a grid of theta otherwise;
    the posterior of theta is the mixture of pi(theta | x, z) over pi(x | y, z). Per-unit priors
    (``size=H``) are refused in favour of :func:`ppdinfer.rejection_sample`, which is exact per
    unit, and hierarchical priors in favour of :func:`ppdinfer.pymc.sample_model`.

    Parameters
    ----------
    model : PPDModel
        Its data model must report ``support(z, theta_dim)`` and ``logpmf(x, theta, z)``, as the
        classes in :mod:`ppdinfer.generators` do.
    theta_grid : array_like, optional
        For non-conjugate models with scalar theta: the grid to sum over (trapezoid weights
        times the prior density), each value once (a repeated value is refused).
        Default: ``grid_size`` equal-prior-mass points from the prior's ``ppf``. The grid times
        the support of x may hold at most 50,000,000 cells, checked before anything is computed.
        For a conjugate pair, whose posterior is in closed form: the points in [0, 1] where
        ``theta_cdf`` and ``theta_density`` are reported (for every component); default 2,001
        points over each component's mean +- 10 sd.
    draws : int
        Independent exact draws placed in the ``posterior`` group (grid points for a gridded theta).

    Returns
    -------
    xarray.DataTree
        ``posterior``: iid draws; ``exact``: ``x_support``, ``x_pmf``, ``theta_mean``, ``theta_sd``,
        ``theta_grid``, ``theta_cdf`` and ``theta_density`` (per component), and ``log_evidence``
        = log p(y | z); the other groups as for the samplers.

    See Also
    --------
    ppdinfer.rejection_sample : Algorithm 1, exact draws.
    ppdinfer.importance_sample : Algorithm 2, importance sampling.
    ppdinfer.exchange_sample : MCMC by the exchange algorithm.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 3.2.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer import generators, mechanisms, priors
    >>> model = pp.PPDModel(priors.Beta(1, 1), generators.Binomial(100), mechanisms.DiscreteLaplace(0.5), names="p")
    >>> exact = pp.exact_posterior(model, 40)
    >>> round(float(exact["exact"]["theta_mean"][0]), 3), round(float(exact["exact"]["theta_sd"][0]), 3)
    (0.402, 0.055)
    >>> round(float(exact["exact"]["x_pmf"].sum()), 12)   # pi(x | y, z) over x = 0..100
    1.0
    """
    draws = positive_int(draws, "draws")
    grid_size = positive_int(grid_size, "grid_size")
    rng = as_generator(random_seed)
    labels = model.labels(y, z)
    y, z, theta_shape, x_shape = model.prepare(y, z)
    model.check_memory(draws, theta_shape, x_shape)
    if model.blocks is not None:
        raise ValueError(
            f"exact_posterior cannot integrate the hyperparameters and {model.prior.units} unit "
            f"parameters of {type(model.prior).__name__} jointly; use ppdinfer.pymc.sample_model"
        )
    if getattr(model.prior, "units", None) is not None:
        raise ValueError(
            f"exact_posterior handles a scalar theta or a conjugate Dirichlet, not {model.prior.units} "
            "per-unit parameters: rejection_sample draws them exactly, one unit at a time"
        )
    generator = model.simulate
    if not (hasattr(generator, "support") and hasattr(generator, "logpmf")):
        raise ValueError("exact_posterior needs a data model with support(z, theta_dim) and logpmf(x, theta, z)")
    theta_dim = int(np.prod(theta_shape))
    pair = conjugate_pair(model.prior, generator)  # none for a shared p over units of several n_k: the grid
    if pair is None and theta_dim != 1:
        raise ValueError(
            "exact_posterior sums over a grid for scalar theta only; this model has "
            f"{theta_dim} components and no conjugate form"
        )
    if pair is None:  # the grid to sum over
        grid = _checked_grid(model, theta_grid, grid_size)
    else:  # closed form: only where to report it, if the user says
        grid = None if theta_grid is None else _checked_grid(model, theta_grid, grid_size)
        if grid is not None and not np.all((grid >= 0) & (grid <= 1)):
            raise ValueError(
                f"theta_grid must lie in [0, 1] for the conjugate {type(model.prior).__name__} prior, "
                f"got values from {grid.min():g} to {grid.max():g}"
            )
    check_z_keys(model, y, z, "exact_posterior")
    support = np.asarray(generator.support(z, theta_dim)).reshape(-1, int(np.prod(x_shape)))
    n_grid = None if pair is not None else np.size(grid) if isinstance(grid, np.ndarray) else grid
    if n_grid is not None and n_grid * support.shape[0] > _MAX_CELLS:  # before the grid's values are computed
        raise ValueError(
            f"a grid of {n_grid:,} theta values times {support.shape[0]:,} support points of x is "
            f"too large to enumerate (at most {_MAX_CELLS:,} cells): use a smaller grid_size or "
            "theta_grid"
        )
    loglik = model.loglik(y, support, z)
    check_possible(model, y, z, support_loglik=loglik)
    if pair is not None:
        exact, theta, x = _conjugate(pair, support, loglik, z, draws, rng, grid)
    else:
        exact, theta, x = _gridded(model, generator, support, loglik, z, grid, draws, rng)
    check_box(model, x, z, "exact_posterior")
    exact["x_support"] = (
        ["support", *dimension_names(model.x_name, len(x_shape), model.dims)],
        support.reshape(-1, *x_shape),
    )
    posterior = posterior_dataset(model, theta, x, theta_shape, x_shape)
    return assemble(model, y, z, posterior, attrs={"sampler": "exact"}, labels=labels, exact=exact)


def _normalize(log_p):
    log_norm = special.logsumexp(log_p)
    return np.exp(log_p - log_norm), float(log_norm)


def _conjugate(pair, support, loglik, z, draws, rng, theta_grid=None):
    x_pmf, log_evidence = _normalize(pair.log_marginal(support, z) + loglik)
    a, b = pair.component_betas(support, z)
    mixture = BetaMixture(x_pmf, a, b)
    if theta_grid is None:
        grid = mixture.grid(2001)
    else:  # the user's points, for every component
        grid = np.repeat(theta_grid[:, None], len(mixture.components), axis=1)
    exact = _exact_dataset(
        x_pmf, log_evidence, mixture.mean(), mixture.sd(), grid, mixture.cdf(grid), mixture.pdf(grid)
    )
    x = support[rng.choice(support.shape[0], size=draws, p=x_pmf)]
    return exact, pair.sample_theta(x, z, rng), x


def _checked_grid(model, theta_grid, grid_size: int) -> np.ndarray | int:
    """The user's ``theta_grid`` sorted and checked (finite, no value twice: it would count its prior
    mass twice), or ``grid_size``: the equal-prior-mass points, computed once the size is known to fit."""
    if theta_grid is None:
        if not hasattr(model.prior, "ppf"):
            raise ValueError("the prior has no ppf: pass theta_grid to exact_posterior")
        return grid_size
    grid = np.sort(np.asarray(theta_grid, dtype=float).reshape(-1))
    if grid.size < 3 or not np.all(np.isfinite(grid)):
        raise ValueError(
            f"theta_grid must hold at least 3 finite values, got {grid.size} values"
            + ("" if np.all(np.isfinite(grid)) else " with non-finite ones")
        )
    repeated = grid[1:][np.diff(grid) == 0]
    if repeated.size:
        raise ValueError(
            f"theta_grid holds {repeated[0]:g} more than once ({repeated.size} repeats): give each value "
            "once, or its prior mass counts twice"
        )
    return grid


def _gridded(model, generator, support, loglik, z, grid, draws, rng):
    if isinstance(grid, int):  # grid_size points of equal prior mass
        grid, size = np.asarray(model.prior.ppf((np.arange(grid) + 0.5) / grid), dtype=float), grid
        log_prior_mass = np.full(size, -np.log(size))
    else:
        widths = np.gradient(grid)
        log_prior_mass = theta_logpdf(model.prior, grid[:, None], z) + np.log(widths)
    log_joint = log_prior_mass[:, None] + generator.logpmf(support, grid, z) + loglik[None, :]
    joint, log_evidence = _normalize(log_joint)
    theta_pmf = joint.sum(axis=1)
    x_pmf = joint.sum(axis=0)
    mean = np.sum(theta_pmf * grid)
    sd = np.sqrt(max(np.sum(theta_pmf * grid**2) - mean**2, 0.0))
    cdf = np.cumsum(theta_pmf) - theta_pmf / 2  # midpoint convention for interval masses
    density = theta_pmf / np.gradient(grid)
    exact = _exact_dataset(
        x_pmf, log_evidence, np.array([mean]), np.array([sd]), grid[:, None], cdf[:, None], density[:, None]
    )
    cell = rng.choice(joint.size, size=draws, p=joint.reshape(-1))
    g, s = np.divmod(cell, support.shape[0])
    return exact, grid[g][:, None], support[s]


def _exact_dataset(x_pmf, log_evidence, mean, sd, grid, cdf, density) -> xr.Dataset:
    return xr.Dataset(
        {
            "x_pmf": (["support"], x_pmf),
            "log_evidence": ((), log_evidence),
            "theta_mean": (["component"], mean),
            "theta_sd": (["component"], sd),
            "theta_grid": (["grid", "component"], grid),
            "theta_cdf": (["grid", "component"], cdf),
            "theta_density": (["grid", "component"], density),
        }
    )

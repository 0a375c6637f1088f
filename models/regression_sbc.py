r"""Simulation-based calibration of the regression's samplers on record-level simulations (Talts et al. 2018).

Each simulation draws theta from the priors of :mod:`~ppdinfer.models.linear_regression`'s ``"regression"``
parametrization (beta, mu_x ~ N(0, s); sigma and the sds of x ~ HalfNormal(s); LKJ(2) correlations for d > 1),
n records from the model, clips them to the box and releases their statistics with the model's Laplace noise:
the release's true law, clipping included. A sampler is then fitted to the release and the truth ranked among L
of its posterior draws (:func:`ppdinfer.simulation_based_calibration.rank_uniformity` tests the ranks; the result is
a :class:`ppdinfer.SBCResult`). The exact sampler
(:func:`~ppdinfer.models.regression_records.fit_records`) must pass at any n; the normal approximation
(:meth:`~ppdinfer.models.linear_regression.LinearRegressionModel.fit`) only where its approximations hold (n large,
little clipping), so a box that the prior's records often leave fails it by design.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..rng import SeedLike, as_generator
from ..simulation_based_calibration import SBCResult, sbc_simulator
from ..validation import positive_int
from .linear_regression import LinearRegressionModel

__all__ = ["NAMES", "calibrate", "prior_draws"]

#: The parameters ranked: the names of ``fit_records``' posterior and of the twin's ``"regression"`` one.
NAMES = ("beta", "sigma", "mu_x", "sd_x")


def prior_draws(model: LinearRegressionModel, count: int, random_seed: SeedLike = None) -> dict:
    """``count`` draws of theta from the ``"regression"`` priors of scale ``model.prior_scale``.

    Returns a dict of arrays with a leading axis of ``count``: ``beta`` (d + 1), ``sigma``, ``mu_x`` (d), ``sd_x``
    (d) and ``cov_x`` (d, d).

    Examples
    --------
    >>> from ppdinfer.models import linear_regression, regression_sbc
    >>> model = linear_regression.model(n=50, epsilon=1.0, prior_scale=1.0)
    >>> draws = regression_sbc.prior_draws(model, 4, random_seed=0)
    >>> draws["beta"].shape, draws["cov_x"].shape
    ((4, 2), (4, 1, 1))
    """
    count = positive_int(count, "count")
    rng = as_generator(random_seed)
    d, s = model.d, model.prior_scale
    draws = {
        "beta": rng.normal(0.0, s, (count, d + 1)),
        "sigma": np.abs(rng.normal(0.0, s, count)),
        "mu_x": rng.normal(0.0, s, (count, d)),
        "sd_x": np.abs(rng.normal(0.0, s, (count, d))),
    }
    corr = np.ones((count, 1, 1))
    if d > 1:
        import pymc as pm

        chol = pm.draw(pm.LKJCorr.dist(n=d, eta=2.0), draws=count, random_seed=rng)  # Cholesky factors
        corr = chol @ np.swapaxes(chol, -1, -2)
    draws["cov_x"] = draws["sd_x"][:, :, None] * corr * draws["sd_x"][:, None, :]
    return draws


def calibrate(
    model: LinearRegressionModel,
    sampler: Callable,
    *,
    simulations: int = 100,
    draws: int = 99,
    names=NAMES,
    bins: int | None = None,
    alpha: float = 0.01,
    random_seed: SeedLike = None,
) -> SBCResult:
    """Simulation-based calibration of ``sampler(model, released, random_seed=seed)`` on record-level simulations.

    Parameters
    ----------
    model : LinearRegressionModel
        Its priors, box and noise simulate; the sampler fits it.
    sampler : callable
        Returns an ``xarray.DataTree`` whose posterior holds ``names`` with dims (chain, draw, ...), at least
        ``draws`` draws (thinned evenly to ``draws``), e.g. ``functools.partial(fit_records, draws=1000)``.
    simulations, draws, bins, alpha
        As in :func:`ppdinfer.sbc`: N simulations, L ranked draws, the chi-square test's bins and level.
    names : tuple of str
        The parameters ranked (a subset of :data:`NAMES`).
    random_seed : int, SeedSequence or None
        Simulation i draws its theta, records and noise from block 0 of stream i and seeds the sampler from block 1.

    Returns
    -------
    SBCResult

    Examples
    --------
    >>> import functools
    >>> from ppdinfer.models import linear_regression, regression_records, regression_sbc
    >>> model = linear_regression.LinearRegressionModel(5, [(-1.5, 1.5)], (-2.0, 2.0), 5.0, prior_scale=1.0)
    >>> fit = functools.partial(regression_records.fit_records, draws=200, tune=50, chains=1, passes=3)
    >>> result = regression_sbc.calibrate(model, fit, simulations=20, draws=19, random_seed=1)
    >>> result.ranks["beta"].shape, result.calibrated
    ((20, 2), True)
    """
    unknown = set(names) - set(NAMES)
    if unknown or not names:
        raise ValueError(f"names must be a non-empty subset of {NAMES}, got {names!r}")

    def simulate(rng):
        theta = {key: value[0] for key, value in prior_draws(model, 1, rng).items()}
        x = rng.multivariate_normal(theta["mu_x"], theta["cov_x"], size=model.n)
        y = theta["beta"][0] + x @ theta["beta"][1:] + theta["sigma"] * rng.standard_normal(model.n)
        return theta, model.release(x, y, random_seed=rng)

    def fit(released, random_seed):
        return sampler(model, released, random_seed=random_seed)

    return sbc_simulator(simulate, fit, names, simulations=simulations, draws=draws, bins=bins, alpha=alpha,
                         random_seed=random_seed)  # fmt: skip

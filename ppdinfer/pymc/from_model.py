r"""A PyMC model and sampler for any :class:`ppdinfer.PPDModel`, whatever its mechanism.

:func:`from_model` translates the prior and the data model into PyMC variables and observes
the release through :class:`ppdinfer.pymc.Release`, the mechanism's own ``logpdf``:

.. math::

    \log \pi(\theta, x \mid y, z) = \log \pi(\theta \mid z) + \log \pi(x \mid \theta, z)
    + \log \pi(y \mid x, z) + \text{const}.

:class:`ppdinfer.pymc.PrivacyAugmentation` updates the integer x by data augmentation driven by
that log density, so any mechanism works, the continuous Laplace and Gaussian noise on an
integer count included (PyMC's generic Metropolis has no such step and can be biased there).
:func:`sample_model` assigns the steps: the augmentation step on x; for a Dirichlet prior on
the cells of a multinomial x, theta is integrated out of the x update and drawn exactly by
:class:`ppdinfer.pymc.ConjugateDirichlet`; NUTS otherwise.
"""

from __future__ import annotations

import numpy as np
import pymc as pm

from .. import generators, priors
from ..inference.model import PPDModel
from .release import Release
from .sampling import sample


def from_model(model: PPDModel, y, z=None) -> pm.Model:
    r"""The posterior of a :class:`ppdinfer.PPDModel` as a ``pymc.Model``.

    theta gets the prior's PyMC counterpart, x the data model's, and the release is the observed
    :class:`ppdinfer.pymc.Release` ``"release"``, the mechanism's log density at y:

    .. math::

        \texttt{release} = \log \pi(y \mid x, z).

    Supported: priors :class:`ppdinfer.priors.Beta`, :class:`ppdinfer.priors.Gamma` and
    :class:`ppdinfer.priors.Dirichlet` (fixed or centred on z); data models
    :class:`ppdinfer.generators.Binomial`, :class:`ppdinfer.generators.Poisson` and
    :class:`ppdinfer.generators.MultinomialTotal`; every mechanism. theta and x take the
    model's names and dims; x starts at y rounded into its support.

    Parameters
    ----------
    model : PPDModel
        The model. When theta's components have names of their own, the vector is the variable
        ``"theta"`` (:func:`theta_variable`) and each name a deterministic component of it.
    y : array_like
        The release, of x's shape.
    z : dict, optional
        Public information the model reads.

    Returns
    -------
    pymc.Model
        Sample it with :func:`sample_model`.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer.pymc import from_model
    >>> model = pp.PPDModel(pp.priors.Beta(2, 3), pp.generators.Binomial(30), pp.mechanisms.Laplace(0.5), names="p")
    >>> twin = from_model(model, 13.3)
    >>> [v.name for v in twin.free_RVs], [v.name for v in twin.observed_RVs]
    (['p', 'x'], ['release'])
    """
    if not isinstance(model, PPDModel):
        raise ValueError(f"model must be a ppdinfer.PPDModel, got {type(model).__name__}")
    dims, labels = model.labels(y, z)
    y, z, theta_shape, x_shape = model.prepare(y, z)
    theta_name = model.unit_name if model.blocks else theta_variable(model)  # a hierarchical theta: its units
    x_name = model.x_name
    shapes = {**(model.blocks or {theta_name: theta_shape}), x_name: x_shape}
    coords = {
        dim: labels.get(dim, np.arange(size))
        for name, names in dims.items()
        for dim, size in zip(names, shapes.get(name, ()), strict=True)
    }
    with pm.Model(coords=coords) as twin:
        theta = _prior_variable(model.prior, theta_name, z, dims.get(theta_name), model.names)
        if model.blocks is None and len(model.names) > 1:  # named components of a vector theta, as the exact
            # samplers report them
            for index, name in enumerate(model.names):
                pm.Deterministic(name, theta[index])
        x = _data_variable(model.simulate, x_name, theta, y, z, x_shape, dims.get(x_name))
        Release("release", model.mechanism, x, z, observed=y, dims=dims.get(x_name))
    return twin


def theta_variable(model: PPDModel) -> str:
    """The name of theta's random variable in :func:`from_model`'s twin: the model's one name, or
    ``"theta"`` when theta's components are named one by one (each then a ``pm.Deterministic``).

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer.pymc import theta_variable
    >>> prior, data = pp.priors.Dirichlet([1.0, 1.0]), pp.generators.MultinomialTotal("total")
    >>> theta_variable(pp.PPDModel(prior, data, pp.mechanisms.Laplace(1.0), names="share"))
    'share'
    >>> theta_variable(pp.PPDModel(prior, data, pp.mechanisms.Laplace(1.0), names=["urban", "rural"]))
    'theta'
    """
    if len(model.names) == 1:
        return model.names[0]
    for candidate in ("theta", "theta_vector"):
        if candidate not in (*model.names, model.x_name):
            return candidate
    raise ValueError(
        f"names {model.names} and x_name {model.x_name!r} take both 'theta' and 'theta_vector', "
        "the names from_model gives the vector of theta's components; rename one"
    )


def _prior_variable(prior, name, z, dims, names=()):
    """theta's PyMC variable; for a hierarchical prior its hyperparameters (named ``names``, the last
    being ``name``, the unit block) first, then the unit vector given them."""
    size = {"dims": dims} if dims else {"shape": prior.units} if getattr(prior, "units", None) else {}
    if isinstance(prior, priors.Hierarchical):
        hyper = [
            _prior_variable(hyperprior, hyper_name, z, None)
            for hyper_name, hyperprior in zip(names[:-1], prior.hyperpriors.values(), strict=True)
        ]
        family = pm.Gamma if isinstance(prior, priors.HierarchicalGamma) else pm.Beta
        alpha, beta = prior.unit_parameters(*hyper)
        return family(name, alpha=alpha, beta=beta, **size)
    if isinstance(prior, priors.Beta):
        return pm.Beta(name, alpha=prior.alpha, beta=prior.beta, **size)
    if isinstance(prior, priors.Gamma):
        return pm.Gamma(name, alpha=prior.shape, beta=prior.rate, **size)
    if isinstance(prior, priors.Dirichlet):
        return pm.Dirichlet(name, a=prior.concentration_vector(z), dims=dims)
    raise ValueError(
        "from_model supports HierarchicalGamma, HierarchicalBeta and the priors Beta, Gamma and "
        f"Dirichlet, not {type(prior).__name__}"
    )


def _data_variable(simulate, name, theta, y, z, shape, dims):
    start = np.clip(np.round(np.asarray(y, dtype=float)), 0, None).astype(np.int64)
    size = {"dims": dims} if dims else {"shape": shape}
    if isinstance(simulate, generators.Binomial):  # p shared or one per unit, n scalar or one per unit
        _check_scalar(theta, "Binomial")
        return pm.Binomial(name, n=simulate.n, p=theta, initval=np.minimum(start, simulate.n), **size)
    if isinstance(simulate, generators.Poisson):  # mu_k = rate_k * exposure_k
        _check_scalar(theta, "Poisson")
        return pm.Poisson(name, mu=theta * simulate.exposure, initval=start, **size)
    if isinstance(simulate, generators.MultinomialTotal):
        total = simulate.total(z)
        return pm.Multinomial(name, n=total, p=theta, dims=dims, initval=feasible_total_start(y, total))
    raise ValueError(
        "from_model supports the data models Binomial, Poisson and MultinomialTotal, "
        f"not {getattr(simulate, '__name__', type(simulate).__name__)}"
    )


def feasible_total_start(y, total: int) -> np.ndarray:
    """A start for a multinomial latent: y clipped at 0, rescaled to the total, largest remainders rounded up.

    Examples
    --------
    >>> from ppdinfer.pymc import feasible_total_start
    >>> feasible_total_start([7, 2, -1], 10)
    array([8, 2, 0])
    >>> feasible_total_start([0, 0, 0], 4)                   # no signal: an even split
    array([2, 1, 1])
    """
    y = np.clip(np.asarray(y, dtype=float), 0, None)
    shares = y / y.sum() if y.sum() > 0 else np.full(y.size, 1 / y.size)
    exact = shares * total
    start = np.floor(exact).astype(np.int64)
    start[np.argsort(start - exact)[: total - start.sum()]] += 1
    return start


def _check_scalar(theta, generator: str) -> None:
    if theta.type.ndim > 1:
        raise ValueError(
            f"the {generator} data model needs a scalar theta or one per unit (a Beta or Gamma prior, "
            "per unit or hierarchical)"
        )


def sample_model(model: PPDModel, y, z=None, *, sweeps: int = 5, conjugate: bool = True, **kwargs):
    r"""Sample the posterior of a :class:`ppdinfer.PPDModel` with PyMC and the mechanism-driven augmentation.

    Builds :func:`from_model` and runs :func:`ppdinfer.pymc.sample`: the data-augmentation step
    :class:`ppdinfer.pymc.PrivacyAugmentation` on x; with ``conjugate=True`` a Dirichlet prior on a
    multinomial x's cells is integrated out of x's update and drawn by :class:`ppdinfer.pymc.ConjugateDirichlet`; NUTS updates any other theta.
    ``kwargs`` go to ``pm.sample``.

    .. math::

        x \sim \pi(x \mid \theta, y, z) \ \text{(augmentation)}, \qquad
        \theta \sim \pi(\theta \mid x, z) \ \text{(NUTS or exact)}.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer.pymc import sample_model
    >>> model = pp.PPDModel(pp.priors.Dirichlet([1.0, 1.0, 1.0]), pp.generators.MultinomialTotal("total"),
    ...                     pp.mechanisms.Laplace(1.0), names="share", x_name="cases")
    >>> idata = sample_model(model, [12.4, 9.1, 8.3], {"total": 30}, draws=50, tune=50, chains=1,
    ...                      random_seed=1, progressbar=False, compute_convergence_checks=False)
    >>> draws = idata["posterior"]["cases"]
    >>> draws.shape, bool((draws.sum(axis=-1) == 30).all())
    ((1, 50, 3), True)
    """
    return sample(from_model(model, y, z), conjugate=conjugate, sweeps=sweeps, **kwargs)

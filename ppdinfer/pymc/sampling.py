"""``ppdinfer.pymc.sample``: pm.sample with the privacy-aware steps assigned automatically."""

from __future__ import annotations

import pymc as pm
from pytensor.tensor.random.basic import DirichletRV

from .augmentation import _KINDS, ConjugateDirichlet, PrivacyAugmentation, multinomial_child
from .distributions import DiscreteGaussianRV, DiscreteLaplaceRV, LatticeL2RV


def privacy_latents(model: pm.Model) -> list:
    """Free integer variables that an observed DiscreteLaplace/DiscreteGaussian release is centred on."""
    centres = {obs.owner.inputs[2] for obs in model.observed_RVs
               if isinstance(obs.owner.op, (DiscreteLaplaceRV, DiscreteGaussianRV, LatticeL2RV))}
    return [rv for rv in model.free_RVs if rv in centres and type(rv.owner.op) in _KINDS]


def conjugate_dirichlets(model: pm.Model) -> list:
    """Free Dirichlet variables that are the probabilities of exactly one free Multinomial."""
    return [rv for rv in model.free_RVs
            if isinstance(rv.owner.op, DirichletRV) and multinomial_child(model, rv) is not None]


def sample(model: pm.Model | None = None, *, conjugate: bool = True, sweeps: int = 5, **kwargs):
    """``pm.sample`` with the privacy-aware steps assigned; NUTS (PyMC's default) for the rest.

    Every latent x observed through privacy noise gets :class:`PrivacyAugmentation`. With
    ``conjugate=True`` a Dirichlet that feeds only a multinomial latent x is integrated out of
    x's update (``collapse=True``) and then drawn exactly by :class:`ConjugateDirichlet`.
    ``kwargs`` go to ``pm.sample``.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import ppdinfer.pymc
    >>> with pm.Model():
    ...     share = pm.Dirichlet("share", a=np.ones(3))
    ...     cases = pm.Multinomial("cases", n=30, p=share, initval=np.array([10, 10, 10]))
    ...     y = ppdinfer.pymc.DiscreteLaplace("y", mu=cases, epsilon=1.0, observed=[12, 9, 8])
    ...     idata = ppdinfer.pymc.sample(draws=100, tune=100, chains=1, random_seed=1, progressbar=False,
    ...                                  compute_convergence_checks=False)
    >>> draws = idata["posterior"]["cases"]
    >>> draws.shape, bool((draws.sum(axis=-1) == 30).all())   # every state keeps the public total
    ((1, 100, 3), True)
    """
    model = pm.modelcontext(model)
    with model:
        dirichlets = conjugate_dirichlets(model) if conjugate else []
        collapsible = {multinomial_child(model, rv) for rv in dirichlets}
        steps = [PrivacyAugmentation([rv], sweeps=sweeps, collapse=rv in collapsible) for rv in privacy_latents(model)]
        steps += [ConjugateDirichlet([rv]) for rv in dirichlets]
        user_steps = kwargs.pop("step", None) or []
        return pm.sample(step=steps + list(user_steps if isinstance(user_steps, list) else [user_steps]), **kwargs)

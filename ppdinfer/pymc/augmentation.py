"""A PyMC step for integer latent data observed through privacy noise.

``PrivacyAugmentation([x])`` updates a latent x that has a Multinomial, Binomial or Poisson
prior and is observed through a ``ppdinfer.pymc.DiscreteLaplace`` or ``DiscreteGaussian``
release y. It needs no gradient of the mechanism: it proposes from x's conditional prior
given theta (Ju, Awan, Gong & Rao 2022) and accepts with the likelihood ratio, alternating with
a local symmetric move. For a multinomial x the moves transfer counts between two cells, so
the public total holds at every state. theta is left to other steps (NUTS by default, or
:class:`ConjugateDirichlet`). When theta ~ Dirichlet(alpha) with constant alpha feeds only
the multinomial x, ``collapse=True`` integrates theta out of the x update (the moves target
p(x | y, z) under the Dirichlet-multinomial prior), and ConjugateDirichlet then draws
theta | x exactly: a blocked sampler that mixes even where y says little about x.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.basic import BinomialRV, DirichletRV, MultinomialRV, PoissonRV

from ..kernels.augmentation import (BINOMIAL, DIRICHLET_MULTINOMIAL, MULTINOMIAL, POISSON, _cell_log_weight, _log_prior,
                                    augmentation_sweeps)
from ..mechanisms.base import AdditiveNoiseMechanism
from .distributions import DiscreteGaussianRV, DiscreteLaplaceRV, LatticeL2RV
from .likelihood import MechanismLogLikelihood

_KINDS = {MultinomialRV: MULTINOMIAL, BinomialRV: BINOMIAL, PoissonRV: POISSON}


@dataclass_state
class PrivacyAugmentationState(StepMethodState):
    sweeps: int = field(metadata={"frozen": True})


def _constant(variable, what: str) -> np.ndarray:
    """The value of a graph input that must not depend on model variables."""
    try:
        return np.asarray(variable.eval(), dtype=float)
    except Exception as err:  # a free variable in the graph
        raise ValueError(f"{what} must be a constant for PrivacyAugmentation") from err


def _common_constant(variable, what: str) -> float:
    """A constant that must take one value across coordinates."""
    values = np.unique(_constant(variable, what))
    if values.size != 1:
        raise ValueError(f"{what} must be the same for every coordinate, got {values}")
    return float(values[0])


def _noise_of(model, x_rv):
    """(observed data variable, rate, power, norm, noise sd) of the privacy release centred on x."""
    for obs in model.observed_RVs:
        op = obs.owner.op
        if isinstance(op, (DiscreteLaplaceRV, DiscreteGaussianRV, LatticeL2RV)):
            _, _, mu, *params = obs.owner.inputs
            if mu is not x_rv:
                continue
            data = model.rvs_to_values[obs]
            if isinstance(op, DiscreteLaplaceRV):
                rate = _common_constant(params[0] / params[1], "epsilon / sensitivity")
                a = np.exp(-rate)
                return data, rate, 1, False, float(np.sqrt(2 * a) / (1 - a))
            if isinstance(op, LatticeL2RV):
                rate = _common_constant(params[0] / (2 * params[1]), "epsilon / (2 sigma)")
                # ||y - x||_2 ~ Gamma(n, rate): about sqrt(n) / rate per coordinate
                return data, rate, 2, True, float(np.sqrt(int(data.shape[-1].eval())) / rate)
            sigma = _common_constant(params[0], "sigma")
            return data, 1 / (2 * sigma**2), 2, False, sigma
    raise ValueError(f"no observed DiscreteLaplace, DiscreteGaussian or WassersteinNaive release has mu={x_rv.name}")


class PrivacyAugmentation(BlockedStep):
    r"""Metropolis-within-Gibbs update of an integer latent x released with privacy noise.

    A prior move proposes x' from x's conditional prior given theta (and the other
    coordinates, or the other cell of a pair for a multinomial x), so that the prior cancels
    from the Metropolis-Hastings ratio and only the mechanism's likelihood remains
    (Ju, Awan, Gong & Rao 2022):

    .. math::

        \alpha(x \to x') = \min\left(1, \frac{\pi(y \mid x', z)}{\pi(y \mid x, z)}\right).

    A local move proposes a symmetric integer step (a transfer between two cells for a
    multinomial x) and accepts with the prior ratio times the likelihood ratio.

    Parameters
    ----------
    vars : list
        One latent variable x (Multinomial, Binomial or Poisson), observed in the model as
        ``DiscreteLaplace("y", mu=x, ...)`` or ``DiscreteGaussian("y", mu=x, ...)``.
    sweeps : int
        Sweeps over x per step (each sweep makes one prior and one local move per coordinate);
        5 by default: a sweep costs microseconds, little next to PyMC's per-draw overhead.
    collapse : bool
        Integrate a conjugate Dirichlet out of the x update (multinomial x only); pair this
        step with a following :class:`ConjugateDirichlet` on the same theta.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from ppdinfer.pymc import DiscreteLaplace, PrivacyAugmentation
    >>> with pm.Model():
    ...     share = pm.Dirichlet("share", a=np.ones(3))
    ...     cases = pm.Multinomial("cases", n=30, p=share, initval=np.array([10, 10, 10]))
    ...     y = DiscreteLaplace("y", mu=cases, epsilon=1.0, observed=[12, 9, 8])
    ...     step = PrivacyAugmentation([cases], collapse=True)
    >>> [variable.name for variable in step.vars], step.alpha
    (['cases'], array([1., 1., 1.]))

    :func:`ppdinfer.pymc.sample` assigns the step by itself.
    """

    name = "privacy_augmentation"
    _state_class = PrivacyAugmentationState
    stats_dtypes_shapes = {
        "accept_prior": (np.float64, []),
        "accept_local": (np.float64, []),
    }

    def __init__(self, vars, *, sweeps: int = 5, collapse: bool = False, model=None, rng=None,
                 initial_point=None, compile_kwargs=None, blocked=True):
        model = pm.modelcontext(model)
        if len(vars) != 1:
            raise ValueError(f"{type(self).__name__} updates one latent variable at a time")
        value_var = model.rvs_to_values.get(vars[0], vars[0])
        x_rv = model.values_to_rvs[value_var]
        kind = _KINDS.get(type(x_rv.owner.op))
        if kind is None:
            raise ValueError(f"{x_rv.name} must have a Multinomial, Binomial or Poisson prior, "
                             f"not {type(x_rv.owner.op).__name__}")
        if not isinstance(sweeps, int) or sweeps < 1:
            raise ValueError(f"sweeps must be a positive integer, got {sweeps!r}")
        self.vars = [value_var]
        self.sweeps = sweeps
        self.kind = kind
        self._set_likelihood(model, x_rv)
        _, _, *params = x_rv.owner.inputs
        self.alpha = None
        if collapse:
            theta_rv = params[-1]
            if kind != MULTINOMIAL or theta_rv.owner is None or not isinstance(theta_rv.owner.op, DirichletRV) \
                    or multinomial_child(model, theta_rv) is not x_rv:
                raise ValueError(f"collapse=True needs {x_rv.name} ~ Multinomial(n, theta) with theta ~ Dirichlet "
                                 "entering no other part of the model")
            self.alpha = _constant(theta_rv.owner.inputs[-1], "the Dirichlet concentration")
            self.kind = DIRICHLET_MULTINOMIAL
        graphs = model.replace_rvs_by_values(params)
        self._params = model.compile_fn(graphs, inputs=model.value_vars, on_unused_input="ignore",
                                        **(compile_kwargs or {}))
        self._fixed_total = None
        if self.kind == DIRICHLET_MULTINOMIAL:
            try:
                self._fixed_total = _common_constant(params[0], "the multinomial total")
            except ValueError:
                pass  # a total that depends on model variables is read from each point
        self.rng = np.random.default_rng(rng)

    def _set_likelihood(self, model, x_rv) -> None:
        """The release's likelihood as the kernel reads it: ``_y`` (a function giving y), ``rate``,
        ``power``, ``norm`` and ``noise_sd``. Subclasses with another source of the likelihood
        override this alone."""
        y_data, self.rate, self.power, self.norm, self.noise_sd = _noise_of(model, x_rv)
        # read y at every step: pm.set_data may change it between runs of one model
        self._y = pytensor.function([], pt.cast(y_data, "float64"))

    def _prior_parameters(self, point, shape):
        """(n, p, prior sd) of x's prior per coordinate; p is alpha when theta is integrated out."""
        if self.kind == DIRICHLET_MULTINOMIAL:
            n = self._fixed_total if self._fixed_total is not None else self._params(point)[0]
            # the Dirichlet-multinomial prior is far wider than the noise: the noise sets the step size
            return np.broadcast_to(n, shape), self.alpha, np.full(shape, np.inf)
        values = [np.broadcast_to(np.asarray(v, dtype=float), shape) for v in self._params(point)]
        if self.kind == POISSON:
            (mean,) = values
            return np.zeros(shape), mean, np.sqrt(mean)
        n, p = values
        return n, p, np.sqrt(n * p * (1 - p))

    def step(self, point):
        name = self.vars[0].name
        x = np.array(point[name], dtype=np.int64, copy=True)
        y = self._y()
        if x.shape != y.shape:
            raise ValueError(f"{name} has shape {x.shape} but its release y has shape {y.shape}")
        n, p, prior_sd = self._prior_parameters(point, x.shape)
        n = np.ascontiguousarray(n, dtype=np.int64).reshape(-1)
        if self.kind in (MULTINOMIAL, DIRICHLET_MULTINOMIAL) and (x.sum() != n[0] or np.any(x < 0)):
            raise ValueError(f"{name} = {x} does not satisfy its total {n[0]}: "
                             "start from a value inside the set the public total allows")
        p = np.ascontiguousarray(np.broadcast_to(p, x.shape), dtype=float).reshape(-1)
        scale = np.maximum(np.minimum(prior_sd, self.noise_sd), 1.0).reshape(-1)
        flat = x.reshape(-1)
        rates = augmentation_sweeps(self.kind, flat, y.reshape(-1), n, p, self.rate, self.power, self.norm, scale,
                                    self.sweeps, int(self.rng.integers(2**31)))
        new_point = dict(point)
        new_point[name] = flat.reshape(x.shape)
        return new_point, [{"accept_prior": float(rates[0]), "accept_local": float(rates[1])}]

    @staticmethod
    def competence(var):
        return Competence.INCOMPATIBLE  # assigned explicitly, never chosen automatically


def multinomial_child(model, theta_rv):
    """The one free Multinomial with probabilities theta, if nothing else in the model depends on theta."""
    others = set(model.basic_RVs)
    dependents = [rv for rv in model.basic_RVs
                  if rv is not theta_rv and theta_rv in ancestors([rv], blockers=others - {rv})]
    if len(dependents) == 1 and isinstance(dependents[0].owner.op, MultinomialRV) \
            and dependents[0].owner.inputs[-1] is theta_rv and dependents[0] in model.free_RVs:
        return dependents[0]
    return None


@dataclass_state
class ConjugateDirichletState(StepMethodState):
    pass


class ConjugateDirichlet(BlockedStep):
    r"""Exact Gibbs update theta | x ~ Dirichlet(alpha + x) for theta ~ Dirichlet(alpha), x ~ Multinomial(n, theta).

    alpha must be a constant and theta's only child the multinomial x. The draw is
    theta = G / sum_j G_j with independent G_j ~ Gamma(alpha_j + x_j):

    .. math::

        \pi(\theta \mid x) \propto \prod_j \theta_j^{\alpha_j + x_j - 1}.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from ppdinfer.pymc import ConjugateDirichlet, DiscreteLaplace
    >>> with pm.Model():
    ...     share = pm.Dirichlet("share", a=np.array([2.0, 1.0, 1.0]))
    ...     cases = pm.Multinomial("cases", n=30, p=share)
    ...     y = DiscreteLaplace("y", mu=cases, epsilon=1.0, observed=[12, 9, 8])
    ...     step = ConjugateDirichlet([share])
    >>> step.alpha, step.x_name
    (array([2., 1., 1.]), 'cases')
    """

    name = "conjugate_dirichlet"
    _state_class = ConjugateDirichletState
    stats_dtypes_shapes = {}

    def __init__(self, vars, *, model=None, rng=None, initial_point=None, compile_kwargs=None, blocked=True):
        model = pm.modelcontext(model)
        if len(vars) != 1:
            raise ValueError("ConjugateDirichlet updates one Dirichlet variable")
        value_var = model.rvs_to_values.get(vars[0], vars[0])
        theta_rv = model.values_to_rvs[value_var]
        if not isinstance(theta_rv.owner.op, DirichletRV):
            raise ValueError(f"{theta_rv.name} must have a Dirichlet prior")
        self.alpha = _constant(theta_rv.owner.inputs[-1], "the Dirichlet concentration")
        child = multinomial_child(model, theta_rv)
        if child is None:
            raise ValueError(f"{theta_rv.name} must be the probability vector of exactly one latent Multinomial "
                             "and enter no other part of the model")
        self.x_name = model.rvs_to_values[child].name
        self.vars = [value_var]
        transform = model.rvs_to_transforms.get(theta_rv)
        theta = pt.dvector("theta")
        forward = transform.forward(theta) if transform is not None else theta
        self._forward = pytensor.function([theta], forward)
        self.rng = np.random.default_rng(rng)

    def step(self, point):
        x = np.asarray(point[self.x_name], dtype=float)
        gammas = self.rng.gamma(self.alpha + x)
        theta = gammas / gammas.sum()
        new_point = dict(point)
        new_point[self.vars[0].name] = np.asarray(self._forward(theta))
        return new_point, [{}]  # one (empty) stats dict per step, as PyMC expects

    @staticmethod
    def competence(var):
        return Competence.INCOMPATIBLE


def _release_of(model: pm.Model, x_rv) -> MechanismLogLikelihood:
    """The release Op in ``model.potentials`` applied to x."""
    for potential in model.potentials:
        owner = potential.owner
        if owner is not None and isinstance(owner.op, MechanismLogLikelihood) and owner.inputs[0] is x_rv:
            return owner.op
    raise ValueError(f"no MechanismLogLikelihood potential of {x_rv.name}: build the model with from_model")


class MechanismAugmentation(PrivacyAugmentation):
    r"""Data augmentation for an integer x whose release enters through ``mechanism.logpdf``.

    The moves are those of :class:`ppdinfer.pymc.PrivacyAugmentation`: a prior move (x' from
    x's conditional prior given theta, or a pair's given their sum for a multinomial x) and a
    symmetric local move, each accepted with the Metropolis-Hastings ratio

    .. math::

        \alpha(x \to x') = \min\left(1, \frac{\pi(x' \mid \theta)\, \pi(y \mid x', z)\, q(x \mid x')}
                                               {\pi(x \mid \theta)\, \pi(y \mid x, z)\, q(x' \mid x)}\right).

    An additive mechanism (Laplace, discrete Laplace, Gaussian, discrete Gaussian; a real y
    too) runs in the compiled kernel of :class:`ppdinfer.pymc.PrivacyAugmentation`; any other
    mechanism runs the same moves in Python, each with one call of its ``logpdf`` on the
    current and proposed x (so about 4 d calls per sweep over d coordinates).

    Parameters
    ----------
    vars : list
        One latent x (Binomial, Poisson or Multinomial) of a model made by :func:`from_model`.
    sweeps : int
        Sweeps over x per step.
    collapse : bool
        Integrate a constant-alpha Dirichlet out of a multinomial x's update (pair it with
        :class:`ppdinfer.pymc.ConjugateDirichlet`).

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer.pymc import MechanismAugmentation, from_model
    >>> model = pp.PPDModel(pp.priors.Beta(2, 3), pp.generators.Binomial(30), pp.mechanisms.Tulap(1.0), names="p")
    >>> with from_model(model, 13.3) as twin:
    ...     step = MechanismAugmentation([twin["x"]])
    >>> step.additive
    False
    """

    name = "mechanism_augmentation"

    def _set_likelihood(self, model, x_rv) -> None:
        self.release = _release_of(model, x_rv)
        mechanism = self.release.mechanism
        self.additive = isinstance(mechanism, AdditiveNoiseMechanism)
        # the compiled kernel's separable likelihood -rate * sum |y - x| ** power
        self.rate, self.power = (mechanism.rate, mechanism.power) if self.additive else (0.0, 1)
        self.norm = False
        self.noise_sd = _noise_sd(mechanism) if self.additive else 1.0
        y = np.asarray(self.release.y, dtype=float)
        self._y = lambda: y

    def step(self, point):
        if self.additive:
            return super().step(point)
        name = self.vars[0].name
        x = np.array(point[name], dtype=np.int64, copy=True).reshape(-1)
        n, p, prior_sd = self._prior_parameters(point, x.shape)
        n = np.asarray(n, dtype=np.int64).reshape(-1)
        p = np.ascontiguousarray(np.broadcast_to(p, x.shape), dtype=float)
        scale = np.maximum(np.minimum(prior_sd, self.noise_sd), 1.0).reshape(-1)
        moves = _GenericMoves(self.release, x, np.shape(point[name]), self.rng)
        for _ in range(self.sweeps):
            if self.kind in (MULTINOMIAL, DIRICHLET_MULTINOMIAL):
                moves.pair_sweep(self.kind == DIRICHLET_MULTINOMIAL, p, scale)
            else:
                moves.site_sweep(self.kind, n, p, scale)
        new_point = dict(point)
        new_point[name] = moves.x.reshape(np.shape(point[name]))
        rates = moves.accepted / (self.sweeps * x.size)
        return new_point, [{"accept_prior": float(rates[0]), "accept_local": float(rates[1])}]


def _noise_sd(mechanism: AdditiveNoiseMechanism) -> float:
    """The noise standard deviation (about), which sets the local move's step size."""
    if mechanism.power == 1:
        return float(np.sqrt(2.0) / mechanism.rate)
    return float(np.sqrt(0.5 / mechanism.rate))


class _GenericMoves:
    """The prior and local moves of the augmentation kernel, with the log likelihood from an Op."""

    def __init__(self, release: MechanismLogLikelihood, x: np.ndarray, shape, rng: np.random.Generator):
        self.release, self.x, self.shape, self.rng = release, x, shape, rng
        self.current = float(release.loglik(x.reshape(1, *shape))[0])
        self.accepted = np.zeros(2)

    def _try(self, changes: dict[int, int], log_ratio: float, move: int) -> None:
        """Accept x with ``changes`` applied w.p. min(1, exp(log_ratio + likelihood change))."""
        proposal = self.x.copy()
        for index, value in changes.items():
            proposal[index] = value
        proposed = float(self.release.loglik(proposal.reshape(1, *self.shape))[0])
        change = proposed - self.current if proposed > -np.inf else -np.inf  # never into zero density
        if np.log(self.rng.random()) <= log_ratio + change:
            self.x, self.current = proposal, proposed
            self.accepted[move] += 1

    def _step(self, scale: float) -> int:
        step = int(round(self.rng.normal() * scale))
        return step if step != 0 else int(self.rng.choice((-1, 1)))

    def site_sweep(self, kind, n, p, scale):
        for k in range(self.x.size):
            nk = n[k]
            draw = self.rng.binomial(nk, p[k]) if kind == BINOMIAL else self.rng.poisson(p[k])
            self._try({k: draw}, 0.0, 0)
            candidate = self.x[k] + self._step(scale[k])
            prior_ratio = _log_prior(kind, candidate, nk, p[k]) - _log_prior(kind, self.x[k], nk, p[k])
            if prior_ratio > -np.inf:
                self._try({k: candidate}, prior_ratio, 1)

    def pair_sweep(self, collapsed, p, scale):
        dim = self.x.size
        for _ in range(dim):
            i, j = self.rng.choice(dim, size=2, replace=False)
            total = self.x[i] + self.x[j]
            if total > 0:
                share = self.rng.beta(p[i], p[j]) if collapsed else p[i] / (p[i] + p[j])
                xi = self.rng.binomial(total, share)
                self._try({i: xi, j: total - xi}, 0.0, 0)
            step = self._step(0.5 * (scale[i] + scale[j]))
            xi, xj = self.x[i] + step, self.x[j] - step
            if xi >= 0 and xj >= 0:
                weight = (_cell_log_weight(collapsed, xi, p[i]) + _cell_log_weight(collapsed, xj, p[j])
                          - _cell_log_weight(collapsed, self.x[i], p[i]) - _cell_log_weight(collapsed, self.x[j], p[j]))
                self._try({i: xi, j: xj}, weight, 1)

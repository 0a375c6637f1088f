r"""A PyMC model and sampler for any :class:`ppdinfer.PPDModel`, whatever its mechanism.

:func:`from_model` translates the prior and the data model into PyMC variables and enters
the release through a potential that calls the mechanism's own ``logpdf``:

.. math::

    \log \pi(\theta, x \mid y, z) = \log \pi(\theta \mid z) + \log \pi(x \mid \theta, z)
    + \log \pi(y \mid x, z) + \text{const}.

:class:`MechanismAugmentation` updates the integer x by data augmentation driven by that
log density, so any mechanism works, the continuous Laplace and Gaussian noise on an
integer count included (PyMC's generic Metropolis has no such step and can be biased there).
:func:`sample_model` assigns the steps: the augmentation step on x; for a Dirichlet prior on
the cells of a multinomial x, theta is integrated out of the x update and drawn exactly by
:class:`ppdinfer.pymc.ConjugateDirichlet`; NUTS otherwise.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from .. import generators, priors
from ..inference.model import PPDModel
from ..kernels.augmentation import BINOMIAL, DIRICHLET_MULTINOMIAL, MULTINOMIAL, _cell_log_weight, _log_prior
from ..mechanisms.base import AdditiveNoiseMechanism
from .augmentation import ConjugateDirichlet, PrivacyAugmentation
from .sampling import conjugate_dirichlets

class MechanismLogLikelihood(Op):
    r"""The PyTensor Op ``x -> log pi(y | x, z)`` of a fixed release y, from ``mechanism.logpdf``.

    .. math::

        \ell(x) = \texttt{mechanism.logpdf}(y, x, z).

    x is an integer variable, so the Op has no gradient with respect to it (NUTS never
    differentiates through it: it updates theta only).

    Examples
    --------
    >>> import numpy as np
    >>> import pytensor.tensor as pt
    >>> from ppdinfer.mechanisms import Laplace
    >>> from ppdinfer.pymc import MechanismLogLikelihood
    >>> x = pt.lvector("x")
    >>> loglik = MechanismLogLikelihood(Laplace(2.0), np.array([1.5, 3.0]))(x)
    >>> round(float(loglik.eval({x: np.array([1, 3])})), 4)      # 2 log(1) - 2 (0.5 + 0)
    -1.0
    """

    def __init__(self, mechanism, y, z=None):
        self.mechanism = mechanism
        self.y = np.asarray(y)
        self.z = z

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [pt.dscalar()])

    def perform(self, node, inputs, outputs):
        (x,) = inputs
        outputs[0][0] = np.asarray(self.loglik(np.asarray(x)[None])[0], dtype=np.float64)

    def loglik(self, x_batch: np.ndarray) -> np.ndarray:
        """log pi(y | x, z) for a batch of x of shape ``(B, *y.shape)``."""
        return np.asarray(self.mechanism.logpdf(self.y, x_batch, self.z), dtype=float)

    def grad(self, inputs, output_grads):
        return [inputs[0].zeros_like(dtype=pytensor.config.floatX)]


def from_model(model: PPDModel, y, z=None) -> pm.Model:
    r"""The posterior of a :class:`ppdinfer.PPDModel` as a ``pymc.Model``.

    theta gets the prior's PyMC counterpart, x the data model's, and the release enters as
    the potential ``"release"``, the mechanism's log density at the observed y:

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
    >>> [v.name for v in twin.free_RVs], [v.name for v in twin.potentials]
    (['p', 'x'], ['release'])
    """
    if not isinstance(model, PPDModel):
        raise ValueError(f"model must be a ppdinfer.PPDModel, got {type(model).__name__}")
    y, z, theta_shape, x_shape = model.prepare(y, z)
    theta_name, x_name = theta_variable(model), model.x_name
    coords = {dim: np.arange(size) for name, dims in model.dims.items()
              for dim, size in zip(dims, x_shape if name == x_name else theta_shape, strict=True)}
    with pm.Model(coords=coords) as twin:
        theta = _prior_variable(model.prior, theta_name, z, model.dims.get(theta_name))
        if len(model.names) > 1:  # named components of a vector theta, as the exact samplers report them
            for index, name in enumerate(model.names):
                pm.Deterministic(name, theta[index])
        x = _data_variable(model.simulate, x_name, theta, y, z, x_shape, model.dims.get(x_name))
        pm.Potential("release", MechanismLogLikelihood(model.mechanism, y, z)(x))
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
    raise ValueError(f"names {model.names} and x_name {model.x_name!r} take both 'theta' and 'theta_vector', "
                     "the names from_model gives the vector of theta's components; rename one")


def _prior_variable(prior, name, z, dims):
    if isinstance(prior, priors.Beta):
        return pm.Beta(name, alpha=prior.alpha, beta=prior.beta)
    if isinstance(prior, priors.Gamma):
        return pm.Gamma(name, alpha=prior.shape, beta=prior.rate)
    if isinstance(prior, priors.Dirichlet):
        return pm.Dirichlet(name, a=prior.concentration_vector(z), dims=dims)
    raise ValueError(f"from_model supports the priors Beta, Gamma and Dirichlet, not {type(prior).__name__}")


def _data_variable(simulate, name, theta, y, z, shape, dims):
    start = np.clip(np.round(np.asarray(y, dtype=float)), 0, None).astype(np.int64)
    size = {"dims": dims} if dims else {"shape": shape}
    if isinstance(simulate, generators.Binomial):
        _check_scalar(theta, "Binomial")
        return pm.Binomial(name, n=simulate.n, p=theta, initval=np.minimum(start, simulate.n), **size)
    if isinstance(simulate, generators.Poisson):
        _check_scalar(theta, "Poisson")
        return pm.Poisson(name, mu=theta * simulate.exposure, initval=start, **size)
    if isinstance(simulate, generators.MultinomialTotal):
        total = simulate.total(z)
        return pm.Multinomial(name, n=total, p=theta, dims=dims, initval=feasible_total_start(y, total))
    raise ValueError("from_model supports the data models Binomial, Poisson and MultinomialTotal, "
                     f"not {getattr(simulate, '__name__', type(simulate).__name__)}")


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
    if theta.type.ndim != 0:
        raise ValueError(f"the {generator} data model needs a scalar theta (a Beta or Gamma prior)")


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


def sample_model(model: PPDModel, y, z=None, *, sweeps: int = 5, conjugate: bool = True, **kwargs):
    r"""Sample the posterior of a :class:`ppdinfer.PPDModel` with PyMC and the mechanism-driven augmentation.

    Builds :func:`from_model` and runs ``pm.sample`` with :class:`MechanismAugmentation` on x;
    with ``conjugate=True`` a Dirichlet prior on a multinomial x's cells is integrated out of x's
    update and drawn by :class:`ppdinfer.pymc.ConjugateDirichlet`; NUTS updates any other theta.
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
    twin = from_model(model, y, z)
    with twin:
        x_rv = twin[model.x_name]
        theta_rv = twin[theta_variable(model)]
        collapse = conjugate and theta_rv in conjugate_dirichlets(twin)  # theta feeds only the multinomial x
        steps = [MechanismAugmentation([x_rv], sweeps=sweeps, collapse=collapse)]
        if collapse:
            steps.append(ConjugateDirichlet([theta_rv]))
        with warnings.catch_warnings():
            # the release's log-likelihood is the mechanism's Python logpdf by design: PyTensor's
            # numba backend says it calls it in object mode, which is expected here
            warnings.filterwarnings("ignore", message="Numba will use object mode to run MechanismLogLikelihood")
            return pm.sample(step=steps, **kwargs)


r"""The prior families of an integer latent x in the data-augmentation step, one record each.

:class:`~ppdinfer.pymc.PrivacyAugmentation` updates a latent x whose prior is one of the
families of :data:`FAMILIES`; :func:`ppdinfer.pymc.sample` assigns the steps by going through
the same table. A family (:class:`PriorFamily`) says, in one place:

- how it is found in a PyMC graph (``latent``, the class of x's random variable, and ``detect``,
  which finds a conjugate prior to integrate out and the graphs of the parameters read at each
  step);
- how those parameters are packed for the compiled kernel: one row per coordinate of x, the
  columns named by ``columns`` (``pack``), with the prior's standard deviation that sizes the
  local moves;
- its log prior in the kernel (``code``, the integer the kernel's
  ``ppdinfer.kernels.augmentation`` dispatches on);
- its conjugate step (``step``, a :class:`ConjugateStep`), which draws the integrated-out
  variable exactly given x, where it has one.

The collapsed families integrate a conjugate prior out of x's update, so that x moves under its
marginal prior and the conjugate variable is drawn afterwards:

.. math::

    \theta \sim \mathrm{Dirichlet}(\alpha),\ x \sim \mathrm{Multinomial}(n, \theta)
    &\Rightarrow x \sim \mathrm{DirichletMultinomial}(n, \alpha),\
    \theta \mid x \sim \mathrm{Dirichlet}(\alpha + x),\\
    \lambda_k \sim \mathrm{Gamma}(r_k, b_k),\ x_k \sim \mathrm{Poisson}(e_k \lambda_k)
    &\Rightarrow x_k \sim \mathrm{NegBin}(r_k, e_k / (b_k + e_k)),\
    \lambda_k \mid x_k \sim \mathrm{Gamma}(r_k + x_k, b_k + e_k),\\
    p_k \sim \mathrm{Beta}(a_k, b_k),\ x_k \sim \mathrm{Binomial}(n_k, p_k)
    &\Rightarrow x_k \sim \mathrm{BetaBinomial}(n_k, a_k, b_k),\
    p_k \mid x_k \sim \mathrm{Beta}(a_k + x_k, b_k + n_k - x_k).

A new family is one record here, its log prior and prior draw in the kernel, and its tests
(``tests/test_pymc_families.py`` fails until every family has a tiny model whose ``sample`` gets
the family's steps).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.distributions.discrete import DiscreteUniformRV
from pymc.logprob.transforms import LogOddsTransform, LogTransform
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.basic import BetaRV, BinomialRV, DirichletRV, GammaRV, MultinomialRV, PoissonRV
from scipy import special

from ..kernels.augmentation import (
    BETA_BINOMIAL,
    BINOMIAL,
    COLUMNS,
    DIRICHLET_MULTINOMIAL,
    GAMMA_POISSON,
    MULTINOMIAL,
    POISSON,
    TABLE,
    UNIFORM,
    pair_family,
)
from ._constants import NotConstantError, constant_shape, graph_constant
from .tabulated import POTENTIAL_OPS, TABULATED_OPS, tabulated_prior

__all__ = [
    "FAMILIES",
    "LATENT_OPS",
    "ConjugateBeta",
    "ConjugateDirichlet",
    "ConjugateGamma",
    "ConjugateStep",
    "FamilyMatch",
    "PriorFamily",
    "beta_binomial_rate",
    "dependents",
    "family_named",
    "gamma_poisson_rate",
    "latent_family",
    "multinomial_child",
]


def dependents(model: pm.Model, rv) -> list:
    """The model's random variables and potentials whose log density reads ``rv`` directly (through
    deterministic expressions, not through another random variable).

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.mechanisms import Tulap
    >>> from ppdinfer.pymc import Release
    >>> from ppdinfer.pymc.families import dependents
    >>> with pm.Model() as model:
    ...     rate = pm.Gamma("rate", 2.0, 1.0)
    ...     x = pm.Poisson("x", rate, shape=2)
    ...     y = Release("y", Tulap(1.0), x + 1, observed=[3.2, 1.5])
    >>> [term.name for term in dependents(model, rate)], [term.name for term in dependents(model, x)]
    (['x'], ['y'])
    """
    others = set(model.basic_RVs)
    return [
        term
        for term in (*model.basic_RVs, *model.potentials)
        if term is not rv and rv in ancestors([term], blockers=others - {term})
    ]


def multinomial_child(model, theta_rv):
    """The one free Multinomial with probabilities theta, if nothing else in the model depends on theta.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from ppdinfer.pymc.families import multinomial_child
    >>> with pm.Model() as model:
    ...     share = pm.Dirichlet("share", a=np.ones(3))
    ...     cases = pm.Multinomial("cases", n=30, p=share)
    >>> multinomial_child(model, share).name
    'cases'
    """
    children = dependents(model, theta_rv)
    if (
        len(children) == 1
        and isinstance(children[0].owner.op, MultinomialRV)
        and children[0].owner.inputs[-1] is theta_rv
        and children[0] in model.free_RVs
    ):
        return children[0]
    return None


def rv_shape(rv) -> tuple[int, ...]:
    """``rv``'s shape, inferred from its parameters (``constant_shape``)."""
    return constant_shape(rv, f"the shape of {rv.name}")


def _conjugate_parent(model, x_rv, graph, op):
    """The one free variable of prior ``op`` in ``graph`` (x's parameter), read by x alone, with x's dimensions."""
    found = [
        rv
        for rv in ancestors([graph], blockers=set(model.basic_RVs))
        if rv in model.free_RVs and isinstance(rv.owner.op, op)
    ]
    if len(found) != 1 or dependents(model, found[0]) != [x_rv] or found[0].type.ndim != x_rv.type.ndim:
        return None
    return found[0]


def _graph_at(model, graph, rv, value, shape) -> np.ndarray:
    """``graph`` with ``rv`` replaced by the constant ``value``, broadcast to ``shape``; a
    ``NotConstantError`` where it still depends on a model variable."""
    replaced = graph_replace(graph, {rv: pt.as_tensor_variable(value)}, strict=False)
    return np.broadcast_to(graph_constant(replaced, f"{rv.name}'s parameter graph"), shape)


def gamma_poisson_rate(model, x_rv):
    """(rate, exposure) when x ~ Poisson(rate * exposure) with rate ~ Gamma of x's shape (one rate per
    coordinate) entering no other part of the model and exposure constant; else None.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from ppdinfer.pymc.families import gamma_poisson_rate
    >>> with pm.Model() as model:
    ...     a = pm.Gamma("a", 2.0, 1.0)
    ...     rate = pm.Gamma("rate", alpha=a, beta=a / 2.0, shape=3)
    ...     x = pm.Poisson("x", rate * np.array([10.0, 20.0, 40.0]))
    >>> found, exposure = gamma_poisson_rate(model, x)
    >>> found.name, exposure.tolist()
    ('rate', [10.0, 20.0, 40.0])
    """
    if not isinstance(x_rv.owner.op, PoissonRV):
        return None
    mu = x_rv.owner.inputs[-1]
    rate = _conjugate_parent(model, x_rv, mu, GammaRV)
    if rate is None:
        return None
    try:
        shape = rv_shape(x_rv)
        exposure = _graph_at(model, mu, rate, np.ones(shape), shape)
        trial = np.random.default_rng(0).uniform(0.5, 2.0, shape)
        linear = np.allclose(_graph_at(model, mu, rate, trial, shape), trial * exposure, rtol=1e-12)
    except ValueError:  # a shape or an exposure that depends on the model's point
        return None
    if not linear or np.any(exposure <= 0):
        return None
    return rate, exposure.copy()


def beta_binomial_rate(model, x_rv):
    """The Beta variable p when x ~ Binomial(n, p) with p ~ Beta of x's shape (one probability per
    coordinate) and p entering no other part of the model; else None.

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.pymc.families import beta_binomial_rate
    >>> with pm.Model() as model:
    ...     p = pm.Beta("p", 2.0, 3.0, shape=2)
    ...     x = pm.Binomial("x", n=[10, 20], p=p)
    ...     shared = pm.Beta("shared", 1.0, 1.0)
    ...     w = pm.Binomial("w", n=[10, 20], p=shared)   # one p for two coordinates: not collapsible
    >>> beta_binomial_rate(model, x).name, beta_binomial_rate(model, w)
    ('p', None)
    """
    if not isinstance(x_rv.owner.op, BinomialRV):
        return None
    prob = x_rv.owner.inputs[-1]
    p = _conjugate_parent(model, x_rv, prob, BetaRV)
    if p is None:
        return None
    try:
        shape = rv_shape(x_rv)
        if rv_shape(p) != shape:
            return None
        trial = np.random.default_rng(0).uniform(0.1, 0.9, shape)
        identity = np.array_equal(_graph_at(model, prob, p, trial, shape), trial)
    except ValueError:  # a shape or a probability that depends on the model's point
        return None
    return p if identity else None


@dataclass(frozen=True)
class FamilyMatch:
    """A latent x of a family, found in a model: what :class:`~ppdinfer.pymc.PrivacyAugmentation` and the
    family's conjugate step read.

    ``conjugate`` is the variable integrated out of x's update (None for a plain family),
    ``parameters`` the graphs read at each step (in the order the family's ``pack`` takes their values),
    ``constants`` the values fixed once (a Dirichlet's concentration, a Poisson's exposure).

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.pymc.families import family_named
    >>> with pm.Model() as model:
    ...     x = pm.Poisson("x", 4.0)
    >>> found = family_named("poisson").match(model, x)
    >>> found.family.name, found.conjugate, len(found.parameters)
    ('poisson', None, 1)
    """

    family: PriorFamily
    x: Any
    conjugate: Any
    parameters: tuple
    constants: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PriorFamily:
    """One prior family of an integer latent x: its detection, its packed parameters, its kernel code and its
    conjugate step.

    Parameters
    ----------
    name : str
        The family's name (``"beta_binomial"``).
    code : int
        The kernel's code of its log prior and prior draw (``ppdinfer.kernels.augmentation``).
    latent : type or tuple of types
        The class of x's random variable (``PoissonRV``, ``BinomialRV``, ``MultinomialRV``).
    columns : tuple of str
        The names of the packed parameters' columns, as the kernel reads them (``COLUMNS[code]``).
    detect : callable
        ``detect(model, x)`` -> ``(conjugate, parameter graphs, constants)`` or None where x (already of
        ``latent``'s class) is not of this family.
    pack : callable or None
        ``pack(values, constants, shape)`` -> ``({column: values}, prior sd)``: the parameters' current values
        (floats, in ``detect``'s order) as named columns broadcastable to x's shape, and the prior's standard
        deviation per coordinate (it sizes the local moves; inf where the release should). None for the tabulated
        family, whose rows :class:`~ppdinfer.pymc.tabulated.WindowTable` packs.
    step : type, optional
        The :class:`ConjugateStep` drawing the integrated-out variable given x (None: a plain family).
    requirement : str
        What a collapse into this family needs, for error messages.

    Examples
    --------
    >>> from ppdinfer.pymc.families import FAMILIES
    >>> [(family.name, family.columns) for family in FAMILIES if family.step is not None]
    [('dirichlet_multinomial', ('total', 'alpha')), ('gamma_poisson', ('shape', 'ratio')), ('beta_binomial', ('trials', 'a', 'b'))]
    """

    name: str
    code: int
    latent: type | tuple
    columns: tuple[str, ...]
    detect: Callable
    pack: Callable | None
    step: type | None = None
    requirement: str = ""

    def __post_init__(self):
        if COLUMNS.get(self.code) != tuple(self.columns):
            raise ValueError(
                f"columns {self.columns!r} of family {self.name!r} are not the kernel's for code {self.code}: "
                f"{COLUMNS.get(self.code)!r}"
            )

    @property
    def pairs(self) -> bool:
        """Whether the moves transfer counts within rows (a multinomial's public total), not single coordinates."""
        return bool(pair_family(self.code))

    @property
    def collapsed(self) -> bool:
        """Whether a conjugate prior is integrated out of x's update (and drawn by ``step``)."""
        return self.step is not None

    def match(self, model, x_rv) -> FamilyMatch | None:
        """x as a latent of this family in ``model``, or None."""
        if x_rv.owner is None or not isinstance(x_rv.owner.op, self.latent):
            return None
        found = self.detect(model, x_rv)
        if found is None:
            return None
        conjugate, parameters, constants = found
        return FamilyMatch(self, x_rv, conjugate, tuple(parameters), dict(constants))

    def packed(self, values, constants, shape) -> tuple[np.ndarray, np.ndarray]:
        """(params, prior sd): the parameters as an array of shape ``shape + (len(columns),)``, the last axis
        the named columns, and the prior's standard deviation of shape ``shape``."""
        named, prior_sd = self.pack([np.asarray(v, dtype=float) for v in values], constants, shape)
        params = np.stack([np.broadcast_to(np.asarray(named[c], dtype=float), shape) for c in self.columns], axis=-1)
        return params, np.broadcast_to(prior_sd, shape)


# -- the conjugate steps ---------------------------------------------------------------------------------


def _numpy_forward(transform):
    """The forward map of PyMC's log and log-odds transforms (or none) in NumPy, else None: a PyTensor function call
    costs 15-30 us a step, the NumPy map 1-2 us (issue 34, part 2)."""
    if transform is None:
        return np.asarray
    if isinstance(transform, LogTransform):
        return np.log
    if isinstance(transform, LogOddsTransform):
        return special.logit
    return None


@dataclass_state
class ConjugateStepState(StepMethodState):
    pass


class ConjugateStep(BlockedStep):
    r"""Exact Gibbs draw of a conjugate prior's variable given the latent x it was integrated out of.

    A subclass names its family (``family``, a name in :data:`FAMILIES`) and implements ``draw(x, values)``,
    the new value given x and the family's parameters at the current point; the base class finds x (the
    variable's one child, which must be of that family with this variable as its conjugate), compiles the
    parameters' graphs (they may depend on hyperparameters) and writes the draw back on the variable's
    transformed scale. Paired with :class:`~ppdinfer.pymc.PrivacyAugmentation` on x with ``collapse=True``,
    (x, the variable) are drawn jointly given the hyperparameters.

    Examples
    --------
    >>> from ppdinfer.pymc.families import ConjugateStep, FAMILIES
    >>> sorted(family.step.__name__ for family in FAMILIES if family.step is not None)
    ['ConjugateBeta', 'ConjugateDirichlet', 'ConjugateGamma']
    >>> all(issubclass(family.step, ConjugateStep) for family in FAMILIES if family.step is not None)
    True
    """

    #: the family (a name in FAMILIES) whose conjugate variable this step draws
    family: ClassVar[str] = ""
    #: the variable's prior, for error messages
    prior: ClassVar[str] = ""
    name = "conjugate"
    _state_class = ConjugateStepState
    stats_dtypes_shapes = {}

    def __init__(self, vars, *, model=None, rng=None, initial_point=None, compile_kwargs=None, blocked=True):
        model = pm.modelcontext(model)
        if len(vars) != 1:
            raise ValueError(f"{type(self).__name__} updates one {self.prior} variable, got {len(vars)}")
        value_var = model.rvs_to_values.get(vars[0], vars[0])
        rv = model.values_to_rvs[value_var]
        family = family_named(self.family)
        children = dependents(model, rv)
        found = family.match(model, children[0]) if len(children) == 1 else None
        if found is None or found.conjugate is not rv:
            raise ValueError(f"{rv.name} must be {family.requirement}")
        self.x_name = model.rvs_to_values[found.x].name
        self.constants = found.constants
        self.vars = [value_var]
        graphs = model.replace_rvs_by_values(list(found.parameters))
        self._params = model.compile_fn(
            graphs, inputs=model.value_vars, on_unused_input="ignore", **(compile_kwargs or {})
        )
        transform = model.rvs_to_transforms.get(rv)
        self._forward = _numpy_forward(transform)
        if self._forward is None:  # another transform (a simplex): its PyTensor graph
            value = pt.tensor("value", dtype="float64", shape=(None,) * rv.type.ndim)
            self._forward = pytensor.function([value], transform.forward(value))
        self.rng = np.random.default_rng(rng)

    def draw(self, x: np.ndarray, values: list[np.ndarray]) -> np.ndarray:
        """The new value of the variable given x (floats) and the family's parameters' current values."""
        raise NotImplementedError

    def step(self, point):
        x = np.asarray(point[self.x_name], dtype=float)
        values = [np.asarray(v, dtype=float) for v in self._params(point)]
        new_point = dict(point)
        new_point[self.vars[0].name] = np.asarray(self._forward(self.draw(x, values)))
        return new_point, [{}]  # one (empty) stats dict per step, as PyMC expects

    @staticmethod
    def competence(var):
        return Competence.INCOMPATIBLE  # assigned explicitly, never chosen automatically


class ConjugateGamma(ConjugateStep):
    r"""Exact Gibbs update rate | x ~ Gamma(alpha + x, beta + e) for rate ~ Gamma(alpha, beta), x ~ Poisson(e rate).

    One rate per coordinate of x, alpha and beta read from the current point (they may depend on
    hyperparameters such as rate ~ Gamma(a, a / m)), e a constant exposure:

    .. math::

        \pi(\lambda_k \mid x_k) \propto \lambda_k^{\alpha_k + x_k - 1} e^{-(\beta_k + e_k) \lambda_k}.

    Paired with :class:`~ppdinfer.pymc.PrivacyAugmentation` on x with ``collapse=True`` (the rate
    integrated out of x's update), (x, rate) are drawn jointly given the hyperparameters.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from ppdinfer.pymc import ConjugateGamma, Release
    >>> from ppdinfer.mechanisms import Gaussian
    >>> with pm.Model():
    ...     rate = pm.Gamma("rate", alpha=2.0, beta=1.0, shape=2)
    ...     x = pm.Poisson("x", rate * np.array([10.0, 30.0]))
    ...     y = Release("y", Gaussian(3.0), x, observed=[18.2, 71.5])
    ...     step = ConjugateGamma([rate])
    >>> step.x_name, step.exposure.tolist()
    ('x', [10.0, 30.0])
    """

    family = "gamma_poisson"
    prior = "Gamma"
    name = "conjugate_gamma"

    @property
    def exposure(self) -> np.ndarray:
        """The constant exposure e of x ~ Poisson(e rate)."""
        return self.constants["exposure"]

    def draw(self, x, values):
        shape, scale = (np.broadcast_to(v, x.shape) for v in values)
        return self.rng.gamma(shape + x, 1.0 / (1.0 / scale + self.exposure))


class ConjugateDirichlet(ConjugateStep):
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

    family = "dirichlet_multinomial"
    prior = "Dirichlet"
    name = "conjugate_dirichlet"

    @property
    def alpha(self) -> np.ndarray:
        """The Dirichlet's constant concentration."""
        return self.constants["alpha"]

    def draw(self, x, values):
        gammas = self.rng.gamma(self.alpha + x)
        return gammas / gammas.sum(axis=-1, keepdims=True)  # each row of a batch of Dirichlets


class ConjugateBeta(ConjugateStep):
    r"""Exact Gibbs update p | x ~ Beta(a + x, b + n - x) for p ~ Beta(a, b), x ~ Binomial(n, p).

    One probability per coordinate of x, a, b and n read from the current point (they may depend on
    hyperparameters):

    .. math::

        \pi(p_k \mid x_k) \propto p_k^{a_k + x_k - 1} (1 - p_k)^{b_k + n_k - x_k - 1}.

    Paired with :class:`~ppdinfer.pymc.PrivacyAugmentation` on x with ``collapse=True`` (p integrated out
    of x's update: the Beta-Binomial prior), (x, p) are drawn jointly given the hyperparameters.

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.pymc import ConjugateBeta, DiscreteLaplace
    >>> with pm.Model():
    ...     p = pm.Beta("p", alpha=2.0, beta=3.0, shape=2)
    ...     x = pm.Binomial("x", n=[10, 20], p=p)
    ...     y = DiscreteLaplace("y", mu=x, epsilon=1.0, observed=[4, 9])
    ...     step = ConjugateBeta([p])
    >>> step.x_name
    'x'
    """

    family = "beta_binomial"
    prior = "Beta"
    name = "conjugate_beta"

    def draw(self, x, values):
        n, a, b = (np.broadcast_to(v, x.shape) for v in values)
        return self.rng.beta(a + x, b + n - x)


# -- the families ----------------------------------------------------------------------------------------


def _plain(model, x_rv):
    """x's own parameters (after its generator and size), nothing integrated out."""
    return None, x_rv.owner.inputs[2:], {}


def _dirichlet_multinomial(model, x_rv):
    theta_rv = x_rv.owner.inputs[-1]
    if (
        theta_rv.owner is None
        or not isinstance(theta_rv.owner.op, DirichletRV)
        or multinomial_child(model, theta_rv) is not x_rv
    ):
        return None
    try:
        alpha = graph_constant(theta_rv.owner.inputs[-1], f"{theta_rv.name}'s Dirichlet concentration")
    except NotConstantError:  # a concentration that depends on the model: theta stays a variable of its own
        return None
    return theta_rv, x_rv.owner.inputs[2:3], {"alpha": alpha}


def _gamma_poisson(model, x_rv):
    found = gamma_poisson_rate(model, x_rv)
    if found is None:
        return None
    rate_rv, exposure = found
    return rate_rv, rate_rv.owner.inputs[2:], {"exposure": exposure}  # the Gamma's shape and scale


def _beta_binomial(model, x_rv):
    p_rv = beta_binomial_rate(model, x_rv)
    if p_rv is None:
        return None
    return p_rv, (x_rv.owner.inputs[2], *p_rv.owner.inputs[2:]), {}  # the trials, the Beta's a and b


def _tabulated(model, x_rv):
    found = tabulated_prior(model, x_rv)
    return None if isinstance(found, str) else (None, (), {"prior": found})


def _pack_multinomial(values, constants, shape):
    n, p = np.broadcast_to(values[0], shape[:-1]), np.broadcast_to(values[1], shape)
    return {"total": n[..., None], "prob": p}, np.sqrt(n[..., None] * p * (1 - p))


def _pack_dirichlet_multinomial(values, constants, shape):
    # the Dirichlet-multinomial prior is far wider than the noise: the noise sets the step size
    n = np.broadcast_to(values[0], shape[:-1])
    return {"total": n[..., None], "alpha": constants["alpha"]}, np.full(shape, np.inf)


def _pack_binomial(values, constants, shape):
    n, p = (np.broadcast_to(v, shape) for v in values)
    return {"trials": n, "prob": p}, np.sqrt(n * p * (1 - p))


def _pack_poisson(values, constants, shape):
    mean = np.broadcast_to(values[0], shape)
    return {"mean": mean}, np.sqrt(mean)


def _pack_uniform(values, constants, shape):
    lower, upper = (np.broadcast_to(v, shape) for v in values)
    return {"lower": lower, "upper": upper}, (upper - lower + 1) / np.sqrt(12.0)


def _pack_gamma_poisson(values, constants, shape):
    # the rate integrated out: negative binomial with shape r and ratio e / b = e * scale
    r, ratio = np.broadcast_to(values[0], shape), np.broadcast_to(values[1] * constants["exposure"], shape)
    return {"shape": r, "ratio": ratio}, np.sqrt(r * ratio * (1 + ratio))


def _pack_beta_binomial(values, constants, shape):
    n, a, b = (np.broadcast_to(v, shape) for v in values)
    return {"trials": n, "a": a, "b": b}, np.sqrt(n * a * b * (a + b + n) / ((a + b) ** 2 * (a + b + 1)))


#: The families, in the order they are tried: the collapsed ones first (where ``sample`` collapses), so a
#: latent gets the first family it matches. ``sample`` adds the conjugate steps in this order too.
FAMILIES: tuple[PriorFamily, ...] = (
    PriorFamily(
        "dirichlet_multinomial",
        DIRICHLET_MULTINOMIAL,
        MultinomialRV,
        ("total", "alpha"),
        _dirichlet_multinomial,
        _pack_dirichlet_multinomial,
        step=ConjugateDirichlet,
        requirement="the probability vector of exactly one latent Multinomial(n, theta), with theta ~ "
        "Dirichlet of a constant concentration entering no other part of the model",
    ),
    PriorFamily(
        "gamma_poisson",
        GAMMA_POISSON,
        PoissonRV,
        ("shape", "ratio"),
        _gamma_poisson,
        _pack_gamma_poisson,
        step=ConjugateGamma,
        requirement="the Gamma rate of exactly one Poisson latent x ~ Poisson(rate * exposure), one rate per "
        "coordinate, entering no other part of the model, exposure constant",
    ),
    PriorFamily(
        "beta_binomial",
        BETA_BINOMIAL,
        BinomialRV,
        ("trials", "a", "b"),
        _beta_binomial,
        _pack_beta_binomial,
        step=ConjugateBeta,
        requirement="the Beta probability of exactly one Binomial latent x ~ Binomial(n, p), one p per "
        "coordinate, entering no other part of the model",
    ),
    # before the plain families: a Potential on a Poisson, Binomial or DiscreteUniform latent joins its prior
    PriorFamily("tabulated", TABLE, (*TABULATED_OPS, *POTENTIAL_OPS), ("lo", "width"), _tabulated, None),
    PriorFamily("multinomial", MULTINOMIAL, MultinomialRV, ("total", "prob"), _plain, _pack_multinomial),
    PriorFamily("binomial", BINOMIAL, BinomialRV, ("trials", "prob"), _plain, _pack_binomial),
    PriorFamily("poisson", POISSON, PoissonRV, ("mean",), _plain, _pack_poisson),
    PriorFamily("discrete_uniform", UNIFORM, DiscreteUniformRV, ("lower", "upper"), _plain, _pack_uniform),
)


def family_named(name: str) -> PriorFamily:
    """The family of :data:`FAMILIES` called ``name``.

    Examples
    --------
    >>> from ppdinfer.pymc.families import family_named
    >>> family_named("beta_binomial").step.__name__
    'ConjugateBeta'
    """
    for family in FAMILIES:
        if family.name == name:
            return family
    raise ValueError(f"name must be one of {[family.name for family in FAMILIES]}, got {name!r}")


def latent_family(model, x_rv, *, collapse: bool) -> FamilyMatch | None:
    """x's family in ``model``: the first of :data:`FAMILIES` it matches, the collapsed ones tried only where
    ``collapse``; None where x's prior is of no family.

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.pymc.families import latent_family
    >>> with pm.Model() as model:
    ...     p = pm.Beta("p", 2.0, 3.0)
    ...     x = pm.Binomial("x", n=10, p=p)
    >>> latent_family(model, x, collapse=True).family.name, latent_family(model, x, collapse=False).family.name
    ('beta_binomial', 'binomial')
    """
    for family in FAMILIES:
        if family.collapsed and not collapse:
            continue
        found = family.match(model, x_rv)
        if found is not None:
            return found
    return None


#: The classes of the latent random variables some family updates.
LATENT_OPS: tuple[type, ...] = tuple(
    dict.fromkeys(
        op for family in FAMILIES for op in (family.latent if isinstance(family.latent, tuple) else (family.latent,))
    )
)

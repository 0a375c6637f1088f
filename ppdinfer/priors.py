"""Built-in priors pi(theta | z).

Any object with ``rvs(size, random_state)`` and ``logpdf(theta)`` is a prior (scipy.stats
frozen distributions work as they are). The classes here are vectorized, validate their
arguments and may depend on the public information z through ``rvs(..., z=z)`` and
``logpdf(theta, z=z)``.

Per-unit models (one parameter per hospital, county, ...): ``Beta(..., size=H)`` and
``Gamma(..., size=H)`` draw H iid (or independent, with per-unit parameters) values, so theta
has shape (H,); :class:`HierarchicalGamma` and :class:`HierarchicalBeta` add hyperpriors that
couple the units. A hierarchical theta is one flat vector (the hyperparameters, then the H unit
parameters) whose ``blocks`` name each part; the data model sees the ``unit`` block only.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from .rng import as_generator
from .validation import positive_finite, positive_int, probability_vector, summarize, unit_parameter


class Prior:
    """Base class for priors pi(theta | z) that may use z. ``dim`` is the length of theta (1 for a scalar).

    ``units`` is the number of per-unit parameters (theta of shape (units,) fed to a per-unit
    data model), or None for a prior of one parameter shared by all the data.

    Examples
    --------
    >>> from ppdinfer.priors import Beta, Prior
    >>> prior = Beta(2, 3)
    >>> isinstance(prior, Prior), prior.dim
    (True, 1)
    >>> prior.rvs(4, random_state=0).shape     # a batch of theta
    (4,)
    """

    dim: int = 1
    units: int | None = None

    def rvs(self, size: int, random_state=None, z=None) -> np.ndarray:
        """``size`` draws of theta given z: shape (size,) for a scalar theta, (size, dim) otherwise."""
        raise NotImplementedError

    def logpdf(self, theta, z=None) -> np.ndarray:
        """log pi(theta | z) for each theta of a batch."""
        raise NotImplementedError

    def __repr__(self) -> str:
        args = ", ".join(
            f"{k}={summarize(v) if np.ndim(v) else repr(v)}"
            for k, v in vars(self).items()
            if not k.startswith("_") and k != "dim"
        )
        return f"{type(self).__name__}({args})"


class _UnitPrior(Prior):
    """A Beta or Gamma with scalar or per-unit parameters: the shared machinery of both."""

    _family = None  # the scipy.stats family

    def _setup(self, first, second, size):
        """Store the units and the frozen distribution; ``first`` and ``second`` are (value, name) pairs."""
        size = None if size is None else positive_int(size, "size")
        values = [
            unit_parameter(value, name, positive_finite, "positive finite number", size)
            for value, name in (first, second)
        ]
        lengths = {np.size(v) for v in values if np.ndim(v)}
        if len(lengths) > 1:
            raise ValueError(
                f"{first[1]} and {second[1]} have {' and '.join(map(str, sorted(lengths)))} values: "
                "give one value per unit for both, or a scalar"
            )
        units = size if size is not None else (lengths.pop() if lengths else None)
        if units is not None:
            values = [np.broadcast_to(np.asarray(v, dtype=float), (units,)).copy() for v in values]
            self.units = self.dim = units
        self._dist = self._family(*self._scipy_args(*values))
        return values

    def logpdf(self, theta, z=None):
        if self.units is None:
            return self._dist.logpdf(theta)
        theta = np.asarray(theta, dtype=float)
        return self._dist.logpdf(theta.reshape(-1, self.units)).sum(axis=-1)

    def ppf(self, q):
        """The prior's quantile function (used by exact_posterior's grid of equal prior mass)."""
        return self._dist.ppf(q)

    def _draw_shape(self, size):
        return size if self.units is None else (size, self.units)


class Beta(_UnitPrior):
    r"""theta ~ Beta(alpha, beta) on (0, 1); with ``size=H`` (or length-H parameters) one per unit.

    .. math::

        \pi(\theta) = \frac{\theta^{\alpha - 1} (1 - \theta)^{\beta - 1}}{B(\alpha, \beta)},
        \qquad \pi(\theta_1, \dots, \theta_H) = \prod_i \pi_i(\theta_i) \ \text{(per unit)}.

    Examples
    --------
    >>> from ppdinfer.priors import Beta
    >>> prior = Beta(2, 3)
    >>> theta = prior.rvs(1000, random_state=0)
    >>> theta.shape, bool(abs(theta.mean() - 0.4) < 0.02)    # mean alpha / (alpha + beta)
    ((1000,), True)
    >>> prior.logpdf([0.5]).round(4)             # log(12 * 0.5 * 0.25)
    array([0.4055])
    >>> units = Beta(2, 3, size=200)             # one success probability per hospital
    >>> units.units, units.rvs(4, random_state=0).shape
    (200, (4, 200))
    >>> Beta([1.0, 2.0], 1.0).logpdf([[0.5, 0.5]]).round(4)   # independent units: log(1) + log(2 * 0.5)
    array([0.])
    """

    _family = stats.beta

    def __init__(self, alpha=1.0, beta=1.0, size: int | None = None):
        self.alpha, self.beta = self._setup((alpha, "alpha"), (beta, "beta"), size)

    @staticmethod
    def _scipy_args(alpha, beta):
        return alpha, beta

    def rvs(self, size, random_state=None, z=None):
        return as_generator(random_state).beta(self.alpha, self.beta, size=self._draw_shape(size))

    def unit(self, index: int) -> Beta:
        """The scalar prior of unit ``index`` of a per-unit Beta.

        Examples
        --------
        >>> from ppdinfer.priors import Beta
        >>> Beta([1.0, 2.0], 3.0).unit(1)
        Beta(alpha=2.0, beta=3.0)
        """
        return Beta(*(float(np.broadcast_to(v, (self.units or 1,))[index]) for v in (self.alpha, self.beta)))


class Gamma(_UnitPrior):
    r"""theta ~ Gamma(shape, rate) on (0, inf), mean shape / rate; with ``size=H`` (or length-H ones) one per unit.

    .. math::

        \pi(\theta) = \frac{\mathrm{rate}^{\mathrm{shape}}}{\Gamma(\mathrm{shape})}
        \theta^{\mathrm{shape} - 1} e^{-\mathrm{rate} \, \theta}.

    Examples
    --------
    >>> from ppdinfer.priors import Gamma
    >>> prior = Gamma(shape=2.0, rate=4.0)       # e.g. a Poisson rate with prior mean 0.5
    >>> prior.rvs(2, random_state=0).shape
    (2,)
    >>> round(float(prior.ppf(0.5)), 4)          # the prior median
    0.4196
    >>> rates = Gamma(2.0, 1.0, size=200)        # lambda_i ~ Gamma(2, 1), one per hospital
    >>> rates.rvs(3, random_state=0).shape
    (3, 200)
    """

    _family = stats.gamma

    def __init__(self, shape=1.0, rate=1.0, size: int | None = None):
        self.shape, self.rate = self._setup((shape, "shape"), (rate, "rate"), size)

    @staticmethod
    def _scipy_args(shape, rate):
        return shape, 0.0, 1 / np.asarray(rate)

    def rvs(self, size, random_state=None, z=None):
        return as_generator(random_state).gamma(self.shape, 1 / np.asarray(self.rate), size=self._draw_shape(size))

    def unit(self, index: int) -> Gamma:
        """The scalar prior of unit ``index`` of a per-unit Gamma.

        Examples
        --------
        >>> from ppdinfer.priors import Gamma
        >>> Gamma(2.0, [1.0, 4.0]).unit(1)
        Gamma(shape=2.0, rate=4.0)
        """
        return Gamma(*(float(np.broadcast_to(v, (self.units or 1,))[index]) for v in (self.shape, self.rate)))


class Dirichlet(Prior):
    r"""theta ~ Dirichlet(alpha) on the simplex.

    .. math::

        \pi(\theta) = \frac{\Gamma(\sum_j \alpha_j)}{\prod_j \Gamma(\alpha_j)} \prod_j \theta_j^{\alpha_j - 1}.

    ``alpha`` is either a fixed vector, or (with :meth:`centered`) computed from z as
    ``concentration * (z[key] + pseudocount) / sum(z[key] + pseudocount)``: a prior centred
    on public counts such as last month's, whose zero entries still get positive weight.

    Concentrations below 1 put much mass near the faces of the simplex. ``rvs`` then draws
    log Gamma(alpha) as log Gamma(alpha + 1) + log(U) / alpha and normalizes in log space, so a
    component is 0 only below the smallest positive float (numpy's sampler gives exact zeros
    far more often), and ``logpdf`` reads a component of 0 as that float (2.2e-308) where
    alpha < 1: the log density is finite wherever the draws land.

    Examples
    --------
    >>> from ppdinfer.priors import Dirichlet
    >>> prior = Dirichlet.centered("previous", concentration=10.0)   # centred on last month's counts
    >>> z = {"previous": [8, 0, 2]}
    >>> prior.concentration_vector(z).round(2)                        # 10 * (previous + 1) / 13
    array([6.92, 0.77, 2.31])
    >>> prior.rvs(2, random_state=0, z=z).shape
    (2, 3)
    >>> round(float(Dirichlet([1.0, 1.0, 1.0]).logpdf([0.2, 0.3, 0.5])[0]), 6)  # uniform: log 2
    0.693147
    """

    def __init__(
        self, alpha=None, *, key: str | None = None, concentration: float | None = None, pseudocount: float = 1.0
    ):
        if (alpha is None) == (key is None):
            raise ValueError("give either alpha (a fixed vector) or key (centre on z[key]), not both")
        if alpha is not None:
            alpha = np.asarray(alpha, dtype=float)
            if alpha.ndim != 1 or alpha.size < 2 or not np.all(np.isfinite(alpha)) or np.any(alpha <= 0):
                raise ValueError(f"alpha must be a vector of at least 2 positive finite numbers, got {alpha!r}")
            self.dim = alpha.size
        else:
            concentration = positive_finite(concentration, "concentration")
            pseudocount = positive_finite(pseudocount, "pseudocount")
        self.alpha = alpha
        self.key = key
        self.concentration = concentration
        self.pseudocount = pseudocount

    @classmethod
    def centered(cls, key: str, concentration: float, pseudocount: float = 1.0) -> Dirichlet:
        """A Dirichlet centred on the public counts ``z[key]`` with total mass ``concentration``."""
        return cls(key=key, concentration=concentration, pseudocount=pseudocount)

    def concentration_vector(self, z=None) -> np.ndarray:
        """The Dirichlet parameter alpha for the public information z."""
        if self.alpha is not None:
            return self.alpha
        if z is None or self.key not in z:
            raise ValueError(f"z must contain {self.key!r}: this Dirichlet prior is centred on z[{self.key!r}]")
        counts = np.asarray(z[self.key], dtype=float)
        if counts.ndim != 1 or counts.size < 2 or np.any(counts < 0) or not np.all(np.isfinite(counts)):
            raise ValueError(f"z[{self.key!r}] must be a vector of at least 2 non-negative counts, got {counts!r}")
        weights = counts + self.pseudocount
        return self.concentration * weights / weights.sum()

    def rvs(self, size, random_state=None, z=None):
        alpha = self.concentration_vector(z)
        rng = as_generator(random_state)
        if alpha.min() >= 1:
            return rng.dirichlet(alpha, size=size)
        shape = (size, alpha.size)
        log_gamma = np.log(rng.standard_gamma(alpha + 1, size=shape)) + np.log1p(-rng.random(shape)) / alpha
        gamma = np.exp(log_gamma - log_gamma.max(axis=-1, keepdims=True))
        return gamma / gamma.sum(axis=-1, keepdims=True)

    def logpdf(self, theta, z=None):
        alpha = self.concentration_vector(z)
        theta = np.atleast_2d(theta)
        log_norm = special.gammaln(alpha.sum()) - special.gammaln(alpha).sum()
        with np.errstate(divide="ignore"):
            terms = (alpha - 1) * np.log(theta)
        # A 0 drawn with alpha < 1 stands for a value below the smallest float; alpha = 1 adds nothing.
        at_zero = np.where(alpha < 1, (alpha - 1) * np.log(np.finfo(float).tiny), np.where(alpha == 1, 0.0, -np.inf))
        return log_norm + np.where(theta == 0, at_zero, terms).sum(axis=-1)


class Categorical(Prior):
    r"""theta ~ Categorical(p): a discrete secret index theta in {0, ..., K - 1}.

    .. math::

        \pi(\theta = k) = p_k, \qquad k = 0, \dots, K - 1, \qquad \sum_k p_k = 1.

    ``logpdf`` is the log pmf: log p_k at the integer k and -inf anywhere else (a non-integer or
    an index outside 0..K-1). Draws are indices (integers); PPDModel stores them as floats. With
    ``theta_grid=numpy.arange(K)`` (unit spacing, K >= 3), :func:`ppdinfer.exact_posterior`
    weighs each index by exactly p_k.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.priors import Categorical
    >>> prior = Categorical([0.5, 0.3, 0.2])
    >>> prior.probabilities.tolist(), prior.dim
    ([0.5, 0.3, 0.2], 1)
    >>> (np.bincount(prior.rvs(10_000, random_state=0), minlength=3) / 10_000).round(1)
    array([0.5, 0.3, 0.2])
    >>> np.exp(prior.logpdf([0, 2, 1.5, 3])).round(2)     # zero off the indices
    array([0.5, 0.2, 0. , 0. ])
    """

    def __init__(self, probabilities):
        self.probabilities = probability_vector(probabilities, "probabilities")

    def rvs(self, size, random_state=None, z=None):
        return as_generator(random_state).choice(self.probabilities.size, size=size, p=self.probabilities)

    def logpdf(self, theta, z=None):
        theta = np.asarray(theta, dtype=float)
        index = np.clip(np.nan_to_num(theta), 0, self.probabilities.size - 1).astype(np.int64)
        with np.errstate(divide="ignore"):
            log_p = np.log(self.probabilities)[index]
        return np.where(theta == index, log_p, -np.inf)


class Hierarchical(Prior):
    r"""Base class of hierarchical priors: scalar hyperparameters phi, then H iid unit parameters given phi.

    .. math::

        \pi(\phi, \theta_1, \dots, \theta_H) = \prod_j \pi(\phi_j) \prod_{i=1}^H \pi(\theta_i \mid \phi).

    theta is one flat vector of length ``dim`` = (number of hyperparameters) + H, the
    hyperparameters first. ``blocks`` maps each block's name to its shape, in that order, and
    ``unit`` names the block of unit parameters (the last), the only one the data model sees.
    Subclasses set the unit family and ``unit_parameters``, written with plain arithmetic so
    that it serves NumPy arrays and PyMC tensors alike.

    Examples
    --------
    >>> from ppdinfer.priors import Gamma, HierarchicalGamma, Hierarchical
    >>> prior = HierarchicalGamma(shape=Gamma(2.0, 1.0), mean=Gamma(2.0, 2.0), size=3)
    >>> isinstance(prior, Hierarchical), prior.blocks, prior.unit
    (True, {'shape': (), 'mean': (), 'rate': (3,)}, 'rate')
    """

    unit: str
    _family = None  # the scipy.stats family of a unit parameter given the hyperparameters

    def __init__(self, hyperpriors: dict, unit: str, size: int):
        for name, hyperprior in hyperpriors.items():
            if not isinstance(hyperprior, _UnitPrior) or hyperprior.units is not None:
                raise ValueError(
                    f"{name} must be a scalar priors.Beta or priors.Gamma (the prior of one "
                    f"hyperparameter), got {hyperprior!r}"
                )
        self.hyperpriors = dict(hyperpriors)
        self.units = positive_int(size, "size")
        self.unit = unit
        self.dim = len(self.hyperpriors) + self.units

    @property
    def blocks(self) -> dict[str, tuple[int, ...]]:
        """The name and shape of each block of theta, in order: the hyperparameters (scalars), then the units."""
        return {**{name: () for name in self.hyperpriors}, self.unit: (self.units,)}

    def unit_parameters(self, *hyper):
        """The two parameters of each unit's distribution given the hyperparameters (arrays or tensors)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        hyper = ", ".join(f"{name}={prior!r}" for name, prior in self.hyperpriors.items())
        return f"{type(self).__name__}({hyper}, size={self.units})"

    def rvs(self, size, random_state=None, z=None):
        rng = as_generator(random_state)
        hyper = [prior.rvs(size, rng, z=z) for prior in self.hyperpriors.values()]
        first, second = (np.asarray(v)[:, None] for v in self.unit_parameters(*hyper))
        units = self._family(*self._scipy_args(first, second)).rvs(size=(size, self.units), random_state=rng)
        return np.column_stack([*hyper, units])

    def logpdf(self, theta, z=None):
        theta = np.asarray(theta, dtype=float).reshape(-1, self.dim)
        k = len(self.hyperpriors)
        hyper = [theta[:, j] for j in range(k)]
        out = sum(
            np.asarray(prior.logpdf(value, z=z), dtype=float)
            for prior, value in zip(self.hyperpriors.values(), hyper, strict=True)
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            first, second = (np.asarray(v)[:, None] for v in self.unit_parameters(*hyper))
            units = self._family.logpdf(theta[:, k:], *self._scipy_args(first, second)).sum(axis=1)
        return np.where(np.isfinite(out), out + units, -np.inf)


class HierarchicalGamma(Hierarchical):
    r"""Unit rates lambda_i ~ Gamma(a, a / m) iid given a shape a and a mean m, each with its own prior.

    .. math::

        a \sim \pi(a), \quad m \sim \pi(m), \quad
        \lambda_i \mid a, m \sim \mathrm{Gamma}(a, \mathrm{rate} = a / m), \quad i = 1, \dots, H,

    so E(lambda_i | a, m) = m and Var(lambda_i | a, m) = m^2 / a. theta = (a, m, lambda_1, ...,
    lambda_H), with blocks ``shape``, ``mean`` and the unit block ``rate`` (rename them with
    the model's ``names``).

    Parameters
    ----------
    shape, mean : priors.Gamma
        Scalar priors of a and m (a Beta works too for a mean in (0, 1)).
    size : int
        H, the number of units.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.priors import Gamma, HierarchicalGamma
    >>> prior = HierarchicalGamma(shape=Gamma(20.0, 1.0), mean=Gamma(4.0, 2.0), size=200)
    >>> theta = prior.rvs(3, random_state=0)
    >>> theta.shape                                    # a, m, then 200 rates
    (3, 202)
    >>> bool(abs(theta[:, 2:].mean(axis=1) / theta[:, 1] - 1).max() < 0.1)   # rates centre on m
    True
    """

    _family = stats.gamma
    _scipy_args = staticmethod(Gamma._scipy_args)

    def __init__(self, shape: Prior, mean: Prior, size: int):
        super().__init__({"shape": shape, "mean": mean}, "rate", size)

    def unit_parameters(self, shape, mean):
        """The Gamma shape a and rate a / m of each unit rate.

        Examples
        --------
        >>> from ppdinfer.priors import Gamma, HierarchicalGamma
        >>> HierarchicalGamma(Gamma(2.0, 1.0), Gamma(2.0, 1.0), size=2).unit_parameters(4.0, 2.0)
        (4.0, 2.0)
        """
        return shape, shape / mean


class HierarchicalBeta(Hierarchical):
    r"""Unit probabilities p_i ~ Beta(m k, (1 - m) k) iid given a mean m and a concentration k, each with its own prior.

    .. math::

        m \sim \pi(m), \quad k \sim \pi(k), \quad
        p_i \mid m, k \sim \mathrm{Beta}(m k, (1 - m) k), \quad i = 1, \dots, H,

    so E(p_i | m, k) = m and Var(p_i | m, k) = m (1 - m) / (k + 1). theta = (m, k, p_1, ..., p_H),
    with blocks ``mean``, ``concentration`` and the unit block ``p``.

    Parameters
    ----------
    mean : priors.Beta
        Scalar prior of m.
    concentration : priors.Gamma
        Scalar prior of k.
    size : int
        H, the number of units.

    Examples
    --------
    >>> from ppdinfer.priors import Beta, Gamma, HierarchicalBeta
    >>> prior = HierarchicalBeta(mean=Beta(2.0, 8.0), concentration=Gamma(10.0, 0.5), size=5)
    >>> list(prior.blocks), prior.rvs(4, random_state=0).shape
    (['mean', 'concentration', 'p'], (4, 7))
    """

    _family = stats.beta
    _scipy_args = staticmethod(Beta._scipy_args)

    def __init__(self, mean: Prior, concentration: Prior, size: int):
        if not isinstance(mean, Beta):
            raise ValueError(
                f"mean must be a scalar priors.Beta (m is a probability, in (0, 1)), got {mean!r}: its support "
                "leaves (0, 1), where Beta(m k, (1 - m) k) is undefined"
            )
        super().__init__({"mean": mean, "concentration": concentration}, "p", size)

    def unit_parameters(self, mean, concentration):
        """The Beta parameters m k and (1 - m) k of each unit probability.

        Examples
        --------
        >>> from ppdinfer.priors import Beta, Gamma, HierarchicalBeta
        >>> HierarchicalBeta(Beta(1.0, 1.0), Gamma(1.0, 1.0), size=2).unit_parameters(0.25, 8.0)
        (2.0, 6.0)
        """
        return mean * concentration, (1 - mean) * concentration

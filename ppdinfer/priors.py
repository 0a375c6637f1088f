"""Built-in priors pi(theta | z).

Any object with ``rvs(size, random_state)`` and ``logpdf(theta)`` is a prior (scipy.stats
frozen distributions work as they are). The classes here are vectorized, validate their
arguments and may depend on the public information z through ``rvs(..., z=z)`` and
``logpdf(theta, z=z)``.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from ._random import as_generator
from ._validation import positive_finite, probability_vector


class Prior:
    """Base class for priors pi(theta | z) that may use z. ``dim`` is the length of theta (1 for a scalar).

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

    def rvs(self, size: int, random_state=None, z=None) -> np.ndarray:
        """``size`` draws of theta given z: shape (size,) for a scalar theta, (size, dim) otherwise."""
        raise NotImplementedError

    def logpdf(self, theta, z=None) -> np.ndarray:
        """log pi(theta | z) for each theta of a batch."""
        raise NotImplementedError

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({args})"


class Beta(Prior):
    r"""theta ~ Beta(alpha, beta) on (0, 1).

    .. math::

        \pi(\theta) = \frac{\theta^{\alpha - 1} (1 - \theta)^{\beta - 1}}{B(\alpha, \beta)}.

    Examples
    --------
    >>> from ppdinfer.priors import Beta
    >>> prior = Beta(2, 3)
    >>> theta = prior.rvs(1000, random_state=0)
    >>> theta.shape, bool(abs(theta.mean() - 0.4) < 0.02)    # mean alpha / (alpha + beta)
    ((1000,), True)
    >>> prior.logpdf([0.5]).round(4)             # log(12 * 0.5 * 0.25)
    array([0.4055])
    """

    def __init__(self, alpha: float = 1.0, beta: float = 1.0):
        self.alpha = positive_finite(alpha, "alpha")
        self.beta = positive_finite(beta, "beta")
        self._dist = stats.beta(self.alpha, self.beta)

    def rvs(self, size, random_state=None, z=None):
        return as_generator(random_state).beta(self.alpha, self.beta, size=size)

    def logpdf(self, theta, z=None):
        return self._dist.logpdf(theta)

    def ppf(self, q):
        """The prior's quantile function (used by exact_posterior's grid of equal prior mass)."""
        return self._dist.ppf(q)


class Gamma(Prior):
    r"""theta ~ Gamma(shape, rate) on (0, inf), mean shape / rate.

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
    """

    def __init__(self, shape: float = 1.0, rate: float = 1.0):
        self.shape = positive_finite(shape, "shape")
        self.rate = positive_finite(rate, "rate")
        self._dist = stats.gamma(self.shape, scale=1 / self.rate)

    def rvs(self, size, random_state=None, z=None):
        return as_generator(random_state).gamma(self.shape, 1 / self.rate, size=size)

    def logpdf(self, theta, z=None):
        return self._dist.logpdf(theta)

    def ppf(self, q):
        """The prior's quantile function (used by exact_posterior's grid of equal prior mass)."""
        return self._dist.ppf(q)


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

    def __init__(self, alpha=None, *, key: str | None = None, concentration: float | None = None,
                 pseudocount: float = 1.0):
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
    def centered(cls, key: str, concentration: float, pseudocount: float = 1.0) -> "Dirichlet":
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

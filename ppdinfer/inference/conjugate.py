"""Conjugate prior / data-model pairs, used by exact enumeration to integrate theta out.

For these pairs p(x | z) has a closed form, and each component theta_j | x is a Beta
distribution, so the exact posterior of theta given y is a finite mixture of Betas.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ..generators import Binomial, MultinomialTotal
from ..priors import Beta, Dirichlet


class BetaBinomialPair:
    """theta ~ Beta(a, b), x ~ Binomial(n, theta)."""

    def __init__(self, prior: Beta, generator: Binomial):
        self.a, self.b, self.n = prior.alpha, prior.beta, generator.n

    def log_marginal(self, x, z):
        """log p(x) of the beta-binomial distribution; x of shape (S, 1)."""
        x = x[:, 0].astype(float)
        log_choose = special.gammaln(self.n + 1) - special.gammaln(x + 1) - special.gammaln(self.n - x + 1)
        return log_choose + special.betaln(self.a + x, self.b + self.n - x) - special.betaln(self.a, self.b)

    def component_betas(self, x, z):
        """Beta parameters (S, 1), (S, 1) of theta | x."""
        x = x.astype(float)
        return self.a + x, self.b + self.n - x

    def sample_theta(self, x, z, rng):
        a, b = self.component_betas(x, z)
        return rng.beta(a, b)


class DirichletMultinomialPair:
    """theta ~ Dirichlet(alpha(z)), x ~ Multinomial(z[total], theta)."""

    def __init__(self, prior: Dirichlet, generator: MultinomialTotal):
        self.prior, self.generator = prior, generator

    def log_marginal(self, x, z):
        """log DirMult(x; N, alpha): Gamma(A) Gamma(N+1) / Gamma(N+A) prod Gamma(x_j+a_j) / (Gamma(a_j) Gamma(x_j+1))."""
        alpha = self.prior.concentration_vector(z)
        total = self.generator.total(z)
        x = x.astype(float)
        big_a = alpha.sum()
        head = special.gammaln(big_a) + special.gammaln(total + 1) - special.gammaln(total + big_a)
        cells = special.gammaln(x + alpha) - special.gammaln(alpha) - special.gammaln(x + 1)
        return head + cells.sum(axis=1)

    def component_betas(self, x, z):
        alpha = self.prior.concentration_vector(z)
        total = self.generator.total(z)
        a = alpha[None, :] + x
        return a, alpha.sum() + total - a

    def sample_theta(self, x, z, rng):
        alpha = self.prior.concentration_vector(z)
        gammas = rng.gamma(alpha[None, :] + x)
        return gammas / gammas.sum(axis=1, keepdims=True)


def conjugate_pair(prior, generator):
    """The conjugate pair object for (prior, generator), or None when there is none."""
    if isinstance(prior, Beta) and isinstance(generator, Binomial) and prior.units is None and generator.units is None:
        return BetaBinomialPair(prior, generator)  # one p and one n: per-unit forms have no pair here
    if isinstance(prior, Dirichlet) and isinstance(generator, MultinomialTotal):
        return DirichletMultinomialPair(prior, generator)
    return None


class BetaMixture:
    """Per component j, the mixture sum_s w_s Beta(a_sj, b_sj), with identical components merged."""

    def __init__(self, weights, a, b):
        self.components = []
        for j in range(a.shape[1]):
            pairs, inverse = np.unique(np.column_stack([a[:, j], b[:, j]]), axis=0, return_inverse=True)
            merged = np.bincount(inverse.reshape(-1), weights=weights, minlength=pairs.shape[0])
            keep = merged > 0
            self.components.append((merged[keep], pairs[keep, 0], pairs[keep, 1]))

    def mean(self):
        return np.array([np.sum(w * a / (a + b)) for w, a, b in self.components])

    def sd(self):
        second = np.array([np.sum(w * a * (a + 1) / ((a + b) * (a + b + 1))) for w, a, b in self.components])
        return np.sqrt(np.maximum(second - self.mean() ** 2, 0))

    def grid(self, size: int) -> np.ndarray:
        """(size, k) evaluation points covering each component's mixture (mean +- 10 sd, within (0, 1))."""
        mean, sd = self.mean(), self.sd()
        low = np.clip(mean - 10 * sd, 0, 1)
        high = np.clip(mean + 10 * sd, 0, 1)
        return np.linspace(low, high, size)

    def cdf(self, grid):
        return np.column_stack(
            [
                (w[None, :] * special.betainc(a[None, :], b[None, :], grid[:, j, None])).sum(axis=1)
                for j, (w, a, b) in enumerate(self.components)
            ]
        )

    def pdf(self, grid):
        columns = []
        for j, (w, a, b) in enumerate(self.components):
            t = grid[:, j, None]
            with np.errstate(divide="ignore"):
                log_pdf = special.xlogy(a - 1, t) + special.xlog1py(b - 1, -t) - special.betaln(a, b)
            columns.append((w[None, :] * np.exp(log_pdf)).sum(axis=1))
        return np.column_stack(columns)

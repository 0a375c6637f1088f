r"""A global property of a dataset as the secret (distribution privacy): the attacker's posterior.

Chen & Ohrimenko protect a property theta of the whole dataset (the share of high earners, say)
among a few candidate values theta_0, ..., theta_{K-1}. The released query F (a vector of means
and counts over the records) has, under each candidate, an approximately Gaussian law f_k,
fitted from subsets; a distribution-privacy mechanism adds noise N(0, C) (ExpM, EigM or DauM of
:mod:`ppdinfer.mechanisms.distribution`, possibly singular):

.. math::

    k \sim \mathrm{Categorical}(p_0, \dots, p_{K-1}), \qquad
    F \mid k \sim \mathrm{N}(\mu_k, \Sigma_k), \qquad
    y \mid F \sim F + \mathrm{N}(0, C),

so the release is N(mu_k, Sigma_k + C) given k, and the attacker's posterior is exact:

.. math::

    P(k \mid y) \propto p_k \, \mathrm{N}(y; \mu_k, \Sigma_k + C).

Distribution privacy at (eps, delta) bounds how far this posterior can move the odds of two
candidates, except on releases of probability delta. :meth:`PropertySecretModel.secret_posterior`
computes it; with full-rank noise :func:`ppdinfer.rejection_sample` and
:func:`ppdinfer.importance_sample` draw (k, F) pairs as for any model and agree with it (F is
continuous, so ``exact_posterior``, which enumerates x, does not apply). With singular noise
(DauM, DirM: noise along one direction v) the release pins F to the line y + R v, which draws of
F from its law never hit: the samplers then accept nothing, and the closed form is the only route.
No PyMC twin: k is discrete.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ..generators import DataModel
from ..inference import PPDModel
from ..mechanisms import Mechanism
from ..mechanisms.distribution import CorrelatedGaussian
from ..priors import Categorical
from ..validation import finite_array


class GaussianQuery(DataModel):
    r"""The query F given the candidate index k: N(mu_k, Sigma_k) in R^m.

    .. math::

        \pi(F \mid \theta = k) = \mathrm{N}(F; \mu_k, \Sigma_k), \qquad k \in \{0, \dots, K - 1\}.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.models.property_secret import GaussianQuery
    >>> query = GaussianQuery([[0.0, 0.0], [1.0, 1.0]], [np.eye(2), np.eye(2)])
    >>> query(np.array([0.0, 1.0, 1.0]), None, np.random.default_rng(0)).shape
    (3, 2)
    """

    def __init__(self, means, covariances):
        self.means = finite_array(means, "means")
        covariances = finite_array(covariances, "covariances")
        if self.means.ndim != 2 or self.means.shape[0] < 2:
            raise ValueError(f"means must have shape (K, m) with K >= 2 candidates, got shape {self.means.shape}")
        k, m = self.means.shape
        if covariances.shape != (k, m, m):
            raise ValueError(f"covariances must have shape ({k}, {m}, {m}), got shape {covariances.shape}")
        if not np.allclose(covariances, np.swapaxes(covariances, 1, 2)) or np.any(np.linalg.eigvalsh(covariances) <= 0):
            raise ValueError("covariances must be symmetric positive definite")
        self.covariances = covariances
        self._factors = np.linalg.cholesky(covariances)

    @property
    def n_secrets(self) -> int:
        """K, the number of candidate values of the property."""
        return self.means.shape[0]

    def __call__(self, theta, z, rng):
        theta = np.asarray(theta, dtype=float).reshape(-1)
        index = np.round(theta).astype(np.int64)
        if np.any(index != theta) or np.any(index < 0) or np.any(index >= self.n_secrets):
            raise ValueError(f"theta must hold candidate indices 0..{self.n_secrets - 1}, got {theta!r}")
        noise = rng.standard_normal((index.size, self.means.shape[1]))
        return self.means[index] + np.einsum("bij,bj->bi", self._factors[index], noise)


class PropertySecretModel(PPDModel):
    r"""The property-as-parameter PPD model (math in the module docstring).

    Examples
    --------
    >>> from ppdinfer.models import property_secret
    >>> model = property_secret.model([[0.0, 0.0], [1.0, 0.5]], [[[1.0, 0.3], [0.3, 1.0]]] * 2, noise=0.5)
    >>> model.secret_posterior([0.9, 0.4]).round(3)
    array([0.418, 0.582])
    """

    def __init__(self, means, covariances, noise, prior):
        data = GaussianQuery(means, covariances)
        if not isinstance(prior, Categorical):
            prior = Categorical(np.full(data.n_secrets, 1 / data.n_secrets) if prior is None else prior)
        if prior.probabilities.size != data.n_secrets:
            raise ValueError(f"prior has {prior.probabilities.size} candidates but means has {data.n_secrets}")
        mechanism = noise if isinstance(noise, Mechanism) else _isotropic(noise, data.means.shape[1])
        if mechanism.noise_covariance(data.means.shape[1]) is None:
            raise ValueError(
                "noise must add Gaussian noise (a CorrelatedGaussian, as the distribution-privacy Gaussian designs "
                f"return, or a Gaussian) or be a noise standard deviation, got {noise!r}"
            )
        super().__init__(prior, data, mechanism, names="candidate", x_name="query")

    def secret_posterior(self, y) -> np.ndarray:
        r"""P(k | y) for one release (shape (K,)) or many ((R, K)), in closed form.

        .. math::

            P(k \mid y) \propto p_k \, \mathrm{N}(y; \mu_k, \Sigma_k + C).

        Examples
        --------
        >>> from ppdinfer.models import property_secret
        >>> model = property_secret.model([[0.0], [2.0]], [[[1.0]], [[1.0]]], noise=1.0)
        >>> model.secret_posterior([[1.0], [3.0]]).round(3)   # halfway: even odds
        array([[0.5  , 0.5  ],
               [0.119, 0.881]])
        """
        data = self.simulate
        noise = self.mechanism.noise_covariance(data.means.shape[1])
        y = finite_array(y, "y")
        single = y.ndim == 1
        releases = y.reshape(-1, data.means.shape[1])
        log_likelihood = np.stack(
            [
                stats.multivariate_normal(mean, cov + noise).logpdf(releases).reshape(-1)
                for mean, cov in zip(data.means, data.covariances)
            ],
            axis=1,
        )
        log_joint = log_likelihood + np.log(self.prior.probabilities)
        posterior = np.exp(log_joint - log_joint.max(axis=1, keepdims=True))
        posterior /= posterior.sum(axis=1, keepdims=True)
        return posterior[0] if single else posterior

    def to_pymc(self, y, z=None):
        """No PyMC twin: raises NotImplementedError (the candidate index is discrete)."""
        raise NotImplementedError(
            "the candidate index is discrete, so NUTS cannot sample it; the posterior is "
            "model.secret_posterior(y) in closed form, or ppdinfer.importance_sample"
        )


def model(means, covariances, noise, prior=None) -> PropertySecretModel:
    """The property-secret model: candidates' query laws N(means[k], covariances[k]) and the release noise.

    ``noise`` is a :class:`~ppdinfer.mechanisms.distribution.CorrelatedGaussian` (what
    ``eigenvector_gaussian`` or ``directional_gaussian`` return) or a standard deviation for
    isotropic noise; ``prior`` the attacker's prior over the K candidates (default uniform).

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer.models import property_secret
    >>> model = property_secret.model([[0.0], [2.0]], [[[1.0]], [[1.0]]], noise=1.0)
    >>> result = pp.importance_sample(model, [1.5], draws=20_000, random_seed=0)
    >>> exact = float(model.secret_posterior([1.5])[1])        # P(candidate 1 | y), in closed form
    >>> round(exact, 2), abs(float(pp.weighted_mean(result)["candidate"]) - exact) < 0.02
    (0.62, True)
    """
    return PropertySecretModel(means, covariances, noise, prior)


def _isotropic(sd, dim: int) -> CorrelatedGaussian:
    sd = float(sd)
    if not np.isfinite(sd) or sd < 0:
        raise ValueError(f"noise must be a CorrelatedGaussian or a standard deviation >= 0, got {sd!r}")
    return CorrelatedGaussian(sd**2 * np.eye(dim))

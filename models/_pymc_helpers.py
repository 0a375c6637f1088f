"""Pieces shared by the gallery's PyMC twins."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt


def noise_likelihood(name: str, mu, mechanism, observed):
    """The release y ~ mechanism centred on mu, as a PyMC observed variable."""
    from ..pymc import DiscreteLaplace

    return DiscreteLaplace(name, mu=mu, epsilon=mechanism.epsilon, sensitivity=mechanism.sensitivity, observed=observed)


def marginal_release(name: str, support: np.ndarray, log_weights, mechanism, observed):
    """y ~ sum_k w_k DiscreteLaplace(support_k): the release with x summed out over its support."""
    import pymc as pm

    from ..pymc import DiscreteLaplace

    components = DiscreteLaplace.dist(mu=support, epsilon=mechanism.epsilon, sensitivity=mechanism.sensitivity)
    weights = pt.exp(log_weights - pt.logsumexp(log_weights))
    return pm.Mixture(name, w=weights, comp_dists=components, observed=observed)


def covariate_prior(pm, d: int, scale: float):
    """x ~ N(mu_x, Sigma_x) with mu_x ~ N(0, scale) and Sigma_x from HalfNormal(scale) sds (``sd_x`` for one
    covariate, an LKJ(2) Cholesky factor ``chol_x`` otherwise); returns (mu_x, Sigma_x)."""
    mu_x = pm.Normal("mu_x", 0.0, scale, dims="covariate")
    if d == 1:
        sd_x = pm.HalfNormal("sd_x", scale, dims="covariate")
        return mu_x, pt.reshape(sd_x**2, (1, 1))
    chol, _, _ = pm.LKJCholeskyCov(
        "chol_x", n=d, eta=2.0, sd_dist=pm.HalfNormal.dist(scale, shape=d), compute_corr=True
    )
    return mu_x, pt.specify_shape(pt.dot(chol, chol.T), (d, d))


def covariate_draws(posterior, d: int):
    """The posterior draws of (mu_x, Sigma_x) of :func:`covariate_prior`: arrays (..., d) and (..., d, d)."""
    if d == 1:
        return posterior["mu_x"].values, posterior["sd_x"].values[..., None] ** 2
    sd, corr = posterior["chol_x_stds"].values, posterior["chol_x_corr"].values
    return posterior["mu_x"].values, sd[..., :, None] * corr * sd[..., None, :]


def statistics_likelihood(pm, n: int, m, V, observed, noise_scale, centring: str = "prior"):
    """Released sums of n records, T ~ N(n m, n V) by the central limit theorem, with Laplace(noise_scale) noise
    around it; observed directly (an MvNormal) when ``noise_scale`` is None. Dims "statistic".

    T is a deterministic function of standardized latents ``z``: ``centring="prior"`` writes T = n m + L z
    (L L' = n V, z ~ N(0, I)), right where the noise swamps T's own spread; ``centring="release"`` writes
    T = a + C z with a, C C' the mean and covariance of T given the release were the Laplace noise normal of the
    same variance (2 b^2), and puts the exact density of T (the normal law, the Jacobian |C|) on z, so z stays
    standardized whether the noise or T's spread dominates a coordinate.
    """
    k = len(pm.modelcontext(None).coords["statistic"])
    cov = n * V + 1e-9 * pt.eye(k)
    factor = pt.linalg.cholesky(cov)
    if noise_scale is None:
        return pm.MvNormal("s", mu=n * m, chol=factor, observed=observed, dims="statistic")
    if centring == "prior":
        z = pm.Normal("z", 0.0, 1.0, dims="statistic")
        exact = pm.Deterministic("T", n * m + pt.dot(factor, z), dims="statistic")
    else:
        gain = pt.linalg.solve(cov + pt.diag(2.0 * np.asarray(noise_scale) ** 2), cov, assume_a="pos")
        posterior_cov = cov - pt.dot(cov, gain)
        root = pt.linalg.cholesky(0.5 * (posterior_cov + posterior_cov.T) + 1e-9 * pt.eye(k))
        z = pm.Flat("z", dims="statistic")
        exact = pm.Deterministic("T", n * m + pt.dot(gain.T, observed - n * m) + pt.dot(root, z), dims="statistic")
        law = pm.logp(pm.MvNormal.dist(mu=n * m, chol=factor), exact)
        pm.Potential("T_law", law + pt.sum(pt.log(pt.diag(root))))
    return pm.Laplace("s", mu=exact, b=noise_scale, observed=observed, dims="statistic")


def sample_dense(twin, draws, tune, chains, random_seed, kwargs):
    """pm.sample on ``twin`` with a dense mass matrix (``init="jitter+adapt_full"``) unless ``kwargs`` say
    otherwise; no progress bar, no convergence checks."""
    import warnings

    import pymc as pm

    from ..pymc import quiet_blas_warning

    kwargs = {"init": "jitter+adapt_full", "progressbar": False, "compute_convergence_checks": False, **kwargs}
    # PyMC compiles the initial point's function (a scan, from the LKJ prior) on PyTensor's C linker, which warns
    # where a pip install has no BLAS: quiet_blas_warning, unless the user chose the C backend
    with twin, warnings.catch_warnings(), quiet_blas_warning():
        warnings.filterwarnings("ignore", message="QuadPotentialFullAdapt is an experimental feature")
        return pm.sample(draws=draws, tune=tune, chains=chains, random_seed=random_seed, **kwargs)

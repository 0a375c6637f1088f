r"""Linear regression from privatized sufficient statistics (noise-aware, normal approximation).

Each of n records is a covariate vector x_r (d coordinates) and a response y_r, clipped to a public box
(x_rj in [a_j, b_j], y_r in [a_y, b_y]). The curator releases the sufficient statistics of least squares
with an intercept,

.. math::

    T = \sum_r g(x_r, y_r), \qquad g = (x_j,\ y,\ x_j x_k\ (j \le k),\ x_j y,\ y^2),

that is sum(x), sum(y), X'X, X'y and y'y (n is public under ``"replace"`` neighbours), each coordinate
with its own Laplace noise: s_i = T_i + Laplace(Delta_i / epsilon), Delta_i = s_i^{(1)} / w_i where
s_i^{(1)} is the exact sensitivity of T_i
(:func:`~ppdinfer.privacy.sufficient_statistics.regression_sensitivity`) and the shares w_i of epsilon
sum to one (equal by default), so the whole release is epsilon-DP.

The model (Bernstein & Sheldon's noise-aware regression):

.. math::

    x_r \sim N(\mu_x, \Sigma_x), \quad y_r \mid x_r \sim N(\beta_0 + x_r^\top \beta_1, \sigma^2), \qquad
    T \mid \theta \approx N(n \, m(\theta), n \, V(\theta)), \qquad s \mid T \sim T + \mathrm{Laplace}.

m and V are the mean and covariance of one record's g, in closed form: with w = (1, x, y) Gaussian of mean
c and covariance C (C zero in the constant coordinate), E[w_j w_k] = C_jk + c_j c_k and

.. math::

    \mathrm{Cov}(w_j w_k, w_l w_m) = c_j c_l C_{km} + c_j c_m C_{kl} + c_k c_l C_{jm} + c_k c_m C_{jl}
        + C_{jl} C_{km} + C_{jm} C_{kl}

(Isserlis' theorem on the centred part). The central limit theorem makes T approximately normal; the
Laplace noise is kept exactly.

Clipping: the closed-form moments are those of the unclipped Gaussian records, so they hold only where
clipping leaves almost every record alone. :meth:`LinearRegressionModel.clipped_fraction` bounds the
fraction of clipped records at any theta (a union bound over the coordinates), and
:meth:`LinearRegressionModel.fit` checks it at every posterior draw, warning (``ClippingWarning``) where
its posterior mean exceeds ``clip_tolerance``: there the approximation's statistic moments are biased.

PyMC twin (:meth:`LinearRegressionModel.to_pymc`): T is written non-centred, T = n m + L z with
L L' = n V and z ~ N(0, I), so NUTS moves theta and the standardized statistics z; with a dense mass
matrix (``init="jitter+adapt_full"``) it mixes without hand tuning. By default (``parametrization=
"joint"``) theta is the joint normal law of (x, y), mean mu ~ N(0, s) and an LKJ(2) Cholesky covariance
with HalfNormal(s) standard deviations, and beta and sigma are its regression of y on x (deterministic):
the statistics inform these moments almost directly, where the regression coordinates (beta, sigma) bend
the posterior along sigma^2 + beta_1' Sigma_x beta_1 = Var(y). ``parametrization="regression"`` puts
Normal(0, s) priors on beta and mu_x, HalfNormal(s) on sigma and the sds of x. Without noise (``epsilon=None``) the
statistics are observed directly, T ~ N(n m, n V).

Sources: G. Bernstein and D. Sheldon, "Differentially private Bayesian linear regression," NeurIPS 2019 (the
noise-aware model); N. Ju, J. Awan, R. Gong and V. Rao, "Data augmentation MCMC for Bayesian inference from
privatized data," NeurIPS 2022 (the same task, records as latents).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from ..mechanisms import Laplace
from ..privacy.sufficient_statistics import regression_sensitivity
from ..rng import as_generator
from ..validation import finite_array, positive_finite, positive_int

__all__ = [
    "ClippingWarning",
    "LinearRegressionModel",
    "budget",
    "model",
    "public_information",
    "record_moments",
    "statistics",
    "synthetic_records",
    "warn_clipping",
]


class ClippingWarning(UserWarning):
    """Clipping touches more records than the normal approximation's moments allow for.

    Examples
    --------
    >>> from ppdinfer.models.linear_regression import ClippingWarning
    >>> issubclass(ClippingWarning, UserWarning)
    True
    """


def _pairs(d: int) -> list[tuple[int, int]]:
    """The products w_j w_k of w = (1, x_1..x_d, y) released, in the order of ``regression_sensitivity``
    with an intercept column, less (0, 0) (the count n, public)."""
    p = d + 2
    return [(j, k) for j in range(p) for k in range(j, p)][1:]


def record_moments(beta, sigma, mu_x, cov_x):
    r"""Mean m and covariance V of one record's statistics g(x, y) under the Gaussian model (no clipping).

    Works on numpy arrays and on pytensor tensors alike (the PyMC twin calls it symbolically).

    Parameters
    ----------
    beta : array_like, shape (d + 1,)
        Intercept, then the d slopes.
    sigma : float
        The residual standard deviation.
    mu_x : array_like, shape (d,)
        Mean of x.
    cov_x : array_like, shape (d, d)
        Covariance of x.

    Returns
    -------
    (m, V)
        m of shape (K,), V of shape (K, K), K = 2 d + 1 + d (d + 1) / 2 + 1, statistics in the order of
        :func:`statistics`.

    Examples
    --------
    >>> import numpy as np
    >>> m, V = record_moments([0.0, 1.0], 1.0, [0.0], [[1.0]])   # x ~ N(0, 1), y = x + N(0, 1)
    >>> m.round(3).tolist()                                       # E x, E y, E x^2, E xy, E y^2
    [0.0, 0.0, 1.0, 1.0, 2.0]
    >>> float(V[4, 4])                                            # Var(y^2) = 2 Var(y)^2
    8.0
    """
    import pytensor.tensor as pt

    symbolic = any(isinstance(v, pt.variable.TensorVariable) for v in (beta, sigma, mu_x, cov_x))
    xp = pt if symbolic else np
    if not symbolic:
        beta, mu_x, cov_x = (np.asarray(v, dtype=float) for v in (beta, mu_x, cov_x))
        sigma = float(sigma)
    d = int(mu_x.shape[0]) if not symbolic else int(cov_x.type.shape[0])
    slopes = beta[1:]
    cov_xy = xp.dot(cov_x, slopes)
    var_y = xp.dot(slopes, cov_xy) + sigma**2
    mean = xp.concatenate([xp.ones(1), mu_x, xp.reshape(beta[0] + xp.dot(mu_x, slopes), (1,))])
    top = xp.concatenate([cov_x, xp.reshape(cov_xy, (d, 1))], axis=1)
    bottom = xp.reshape(xp.concatenate([cov_xy, xp.reshape(var_y, (1,))]), (1, d + 1))
    inner = xp.concatenate([top, bottom], axis=0)
    cov = xp.concatenate(
        [xp.zeros((1, d + 2)), xp.concatenate([xp.zeros((d + 1, 1)), inner], axis=1)],
        axis=0,
    )
    pairs = np.array(_pairs(d))
    j, k = pairs[:, 0], pairs[:, 1]
    m = cov[j, k] + mean[j] * mean[k]
    J, L = np.meshgrid(j, j, indexing="ij")
    K, M = np.meshgrid(k, k, indexing="ij")
    V = (
        mean[J] * mean[L] * cov[K, M]
        + mean[J] * mean[M] * cov[K, L]
        + mean[K] * mean[L] * cov[J, M]
        + mean[K] * mean[M] * cov[J, L]
        + cov[J, L] * cov[K, M]
        + cov[J, M] * cov[K, L]
    )
    return m, V


def statistics(x, y, x_bounds, y_bounds) -> np.ndarray:
    """The released statistics of records (x, y) after clipping: sum(x), sum(y), X'X, X'y, y'y.

    Order: sum x_j (j = 1..d), sum y, sum x_j x_k (j <= k, row by row), sum x_j y, sum y^2 (the order
    of :func:`~ppdinfer.privacy.sufficient_statistics.regression_sensitivity` with an intercept column,
    the count left out).

    Examples
    --------
    >>> statistics([[1.0], [2.0], [9.0]], [1.0, 0.0, 1.0], [(0, 3)], (-1, 1)).tolist()
    [6.0, 2.0, 14.0, 4.0, 2.0]
    """
    x = np.asarray(x, dtype=float)
    x = x.reshape(len(x), -1)
    x_bounds = finite_array(x_bounds, "x_bounds").reshape(-1, 2)
    y_bounds = finite_array(y_bounds, "y_bounds")
    if x_bounds.shape[0] != x.shape[1]:
        raise ValueError(f"x_bounds has {x_bounds.shape[0]} rows for {x.shape[1]} covariates")
    x = np.clip(x, x_bounds[:, 0], x_bounds[:, 1])
    y = np.clip(np.asarray(y, dtype=float).reshape(-1), y_bounds[0], y_bounds[1])
    w = np.column_stack([np.ones(len(x)), x, y])
    pairs = np.array(_pairs(x.shape[1]))
    return (w[:, pairs[:, 0]] * w[:, pairs[:, 1]]).sum(axis=0)


class LinearRegressionModel:
    """Regression from Laplace-noised sufficient statistics (see the module docstring for the math).

    Parameters
    ----------
    n : int
        Number of records (public).
    x_bounds : array_like, shape (d, 2)
        The clipping box of the covariates.
    y_bounds : array_like, shape (2,)
        The clipping interval of the response.
    epsilon : float or None
        The privacy level; None releases the statistics without noise.
    shares : array_like or None
        The shares of epsilon per statistic (summing to at most one); None: equal.
    prior_scale : float
        The priors' scale s (see ``parametrization``).
    parametrization : {"joint", "regression"}
        theta as the joint normal law of (x, y) (mean ~ N(0, s), LKJ(2) correlations, HalfNormal(s)
        sds; beta and sigma derived), or as beta ~ N(0, s), sigma ~ HalfNormal(s), mu_x ~ N(0, s) and
        the sds of x ~ HalfNormal(s).

    Examples
    --------
    >>> from ppdinfer.models import linear_regression
    >>> model = linear_regression.model(n=500, epsilon=1.0)
    >>> model.names
    ('x0', 'y', 'x0*x0', 'x0*y', 'y*y')
    >>> model.noise_scale.round(1).tolist()       # Laplace scales: sensitivity / share / epsilon
    [40.0, 60.0, 80.0, 240.0, 180.0]
    """

    def __init__(self, n, x_bounds, y_bounds, epsilon, shares=None, prior_scale=10.0, parametrization="joint"):
        if parametrization not in ("joint", "regression"):
            raise ValueError(f"parametrization must be 'joint' or 'regression', got {parametrization!r}")
        self.parametrization = parametrization
        self.n = positive_int(n, "n")
        self.x_bounds = finite_array(x_bounds, "x_bounds").reshape(-1, 2)
        self.y_bounds = finite_array(y_bounds, "y_bounds")
        self.d = self.x_bounds.shape[0]
        design = np.vstack([[1.0, 1.0], self.x_bounds])
        self.sensitivity = regression_sensitivity(design, self.y_bounds, neighbours="replace")
        self.names = tuple(_rename(name, self.d) for name in self.sensitivity.names[1:])
        per_statistic = self.sensitivity.per_statistic[1:]
        self.epsilon, self.mechanism, self.noise_scale = budget(per_statistic, shares, epsilon)
        self.prior_scale = positive_finite(prior_scale, "prior_scale")

    def release(self, x, y, random_seed=None) -> np.ndarray:
        """The curator's release: the clipped statistics plus Laplace noise (none if epsilon is None).

        Examples
        --------
        >>> from ppdinfer.models import linear_regression
        >>> model = linear_regression.model(n=500, epsilon=1.0)
        >>> x, y = linear_regression.synthetic_records(500, random_seed=0)
        >>> model.release(x, y, random_seed=1).shape
        (5,)
        """
        if len(x) != self.n:
            raise ValueError(f"expected {self.n} records, got {len(x)}")
        exact = statistics(x, y, self.x_bounds, self.y_bounds)
        return exact if self.mechanism is None else self.mechanism.release(exact, random_seed=random_seed)

    def clipped_fraction(self, beta, sigma, mu_x, cov_x):
        """An upper bound on the fraction of records clipped at theta (union bound over coordinates).

        Vectorized over leading axes of draws: beta (..., d + 1), sigma (...), mu_x (..., d) and cov_x
        (..., d, d); each coordinate's normal margin gives its probability of leaving the box.

        Examples
        --------
        >>> from ppdinfer.models import linear_regression
        >>> model = linear_regression.model(n=500, epsilon=1.0)      # x in [-4, 4], y in [-6, 6]
        >>> float(model.clipped_fraction([0.5, 1.0], 1.0, [0.0], [[1.0]])) < 1e-3
        True
        """
        beta, sigma, mu_x, cov_x = (np.asarray(v, dtype=float) for v in (beta, sigma, mu_x, cov_x))
        sd_x = np.sqrt(np.diagonal(cov_x, axis1=-2, axis2=-1))
        slopes = beta[..., 1:]
        mean_y = beta[..., 0] + (mu_x * slopes).sum(axis=-1)
        sd_y = np.sqrt(np.einsum("...j,...jk,...k->...", slopes, cov_x, slopes) + sigma**2)
        out = _outside(mu_x, sd_x, self.x_bounds[:, 0], self.x_bounds[:, 1]).sum(axis=-1)
        return out + _outside(mean_y, sd_y, self.y_bounds[0], self.y_bounds[1])

    def to_pymc(self, released, *, mutable: bool = False):
        """The PyMC twin (non-centred statistics; see the module docstring).

        Free variables: ``mu`` and ``chol`` (the joint law of (x, y); ``beta``, ``sigma``, ``mu_x`` are
        deterministic), or with ``parametrization="regression"`` ``beta`` (intercept, slopes), ``sigma``,
        ``mu_x``, the x covariance (``sd_x`` for d = 1, ``chol_x`` an LKJ Cholesky factor otherwise); and
        ``z`` (the standardized statistics; absent without noise). ``mutable=True`` holds the release in ``pm.Data("released")``, so that one model
        is refitted to new releases by ``pm.set_data({"released": new})``.

        Examples
        --------
        >>> from ppdinfer.models import linear_regression
        >>> model = linear_regression.model(n=500, epsilon=1.0)
        >>> twin = model.to_pymc([0.0, 250.0, 500.0, 500.0, 1200.0])
        >>> [v.name for v in twin.free_RVs]
        ['mu', 'chol', 'z']
        >>> regression = linear_regression.model(n=500, epsilon=1.0, parametrization="regression")
        >>> [v.name for v in regression.to_pymc([0.0, 250.0, 500.0, 500.0, 1200.0]).free_RVs]
        ['beta', 'sigma', 'mu_x', 'sd_x', 'z']
        """
        import pymc as pm
        import pytensor.tensor as pt

        from ._pymc_helpers import covariate_prior, statistics_likelihood

        released = finite_array(released, "released")
        if released.shape != (len(self.names),):
            raise ValueError(f"released must hold the {len(self.names)} statistics {self.names}, got {released.shape}")
        scale = self.prior_scale
        with pm.Model(
            coords={
                "coef": ["intercept"] + [f"x{j}" for j in range(self.d)],
                "covariate": [f"x{j}" for j in range(self.d)],
                "statistic": list(self.names),
                "variable": [f"x{j}" for j in range(self.d)] + ["y"],
            }
        ) as twin:
            if self.parametrization == "joint":
                beta, sigma, mu_x, cov = self._joint_prior(pm, pt)
            else:
                beta = pm.Normal("beta", 0.0, scale, dims="coef")
                sigma = pm.HalfNormal("sigma", scale)
                mu_x, cov = covariate_prior(pm, self.d, scale)
            m, V = record_moments(beta, sigma, mu_x, cov)
            observed = pm.Data("released", released, dims="statistic") if mutable else released
            statistics_likelihood(pm, self.n, m, V, observed, None if self.mechanism is None else self.noise_scale)
        return twin

    def _joint_prior(self, pm, pt):
        """(x, y) jointly normal: mu ~ N(0, scale), an LKJ(2) Cholesky covariance with HalfNormal(scale) sds;
        beta and sigma are its regression of y on x (deterministic)."""
        d, scale = self.d, self.prior_scale
        mu = pm.Normal("mu", 0.0, scale, dims="variable")
        chol, _, _ = pm.LKJCholeskyCov(
            "chol", n=d + 1, eta=2.0, sd_dist=pm.HalfNormal.dist(scale, shape=d + 1), compute_corr=True
        )
        cov_w = pt.specify_shape(pt.dot(chol, chol.T), (d + 1, d + 1))
        cov_x, cov_xy = cov_w[:d, :d], cov_w[:d, d]
        slopes = cov_xy / cov_x[0, 0] if d == 1 else pt.linalg.solve(cov_x, cov_xy, assume_a="pos")
        intercept = mu[d] - pt.dot(mu[:d], slopes)
        beta = pm.Deterministic("beta", pt.concatenate([pt.reshape(intercept, (1,)), slopes]), dims="coef")
        sigma = pm.Deterministic("sigma", pt.sqrt(cov_w[d, d] - pt.dot(cov_xy, slopes)))
        mu_x = pm.Deterministic("mu_x", mu[:d], dims="covariate")
        return beta, sigma, mu_x, cov_x

    def fit(self, released, *, draws=1000, tune=1000, chains=2, random_seed=None, clip_tolerance=1e-3, **kwargs):
        """NUTS on the twin with a dense mass matrix; checks clipping at every draw (``ClippingWarning``).

        Returns PyMC's DataTree; its attrs hold ``clipped_fraction`` (the posterior mean of the bound).

        Examples
        --------
        >>> from ppdinfer.models import linear_regression
        >>> model = linear_regression.model(n=500, epsilon=None)
        >>> x, y = linear_regression.synthetic_records(500, random_seed=0)
        >>> fit = model.fit(model.release(x, y), draws=200, tune=300, chains=1, random_seed=1)
        >>> bool(abs(float(fit["posterior"]["beta"].sel(coef="x0").mean()) - 1.0) < 0.1)
        True
        """
        from ._pymc_helpers import sample_dense

        fit = sample_dense(self.to_pymc(released), draws, tune, chains, random_seed, kwargs)
        self.check_clipping(fit, clip_tolerance)
        return fit

    def check_clipping(self, fit, clip_tolerance=1e-3) -> float:
        """The posterior mean of :meth:`clipped_fraction`; warns (``ClippingWarning``) above ``clip_tolerance``.

        Examples
        --------
        >>> import warnings
        >>> from ppdinfer.models import linear_regression
        >>> model = linear_regression.model(n=500, epsilon=None, x_bounds=[(-1, 1)])   # a tight box
        >>> x, y = linear_regression.synthetic_records(500, random_seed=0)
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     fit = model.fit(model.release(x, y), draws=100, tune=200, chains=1, random_seed=1)
        >>> any(issubclass(w.category, linear_regression.ClippingWarning) for w in caught)
        True
        """
        post = fit["posterior"]
        if "chol_stds" in post:  # the joint parametrization: every coordinate's margin at once
            mean, sd = post["mu"].values, post["chol_stds"].values
            bounds = np.vstack([self.x_bounds, self.y_bounds])
            fraction = float(np.mean(_outside(mean, sd, bounds[:, 0], bounds[:, 1]).sum(axis=-1)))
            return warn_clipping(fit, fraction, clip_tolerance)
        from ._pymc_helpers import covariate_draws

        mu_x, cov_x = covariate_draws(post, self.d)
        fraction = float(np.mean(self.clipped_fraction(post["beta"].values, post["sigma"].values, mu_x, cov_x)))
        return warn_clipping(fit, fraction, clip_tolerance)


def warn_clipping(fit, fraction: float, clip_tolerance: float) -> float:
    """Record ``fraction`` (the posterior mean of a clipping bound) in ``fit.attrs["clipped_fraction"]`` and warn
    (``ClippingWarning``) where it exceeds ``clip_tolerance``; returns it.

    Examples
    --------
    >>> import xarray as xr
    >>> from ppdinfer.models.linear_regression import warn_clipping
    >>> warn_clipping(xr.DataTree(), 1e-5, 1e-3)
    1e-05
    """
    fit.attrs["clipped_fraction"] = fraction
    if fraction > clip_tolerance:
        warnings.warn(
            f"up to {fraction:.3g} of the records are clipped at the posterior (tolerance {clip_tolerance:g}): "
            "the normal approximation's moments ignore clipping and are biased there; widen the box",
            ClippingWarning,
            stacklevel=3,
        )
    return fraction


def budget(per_statistic, shares, epsilon):
    """epsilon split over the statistics: (epsilon, the Laplace mechanism, its scales per statistic).

    Statistic i gets the share w_i of epsilon (``shares``, positive, summing to at most one; None: equal), so
    noise of scale ``per_statistic[i] / (w_i epsilon)`` makes the whole vector epsilon-DP. ``epsilon`` None:
    (None, None, zeros), the statistics released exactly.

    Examples
    --------
    >>> from ppdinfer.models.linear_regression import budget
    >>> epsilon, mechanism, scale = budget([1.0, 2.0], None, 0.5)
    >>> scale.tolist()
    [4.0, 8.0]
    """
    per_statistic = np.asarray(per_statistic, dtype=float)
    k = per_statistic.size
    shares = np.full(k, 1.0 / k) if shares is None else finite_array(shares, "shares")
    if shares.shape != (k,) or np.any(shares <= 0) or shares.sum() > 1 + 1e-12:
        raise ValueError(f"shares must be {k} positive numbers summing to at most 1, got {shares!r}")
    if epsilon is None:
        return None, None, np.zeros(k)
    epsilon = positive_finite(epsilon, "epsilon")
    return epsilon, Laplace(epsilon, sensitivity=per_statistic / shares), per_statistic / shares / epsilon


def _rename(name: str, d: int) -> str:
    """regression_sensitivity's names with an intercept column x0 -> the released statistics' names."""
    parts = [p for p in name.split("*") if p != "x0"]
    parts = [p if p == "y" else f"x{int(p[1:]) - 1}" for p in parts]
    return "*".join(parts)


def _outside(mean, sd, lower, upper):
    return stats.norm.cdf((lower - mean) / sd) + stats.norm.sf((upper - mean) / sd)


def model(
    n=2000,
    epsilon=1.0,
    x_bounds=((-4.0, 4.0),),
    y_bounds=(-6.0, 6.0),
    shares=None,
    prior_scale=10.0,
    parametrization="joint",
):
    """The regression model for ``n`` records with one covariate by default, x in [-4, 4], y in [-6, 6].

    Examples
    --------
    >>> from ppdinfer.models import linear_regression
    >>> model = linear_regression.model(n=2000, epsilon=1.0)
    >>> model.d, len(model.names), model.sensitivity.per_statistic[1:].tolist()
    (1, 5, [8.0, 12.0, 16.0, 48.0, 36.0])
    """
    return LinearRegressionModel(
        n, x_bounds, y_bounds, epsilon, shares=shares, prior_scale=prior_scale, parametrization=parametrization
    )


def public_information(n, x_bounds, y_bounds) -> dict:
    """z for the model: the number of records and the clipping box, validated.

    Examples
    --------
    >>> from ppdinfer.models import linear_regression
    >>> linear_regression.public_information(2000, [(-4, 4)], (-6, 6))["n"]
    2000
    """
    x_bounds = finite_array(x_bounds, "x_bounds").reshape(-1, 2)
    y_bounds = finite_array(y_bounds, "y_bounds")
    if np.any(x_bounds[:, 0] >= x_bounds[:, 1]) or y_bounds.shape != (2,) or y_bounds[0] >= y_bounds[1]:
        raise ValueError("bounds must be (lower, upper) pairs with lower < upper")
    return {"n": positive_int(n, "n"), "x_bounds": x_bounds, "y_bounds": y_bounds}


def synthetic_records(n, beta=(0.5, 1.0), sigma=1.0, mu_x=(0.0,), cov_x=((1.0,),), random_seed=None):
    """n records from the model: x ~ N(mu_x, cov_x), y = beta_0 + x beta_1 + N(0, sigma^2).

    Examples
    --------
    >>> from ppdinfer.models import linear_regression
    >>> x, y = linear_regression.synthetic_records(4, random_seed=0)
    >>> x.shape, y.shape
    ((4, 1), (4,))
    """
    rng = as_generator(random_seed)
    beta = np.asarray(beta, dtype=float)
    x = rng.multivariate_normal(np.asarray(mu_x, dtype=float), np.asarray(cov_x, dtype=float), size=n)
    y = beta[0] + x @ beta[1:] + sigma * rng.standard_normal(n)
    return x, y

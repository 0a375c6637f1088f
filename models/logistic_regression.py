r"""Logistic regression from privatized sufficient statistics (noise-aware, normal approximation by quadrature).

Each of n records is a covariate vector x_r (d coordinates, clipped to a public box x_rj in [a_j, b_j]) and a
binary response y_r in {0, 1}. The curator releases the sums

.. math::

    T = \sum_r g(x_r, y_r), \qquad g = (x_j,\ y,\ x_j x_k\ (j \le k),\ x_j y),

that is sum(x), sum(y), X'X and X'y (n is public under ``"replace"`` neighbours; y'y = sum(y) is not released
twice), each coordinate with its own Laplace noise at a share of epsilon, the sensitivities those of
:func:`~ppdinfer.privacy.sufficient_statistics.regression_sensitivity` with y in [0, 1]
(:func:`~ppdinfer.models.linear_regression.budget`). These are the statistics of the linear model less y'y;
for the logistic likelihood they are not sufficient, but they are what an agency releases, and the model
reads them for what they are.

The model:

.. math::

    x_r \sim N(\mu_x, \Sigma_x), \quad y_r \mid x_r \sim \mathrm{Bernoulli}(\mathrm{logit}^{-1}(\beta_0 +
    x_r^\top \beta_1)), \qquad T \mid \theta \approx N(n \, m(\theta), n \, V(\theta)), \qquad
    s \mid T \sim T + \mathrm{Laplace}.

m and V, the mean and covariance of one record's g, have no closed form. With p(x) = logit^{-1}(beta_0 + x'beta_1)
and g_1(x), g_0(x) the statistics of a record x with y = 1 and y = 0, the response is summed out exactly,

.. math::

    m = E_x[p\, g_1 + (1 - p)\, g_0], \qquad V = E_x[p\, (g_1 - m)(g_1 - m)^\top + (1 - p)(g_0 - m)(g_0 - m)^\top],

and the expectation over x by a tensor Gauss-Hermite rule on x = mu_x + L xi (L L' = Sigma_x), ``nodes`` points
per coordinate (:func:`record_moments`, numpy or pytensor: the nodes are constants, so the rule is part of the
PyMC graph and NUTS differentiates through it). The rule is exact for the polynomial parts (degree <= 4) and
converges geometrically for the logistic ones; :meth:`LogisticRegressionModel.check_quadrature` checks it at
posterior draws against twice the nodes and warns (``QuadratureWarning``) where it matters.

As in :mod:`~ppdinfer.models.linear_regression`, the moments ignore clipping (``ClippingWarning`` when the
posterior puts more than ``clip_tolerance`` of x outside the box) and NUTS adapts a dense mass matrix. T is a
function of standardized latents z, T = a + C z, with a and C C' the mean and covariance of T given theta and the
release were the Laplace noise normal of the same variance, and T's exact density (its normal law and the
Jacobian) on z: the noise on sum(y) is small beside sum(y)'s own spread, where it swamps the others, and z stays
standardized either way (``centring="prior"``: the linear model's T = n m + L z). Priors: beta ~ N(0, s), mu_x ~ N(0, s), the sds of x HalfNormal(s) (an LKJ(2)
Cholesky factor for d > 1), s = ``prior_scale``.

:func:`~ppdinfer.models.regression_records.fit_records` samples the exact posterior (one covariate, clipping
included) by record-level data augmentation, the reference the approximation is measured against.

Sources: N. Kulkarni, J. Jälkö, A. Koskela, S. Kaski and A. Honkela, "Differentially private Bayesian inference for
generalized linear models," ICML 2021 (noise-aware inference for logistic and Poisson regression from a noisy sum
of summary statistics); G. Bernstein and D. Sheldon, "Differentially private Bayesian linear regression," NeurIPS
2019 (the statistics' normal approximation given theta); J. Huggins, R. Adams and T. Broderick, "PASS-GLM:
polynomial approximate sufficient statistics for scalable Bayesian GLM inference," NeurIPS 2017 (another road:
approximate the log-likelihood by a polynomial whose sufficient statistics are released).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
from scipy import special

from ..privacy.sufficient_statistics import regression_sensitivity
from ..rng import as_generator
from ..validation import finite_array, positive_finite, positive_int
from . import linear_regression
from .linear_regression import _outside, _pairs, _rename, budget, warn_clipping

__all__ = [
    "LogisticRegressionModel",
    "QuadratureWarning",
    "model",
    "public_information",
    "record_moments",
    "statistics",
    "synthetic_records",
]

#: Gauss-Hermite nodes per covariate by default.
NODES = 24
#: The most nodes per covariate of a rule (numpy's Gauss-Hermite weights overflow beyond); a model takes half,
#: since its quadrature check doubles them.
MAX_NODES = 300


class QuadratureWarning(UserWarning):
    """The Gauss-Hermite rule's moments move, at posterior draws, when the nodes are doubled.

    Examples
    --------
    >>> from ppdinfer.models.logistic_regression import QuadratureWarning
    >>> issubclass(QuadratureWarning, UserWarning)
    True
    """


def _nodes(nodes, most: int = MAX_NODES) -> int:
    nodes = positive_int(nodes, "nodes")
    if nodes > most:
        raise ValueError(f"nodes must be at most {most}, got {nodes}")
    return nodes


def _rule(d: int, nodes: int):
    """The tensor Gauss-Hermite rule for N(0, I_d): points (nodes^d, d) and weights summing to one."""
    points, weights = np.polynomial.hermite_e.hermegauss(nodes)
    grid = np.array(list(itertools.product(points, repeat=d)))
    w = np.prod(np.array(list(itertools.product(weights, repeat=d))), axis=1)
    return grid, w / w.sum()


def record_moments(beta, mu_x, cov_x, nodes: int = NODES):
    r"""Mean m and covariance V of one record's statistics g(x, y) (module docstring), by Gauss-Hermite.

    Works on numpy arrays and on pytensor tensors alike (the PyMC twin calls it symbolically).

    Parameters
    ----------
    beta : array_like, shape (d + 1,)
        Intercept, then the d slopes (log odds).
    mu_x : array_like, shape (d,)
        Mean of x.
    cov_x : array_like, shape (d, d)
        Covariance of x.
    nodes : int
        Gauss-Hermite nodes per covariate (``nodes ** d`` points in all).

    Returns
    -------
    (m, V)
        m of shape (K,), V of shape (K, K), K = 2 d + 1 + d (d + 1) / 2, in the order of :func:`statistics`.

    Examples
    --------
    >>> m, V = record_moments([0.0, 1.0], [0.0], [[1.0]])    # x ~ N(0, 1), P(y = 1 | x) = logit^-1(x)
    >>> m.round(4).tolist()                                  # E x, E y (symmetry), E x^2, E x y
    [0.0, 0.5, 1.0, 0.2066]
    >>> round(float(V[1, 1]), 12)                            # Var(y) = E y (1 - E y)
    0.25
    """
    import pytensor.tensor as pt

    symbolic = any(isinstance(v, pt.variable.TensorVariable) for v in (beta, mu_x, cov_x))
    nodes = _nodes(nodes)
    if symbolic:
        xp, d, expit, cholesky = pt, int(cov_x.type.shape[0]), pt.sigmoid, pt.linalg.cholesky
    else:
        beta, mu_x, cov_x = (np.asarray(v, dtype=float) for v in (beta, mu_x, cov_x))
        xp, d, expit, cholesky = np, mu_x.shape[0], special.expit, np.linalg.cholesky
    xi, w = _rule(d, nodes)
    root = xp.sqrt(cov_x) if d == 1 else cholesky(cov_x)
    x = mu_x + xp.dot(xi, root.T)
    p = expit(beta[0] + xp.dot(x, beta[1:]))
    ones = xp.ones((xi.shape[0], 1))
    pairs = np.array(_pairs(d)[:-1])
    w1 = xp.concatenate([ones, x, ones], axis=1)
    w0 = xp.concatenate([ones, x, 0.0 * ones], axis=1)
    g1 = w1[:, pairs[:, 0]] * w1[:, pairs[:, 1]]
    g0 = w0[:, pairs[:, 0]] * w0[:, pairs[:, 1]]
    m = xp.dot(w * p, g1) + xp.dot(w * (1.0 - p), g0)
    c1, c0 = g1 - m, g0 - m
    V = xp.dot((c1 * (w * p)[:, None]).T, c1) + xp.dot((c0 * (w * (1.0 - p))[:, None]).T, c0)
    return m, V


def statistics(x, y, x_bounds) -> np.ndarray:
    """The released statistics of records (x, y) after clipping x: sum(x), sum(y), X'X, X'y.

    Order: sum x_j (j = 1..d), sum y, sum x_j x_k (j <= k, row by row), sum x_j y: those of
    :func:`~ppdinfer.models.linear_regression.statistics` less y'y.

    Examples
    --------
    >>> statistics([[1.0], [2.0], [9.0]], [1, 0, 1], [(0, 3)]).tolist()
    [6.0, 2.0, 14.0, 4.0]
    """
    y = finite_array(y, "y").reshape(-1)
    if np.any((y != 0) & (y != 1)):
        raise ValueError("y must be binary (0 or 1)")
    return linear_regression.statistics(x, y, x_bounds, (0.0, 1.0))[:-1]


class LogisticRegressionModel:
    """Logistic regression from Laplace-noised sufficient statistics (see the module docstring for the math).

    Parameters
    ----------
    n : int
        Number of records (public).
    x_bounds : array_like, shape (d, 2)
        The clipping box of the covariates.
    epsilon : float or None
        The privacy level; None releases the statistics without noise.
    shares : array_like or None
        The shares of epsilon per statistic (summing to at most one); None: equal.
    prior_scale : float
        The priors' scale s: beta ~ N(0, s), mu_x ~ N(0, s), the sds of x ~ HalfNormal(s).
    nodes : int
        Gauss-Hermite nodes per covariate for the moments.
    centring : {"release", "prior"}
        How the twin writes the exact statistics T from standardized latents z: centred on T's law given the
        release (the default; z standardized whether the noise or T's own spread dominates) or on its law given
        theta, T = n m + L z (the linear model's choice; see ``_pymc_helpers.statistics_likelihood``).

    Examples
    --------
    >>> from ppdinfer.models import logistic_regression
    >>> model = logistic_regression.model(n=500, epsilon=1.0)
    >>> model.names
    ('x0', 'y', 'x0*x0', 'x0*y')
    >>> model.noise_scale.round(1).tolist()       # Laplace scales: sensitivity / share / epsilon
    [32.0, 4.0, 64.0, 32.0]
    """

    def __init__(self, n, x_bounds, epsilon, shares=None, prior_scale=2.5, nodes=NODES, centring="release"):
        if centring not in ("release", "prior"):
            raise ValueError(f"centring must be 'release' or 'prior', got {centring!r}")
        self.centring = centring
        self.n = positive_int(n, "n")
        self.x_bounds = finite_array(x_bounds, "x_bounds").reshape(-1, 2)
        self.d = self.x_bounds.shape[0]
        design = np.vstack([[1.0, 1.0], self.x_bounds])
        self.sensitivity = regression_sensitivity(design, (0.0, 1.0), neighbours="replace")
        self.names = tuple(_rename(name, self.d) for name in self.sensitivity.names[1:-1])
        self.epsilon, self.mechanism, self.noise_scale = budget(self.sensitivity.per_statistic[1:-1], shares, epsilon)
        self.prior_scale = positive_finite(prior_scale, "prior_scale")
        self.nodes = _nodes(nodes, MAX_NODES // 2)

    def release(self, x, y, random_seed=None) -> np.ndarray:
        """The curator's release: the clipped statistics plus Laplace noise (none if epsilon is None).

        Examples
        --------
        >>> from ppdinfer.models import logistic_regression
        >>> model = logistic_regression.model(n=500, epsilon=1.0)
        >>> x, y = logistic_regression.synthetic_records(500, random_seed=0)
        >>> model.release(x, y, random_seed=1).shape
        (4,)
        """
        if len(x) != self.n:
            raise ValueError(f"expected {self.n} records, got {len(x)}")
        exact = statistics(x, y, self.x_bounds)
        return exact if self.mechanism is None else self.mechanism.release(exact, random_seed=random_seed)

    def clipped_fraction(self, mu_x, cov_x):
        """An upper bound on the fraction of records whose x the box clips (union bound over coordinates).

        Vectorized over leading axes of draws: mu_x (..., d), cov_x (..., d, d).

        Examples
        --------
        >>> from ppdinfer.models import logistic_regression
        >>> model = logistic_regression.model(n=500, epsilon=1.0)      # x in [-4, 4]
        >>> float(model.clipped_fraction([0.0], [[1.0]])) < 1e-4
        True
        """
        mu_x, cov_x = np.asarray(mu_x, dtype=float), np.asarray(cov_x, dtype=float)
        sd_x = np.sqrt(np.diagonal(cov_x, axis1=-2, axis2=-1))
        return _outside(mu_x, sd_x, self.x_bounds[:, 0], self.x_bounds[:, 1]).sum(axis=-1)

    def to_pymc(self, released, *, mutable: bool = False):
        """The PyMC twin: free ``beta`` (intercept, slopes), ``mu_x``, ``sd_x`` (``chol_x`` for d > 1) and ``z``
        (the standardized statistics; absent without noise). ``mutable=True`` holds the release in
        ``pm.Data("released")`` for refits by ``pm.set_data``.

        Examples
        --------
        >>> from ppdinfer.models import logistic_regression
        >>> model = logistic_regression.model(n=500, epsilon=1.0)
        >>> [v.name for v in model.to_pymc([0.0, 200.0, 500.0, 100.0]).free_RVs]
        ['beta', 'mu_x', 'sd_x', 'z']
        """
        import pymc as pm

        from ._pymc_helpers import covariate_prior, statistics_likelihood

        released = finite_array(released, "released")
        if released.shape != (len(self.names),):
            raise ValueError(f"released must hold the {len(self.names)} statistics {self.names}, got {released.shape}")
        covariates = [f"x{j}" for j in range(self.d)]
        coords = {"coef": ["intercept"] + covariates, "covariate": covariates, "statistic": list(self.names)}
        with pm.Model(coords=coords) as twin:
            beta = pm.Normal("beta", 0.0, self.prior_scale, dims="coef")
            mu_x, cov = covariate_prior(pm, self.d, self.prior_scale)
            m, V = record_moments(beta, mu_x, cov, self.nodes)
            observed = pm.Data("released", released, dims="statistic") if mutable else released
            noise = None if self.mechanism is None else self.noise_scale
            statistics_likelihood(pm, self.n, m, V, observed, noise, self.centring)
        return twin

    def fit(
        self,
        released,
        *,
        draws=1000,
        tune=1000,
        chains=2,
        random_seed=None,
        clip_tolerance=1e-3,
        quadrature_tolerance=0.05,
        **kwargs,
    ):
        """NUTS on the twin with a dense mass matrix; then :meth:`check_clipping` and :meth:`check_quadrature`.

        Returns PyMC's DataTree; its attrs hold ``clipped_fraction`` and ``quadrature_error``.

        Examples
        --------
        >>> from ppdinfer.models import logistic_regression
        >>> model = logistic_regression.model(n=2000, epsilon=None)
        >>> x, y = logistic_regression.synthetic_records(2000, random_seed=0)
        >>> fit = model.fit(model.release(x, y), draws=200, tune=300, chains=1, random_seed=1)
        >>> bool(abs(float(fit["posterior"]["beta"].sel(coef="x0").mean()) - 1.0) < 0.2)
        True
        """
        from ._pymc_helpers import sample_dense

        fit = sample_dense(self.to_pymc(released), draws, tune, chains, random_seed, kwargs)
        self.check_clipping(fit, clip_tolerance)
        self.check_quadrature(fit, quadrature_tolerance)
        return fit

    def check_clipping(self, fit, clip_tolerance=1e-3) -> float:
        """The posterior mean of :meth:`clipped_fraction`; warns (``ClippingWarning``) above ``clip_tolerance``.

        Examples
        --------
        >>> import warnings
        >>> import numpy as np, xarray as xr
        >>> from ppdinfer.models import linear_regression, logistic_regression
        >>> model = logistic_regression.model(n=2000, epsilon=1.0, x_bounds=[(-1, 1)])   # a tight box
        >>> draws = {"mu_x": (("chain", "draw", "covariate"), np.zeros((1, 2, 1))),     # x ~ N(0, 1) at the posterior
        ...          "sd_x": (("chain", "draw", "covariate"), np.ones((1, 2, 1)))}
        >>> fit = xr.DataTree.from_dict({"posterior": xr.Dataset(draws)})
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     fraction = model.check_clipping(fit)
        >>> round(fraction, 3), caught[0].category is linear_regression.ClippingWarning      # P(|x| > 1)
        (0.317, True)
        """
        from ._pymc_helpers import covariate_draws

        fraction = float(np.mean(self.clipped_fraction(*covariate_draws(fit["posterior"], self.d))))
        return warn_clipping(fit, fraction, clip_tolerance)

    def check_quadrature(self, fit, tolerance=0.05, draws=40) -> float:
        """The quadrature's error at up to ``draws`` posterior draws, in sds of the statistics; warns above ``tolerance``.

        At each draw the moments by ``nodes`` and by ``2 nodes`` per covariate are compared: the largest
        sqrt(n) |m_i - m'_i| / sqrt(V'_ii) (the error of the mean of T in its own sds) and the largest relative
        error of a standard deviation sqrt(V_ii). The largest over the draws goes to
        ``fit.attrs["quadrature_error"]``; above ``tolerance`` a ``QuadratureWarning`` asks for more nodes.

        Examples
        --------
        >>> import warnings
        >>> import numpy as np, xarray as xr
        >>> from ppdinfer.models import logistic_regression
        >>> model = logistic_regression.model(n=2000, epsilon=1.0, nodes=4)
        >>> draws = {"beta": (("chain", "draw", "coef"), np.full((1, 2, 2), [0.0, 6.0])),   # a steep logistic
        ...          "mu_x": (("chain", "draw", "covariate"), np.zeros((1, 2, 1))),
        ...          "sd_x": (("chain", "draw", "covariate"), np.ones((1, 2, 1)))}
        >>> fit = xr.DataTree.from_dict({"posterior": xr.Dataset(draws)})
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     error = model.check_quadrature(fit)
        >>> error > 0.05, caught[0].category.__name__
        (True, 'QuadratureWarning')
        """
        from ._pymc_helpers import covariate_draws

        post = fit["posterior"]
        beta = post["beta"].values.reshape(-1, self.d + 1)
        mu_x, cov_x = covariate_draws(post, self.d)
        mu_x, cov_x = mu_x.reshape(-1, self.d), cov_x.reshape(-1, self.d, self.d)
        error = 0.0
        for i in np.unique(np.linspace(0, len(beta) - 1, min(draws, len(beta))).astype(int)):
            m, V = record_moments(beta[i], mu_x[i], cov_x[i], self.nodes)
            m2, V2 = record_moments(beta[i], mu_x[i], cov_x[i], 2 * self.nodes)
            sd, sd2 = np.sqrt(np.diag(V)), np.sqrt(np.diag(V2))
            error = max(
                error, float(np.max(np.sqrt(self.n) * np.abs(m - m2) / sd2)), float(np.max(np.abs(sd / sd2 - 1)))
            )
        fit.attrs["quadrature_error"] = error
        if error > tolerance:
            warnings.warn(
                f"the Gauss-Hermite moments ({self.nodes} nodes per covariate) change by {error:.3g} sds of the "
                f"statistics with twice the nodes (tolerance {tolerance:g}): raise nodes",
                QuadratureWarning,
                stacklevel=2,
            )
        return error


def model(n=2000, epsilon=1.0, x_bounds=((-4.0, 4.0),), shares=None, prior_scale=2.5, nodes=NODES, centring="release"):
    """The logistic model for ``n`` records with one covariate by default, x in [-4, 4].

    Examples
    --------
    >>> from ppdinfer.models import logistic_regression
    >>> model = logistic_regression.model(n=2000, epsilon=1.0)
    >>> model.d, model.sensitivity.per_statistic[1:-1].tolist()       # sum x, sum y, sum x^2, sum x y
    (1, [8.0, 1.0, 16.0, 8.0])
    """
    return LogisticRegressionModel(
        n, x_bounds, epsilon, shares=shares, prior_scale=prior_scale, nodes=nodes, centring=centring
    )


def public_information(n, x_bounds) -> dict:
    """z for the model: the number of records and the covariates' clipping box, validated.

    Examples
    --------
    >>> from ppdinfer.models import logistic_regression
    >>> logistic_regression.public_information(2000, [(-4, 4)])["n"]
    2000
    """
    info = linear_regression.public_information(n, x_bounds, (0.0, 1.0))
    return {"n": info["n"], "x_bounds": info["x_bounds"]}


def synthetic_records(n, beta=(-0.5, 1.0), mu_x=(0.0,), cov_x=((1.0,),), random_seed=None):
    """n records from the model: x ~ N(mu_x, cov_x), y ~ Bernoulli(logit^-1(beta_0 + x beta_1)).

    Examples
    --------
    >>> from ppdinfer.models import logistic_regression
    >>> x, y = logistic_regression.synthetic_records(4, random_seed=0)
    >>> x.shape, sorted(set(y.tolist())) <= [0.0, 1.0]
    ((4, 1), True)
    """
    rng = as_generator(random_seed)
    beta = np.asarray(beta, dtype=float)
    x = rng.multivariate_normal(np.asarray(mu_x, dtype=float), np.asarray(cov_x, dtype=float), size=n)
    y = (rng.random(n) < special.expit(beta[0] + x @ beta[1:])).astype(float)
    return x, y

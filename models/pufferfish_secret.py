r"""A Pufferfish secret as the parameter: the attacker's posterior of s given the release.

The secret s is a discrete index (a person's race, one user's bit, a dataset's share of high
earners on a grid of values); the data x, on a finite support x_1 < ... < x_S, depend on it
through known conditionals; a mechanism releases y:

.. math::

    s \sim \mathrm{Categorical}(p_0, \dots, p_{K-1}), \qquad
    P(x = x_m \mid s) = P_s(x_m), \qquad
    y \mid x \sim x + \mathrm{Laplace}(\Delta / \epsilon),

    \Delta = \max_{s \ne s'} W_\infty(P_s, P_{s'}),

the Laplace scale of the Kantorovich mechanism's Theorem 1 (on the line the plan sensitivity
of the optimal transport plan is W_inf). Any other mechanism for one value (a Gaussian, say)
can be passed as ``noise``. The posterior of theta = s is the Bayesian attacker's:

.. math::

    P(s \mid y) \propto p_s \sum_m P_s(x_m) \, \pi(y \mid x_m),

and eps-Pufferfish privacy bounds the factor by which it moves the odds of any two secrets by
e^eps (:func:`ppdinfer.posterior_odds_ratio`).

Routes. Exact: :meth:`PufferfishSecretModel.secret_posterior` (the sum above, for one or many
releases). :func:`ppdinfer.exact_posterior` serves too when given
``theta_grid=model.theta_grid``: with unit spacing its trapezoid weights are exactly the prior
pmf; without a grid it refuses, as the Categorical prior has no ``ppf`` (an equal-mass grid of
a discrete prior would round the prior masses). For two secrets the grid gets a third index
of prior mass zero, since exact_posterior wants at least 3 grid points; its ``theta_density``
is then P(s | y) on the grid. :func:`ppdinfer.rejection_sample` and
:func:`ppdinfer.importance_sample` draw (s, x) pairs as for any model.

No PyMC twin: theta is discrete, so NUTS cannot sample it, and the exact posterior is a sum
over the K secrets anyway.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..generators import DataModel, draw_from_support
from ..inference import PPDModel
from ..mechanisms import Laplace, Mechanism
from ..priors import Categorical
from ..privacy import w_inf
from ..privacy.attacker import secret_posterior
from ..validation import finite_array, positive_finite, probability, probability_vector

#: Default tie tolerance of the W_inf sensitivity: well above double rounding, far below any real mass.
TIE_TOLERANCE = 1e-12


class SecretConditional(DataModel):
    r"""x given the secret index s: the pmf ``conditionals[s]`` on the finite, increasing ``values``.

    .. math::

        \pi(x = x_m \mid \theta = s) = P_s(x_m), \qquad s \in \{0, \dots, K - 1\}.

    ``logpmf`` is -inf for an x off the support and for a theta that is not a secret index
    (so a grid padded with indices of prior mass zero works in exact_posterior); drawing x for
    such a theta is an error.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.models.pufferfish_secret import SecretConditional
    >>> data = SecretConditional([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]], [0, 1, 2])
    >>> np.exp(data.logpmf([0, 2, 7], [0, 1, 2])).round(2)   # rows: theta, columns: x
    array([[0.5, 0. , 0. ],
           [0. , 0.5, 0. ],
           [0. , 0. , 0. ]])
    >>> data(np.array([0.0, 1.0, 1.0]), None, np.random.default_rng(0)).shape
    (3,)
    >>> data.support().tolist()
    [0.0, 1.0, 2.0]
    """

    def __init__(self, conditionals, values):
        self.values = finite_array(values, "values")
        if self.values.ndim != 1 or self.values.size < 2 or np.any(np.diff(self.values) <= 0):
            raise ValueError(f"values must be a strictly increasing vector of at least 2 numbers, got {values!r}")
        table = finite_array(conditionals, "conditionals")
        if table.ndim != 2 or table.shape[0] < 2 or table.shape[1] != self.values.size:
            raise ValueError(
                f"conditionals must have shape (K, {self.values.size}) with K >= 2 secrets, got shape {table.shape}"
            )
        self.conditionals = np.stack([probability_vector(row, f"conditionals[{k}]") for k, row in enumerate(table)])
        with np.errstate(divide="ignore"):
            self._log_conditionals = np.log(self.conditionals)

    @property
    def n_secrets(self) -> int:
        """K, the number of secrets."""
        return self.conditionals.shape[0]

    def __call__(self, theta, z, rng):
        theta = np.asarray(theta, dtype=float).reshape(-1)
        index = np.round(theta).astype(np.int64)
        if np.any(index != theta) or np.any(index < 0) or np.any(index >= self.n_secrets):
            raise ValueError(f"theta must hold secret indices 0..{self.n_secrets - 1}, got {theta!r}")
        return draw_from_support(self.values, self._log_conditionals[index], rng)

    def logpmf(self, x, theta, z=None):
        theta = np.asarray(theta, dtype=float).reshape(-1)
        index = np.clip(np.round(theta), 0, self.n_secrets - 1).astype(np.int64)
        x = np.asarray(x, dtype=float).reshape(-1)
        position = np.clip(np.searchsorted(self.values, x), 0, self.values.size - 1)
        on_support = self.values[position] == x
        log_p = self._log_conditionals[index][:, position]
        return np.where((index == theta)[:, None] & on_support[None, :], log_p, -np.inf)

    def support(self, z=None, theta_dim=1):
        return self.values


class PufferfishSecretModel(PPDModel):
    r"""The secret-as-parameter PPD model (math in the module docstring).

    Attributes ``sensitivity`` (the largest W_inf over pairs of conditionals) and ``theta_grid``
    (the secret indices for exact_posterior, padded to 3).

    Examples
    --------
    >>> from ppdinfer.models import pufferfish_secret
    >>> model = pufferfish_secret.model([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]], [0, 1, 2], epsilon=1.0)
    >>> model.sensitivity, model.mechanism
    (1.0, Laplace(epsilon=1.0, sensitivity=1.0))
    >>> try:
    ...     model.to_pymc(0.5)
    ... except NotImplementedError as err:
    ...     print(str(err)[:36])
    the secret is a discrete parameter:
    """

    def __init__(
        self,
        conditionals,
        values,
        epsilon: float | None,
        prior,
        noise: str | Mechanism,
        tie_tolerance: float = TIE_TOLERANCE,
    ):
        data = SecretConditional(conditionals, values)
        if not isinstance(prior, Categorical):
            prior = Categorical(np.full(data.n_secrets, 1 / data.n_secrets) if prior is None else prior)
        if prior.probabilities.size != data.n_secrets:
            raise ValueError(f"prior has {prior.probabilities.size} secrets but conditionals has {data.n_secrets}")
        self.sensitivity = max(
            w_inf(data.conditionals[i], data.conditionals[j], data.values, tie_tolerance=tie_tolerance)
            for i, j in itertools.combinations(range(data.n_secrets), 2)
        )
        super().__init__(prior, data, _noise_mechanism(noise, epsilon, self.sensitivity), names="secret")

    @property
    def theta_grid(self) -> np.ndarray:
        """The secret indices 0..K-1 (padded with indices of prior mass zero to at least 3 points)."""
        return np.arange(max(self.simulate.n_secrets, 3), dtype=float)

    def secret_posterior(self, y) -> np.ndarray:
        r"""The exact posterior P(s | y) of the secret, for one release (shape (K,)) or many ((R, K)).

        .. math::

            P(s \mid y) \propto p_s \sum_m P_s(x_m) \, \pi(y \mid x_m).

        Examples
        --------
        >>> from ppdinfer.models import pufferfish_secret
        >>> model = pufferfish_secret.model([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]], [0, 1, 2], epsilon=1.0)
        >>> model.secret_posterior(0.0).round(4)
        array([0.7311, 0.2689])
        """
        return secret_posterior(self.prior, self.simulate.conditionals, self.simulate.values, self.mechanism, y)

    def to_pymc(self, y, z=None):
        """No PyMC twin: raises NotImplementedError (the secret is discrete; the exact posterior is a finite sum)."""
        raise NotImplementedError(
            "the secret is a discrete parameter: NUTS cannot sample it and the exact posterior is a sum over the "
            "secrets; use model.secret_posterior(y), ppdinfer.exact_posterior(model, y, theta_grid=model.theta_grid), "
            "ppdinfer.rejection_sample or ppdinfer.importance_sample"
        )


def model(
    conditionals,
    values,
    epsilon: float | None = 1.0,
    prior=None,
    noise: str | Mechanism = "laplace",
    tie_tolerance: float = TIE_TOLERANCE,
) -> PufferfishSecretModel:
    r"""The Pufferfish secret model for the conditionals P(x | s) on ``values``.

    Parameters
    ----------
    conditionals : array_like, shape (K, S)
        Row s is the pmf of x given the secret s.
    values : array_like, shape (S,)
        The support of x, strictly increasing.
    epsilon : float
        The privacy level of the default Laplace noise, of scale max W_inf / epsilon
        (Theorem 1 of the Kantorovich mechanism); leave it out (None) with a mechanism as ``noise``.
    prior : array_like of K probabilities or ppdinfer.priors.Categorical, optional
        The attacker's prior over the secrets (default uniform).
    noise : "laplace" or Mechanism
        The calibrated Laplace noise, or any mechanism for one value.
    tie_tolerance : float
        Cumulative masses of two conditionals closer than this count as tied when W_inf is
        computed (:func:`ppdinfer.privacy.quantile_coupling`). Conditionals computed in floating
        point (products of probabilities, then checked to sum to one) tie only up to rounding,
        and an exact tie broken by a rounding crumb would move the coupling to the next support
        point and inflate the sensitivity; 0 demands exact ties.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer.mechanisms import Gaussian
    >>> from ppdinfer.models import pufferfish_secret
    >>> conditionals, values = pufferfish_secret.one_user_secret([0.7] * 25)   # V = 25 users, p = 0.7
    >>> model = pufferfish_secret.model(conditionals, values, epsilon=0.5, prior=[0.3, 0.7])
    >>> model.sensitivity, model.secret_posterior(18.0).round(4)             # P(the user's bit | y)
    (1.0, array([0.2868, 0.7132]))
    >>> exact = pp.exact_posterior(model, 18.0, theta_grid=model.theta_grid)
    >>> exact["exact"]["theta_density"].values[:, 0].round(4)                 # the same, on the grid
    array([0.2868, 0.7132, 0.    ])
    >>> gaussian = pufferfish_secret.model(conditionals, values, epsilon=None, noise=Gaussian(2.0))
    >>> gaussian.mechanism
    Gaussian(sigma=2.0)
    """
    return PufferfishSecretModel(conditionals, values, epsilon, prior, noise, tie_tolerance)


def _noise_mechanism(noise, epsilon, sensitivity: float) -> Mechanism:
    """The mechanism on x: Laplace of scale sensitivity / epsilon, or the mechanism given."""
    if isinstance(noise, Mechanism):
        if epsilon is not None:
            raise ValueError(
                f"epsilon must be None when noise is a mechanism ({noise!r} has its own parameters), "
                f"got epsilon={epsilon!r}"
            )
        return noise
    if noise != "laplace":
        raise ValueError(f"noise must be 'laplace' or a Mechanism, got {noise!r}")
    return Laplace(positive_finite(epsilon, "epsilon"), sensitivity=sensitivity)


def one_user_secret(probabilities, user: int = 0) -> tuple[np.ndarray, np.ndarray]:
    r"""The conditionals of a counting query given one user's bit (the Kantorovich paper's Figures 1, 2, 5).

    V users hold independent bits B_v ~ Bernoulli(q_v); the query is X = sum_v B_v and the
    secret is the bit of ``user``. Given it, X is the bit plus the Poisson-binomial count of the
    others:

    .. math::

        P(X = x \mid B_u = b) = P\Bigl(\sum_{v \ne u} B_v = x - b\Bigr), \qquad x = 0, \dots, V.

    The two conditionals are shifted by one, so W_inf = 1 (the paper's plan sensitivity).

    Parameters
    ----------
    probabilities : array_like of V numbers in [0, 1]
        q_v for every user (V >= 2).
    user : int
        The index u of the user whose bit is the secret.

    Returns
    -------
    conditionals : numpy.ndarray, shape (2, V + 1)
        Rows: b = 0 and b = 1.
    values : numpy.ndarray
        0..V.

    Examples
    --------
    >>> from ppdinfer.models.pufferfish_secret import one_user_secret
    >>> conditionals, values = one_user_secret([0.5, 0.5, 0.5])
    >>> conditionals.round(3).tolist(), values.tolist()
    ([[0.25, 0.5, 0.25, 0.0], [0.0, 0.25, 0.5, 0.25]], [0, 1, 2, 3])
    """
    q = finite_array(probabilities, "probabilities")
    if q.ndim != 1 or q.size < 2:
        raise ValueError(f"probabilities must be a vector of at least 2 users' probabilities, got {probabilities!r}")
    for v, value in enumerate(q):
        probability(float(value), f"probabilities[{v}]", open_interval=False)
    if isinstance(user, bool) or not isinstance(user, (int, np.integer)) or not 0 <= user < q.size:
        raise ValueError(f"user must be an index in 0..{q.size - 1}, got {user!r}")
    others = np.ones(1)
    for value in np.delete(q, user):
        others = np.convolve(others, [1 - value, value])
    conditionals = np.zeros((2, q.size + 1))
    conditionals[0, :-1] = others
    conditionals[1, 1:] = others
    return conditionals, np.arange(q.size + 1)


def public_information() -> None:
    """z for the model: none (the conditionals the attacker knows are part of the model).

    Examples
    --------
    >>> from ppdinfer.models import pufferfish_secret
    >>> print(pufferfish_secret.public_information())
    None
    """
    return None

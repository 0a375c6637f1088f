r"""The exchange algorithm: posterior draws of x when the likelihood's normalizer is unknown.

A release mechanism such as :class:`ppdinfer.mechanisms.Congenial` has the likelihood
p*(y | x) = p(y - x) 1{y in S*} / c(x), whose normalizer c(x) = P(M(x) in S*) cannot be
computed when S* is too large to enumerate, but whose release draws y ~ p*(. | x) exactly.
The exchange algorithm (Murray, Ghahramani & MacKay 2006) proposes x' ~ q(x' | x), draws an
auxiliary release w ~ p*(. | x') and accepts x' with probability

.. math::

    \min\left(1, \frac{\pi(x' \mid z) \, q(x \mid x') \, p(y - x') \, p(w - x)}
                      {\pi(x \mid z) \, q(x' \mid x) \, p(y - x) \, p(w - x')}\right),

in which the unknown c(x) and c(x') cancel in expectation over w: the chain leaves
pi(x | y, z) invariant exactly.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr
from tqdm import tqdm

from ..rng import SeedLike, as_generator
from ..validation import positive_int
from .conjugate import conjugate_pair
from .model import PPDModel
from .results import assemble, posterior_dataset

#: Largest support of x (given z) that the sampler indexes.
SUPPORT_LIMIT = 2_000_000
PROPOSALS = ("unit",)


def exchange_sample(
    model: PPDModel,
    y,
    z=None,
    *,
    draws: int = 1000,
    tune: int = 500,
    proposal: str = "unit",
    random_seed: SeedLike = None,
    progressbar: bool = True,
) -> xr.DataTree:
    r"""Posterior draws of x (and theta) by the exchange algorithm, without the normalizer c(x).

    The state is the confidential table x, with target

    .. math::

        \pi(x \mid y, z) \propto \pi(x \mid z) \, \frac{p(y - x) \, 1\{y \in S^*\}}{c(x)}, \qquad
        \pi(x \mid z) = \int \pi(x \mid \theta, z) \, \pi(\theta \mid z) \, d\theta,

    and the prior marginal pi(x | z) in closed form from the model's conjugate pair (e.g.
    Dirichlet-multinomial given a public total). Each iteration proposes x' by the symmetric
    move ``proposal``, draws an auxiliary release w ~ p*(. | x') exactly with the mechanism's
    ``release``, and accepts with probability

    .. math::

        \min\left(1, \frac{\pi(x' \mid z) \, p(y - x') \, p(w - x)}{\pi(x \mid z) \, p(y - x) \, p(w - x')}\right)

    (q cancels: it is symmetric). The c's cancel, so only the mechanism's
    ``unnormalized_logpdf`` (log p(y - x) + log 1{y in S*}) is needed. After each kept x,
    theta is drawn from its conjugate conditional pi(theta | x, z).

    Parameters
    ----------
    model : PPDModel
        Its mechanism must have an exact ``release`` and ``unnormalized_logpdf(y, x, z)``
        (:class:`~ppdinfer.mechanisms.Congenial` has both; it releases by rejection here). Its
        prior and data model must form a conjugate pair (Beta-Binomial, Dirichlet-Multinomial)
        whose data model reports its finite ``support(z, theta_dim)`` (at most ``SUPPORT_LIMIT``
        tables).
    y : array_like
        The release, with the shape of the model's x.
    z : mapping, optional
        Public information.
    draws, tune : int
        Kept iterations, and iterations discarded before them. One chain, started at the
        support point with the largest pi(x | z) p(y - x) 1{y in S*}.
    proposal : {"unit"}
        "unit": for a support with a constant total and at least two cells, move one unit from
        one cell to another (an ordered pair of distinct cells, uniformly); otherwise add +-1
        to one cell chosen uniformly. Both are symmetric; a proposal outside the support or
        outside S* is rejected without a release.
    random_seed : int, SeedSequence or Generator, optional
    progressbar : bool

    Returns
    -------
    xarray.DataTree
        ``posterior``: theta and x, one chain of ``draws`` correlated draws (judge them with an
        effective sample size); ``sample_stats``: ``accepted`` per draw, attribute
        ``acceptance_rate`` (over the kept iterations) and ``tune_acceptance_rate``.

    See Also
    --------
    ppdinfer.rejection_sample : Algorithm 1, exact draws.
    ppdinfer.importance_sample : Algorithm 2, importance sampling.
    ppdinfer.exact_posterior : The posterior by enumeration.

    References
    ----------
    .. [1] I. Murray, Z. Ghahramani and D. J. C. MacKay, "MCMC for doubly-intractable distributions," 2006.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer import generators, priors
    >>> from ppdinfer.invariants import LinearInvariants
    >>> from ppdinfer.mechanisms import Congenial, DiscreteLaplace
    >>> inv = LinearInvariants.grand_total(3, 4) & LinearInvariants.nonnegative(3)
    >>> model = pp.PPDModel(priors.Dirichlet([1.0, 1.0, 1.0]), generators.MultinomialTotal(),
    ...                     Congenial(DiscreteLaplace(1.0), inv))
    >>> result = pp.exchange_sample(model, [3, 1, 0], {"total": 4}, draws=300, tune=100,
    ...                             random_seed=0, progressbar=False)
    >>> x = result["posterior"]["x"]
    >>> x.shape, bool((x.sum("x_dim_0") == 4).all())
    ((1, 300, 3), True)
    >>> 0 < result["sample_stats"].attrs["acceptance_rate"] < 1
    True
    """
    draws = positive_int(draws, "draws")
    tune = int(tune)
    if tune < 0:
        raise ValueError(f"tune must be >= 0, got {tune}")
    if proposal not in PROPOSALS:
        raise ValueError(f"proposal must be one of {PROPOSALS}, got {proposal!r}")
    rng = as_generator(random_seed)
    y, z, theta_shape, x_shape = model.prepare(y, z)
    model.check_memory(draws, theta_shape, x_shape)
    mechanism = model.mechanism
    if not (
        callable(getattr(mechanism, "unnormalized_logpdf", None)) and callable(getattr(mechanism, "release", None))
    ):
        raise ValueError(
            f"exchange_sample needs a mechanism with an exact release and unnormalized_logpdf(y, x, z); "
            f"{mechanism!r} has no unnormalized_logpdf (with a computable likelihood, use "
            "exact_posterior, rejection_sample or importance_sample)"
        )
    generator = model.simulate
    pair = conjugate_pair(model.prior, generator)
    if pair is None:
        raise ValueError(
            "exchange_sample needs the prior marginal pi(x | z) in closed form: a conjugate prior and "
            "data model (Beta-Binomial, Dirichlet-Multinomial); "
            f"got {model.prior!r} and {generator!r}"
        )
    if not hasattr(generator, "support"):
        raise ValueError("exchange_sample needs a data model that reports its finite support(z, theta_dim)")
    theta_dim = int(np.prod(theta_shape))
    d = int(np.prod(x_shape))
    support = np.asarray(generator.support(z, theta_dim)).reshape(-1, d).astype(np.int64)
    if support.shape[0] > SUPPORT_LIMIT:
        raise ValueError(f"the support of x has {support.shape[0]} tables, over SUPPORT_LIMIT = {SUPPORT_LIMIT}")
    log_prior = pair.log_marginal(support, z)
    y_flat = np.asarray(y).reshape(-1).astype(np.int64)
    y_term = np.asarray(
        mechanism.unnormalized_logpdf(y_flat.reshape(x_shape), support.reshape(-1, *x_shape), z), dtype=float
    )
    target = log_prior + y_term
    if not np.any(np.isfinite(target)):
        raise ValueError(
            "no table in the support of x has positive prior mass and p(y - x) 1{y in S*} > 0: "
            "y does not conform to the invariants, or z contradicts them"
        )
    index = {tuple(row): i for i, row in enumerate(support)}
    moves = _moves(support, d)
    start = int(np.argmax(target))
    draw_w, aux_log_ratio = mechanism.auxiliary_release(x_shape, z, rng)

    bar = tqdm(total=tune + draws, desc="exchange", unit="it", disable=not progressbar, leave=False)
    try:
        states, accepted = _run_chain(
            support, target, index, moves, start, tune + draws, rng, draw_w, aux_log_ratio, bar.update
        )
    finally:
        bar.close()
    kept = states[tune:]
    x = support[kept]
    theta = np.asarray(pair.sample_theta(x, z, rng), dtype=float).reshape(draws, -1)
    posterior = posterior_dataset(model, theta, x, theta_shape, x_shape)
    kept_accepted = accepted[tune:]
    stats = xr.Dataset(
        {"accepted": (["chain", "draw"], kept_accepted.reshape(1, draws))},
        coords={"chain": [0], "draw": np.arange(draws)},
        attrs={
            "acceptance_rate": float(kept_accepted.mean()),
            "tune_acceptance_rate": float(accepted[:tune].mean()) if tune else math.nan,
        },
    )
    attrs = {
        "sampler": "exchange",
        "draws": draws,
        "tune": tune,
        "proposal": proposal,
        "note": "x by the exchange algorithm (auxiliary exact releases; c(x) never computed); "
        "theta from its conjugate conditional given each x",
    }
    return assemble(model, y, z, posterior, stats, attrs=attrs)


def _moves(support: np.ndarray, d: int) -> np.ndarray:
    """The symmetric steps of the "unit" proposal, shape (m, d)."""
    totals = support.sum(axis=1)
    if d >= 2 and np.all(totals == totals[0]):
        steps = []
        for i in range(d):
            for j in range(d):
                if i != j:
                    step = np.zeros(d, dtype=np.int64)
                    step[i], step[j] = -1, 1
                    steps.append(step)
        return np.array(steps)
    eye = np.eye(d, dtype=np.int64)
    return np.concatenate([eye, -eye])


def _run_chain(support, target, index, moves, start, iterations, rng, draw_w, aux_log_ratio, update=None):
    """One Metropolis chain over support indices; returns (states, accepted), each of length ``iterations``.

    ``target[i]`` is log pi(x_i | z) + log p(y - x_i) 1{y in S*}. With ``draw_w`` and
    ``aux_log_ratio`` (w, x, x') -> log p(w - x) - log p(w - x') this is the exchange algorithm;
    with ``draw_w=None`` the auxiliary term is left out, so the chain targets the likelihood
    without 1 / c(x) (wrong whenever c varies: kept for the tests' negative control).
    """
    states = np.empty(iterations, dtype=np.int64)
    accepted = np.zeros(iterations, dtype=bool)
    current = start
    picks = rng.integers(0, len(moves), iterations)
    log_u = np.log(rng.random(iterations))
    for t in range(iterations):
        candidate_row = support[current] + moves[picks[t]]
        candidate = index.get(tuple(candidate_row.tolist()))
        if candidate is not None and np.isfinite(target[candidate]):
            log_ratio = target[candidate] - target[current]
            if draw_w is not None:
                w = draw_w(support[candidate])
                log_ratio += aux_log_ratio(w, support[current], support[candidate])
            if log_u[t] <= log_ratio:
                current = candidate
                accepted[t] = True
        states[t] = current
        if update is not None and (t + 1) % 1000 == 0:
            update(1000)
    if update is not None:
        update(iterations % 1000)
    return states, accepted

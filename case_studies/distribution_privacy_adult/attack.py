r"""The property inference attack of Section 5.3: a logistic-regression meta-classifier on (noised) F.

The attacker draws shadow subsets from auxiliary records at income shares 0.45 and 0.55, fits a
logistic regression of the share on their F, and is scored on releases (through the defense) of
subsets drawn from held-out test records. The "informed" attacker knows the mechanism and noises
its shadows too; the "naive" one trains on noiseless shadows, which is what the paper's Table 3
numbers imply. For two Gaussians with one covariance and equal priors no classifier beats

.. math::

    \Phi(m / 2), \qquad m^2 = (\mu_1 - \mu_2)^\top (\bar\Sigma + C)^{-1} (\mu_1 - \mu_2),

with Sigma-bar the mean of the two fitted covariances and C the noise covariance (:func:`best_accuracy`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
from scipy import stats

from ...mechanisms.distribution import CorrelatedGaussian, DistributionFamily
from ...rng import SeedLike, as_generator
from ...validation import positive_int
from .data import IncomePools, subset_queries
from .experiments import build_mechanisms, noise_covariance

__all__ = ["ATTACKERS", "attack_accuracies", "attack_table", "bayesian_log_odds", "best_accuracy"]

#: "informed": the meta-classifier trains on shadow releases through the defense; "naive": on noiseless shadows.
ATTACKERS = ("informed", "naive")


def best_accuracy(family: DistributionFamily, covariance) -> float:
    r"""Phi(m / 2): the Bayes accuracy between the two laws of ``family`` plus noise N(0, C), pooled covariance.

    Examples
    --------
    >>> from ppdinfer.mechanisms.distribution import GaussianLaw
    >>> family = DistributionFamily({0: GaussianLaw([0.0], [[1.0]]), 1: GaussianLaw([2.0], [[1.0]])})
    >>> round(best_accuracy(family, np.zeros((1, 1))), 4), round(best_accuracy(family, [[3.0]]), 4)   # m = 2, 1
    (0.8413, 0.6915)
    """
    laws = list(family.laws.values())
    if len(laws) != 2:
        raise ValueError(f"family must hold exactly two laws, got {len(laws)}")
    difference = laws[0].mean - laws[1].mean
    pooled = (laws[0].covariance + laws[1].covariance) / 2 + np.asarray(covariance, dtype=float)
    return float(stats.norm.cdf(np.sqrt(difference @ np.linalg.solve(pooled, difference)) / 2))


def _noise_factor(covariance) -> np.ndarray:
    """A matrix L with L L^T = C (C positive semi-definite), so that Z L^T has rows N(0, C)."""
    values, vectors = np.linalg.eigh(np.asarray(covariance, dtype=float))
    return vectors * np.sqrt(np.clip(values, 0.0, None))


def attack_accuracies(
    auxiliary: IncomePools,
    test: IncomePools,
    secrets: tuple[float, float],
    defenses: Mapping[object, np.ndarray | None],
    per_class: tuple[int, int],
    repetitions: int,
    random_seed: SeedLike = None,
    attacker: str = "informed",
) -> dict[object, np.ndarray]:
    """Accuracy of the meta-classifier against each defense, one value per repetition.

    ``defenses`` maps a key to the noise covariance C of an additive Gaussian defense, y = F + N(0, C)
    (what every mechanism here adds), or to None (no defense). ``per_class`` = (shadow subsets,
    test subsets) per secret. Every defense sees the same subsets in a repetition (common random
    numbers); only the noise differs. ``attacker``:
    "informed" trains on shadow releases noised by the defense; "naive" trains on noiseless shadow
    F (what the paper's Table 3 numbers imply).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> pools = IncomePools(rng.normal(1.0, 1.0, (200, 5)), rng.normal(0.0, 1.0, (200, 5)))
    >>> accuracy = attack_accuracies(pools, pools, (0.2, 0.8), {"none": None}, (20, 20), 2, random_seed=1)
    >>> bool(accuracy["none"].min() > 0.9)
    True
    """
    if attacker not in ATTACKERS:
        raise ValueError(f"attacker must be one of {ATTACKERS}, got {attacker!r}")
    from sklearn.linear_model import LogisticRegression  # the optional extra "pufferfish": imported when used
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = as_generator(random_seed)
    shadows, tests = (positive_int(count, "per_class") for count in per_class)
    repetitions = positive_int(repetitions, "repetitions")
    labels = {count: np.repeat([0, 1], count) for count in (shadows, tests)}
    factors = {key: None if covariance is None else _noise_factor(covariance) for key, covariance in defenses.items()}
    accuracies = {key: np.empty(repetitions) for key in defenses}
    for repetition in range(repetitions):
        train = np.vstack([subset_queries(auxiliary, share, shadows, rng) for share in secrets])
        held_out = np.vstack([subset_queries(test, share, tests, rng) for share in secrets])
        for key, factor in factors.items():
            noisy_train, noisy_test = (
                (
                    rows
                    if factor is None or (rows is train and attacker == "naive")
                    else rows + rng.standard_normal(rows.shape) @ factor.T
                )
                for rows in (train, held_out)
            )
            classifier = make_pipeline(StandardScaler(), LogisticRegression(solver="newton-cholesky"))
            classifier.fit(noisy_train, labels[shadows])
            accuracies[key][repetition] = classifier.score(noisy_test, labels[tests])
    return accuracies


def attack_table(
    auxiliary: IncomePools,
    test: IncomePools,
    family: DistributionFamily,
    settings: Iterable[tuple[str, str, float, float]],
    record_sensitivity: float,
    per_class: tuple[int, int],
    repetitions: int,
    random_seed: SeedLike = None,
    attacker: str = "informed",
) -> pd.DataFrame:
    """The attack against no defense and against each (mechanism, calibration, eps, delta) of ``settings``.

    The defenses are calibrated on ``family`` (whose two secrets the attack tells apart); ``attacker``
    as in :func:`attack_accuracies`. One row per defense, the first for no defense, with the mean
    ``accuracy`` over repetitions, its
    ``accuracy_se``, the bound ``best_accuracy`` (:func:`best_accuracy`) and the number of test
    ``releases`` scored in all.

    Examples
    --------
    >>> from ppdinfer.mechanisms.distribution import GaussianLaw
    >>> rng = np.random.default_rng(0)
    >>> pools = IncomePools(rng.normal(1.0, 1.0, (200, 5)), rng.normal(0.0, 1.0, (200, 5)))
    >>> family = DistributionFamily({0.45: GaussianLaw(np.full(5, 45.0), np.eye(5)),
    ...                              0.55: GaussianLaw(np.full(5, 55.0), np.eye(5))})
    >>> table = attack_table(pools, pools, family, [("DauM(G)", "classical", 0.1, 1e-3)], 1.0, (20, 20), 2,
    ...                      random_seed=1)
    >>> table["mechanism"].tolist(), bool(table["accuracy"].iloc[1] < 0.75)
    (['none', 'DauM(G)'], True)
    """
    settings = list(settings)
    defenses = {("none", "", np.nan, np.nan): None}
    for mechanism, calibration, epsilon, delta in settings:
        built = build_mechanisms(family, epsilon, delta, calibration, record_sensitivity)[mechanism]
        defenses[(mechanism, calibration, epsilon, delta)] = noise_covariance(built, family.dim)
    secrets = tuple(family.laws)
    tests, repetitions = positive_int(per_class[1], "per_class"), positive_int(repetitions, "repetitions")
    accuracies = attack_accuracies(auxiliary, test, secrets, defenses, per_class, repetitions, random_seed, attacker)
    rows = []
    for key, covariance in defenses.items():
        covariance = np.zeros((family.dim, family.dim)) if covariance is None else covariance
        values = accuracies[key]
        rows.append(
            dict(
                zip(("mechanism", "calibration", "epsilon", "delta"), key),
                attacker=attacker,
                accuracy=values.mean(),
                accuracy_se=values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else np.nan,
                best_accuracy=best_accuracy(family, covariance),
                releases=2 * tests * repetitions,
            )
        )
    return pd.DataFrame(rows)


def bayesian_log_odds(
    family: DistributionFamily, covariance, releases: int, random_seed: SeedLike = None
) -> np.ndarray:
    """The Bayesian attacker: log P(y | theta_1) / P(y | theta_0), the factor a release applies to the prior odds.

    Releases y = F + N(0, C) are drawn, half under each of the family's two shares, and the factor is the
    closed form of the gallery's ``property_secret`` model (F | theta Gaussian, so y | theta is
    N(mu_theta, Sigma_theta + C)). (eps, delta) distribution privacy keeps it within +-eps except on
    releases of small probability.

    Examples
    --------
    >>> from ppdinfer.mechanisms.distribution import GaussianLaw
    >>> family = DistributionFamily({0.45: GaussianLaw([0.0], [[1.0]]), 0.55: GaussianLaw([1.0], [[1.0]])})
    >>> log_odds = bayesian_log_odds(family, [[3.0]], 1000, random_seed=0)
    >>> log_odds.shape, bool(abs(log_odds).max() < 5)
    ((1000,), True)
    """
    from ...models import property_secret

    releases = positive_int(releases, "releases")
    laws = list(family.laws.values())
    if len(laws) != 2:
        raise ValueError(f"the family must hold two shares, got {len(laws)}")
    model = property_secret.model(
        [law.mean for law in laws],
        [law.covariance for law in laws],
        CorrelatedGaussian(np.asarray(covariance, dtype=float)),
    )
    rng = as_generator(random_seed)
    secrets = np.repeat([0.0, 1.0], [releases // 2, releases - releases // 2])
    queries = model.simulate(secrets, None, rng)
    y = queries + rng.multivariate_normal(
        np.zeros(queries.shape[1]), model.mechanism.covariance, size=len(queries), method="eigh"
    )
    posterior = model.secret_posterior(y)
    return np.log(posterior[:, 1]) - np.log(posterior[:, 0])

r"""The released query F on subsets of UCI Adult, and subsets drawn with a fixed income share.

Each record is a row of :data:`RECORD_FEATURES` (age, years of education, never married, female,
hours per week). On a subset of n = 100 records the query is

.. math::

    F = \Bigl(\overline{\text{age}}, \overline{\text{education}}, \#\text{never married},
    \#\text{female}, \overline{\text{hours}}\Bigr),

means for the three numeric features and counts for the two indicators. A subset with income
share p is stratified as in the paper: round(p n) records from the positive pool (salary >50K),
the rest from the negative pool, each drawn without replacement.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...rng import SeedLike, as_generator
from ...validation import positive_int, probability

__all__ = [
    "QUERY_NAMES",
    "RECORD_FEATURES",
    "SUBSET_SIZE",
    "IncomePools",
    "income_pools",
    "query_weights",
    "record_features",
    "record_sensitivities",
    "subset_queries",
]

#: Records per released subset (the paper's n).
SUBSET_SIZE = 100
#: The per-record features whose sums or means make up F.
RECORD_FEATURES = ("age", "education_num", "never_married", "female", "hours_per_week")
#: Short names of the five components of F.
QUERY_NAMES = ("mean age", "mean education", "never married", "female", "mean hours")
_IS_MEAN = np.array([True, True, False, False, True])


def record_features(frame: pd.DataFrame) -> np.ndarray:
    """The (N, 5) feature rows of :data:`RECORD_FEATURES` from a ``load_adult`` frame.

    Examples
    --------
    >>> frame = pd.DataFrame({"age": [39, 50], "education_num": [13, 9], "marital_status": ["Never-married",
    ...                       "Divorced"], "sex": ["Male", "Female"], "hours_per_week": [40, 45]})
    >>> record_features(frame)
    array([[39., 13.,  1.,  0., 40.],
           [50.,  9.,  0.,  1., 45.]])
    """
    return np.column_stack(
        [
            frame["age"].to_numpy(float),
            frame["education_num"].to_numpy(float),
            (frame["marital_status"].astype(str) == "Never-married").to_numpy(float),
            (frame["sex"].astype(str) == "Female").to_numpy(float),
            frame["hours_per_week"].to_numpy(float),
        ]
    )


def query_weights(n: int = SUBSET_SIZE) -> np.ndarray:
    """The factor turning a subset's feature sums into F: 1/n for the means, 1 for the counts.

    Examples
    --------
    >>> query_weights(100)
    array([0.01, 0.01, 1.  , 1.  , 0.01])
    """
    n = positive_int(n, "n")
    return np.where(_IS_MEAN, 1.0 / n, 1.0)


def record_sensitivities(features: np.ndarray, n: int = SUBSET_SIZE) -> np.ndarray:
    r"""How much one record changes each component of F: range / n for the means, 1 for the counts.

    .. math::

        \Delta_k = \frac{\max x_k - \min x_k}{n} \text{ (means)}, \qquad \Delta_k = 1 \text{ (counts)}.

    On Adult (age 17-90, education 1-16, hours 1-99) these are 0.73, 0.15, 1, 1, 0.98, the values
    behind the paper's GroupDP(G) baseline, with L2 norm 1.8750.

    Examples
    --------
    >>> record_sensitivities(np.array([[17, 1, 0, 0, 1], [90, 16, 1, 1, 99]]), 100)
    array([0.73, 0.15, 1.  , 1.  , 0.98])
    """
    features = np.asarray(features, dtype=float)
    return np.where(_IS_MEAN, np.ptp(features, axis=0) / positive_int(n, "n"), 1.0)


@dataclass(frozen=True)
class IncomePools:
    """The feature rows of the records with income >50K (``positive``) and at most 50K (``negative``)."""

    positive: np.ndarray
    negative: np.ndarray

    def split(self, random_seed: SeedLike = None) -> tuple[IncomePools, IncomePools]:
        """Two disjoint halves of both pools, drawn at random (the attack's auxiliary and test data).

        Examples
        --------
        >>> pools = IncomePools(np.arange(10.0)[:, None], np.arange(6.0)[:, None])
        >>> first, second = pools.split(random_seed=0)
        >>> len(first.positive), len(second.positive), len(first.negative)
        (5, 5, 3)
        """
        rng = as_generator(random_seed)
        halves = []
        for pool in (self.positive, self.negative):
            order = rng.permutation(len(pool))
            halves.append((pool[order[: len(pool) // 2]], pool[order[len(pool) // 2 :]]))
        return IncomePools(halves[0][0], halves[1][0]), IncomePools(halves[0][1], halves[1][1])


def income_pools(frame: pd.DataFrame) -> IncomePools:
    """Split a ``load_adult`` frame's feature rows by salary (``>50K`` or not).

    Examples
    --------
    >>> frame = pd.DataFrame({"age": [39, 50, 28], "education_num": [13, 9, 9], "marital_status": ["Never-married",
    ...     "Divorced", "Divorced"], "sex": ["Male", "Female", "Male"], "hours_per_week": [40, 45, 50],
    ...     "salary": ["<=50K", ">50K", "<=50K"]})
    >>> pools = income_pools(frame)
    >>> len(pools.positive), len(pools.negative)
    (1, 2)
    """
    features = record_features(frame)
    rich = (frame["salary"].astype(str) == ">50K").to_numpy()
    return IncomePools(features[rich], features[~rich])


def subset_queries(
    pools: IncomePools, share: float, count: int, random_seed: SeedLike = None, n: int = SUBSET_SIZE
) -> np.ndarray:
    """F on ``count`` subsets of n records with round(share n) of them from the positive pool.

    Returns an array of shape (count, 5). Each subset is drawn without replacement within each pool.

    Examples
    --------
    >>> pools = IncomePools(np.ones((20, 5)), np.zeros((20, 5)))
    >>> subset_queries(pools, 0.3, 2, random_seed=0, n=10)
    array([[0.3, 0.3, 3. , 3. , 0.3],
           [0.3, 0.3, 3. , 3. , 0.3]])
    """
    share = probability(share, "share", open_interval=False)
    count, n = positive_int(count, "count"), positive_int(n, "n")
    rich = int(round(share * n))
    for name, pool, needed in (("positive", pools.positive, rich), ("negative", pools.negative, n - rich)):
        if len(pool) < needed:
            raise ValueError(f"pools: the {name} pool has {len(pool)} records, a subset needs {needed}")
    rng = as_generator(random_seed)
    sums = np.empty((count, pools.positive.shape[1]))
    for row in range(count):
        sums[row] = pools.positive[rng.choice(len(pools.positive), rich, replace=False)].sum(axis=0) + pools.negative[
            rng.choice(len(pools.negative), n - rich, replace=False)
        ].sum(axis=0)
    return sums * query_weights(n)

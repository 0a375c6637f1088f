"""Integers beyond 2^53 are refused by name instead of wrapping in int64 or rounding in float64 likelihoods."""

import numpy as np
import pytest

from ppdinfer.mechanisms import DiscreteGaussian, DiscreteLaplace
from ppdinfer.mechanisms.wem import WassersteinExponential

# Before: 1e20 became -2^63 on the cast (then "x must be non-negative"); 2^63 - 1 was released as 2^63 - 2;
# logpdf(2^53 + 2 | 2^53 + 1) was computed with a difference of 2 instead of 1.
HUGE = [1e20, 2**63 - 1, np.int64(2**62), 2**53 + 2]


@pytest.mark.parametrize("mechanism", [DiscreteLaplace(1.0), DiscreteGaussian(2.0)])
@pytest.mark.parametrize("value", HUGE)
def test_huge_counts_are_refused(mechanism, value):
    with pytest.raises(ValueError, match=r"x must hold integers of magnitude at most 2\^53"):
        mechanism.release(np.array([value]), random_seed=1)
    with pytest.raises(ValueError, match=r"y must hold integers of magnitude at most 2\^53"):
        mechanism.logpdf(np.array([value]), np.array([[3]]))
    with pytest.raises(ValueError, match=r"x must hold integers of magnitude at most 2\^53"):
        mechanism.logpdf(np.array([3]), np.array([[value]]))


def test_largest_allowed_count_is_exact():
    mechanism = DiscreteLaplace(1.0)
    top = 2**53
    assert mechanism.logpdf(np.array([top]), np.array([[top - 1]]))[0] == pytest.approx(
        mechanism.logpdf(np.array([1]), np.array([[0]]))[0]
    )


def test_wem_table_beyond_range_is_refused():
    mechanism = WassersteinExponential(1.0, 2.0, loss="l1", base_measure="naive")
    table = np.array([[1e20, 3], [0, 1]])
    with pytest.raises(ValueError, match=r"magnitude at most 2\^53"):
        mechanism.release(table, random_seed=1)

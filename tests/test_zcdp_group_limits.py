"""zcdp_group_account at the edge of the float range: a refusal that names rho, not an inner "mu"."""

import pytest

from ppdinfer.privacy import zcdp_group_account
from ppdinfer.privacy.accounting import MAX_GROUP_RHO


@pytest.mark.parametrize("rho, k", [(1e308, 1), (1e20, 1), (MAX_GROUP_RHO / 3, 2)])
def test_group_rho_beyond_the_conversions_is_refused_naming_rho(rho, k):
    with pytest.raises(ValueError, match=r"^rho: k\^2 rho = .* exceeds 1e\+15"):
        zcdp_group_account(rho, 1e-10, k=k)


def test_the_largest_group_rho_still_converts():
    account = zcdp_group_account(MAX_GROUP_RHO, 1e-10)
    assert account.epsilon_gaussian <= account.epsilon_bound
    assert account.epsilon_bound == pytest.approx(MAX_GROUP_RHO, rel=1e-6)  # rho + 2 sqrt(rho log(1/delta))

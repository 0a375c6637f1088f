"""Section 6 of Cho & Awan: the 2020 Census persons tables' guarantee under DP and under Semi-DP.

The Census advertised rho = 2.56 zCDP for the persons tables (Abowd et al. 2022) over adjacent
datasets. With the state populations invariant, a(t) = 2, so by group privacy (k^2 rho) the
release is 10.24-zCDP over semi-adjacent datasets. Both convert to (eps, delta) at delta = 1e-10
by the generic bound rho + 2 sqrt(rho log(1/delta)) (the paper's numbers) and, tighter, as an
exact Gaussian mechanism of that rho (valid for continuous Gaussian noise; the Census used
discrete Gaussian noise).
"""

from __future__ import annotations

from ...privacy import ZCDPGroupAccount, zcdp_group_account

__all__ = ["CENSUS_DELTA", "CENSUS_RHO", "PAPER_EPSILONS", "census_accounts"]

#: The persons tables' zCDP budget of the 2020 redistricting data (Abowd et al. 2022).
CENSUS_RHO = 2.56
CENSUS_DELTA = 1e-10
#: The paper's printed eps by the generic bound: as advertised (k = 1), under Semi-DP (k = a(t) = 2).
PAPER_EPSILONS = {1: 17.91528, 2: 40.95057}


def census_accounts() -> dict[int, ZCDPGroupAccount]:
    """The account for k = 1 (DP, as advertised) and k = 2 (Semi-DP with the state populations invariant)."""
    return {k: zcdp_group_account(CENSUS_RHO, CENSUS_DELTA, k=k) for k in PAPER_EPSILONS}

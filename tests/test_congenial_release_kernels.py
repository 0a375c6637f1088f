"""The congenial mechanism's compiled releases: the conformity test against LinearInvariants.contains, and
both release methods against the exact pmf p* by enumeration on invariants with every kind of inequality."""

import numpy as np
import pytest
from scipy import stats

from ppdinfer.invariants import LinearInvariants
from ppdinfer.kernels.integer_tables import conforming
from ppdinfer.mechanisms import Congenial, DiscreteGaussian, DiscreteLaplace
from ppdinfer.mechanisms import congenial as congenial_module

# Total 6 in 4 cells; y0 >= 0, y1 <= 3 (-2 y1 >= -7), y3 >= 2 (3 y3 >= 4), y1 + y2 >= 1 (two cells), y2 <= 4.
GENERAL = LinearInvariants(
    [[1, 1, 1, 1]],
    [6],
    [[1, 0, 0, 0], [0, -2, 0, 0], [0, 0, 0, 3], [0, 1, 1, 0], [0, 0, -1, 0]],
    [0, -7, 4, 1, -4],
)
X = [1, 1, 2, 2]


def _chi_square_against_exact(mech, draws, x):
    support = mech.invariants.enumerate().reshape(-1, mech.n_cells)
    pmf = np.exp([mech.logpdf(t, x)[0] for t in support])
    index = {tuple(t): i for i, t in enumerate(support)}
    counts = np.bincount([index[tuple(row)] for row in draws.reshape(len(draws), -1)], minlength=len(support))
    return stats.chisquare(counts, counts.sum() * pmf).pvalue


def test_conformity_kernel_matches_contains():
    mech = Congenial(DiscreteLaplace(1.0), GENERAL)
    lower, upper, rows, targets, n_equalities = mech._conformity()
    assert lower.tolist()[0] == 0 and upper.tolist()[1] == 3 and lower.tolist()[3] == 2 and upper.tolist()[2] == 4
    assert rows.shape == (2, 4) and n_equalities == 1  # the total, then the two-cell inequality
    tables = np.random.default_rng(0).integers(-3, 7, size=(20_000, 4))
    expected = GENERAL.contains(tables)
    y = tables - np.array(X)
    got = conforming(y, np.array(X), lower, upper, rows, targets, n_equalities, np.empty(len(y), dtype=bool))
    assert np.array_equal(got, expected) and np.array_equal(y, tables)
    assert 0.002 < expected.mean() < 0.5
    # Each inequality is the only one broken by some table of the right total: every test is exercised alone.
    total_ok = tables.sum(axis=1) == 6
    met = tables @ GENERAL.B.T >= GENERAL.b
    for r in range(met.shape[1]):
        assert np.any(total_ok & ~met[:, r] & np.delete(met, r, axis=1).all(axis=1))


@pytest.mark.parametrize("noise", [DiscreteLaplace(0.7), DiscreteGaussian(1.5)], ids=["laplace", "gaussian"])
@pytest.mark.parametrize("method", ["rejection", "mis"])
def test_release_follows_the_exact_pmf_with_general_inequalities(noise, method):
    mech = Congenial(noise, GENERAL)
    options = {"burn_in": 500, "thin": 10} if method == "mis" else {}
    draws = mech.release(X, random_seed=4, method=method, size=6_000, **options)
    assert mech.last_method == method and np.all(GENERAL.contains(draws))
    assert _chi_square_against_exact(mech, draws, X) > 1e-3


def test_a_wrong_law_fails_the_same_check():
    # Draws from the noise at another scale are refused by the comparison with p*.
    draws = Congenial(DiscreteLaplace(1.4), GENERAL).release(X, random_seed=4, method="rejection", size=6_000)
    assert _chi_square_against_exact(Congenial(DiscreteLaplace(0.7), GENERAL), draws, X) < 1e-6


def test_mis_draws_do_not_depend_on_the_block_size(monkeypatch):
    mech = Congenial(DiscreteLaplace(0.7), GENERAL)
    first = mech.release(X, random_seed=9, method="mis", size=300, burn_in=37, thin=3)
    rate = mech.last_acceptance_rate
    monkeypatch.setattr(congenial_module, "_MIS_BLOCK", 7)
    assert np.array_equal(mech.release(X, random_seed=9, method="mis", size=300, burn_in=37, thin=3), first)
    assert mech.last_acceptance_rate == rate
    assert not np.array_equal(mech.release(X, random_seed=10, method="mis", size=300, burn_in=37, thin=3), first)


def test_mis_keeps_every_thin_th_state_after_burn_in():
    # burn_in = 0 and thin = 1 keep the chain itself; burn_in = 4, thin = 5 keep its states 8, 13, 18, ...
    mech = Congenial(DiscreteLaplace(0.7), GENERAL)
    chain = mech.release(X, random_seed=2, method="mis", size=2_100, burn_in=0, thin=1)
    thinned = mech.release(X, random_seed=2, method="mis", size=400, burn_in=4, thin=5)
    assert np.array_equal(thinned, chain[8::5][:400])
    assert np.all(GENERAL.contains(chain)) and len(np.unique(chain, axis=0)) > 20


@pytest.mark.parametrize("epsilon", [0.05, 0.6, 3.0])
def test_alias_table_holds_the_double_geometric_pmf(epsilon):
    cut, keep, other = congenial_module._alias_table(epsilon, 11)
    size = cut.size
    assert size & (size - 1) == 0 and np.all((0 <= cut) & (cut <= 1))
    law = {}
    for value, mass in [*zip(keep, cut / size), *zip(other, (1 - cut) / size)]:
        law[int(value)] = law.get(int(value), 0.0) + mass
    k = np.arange(-400, 401)
    a = np.exp(-epsilon)
    pmf = (1 - a) / (1 + a) * a ** np.abs(k)
    got = np.array([law.get(int(v), 0.0) for v in k])
    assert set(law) <= set(range(-4000, 4001)) and abs(sum(law.values()) - 1) < 1e-12
    np.testing.assert_allclose(got, pmf, rtol=0, atol=1e-14)
    assert congenial_module._alias_table(0.02, 11)[0].size == 0  # too wide: the kernel inverts the CDF


def test_mis_without_the_alias_table_follows_the_exact_pmf(monkeypatch):
    monkeypatch.setattr(congenial_module, "_ALIAS_BITS", 1)  # every table too large: inversion by logarithms
    mech = Congenial(DiscreteLaplace(0.7), GENERAL)
    draws = mech.release(X, random_seed=5, method="mis", size=6_000, burn_in=500, thin=10)
    assert _chi_square_against_exact(mech, draws, X) > 1e-3

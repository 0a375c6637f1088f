"""ppdinfer.inference.diagnostics.ess_rhat against arviz.ess (bulk) and arviz.rhat (rank), to 1e-8."""

import arviz as az
import numpy as np
import pytest

from ppdinfer.inference.diagnostics import ess_rhat


def arviz_pair(draws):
    ess = [float(az.ess(draws[:, :, v])) for v in range(draws.shape[2])]
    rhat = [float(az.rhat(draws[:, :, v])) for v in range(draws.shape[2])]
    return np.array(ess), np.array(rhat)


def random_draws(seed, chains, n, variables):
    rng = np.random.default_rng(seed)
    ar = rng.normal(size=(chains, n, variables))
    for t in range(1, n):  # autocorrelated, with a chain offset, some integer-valued (ties)
        ar[:, t] += 0.7 * ar[:, t - 1]
    ar += 0.3 * rng.normal(size=(chains, 1, variables))
    ar[..., ::3] = np.round(ar[..., ::3])
    ar[..., 1::4] = rng.poisson(0.4, size=ar[..., 1::4].shape)  # near zero: many ties
    return ar


@pytest.mark.parametrize(("chains", "n"), [(2, 200), (4, 101), (3, 7)])
def test_ess_and_rhat_match_arviz(chains, n):
    draws = random_draws(chains * n, chains, n, 13)
    ess, rhat = ess_rhat(draws, block=5)
    want_ess, want_rhat = arviz_pair(draws)
    np.testing.assert_allclose(ess, want_ess, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(rhat, want_rhat, rtol=1e-8, atol=1e-8)


def test_whole_number_draws_ranked_by_counting_match_arviz():
    # counts (a census cell's draws) are ranked by counting, not sorting: the same numbers as ArviZ's
    rng = np.random.default_rng(3)
    draws = np.round(random_draws(5, 2, 150, 8) * 3)
    draws[..., :3] = rng.poisson([0.05, 2.0, 40.0], size=(2, 150, 3))
    draws[..., 3] -= draws[..., 3].min()  # span and offset vary by variable
    ess, rhat = ess_rhat(draws.astype(np.int64))
    want_ess, want_rhat = arviz_pair(draws)
    np.testing.assert_allclose(ess, want_ess, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(rhat, want_rhat, rtol=1e-8, atol=1e-8)


def test_constant_variables_one_chain_and_shapes():
    draws = random_draws(1, 2, 50, 6).reshape(2, 50, 2, 3)
    draws[:, :, 0, 0] = 3.0
    ess, rhat = ess_rhat(draws)
    assert ess.shape == rhat.shape == (2, 3)
    assert ess[0, 0] == float(az.ess(draws[:, :, 0, 0])) == 100
    assert np.isnan(rhat[0, 0]) and np.isnan(float(az.rhat(draws[:, :, 0, 0])))
    one, one_rhat = ess_rhat(draws[:1])
    np.testing.assert_allclose(one[0, 1], float(az.ess(draws[:1, :, 0, 1])), rtol=1e-8)
    assert np.isnan(one_rhat).all()
    with pytest.raises(ValueError, match="draws must have shape"):
        ess_rhat(np.zeros((2, 3)))
